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

from timerepro.names import ENCODER_LABELS as LABELS

ENCODERS: dict[str, type[nn.Module]] = {}


def register(name: str) -> Callable[[type[nn.Module]], type[nn.Module]]:
    if name not in LABELS:
        raise KeyError(f"encoder {name!r} must be listed in timerepro.names.ENCODER_LABELS")

    def deco(cls: type[nn.Module]) -> type[nn.Module]:
        ENCODERS[name] = cls
        cls.registry_name = name
        return cls

    return deco


def make_encoder(name: str, dim: int, *, mean: float = 0.0, std: float = 1.0, **kwargs) -> nn.Module:
    """Build the encoder registered as `name` with output dimension `dim`."""
    if name not in ENCODERS:
        raise KeyError(f"unknown time encoder {name!r}; known: {sorted(ENCODERS)}")
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
    """t2v(tau)[0] = w_0 tau + phi_0; t2v(tau)[i] = F(w_i tau + phi_i), i = 1..k (Time2Vec, Eq. 1).

    Variants of the paper's ablations (Figure 5; choices where the paper is silent: docs/time2vec.md):
    `activation` F (5a): sin (the paper's), cos, mod, triangle (periodic, period 2 pi, range [-1, 1] like
    sine), sigmoid, tanh, relu (non-periodic), identity; `frequencies` (5b): learned, equally_spaced
    (w_n = 2 pi n / k, phi_n = 0, fixed) or positional (Vaswani et al.: w_j = 10000^(-2 floor(j/2) / k),
    phi_j = 0 for even j and pi/2 for odd j, so sin/cos pairs, fixed); `linear_term=False` (5d) drops
    t2v[0], so all `dim` outputs are periodic. `fixed_frequencies` freezes learned ones at their initial values.
    Initial values of learned parameters: standard normal (as the common reference implementations).
    """

    ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
        "sin": torch.sin,
        "cos": torch.cos,
        # sawtooth x mod 2 pi, mapped onto [-1, 1): period and range of sine
        "mod": lambda x: torch.remainder(x, 2 * math.pi) / math.pi - 1.0,
        # triangle wave of period 2 pi in [-1, 1], equal to cos(x) at multiples of pi
        "triangle": lambda x: 2.0 * torch.abs(torch.remainder(x, 2 * math.pi) - math.pi) / math.pi - 1.0,
        "sigmoid": torch.sigmoid,
        "tanh": torch.tanh,
        "relu": torch.relu,
        "identity": lambda x: x,
    }
    PERIODIC = ("sin", "cos", "mod", "triangle")
    FREQUENCIES = ("learned", "equally_spaced", "positional")

    def __init__(
        self,
        dim: int,
        *,
        mean: float = 0.0,
        std: float = 1.0,
        activation: str = "sin",
        frequencies: str = "learned",
        linear_term: bool = True,
        fixed_frequencies: bool = False,
    ):
        super().__init__()
        k = dim - 1 if linear_term else dim
        if k < 1:
            raise ValueError(f"time2vec needs at least one periodic term: dim {dim} with linear_term={linear_term}")
        if activation not in self.ACTIVATIONS:
            raise ValueError(f"unknown Time2Vec activation {activation!r}; known: {sorted(self.ACTIVATIONS)}")
        if frequencies not in self.FREQUENCIES:
            raise ValueError(f"unknown Time2Vec frequencies {frequencies!r}; known: {list(self.FREQUENCIES)}")
        self.dim, self.k = dim, k
        self.activation, self.frequencies, self.linear_term = activation, frequencies, linear_term
        if linear_term:
            self.w0 = nn.Parameter(torch.randn(1))
            self.phi0 = nn.Parameter(torch.randn(1))
        if frequencies == "learned":
            self.w = nn.Parameter(torch.randn(k), requires_grad=not fixed_frequencies)
            self.phi = nn.Parameter(torch.randn(k))
        else:
            w, phi = self.fixed_schedule(frequencies, k)
            self.register_buffer("w", w)
            self.register_buffer("phi", phi)

    @staticmethod
    def fixed_schedule(frequencies: str, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(w, phi) of the fixed-frequency variants of Figure 5b, each of shape (k,)."""
        j = torch.arange(k, dtype=torch.float64)
        if frequencies == "equally_spaced":
            return (2 * math.pi * (j + 1) / k).float(), torch.zeros(k)
        # positional: PE(t, 2i) = sin(t / 10000^(2i/k)), PE(t, 2i+1) = cos(t / 10000^(2i/k))
        w = 10000.0 ** (-2 * torch.div(j, 2, rounding_mode="floor") / k)
        phi = (j % 2) * (math.pi / 2)
        return w.float(), phi.float()

    def forward(self, tau: torch.Tensor) -> torch.Tensor:
        tau = tau.unsqueeze(-1)  # (..., 1)
        periodic = self.ACTIVATIONS[self.activation](tau * self.w + self.phi)  # (..., k)
        if not self.linear_term:
            return periodic
        linear = self.w0 * tau + self.phi0  # (..., 1)
        return torch.cat([linear, periodic], dim=-1)
