"""Link-prediction metrics and DyGLib's evaluation figure.

`average_precision` and `roc_auc` are numpy implementations of scikit-learn's
`average_precision_score` (step-wise sum over distinct thresholds, ties grouped) and `roc_auc_score`
(trapezoid under the ROC curve, ties grouped); the tests check them against scikit-learn.

DyGLib (`evaluate_models_utils.py`) scores each evaluation batch of 200 positive edges together
with its 200 negatives, computes AP and AUC per batch, and reports the mean over batches (the last,
shorter batch counts as much as the others). `batched_metrics` returns that figure and, beside it,
the same metric over the whole split (`<name>_whole`), which is what a reader might expect AP to mean.

Metrics are registered by name with their direction, in EasyTPP's style (`MetricsHelper`):
`METRICS[name] = Metric(function, direction)`, direction "maximize" or "minimize".
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

MAXIMIZE = "maximize"
MINIMIZE = "minimize"
DYGLIB_EVAL_BATCH = 200


class Metric(NamedTuple):
    fn: Callable[[np.ndarray, np.ndarray], float]  # (labels, scores) -> value
    direction: str


def _curve(labels, scores) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative true and false positives at each distinct score, from the highest down."""
    y = np.asarray(labels)
    s = np.asarray(scores, dtype=np.float64)
    if y.ndim != 1 or y.shape != s.shape:
        raise ValueError(f"labels and scores must be 1-D of equal length, got {y.shape} and {s.shape}")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("labels must be 0 or 1")
    if np.isnan(s).any():
        raise ValueError("scores must not be NaN")
    y = y.astype(bool)
    if y.all() or not y.any():
        raise ValueError("labels must contain both classes")
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    # last position of every group of equal scores
    ends = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]
    tps = np.cumsum(y)[ends].astype(np.float64)
    fps = (ends + 1) - tps
    return tps, fps


def average_precision(labels, scores) -> float:
    """sum_k (R_k - R_{k-1}) P_k over the distinct thresholds, as scikit-learn."""
    tps, fps = _curve(labels, scores)
    precision = tps / (tps + fps)
    recall = tps / tps[-1]
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def roc_auc(labels, scores) -> float:
    """Area under the ROC curve by the trapezoid rule (ties count one half), as scikit-learn."""
    tps, fps = _curve(labels, scores)
    tpr = np.r_[0.0, tps / tps[-1]]
    fpr = np.r_[0.0, fps / fps[-1]]
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))


METRICS: dict[str, Metric] = {
    "average_precision": Metric(average_precision, MAXIMIZE),
    "roc_auc": Metric(roc_auc, MAXIMIZE),
}


def direction(name: str) -> str:
    if name not in METRICS:
        raise KeyError(f"unknown metric {name!r}; known: {sorted(METRICS)}")
    return METRICS[name].direction


def is_better(name: str, candidate: float, incumbent: float | None) -> bool:
    """Whether `candidate` beats `incumbent` for metric `name` (any value beats None)."""
    if incumbent is None:
        return True
    return candidate > incumbent if direction(name) == MAXIMIZE else candidate < incumbent


def link_metrics(pos_scores, neg_scores, names=tuple(METRICS)) -> dict[str, float]:
    """Metrics of positives (label 1) against negatives (label 0), all scores pooled."""
    pos = np.asarray(pos_scores, dtype=np.float64).ravel()
    neg = np.asarray(neg_scores, dtype=np.float64).ravel()
    labels = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    scores = np.r_[pos, neg]
    return {name: METRICS[name].fn(labels, scores) for name in names}


def batched_metrics(pos_scores, neg_scores, batch_size: int = DYGLIB_EVAL_BATCH,
                    names=tuple(METRICS)) -> dict[str, float]:
    """DyGLib's figure: metrics per batch of `batch_size` positives with their negatives, averaged over
    batches; `<name>_whole` beside each is the same metric over the whole split; `n_batches`.

    pos_scores and neg_scores are in evaluation order, one negative per positive (DyGLib's protocol).
    """
    pos = np.asarray(pos_scores, dtype=np.float64).ravel()
    neg = np.asarray(neg_scores, dtype=np.float64).ravel()
    if len(pos) != len(neg):
        raise ValueError(f"one negative per positive expected, got {len(pos)} positives and {len(neg)} negatives")
    if len(pos) == 0:
        raise ValueError("no scores")
    if batch_size <= 0:
        raise ValueError("batch_size must be positive")
    per_batch = [link_metrics(pos[i:i + batch_size], neg[i:i + batch_size], names)
                 for i in range(0, len(pos), batch_size)]
    out: dict[str, float] = {name: float(np.mean([m[name] for m in per_batch])) for name in names}
    whole = link_metrics(pos, neg, names)
    out.update({f"{name}_whole": value for name, value in whole.items()})
    out["n_batches"] = len(per_batch)
    return out
