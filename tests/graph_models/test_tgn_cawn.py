"""TGN and CAWN: TGN's memory sees a batch only after the batch has been scored, is reset every epoch and
survives a kill; time-interval-aware sampling stays strictly in the past and prefers recent interactions;
CAWN's anonymisation counts on a worked example; both train end to end through the task on the smoke
stand-in of UCI (tiny widths so the file stays within seconds)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from timerepro import registry, runs
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.defaults import with_dataset_defaults
from timerepro.models.graph import tgn as tgn_module
from timerepro.models.graph.cawn import CAWN, walk_counts, walk_query_chunks, walk_time_stats, walks_as_array
from timerepro.models.graph.tgn import STATE, TGN
from timerepro.tasks import link_prediction

from .conftest import resolved

NODE_DIM, EDGE_DIM = 6, 5


def toy(seed: int = 0, n_nodes: int = 8, n_edges: int = 40):
    """Chronological random edges (ids from 1) and non-zero feature tables (row 0 = padding)."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(1, n_nodes + 1, n_edges), rng.integers(1, n_nodes + 1, n_edges)
    ts = np.sort(rng.integers(0, 30, n_edges)).astype(float)
    node = np.vstack([np.zeros((1, NODE_DIM)), rng.normal(size=(n_nodes, NODE_DIM))])
    edge = np.vstack([np.zeros((1, EDGE_DIM)), rng.normal(size=(n_edges, EDGE_DIM))])
    return src, dst, ts, np.arange(1, n_edges + 1), node, edge


def make_tgn(node, edge) -> TGN:
    torch.manual_seed(0)
    return TGN(node, edge, encoder="cosine", time_dim=4, num_layers=1, num_heads=2, num_neighbors=3, dropout=0.1).eval()


def state_of(model: TGN) -> dict:
    return {k: getattr(model, k).clone() for k in STATE}


# ------------------------------------------------------------------ TGN memory

def test_tgn_memory_changes_only_after_a_batch_with_the_node_was_observed():
    src, dst, ts, eids, node, edge = toy()
    model = make_tgn(node, edge)
    model.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=len(node)))
    b1 = np.array([0, 1])
    x = int(src[0])  # a node of batch 1
    before = state_of(model)
    with torch.no_grad():
        model.pair_embeddings(src[b1], dst[b1], ts[b1])  # scoring never touches the state
    assert all(torch.equal(before[k], getattr(model, k)) for k in STATE)
    model.observe(src[b1], dst[b1], ts[b1], eids[b1])
    # first sight: the new messages wait, the memory itself has not moved yet
    assert torch.equal(model.memory, before["memory"])
    assert set(torch.nonzero(model.has_pending).ravel().tolist()) == set(src[b1]) | set(dst[b1])
    # a batch without x: x's memory row and its pending message stay as they are
    others = [i for i in range(2, len(src)) if x not in (src[i], dst[i])][:3]
    x_row, x_msg = model.memory[x].clone(), model.pending_message[x].clone()
    model.observe(src[others], dst[others], ts[others], eids[others])
    assert torch.equal(model.memory[x], x_row) and torch.equal(model.pending_message[x], x_msg)
    # ... but what an embedding reads is the memory after the pending message: GRU(m_x, s_x)
    with torch.no_grad():
        read = model.current_memory([x])[0]
        expected = model.memory_updater(x_msg[None], x_row[None])[0]
    assert torch.allclose(read, expected) and not torch.allclose(read, x_row)
    # a batch with x commits exactly that value
    later = [i for i in range(max(others) + 1, len(src)) if x in (src[i], dst[i])][:1]
    assert later
    x_time = model.pending_time[x].item()
    model.observe(src[later], dst[later], ts[later], eids[later])
    assert torch.allclose(model.memory[x], expected, atol=1e-6)
    assert model.last_update[x].item() == x_time in ts[b1]  # the time of x's committed message (batch 1)


def test_tgn_prediction_never_uses_the_edges_of_its_own_batch():
    """Two streams equal up to batch b and different inside it (other destinations and edge features,
    all at one time): the memory and the graph before that time are the same, so the scores of batch
    b are identical; once batch b has been observed, later scores differ (its edges matter)."""
    src, dst, ts, eids, node, edge = toy(seed=3, n_edges=30)
    ts[20:] = 40.0  # batch b = edges 20..29, one time, after everything else
    later_t = np.full(10, 50.0)
    scores, after = [], []
    for variant in (0, 1):
        d, e = dst.copy(), edge.copy()
        if variant:
            d[20:] = (d[20:] % 8) + 1  # other destinations
            e[21:31] = -e[21:31]  # other edge features (edge ids 21..30 = batch b)
        model = make_tgn(node, e)
        model.set_graph(TemporalNeighbors(src, d, ts, eids, num_nodes=len(node)))
        for start in range(0, 20, 5):  # the shared history, in batches of 5
            b = np.arange(start, start + 5)
            model.observe(src[b], d[b], ts[b], eids[b])
        b = np.arange(20, 30)
        probe = np.resize(np.arange(1, 9), 10)  # fixed candidate destinations, the same in both streams
        with torch.no_grad():
            scores.append(torch.cat(model.pair_embeddings(src[b], probe, ts[b])))
            model.observe(src[b], d[b], ts[b], eids[b])
            after.append(torch.cat(model.pair_embeddings(src[b], probe, later_t)))
    assert torch.equal(scores[0], scores[1])
    assert not torch.allclose(after[0], after[1])


def test_tgn_reset_backup_restore_and_state_in_state_dict():
    src, dst, ts, eids, node, edge = toy()
    model = make_tgn(node, edge)
    for i in range(0, 20, 5):
        b = np.arange(i, i + 5)
        model.observe(src[b], dst[b], ts[b], eids[b])
    model.backup_state("train_end")
    snapshot = state_of(model)
    assert snapshot["memory"].abs().sum() > 0
    model.observe(src[20:25], dst[20:25], ts[20:25], eids[20:25])
    # the live state and the named copy travel in the state_dict (checkpoints, fit's best state)
    clone = make_tgn(node, edge)
    clone.load_state_dict(copy.deepcopy(model.state_dict()))
    assert all(torch.equal(getattr(clone, k), getattr(model, k)) for k in STATE)
    clone.restore_state("train_end")
    assert all(torch.equal(getattr(clone, k), snapshot[k]) for k in STATE)
    clone.reset_state()
    assert clone.memory.abs().sum() == 0 and not clone.has_pending.any() and clone.last_update.abs().sum() == 0


# ------------------------------------------------------------------ time-interval-aware sampling

@st.composite
def graphs_and_queries(draw):
    n_nodes = draw(st.integers(1, 5))
    n_edges = draw(st.integers(0, 20))
    node = st.integers(1, n_nodes)
    src = draw(st.lists(node, min_size=n_edges, max_size=n_edges))
    dst = draw(st.lists(node, min_size=n_edges, max_size=n_edges))
    ts = [float(t) for t in sorted(draw(st.lists(st.integers(0, 8), min_size=n_edges, max_size=n_edges)))]
    n_q = draw(st.integers(1, 10))
    q_nodes = draw(st.lists(st.integers(0, n_nodes), min_size=n_q, max_size=n_q))
    q_times = draw(st.lists(st.sampled_from([x / 2 for x in range(-2, 20)]), min_size=n_q, max_size=n_q))
    return n_nodes, src, dst, ts, q_nodes, q_times, draw(st.integers(1, 5)), draw(st.sampled_from([0.0, 0.3, 5.0, 1e4]))


@settings(max_examples=100, deadline=None)
@given(graphs_and_queries(), st.integers(0, 2**31 - 1))
def test_time_interval_aware_draws_only_earlier_interactions_of_the_node(case, seed):
    n_nodes, src, dst, ts, q_nodes, q_times, k, scale = case
    eids = list(range(1, len(src) + 1))
    g = TemporalNeighbors(src, dst, ts, eids, num_nodes=n_nodes + 1)
    nb = g.time_interval_aware(q_nodes, q_times, k, np.random.RandomState(seed), scale)
    before = g.count_before(q_nodes, q_times)
    for row, (n, t) in enumerate(zip(q_nodes, q_times)):
        real = nb.edge_ids[row] > 0
        if before[row] == 0:
            assert not real.any() and (nb.times[row] == 0).all()
            continue
        assert real.all()  # k draws with replacement
        assert (nb.times[row] < t).all()  # strictly before the query time
        assert (np.diff(nb.times[row]) >= 0).all()
        for nbr, eid, tt in zip(nb.neighbor_ids[row], nb.edge_ids[row], nb.times[row]):
            assert {src[eid - 1], dst[eid - 1]} == {n, nbr} and ts[eid - 1] == tt


def test_time_interval_aware_favours_recent_interactions_with_the_stated_probabilities():
    m, k, scale = 40, 20000, 0.15
    g = TemporalNeighbors(np.ones(m, dtype=int), np.arange(2, m + 2), np.arange(m, dtype=float), np.arange(1, m + 1))
    query_t = 45.0  # sees all 40 interactions, times 0..39
    nb = g.time_interval_aware([1], [query_t], k, np.random.RandomState(0), scale)
    freq = np.bincount(nb.times[0].astype(int), minlength=m) / k
    p = np.exp(scale * (np.arange(m) - query_t))
    p /= p.sum()
    assert np.abs(freq - p).max() < 0.01  # P(t_j) proportional to exp(scale (t_j - t))
    assert nb.times[0].mean() > 30 > np.arange(m).mean()  # recent ones dominate
    flat = g.time_interval_aware([1], [query_t], k, np.random.RandomState(0), 0.0)  # scale 0: uniform
    assert np.abs(np.bincount(flat.times[0].astype(int), minlength=m) / k - 1 / m).max() < 0.01
    # unix-epoch times with a steep scale: no overflow, essentially always the latest interaction
    h = TemporalNeighbors([1, 1, 1], [2, 3, 4], [1.7e9, 1.7e9 + 500, 1.7e9 + 1000], [1, 2, 3])
    steep = h.time_interval_aware([1, 1], [1.7e9 + 2000, 1.7e9 + 600], 50, np.random.RandomState(1), 1.0)
    assert steep.edge_ids[0].tolist() == [3] * 50 and steep.edge_ids[1].tolist() == [2] * 50
    hops = g.multi_hop([1], [query_t], 5, 1, strategy="time_interval_aware", rng=np.random.RandomState(0),
                       time_scaling_factor=scale)
    assert (hops[2][0] < query_t).all()


# ------------------------------------------------------------------ CAWN

def test_cawn_walk_counts_worked_example():
    # pair 0: u = 1 with hop-1 nodes [2, 3] and hop-2 nodes [1, 2, 4, 0]; v = 5: [2, 2], [3, 0, 6, 6]
    # pair 1: u = 2 with [1, 1], [0, 0, 0, 0]; v = 3 with [0, 0], [0, 0, 0, 0]
    src_levels = [np.array([[1], [2]]), np.array([[2, 3], [1, 1]]), np.array([[1, 2, 4, 0], [0, 0, 0, 0]])]
    dst_levels = [np.array([[5], [3]]), np.array([[2, 2], [0, 0]]), np.array([[3, 0, 6, 6], [0, 0, 0, 0]])]
    hops = ([src_levels[1], src_levels[2]], [np.ones((2, 2), int), np.ones((2, 4), int)],
            [np.zeros((2, 2)), np.zeros((2, 4))])
    s_ids, s_eids, _ = walks_as_array(np.array([1, 2]), np.array([9.0, 9.0]), hops, 2)
    assert s_ids[0].tolist() == [[1, 2, 1], [1, 2, 2], [1, 3, 4], [1, 3, 0]]
    assert (s_eids[:, :, 0] == 0).all()
    d_ids = walks_as_array(np.array([5, 3]), np.array([9.0, 9.0]),
                           ([dst_levels[1], dst_levels[2]], hops[1], hops[2]), 2)[0]
    s_counts, d_counts = walk_counts(src_levels, dst_levels, s_ids, d_ids)
    assert s_counts.shape == (2, 4, 3, 2, 3)
    # by hand: c(w) = [landing counts in u's walks per hop / k^h ; the same in v's walks]
    expected = {1: [[1, 0, .25], [0, 0, 0]], 2: [[0, .5, .25], [0, 1, 0]], 3: [[0, .5, 0], [0, 0, .25]],
                4: [[0, 0, .25], [0, 0, 0]], 0: [[0, 0, 0], [0, 0, 0]]}
    for m, walk in enumerate(s_ids[0]):
        for h, w in enumerate(walk):
            np.testing.assert_allclose(s_counts[0, m, h], expected[int(w)])
    np.testing.assert_allclose(d_counts[0, 2, 2], [[0, 0, 0], [0, 0, .5]])  # node 6 twice at hop 2 of v
    np.testing.assert_allclose(d_counts[0, 0, 0], [[0, 0, 0], [1, 0, 0]])  # v itself
    # pair 1 is counted on its own: node 2 is u there, whatever it was in pair 0
    np.testing.assert_allclose(s_counts[1, 0, 0], [[1, 0, 0], [0, 0, 0]])
    np.testing.assert_allclose(s_counts[1, 0, 1], [[0, 1, 0], [0, 0, 0]])


def test_cawn_embeddings_ignore_the_future():
    src, dst, ts, eids, node, edge = toy(seed=5)
    model = CAWN(node, edge, time_dim=4, position_dim=6, walk_length=2, num_walk_heads=2, num_neighbors=3,
                 time_scaling_factor=0.1).eval()
    cut = 25.0
    past = ts < cut
    out = []
    for mask in (past, np.ones_like(past)):  # the same graph without / with the interactions from `cut` on
        model.set_graph(TemporalNeighbors(src[mask], dst[mask], ts[mask], eids[mask], num_nodes=len(node)),
                        np.random.RandomState(0))
        with torch.no_grad():
            out.append(torch.cat(model.pair_embeddings([1, 2, 3], [4, 5, 6], [cut] * 3)))
    assert torch.equal(out[0], out[1])


def test_cawn_encodes_repeated_walks_once_without_changing_the_result():
    src, dst, ts, eids, node, edge = toy(seed=6, n_nodes=10, n_edges=60)
    model = CAWN(node, edge, time_dim=4, position_dim=6, walk_length=2, num_walk_heads=2, num_neighbors=4,
                 time_scaling_factor=0.1).eval()
    model.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=len(node)), np.random.RandomState(0))
    s, d, t = src[40:50], dst[40:50], ts[40:50]
    s_levels, (s_ids, s_eids, s_ts) = model._walks(s, t)
    d_levels, (d_ids, _, _) = model._walks(d, t)
    counts, _ = walk_counts(s_levels, d_levels, s_ids, d_ids)
    with torch.no_grad():
        fast = model._encode(s_ids, s_eids, s_ts, counts)
        # reference: every one of the B * M walks encoded on its own, DyGLib's way
        ids = torch.from_numpy(s_ids)
        pos = model.position_mlp(torch.from_numpy(counts)).sum(-2)  # (B, M, L+1, d_p)
        phi = model.time_encoder(torch.from_numpy(s_ts[:, :, :1] - s_ts).float())
        rows = torch.cat([model.node_feat[ids], phi, model.edge_feat[torch.from_numpy(s_eids)], pos], dim=-1)
        lengths = (ids != 0).sum(-1)
        walks = torch.cat([model.feature_lstm(rows, lengths), model.position_lstm(pos, lengths)], dim=-1)
        slow = model.project_out(model.transformer(model.project_in(walks)).mean(1))
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-6)
    keys = np.concatenate([np.repeat(np.arange(10), s_ids.shape[1])[:, None], s_eids.reshape(-1, 3)], axis=1)
    assert len(np.unique(keys, axis=0)) < keys.shape[0]  # there were repeated walks to share


def test_cawn_walk_query_chunks_keep_each_range_within_the_budget():
    # summed histories 3 | 10 | 2+2+1: a query above the budget alone, the others packed up to it
    assert walk_query_chunks(np.array([3, 10, 2, 2, 1]), 5) == [(0, 1), (1, 2), (2, 5)]
    assert walk_query_chunks(np.array([3, 10, 2]), 100) == [(0, 3)]  # the whole fits: one range
    assert walk_query_chunks(np.zeros(0, dtype=int), 5) == []


def test_cawn_walk_statistic_over_bounded_ranges_is_the_whole_statistic():
    """The authors' walk statistic drawn over query ranges of a small history budget (what a large graph
    needs: one call over Reddit's training endpoints flattens ~3e9 history entries) gives the figures of
    one call over all, and no sampler call flattens more than the budget."""
    src, dst, ts, eids, node, edge = toy(seed=7, n_nodes=6, n_edges=400)
    g = TemporalNeighbors(src, dst, ts, eids, num_nodes=len(node))
    nodes, times = np.concatenate([src, dst]), np.concatenate([ts, ts])
    whole = walk_time_stats(g, nodes, times, 8, 1, "time_interval_aware", 0.1)
    flattened, sampler = [], g.time_interval_aware

    def counted(n, t, k, rng, scale):  # the entries this call flattens
        flattened.append(int(g.count_before(n, t).sum()))
        return sampler(n, t, k, rng, scale)

    g.time_interval_aware = counted
    ranged = walk_time_stats(g, nodes, times, 8, 1, "time_interval_aware", 0.1, budget=500)
    assert len(flattened) > 10 and max(flattened) <= 500
    assert sum(flattened) == int(g.count_before(nodes, times).sum())  # every query once
    np.testing.assert_allclose(ranged, whole, rtol=1e-12)
    assert whole[1] > 0 and whole != (0.0, 1.0)


# ------------------------------------------------------------------ through the task

BASE = dict(paper="linear_time", experiment="lp_test", task="link_prediction", dataset="uci", standin="smoke",
            encoder="linear", d_T=4, lr=1e-3, batch_size=50, max_epochs=2, patience=5, eval_negatives=["random"],
            seed=0)
MODEL_ARGS = {
    "tgn": dict(model="tgn", num_neighbors=3, num_layers=1, num_heads=2, dropout=0.1),
    "cawn": dict(model="cawn", num_neighbors=3, walk_length=1, position_dim=8, num_walk_heads=2, dropout=0.1,
                 neighbor_sampling="time_interval_aware", time_scaling_factor=1e-6),
}


def make_config(name: str, **over) -> dict:
    cfg = resolved("link_prediction", name, {**BASE, **MODEL_ARGS[name], **over})
    cfg["run_id"] = registry.run_id(cfg)
    return cfg


@pytest.fixture(scope="module")
def data_root(standin_root):
    """The session's data folder, holding the smoke uci stand-in."""
    return standin_root("uci")


@pytest.fixture
def task(data_root, monkeypatch):
    monkeypatch.setenv("TIMEREPRO_DATA", str(data_root))
    torch.set_num_threads(1)


@pytest.mark.parametrize("name", ["tgn", "cawn"])
def test_trains_end_to_end_with_finite_loss(task, tmp_path, monkeypatch, name):
    resets = []
    original = tgn_module.TGN.reset_state

    def spy(self):
        resets.append(float(self.memory.abs().sum()))  # memory left by the previous epoch's validation
        original(self)
        assert self.memory.abs().sum() == 0 and not self.has_pending.any()

    monkeypatch.setattr(tgn_module.TGN, "reset_state", spy)
    epochs = 2 if name == "tgn" else 1  # TGN: two epochs to see the second reset
    d = runs.execute(make_config(name, max_epochs=epochs), results=tmp_path, show_progress=False)
    history = json.loads((d / "history.json").read_text())
    metrics = json.loads((d / "metrics.json").read_text())
    assert len(history) == epochs and all(math.isfinite(row["train_loss"]) for row in history)
    assert 0 <= metrics["test_transductive_random_ap"] <= 1 and 0 <= metrics["val_transductive_random_auc"] <= 1
    if name == "tgn":  # one reset per epoch; the second one wipes a memory that had been filled
        assert len(resets) == 2 and resets[0] == 0 and resets[1] > 0


def test_tgn_killed_run_resumes_to_the_same_metrics(task, tmp_path, kill_then_resume):
    cfg = make_config("tgn", max_epochs=3)
    expected = json.loads((runs.execute(cfg, results=tmp_path / "a", show_progress=False) / "metrics.json").read_text())
    # the best epoch is before the kill: the final evaluation starts from memories read from the checkpoint
    assert expected["best_epoch"] <= 1
    d = kill_then_resume(cfg, tmp_path / "b", after=2)
    got = json.loads((d / "metrics.json").read_text())
    assert json.loads((d / "provenance.json").read_text())["resumed_from_epoch"] == 1
    cost = {"epoch_time_s", "peak_rss_mb", "peak_gpu_memory_mb"}
    assert {k: v for k, v in got.items() if k not in cost} == {k: v for k, v in expected.items() if k not in cost}


def test_models_registered_with_dyglib_defaults():
    assert {"tgn", "cawn"} <= set(link_prediction.MODELS)
    models = yaml.safe_load((Path(__file__).parents[2] / "params" / "models.yaml").read_text())
    tgn_cfg = with_dataset_defaults({**models["tgn"]["defaults"], "dataset": "uci"})
    assert (tgn_cfg["num_neighbors"], tgn_cfg["num_layers"], tgn_cfg["dropout"]) == (10, 1, 0.1)
    cawn_cfg = with_dataset_defaults({**models["cawn"]["defaults"], "dataset": "uci", "dropout": 0.3})
    assert cawn_cfg["num_neighbors"] == 64 and cawn_cfg["dropout"] == 0.3  # a value set by the config wins
    assert cawn_cfg["neighbor_sampling"] == "time_interval_aware" and cawn_cfg["time_scaling_factor"] == 1e-6
