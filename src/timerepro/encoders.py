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


# ------------------------------------------------------------------ dyg_mamba (GraphMixer, DyG-Mamba)

def fixed_frequencies(dim: int, alpha: float = 10.0, beta: float | None = None) -> torch.Tensor:
    """omega_i = alpha^(-(i-1)/beta), i = 1..dim (GraphMixer, section 3.1). beta = (dim - 1)/9 with alpha = 10
    (the default) gives DyGLib's 1/10^linspace(0, 9, dim), the frequencies GraphMixer's DyGLib code freezes."""
    if dim < 1:
        raise ValueError(f"dimension must be >= 1, got {dim}")
    if beta is None:
        beta = (dim - 1) / 9.0 if dim > 1 else 1.0
    if not (alpha > 0 and beta > 0):
        raise ValueError(f"alpha and beta must be > 0, got alpha={alpha}, beta={beta}")
    i = np.arange(1, dim + 1, dtype=np.float64)
    return torch.from_numpy(alpha ** (-(i - 1) / beta)).float()


@register("fixed_cosine")
class FixedCosineEncoder(nn.Module):
    """Phi(dt) = cos(omega dt), omega_i = alpha^(-(i-1)/beta) fixed, not trained (GraphMixer's time encoder;
    DyG-Mamba's X_T). A buffer, so it is in checkpoints but never given to an optimizer."""

    def __init__(self, dim: int, *, mean: float = 0.0, std: float = 1.0, alpha: float = 10.0, beta: float | None = None):
        super().__init__()
        self.dim = dim
        self.register_buffer("w", fixed_frequencies(dim, alpha, beta))

    def forward(self, dt: torch.Tensor) -> torch.Tensor:
        # (..., 1) * (dim,) -> (..., dim)
        return torch.cos(dt.unsqueeze(-1) * self.w)


@register("none")
class NoTimeEncoder(nn.Module):
    """Phi(dt) = 0: a model "without time information" (dyg_mamba Figure 1); its time channel carries nothing."""

    def __init__(self, dim: int, *, mean: float = 0.0, std: float = 1.0):
        super().__init__()
        self.dim = dim

    def forward(self, dt: torch.Tensor) -> torch.Tensor:
        return torch.zeros(*dt.shape, self.dim, dtype=dt.dtype if dt.is_floating_point() else torch.float32,
                           device=dt.device)


def time_spans(times: np.ndarray, query_times: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """DyG-Mamba's normalised time spans r (Eq. 5 as decided in docs/dyg_mamba.md, A01), in float64.

    times (B, L) in time order along each row with padding where `valid` (B, L) is False (padding
    may sit anywhere; DyG-Mamba pads on the left); query_times (B,) the prediction time tau. For the
    valid entries t_1 < ... of a row, r_1 = 1 / (tau - t_1) and r_k = (t_k - t_(k-1)) / (tau - t_1): the
    span since the previous interaction, normalised by the span the sequence covers (1 when
    tau - t_1 <= 0, i.e. a row holding only the node itself at tau). Padding gets 0."""
    times = np.asarray(times, dtype=np.float64)
    valid = np.asarray(valid, dtype=bool)
    tau = np.asarray(query_times, dtype=np.float64)[:, None]  # (B, 1)
    rows = np.arange(times.shape[0])
    has = valid.any(axis=1)
    first = np.where(has, valid.argmax(axis=1), 0)  # (B,) position of the first valid entry
    t_first = np.where(has, times[rows, first], tau[:, 0])[:, None]  # (B, 1)
    den = tau - t_first
    den = np.where(den > 0, den, 1.0)
    # previous valid time of every position: forward-fill the valid times (B, L)
    idx = np.where(valid, np.arange(times.shape[1])[None, :], -1)
    last_valid = np.maximum.accumulate(idx, axis=1)
    prev = np.concatenate([np.full((times.shape[0], 1), -1), last_valid[:, :-1]], axis=1)  # (B, L)
    prev_t = times[rows[:, None], np.maximum(prev, 0)]
    span = np.where(prev >= 0, times - prev_t, 1.0)  # the first valid entry: 1 (-> 1 / den)
    return np.where(valid, span / den, 0.0)


class TimeSpanControl(nn.Module):
    """DyG-Mamba's time-span control signal (Eq. 5): s = SiLU(Linear(cos(omega r))) of the normalised spans r
    (`time_spans`), omega fixed as GraphMixer's. (B, L) spans -> (B, L, out_dim); Delta = softplus(W s + b)
    is then taken per channel inside each block (Algorithm 1)."""

    def __init__(self, enc_dim: int, out_dim: int, alpha: float = 10.0, beta: float | None = None):
        super().__init__()
        self.encode = FixedCosineEncoder(enc_dim, alpha=alpha, beta=beta)
        self.proj = nn.Linear(enc_dim, out_dim)

    def forward(self, spans: torch.Tensor) -> torch.Tensor:
        return nn.functional.silu(self.proj(self.encode(spans)))
