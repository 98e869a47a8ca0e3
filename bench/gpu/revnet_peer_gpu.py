#!/usr/bin/env python3
"""PyTorch peer on a GPU: bench/peer/revnet_peer.py's RevNet (imported, not copied), timed on CUDA.

  revnet_peer_gpu.py --arch revnet18 --batch 128 --warmup 10 --iters 50
                     [--variants fp32,tf32,bf16,tf32+cl+bench+graph,...] [--count-flops]
  (old single-variant flags: --tf32 --compile --cudnn-benchmark; they make one variant)

One training step = zero_grad, forward, cross-entropy, backward, SGD Nesterov step (weight decay on
conv and linear weights only): the work of bench_gpu_step's "step" (petra's backprop stage, J = 1,
k = 1), on one fixed random batch. Each variant builds its own model (seed 0) and optimizer in this
process and prints one JSON line like bench_gpu_step's: the median and minimum wall time of a step
(host clock, synchronised after each step) and the median GPU span of a step (torch.cuda.Event
before its first op and after its last: the GPU's time from start to end, idle gaps between
kernels included, the host's wait before the first kernel excluded).

A variant is its math and its options, joined by "+":
  fp32 | tf32 | bf16   fp32 math (TF32 off) | TF32 in convolutions and matmuls | bf16 autocast
                       (torch.autocast; TF32 off for what stays fp32)
  cl                   channels-last (NHWC) model and input
  bench                torch.backends.cudnn.benchmark (cuDNN times its algorithms per shape)
  graph                the whole step captured once as a CUDA graph and replayed (static input,
                       the optimizer's step inside the graph, as PyTorch's whole-network example)
  compile              torch.compile of the model (the first warm-up step compiles: compile_s)
--count-flops counts one step's FLOPs once (torch.utils.flop_counter: convolutions and matrix
products, forward and backward) and reports TFLOP/s at each variant's median.
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

MATHS = ("fp32", "tf32", "bf16")
OPTIONS = ("cl", "bench", "graph", "compile")


def parse_variant(text):
    """'tf32+cl+bench' -> ('tf32', {'cl', 'bench'}); ValueError naming what is wrong."""
    parts = text.split("+")
    if parts[0] not in MATHS:
        raise ValueError("variant %r must start with one of %s" % (text, ", ".join(MATHS)))
    options = set(parts[1:])
    unknown = options - set(OPTIONS)
    if unknown:
        raise ValueError("variant %r: unknown option(s) %s (use %s)" % (
            text, ", ".join(sorted(unknown)), ", ".join(OPTIONS)))
    if "graph" in options and "compile" in options:
        raise ValueError("variant %r: graph and compile are separate rows" % text)
    return parts[0], options


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


class Step:
    """One training step of `model` on (x, y) in `math`, eager or replayed from a CUDA graph."""

    def __init__(self, model, optimizer, x, y, math, graph):
        self.model, self.optimizer, self.x, self.y, self.math = model, optimizer, x, y, math
        self.graph = None
        self.loss = None
        if graph:
            self.capture()

    def eager(self):
        self.optimizer.zero_grad(set_to_none=True)
        # No autocast cache: a graph must not capture casts cached outside it.
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.math == "bf16", cache_enabled=False):
            loss = F.cross_entropy(self.model(self.x), self.y)
        loss.backward()
        self.optimizer.step()
        return loss

    def capture(self):
        # PyTorch's whole-network capture: warm up on a side stream (cudnn.benchmark's searches,
        # the momentum buffers, the allocator's pools), then capture one step with set_to_none
        # gradients, so that backward allocates them inside the graph's private pool.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.eager()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        self.optimizer.zero_grad(set_to_none=True)
        with torch.cuda.graph(self.graph):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.math == "bf16", cache_enabled=False):
                self.loss = F.cross_entropy(self.model(self.x), self.y)
            self.loss.backward()
            self.optimizer.step()

    def __call__(self):
        if self.graph is not None:
            self.graph.replay()
            return self.loss
        self.loss = self.eager()
        return self.loss


def time_variant(args, text, input_shape, flops):
    math, options = parse_variant(text)
    row = {"bench": "step", "impl": "torch", "variant": text, "math": math, "arch": args.arch, "batch": args.batch,
           "tf32": math == "tf32", "channels_last": "cl" in options, "cudnn_benchmark": "bench" in options,
           "cuda_graph": "graph" in options, "compile": "compile" in options}
    torch.backends.cuda.matmul.allow_tf32 = math == "tf32"
    torch.backends.cudnn.allow_tf32 = math == "tf32"  # PyTorch's default is True: set it either way
    torch.backends.cudnn.benchmark = "bench" in options
    device = torch.device(args.device)
    torch.manual_seed(0)
    model = revnet_peer.build_revnet(args.arch, args.classes, input_shape[0], input_shape[1] >= 128).to(device)
    x = torch.randn(args.batch, *input_shape, device=device)
    y = torch.randint(0, args.classes, (args.batch,), device=device)
    if "cl" in options:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    model.train()
    optimizer = make_optimizer(model)
    timed = torch.compile(model) if "compile" in options else model
    first_s = 0.0
    try:
        t0 = time.perf_counter()
        step = Step(timed, optimizer, x, y, math, "graph" in options)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        wall, gpu = [], []
        for i in range(args.warmup + args.iters):
            torch.cuda.synchronize()
            began = time.perf_counter()
            start.record()
            loss = step()
            end.record()
            torch.cuda.synchronize()
            elapsed = time.perf_counter() - began
            if i == 0:
                first_s = time.perf_counter() - t0
            if i >= args.warmup:
                wall.append(elapsed * 1e3)
                gpu.append(start.elapsed_time(end))
        if not torch.isfinite(loss):
            return dict(row, skipped="the loss became %s; the timing is not trustworthy" % loss.item())
    except Exception as e:  # noqa: BLE001 - report why, and go on with the next variant
        return dict(row, skipped="%s: %s" % (type(e).__name__, str(e)[:300]))
    median_ms = statistics.median(wall)
    out = dict(row, median_ms=round(median_ms, 3), min_ms=round(min(wall), 3),
               gpu_median_ms=round(statistics.median(gpu), 3), iters=args.iters,
               images_per_s=round(1000.0 * args.batch / median_ms, 1), last_loss=round(loss.item(), 4),
               torch=torch.__version__, gpu=torch.cuda.get_device_name(device))
    if "compile" in options:
        out["compile_s"] = round(first_s, 1)
    if flops:
        out["step_flops"] = flops
        out["tflops"] = round(flops / (median_ms * 1e-3) / 1e12, 2)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arch", choices=sorted(revnet_peer.PRESETS), default="revnet18")
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--input", type=revnet_peer.parse_input, help="C,H,W (default: the preset's)")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--variants", help="comma-separated variants (see the top of this file)")
    parser.add_argument("--tf32", action="store_true", help="one variant: TF32 (old flag)")
    parser.add_argument("--compile", action="store_true", help="one variant: torch.compile (old flag)")
    parser.add_argument("--cudnn-benchmark", action="store_true", help="one variant: cudnn.benchmark (old flag)")
    parser.add_argument("--count-flops", action="store_true", help="count one step's FLOPs, report TFLOP/s")
    args = parser.parse_args()
    if args.batch < 2 or args.iters < 1 or args.warmup < 1:
        parser.error("need --batch >= 2 (BatchNorm), --iters >= 1, --warmup >= 1")
    if args.variants:
        variants = [v for v in args.variants.split(",") if v]
    else:
        variants = ["+".join(["tf32" if args.tf32 else "fp32"] + (["bench"] if args.cudnn_benchmark else []) +
                             (["compile"] if args.compile else []))]
    for v in variants:  # every one checked before anything runs
        try:
            parse_variant(v)
        except ValueError as e:
            print("revnet_peer_gpu: --variants: %s" % e, file=sys.stderr)
            return 2
    if not torch.cuda.is_available():
        for v in variants:
            print(json.dumps({"bench": "step", "impl": "torch", "variant": v,
                              "skipped": "torch.cuda.is_available() is False"}))
        return 0
    torch.cuda.set_device(torch.device(args.device))
    input_shape = args.input or revnet_peer.PRESETS[args.arch]["input"]
    flops = 0
    if args.count_flops:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.manual_seed(0)
        model = revnet_peer.build_revnet(args.arch, args.classes, input_shape[0], input_shape[1] >= 128)
        model = model.to(args.device)
        flops = count_step_flops(model, torch.randn(args.batch, *input_shape, device=args.device),
                                 torch.randint(0, args.classes, (args.batch,), device=args.device))
        del model
    for v in variants:
        print(json.dumps(time_variant(args, v, input_shape, flops)), flush=True)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
