"""Every time encoder of the five papers, side by side, registered by name.

An encoder maps time differences of shape (...,) to features of shape (..., dim). Encoders that
standardize their input (linear, cosine_scale) take the mean and standard deviation of the
training split's time differences as constructor arguments (`standardization_stats` computes
them, with the paper's or the authors' statistic); the others ignore them.

Where linear_time's formula and the authors' code (hsinghuan/dg-linear-time) differ, both are
named options, the default being the form this module had first (docs/fidelity.md, item 5):
`standardization_stats(statistic=...)`, `sine_cosine(scale=..., phase=...)`, `linear(affine=...)`.
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


STATISTICS = ("pooled", "per_query_mean")


def standardization_stats(dt, valid=None, statistic: str = "pooled") -> tuple[float, float]:
    """Mean and standard deviation with which `linear` and `cosine_scale` standardize time differences.

    dt: (Q, n) time differences, one row per query (e.g. a training endpoint and its n sampled
    interactions); valid: (Q, n) bool, the entries that count (default: all).

    * "pooled" (linear_time Eq. 1 / App. D.2): mean and population std of every valid difference;
    * "per_query_mean" (the authors' code: dg-linear-time `analyze_target_historical_event_time_diff`
      then `np.nanmean` / `np.nanstd`; `auxiliary/synthetic.get_mean_std` with one row per batch):
      the mean of each row's valid differences, then the mean and population std of those row
      means; rows without a valid entry are left out. Its std is the spread of averages (over
      windows of equal length, about std / sqrt(n)), not the spread of the differences.

    Returns (0, 1) without any valid entry; the std is 1 when it is 0 (the encoders divide by it).
    """
    return mean_and_std(standardization_values(dt, valid, statistic))


def standardization_values(dt, valid=None, statistic: str = "pooled") -> np.ndarray:
    """The values whose mean and std `standardization_stats` takes, in row order: every valid difference
    ("pooled") or each row's mean ("per_query_mean"). Rows are independent, so the values of a (Q, n)
    array are the concatenated values of its row blocks (a large Q is gathered in chunks)."""
    if statistic not in STATISTICS:
        raise ValueError(f"unknown standardization statistic {statistic!r}; known: {STATISTICS}")
    dt = np.asarray(dt, dtype=np.float64)
    if dt.ndim != 2:
        raise ValueError(f"dt must be (queries, entries), got shape {dt.shape}")
    valid = np.ones(dt.shape, dtype=bool) if valid is None else np.asarray(valid, dtype=bool)
    if valid.shape != dt.shape:
        raise ValueError(f"valid has shape {valid.shape}, dt {dt.shape}")
    if statistic == "pooled":
        return dt[valid]
    counts = valid.sum(axis=1)  # (Q,)
    rows = counts > 0
    # (Q,) mean of each row's valid entries, rows without any left out
    return np.where(valid, dt, 0.0).sum(axis=1)[rows] / counts[rows]


def mean_and_std(values: np.ndarray) -> tuple[float, float]:
    """Mean and population std of 1-D `values`: (0, 1) when empty, std 1 when it is 0."""
    if values.size == 0:
        return 0.0, 1.0
    std = float(values.std())
    return float(values.mean()), std if std > 0 else 1.0


@register("linear")
class LinearEncoder(nn.Module):
    """Phi(dt) = w z + b with z = (dt - mu)/sigma (linear_time, Eq. 1).

    `affine=False` is the authors' DyGFormer variant (dg-linear-time `NoTimeEncoder`, used by
    DyGFormer, DyGFormer-separate and DyGDecoder with d_T = 1): Phi(dt) = z, no weight of its own,
    the channel projection that follows being the only affine map. It needs dim = 1 and has no
    parameters (2 fewer than the paper's form, which composes two affine maps).
    """

    def __init__(self, dim: int, *, mean: float = 0.0, std: float = 1.0, affine: bool = True):
        super().__init__()
        if not affine and dim != 1:
            raise ValueError(f"linear encoder without affine map needs dim = 1, got {dim}")
        self.dim = dim
        self.affine = affine
        self.standardize = _Standardize(mean, std)
        self.proj = nn.Linear(1, dim) if affine else None

    def forward(self, dt: torch.Tensor) -> torch.Tensor:
        z = self.standardize(dt).unsqueeze(-1)  # (..., 1)
        return self.proj(z) if self.affine else z


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

    Options (linear_time's formula vs the authors' code, `SineCosineTimeEncoder`):
    `scale=True` multiplies by sqrt(1/k) (the paper; the code has no factor); `phase=True` adds a
    learnable phase b_i, initialised at 0 and shared by the cosine and sine of frequency i,
    [cos(w_i t + b_i), sin(w_i t + b_i)] (the code's `nn.Linear(1, k)` bias; the paper has none).
    The code's variant is `scale=False, phase=True`.
    """

    def __init__(self, dim: int, *, mean: float = 0.0, std: float = 1.0, learnable: bool = True,
                 scale: bool = True, phase: bool = False):
        super().__init__()
        if dim % 2:
            raise ValueError(f"sine_cosine needs an even dimension, got {dim}")
        self.dim = dim
        self.k = dim // 2
        self.scale = scale
        self.w = nn.Parameter(dyglib_frequencies(self.k), requires_grad=learnable)
        self.phi = nn.Parameter(torch.zeros(self.k), requires_grad=learnable) if phase else None

    def forward(self, dt: torch.Tensor) -> torch.Tensor:
        angle = dt.unsqueeze(-1) * self.w  # (..., k)
        if self.phi is not None:
            angle = angle + self.phi
        out = torch.cat([torch.cos(angle), torch.sin(angle)], dim=-1)  # (..., 2k)
        return math.sqrt(1.0 / self.k) * out if self.scale else out


@register("time2vec")
class Time2Vec(nn.Module):
    """t2v(tau)[0] = w_0 tau + phi_0; t2v(tau)[i] = F(w_i tau + phi_i), i = 1..k (Time2Vec, Eq. 1).

    Variants of the paper's ablations (Figure 5; choices where the paper is silent: docs/time2vec.md):
    `activation` F (5a): sin (the paper's), cos, mod, triangle (periodic, period 2 pi, range [-1, 1] like
    sine), sigmoid, tanh, relu (non-periodic), identity; `frequencies` (5b): learned, equally_spaced
    (w_n = 2 pi n / k, phi_n = 0, fixed) or positional (Vaswani et al.: w_j = 10000^(-2 floor(j/2) / k),
    phi_j = 0 for even j and pi/2 for odd j, so sin/cos pairs, fixed); `linear_term=False` (5d) drops
    t2v[0], so all `dim` outputs are periodic. `fixed_frequencies` freezes learned ones at their initial values.
    Initial values of learned parameters (`init`): uniform, U(-1, 1), what torch's nn.Linear(1, dim) starts from
    (bound 1/sqrt(fan_in) = 1), so every |w| lies in (0, 1) as the paper's learned frequencies do (Figure 5c;
    its code is not public: docs/time2vec.md); normal, N(0, 1) (torch.randn: the common reimplementations).
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
    INITS: dict[str, Callable[[int], torch.Tensor]] = {
        "uniform": lambda n: torch.empty(n).uniform_(-1.0, 1.0),
        "normal": lambda n: torch.randn(n),
    }

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
        init: str = "uniform",
    ):
        super().__init__()
        k = dim - 1 if linear_term else dim
        if k < 1:
            raise ValueError(f"time2vec needs at least one periodic term: dim {dim} with linear_term={linear_term}")
        if activation not in self.ACTIVATIONS:
            raise ValueError(f"unknown Time2Vec activation {activation!r}; known: {sorted(self.ACTIVATIONS)}")
        if frequencies not in self.FREQUENCIES:
            raise ValueError(f"unknown Time2Vec frequencies {frequencies!r}; known: {list(self.FREQUENCIES)}")
        if init not in self.INITS:
            raise ValueError(f"unknown Time2Vec init {init!r}; known: {sorted(self.INITS)}")
        self.dim, self.k = dim, k
        self.activation, self.frequencies, self.linear_term = activation, frequencies, linear_term
        draw = self.INITS[init]
        if linear_term:
            self.w0 = nn.Parameter(draw(1))
            self.phi0 = nn.Parameter(draw(1))
        if frequencies == "learned":
            self.w = nn.Parameter(draw(k), requires_grad=not fixed_frequencies)
            self.phi = nn.Parameter(draw(k))
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
    """DyG-Mamba's time-span control signal as the project read Eq. 5 (the option `span_encoder: fixed`; the
    authors' code is `TrainableTimeSpanControl`): s = SiLU(Linear(cos(omega r))) of the normalised spans r
    (`time_spans`), omega fixed as GraphMixer's. (B, L) spans -> (B, L, out_dim); Delta = softplus(W s + b)
    is then taken per channel inside each block (Algorithm 1)."""

    def __init__(self, enc_dim: int, out_dim: int, alpha: float = 10.0, beta: float | None = None):
        super().__init__()
        self.encode = FixedCosineEncoder(enc_dim, alpha=alpha, beta=beta)
        self.proj = nn.Linear(enc_dim, out_dim)

    def forward(self, spans: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        return nn.functional.silu(self.proj(self.encode(spans)))


def dygmamba_span_ratios(times: np.ndarray, valid: np.ndarray, query_times: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """DyG-Mamba's time spans as the authors' code computes them (Clearloveyuan/DyG-Mamba `models/DyGMamba.py`
    get_dt_features, lines 356-365), in float64, for rows in the node-first layout: column 0 the node itself at
    tau, columns 1..n its n kept interactions oldest first, zeros after. With t_seq = tau - t_1 + eps (t_1 = 0
    without a history) and n_pos = n + 1:

        r_0 = min(1, max_b t_seq) / t_seq + 1 / n_pos      (the node: a unit span)
        r_1 = 1 / n_pos                                     (t_1 - tau < 0 is clipped to 0)
        r_k = (t_k - t_(k-1)) / t_seq + 1 / n_pos           (k >= 2; spans clipped to [0, max_b t_seq])

    `valid` (B, W) marks the node and its history; padding gets 0 (the authors zero its features after encoding).
    `n_pos` is the authors' index of the last non-zero time + 1 (n + 1 when t_1 > 0)."""
    times = np.asarray(times, dtype=np.float64)
    valid = np.asarray(valid, dtype=bool)
    if times.shape[1] < 2:
        raise ValueError("the node-first layout has at least two columns (the node and one padding column)")
    # (B,) as the code: position 0 the current time, position 1 the oldest kept time (0 without a history)
    t_seq = times[:, 0] - times[:, 1] + eps
    # the index of the last non-zero time + 1 (argmax of the reversed non-zero mask)
    n_pos = times.shape[1] - np.argmax(times[:, ::-1] != 0, axis=1)
    # (B, W): a span of 1 before position 0, then the differences to the previous column
    diff = np.concatenate([np.ones((times.shape[0], 1)), np.diff(times, axis=1)], axis=1)
    r = np.clip(diff, 0, t_seq.max()) / t_seq[:, None] + 1.0 / n_pos[:, None]
    return np.where(valid, r, 0.0)


class TrainableTimeSpanControl(nn.Module):
    """DyG-Mamba's time-span signal as the authors' code has it: s = Linear(cos(w r + b)) with w, b trained, w
    initialised at 1/10^linspace(0, 0.9, d) (`TimeEncoder(beta=0.9)`, DyGMamba.py:62, modules.py:7-22), cos
    zeroed at padding before the projection (DyGMamba.py:371), no activation (`projection_dt`, DyGMamba.py:63,
    177). (B, L) spans r (`dygmamba_span_ratios`), (B, L) valid -> (B, L, out_dim)."""

    def __init__(self, enc_dim: int, out_dim: int, beta: float = 0.9):
        super().__init__()
        self.encode = CosineEncoder(enc_dim)
        with torch.no_grad():
            self.encode.w.copy_(torch.from_numpy(1 / 10 ** np.linspace(0, beta, enc_dim, dtype=np.float32)))
        self.proj = nn.Linear(enc_dim, out_dim)

    def forward(self, spans: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        enc = self.encode(spans)  # (B, L, enc_dim)
        if valid is not None:
            enc = enc * valid.unsqueeze(-1)
        return self.proj(enc)
