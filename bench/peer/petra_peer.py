#!/usr/bin/env python3
"""An independent PETRA in PyTorch: docs/design.md §1's ticks on a RevNet or a RevViT, Fashion-MNIST.

A second implementation of the method, written from docs/design.md §1 alone, to tell petra's own
accuracy apart from the method's: same model (one block per stage; `--arch fashion_small`:
revnet_peer.py's RevNet, `--arch revvit`: revvit_peer.py's RevViT, the model keys as options),
same recipe (by default the preset of the arch: `default` for the RevNet (micro-batch 64, k = 2,
SGD Nesterov 0.9, wd 5e-4 off BN and biases, Goyal lr 0.05, cosine with 0.5 epoch of linear
warm-up), `revvit_tiny_fmnist` for the RevViT (AdamW, base lr 0.002, wd 0.05 on conv and linear
weights only, 1 epoch of warm-up); the schedule is per stage optimizer step; crop 28 pad 2 + flip,
whole optimizer batches only: 936 micro-batches of Fashion-MNIST's 60,000 images per epoch), same
tick schedule (micro-batch m enters stage 1 at tick m; its backward at stage j comes 2(J − j)
ticks after its forward there; a reversible stage rebuilds its input with its current weights), no
drain at epoch ends. By default nothing else is shared with petra: data order, augmentation draws
and initial weights are NumPy's / PyTorch's, so a run agrees with petra's in distribution. With
`--data-order petra --init-from CHECKPOINT` it takes petra's images and starts from petra's
weights, and `--compare-with CHECKPOINT` measures how far its final weights are from a petra run's
(check_petra_peer.sh: equal to fp32 round-off); `--evaluate CHECKPOINT` only tests a checkpoint's
weights. Run with /usr/bin/python3 (python3-torch):

  petra_peer.py --epochs 3 --seed 0 [--tick-order forward_first|backward_first] [--method backprop]
                [--optimizer adamw --base-lr 0.002 --weight-decay 0.05]
  petra_peer.py --arch revvit [--depth 6 --width 128 --heads 4 --patch 4 --mlp-ratio 4] --epochs 3
  petra_peer.py --arch revvit --evaluate runs/NAME/checkpoint.safetensors

Prints one line per epoch (test accuracy of the live weights taken the tick after the epoch's last
micro-batch entered stage 1; the last epoch's after the final drain) and a JSON summary line.
Bad options or input files exit with code 2 and say why.
"""
import argparse
import collections
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_checkpoint import compare_weights, load_weights  # noqa: E402
from peer_data import load_split, normalise, train_batches  # noqa: E402
from revnet_peer import build_revnet  # noqa: E402
import revvit_peer  # noqa: E402


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
        self.reversible = hasattr(block, "inverse")
        self.fifo = collections.deque()
        decays = [p.ndim > 1 and not getattr(p, "no_weight_decay", False) for p in block.parameters()]
        decay = [p for p, d in zip(block.parameters(), decays) if d]  # conv and linear weights
        no_decay = [p for p, d in zip(block.parameters(), decays) if not d]
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
                    x_in = self.block.inverse(rebuilt_out)
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


def evaluate(model, images, labels, batch=1000):
    """(test accuracy in %, mean cross-entropy) of the model's weights, BN on running statistics."""
    correct, loss = 0, 0.0
    model.eval()
    with torch.no_grad():
        for first in range(0, images.shape[0], batch):
            logits = model(torch.from_numpy(normalise(images[first:first + batch])).unsqueeze(1))
            truth = torch.from_numpy(labels[first:first + batch])
            correct += int((logits.argmax(1) == truth).sum())
            loss += float(F.cross_entropy(logits.double(), truth, reduction="sum"))
    model.train()
    return 100.0 * correct / images.shape[0], loss / images.shape[0]


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
    acc, loss = evaluate(nn.Sequential(*(s.block for s in stages)), *test)
    line = {"epoch": epoch, "test_accuracy": round(acc, 2), "test_loss": round(loss, 6), "tick": tick,
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


PRESETS = {  # per arch, the recipe of its preset (config/presets/)
    "fashion_small": dict(optimizer="sgd", base_lr=0.1, warmup_epochs=0.5, weight_decay=5e-4),
    "revvit": dict(optimizer="adamw", base_lr=0.002, warmup_epochs=1.0, weight_decay=0.05),
}
# The attention's key bias moves no logit (a softmax is blind to q·b added to a whole row of scores):
# its gradient is round-off only, and AdamW, whatever that gradient's size, turns it into steps of
# about ±lr, so the key biases of two correct implementations are apart by O(1). compare_weights
# reports them apart from the other tensors.
EXEMPT = {"fashion_small": (), "revvit": ("attn.k.bias",)}
REVVIT_KEYS = ("depth", "width", "heads", "patch", "mlp_ratio")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arch", choices=sorted(PRESETS), default="fashion_small",
                        help="fashion_small: the default preset's RevNet; revvit: revvit_tiny_fmnist's RevViT")
    for key in REVVIT_KEYS:
        parser.add_argument("--" + key.replace("_", "-"), type=float if key == "mlp_ratio" else int,
                            help="revvit only: model.%s (default: revvit_tiny_fmnist's, %s)"
                            % (key, revvit_peer.TINY_FMNIST[key]))
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--accumulation", type=int, default=2)
    parser.add_argument("--base-lr", type=float, help="default: the arch's preset's (0.1 SGD; 0.002 AdamW)")
    parser.add_argument("--warmup-epochs", type=float, help="default: the arch's preset's (0.5; 1 for revvit)")
    parser.add_argument("--optimizer", choices=("sgd", "adamw"),
                        help="sgd: Nesterov 0.9; adamw: torch.optim.AdamW, betas (0.9, 0.999); "
                             "default: the arch's preset's (sgd; adamw for revvit)")
    parser.add_argument("--eps", type=float, default=1e-8, help="adamw's eps")
    parser.add_argument("--weight-decay", type=float,
                        help="on conv and linear weights only; default: the preset's (5e-4; 0.05 for revvit)")
    parser.add_argument("--tick-order", choices=("forward_first", "backward_first"), default="forward_first")
    parser.add_argument("--method", choices=("petra", "backprop"), default="petra")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--train-limit", type=int, default=0, help="use the first N training images (0 = all)")
    parser.add_argument("--test-limit", type=int, default=0, help="use the first N test images (0 = all)")
    parser.add_argument("--data-order", choices=("numpy", "petra"), default="numpy",
                        help="petra: petra's shuffle and augmentation draws for --seed (the same images)")
    parser.add_argument("--init-from", help="start from the weights of this petra checkpoint (safetensors)")
    parser.add_argument("--compare-with", action="append", default=[], metavar="CHECKPOINT",
                        help="at the end, compare the weights with this petra checkpoint (repeatable: "
                             "\"compare\" holds the first, \"compares\" every one in order)")
    parser.add_argument("--evaluate", metavar="CHECKPOINT",
                        help="train nothing: test this petra checkpoint's weights and print one JSON line")
    args = parser.parse_args()
    if args.epochs < 1 or args.batch < 2 or args.accumulation < 1 or args.threads < 1 or min(args.train_limit,
                                                                                               args.test_limit) < 0:
        parser.error("need --epochs >= 1, --batch >= 2, --accumulation >= 1, --threads >= 1, "
                     "--train-limit and --test-limit >= 0")
    given = [k for k in REVVIT_KEYS if getattr(args, k) is not None]
    if args.arch != "revvit" and given:
        parser.error("--%s: a model key of --arch revvit only" % given[0].replace("_", "-"))
    if args.evaluate and (args.init_from or args.compare_with):
        parser.error("--evaluate tests a checkpoint as it is: no --init-from or --compare-with")
    for key, value in PRESETS[args.arch].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.arch == "revvit":
        for key in REVVIT_KEYS:
            if getattr(args, key) is None:
                setattr(args, key, revvit_peer.TINY_FMNIST[key])
        problem = revvit_peer.check_spec(*(getattr(args, k) for k in REVVIT_KEYS), (1, 28, 28), 10)
        if problem:
            parser.error("revvit: " + problem)
    args.lr = args.base_lr * args.batch * args.accumulation / 256.0
    return args


def build_model(args):
    if args.arch == "revvit":
        return revvit_peer.build_revvit(*(getattr(args, k) for k in REVVIT_KEYS), (1, 28, 28), 10)
    return build_revnet("fashion_small", 10, 1, False)


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    test = load_split(args.data, "t10k")
    if args.test_limit:
        test = (test[0][:args.test_limit], test[1][:args.test_limit])
    model = build_model(args)
    if args.evaluate:
        load_weights(model, args.evaluate)
        acc, loss = evaluate(model, *test)
        print(json.dumps({"arch": args.arch, "checkpoint": args.evaluate, "images": int(test[0].shape[0]),
                          "test_accuracy": acc, "test_loss": loss}))
        return
    train = load_split(args.data, "train")
    if args.train_limit:
        train = (train[0][:args.train_limit], train[1][:args.train_limit])
    steps_per_epoch = train[0].shape[0] // (args.batch * args.accumulation)
    if steps_per_epoch < 1:
        print("petra_peer: %d training images are fewer than one optimizer batch (%d · %d)"
              % (train[0].shape[0], args.batch, args.accumulation), file=sys.stderr)
        sys.exit(2)
    per_epoch = args.per_epoch = steps_per_epoch * args.accumulation
    warmup = int(math.floor(args.warmup_epochs * steps_per_epoch + 0.5))  # llround, as petra
    if args.init_from:
        load_weights(model, args.init_from)
    stages = [Stage(block, args, warmup, steps_per_epoch * args.epochs) for block in model]
    start = time.perf_counter()
    run = run_petra if args.method == "petra" else run_backprop
    lines = run(args, stages, train, test, per_epoch)
    seconds = time.perf_counter() - start
    summary = {"arch": args.arch, "method": args.method, "tick_order": args.tick_order, "seed": args.seed,
               "data_order": args.data_order}
    if args.compare_with:
        summary["compares"] = [compare_weights(model, path, EXEMPT[args.arch]) for path in args.compare_with]
        summary["compare"] = summary["compares"][0]
    print(json.dumps({**summary, "epochs": lines, "seconds": round(seconds, 1),
                      "images_per_second": round(per_epoch * args.epochs * args.batch / seconds, 1),
                      "fifo_peaks": [s.max_fifo for s in stages], "torch": torch.__version__}))


if __name__ == "__main__":
    main()
