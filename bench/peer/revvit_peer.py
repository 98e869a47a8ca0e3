#!/usr/bin/env python3
"""PyTorch peer of petra's reversible vision transformer (model.arch revvit; docs/design.md §2,
Mangalam et al. 2022), written in plain PyTorch from its spec, for petra_peer.py's PETRA:

  stem   a p×p convolution of stride p (C → d, with bias), its map read as T = (H/p)·(W/p) tokens
         (N, T, d) in row-major patch order, plus a learned position embedding (T, d); the tokens go
         to both streams (no class token);
  block  y1 = x1 + F(x2), y2 = x2 + G(y1); F = LayerNorm → multi-head self-attention (h heads of
         d/h features, scores q·kᵀ/√(d/h), separate q, k, v and output projections with biases),
         G = LayerNorm → d → round(r·d) → d MLP with the exact (erf) GELU; LayerNorm eps 1e-6;
         inverse x2 = y2 − G(y1), x1 = y1 − F(x2);
  head   the two streams' features concatenated per token (2d), LayerNorm, mean over the tokens,
         linear to the classes.

Every tensor is laid out and named as in petra's checkpoints (block "stem", "b0" …, "head", then
PyTorch's name inside it: linear weights (out, in); heads split the d features in h consecutive
groups), so a checkpoint loads by name. Initial values are PyTorch's: a run that must match petra's
starts from petra's weights (petra_peer.py --init-from). Attention is written out on (N, T, d)
tensors: every sample attends over its own tokens only.

  revvit_peer.py count [--depth 6 --width 128 --heads 4 --patch 4 --mlp-ratio 4 --input 1,28,28]

prints the number of trainable parameters.
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

LN_EPS = 1e-6
# revvit_tiny_fmnist's model keys (config/presets/revvit_tiny_fmnist.yaml).
TINY_FMNIST = dict(depth=6, width=128, heads=4, patch=4, mlp_ratio=4.0, input=(1, 28, 28), classes=10)


class PatchStem(nn.Module):
    """Images (N, C, H, W) → two copies of the tokens (N, T, d), position embedding added."""

    def __init__(self, channels, height, width, patch, features):
        super().__init__()
        self.patch = nn.Conv2d(channels, features, patch, stride=patch, bias=True)
        self.position = nn.Parameter(torch.zeros((height // patch) * (width // patch), features))
        self.position.no_weight_decay = True  # petra decays conv and linear weights only
        nn.init.trunc_normal_(self.position, std=0.02, a=-0.04, b=0.04)

    def forward(self, images):
        tokens = self.patch(images).flatten(2).transpose(1, 2) + self.position
        return tokens, tokens.clone()


class Attention(nn.Module):
    """F(x) = out(MHSA(LN(x))) over tokens (N, T, d)."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads, self.scale = heads, 1.0 / math.sqrt(width // heads)
        self.norm = nn.LayerNorm(width, eps=LN_EPS)
        self.q, self.k, self.v = nn.Linear(width, width), nn.Linear(width, width), nn.Linear(width, width)
        self.out = nn.Linear(width, width)

    def split(self, x):  # (N, T, d) → (N, h, T, d/h): head j holds features j·d/h … (j+1)·d/h − 1
        n, t, d = x.shape
        return x.reshape(n, t, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x):
        h = self.norm(x)
        q, k, v = self.split(self.q(h)), self.split(self.k(h)), self.split(self.v(h))
        p = torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1)  # (N, h, T, T)
        n, _, t, _ = p.shape
        return self.out((p @ v).transpose(1, 2).reshape(n, t, -1))


class Mlp(nn.Module):
    """G(x) = fc2(GELU(fc1(LN(x))))."""

    def __init__(self, width, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(width, eps=LN_EPS)
        self.fc1, self.fc2 = nn.Linear(width, hidden), nn.Linear(hidden, width)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(self.norm(x))))  # F.gelu's default is the erf form


class ReversibleBlock(nn.Module):
    """(x1, x2) → (y1, y2) = (x1 + F(x2), x2 + G(y1)); `inverse` rebuilds (x1, x2) from (y1, y2)."""

    def __init__(self, width, heads, hidden):
        super().__init__()
        self.attn, self.mlp = Attention(width, heads), Mlp(width, hidden)

    def forward(self, xs):
        x1, x2 = xs
        y1 = x1 + self.attn(x2)
        return y1, x2 + self.mlp(y1)

    def inverse(self, ys):
        y1, y2 = ys
        x2 = y2 - self.mlp(y1)
        return y1 - self.attn(x2), x2


class TokenHead(nn.Module):
    """concat(x1, x2) per token → LayerNorm(2d) → mean over tokens → linear."""

    def __init__(self, width, classes):
        super().__init__()
        self.norm = nn.LayerNorm(2 * width, eps=LN_EPS)
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, xs):
        return self.fc(self.norm(torch.cat(xs, dim=2)).mean(dim=1))


def check_spec(depth, width, heads, patch, mlp_ratio, input_shape, classes):
    """None if the keys build a network (petra's revvit_spec::validate), else what is wrong."""
    c, h, w = input_shape
    if min(c, h, w) <= 0 or classes < 2 or depth <= 0 or width <= 0 or heads <= 0 or patch <= 0:
        return "input C, H, W, depth, width, heads and patch must be positive and classes at least 2"
    if width % heads:
        return "width %d is not divisible by %d heads" % (width, heads)
    if h % patch or w % patch:
        return "input %d×%d is not divisible into %d×%d patches" % (h, w, patch, patch)
    if not (mlp_ratio > 0 and math.isfinite(mlp_ratio)) or round(mlp_ratio * width) < 1:
        return "mlp_ratio %g must give a hidden width of at least 1" % mlp_ratio
    return None


def build_revvit(depth, width, heads, patch, mlp_ratio, input_shape, classes):
    """Stem, `depth` reversible blocks, head: one block per stage, each with its petra name."""
    problem = check_spec(depth, width, heads, patch, mlp_ratio, input_shape, classes)
    if problem:
        raise ValueError(problem)
    hidden = int(math.floor(mlp_ratio * width + 0.5))  # std::lround
    blocks = [PatchStem(input_shape[0], input_shape[1], input_shape[2], patch, width)]
    blocks += [ReversibleBlock(width, heads, hidden) for _ in range(depth)]
    blocks.append(TokenHead(width, classes))
    for i, block in enumerate(blocks):
        block.petra_name = "stem" if i == 0 else "head" if i == len(blocks) - 1 else "b%d" % (i - 1)
    return nn.Sequential(*blocks)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("count",))
    for key in ("depth", "width", "heads", "patch", "classes"):
        parser.add_argument("--" + key, type=int, default=TINY_FMNIST[key])
    parser.add_argument("--mlp-ratio", type=float, default=TINY_FMNIST["mlp_ratio"])
    parser.add_argument("--input", default="1,28,28", help="C,H,W")
    args = parser.parse_args()
    try:
        shape = tuple(int(s) for s in args.input.split(","))
        assert len(shape) == 3
    except (ValueError, AssertionError):
        parser.error("--input must be C,H,W, got '%s'" % args.input)
    problem = check_spec(args.depth, args.width, args.heads, args.patch, args.mlp_ratio, shape, args.classes)
    if problem:
        parser.error(problem)
    model = build_revvit(args.depth, args.width, args.heads, args.patch, args.mlp_ratio, shape, args.classes)
    print(sum(p.numel() for p in model.parameters() if p.requires_grad))


if __name__ == "__main__":
    main()
