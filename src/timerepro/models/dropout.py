"""Dropout with a fast mask generator on CPU: the same distribution as `nn.Dropout`, other random numbers.

torch draws a CPU dropout mask from mt19937 one element at a time, about 6 ns per element here: in a
DyGFormer training step (UCI configuration, 400 pairs of 64 tokens) that was a third of the step
(`docs/graph_speed.md`). Here the mask of a large CPU tensor comes from numpy's SFC64, seeded by one
draw from torch's default generator (so `torch.manual_seed` and a checkpoint's RNG state still fix
it): 32 random bits per element, an element is dropped when they fall below round(p 2^32), i.e. with
probability p to within 2^-32 (torch's own `bernoulli_` resolves p no finer). Elements are dropped
independently, kept ones scaled by 1 / (1 - p), as `F.dropout` does; only which random numbers are
used differs ("exact in distribution", the rule of `docs/graph_speed.md`). CUDA, `meta`, small
tensors and evaluation use `F.dropout` unchanged.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

MIN_ELEMENTS = 1 << 15  # below this torch's generator costs less than seeding a new one
ENABLED = True  # False: every call is `F.dropout` (the benchmark's and a test's handle)


class _MaskedScale(torch.autograd.Function):
    """x -> x / (1 - p) with the dropped entries zero; the gradient is masked and scaled the same way."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, dropped: torch.Tensor, scale: float) -> torch.Tensor:
        ctx.save_for_backward(dropped)
        ctx.scale = scale
        return x.mul(scale).masked_fill_(dropped, 0)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (dropped,) = ctx.saved_tensors
        return grad.mul(ctx.scale).masked_fill_(dropped, 0), None, None


def dropped_mask(shape: torch.Size, p: float) -> torch.Tensor:
    """A CPU bool tensor of `shape`, each entry True (dropped) with probability p, independently."""
    n = int(np.prod(shape))
    seed = int(torch.randint(0, 2**62, (1,)))
    # n int32 draws from ceil(n / 2) 64-bit outputs, uniform on [-2^31, 2^31)
    bits = np.random.SFC64(seed).random_raw((n + 1) // 2).view(np.int32)[:n]
    threshold = min(int(round(p * 2**32)) - 2**31, 2**31 - 1)
    return torch.from_numpy(bits < threshold).view(shape)


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """`F.dropout(x, p, training)`, with the mask of a large CPU tensor from `dropped_mask`."""
    if not (ENABLED and training and 0.0 < p < 1.0 and x.device.type == "cpu" and x.numel() >= MIN_ELEMENTS):
        return F.dropout(x, p, training)
    return _MaskedScale.apply(x, dropped_mask(x.shape, p), 1.0 / (1.0 - p))


class Dropout(nn.Dropout):
    """`nn.Dropout` (same attributes, no state) drawing its CPU masks with `dropout`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.inplace:
            return super().forward(x)
        return dropout(x, self.p, self.training)
