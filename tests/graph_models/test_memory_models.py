"""JODIE and DyRep (DyGLib's MemoryModel): memory updates worked by hand on a 3-edge graph, JODIE's time
projection by hand, DyRep's messages carrying the other endpoint's attention embedding, the stream state's
reset/backup/restore, and a killed run through the task resuming to the same metrics."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch

from timerepro import registry, runs
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.dyrep import DyRep
from timerepro.models.graph.jodie import JODIE, jodie_shift_stats, role_time_shifts
from timerepro.models.graph.memory import stream_state
from timerepro.models.graph.message_memory import STATE

from .conftest import resolved

NODE_DIM, EDGE_DIM, TIME_DIM = 6, 3, 4
# three edges (src, dst, t) over nodes 1..4; node 4 is never touched
SRC, DST, TS = np.array([1, 2, 1]), np.array([2, 3, 3]), np.array([1.0, 2.0, 4.0])
EIDS = np.array([1, 2, 3])


def tables(seed: int = 0):
    rng = np.random.default_rng(seed)
    node = np.vstack([np.zeros((1, NODE_DIM)), rng.normal(size=(4, NODE_DIM))])
    edge = np.vstack([np.zeros((1, EDGE_DIM)), rng.normal(size=(3, EDGE_DIM))])
    return node, edge


def make_jodie(cell: str = "rnn", stats=(0.0, 1.0, 0.0, 1.0)) -> JODIE:
    torch.manual_seed(0)
    node, edge = tables()
    return JODIE(node, edge, time_dim=TIME_DIM, memory_updater=cell, dropout=0.1, shift_stats=stats).eval()


def make_dyrep() -> DyRep:
    torch.manual_seed(0)
    node, edge = tables()
    model = DyRep(node, edge, time_dim=TIME_DIM, num_layers=1, num_heads=2, num_neighbors=3, dropout=0.1).eval()
    model.set_graph(TemporalNeighbors(SRC, DST, TS, EIDS, num_nodes=5))
    return model


def rnn_by_hand(cell: torch.nn.RNNCell, m: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """tanh(W_ih m + b_ih + W_hh h + b_hh), written out."""
    return torch.tanh(cell.weight_ih @ m + cell.bias_ih + cell.weight_hh @ h + cell.bias_hh)


def observe_one_by_one(model) -> None:
    for i in range(3):
        model.observe(SRC[[i]], DST[[i]], TS[[i]], EIDS[[i]])


@pytest.mark.parametrize("cell", ["rnn", "gru"])
@torch.no_grad()
def test_jodie_memory_after_three_edges_by_hand(cell):
    model = make_jodie(cell)
    observe_one_by_one(model)
    phi = lambda dt: model.time_encoder(torch.tensor([dt], dtype=torch.float32))[0]
    x = lambda e: model.edge_feat[e]
    update = (lambda m, h: rnn_by_hand(model.memory_updater, m, h)) if cell == "rnn" else \
        (lambda m, h: model.memory_updater(m[None], h[None])[0])
    zero = torch.zeros(NODE_DIM)
    # edge 1 (1 -> 2, t=1): both endpoints get messages on zero memories
    m1 = torch.cat([zero, zero, phi(1.0), x(1)])
    m2 = torch.cat([zero, zero, phi(1.0), x(1)])
    # edge 2 (2 -> 3, t=2): node 2 commits m2; node 3 has nothing pending
    s2 = update(m2, zero)
    m3 = torch.cat([zero, s2, phi(2.0), x(2)])  # node 3, destination role: [s_3; s_2; Phi(2 - 0); x_2]
    # edge 3 (1 -> 3, t=4): nodes 1 and 3 commit m1 and m3
    s1, s3 = update(m1, zero), update(m3, zero)
    assert torch.allclose(model.memory[1], s1, atol=1e-6)
    assert torch.allclose(model.memory[2], s2, atol=1e-6)
    assert torch.allclose(model.memory[3], s3, atol=1e-6)
    assert not model.memory[[0, 4]].any() and not model.has_pending[[0, 4]].any()  # untouched nodes stay zero
    assert model.last_update[1:4].tolist() == [1.0, 1.0, 2.0]
    # what waits: node 1's [s_1; s_3; Phi(4 - 1); x_3], node 3's [s_3; s_1; Phi(4 - 2); x_3], node 2's from edge 2
    assert torch.allclose(model.pending_message[1], torch.cat([s1, s3, phi(3.0), x(3)]), atol=1e-6)
    assert torch.allclose(model.pending_message[3], torch.cat([s3, s1, phi(2.0), x(3)]), atol=1e-6)
    assert torch.allclose(model.pending_message[2], torch.cat([s2, zero, phi(1.0), x(2)]), atol=1e-6)
    assert model.pending_time[1:4].tolist() == [4.0, 2.0, 4.0]


@torch.no_grad()
def test_jodie_time_projection_by_hand_with_each_roles_statistics():
    stats = (1.0, 2.0, -3.0, 0.5)  # src mean/std, dst mean/std
    model = make_jodie("rnn", stats)
    observe_one_by_one(model)
    w, b = model.projection.weight[:, 0], model.projection.bias
    t = 7.0
    h_src, h_dst = model.pair_embeddings(np.array([2]), np.array([3]), np.array([t]))
    # node 2: nothing pending since edge 2 ... its pending message (edge 2, t=2) applies on the fly, last = 2
    s2 = rnn_by_hand(model.memory_updater, model.pending_message[2], model.memory[2])
    s3 = rnn_by_hand(model.memory_updater, model.pending_message[3], model.memory[3])
    dt_src, dt_dst = (t - 2.0 - 1.0) / 2.0, (t - 4.0 + 3.0) / 0.5
    assert torch.allclose(h_src[0], s2 * (1 + w * dt_src + b), atol=1e-5)
    assert torch.allclose(h_dst[0], s3 * (1 + w * dt_dst + b), atol=1e-5)
    # the roles' statistics differ: the same node embeds differently as source and as destination
    a, c = model.pair_embeddings(np.array([3]), np.array([3]), np.array([t]))
    assert not torch.allclose(a, c)


def test_role_time_shifts_as_dyglib_counts_them():
    nodes, ts = np.array([5, 6, 5, 5, 6]), np.array([1.0, 2.0, 4.0, 9.0, 10.0])
    assert role_time_shifts(nodes, ts).tolist() == [1.0, 2.0, 3.0, 5.0, 8.0]  # 0 before a node's first time


@torch.no_grad()
def test_dyrep_message_carries_the_other_endpoints_attention_embedding():
    model = make_dyrep()
    model.observe(SRC[[0]], DST[[0]], TS[[0]], EIDS[[0]])
    # what the forward pass of edge 2 would embed (DyGLib's dst_node_embeddings), before observe
    before = copy.deepcopy(model)
    z2, z3 = before.attention_embed(np.array([2, 3]), np.array([2.0, 2.0]))
    model.observe(SRC[[1]], DST[[1]], TS[[1]], EIDS[[1]])
    d = NODE_DIM
    assert torch.allclose(model.pending_message[2, d:2 * d], z3, atol=1e-6)  # node 2's message: [s_2; z_3(2); ...]
    assert torch.allclose(model.pending_message[3, d:2 * d], z2, atol=1e-6)
    assert not torch.allclose(z2, model.memory[2])  # not the memory (TGN's and JODIE's message)
    assert torch.allclose(model.pending_message[2, :d], model.memory[2])
    # the embedding for prediction is the memory (pending messages applied), whatever the time
    h_src, h_dst = model.pair_embeddings(np.array([2]), np.array([3]), np.array([9.0]))
    assert torch.equal(h_src, model.current_memory([2])) and torch.equal(h_dst, model.current_memory([3]))


def test_dyrep_attention_gets_no_gradient_as_in_dyglib():
    model = make_dyrep().train()
    observe_one_by_one(model)
    h_src, h_dst = model.pair_embeddings(np.array([1, 2]), np.array([3, 3]), np.array([5.0, 5.0]))
    (h_src * h_dst).sum().backward()
    assert model.memory_updater.weight_ih.grad is not None and model.memory_updater.weight_ih.grad.abs().sum() > 0
    assert all(p.grad is None for p in model.attention.parameters())


@pytest.mark.parametrize("make", [make_jodie, make_dyrep])
@torch.no_grad()
def test_reset_backup_restore_round_trip_and_state_dict(make):
    model = make()
    assert stream_state(model) is model  # the tasks drive it through the StreamState protocol
    model.observe(SRC[:2], DST[:2], TS[:2], EIDS[:2])
    model.observe(SRC[2:], DST[2:], TS[2:], EIDS[2:])
    saved = {k: getattr(model, k).clone() for k in STATE}
    model.backup_state("train_end")
    model.observe(np.array([4]), np.array([1]), np.array([6.0]), np.array([3]))
    assert not torch.equal(model.memory, saved["memory"]) or not torch.equal(model.has_pending, saved["has_pending"])
    model.restore_state("train_end")
    assert all(torch.equal(getattr(model, k), saved[k]) for k in STATE)
    fresh = make()
    fresh.load_state_dict(model.state_dict())  # live state and named copies travel with the checkpoint
    assert all(torch.equal(getattr(fresh, k), saved[k]) for k in STATE)
    fresh.reset_state()
    fresh.restore_state("train_end")
    assert torch.equal(fresh.memory, saved["memory"])
    model.reset_state()
    assert not model.memory.any() and not model.has_pending.any() and not model.last_update.any()


def test_jodie_shift_stats_read_the_training_edges_only():
    class Data:
        src, dst, ts = np.array([1, 2, 1, 9]), np.array([2, 3, 3, 9]), np.array([1.0, 2.0, 4.0, 100.0])

    class Split:
        train = np.array([True, True, True, False])

    sm, ss, dm, ds = jodie_shift_stats(Data, Split)
    assert (sm, dm) == (pytest.approx(np.mean([1.0, 2.0, 3.0])), pytest.approx(np.mean([1.0, 2.0, 2.0])))
    assert ss == pytest.approx(np.std([1.0, 2.0, 3.0])) and ds == pytest.approx(np.std([1.0, 2.0, 2.0]))


@pytest.mark.parametrize("kind", ["jodie", "jodie_gru", "dyrep"])
def test_prediction_never_uses_the_edges_of_its_own_batch(kind):
    """Two streams equal up to batch b and different inside it (other destinations and edge features, one
    time): the scores of batch b are identical; once b has been observed, later embeddings differ."""
    from .test_tgn_cawn import toy

    src, dst, ts, eids, node, edge = toy(seed=3, n_edges=30)
    ts[20:] = 40.0  # batch b = edges 20..29, one time, after everything else
    scores, after = [], []
    for variant in (0, 1):
        d, e = dst.copy(), edge.copy()
        if variant:
            d[20:] = (d[20:] % 8) + 1
            e[21:31] = -e[21:31]  # edge ids 21..30 = batch b
        torch.manual_seed(0)
        if kind == "dyrep":
            model = DyRep(node, e, time_dim=TIME_DIM, num_neighbors=3).eval()
        else:
            model = JODIE(node, e, time_dim=TIME_DIM, memory_updater="gru" if kind == "jodie_gru" else "rnn").eval()
        model.set_graph(TemporalNeighbors(src, d, ts, eids, num_nodes=len(node)))
        for start in range(0, 20, 5):
            b = np.arange(start, start + 5)
            model.observe(src[b], d[b], ts[b], eids[b])
        b = np.arange(20, 30)
        probe = np.resize(np.arange(1, 9), 10)  # the same candidate destinations in both streams
        with torch.no_grad():
            scores.append(torch.cat(model.pair_embeddings(src[b], probe, ts[b])))
            model.observe(src[b], d[b], ts[b], eids[b])
            after.append(torch.cat(model.pair_embeddings(src[b], probe, np.full(10, 50.0))))
    assert torch.equal(scores[0], scores[1])
    assert not torch.allclose(after[0], after[1])


# ------------------------------------------------------------------ through the task

BASE = dict(paper="dyg_mamba", experiment="lp_test", task="link_prediction", dataset="uci", standin="smoke",
            lr=1e-3, batch_size=100, max_epochs=3, patience=5, eval_negatives=["random"], seed=0, d_T=4)


def make_config(model: str, **over) -> dict:
    cfg = resolved("link_prediction", model, {**BASE, "model": model, **over})
    cfg["run_id"] = registry.run_id(cfg)
    return cfg


@pytest.mark.parametrize("model,over", [("jodie", {}), ("jodie_gru", {}), ("dyrep", {"num_neighbors": 4})])
def test_killed_run_resumes_to_the_same_metrics(model, over, standin_root, monkeypatch, tmp_path, kill_then_resume):
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root("uci")))
    cfg = make_config(model, **over)
    a = runs.execute(cfg, results=tmp_path / "a", show_progress=False)
    expected = json.loads((a / "metrics.json").read_text())
    assert 0 <= expected["test_transductive_random_ap"] <= 1 and expected["n_parameters"] > 0
    d = kill_then_resume(cfg, tmp_path / "b", after=2)
    got = json.loads((d / "metrics.json").read_text())
    assert json.loads((d / "provenance.json").read_text())["resumed_from_epoch"] == 1
    cost = {"epoch_time_s", "peak_rss_mb", "peak_gpu_memory_mb"}
    assert {k: v for k, v in got.items() if k not in cost} == {k: v for k, v in expected.items() if k not in cost}


# ------------------------------------------------------------------ the reports' JODIE / DyRep cells

@pytest.mark.parametrize("paper,artifact,dataset,labels", [
    ("dyg_mamba", "table4", "uci", {"JODIE", "DyRep"}),
    ("dyg_mamba", "table3", "wikipedia", {"JODIE", "DyRep"}),
    ("swinit", "table1", "jodie_wikipedia", {"JODIE-rnn", "JODIE-gru", "DyRep"}),
    ("swinit", "table3", "jodie_wikipedia", {"JODIE-rnn", "JODIE-gru", "DyRep"}),
])
def test_smoke_runs_fill_the_reports_memory_model_cells(paper, artifact, dataset, labels, standin_root, monkeypatch,
                                                         tmp_path):
    """The artifact's smoke runs of the memory models, through the task, give reproduced (finite) cells under the
    paper's labels: the placeholders of these models disappear."""
    from timerepro.records import load_record, run_dir
    from timerepro.report.aggregate import AGGREGATORS

    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root(dataset)))
    reg = registry.load()
    art = next(a for a in reg.papers[paper]["artifacts"] if a["id"] == artifact)
    todo = [r for r in reg.artifact_runs(paper, artifact, "smoke")
            if r.config["model"] in ("jodie", "jodie_gru", "dyrep")]
    assert len(todo) >= 2
    for r in todo:
        runs.execute(r.config, results=tmp_path, show_progress=False)
    records = [load_record(run_dir(r.config, tmp_path)) for r in todo]
    rows = AGGREGATORS[art["aggregate"]](records)
    filled = {label for row in rows for label in (row["row"], row["column"])
              if row["n_runs"] > 0 and np.isfinite(row["mean"])}
    assert labels <= filled
    placeholders = {(row.get("row_group"), row["row"], row["column"]) for row in rows if row["n_runs"] == 0}
    if paper == "swinit":  # the cells that ran (setting, model, Wikipedia) are no placeholders any more
        from timerepro.report.swinit import PRINTED_MODELS
        group = lambda c: c.get("monitor_setting", "transductive") if artifact == "table1" else "node classification"
        ran = {(group(r.config), PRINTED_MODELS[r.config["model"]], "Wikipedia") for r in todo}
        assert ran and not ran & placeholders
    else:
        assert not {p for p in placeholders if labels & set(p)}
