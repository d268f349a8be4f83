"""Every time encoder of the five papers, side by side, registered by name.

An encoder maps time differences of shape (...,) to features of shape (..., dim). Encoders that
standardize their input (linear, cosine_scale) take the mean and standard deviation of the
training split's time differences as constructor arguments; the others ignore them.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
from torch import nn

from timerepro.catalog import Catalog
from timerepro.names import ENCODER_LABELS as LABELS

ENCODERS: Catalog[type[nn.Module]] = Catalog("time encoder")  # filled by @register below; refuses a name twice


def register(name: str) -> Callable[[type[nn.Module]], type[nn.Module]]:
    if name not in LABELS:
        raise KeyError(f"encoder {name!r} must be listed in timerepro.names.ENCODER_LABELS")

    def deco(cls: type[nn.Module]) -> type[nn.Module]:
        ENCODERS.add(name, cls)
        cls.registry_name = name
        return cls

    return deco


def make_encoder(name: str, dim: int, *, mean: float = 0.0, std: float = 1.0, **kwargs) -> nn.Module:
    """Build the encoder registered as `name` with output dimension `dim`."""
    return ENCODERS[name](dim, mean=mean, std=std, **kwargs)


def dyglib_frequencies(n: int) -> torch.Tensor:
    """DyGLib's initial frequencies w_i = 1 / 10^linspace(0, 9, n) (TGAT's geometric spread)."""
    return torch.from_numpy(1.0 / 10 ** np.linspace(0, 9, n, dtype=np.float64)).float()


class _Standardize(nn.Module):
    """z = (dt - mu) / sigma with fixed (non-learned) train-split statistics."""

    def __init__(self, mean: float, std: float):
        super().__init__()
        if not std > 0:
            raise ValueError(f"standard deviation of time differences must be > 0, got {std}")
        self.register_buffer("mean", torch.tensor(float(mean)))
        self.register_buffer("std", torch.tensor(float(std)))

    def forward(self, dt: torch.Tensor) -> torch.Tensor:
        return (dt - self.mean) / self.std


@register("linear")
class LinearEncoder(nn.Module):
    """Phi(dt) = w z + b with z = (dt - mu)/sigma (linear_time, Eq. 1)."""

    def __init__(self, dim: int, *, mean: float = 0.0, std: float = 1.0):
        super().__init__()
        self.dim = dim
        self.standardize = _Standardize(mean, std)
        self.proj = nn.Linear(1, dim)

    def forward(self, dt: torch.Tensor) -> torch.Tensor:
        return self.proj(self.standardize(dt).unsqueeze(-1))


@register("cosine")
class CosineEncoder(nn.Module):
    """Phi(dt) = cos(w dt + phi), learnable w (DyGLib init) and phi = 0 (TGAT/DyGFormer as coded)."""

    def __init__(self, dim: int, *, mean: float = 0.0, std: float = 1.0, learnable: bool = True):
        super().__init__()
        self.dim = dim
        self.w = nn.Parameter(dyglib_frequencies(dim), requires_grad=learnable)
        self.phi = nn.Parameter(torch.zeros(dim), requires_grad=learnable)

    def _input(self, dt: torch.Tensor) -> torch.Tensor:
        return dt

    def forward(self, dt: torch.Tensor) -> torch.Tensor:
        # (..., 1) * (dim,) -> (..., dim)
        return torch.cos(self._input(dt).unsqueeze(-1) * self.w + self.phi)


@register("cosine_scale")
class CosineScaleEncoder(CosineEncoder):
    """The all-cosine encoder on standardized differences: isolates the effect of scaling."""

    def __init__(self, dim: int, *, mean: float = 0.0, std: float = 1.0, learnable: bool = True):
        super().__init__(dim, learnable=learnable)
        self.standardize = _Standardize(mean, std)

    def _input(self, dt: torch.Tensor) -> torch.Tensor:
        return self.standardize(dt)


@register("sine_cosine")
class SineCosineEncoder(nn.Module):
    """Phi(t) = sqrt(1/k) [cos(w_1 t), .., cos(w_k t), sin(w_1 t), .., sin(w_k t)], k = dim/2.

    Xu et al. (2019)'s form, so that <Phi(a), Phi(b)> = (1/k) sum_i cos(w_i (a - b)). The output
    has `dim` features from k = dim/2 frequencies (the authors' code convention), so encoders are
    compared at equal width; cosines first, then sines (order is irrelevant to a linear layer).
    """

    def __init__(self, dim: int, *, mean: float = 0.0, std: float = 1.0, learnable: bool = True):
        super().__init__()
        if dim % 2:
            raise ValueError(f"sine_cosine needs an even dimension, got {dim}")
        self.dim = dim
        self.k = dim // 2
        self.w = nn.Parameter(dyglib_frequencies(self.k), requires_grad=learnable)

    def forward(self, dt: torch.Tensor) -> torch.Tensor:
        angle = dt.unsqueeze(-1) * self.w  # (..., k)
        return math.sqrt(1.0 / self.k) * torch.cat([torch.cos(angle), torch.sin(angle)], dim=-1)


@register("time2vec")
class Time2Vec(nn.Module):
    """t2v(tau)[0] = w_0 tau + phi_0; t2v(tau)[i] = F(w_i tau + phi_i), i >= 1 (Time2Vec, Eq. 1).

    `activation` is sin (the paper's choice), cos, or any name in ACTIVATIONS; `fixed_frequencies`
    freezes w_1..w_k at their initial values (the paper's frequency ablation).
    """

    ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
        "sin": torch.sin,
        "cos": torch.cos,
        "sigmoid": torch.sigmoid,
        "tanh": torch.tanh,
        "relu": torch.relu,
        "identity": lambda x: x,
    }

    def __init__(
        self,
        dim: int,
        *,
        mean: float = 0.0,
        std: float = 1.0,
        activation: str = "sin",
        fixed_frequencies: bool = False,
    ):
        super().__init__()
        if dim < 2:
            raise ValueError("time2vec needs dim >= 2 (one linear and at least one periodic term)")
        if activation not in self.ACTIVATIONS:
            raise ValueError(f"unknown Time2Vec activation {activation!r}; known: {sorted(self.ACTIVATIONS)}")
        self.dim = dim
        self.activation = activation
        self.w0 = nn.Parameter(torch.randn(1))
        self.phi0 = nn.Parameter(torch.randn(1))
        self.w = nn.Parameter(torch.randn(dim - 1), requires_grad=not fixed_frequencies)
        self.phi = nn.Parameter(torch.randn(dim - 1))

    def forward(self, tau: torch.Tensor) -> torch.Tensor:
        tau = tau.unsqueeze(-1)  # (..., 1)
        linear = self.w0 * tau + self.phi0  # (..., 1)
        periodic = self.ACTIVATIONS[self.activation](tau * self.w + self.phi)  # (..., dim - 1)
        return torch.cat([linear, periodic], dim=-1)
