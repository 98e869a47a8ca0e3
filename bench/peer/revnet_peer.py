#!/usr/bin/env python3
"""PyTorch peer for petra's benchmarks: the RevNet of docs/design.md §2 in plain PyTorch.

It is trained here with ordinary autograd backprop (activations stored, nothing rebuilt):
the reference that petra's per-step time is compared against. Run with /usr/bin/python3:

  revnet_peer.py count --arch revnet18 --classes 10 --input 3,32,32
  revnet_peer.py step  --arch fashion_small --input 1,28,28 --batch 64 --threads 2 --warmup 3 --iters 15
  revnet_peer.py conv  --shape 32,64,32,32 --threads 2 --warmup 3 --iters 15 [--autocast bf16]

`count` prints the number of trainable parameters; `step` times one training step
(forward, softmax cross-entropy, backward, SGD Nesterov step) on random data and prints
one JSON line. Every conv has a bias; initialisation is PyTorch's default. `conv` times one
coupling convolution alone (3×3, stride 1, padding 1, C → C channels, no bias): its forward and
its backward (dx and dw), on random data, one JSON line.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# Stream widths per group; the stem outputs two streams of stem_width channels each.
PRESETS = {
    "tiny": dict(stem_width=4, widths=[4, 8], blocks=[2, 1], input=(1, 8, 8)),
    "fashion_small": dict(stem_width=16, widths=[16, 32, 64], blocks=[2, 2, 2], input=(1, 28, 28)),
    "revnet18": dict(stem_width=64, widths=[64, 128, 256, 512], blocks=[2, 2, 2, 2], input=(3, 32, 32)),
    "revnet34": dict(stem_width=64, widths=[64, 128, 256, 512], blocks=[3, 4, 6, 3], input=(3, 32, 32)),
    "revnet50": dict(stem_width=64, widths=[256, 512, 1024, 2048], hidden=[64, 128, 256, 512],
                     blocks=[3, 4, 6, 3], input=(3, 32, 32), bottleneck=True),
}


def conv_bn(c_in, c_out, kernel, stride=1):
    """conv (with bias, 'same' padding) followed by BatchNorm."""
    return nn.Sequential(nn.Conv2d(c_in, c_out, kernel, stride, kernel // 2, bias=True), nn.BatchNorm2d(c_out))


def basic_f(width):
    """Basic residual function: conv3×3 → BN → ReLU → conv3×3 → BN → ReLU."""
    return nn.Sequential(conv_bn(width, width, 3), nn.ReLU(inplace=True),
                         conv_bn(width, width, 3), nn.ReLU(inplace=True))


def bottleneck_f(c_in, hidden, c_out, stride=1):
    """Bottleneck function: 1×1 (c_in→h) → BN → ReLU → 3×3 s (h→h) → BN → ReLU → 1×1 (h→c_out) → BN → ReLU."""
    return nn.Sequential(conv_bn(c_in, hidden, 1), nn.ReLU(inplace=True),
                         conv_bn(hidden, hidden, 3, stride), nn.ReLU(inplace=True),
                         conv_bn(hidden, c_out, 1), nn.ReLU(inplace=True))


class Stem(nn.Module):
    """conv3×3 s1 (CIFAR) or conv7×7 s2 + max-pool 2×2 s2 (ImageNet), BN, ReLU; split in two streams."""

    def __init__(self, c_in, stream_width, imagenet):
        super().__init__()
        self.body = conv_bn(c_in, 2 * stream_width, 7 if imagenet else 3, 2 if imagenet else 1)
        self.pool = nn.MaxPool2d(2, 2) if imagenet else nn.Identity()

    def forward(self, x):
        return self.pool(F.relu(self.body(x))).chunk(2, dim=1)


class Coupling(nn.Module):
    """(x1, x2) → (x2 + F(x1), x1); reversible (`inverse`), stride 1."""

    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, xs):
        x1, x2 = xs
        return x2 + self.f(x1), x1

    def inverse(self, ys):
        """x1 = y2, x2 = y1 − F(y2)."""
        y1, y2 = ys
        return y2, y1 - self.f(y2)


class BasicDownsample(nn.Module):
    """a = BN(conv3×3 s(x1)); y1 = ReLU(BN(conv3×3(ReLU(a)))) + BN(conv1×1 s(x2)); y2 = ReLU(a)."""

    def __init__(self, width, out, stride):
        super().__init__()
        self.a = conv_bn(width, out, 3, stride)
        self.b = conv_bn(out, out, 3)
        self.shortcut = conv_bn(width, out, 1, stride)

    def forward(self, xs):
        x1, x2 = xs
        a = self.a(x1)
        relu_a = F.relu(a)
        return F.relu(self.b(relu_a)) + self.shortcut(x2), relu_a


class BottleneckDownsample(nn.Module):
    """y1 = F(x1) + BN(conv1×1 s(x2)) with a bottleneck F of stride s; y2 = BN(conv1×1 s(x1))."""

    def __init__(self, width, hidden, out, stride):
        super().__init__()
        self.f = bottleneck_f(width, hidden, out, stride)
        self.shortcut2 = conv_bn(width, out, 1, stride)
        self.shortcut1 = conv_bn(width, out, 1, stride)

    def forward(self, xs):
        x1, x2 = xs
        return self.f(x1) + self.shortcut2(x2), self.shortcut1(x1)


class Head(nn.Module):
    """concat(x1, x2) → global average pool → linear → logits."""

    def __init__(self, width, classes):
        super().__init__()
        self.linear = nn.Linear(2 * width, classes)

    def forward(self, xs):
        return self.linear(torch.cat(xs, dim=1).mean(dim=(2, 3)))


def build_revnet(arch, classes, in_channels, imagenet_stem):
    """Stem, then per group: a downsampling first block (every group of a bottleneck net,
    groups after the first otherwise) and couplings; then the head. One block per stage."""
    p = PRESETS[arch]
    bottleneck = p.get("bottleneck", False)
    layers = [Stem(in_channels, p["stem_width"], imagenet_stem)]
    width = p["stem_width"]
    for g, (out, count) in enumerate(zip(p["widths"], p["blocks"])):
        for b in range(count):
            stride = 2 if (b == 0 and g > 0) else 1
            if bottleneck:
                hidden = p["hidden"][g]
                layers.append(BottleneckDownsample(width, hidden, out, stride) if b == 0
                              else Coupling(bottleneck_f(out, hidden, out)))
            elif stride != 1 or out != width:
                layers.append(BasicDownsample(width, out, stride))
            else:
                layers.append(Coupling(basic_f(out)))
            width = out
    layers.append(Head(width, classes))
    return nn.Sequential(*layers)


def parameter_count(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def time_step(model, input_shape, batch, classes, warmup, iters, autocast=None):
    """Median and minimum wall time (ms) of one SGD step on one fixed random batch; with `autocast`
    ("bf16") the forward and loss run under torch.autocast on the CPU (the usual bf16 recipe: the
    convolutions and linear layers in bf16, fp32 weights and optimizer)."""
    decay = [p for p in model.parameters() if p.ndim > 1]  # docs/design.md §2 recipe: no decay on BN, biases
    no_decay = [p for p in model.parameters() if p.ndim <= 1]
    optimizer = torch.optim.SGD([{"params": decay, "weight_decay": 5e-4}, {"params": no_decay, "weight_decay": 0.0}],
                                lr=0.01, momentum=0.9, nesterov=True)
    x = torch.randn(batch, *input_shape)
    y = torch.randint(0, classes, (batch,))
    model.train()
    times = []
    for i in range(warmup + iters):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast == "bf16"):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        elapsed = time.perf_counter() - start
        if i >= warmup:
            times.append(elapsed * 1e3)
    if not torch.isfinite(loss):
        raise SystemExit("revnet_peer: the loss became %s; the timing is not trustworthy" % loss.item())
    return statistics.median(times), min(times)


def time_conv(shape, warmup, iters, autocast=None):
    """Median and minimum wall time (ms) of one 3×3 convolution's forward and backward (dx and dw)
    on `shape` (N, C, H, W), C → C channels; with `autocast` ("bf16") the forward runs under
    torch.autocast on the CPU, as in `time_step`."""
    n, c, h, w = shape
    x = torch.randn(n, c, h, w, requires_grad=True)
    weight = torch.randn(c, c, 3, 3, requires_grad=True)
    times = []
    for i in range(warmup + iters):
        start = time.perf_counter()
        x.grad = None
        weight.grad = None
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast == "bf16"):
            y = F.conv2d(x, weight, None, 1, 1)
        y.backward(torch.ones_like(y))
        elapsed = time.perf_counter() - start
        if i >= warmup:
            times.append(elapsed * 1e3)
    return statistics.median(times), min(times)


def positive_ints(text, flag, form, count, words):
    """`text` as `count` comma-separated positive integers, else argparse's error for `flag`."""
    parts = text.split(",")
    if len(parts) != count or not all(s.strip().isdigit() and int(s) > 0 for s in parts):
        raise argparse.ArgumentTypeError("%s must be %s (%s positive integers), got '%s'" % (flag, form, words, text))
    return tuple(int(s) for s in parts)


def parse_shape(text):
    return positive_ints(text, "--shape", "N,C,H,W", 4, "four")


def parse_input(text):
    return positive_ints(text, "--input", "C,H,W", 3, "three")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("count", "step"):
        cmd = sub.add_parser(name)
        cmd.add_argument("--arch", choices=sorted(PRESETS), required=True)
        cmd.add_argument("--classes", type=int, default=10)
        cmd.add_argument("--input", type=parse_input, help="C,H,W (default: the preset's)")
        cmd.add_argument("--stem", choices=("auto", "cifar", "imagenet"), default="auto",
                         help="auto: the ImageNet stem for inputs of 128 pixels or more")
    step = sub.choices["step"]
    step.add_argument("--batch", type=int, default=64)
    step.add_argument("--threads", type=int, default=2)
    step.add_argument("--warmup", type=int, default=3)
    step.add_argument("--iters", type=int, default=15)
    step.add_argument("--autocast", choices=("bf16",), help="the forward and loss under torch.autocast")
    conv = sub.add_parser("conv")
    conv.add_argument("--shape", type=parse_shape, required=True, help="N,C,H,W of the input")
    conv.add_argument("--threads", type=int, default=2)
    conv.add_argument("--warmup", type=int, default=3)
    conv.add_argument("--iters", type=int, default=15)
    conv.add_argument("--autocast", choices=("bf16",), help="the forward under torch.autocast")
    args = parser.parse_args()

    if args.command == "conv":
        if args.iters < 1 or args.warmup < 0 or args.threads < 1:
            parser.error("need --iters >= 1, --warmup >= 0, --threads >= 1")
        torch.set_num_threads(args.threads)
        torch.manual_seed(0)
        median_ms, min_ms = time_conv(args.shape, args.warmup, args.iters, args.autocast)
        print(json.dumps({"shape": list(args.shape), "autocast": args.autocast or "none",
                          "median_ms": round(median_ms, 3), "min_ms": round(min_ms, 3), "iters": args.iters,
                          "torch": torch.__version__, "threads": torch.get_num_threads()}))
        return

    input_shape = args.input or PRESETS[args.arch]["input"]
    imagenet = args.stem == "imagenet" or (args.stem == "auto" and input_shape[1] >= 128)
    if args.command == "step":
        if args.batch < 2 or args.iters < 1 or args.warmup < 0 or args.threads < 1:
            parser.error("need --batch >= 2 (BatchNorm), --iters >= 1, --warmup >= 0, --threads >= 1")
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = build_revnet(args.arch, args.classes, input_shape[0], imagenet)
    if args.command == "count":
        print(parameter_count(model))
        return
    median_ms, min_ms = time_step(model, input_shape, args.batch, args.classes, args.warmup, args.iters,
                                  args.autocast)
    print(json.dumps({"arch": args.arch, "batch": args.batch, "input": list(input_shape),
                      "autocast": args.autocast or "none",
                      "median_ms": round(median_ms, 3), "min_ms": round(min_ms, 3), "iters": args.iters,
                      "torch": torch.__version__, "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
