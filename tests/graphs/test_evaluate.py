"""AP and AUC equal scikit-learn's (which DyGLib calls), ties included; DyGLib's batch-averaged figure."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from timerepro.graphs.evaluate import (MAXIMIZE, METRICS, average_precision, batched_metrics, direction,
                                       is_better, link_metrics, roc_auc)


@pytest.mark.parametrize("seed", range(40))
def test_ap_and_auc_equal_sklearn_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 400))
    labels = rng.integers(0, 2, n)
    labels[0], labels[1] = 0, 1  # both classes
    # coarse scores: many ties, some across classes; a few seeds all-continuous
    decimals = [0, 1, 2, 8][seed % 4]
    scores = np.round(rng.uniform(0, 1, n) + 0.3 * labels, decimals)
    assert average_precision(labels, scores) == pytest.approx(average_precision_score(labels, scores), abs=1e-12)
    assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)


def test_all_scores_tied_and_perfect_ranking():
    labels = np.array([1, 0, 1, 0, 0])
    same = np.full(5, 0.5)
    assert average_precision(labels, same) == pytest.approx(average_precision_score(labels, same)) == 0.4
    assert roc_auc(labels, same) == roc_auc_score(labels, same) == 0.5
    perfect = np.array([0.9, 0.1, 0.8, 0.2, 0.3])
    assert average_precision(labels, perfect) == 1.0 and roc_auc(labels, perfect) == 1.0


def test_single_class_and_bad_labels_raise():
    with pytest.raises(ValueError):
        roc_auc([1, 1], [0.2, 0.3])
    with pytest.raises(ValueError):
        average_precision([0, 0], [0.2, 0.3])
    with pytest.raises(ValueError):
        roc_auc([0, 2], [0.2, 0.3])


def test_batched_metrics_are_the_mean_over_chunks_of_200_and_whole_split_beside():
    rng = np.random.default_rng(7)
    n = 1030  # 5 full batches and a short one of 30, which counts as much as the others
    pos = np.round(rng.uniform(0.2, 1.0, n), 2)
    neg = np.round(rng.uniform(0.0, 0.8, n), 2)
    out = batched_metrics(pos, neg)
    aps, aucs = [], []
    for i in range(0, n, 200):
        y = np.r_[np.ones(len(pos[i:i + 200])), np.zeros(len(neg[i:i + 200]))]
        s = np.r_[pos[i:i + 200], neg[i:i + 200]]
        aps.append(average_precision_score(y, s))
        aucs.append(roc_auc_score(y, s))
    assert out["n_batches"] == 6
    assert out["average_precision"] == pytest.approx(np.mean(aps), abs=1e-12)
    assert out["roc_auc"] == pytest.approx(np.mean(aucs), abs=1e-12)
    y_all, s_all = np.r_[np.ones(n), np.zeros(n)], np.r_[pos, neg]
    assert out["average_precision_whole"] == pytest.approx(average_precision_score(y_all, s_all), abs=1e-12)
    assert out["roc_auc_whole"] == pytest.approx(roc_auc_score(y_all, s_all), abs=1e-12)
    # the two figures differ in general: the batch mean is not the whole-split value
    assert out["average_precision"] != pytest.approx(out["average_precision_whole"], abs=1e-6)
    assert link_metrics(pos, neg)["roc_auc"] == out["roc_auc_whole"]


def test_batched_metrics_validation():
    with pytest.raises(ValueError):
        batched_metrics([0.1, 0.2], [0.3])
    with pytest.raises(ValueError):
        batched_metrics([], [])


def test_registry_carries_direction():
    assert set(METRICS) == {"average_precision", "roc_auc"}
    for name, metric in METRICS.items():
        assert direction(name) == metric.direction == MAXIMIZE
        assert callable(metric.fn)
    assert is_better("average_precision", 0.9, 0.8) and not is_better("roc_auc", 0.7, 0.8)
    assert is_better("roc_auc", 0.1, None)
    with pytest.raises(KeyError):
        direction("mrr_unknown")
