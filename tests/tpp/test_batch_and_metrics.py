"""EasyTPP's padding conventions and the metrics against hand-computed values."""

import numpy as np
import pytest
import torch

from timerepro.tpp import METRICS, Predictions, collate, compute
from timerepro.tpp.batch import make_attention_mask


def test_attention_mask_matches_easytpp_docstring_example():
    """The example of EasyTPP's make_attn_mask_for_pad_sequence (pad id 12)."""
    seqs = np.array([[1, 6, 0, 7, 12, 12], [1, 0, 5, 1, 10, 9]])
    m = make_attention_mask(seqs, 12)
    T, F_ = True, False
    expected0 = [[F_, T, T, T, T, T], [F_, F_, T, T, T, T], [F_, F_, F_, T, T, T], [F_, F_, F_, F_, T, T],
                 [F_, F_, F_, F_, T, T], [F_, F_, F_, F_, T, T]]
    assert m[0].tolist() == expected0
    assert m[1].tolist() == np.triu(np.ones((6, 6), bool), 1).tolist()


def test_collate_pads_with_pad_token_id():
    seqs = [{"time_since_start": [0.0, 1.0, 3.0], "time_since_last_event": [0.0, 1.0, 2.0], "type_event": [2, 0, 1]},
            {"time_since_start": [0.0, 0.5], "time_since_last_event": [0.0, 0.5], "type_event": [1, 1]}]
    b = collate(seqs, pad_token_id=3)
    assert b.type_seqs.tolist() == [[2, 0, 1], [1, 1, 3]]
    assert b.time_seqs.tolist() == [[0.0, 1.0, 3.0], [0.0, 0.5, 3.0]]
    assert b.time_delta_seqs.tolist() == [[0.0, 1.0, 2.0], [0.0, 0.5, 3.0]]
    assert b.seq_non_pad_mask.tolist() == [[True, True, True], [True, True, False]]
    assert b.attention_mask.dtype == torch.bool and b.attention_mask.shape == (2, 3, 3)
    assert b.attention_mask[1].tolist() == [[False, True, True], [False, False, True], [False, False, True]]


def _padded_predictions():
    # two sequences; predictions after each event but the last, second sequence padded (mask False)
    pred_dt = np.array([[1.0, 2.0, 0.5], [3.0, 99.0, -50.0]])
    label_dt = np.array([[2.0, 2.0, 1.5], [1.0, 4.0, 4.0]])  # padded labels hold the pad id, as in EasyTPP
    pred_ty = np.array([[0, 1, 2], [2, 0, 0]])
    label_ty = np.array([[0, 2, 2], [1, 4, 4]])
    mask = np.array([[True, True, True], [True, False, False]])
    return Predictions(pred_dt, pred_ty, label_dt, label_ty, mask, loglike_sum=-6.0, n_events=4)


def test_metrics_by_hand_with_padding():
    p = _padded_predictions()
    # squared errors on the 4 real entries: 1, 0, 1, 4 -> sqrt(6 / 4)
    assert METRICS["rmse"].fn(p) == pytest.approx(np.sqrt(6 / 4))
    # types: hit, miss, hit, miss -> 2 / 4
    assert METRICS["acc"].fn(p) == pytest.approx(0.5)
    assert METRICS["error_rate"].fn(p) == pytest.approx(0.5)
    assert METRICS["loglike_per_event"].fn(p) == pytest.approx(-1.5)
    assert compute(p, ["rmse", "error_rate"]) == {"rmse": pytest.approx(np.sqrt(1.5)), "error_rate": 0.5}


def test_metric_directions_and_unknown_names():
    assert {n: m.direction for n, m in METRICS.items()} == {
        "rmse": "min", "acc": "max", "error_rate": "min", "loglike_per_event": "max"}
    assert METRICS["rmse"].better(0.3, 0.4) and METRICS["acc"].better(0.6, 0.5)
    with pytest.raises(KeyError):
        compute(_padded_predictions(), ["mae"])
