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
_NUMPY_FLOATS = {torch.float32: np.float32, torch.float64: np.float64}  # masks numpy writes in the model's dtype


class _MaskedScale(torch.autograd.Function):
    """x -> x / (1 - p) where kept, 0 where dropped; the gradient is masked and scaled the same way. `kept`
    (1 = kept, in x's dtype: `.to` is then no copy) is saved; each way is one vectorised pass, 0 + scale * x * kept
    (`addcmul`): a masked fill is a branch per entry, about 3x slower here (docs/graph_speed.md)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, kept: torch.Tensor, scale: float) -> torch.Tensor:
        ctx.save_for_backward(kept)
        ctx.scale = scale
        return torch.addcmul(x.new_zeros(()), x, kept.to(x.dtype), value=scale)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (kept,) = ctx.saved_tensors
        return torch.addcmul(grad.new_zeros(()), grad, kept.to(grad.dtype), value=ctx.scale), None, None


class _AddMaskedScale(torch.autograd.Function):
    """x + y / (1 - p) where kept, x where dropped: a residual sum and the dropout of its branch in one pass
    (`addcmul` into x, the same numbers as the sum of x and `_MaskedScale`'s output); y's gradient as there."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, y: torch.Tensor, kept: torch.Tensor, scale: float) -> torch.Tensor:
        ctx.save_for_backward(kept)
        ctx.scale = scale
        return torch.addcmul(x, y, kept.to(y.dtype), value=scale)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (kept,) = ctx.saved_tensors
        return grad, torch.addcmul(grad.new_zeros(()), grad, kept.to(grad.dtype), value=ctx.scale), None, None


def _draws(n: int, p: float) -> tuple[np.ndarray, int]:
    """n int32 draws, uniform on [-2^31, 2^31), and the threshold below which an entry is dropped."""
    seed = int(torch.randint(0, 2**62, (1,)))
    # n int32 draws from ceil(n / 2) 64-bit outputs
    bits = np.random.SFC64(seed).random_raw((n + 1) // 2).view(np.int32)[:n]
    return bits, min(int(round(p * 2**32)) - 2**31, 2**31 - 1)


def dropped_mask(shape: torch.Size, p: float) -> torch.Tensor:
    """A CPU bool tensor of `shape`, each entry True (dropped) with probability p, independently."""
    bits, threshold = _draws(int(np.prod(shape)), p)
    return torch.from_numpy(bits < threshold).view(shape)


def kept_mask(shape: torch.Size, p: float, dtype: torch.dtype = torch.uint8) -> torch.Tensor:
    """`dropped_mask`'s complement from the same draws (1 = kept), as uint8 or straight as a float `dtype`: the
    comparison writes the 0/1 floats the masking multiplies by (torch's uint8 -> float copy was ~5x the draw)."""
    bits, threshold = _draws(int(np.prod(shape)), p)
    if dtype in _NUMPY_FLOATS:
        out = np.empty(bits.shape, _NUMPY_FLOATS[dtype])
        return torch.from_numpy(np.greater_equal(bits, threshold, out=out)).view(shape)
    kept = torch.from_numpy((bits >= threshold).view(np.uint8)).view(shape)
    return kept if dtype == torch.uint8 else kept.to(dtype)


def draws_mask(x: torch.Tensor, p: float, training: bool) -> bool:
    """Whether `dropout(x, p, training)` draws its mask with `kept_mask` (else it is `F.dropout`)."""
    return ENABLED and training and 0.0 < p < 1.0 and x.device.type == "cpu" and x.numel() >= MIN_ELEMENTS


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """`F.dropout(x, p, training)`, with the mask of a large CPU tensor from `kept_mask`."""
    if not draws_mask(x, p, training):
        return F.dropout(x, p, training)
    return _MaskedScale.apply(x, kept_mask(x.shape, p, x.dtype), 1.0 / (1.0 - p))


def add_dropout(x: torch.Tensor, y: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """`x + dropout(y, p, training)` (a residual branch), the mask drawn as `dropout` draws it: where that mask
    is drawn here, the sum and the masking are one pass (x and y of one shape)."""
    if not (ENABLED and training and 0.0 < p < 1.0 and y.device.type == "cpu" and y.numel() >= MIN_ELEMENTS
            and x.shape == y.shape and x.dtype == y.dtype):
        return x + dropout(y, p, training)
    return _AddMaskedScale.apply(x, y, kept_mask(y.shape, p, y.dtype), 1.0 / (1.0 - p))


class Dropout(nn.Dropout):
    """`nn.Dropout` (same attributes, no state) drawing its CPU masks with `dropout`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.inplace:
            return super().forward(x)
        return dropout(x, self.p, self.training)
