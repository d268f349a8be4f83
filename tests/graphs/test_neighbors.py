"""Temporal neighbour retrieval against a brute-force reference written from DyGLib's documented rules:
every edge is stored for both endpoints, a node's list is in edge order (time order), a query at t sees
only interactions strictly before t; 'recent' keeps the last k, left-padded; 'uniform' draws with
replacement (`RandomState.choice(n, k)` per query with history) and sorts by time; DyGFormer's history
keeps the most recent ones, right-padded."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timerepro.data.ctdg import CTDGData
from timerepro.graphs.neighbors import TemporalNeighbors


def reference_lists(src, dst, ts, eids, node, t):
    """(neighbour, edge id, time) of `node` strictly before t, in DyGLib's list order."""
    out = []
    for s, d, tt, e in zip(src, dst, ts, eids):
        if s == node:
            out.append((d, e, tt))
        if d == node:
            out.append((s, e, tt))
    out.sort(key=lambda x: x[2])  # stable: edge order within equal times
    return [x for x in out if x[2] < t]


@st.composite
def graphs_and_queries(draw):
    n_nodes = draw(st.integers(1, 6))
    n_edges = draw(st.integers(0, 25))
    node = st.integers(1, n_nodes)
    src = draw(st.lists(node, min_size=n_edges, max_size=n_edges))
    dst = draw(st.lists(node, min_size=n_edges, max_size=n_edges))  # self-loops allowed
    # few distinct times: many ties, queries landing exactly on interaction times
    ts = sorted(draw(st.lists(st.integers(0, 8), min_size=n_edges, max_size=n_edges)))
    ts = [float(t) for t in ts]
    n_q = draw(st.integers(1, 12))
    q_nodes = draw(st.lists(st.integers(0, n_nodes), min_size=n_q, max_size=n_q))
    q_times = draw(st.lists(st.sampled_from([x / 2 for x in range(-2, 20)]), min_size=n_q, max_size=n_q))
    k = draw(st.integers(1, 5))
    return n_nodes, src, dst, ts, q_nodes, q_times, k


def build(n_nodes, src, dst, ts):
    eids = list(range(1, len(src) + 1))
    return TemporalNeighbors(src, dst, ts, eids, num_nodes=n_nodes + 1), eids


@settings(max_examples=200, deadline=None)
@given(graphs_and_queries())
def test_most_recent_and_history_equal_brute_force_and_never_see_the_future(case):
    n_nodes, src, dst, ts, q_nodes, q_times, k = case
    g, eids = build(n_nodes, src, dst, ts)
    nb = g.most_recent(q_nodes, q_times, k)
    hist = g.history(q_nodes, q_times, max_len=k)
    full = g.history(q_nodes, q_times)
    assert nb.neighbor_ids.shape == nb.edge_ids.shape == nb.times.shape == (len(q_nodes), k)
    for row, (n, t) in enumerate(zip(q_nodes, q_times)):
        ref = reference_lists(src, dst, ts, eids, n, t)
        last = ref[-k:]
        pad = k - len(last)
        # most recent: the k latest strictly earlier interactions, oldest first, zeros on the left
        assert nb.neighbor_ids[row].tolist() == [0] * pad + [x[0] for x in last]
        assert nb.edge_ids[row].tolist() == [0] * pad + [x[1] for x in last]
        assert nb.times[row].tolist() == [0.0] * pad + [x[2] for x in last]
        # no leak: every real entry is strictly before the query time
        assert (nb.times[row][nb.edge_ids[row] > 0] < t).all()
        assert (full.times[row][: full.lengths[row]] < t).all()
        # history: the same most recent ones, zeros on the right
        assert hist.lengths[row] == len(last)
        assert hist.edge_ids[row, : len(last)].tolist() == [x[1] for x in last]
        assert (hist.edge_ids[row, len(last):] == 0).all()
        # full history: everything before t
        assert full.edge_ids[row, : full.lengths[row]].tolist() == [x[1] for x in ref]
        assert g.count_before([n], [t])[0] == len(ref)
    assert full.neighbor_ids.shape[1] == (max(full.lengths) if len(full.lengths) else 0)


@settings(max_examples=150, deadline=None)
@given(graphs_and_queries(), st.integers(0, 2**31 - 1))
def test_uniform_draws_dyglibs_numbers_and_only_past_interactions(case, seed):
    n_nodes, src, dst, ts, q_nodes, q_times, k = case
    g, eids = build(n_nodes, src, dst, ts)
    nb = g.uniform(q_nodes, q_times, k, np.random.RandomState(seed))
    # DyGLib: for each query in order, if it has history, random_state.choice(len(history), k)
    rs = np.random.RandomState(seed)
    for row, (n, t) in enumerate(zip(q_nodes, q_times)):
        ref = reference_lists(src, dst, ts, eids, n, t)
        if not ref:
            assert (nb.neighbor_ids[row] == 0).all() and (nb.edge_ids[row] == 0).all() and (nb.times[row] == 0).all()
            continue
        picked = sorted(rs.choice(len(ref), size=k))  # sorted positions = sorted by time
        assert nb.edge_ids[row].tolist() == [ref[i][1] for i in picked]
        assert nb.neighbor_ids[row].tolist() == [ref[i][0] for i in picked]
        assert nb.times[row].tolist() == [ref[i][2] for i in picked]
        assert (nb.times[row] < t).all()
        assert (np.diff(nb.times[row]) >= 0).all()


def test_uniform_with_a_generator_stays_in_the_past():
    rng = np.random.default_rng(0)
    n, e = 30, 400
    src, dst = rng.integers(1, n + 1, e), rng.integers(1, n + 1, e)
    ts = np.sort(rng.integers(0, 50, e)).astype(float)
    g = TemporalNeighbors(src, dst, ts, np.arange(1, e + 1))
    q_nodes, q_times = rng.integers(0, n + 1, 300), rng.uniform(-1, 51, 300)
    nb = g.uniform(q_nodes, q_times, 7, np.random.default_rng(1))
    real = nb.edge_ids > 0
    assert (nb.times[real] < np.broadcast_to(q_times[:, None], real.shape)[real]).all()
    # each sampled (neighbour, edge) is an interaction of the queried node
    for row in range(len(q_nodes)):
        for nbr, eid in zip(nb.neighbor_ids[row][real[row]], nb.edge_ids[row][real[row]]):
            assert {src[eid - 1], dst[eid - 1]} == {q_nodes[row], nbr}
    assert (real.any(axis=1) == (g.count_before(q_nodes, q_times) > 0)).all()


def test_most_recent_worked_example_left_padding():
    # node 1: (2, e1, t1), (3, e2, t2), (3, e4, t3), (2, e5, t5)
    g = TemporalNeighbors([1, 1, 2, 3, 1], [2, 3, 3, 1, 2], [1.0, 2.0, 2.0, 3.0, 5.0], [1, 2, 3, 4, 5])
    nb = g.most_recent([1, 1, 3, 0], [5.0, 5.5, 3.0, 9.0], 3)
    assert nb.edge_ids.tolist() == [[1, 2, 4], [2, 4, 5], [0, 2, 3], [0, 0, 0]]  # t=5 itself excluded
    assert nb.neighbor_ids.tolist() == [[2, 3, 3], [3, 3, 2], [0, 1, 2], [0, 0, 0]]
    assert nb.times.tolist() == [[1, 2, 3], [2, 3, 5], [0, 2, 2], [0, 0, 0]]


def test_time_dtype_float32_like_dyglib_and_errors():
    g = TemporalNeighbors([1], [2], [1_000_000_001.0], [1], time_dtype=np.float32)
    nb = g.most_recent([2], [2e9], 2)
    assert nb.times.dtype == np.float32 and nb.edge_ids.tolist() == [[0, 1]]
    with pytest.raises(IndexError):
        g.most_recent([3], [1.0], 1)
    with pytest.raises(ValueError):
        g.most_recent([1], [1.0], 0)
    with pytest.raises(ValueError):
        g.uniform([1, 2], [1.0], 2, np.random.RandomState(0))


def test_from_data_uses_mask_and_node_feature_rows():
    data = CTDGData(name="toy", src=np.array([1, 2, 1]), dst=np.array([2, 3, 3]), ts=np.array([1.0, 2.0, 3.0]),
                    edge_ids=np.array([1, 2, 3]), labels=np.zeros(3), edge_feat=np.zeros((4, 172)),
                    node_feat=np.zeros((6, 172)), manifest={})
    train = TemporalNeighbors.from_data(data, mask=np.array([True, True, False]))
    full = TemporalNeighbors.from_data(data)
    assert train.num_nodes == full.num_nodes == 6  # node 5 has features but no edge: still queryable
    assert train.most_recent([1, 5], [9.0, 9.0], 2).edge_ids.tolist() == [[0, 1], [0, 0]]
    assert full.most_recent([1, 5], [9.0, 9.0], 2).edge_ids.tolist() == [[1, 3], [0, 0]]


def test_multi_hop_queries_neighbours_at_their_interaction_times():
    g = TemporalNeighbors([1, 2, 1], [2, 3, 3], [1.0, 2.0, 3.0], [1, 2, 3])
    ids, eids, times = g.multi_hop([1], [4.0], k=2, num_hops=2)
    assert ids[0].tolist() == [[2, 3]] and eids[0].tolist() == [[1, 3]]
    # hop 2: node 2 before t=1 -> nothing; node 3 before t=3 -> (2, e2, t2)
    assert ids[1].shape == (1, 4)
    assert eids[1].tolist() == [[0, 0, 0, 2]] and times[1].tolist() == [[0, 0, 0, 2.0]]
