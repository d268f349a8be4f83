"""Noisy neighbours (dyg_mamba Figures 8, 9; A16, M08): the authors' replacement over the whole history (count kept,
int(ratio n) entries replaced, times over the whole dataset, the window cut after) and the project's former
insertion (count, chronological placement, the window cut, nothing at or after the query time), and the layouts
each model reads."""

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


@pytest.mark.parametrize("mode", ["replace", "insert"])
def test_zero_ratio_changes_nothing(mode):
    g = graph()
    noisy = NoisyNeighbors(g, 0.0, mode=mode)
    nodes, times = np.arange(1, 11), np.full(10, 60.0)
    for a, b in zip(g.most_recent(nodes, times, 8), noisy.most_recent(nodes, times, 8)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(g.history(nodes, times, 30), noisy.history(nodes, times, 30)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("ratio", [0.1, 0.5, 1.0])
def test_inserted_noise_is_in_the_past_sorted_and_cut_back_to_the_window(ratio):
    g = graph()
    noisy = NoisyNeighbors(g, ratio, seed=1, mode="insert")
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
    noisy = NoisyNeighbors(g, 0.5, seed=2, mode="insert")
    nodes, times = np.arange(1, 21), np.full(20, 80.0)
    hist = noisy.history(nodes, times, 10)
    assert hist.neighbor_ids.shape[1] <= 10
    for row in range(len(nodes)):
        n = hist.lengths[row]
        assert (hist.neighbor_ids[row, :n] != 0).all() and (hist.neighbor_ids[row, n:] == 0).all()
        assert (np.diff(hist.times[row, :n]) >= 0).all() and (hist.times[row, :n] < 80.0).all()


@pytest.mark.parametrize("ratio", [0.3, 0.5, 1.0])
def test_replacement_is_the_authors_over_the_whole_history_before_the_window(ratio):
    """utils.py:155-171: n kept, int(ratio * n) entries replaced by integer times in [1, T) (the graph's times here
    are not integers, so a replaced entry is recognisable), sorted by time; the window is the most recent k of that."""
    g = graph()
    nodes, times = np.arange(1, 21), np.linspace(20, 100, 20)
    n = g.count_before(nodes, times)
    full = NoisyNeighbors(g, ratio, seed=3).history(nodes, times)
    np.testing.assert_array_equal(full.lengths, n)
    np.testing.assert_array_equal(NoisyNeighbors(g, ratio).count_before(nodes, times), n)
    for row in range(len(nodes)):
        t = full.times[row, : n[row]]
        assert (np.diff(t) >= 0).all()
        noise = t == np.round(t)
        assert noise.sum() == int(ratio * n[row])
        assert ((t[noise] >= 1) & (t[noise] < g.times.max())).all()
    # the window of most_recent is the last k of the same perturbed history (same seed, same draws)
    k = 6
    hood = NoisyNeighbors(g, ratio, seed=3).most_recent(nodes, times, k)
    for row in range(len(nodes)):
        kept = min(n[row], k)
        np.testing.assert_array_equal(hood.times[row, k - kept:], full.times[row, n[row] - kept: n[row]])
        assert (hood.neighbor_ids[row, : k - kept] == 0).all()
    hist = NoisyNeighbors(g, ratio, seed=3).history(nodes, times, 7)
    for row in range(len(nodes)):
        kept = min(n[row], 7)
        np.testing.assert_array_equal(hist.times[row, :kept], full.times[row, n[row] - kept: n[row]])


def test_unknown_noise_mode_is_refused():
    with pytest.raises(ValueError, match="noise mode"):
        NoisyNeighbors(graph(), 0.1, mode="shuffle")
