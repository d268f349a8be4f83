"""Event classification's evaluation in bounded pieces (raw N-TIDIGITS18: ~14 k events per sequence)."""

from __future__ import annotations

import numpy as np
import torch

from timerepro.models.seq.time_lstm import LSTMTime
from timerepro.tasks import event_classification as ec


def _seqs(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [{"tau": np.sort(rng.random(n)).astype(np.float64), "types": rng.integers(0, 3, n)} for n in lengths]


def test_row_slices_bound_the_padded_steps_and_keep_the_batches():
    seqs = _seqs([5, 40, 3, 3, 10, 2, 2])
    assert ec.row_slices(seqs, 4, max_steps=10**6) == [slice(0, 4), slice(4, 7)]  # below the bound: the batches
    got = ec.row_slices(seqs, 4, max_steps=80)  # batch 1's longest is 40: 2 rows at a time; batch 2's is 10: 8
    assert got == [slice(0, 2), slice(2, 4), slice(4, 7)]
    assert ec.row_slices(seqs, 4, max_steps=1)[:2] == [slice(0, 1), slice(1, 2)]  # never fewer than one row
    covered = [i for s in ec.row_slices(seqs, 3, max_steps=30) for i in range(s.start, s.stop)]
    assert covered == list(range(len(seqs)))


def test_accuracy_in_pieces_is_the_accuracy_of_whole_batches(monkeypatch):
    torch.manual_seed(0)
    model = LSTMTime(3, 4, 5, "tau", {})
    seqs, labels = _seqs([30, 7, 12, 30, 1, 9, 25], seed=1), np.array([0, 1, 2, 3, 0, 1, 2])
    whole = ec.accuracy(model, seqs, labels, 4)
    monkeypatch.setattr(ec, "EVAL_STEPS", 31)  # one row at a time for every batch
    assert ec.row_slices(seqs, 4) == [slice(i, i + 1) for i in range(7)]
    with torch.no_grad():
        logits = model.out(ec.last_states(model, *ec.batch(seqs)))
    assert ec.accuracy(model, seqs, labels, 4) == whole == float((logits.argmax(-1).numpy() == labels).mean())
