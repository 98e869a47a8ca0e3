#!/usr/bin/env python3
"""PyTorch peer on a GPU: bench/peer/revnet_peer.py's RevNet (imported, not copied), timed on CUDA.

  revnet_peer_gpu.py --arch revnet18 --batch 128 --warmup 10 --iters 50 [--tf32] [--compile]
                     [--cudnn-benchmark] [--count-flops]

One training step = zero_grad, forward, cross-entropy, backward, SGD Nesterov step (weight decay on
conv and linear weights only), then torch.cuda.synchronize(): the work of bench_gpu_step's "step"
(petra's backprop stage, J = 1, k = 1), on one fixed random batch. Prints one JSON line like
bench_gpu_step's. TF32 is off unless --tf32 (petra's default is fp32 math); cudnn.benchmark is off
unless asked (petra picks algorithms by cuDNN's heuristics, not by timing them). --compile wraps
the model in torch.compile (forward and backward graphs; the optimizer stays eager); the first
warm-up step includes the compilation and is reported as compile_s. --count-flops counts one
step's FLOPs (torch.utils.flop_counter: convolutions and matrix products, forward and backward)
and reports TFLOP/s at the median.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
# An importable module (in sys.path and sys.modules): torch.compile re-imports the model's module.
sys.path.insert(0, os.path.join(HERE, "..", "peer"))
import revnet_peer  # noqa: E402


def make_optimizer(model):
    decay = [p for p in model.parameters() if p.ndim > 1]  # docs/design.md §2 recipe: no decay on BN, biases
    no_decay = [p for p in model.parameters() if p.ndim <= 1]
    return torch.optim.SGD([{"params": decay, "weight_decay": 5e-4}, {"params": no_decay, "weight_decay": 0.0}],
                           lr=0.05, momentum=0.9, nesterov=True)


def count_step_flops(model, x, y):
    """FLOPs of one forward + backward (the optimizer's elementwise work is not counted)."""
    from torch.utils.flop_counter import FlopCounterMode

    model.zero_grad(set_to_none=True)
    with FlopCounterMode(display=False) as counter:
        F.cross_entropy(model(x), y).backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops()


def time_step(model, optimizer, x, y, warmup, iters):
    """Median and minimum ms of a step after `warmup` steps, and the first step's seconds."""
    model.train()
    times = []
    first_s = 0.0
    loss = None
    for i in range(warmup + iters):
        torch.cuda.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        if i == 0:
            first_s = elapsed
        if i >= warmup:
            times.append(elapsed * 1e3)
    if not torch.isfinite(loss):
        raise SystemExit("revnet_peer_gpu: the loss became %s; the timing is not trustworthy" % loss.item())
    return statistics.median(times), min(times), first_s


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arch", choices=sorted(revnet_peer.PRESETS), default="revnet18")
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--input", type=revnet_peer.parse_input, help="C,H,W (default: the preset's)")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--tf32", action="store_true", help="allow TF32 in convolutions and matmuls")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--cudnn-benchmark", action="store_true", help="let cuDNN time its algorithms")
    parser.add_argument("--count-flops", action="store_true", help="count one step's FLOPs, report TFLOP/s")
    args = parser.parse_args()
    if args.batch < 2 or args.iters < 1 or args.warmup < 1:
        parser.error("need --batch >= 2 (BatchNorm), --iters >= 1, --warmup >= 1")
    impl = "torch.compile" if args.compile else "torch"
    base = {"bench": "step", "impl": impl, "arch": args.arch, "batch": args.batch, "tf32": args.tf32,
            "cudnn_benchmark": args.cudnn_benchmark}
    if not torch.cuda.is_available():
        print(json.dumps(dict(base, skipped="torch.cuda.is_available() is False")))
        return 0
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32  # PyTorch's default is True: set it either way
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    device = torch.device(args.device)
    torch.cuda.set_device(device)
    input_shape = args.input or revnet_peer.PRESETS[args.arch]["input"]
    torch.manual_seed(0)
    model = revnet_peer.build_revnet(args.arch, args.classes, input_shape[0], input_shape[1] >= 128).to(device)
    x = torch.randn(args.batch, *input_shape, device=device)
    y = torch.randint(0, args.classes, (args.batch,), device=device)
    flops = count_step_flops(model, x, y) if args.count_flops else 0
    optimizer = make_optimizer(model)
    timed = model
    if args.compile:
        try:
            timed = torch.compile(model)
        except Exception as e:  # noqa: BLE001 - report why, and go on without it
            print(json.dumps(dict(base, skipped="torch.compile failed: %s" % e)))
            return 0
    try:
        median_ms, min_ms, first_s = time_step(timed, optimizer, x, y, args.warmup, args.iters)
    except Exception as e:  # noqa: BLE001 - torch.compile fails late (inductor needs a compiler)
        if not args.compile:
            raise
        print(json.dumps(dict(base, skipped="torch.compile failed: %s: %s" % (type(e).__name__, str(e)[:300]))))
        return 0
    out = dict(base, median_ms=round(median_ms, 3), min_ms=round(min_ms, 3), iters=args.iters,
               images_per_s=round(1000.0 * args.batch / median_ms, 1), torch=torch.__version__,
               gpu=torch.cuda.get_device_name(device))
    if args.compile:
        out["compile_s"] = round(first_s, 1)
    if flops:
        out["step_flops"] = flops
        out["tflops"] = round(flops / (median_ms * 1e-3) / 1e12, 2)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
