"""The time-difference statistics past `WHOLE_LIMIT` values: folded chunk by chunk, equal to the whole-array
figures to ~1e-15 relative, in memory bounded by the chunk (DyRep on LastFM at 512 held 1.8 M x 512 values
and their concatenation: 14.4 GB)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from timerepro.encoders import standardization_stats
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.time_stats import RunningMoments, time_difference_stats


def busy_graph(n_nodes: int = 40, n_edges: int = 4_000, seed: int = 0):
    """A graph whose nodes have hundreds of interactions, and its queries: both endpoints of every edge."""
    r = np.random.RandomState(seed)
    src, dst = r.randint(1, n_nodes + 1, n_edges), r.randint(1, n_nodes + 1, n_edges)
    ts = np.sort(r.exponential(1e4, n_edges).cumsum())  # spread over ~6e7 time units, like real timestamps
    graph = TemporalNeighbors(src, dst, ts, np.arange(1, n_edges + 1), num_nodes=n_nodes + 1)
    return graph, np.concatenate([src, dst]), np.concatenate([ts, ts])


@pytest.mark.parametrize("statistic", ["pooled", "per_query_mean"])
@pytest.mark.parametrize("uniform", [False, True])
def test_streamed_statistics_equal_the_whole_arrays(statistic, uniform):
    """Forced past the limit (0 values kept), chunks of every size give the whole (Q, k) arrays' mean and std
    to 1e-12 relative, the uniform draws unchanged; under the limit, to the last bit."""
    graph, nodes, times = busy_graph()
    rng = (lambda: np.random.RandomState(5)) if uniform else (lambda: None)
    k = 64
    hood = graph.uniform(nodes, times, k, rng()) if uniform else graph.most_recent(nodes, times, k)
    assert (hood.neighbor_ids == 0).all(axis=1).any() and (hood.neighbor_ids != 0).all(axis=1).any()
    whole = standardization_stats(times[:, None] - hood.times, hood.neighbor_ids != 0, statistic)
    for chunk in (7, 333, 100_000):
        streamed = time_difference_stats(graph, nodes, times, k, statistic, rng(), chunk=chunk, whole_limit=0)
        np.testing.assert_allclose(streamed, whole, rtol=1e-12, atol=0)
        assert time_difference_stats(graph, nodes, times, k, statistic, rng(), chunk=chunk) == whole


def test_streaming_keeps_memory_to_the_chunk():
    """Past the limit, what is held is one chunk's arrays, not the Q x k values (gathered whole, 12 MB here)."""
    graph, nodes, times = busy_graph(n_edges=12_000)
    k = 64
    values_mb = len(nodes) * k * 8 / 2**20
    time_difference_stats(graph, nodes[:10], times[:10], k, chunk=5)  # imports and caches outside the trace
    tracemalloc.start()
    try:
        streamed = time_difference_stats(graph, nodes, times, k, chunk=250, whole_limit=10_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak / 2**20 < 0.25 * values_mb, f"peaked at {peak / 2**20:.1f} MB for {values_mb:.1f} MB of values"
    np.testing.assert_allclose(streamed, time_difference_stats(graph, nodes, times, k), rtol=1e-12)


def test_running_moments_by_hand():
    """Blocks folded one at a time give numpy's mean and population std of their concatenation; none gives
    (0, 1) and equal values std 1, as `encoders.mean_and_std`."""
    acc = RunningMoments()
    assert acc.mean_and_std() == (0.0, 1.0)
    for block in ([1.0, 2.0], [], [3.0, 4.0, 10.0]):
        acc.add(np.array(block))
    assert acc.count == 5
    np.testing.assert_allclose(acc.mean_and_std(), (4.0, np.std([1, 2, 3, 4, 10.0])), rtol=1e-15)
    same = RunningMoments()
    same.add(np.full(3, 2.0))
    same.add(np.full(4, 2.0))
    assert same.mean_and_std() == (2.0, 1.0)
