#!/usr/bin/env python3
"""PyTorch peer on a GPU: bench/peer/revnet_peer.py's RevNet (imported, not copied), timed on CUDA.

  revnet_peer_gpu.py --arch revnet18 --batch 128 --warmup 5 --iters 20 [--tf32] [--cudnn-benchmark]

One training step = zero_grad, forward, cross-entropy, backward, SGD Nesterov step, then
torch.cuda.synchronize(); prints one JSON line like bench_gpu_step's "step" line. TF32 is off unless
--tf32 (matching petra's default fp32 math); cudnn.benchmark is off unless asked (petra picks
algorithms by cuDNN's heuristics, not by timing them).
"""
import argparse
import importlib.util
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("revnet_peer", os.path.join(HERE, "..", "peer", "revnet_peer.py"))
revnet_peer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(revnet_peer)


def time_step(model, input_shape, batch, classes, warmup, iters, device):
    decay = [p for p in model.parameters() if p.ndim > 1]
    no_decay = [p for p in model.parameters() if p.ndim <= 1]
    optimizer = torch.optim.SGD([{"params": decay, "weight_decay": 5e-4}, {"params": no_decay, "weight_decay": 0.0}],
                                lr=0.01, momentum=0.9, nesterov=True)
    x = torch.randn(batch, *input_shape, device=device)
    y = torch.randint(0, classes, (batch,), device=device)
    model.train()
    times = []
    for i in range(warmup + iters):
        torch.cuda.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
    if not torch.isfinite(loss):
        raise SystemExit("revnet_peer_gpu: the loss became %s; the timing is not trustworthy" % loss.item())
    return statistics.median(times), min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arch", choices=sorted(revnet_peer.PRESETS), default="revnet18")
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--input", type=revnet_peer.parse_input, help="C,H,W (default: the preset's)")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--tf32", action="store_true", help="allow TF32 in convolutions and matmuls")
    parser.add_argument("--cudnn-benchmark", action="store_true", help="let cuDNN time its algorithms")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"bench": "step", "impl": "torch", "skipped": "torch.cuda.is_available() is False"}))
        return
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    device = torch.device(args.device)
    torch.cuda.set_device(device)
    input_shape = args.input or revnet_peer.PRESETS[args.arch]["input"]
    torch.manual_seed(0)
    model = revnet_peer.build_revnet(args.arch, args.classes, input_shape[0], input_shape[1] >= 128).to(device)
    median_ms, min_ms = time_step(model, input_shape, args.batch, args.classes, args.warmup, args.iters, device)
    print(json.dumps({"bench": "step", "impl": "torch", "arch": args.arch, "batch": args.batch, "tf32": args.tf32,
                      "cudnn_benchmark": args.cudnn_benchmark, "median_ms": round(median_ms, 3),
                      "min_ms": round(min_ms, 3), "iters": args.iters,
                      "images_per_s": round(1000.0 * args.batch / median_ms, 1), "torch": torch.__version__,
                      "gpu": torch.cuda.get_device_name(device)}))


if __name__ == "__main__":
    main()
