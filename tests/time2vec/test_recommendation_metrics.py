"""Recall@q and MRR@q exactly as time2vec / the TimeLSTM code define them, on hand-computed rankings with ties;
the candidate sampler; TimeLSTM's vocabulary and length cut."""

from __future__ import annotations

import numpy as np

from timerepro.data.time2vec import timelstm_vocab_and_length
from timerepro.tasks.next_item import ranks, recall_mrr, sample_candidates


def test_ranks_by_hand_with_ties_counted_against_the_target():
    scores = np.array([[0.9, 0.5, 0.5, 0.1, 0.7],
                       [0.2, 0.2, 0.2, 0.2, 0.2]])
    # row 0, target item 1 (0.5) among [1, 4, 2, 3]: 0.7 higher, item 2 ties -> rank 3 (tie goes first)
    # row 0, target item 0 (0.9) among [0, 1, 3]: nothing higher, no tie -> rank 1
    # row 1: all tied: the target is last among the 3 candidates -> rank 3
    cand = np.array([[[1, 4, 2]], [[2, 0, 4]]])
    np.testing.assert_array_equal(ranks(scores, cand), [[3], [3]])
    cand0 = np.array([[[0, 1, 3], [1, 4, 2]]])
    np.testing.assert_array_equal(ranks(scores[:1], cand0), [[1, 3]])


def test_recall_and_mrr_at_q_by_hand():
    rank = np.array([[1, 3], [12, 2]])
    rec, mrr = recall_mrr(rank, 10)
    assert rec == 3 / 4 and np.isclose(mrr, (1 + 1 / 3 + 0 + 1 / 2) / 4)
    rec3, mrr3 = recall_mrr(rank, 3)
    assert rec3 == 3 / 4 and np.isclose(mrr3, (1 + 1 / 3 + 1 / 2) / 4)
    assert recall_mrr(rank, 1) == (0.25, 0.25)
    rec_all, mrr_all = recall_mrr(rank, None)  # MRR without cut-off (SOF's "MRR")
    assert rec_all == 1.0 and np.isclose(mrr_all, (1 + 1 / 3 + 1 / 12 + 1 / 2) / 4)


def test_candidates_are_the_target_plus_distinct_others_and_fixed_by_seed():
    targets = np.array([0, 5, 9, 5])
    c = sample_candidates(targets, n_items=10, k=4, repeats=20, seed=7)
    assert c.shape == (4, 20, 4)
    np.testing.assert_array_equal(c[:, :, 0], np.repeat(targets[:, None], 20, 1))
    for n, y in enumerate(targets):
        for r in range(20):
            others = c[n, r, 1:]
            assert y not in others and len(set(others)) == 3 and others.min() >= 0 and others.max() < 10
    np.testing.assert_array_equal(c, sample_candidates(targets, 10, 4, 20, seed=7))  # every model: the same
    assert (c != sample_candidates(targets, 10, 4, 20, seed=8)).any()
    full = sample_candidates(np.array([0, 4, 2]), n_items=5, k=101, repeats=1, seed=0)  # k capped: a full ranking
    assert full.shape == (3, 1, 5) and all(sorted(row[0]) == [0, 1, 2, 3, 4] for row in full)
    # every other item is drawn about equally often (uniform k - 1 subset)
    counts = np.bincount(sample_candidates(np.zeros(2000, int), 10, 4, 1, 1)[:, 0, 1:].ravel(), minlength=10)
    assert counts[0] == 0 and counts[1:].min() > 0.8 * counts[1:].mean()


def test_timelstm_vocabulary_cut_moves_delta_times_forward_and_cuts_length():
    seqs = [{"seq_idx": 0, "type_event": [0, 7, 1, 2, 9], "delta_next": [10.0, 5.0, 2.0, 4.0, 3.0]},
            {"seq_idx": 1, "type_event": [1, 0], "delta_next": [6.0, 0.0]}]
    out = timelstm_vocab_and_length(seqs, vocab=5, max_len=2)
    # item 7 removed: its 5 s join item 1 (2 + 5 = 7); item 9 removed last: its 3 s carry into the next user
    assert out[0]["type_event"] == [0, 1] and np.allclose(np.diff(out[0]["time_since_start"]), [10.0])
    full = timelstm_vocab_and_length(seqs, vocab=5, max_len=None)
    assert full[0]["type_event"] == [0, 1, 2] and np.allclose(np.diff(full[0]["time_since_start"]), [10.0, 7.0])
    assert full[1]["type_event"] == [1, 0] and np.allclose(np.diff(full[1]["time_since_start"]), [9.0])
