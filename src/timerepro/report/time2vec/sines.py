"""The sine algebra of the synthetic task (Figures 3, 4): a run's sines brought to a canonical form a sin(w tau +
phi), with w folded into [0, pi / scale] (integer inputs times `scale` make w and w + 2 pi / scale aliases) and
a > 0, its main sine, and circular statistics of phases."""

from __future__ import annotations

import math

import numpy as np


SYNTHETIC_GROUPS = {1.0: "synthetic (day mod 7)", 2.0: "synthetic, inputs x2"}  # published row groups
FUNDAMENTAL_TOL = 0.02  # a run's main sine "is" the fundamental 2 pi / (7 scale) when within this (c06's +/- 0.02)


def canonical_sines(frequency, phase, weight, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(w, phi, a) of a sin(w tau + phi) rewritten with w in [0, pi / scale] and a >= 0 (same values on tau in scale Z)."""
    period = 2 * math.pi / scale
    w = np.mod(np.asarray(frequency, float) + period / 2, period) - period / 2  # alias into [-P/2, P/2)
    phi, a = np.asarray(phase, float).copy(), np.asarray(weight, float).copy()
    neg = w < 0  # a sin(-|w| tau + phi) = (-a) sin(|w| tau - phi)
    w, phi, a = np.abs(w), np.where(neg, -phi, phi), np.where(neg, -a, a)
    phi = np.where(a < 0, phi + math.pi, phi)  # -|a| sin(x) = |a| sin(x + pi)
    return w, np.mod(phi, 2 * math.pi), np.abs(a)


def synthetic_of(record: dict) -> dict:
    art = record.get("time2vec_synthetic") or {}
    return art


def main_sine(record: dict) -> dict:
    """The run's main sine in canonical form, the second one's frequency, and its accuracies."""
    scale = float(record["config"]["input_scale"])
    learned = synthetic_of(record)["learned"]
    w, phi, a = canonical_sines(learned["frequency"], learned["phase"], learned["weight"], scale)
    order = np.argsort(-a, kind="stable")
    return {"frequency": float(w[order[0]]), "phase": float(phi[order[0]]), "second": float(w[order[1]]),
            "fundamental": 2 * math.pi / (7 * scale), "test_accuracy": record["metrics"]["test_accuracy"]}


def circular_stat(angles) -> tuple[float, float]:
    """Circular mean in [0, 2 pi) and circular standard deviation sqrt(-2 ln R) of angles (radians)."""
    z = np.exp(1j * np.asarray(angles, float)).mean()
    return float(np.mod(np.angle(z), 2 * math.pi)), float(math.sqrt(max(0.0, -2 * math.log(max(abs(z), 1e-12)))))


def mode_bin(values: list[float], width: float = 0.02) -> float:
    """Centre of the most populated bin of `width` (ties: the lowest bin)."""
    bins = np.floor(np.asarray(values) / width).astype(int)
    uniq, counts = np.unique(bins, return_counts=True)
    return float((uniq[np.argmax(counts)] + 0.5) * width)
