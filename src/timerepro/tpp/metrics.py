"""TPP metrics registered by name with their direction, as EasyTPP's MetricsHelper does.

Every metric reads a `Predictions` record: arrays of any (equal) shape with a mask; only entries where the
mask is True count (EasyTPP masks with seq_non_pad_mask[:, 1:]). Averages are over all masked events of
the split, not per batch. `error_rate` is a fraction (the paper's tables print percent).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

DIRECTIONS = ("max", "min")  # the `mode` of timerepro.train.fit


@dataclass
class Predictions:
    pred_dtime: np.ndarray
    pred_type: np.ndarray
    label_dtime: np.ndarray
    label_type: np.ndarray
    mask: np.ndarray
    loglike_sum: float = float("nan")
    n_events: int = 0


@dataclass(frozen=True)
class Metric:
    name: str
    fn: Callable[[Predictions], float]
    direction: str

    def better(self, a: float, b: float) -> bool:
        """True when value a is strictly better than value b."""
        return a > b if self.direction == "max" else a < b


METRICS: dict[str, Metric] = {}


def register(name: str, direction: str):
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}")

    def deco(fn):
        if name in METRICS:
            raise KeyError(f"metric {name!r} registered twice")
        METRICS[name] = Metric(name, fn, direction)
        return fn

    return deco


def _masked(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return np.asarray(values)[np.asarray(mask, dtype=bool)]


@register("rmse", "min")
def rmse(p: Predictions) -> float:
    """Root mean squared error of the predicted time to the next event."""
    d = _masked(p.pred_dtime, p.mask).astype(np.float64) - _masked(p.label_dtime, p.mask)
    return float(np.sqrt(np.mean(d ** 2))) if d.size else float("nan")


@register("acc", "max")
def acc(p: Predictions) -> float:
    """Fraction of next-event types predicted correctly."""
    hit = _masked(p.pred_type, p.mask) == _masked(p.label_type, p.mask)
    return float(hit.mean()) if hit.size else float("nan")


@register("error_rate", "min")
def error_rate(p: Predictions) -> float:
    """1 - acc: the paper's type error rate, as a fraction."""
    return 1.0 - acc(p)


@register("loglike_per_event", "max")
def loglike_per_event(p: Predictions) -> float:
    """Log-likelihood per scored event (EasyTPP: -sum(loss) / sum(num_events))."""
    return float(p.loglike_sum / p.n_events) if p.n_events else float("nan")


def compute(predictions: Predictions, names=None) -> dict[str, float]:
    names = list(METRICS) if names is None else list(names)
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise KeyError(f"unknown metrics {unknown}; known: {sorted(METRICS)}")
    return {n: METRICS[n].fn(predictions) for n in names}
