#!/usr/bin/env python3
"""An independent PETRA in PyTorch: docs/design.md §1's ticks on revnet_peer.py's RevNet, Fashion-MNIST.

A second implementation of the method, written from docs/design.md §1 alone, to tell petra's own
accuracy apart from the method's: same model (one block per stage), same recipe (the `default`
preset: micro-batch 64, k = 2, SGD Nesterov 0.9, wd 5e-4 off BN and biases, Goyal lr 0.05,
cosine with 0.5 epoch of linear warm-up per stage optimizer step, crop 28 pad 2 + flip, whole
optimizer batches only: 936 micro-batches of Fashion-MNIST's 60,000 images per epoch), same
tick schedule (micro-batch m enters stage 1 at tick m; its backward at stage j comes 2(J − j)
ticks after its forward there), no drain at epoch ends. By default nothing else is shared with
petra: data order, augmentation draws and initial weights are NumPy's / PyTorch's, so a run agrees
with petra's in distribution. With `--data-order petra --init-from CHECKPOINT` it takes petra's
images and starts from petra's weights, and `--compare-with CHECKPOINT` measures how far its final
weights are from a petra run's (check_petra_peer.sh: equal to fp32 round-off). Run with
/usr/bin/python3 (python3-torch):

  petra_peer.py --epochs 3 --seed 0 [--tick-order forward_first|backward_first] [--method backprop]
                [--optimizer adamw --base-lr 0.002 --weight-decay 0.05]

Prints one line per epoch (test accuracy of the live weights taken the tick after the epoch's last
micro-batch entered stage 1; the last epoch's after the final drain) and a JSON summary line.
"""
import argparse
import collections
import gzip
import itertools
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from revnet_peer import Coupling, build_revnet  # noqa: E402

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


def read_safetensors(path):
    """{name: float32 tensor} of a safetensors file (F32 entries only)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        size = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8:8 + size])
    except (OSError, ValueError, struct.error) as e:
        print("petra_peer: %s is not a readable safetensors file: %s" % (path, e), file=sys.stderr)
        sys.exit(2)
    out = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry.get("dtype") != "F32":
            continue
        begin, end = entry["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(raw, np.float32, (end - begin) // 4, 8 + size + begin)
                                     .reshape(entry["shape"]).copy())
    return out


def petra_named(model, saved, kind):
    """petra's names of the model's parameters (kind "param") or BN running buffers ("buffer"),
    paired with the tensors here: both list them in the same order (stem, blocks, head)."""
    if kind == "param":
        mine = list(model.parameters())
    else:
        mine = [b for name, b in model.named_buffers() if not name.endswith("num_batches_tracked")]
    names = [n for n in saved if n.startswith(kind + "/")]
    if len(names) != len(mine):
        print("petra_peer: the checkpoint holds %d %s tensors, this model %d" % (len(names), kind, len(mine)),
              file=sys.stderr)
        sys.exit(2)
    return list(zip(names, mine))


def load_weights(model, path):
    saved = read_safetensors(path)
    with torch.no_grad():
        for name, t in petra_named(model, saved, "param"):
            if tuple(saved[name].shape) != tuple(t.shape):
                print("petra_peer: %s in %s has shape %s, here %s" % (name, path, list(saved[name].shape),
                                                                       list(t.shape)), file=sys.stderr)
                sys.exit(2)
            t.copy_(saved[name])


def compare_weights(model, path):
    """Per parameter of petra's checkpoint: max |petra − here| / max |petra|; the worst of them."""
    saved = read_safetensors(path)
    worst, name_of_worst, per = 0.0, "", {}
    for name, t in petra_named(model, saved, "param") + petra_named(model, saved, "buffer"):
        ref = saved[name]
        rel = float((ref - t.detach()).abs().max() / max(float(ref.abs().max()), 1e-12))
        per[name] = rel
        if rel > worst:
            worst, name_of_worst = rel, name
    return {"max_relative_difference": worst, "worst_tensor": name_of_worst,
            "median_relative_difference": float(np.median(list(per.values())))}


def learning_rate(base, step, warmup, total):
    """Linear warm-up over `warmup` steps to `base`, then cosine to 0 at `total` steps."""
    if step < warmup:
        return base * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return base * 0.5 * (1.0 + math.cos(math.pi * progress))


class frozen_running_stats:
    """BatchNorm in training mode (batch statistics) that leaves the running statistics alone:
    docs/design.md §1 updates them in the training forward only, never in an inverse or recompute."""

    def __init__(self, module):
        self.bns = [m for m in module.modules() if isinstance(m, nn.BatchNorm2d)]

    def __enter__(self):
        for bn in self.bns:
            bn.momentum = 0.0

    def __exit__(self, *exc):
        for bn in self.bns:
            bn.momentum = 0.1


class Stage:
    """One stage of the pipeline: its block, its optimizer, and (unless reversible) its input FIFO."""

    def __init__(self, block, args, warmup, total):
        self.block = block
        self.reversible = isinstance(block, Coupling)
        self.fifo = collections.deque()
        decay = [p for p in block.parameters() if p.ndim > 1]
        no_decay = [p for p in block.parameters() if p.ndim <= 1]
        groups = [{"params": decay, "weight_decay": args.weight_decay},
                  {"params": no_decay, "weight_decay": 0.0}]
        if args.optimizer == "adamw":
            self.optimizer = torch.optim.AdamW(groups, lr=0.0, betas=(0.9, 0.999), eps=args.eps)
        else:
            self.optimizer = torch.optim.SGD(groups, lr=0.0, momentum=0.9, nesterov=True)
        self.k, self.base_lr, self.warmup, self.total = args.accumulation, args.lr, warmup, total
        self.backwards = self.steps = 0
        self.max_fifo = 0
        for p in block.parameters():
            p.grad = torch.zeros_like(p)

    def forward(self, x):
        if not self.reversible:
            self.fifo.append(x)
            self.max_fifo = max(self.max_fifo, len(self.fifo))
        with torch.no_grad():
            return self.block(x)

    def backward(self, rebuilt_out, delta_out, is_first):
        """Rebuild the input (inverse with the current weights, or the FIFO), recompute with a tape,
        accumulate (1/k)·∂/∂θ, step every k-th backward; return (rebuilt input, its gradient)."""
        with frozen_running_stats(self.block):
            if self.reversible:
                with torch.no_grad():
                    y1, y2 = rebuilt_out
                    x_in = (y2, y1 - self.block.f(y2))  # x1 = y2, x2 = y1 − F(y2)
            else:
                x_in = self.fifo.popleft()
            leaves = tuple(t.detach().requires_grad_(not is_first) for t in
                           (x_in if isinstance(x_in, tuple) else (x_in,)))
            with torch.enable_grad():
                out = self.block(leaves if isinstance(x_in, tuple) else leaves[0])
                outs = out if isinstance(out, tuple) else (out,)
                grads = torch.autograd.grad(outs, ([] if is_first else list(leaves)) + list(self.block.parameters()),
                                            grad_outputs=delta_out)
        n_in = 0 if is_first else len(leaves)
        self.accumulate(grads[n_in:])
        if is_first:
            return None
        delta_in = grads[:n_in]
        return (x_in, delta_in if isinstance(x_in, tuple) else delta_in[0])

    def accumulate(self, grads):
        """Δ += (1/k)·g for each parameter; an optimizer step after every k-th backward."""
        for p, g in zip(self.block.parameters(), grads):
            p.grad.add_(g, alpha=1.0 / self.k)
        self.backwards += 1
        if self.backwards % self.k == 0:
            self.step()

    def step(self):
        lr = learning_rate(self.base_lr, self.steps, self.warmup, self.total)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.step()
        for p in self.block.parameters():
            p.grad.zero_()
        self.steps += 1


def head_step(stage, x, labels):
    """The last stage: forward, loss, backward in one tick; it sends back the exact input."""
    leaves = tuple(t.detach().requires_grad_(True) for t in x)
    with torch.enable_grad():
        logits = stage.block(leaves)
        loss = F.cross_entropy(logits, labels)
        grads = torch.autograd.grad(loss, list(leaves) + list(stage.block.parameters()))
    stage.accumulate(grads[len(leaves):])
    correct = int((logits.argmax(1) == labels).sum())
    return (x, tuple(grads[:len(leaves)])), float(loss), correct


def evaluate(stages, images, labels, batch=1000):
    correct = 0
    for s in stages:
        s.block.eval()
    with torch.no_grad():
        for first in range(0, images.shape[0], batch):
            x = torch.from_numpy(normalise(images[first:first + batch])).unsqueeze(1)
            for s in stages:
                x = s.block(x)
            correct += int((x.argmax(1) == torch.from_numpy(labels[first:first + batch])).sum())
    for s in stages:
        s.block.train()
    return 100.0 * correct / images.shape[0]


def run_petra(args, stages, train, test, per_epoch):
    """Ticks of docs/design.md §1 until every micro-batch of every epoch has finished its backward."""
    J = len(stages)
    rng = np.random.default_rng(args.seed)
    total = per_epoch * args.epochs
    feed = (b for e in range(args.epochs) for b in train_batches(args, train, e, rng))
    fwd = [None] * J  # fwd[j]: (activation, labels) that reaches stage j this tick
    bwd = [None] * J  # bwd[j]: (rebuilt output, gradient) that reaches stage j this tick
    epoch_stats, lines = [0.0, 0, 0], []
    tick, entered, finished = 0, 0, 0
    while finished < total:
        new_fwd, new_bwd = [None] * J, [None] * J
        entered_now = entered < total
        if entered_now:
            fwd[0] = next(feed)
            entered += 1
        for j, stage in enumerate(stages):
            if j == J - 1:
                if fwd[j] is not None:
                    x, labels = fwd[j]
                    new_bwd[j - 1], loss, correct = head_step(stage, x, labels)
                    epoch_stats[0] += loss * len(labels)
                    epoch_stats[1] += correct
                    epoch_stats[2] += len(labels)
                continue
            halves = ["forward", "backward"] if args.tick_order == "forward_first" else ["backward", "forward"]
            for half in halves:
                if half == "forward" and fwd[j] is not None:
                    x, labels = fwd[j]
                    new_fwd[j + 1] = (stage.forward(x), labels)
                elif half == "backward" and bwd[j] is not None:
                    back = stage.backward(*bwd[j], is_first=(j == 0))
                    if j == 0:
                        finished += 1
                    else:
                        new_bwd[j - 1] = back
        fwd, bwd = new_fwd, new_bwd
        tick += 1
        if entered_now and entered % per_epoch == 0 and entered < total:
            lines.append(report(args, len(lines) + 1, stages, test, epoch_stats, tick))
            epoch_stats = [0.0, 0, 0]
    lines.append(report(args, len(lines) + 1, stages, test, epoch_stats, tick))
    return lines


def report(args, epoch, stages, test, stats, tick):
    acc = evaluate(stages, *test)
    line = {"epoch": epoch, "test_accuracy": round(acc, 2), "tick": tick,
            "train_loss": round(stats[0] / max(1, stats[2]), 4),
            "train_accuracy": round(100.0 * stats[1] / max(1, stats[2]), 2),
            "lr_steps": [s.steps for s in stages]}
    print("epoch %d: test %.2f %%  train loss %.4f  train %.2f %%  (tick %d)" %
          (epoch, acc, line["train_loss"], line["train_accuracy"], tick), flush=True)
    return line


def run_backprop(args, stages, train, test, per_epoch):
    rng = np.random.default_rng(args.seed)
    lines = []
    for e in range(args.epochs):
        stats = [0.0, 0, 0]
        for i, (x, labels) in enumerate(train_batches(args, train, e, rng)):
            with torch.enable_grad():
                out = x
                for s in stages:
                    out = s.block(out)
                loss = F.cross_entropy(out, labels)
                params = [p for s in stages for p in s.block.parameters()]
                grads = torch.autograd.grad(loss, params)
            for p, g in zip(params, grads):
                p.grad.add_(g, alpha=1.0 / args.accumulation)
            if (i + 1) % args.accumulation == 0:
                for s in stages:
                    s.step()
            stats[0] += float(loss) * len(labels)
            stats[1] += int((out.argmax(1) == labels).sum())
            stats[2] += len(labels)
        lines.append(report(args, e + 1, stages, test, stats, 0))
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--accumulation", type=int, default=2)
    parser.add_argument("--base-lr", type=float, default=0.1)
    parser.add_argument("--warmup-epochs", type=float, default=0.5)
    parser.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd",
                        help="sgd: Nesterov 0.9 (the preset's); adamw: torch.optim.AdamW, betas (0.9, 0.999)")
    parser.add_argument("--eps", type=float, default=1e-8, help="adamw's eps")
    parser.add_argument("--weight-decay", type=float, default=5e-4, help="on conv and linear weights only")
    parser.add_argument("--tick-order", choices=("forward_first", "backward_first"), default="forward_first")
    parser.add_argument("--method", choices=("petra", "backprop"), default="petra")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--train-limit", type=int, default=0, help="use the first N training images (0 = all)")
    parser.add_argument("--test-limit", type=int, default=0, help="use the first N test images (0 = all)")
    parser.add_argument("--data-order", choices=("numpy", "petra"), default="numpy",
                        help="petra: petra's shuffle and augmentation draws for --seed (the same images)")
    parser.add_argument("--init-from", help="start from the weights of this petra checkpoint (safetensors)")
    parser.add_argument("--compare-with", help="at the end, compare the weights with this petra checkpoint")
    args = parser.parse_args()
    if args.epochs < 1 or args.batch < 2 or args.accumulation < 1 or args.threads < 1 or min(args.train_limit,
                                                                                               args.test_limit) < 0:
        parser.error("need --epochs >= 1, --batch >= 2, --accumulation >= 1, --threads >= 1, "
                     "--train-limit and --test-limit >= 0")
    args.lr = args.base_lr * args.batch * args.accumulation / 256.0
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    train = load_split(args.data, "train")
    if args.train_limit:
        train = (train[0][:args.train_limit], train[1][:args.train_limit])
    test = load_split(args.data, "t10k")
    if args.test_limit:
        test = (test[0][:args.test_limit], test[1][:args.test_limit])
    steps_per_epoch = train[0].shape[0] // (args.batch * args.accumulation)
    if steps_per_epoch < 1:
        print("petra_peer: %d training images are fewer than one optimizer batch (%d · %d)"
              % (train[0].shape[0], args.batch, args.accumulation), file=sys.stderr)
        sys.exit(2)
    per_epoch = args.per_epoch = steps_per_epoch * args.accumulation
    warmup = int(math.floor(args.warmup_epochs * steps_per_epoch + 0.5))  # llround, as petra
    model = build_revnet("fashion_small", 10, 1, False)
    if args.init_from:
        load_weights(model, args.init_from)
    stages = [Stage(block, args, warmup, steps_per_epoch * args.epochs) for block in model]
    start = time.perf_counter()
    run = run_petra if args.method == "petra" else run_backprop
    lines = run(args, stages, train, test, per_epoch)
    seconds = time.perf_counter() - start
    summary = {"method": args.method, "tick_order": args.tick_order, "seed": args.seed,
               "data_order": args.data_order}
    if args.compare_with:
        summary["compare"] = compare_weights(model, args.compare_with)
    print(json.dumps({**summary, "epochs": lines, "seconds": round(seconds, 1),
                      "images_per_second": round(per_epoch * args.epochs * args.batch / seconds, 1),
                      "fifo_peaks": [s.max_fifo for s in stages], "torch": torch.__version__}))


if __name__ == "__main__":
    main()
