"""The synthetic event-sequence classification task of linear_time (section 3.2, Eq. 2).

Each sequence has M events at times t_1 < ... < t_M with exponential inter-arrival times
(rate lambda, t_1 ~ Exp(lambda) from 0), marks x_m in {+1, -1} with probability 1/2, and a
target time t = t_M + Exp(lambda). The label is

    y = 1[ sum_m exp(-alpha (t - t_m)) x_m + eps > 0 ],   eps ~ N(0, noise_var).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EventSequences:
    """dt[i, m] = t - t_m (time before the target), x[i, m] the mark, y[i] the label."""

    dt: np.ndarray  # (N, M) float64
    x: np.ndarray  # (N, M) float64 in {+1, -1}
    y: np.ndarray  # (N,) int64 in {0, 1}
    times: np.ndarray  # (N, M) absolute event times t_m
    target_time: np.ndarray  # (N,)

    def __len__(self) -> int:
        return len(self.y)

    def subset(self, idx: np.ndarray) -> "EventSequences":
        return EventSequences(self.dt[idx], self.x[idx], self.y[idx], self.times[idx], self.target_time[idx])

    def sha256(self) -> str:
        """Identity of the generated data, recorded in a run's provenance."""
        h = hashlib.sha256()
        for arr in (self.dt, self.x, self.y):
            h.update(np.ascontiguousarray(arr).tobytes())
        return h.hexdigest()


def generate(
    n_sequences: int,
    *,
    n_events: int = 7,
    rate: float = 0.01,
    decay: float = 0.003,
    noise_var: float = 0.01,
    seed: int = 0,
) -> EventSequences:
    """Draw `n_sequences` sequences from Eq. 2 with a seeded generator."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate, size=(n_sequences, n_events))
    times = np.cumsum(gaps, axis=1)  # t_m, (N, M)
    target_time = times[:, -1] + rng.exponential(1.0 / rate, size=n_sequences)
    x = np.where(rng.random((n_sequences, n_events)) < 0.5, 1.0, -1.0)
    dt = target_time[:, None] - times  # (N, M), strictly positive
    signal = (np.exp(-decay * dt) * x).sum(axis=1)
    eps = rng.normal(0.0, np.sqrt(noise_var), size=n_sequences)
    y = (signal + eps > 0).astype(np.int64)
    return EventSequences(dt=dt, x=x, y=y, times=times, target_time=target_time)


def true_attention(dt: np.ndarray, decay: float) -> np.ndarray:
    """The labelling function's weights exp(-alpha (t - t_m)), normalized over m per sequence."""
    w = np.exp(-decay * dt)
    return w / w.sum(axis=-1, keepdims=True)


def split(n: int, fractions: tuple[float, float, float], seed: int) -> dict[str, np.ndarray]:
    """Random 70/15/15-style split by sequence; sizes floor(0.7 n), floor(0.15 n), the rest."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    n_train = int(fractions[0] * n)
    n_val = int(fractions[1] * n)
    return {"train": perm[:n_train], "val": perm[n_train : n_train + n_val], "test": perm[n_train + n_val :]}
