"""Noisy neighbours (dyg_mamba Figures 8, 9; A16): the inserted count, chronological placement, the window cut,
nothing at or after the query time, and the layouts each model reads."""

from __future__ import annotations

import numpy as np
import pytest

from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.graphs.noise import NoisyNeighbors


def graph() -> TemporalNeighbors:
    rng = np.random.default_rng(0)
    n = 200
    src, dst = rng.integers(1, 21, n), rng.integers(1, 21, n)
    ts = np.sort(rng.uniform(0, 100, n))
    return TemporalNeighbors(src, dst, ts, np.arange(1, n + 1), num_nodes=21)


def test_zero_ratio_changes_nothing():
    g = graph()
    noisy = NoisyNeighbors(g, 0.0)
    nodes, times = np.arange(1, 11), np.full(10, 60.0)
    for a, b in zip(g.most_recent(nodes, times, 8), noisy.most_recent(nodes, times, 8)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(g.history(nodes, times, 30), noisy.history(nodes, times, 30)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("ratio", [0.1, 0.5, 1.0])
def test_inserted_noise_is_in_the_past_sorted_and_cut_back_to_the_window(ratio):
    g = graph()
    noisy = NoisyNeighbors(g, ratio, seed=1)
    nodes, times = np.arange(1, 21), np.linspace(5, 100, 20)
    n_real = g.count_before(nodes, times)
    k = 12
    hood = noisy.most_recent(nodes, times, k)
    valid = hood.neighbor_ids != 0
    assert (hood.times[valid] < times.repeat(k).reshape(-1, k)[valid]).all()  # strictly before the query
    for row in range(len(nodes)):
        t = hood.times[row][valid[row]]
        assert (np.diff(t) >= 0).all()  # chronological
        kept = min(n_real[row], k)
        expected = min(k, kept + int(np.rint(ratio * kept)))  # real window plus its noise, cut back to k
        assert valid[row].sum() == expected
    # every edge id (real or noise) is an edge strictly before the query time (edge e has time ts[e - 1] here)
    edge_time = np.sort(np.unique(np.c_[g.edge_ids, g.times], axis=0), axis=0)[:, 1]
    query = np.broadcast_to(times[:, None], hood.edge_ids.shape)[valid]
    assert (edge_time[hood.edge_ids[valid] - 1] < query).all()
    np.testing.assert_array_equal(noisy.count_before(nodes, times), n_real + np.rint(ratio * n_real).astype(int))


def test_history_keeps_the_right_padded_layout_and_the_max_length():
    g = graph()
    noisy = NoisyNeighbors(g, 0.5, seed=2)
    nodes, times = np.arange(1, 21), np.full(20, 80.0)
    hist = noisy.history(nodes, times, 10)
    assert hist.neighbor_ids.shape[1] <= 10
    for row in range(len(nodes)):
        n = hist.lengths[row]
        assert (hist.neighbor_ids[row, :n] != 0).all() and (hist.neighbor_ids[row, n:] == 0).all()
        assert (np.diff(hist.times[row, :n]) >= 0).all() and (hist.times[row, :n] < 80.0).all()
