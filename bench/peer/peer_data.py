"""Fashion-MNIST for the PyTorch PETRA (petra_peer.py): IDX files, normalisation, and each epoch's
micro-batches in NumPy's order or in petra's (its shuffle and augmentation draws, written again from
datasets/counter_rng.hpp's contract), so that a run here and a petra run can see the same images."""
import gzip
import itertools
import os
import sys

import numpy as np
import torch

MEAN, STD = 0.2860, 0.3530


def read_idx(path, magic):
    """The array of an IDX file (gzip or plain); exits with code 2 naming the file if it is not one."""
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        print("petra_peer: cannot read %s: %s" % (path, e), file=sys.stderr)
        sys.exit(2)
    ndim = magic & 0xFF
    if len(raw) < 4 + 4 * ndim or int.from_bytes(raw[:4], "big") != magic:
        print("petra_peer: %s is not an IDX file of magic 0x%08x" % (path, magic), file=sys.stderr)
        sys.exit(2)
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        print("petra_peer: %s holds %d bytes of data, its header says %s" % (path, body.size, dims), file=sys.stderr)
        sys.exit(2)
    return body.reshape(dims)


def load_split(root, prefix):
    def find(name):
        for candidate in (os.path.join(root, name + ".gz"), os.path.join(root, name)):
            if os.path.exists(candidate):
                return candidate
        print("petra_peer: %s(.gz) not found in %s" % (name, root), file=sys.stderr)
        sys.exit(2)

    images = read_idx(find(prefix + "-images-idx3-ubyte"), 0x00000803)
    labels = read_idx(find(prefix + "-labels-idx1-ubyte"), 0x00000801)
    if images.shape[0] != labels.shape[0]:
        print("petra_peer: %s: %d images, %d labels" % (prefix, images.shape[0], labels.shape[0]), file=sys.stderr)
        sys.exit(2)
    return images, labels.astype(np.int64)


def normalise(images):
    return (images.astype(np.float32) / 255.0 - MEAN) / STD


def numpy_batches(images, labels, batch, epoch, rng):
    """Epoch `epoch`'s micro-batches, NumPy's draws: a fresh permutation, crop 28 from zero
    padding 2, flip 1/2."""
    order = rng.permutation(images.shape[0])
    n = len(order)
    dy, dx, flip = rng.integers(0, 5, size=n), rng.integers(0, 5, size=n), rng.random(n) < 0.5
    return cut(images, labels, batch, order, dy, dx, flip)


M64, GAMMA = (1 << 64) - 1, 0x9E3779B97F4A7C15


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class CounterRng:
    """petra's counter-based generator (datasets/counter_rng.hpp), written again from its contract:
    SplitMix64 started from the hash of (seed, stream, epoch, position)."""

    def __init__(self, seed, stream, epoch, position):
        state = seed
        for value in (stream, epoch, position):
            state = mix64((mix64(state) + value * GAMMA) & M64)
        self.state = state

    def next(self):
        self.state = (self.state + GAMMA) & M64
        return mix64(self.state)

    def below(self, n):
        return (self.next() * n) >> 64


def petra_batches(images, labels, batch, epoch, seed):
    """Epoch `epoch`'s micro-batches in petra's order and with petra's augmentation draws
    (Fisher–Yates on stream 1; per sample dy, dx, flip on stream 2), so that a run here and a
    petra run see the same images."""
    n = images.shape[0]
    order = list(range(n))
    rng = CounterRng(seed, 1, epoch, 0)
    for i in range(n - 1, 0, -1):
        j = rng.below(i + 1)
        order[i], order[j] = order[j], order[i]
    dy, dx, flip = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, bool)
    for position in range(n):
        r = CounterRng(seed, 2, epoch, position)
        dy[position], dx[position], flip[position] = r.below(5), r.below(5), (r.next() >> 63) != 0
    return cut(images, labels, batch, np.array(order), dy, dx, flip)


def cut(images, labels, batch, order, dy, dx, flip):
    """Micro-batches of `batch` (the last may be short) of the images in `order`; sample at epoch
    position p is cropped at (dy[p], dx[p]) from the zero-padded image and mirrored if flip[p]."""
    padded = np.pad(images, ((0, 0), (2, 2), (2, 2)))
    h, w = images.shape[1:]
    for first in range(0, len(order), batch):
        idx = order[first:first + batch]
        out = np.empty((len(idx), h, w), dtype=np.uint8)
        for i, s in enumerate(idx):
            p = first + i
            crop = padded[s, dy[p]:dy[p] + h, dx[p]:dx[p] + w]
            out[i] = crop[:, ::-1] if flip[p] else crop
        yield torch.from_numpy(normalise(out)).unsqueeze(1), torch.from_numpy(labels[idx])


def train_batches(args, train, epoch, rng):
    """The first args.per_epoch micro-batches of the epoch: as petra, whole optimizer batches only
    (the images after the last whole micro_batch · k of the order are left out)."""
    if args.data_order == "petra":
        batches = petra_batches(*train, args.batch, epoch + 1, args.seed)  # petra counts epochs from 1
    else:
        batches = numpy_batches(*train, args.batch, epoch, rng)
    return itertools.islice(batches, args.per_epoch)
