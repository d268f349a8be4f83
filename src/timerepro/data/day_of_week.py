"""time2vec's synthetic task (section 5.2): days 1..n, class 1 on multiples of `period`, split in time.

The first `train_fraction` of the days train, the rest test (extrapolation in time). Variants: inputs
multiplied by `input_scale` (Figure 3b: x2, so the period in the input becomes 14) and a fraction of
labels flipped (`label_noise`, text only). Labels depend on the day, never on the scaled input.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DayOfWeek:
    """Inputs tau (the scaled day), labels y (0/1), and the index where the test part begins."""

    tau: np.ndarray
    y: np.ndarray
    n_train: int

    @property
    def train(self) -> tuple[np.ndarray, np.ndarray]:
        return self.tau[: self.n_train], self.y[: self.n_train]

    @property
    def test(self) -> tuple[np.ndarray, np.ndarray]:
        return self.tau[self.n_train:], self.y[self.n_train:]

    def sha256(self) -> str:
        return hashlib.sha256(self.tau.tobytes() + self.y.tobytes()).hexdigest()


def generate(n_days: int = 365, period: int = 7, train_fraction: float = 0.75, input_scale: float = 1.0,
             label_noise: float = 0.0, seed: int = 0) -> DayOfWeek:
    """Days 1..n_days; y = 1 iff day % period == 0; `label_noise` flips that fraction of labels (seeded)."""
    day = np.arange(1, n_days + 1)
    y = (day % period == 0).astype(np.float32)
    if label_noise > 0:
        rng = np.random.default_rng(seed)
        flip = rng.choice(n_days, size=int(round(label_noise * n_days)), replace=False)
        y[flip] = 1.0 - y[flip]
    n_train = int(np.floor(train_fraction * n_days))
    return DayOfWeek((day * input_scale).astype(np.float32), y, n_train)
