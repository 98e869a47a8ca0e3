#!/usr/bin/env python3
"""A synthetic CIFAR-10-shaped data set in CIFAR-10's binary format, for GPU throughput runs where
the real CIFAR-10 is not on the machine.

  make_synthetic_cifar.py OUT_DIR [--per-file 10000] [--seed 0]

Writes OUT_DIR/data_batch_1.bin … data_batch_5.bin and OUT_DIR/test_batch.bin: records of one
label byte and 3×32×32 pixel bytes (R, G, B planes), as petra's cifar10 reader expects. Each class
has its own mean colour under uniform noise, so a network can learn it (the loss falls), but the
images carry no meaning: use the set for images/s, never for accuracy claims. Standard library
only; about a second per 10,000 images.
"""
import argparse
import os
import random
import sys

SIDE = 32
PLANE = SIDE * SIDE
CLASSES = 10


def class_tables(rng):
    """Per class and channel, a byte map noise → pixel: half the noise plus the class's offset."""
    tables = []
    for _ in range(CLASSES):
        offsets = [rng.randrange(0, 128) for _ in range(3)]
        tables.append([bytes(min(255, b // 2 + off) for b in range(256)) for off in offsets])
    return tables


def write_file(path, count, tables, rng):
    noise = rng.randbytes(count * 3 * PLANE)
    out = bytearray()
    for i in range(count):
        label = rng.randrange(CLASSES)
        out.append(label)
        base = i * 3 * PLANE
        for c in range(3):
            out += noise[base + c * PLANE : base + (c + 1) * PLANE].translate(tables[label][c])
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(out)
    os.replace(tmp, path)  # no partial file under the final name


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--per-file", type=int, default=10000, help="images per file (CIFAR-10: 10000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.per_file < 1:
        print("make_synthetic_cifar: --per-file must be at least 1, got %d" % args.per_file, file=sys.stderr)
        return 2
    os.makedirs(args.out_dir, exist_ok=True)
    rng = random.Random(args.seed)
    tables = class_tables(rng)
    names = ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]
    for name in names:
        write_file(os.path.join(args.out_dir, name), args.per_file, tables, rng)
    print("wrote %d files of %d images (synthetic, CIFAR-10 binary format) to %s"
          % (len(names), args.per_file, args.out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
