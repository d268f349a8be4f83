"""dyg_mamba's DyGLib baselines: EdgeBank's four memories on a hand-computed case and through the task
(no parameters, no training), GraphMixer's time_gap node encoder by hand, TCL's co-attention wiring, and
each trained end to end on the smoke stand-in of UCI."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from .conftest import resolved
from timerepro import registry, runs
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.edgebank import EdgeBank
from timerepro.models.graph.graphmixer import GraphMixer
from timerepro.models.graph.tcl import TCL

torch.set_num_threads(1)
MODELS_YAML = yaml.safe_load((Path(__file__).parents[2] / "params" / "models.yaml").read_text())

# edges (src, dst, t): the first four are the history, the fifth arrives during evaluation
SRC, DST, TS = np.array([1, 1, 1, 2, 1]), np.array([2, 3, 2, 3, 3]), np.array([1.0, 2.0, 3.0, 4.0, 5.0])
QUERY_SRC, QUERY_DST = np.array([1, 1, 2, 3, 2]), np.array([2, 3, 3, 1, 1])  # (3,1) and (2,1): never seen


def bank(mode: str) -> EdgeBank:
    b = EdgeBank(SRC, DST, TS, {"train_end": np.arange(5) < 4}, mode=mode, test_ratio=0.5, num_nodes=4)
    b.restore_state("train_end")
    return b


def hits(b: EdgeBank) -> list[int]:
    return (torch.sigmoid(b.score(QUERY_SRC, QUERY_DST, np.full(5, 6.0))) == 1).int().tolist()


@pytest.mark.parametrize("mode, before, after", [
    # every pair seen: (1,2) x2, (1,3), (2,3); directed, so (3,1) and (2,1) are not in memory
    ("unlimited", [1, 1, 1, 0, 0], [1, 1, 1, 0, 0]),
    # mean count of a distinct pair 4/3: only (1,2); after (1,3) at 5: mean 5/3, (1,2) and (1,3) have 2
    ("repeat_threshold", [1, 0, 0, 0, 0], [1, 1, 0, 0, 0]),
    # window from the 0.5 quantile of times {1,2,3,4} = 2.5: (1,2) last at 3, (2,3) at 4; then of {1..5} = 3
    ("time_window_fixed", [1, 0, 1, 0, 0], [1, 1, 1, 0, 0]),
    # W = (mean gap of (1,2) = 2) / 3 pairs: window [4 - 2/3, 4] holds (2,3); then W = (2 + 3) / 3: [10/3, 5]
    ("time_window_repeat", [0, 0, 1, 0, 0], [0, 1, 1, 0, 0]),
])
def test_edgebank_memories_by_hand(mode, before, after):
    b = bank(mode)
    assert hits(b) == before
    b.observe(SRC[4:], DST[4:], TS[4:], np.array([5]))  # the batch's edges join the history after its scores
    assert hits(b) == after
    b.restore_state("train_end")  # the task restores the base history before each evaluated part
    assert hits(b) == before


def test_edgebank_scores_are_exact_zero_one_probabilities_and_it_has_no_parameters():
    b = bank("unlimited")
    p = torch.sigmoid(b.score(QUERY_SRC, QUERY_DST, np.zeros(5)))
    assert set(p.tolist()) == {0.0, 1.0} and not list(b.parameters())
    with pytest.raises(ValueError, match="unknown EdgeBank memory"):
        EdgeBank(SRC, DST, TS, {}, mode="infinite")


# ------------------------------------------------------------------ GraphMixer, TCL

def toy(seed: int = 0, n_nodes: int = 8, n_edges: int = 40):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(1, n_nodes + 1, n_edges), rng.integers(1, n_nodes + 1, n_edges)
    ts = np.sort(rng.integers(0, 30, n_edges)).astype(float)
    node = np.vstack([np.zeros((1, 6)), rng.normal(size=(n_nodes, 6))])
    edge = np.vstack([np.zeros((1, 5)), rng.normal(size=(n_edges, 5))])
    return src, dst, ts, np.arange(1, n_edges + 1), node, edge


def test_graphmixer_time_gap_node_encoder_by_hand():
    src, dst, ts, eids, node, edge = toy()
    g = TemporalNeighbors(src, dst, ts, eids, num_nodes=len(node))
    model = GraphMixer(node, edge, time_dim=4, num_neighbors=3, time_gap=5, dropout=0.0).eval()
    with torch.no_grad():  # output = [0 | I] [link; node]: the node encoder alone
        model.output.weight.zero_()
        model.output.weight[:, 5:] = torch.eye(6)
        model.output.bias.zero_()
    model.set_graph(g)
    nodes, times = np.array([1, 2, 3]), np.array([25.0, 25.0, 0.0])
    with torch.no_grad():
        got = model.embed(nodes, times)
    for i, (n, t) in enumerate(zip(nodes, times)):
        nbrs = g.most_recent([n], [t], 5).neighbor_ids[0]
        real = nbrs[nbrs > 0]
        # DyGLib: softmax over the real neighbours (1/len(real) each) then a mean over all time_gap rows
        expected = node[n] + (node[real].sum(0) / max(len(real), 1) / 5 if len(real) else 0)
        np.testing.assert_allclose(got[i].numpy(), expected, rtol=1e-5, atol=1e-6)
    assert not [p for p in model.time_encoder.parameters()]  # the fixed time encoder is never trained


def test_graphmixer_zero_node_table_skips_the_neighbour_mean_exactly():
    src, dst, ts, eids, node, edge = toy()
    g = TemporalNeighbors(src, dst, ts, eids, num_nodes=len(node))
    model = GraphMixer(np.zeros_like(node), edge, time_dim=4, num_neighbors=3, time_gap=5, dropout=0.0).eval()
    model.set_graph(g)
    nodes, times = np.array([1, 2, 3]), np.array([25.0, 25.0, 0.0])
    with torch.no_grad():
        skipped = model.embed(nodes, times)
        model.node_feat_is_zero = False  # the grouped weighted sum over the (zero) table
        grouped = model.embed(nodes, times)
    assert torch.equal(skipped, grouped)


def test_tcl_last_layer_queried_at_the_read_out_position_is_the_full_layer():
    """The last co-attention is asked for position 0 only; every position queried (DyGLib) gives the same
    embeddings and gradients."""
    src, dst, ts, eids, node, edge = toy()
    model = TCL(node, edge, time_dim=4, num_neighbors=3, num_layers=2, num_heads=2, dropout=0.0).train()
    model.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=len(node)))
    u, v, t = np.array([1, 2, 3]), np.array([2, 3, 1]), np.array([25.0, 25.0, 12.0])

    def full():  # DyGLib's loop: every position queried in every layer
        x_u, pad_u = model.sequence(u, t)
        x_v, pad_v = model.sequence(v, t)
        for layer in model.layers:
            x_u, x_v = layer(x_u, x_u, pad_u), layer(x_v, x_v, pad_v)
            x_u, x_v = layer(x_u, x_v, pad_v), layer(x_v, x_u, pad_u)
        return model.output(x_u[:, 0]), model.output(x_v[:, 0])

    grads = []
    for fn in (full, lambda: model.pair_embeddings(u, v, t)):
        model.zero_grad()
        a, b = fn()
        (a.square().sum() + b.sum()).backward()
        grads.append((a.detach(), b.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    (a0, b0, g0), (a1, b1, g1) = grads
    torch.testing.assert_close(a1, a0, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(b1, b0, rtol=1e-5, atol=1e-6)
    assert len(g0) == len(g1)
    for x, y in zip(g0, g1):
        torch.testing.assert_close(y, x, rtol=1e-5, atol=1e-6)


def test_tcl_reads_the_node_position_and_couples_the_pair():
    src, dst, ts, eids, node, edge = toy()
    model = TCL(node, edge, time_dim=4, num_neighbors=3, num_layers=1, num_heads=2, dropout=0.0).eval()
    model.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=len(node)))
    t = np.full(2, 25.0)
    with torch.no_grad():
        a_u, _ = model.pair_embeddings(np.array([1, 1]), np.array([2, 3]), t)
    assert not torch.allclose(a_u[0], a_u[1])  # same source, other destination: co-attention at work
    assert model.depth_embedding.num_embeddings == 4  # the node itself plus k = 3 neighbours


# ------------------------------------------------------------------ through the task

BASE = dict(paper="dyg_mamba", experiment="lp_test", task="link_prediction", dataset="uci", standin="smoke",
            lr=1e-3, batch_size=100, max_epochs=1, patience=5, eval_negatives=["random", "historical"], seed=0)
TINY = {"tcl": dict(d_T=4, num_neighbors=3, num_layers=1), "graphmixer": dict(d_T=4, num_neighbors=3, time_gap=5),
        "edgebank": {}}


def make_config(name: str, **over) -> dict:
    cfg = resolved("link_prediction", name, {**BASE, "model": name, **TINY[name], **over})
    cfg["run_id"] = registry.run_id(cfg)
    return cfg


@pytest.fixture
def task(standin_root, monkeypatch):
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root("uci")))


@pytest.mark.parametrize("name", ["tcl", "graphmixer"])
def test_trains_end_to_end(task, tmp_path, name):
    d = runs.execute(make_config(name), results=tmp_path, show_progress=False)
    history, metrics = (json.loads((d / f).read_text()) for f in ("history.json", "metrics.json"))
    assert len(history) == 1 and math.isfinite(history[0]["train_loss"])
    assert 0 <= metrics["test_transductive_historical_ap"] <= 1 and metrics["n_parameters"] > 0


def test_edgebank_is_evaluated_without_training(task, tmp_path):
    d = runs.execute(make_config("edgebank", edgebank_memory="unlimited"), results=tmp_path, show_progress=False)
    metrics = json.loads((d / "metrics.json").read_text())
    assert metrics["epochs_run"] == 0 and metrics["n_parameters"] == 0 and metrics["epoch_time_s"] is None
    # the stand-in repeats partners: a bank that sees its history recalls them (an empty one scores 0.5 exactly)
    assert metrics["test_transductive_random_ap"] > 0.6
    # historical negatives are pairs seen before: the bank scores them as positives, below its random-NS AP
    assert metrics["test_transductive_historical_ap"] < metrics["test_transductive_random_ap"]


def test_eval_batch_size_batches_evaluation_apart_from_training(task, tmp_path):
    """EdgeBank does not train: with eval_batch_size its metrics are those of a run whose one batch size is that
    size, and (the batch-averaged AP depends on the batching) not those of its training batch size."""
    def test_metrics(**over):
        d = runs.execute(make_config("edgebank", edgebank_memory="unlimited", **over), results=tmp_path,
                         show_progress=False)
        m = json.loads((d / "metrics.json").read_text())
        return {k: v for k, v in m.items() if k.startswith(("val_", "test_"))}

    split = test_metrics(batch_size=10, eval_batch_size=200)
    assert split == test_metrics(batch_size=200)
    assert split != test_metrics(batch_size=10)


@pytest.mark.parametrize("name", sorted(MODELS_YAML))
def test_every_backbone_with_an_observe_hook_is_a_stream_state(name):
    """The task calls a backbone's state only through `stream_state`, a structural check on all five methods:
    one missing method silently makes a stateful backbone stateless (EdgeBank lacked `detach_state`)."""
    module = importlib.import_module(MODELS_YAML[name]["module"].split(":")[0])
    classes = [c for c in vars(module).values() if isinstance(c, type) and c.__module__ == module.__name__
               and hasattr(c, "observe")]
    for cls in classes:
        missing = [m for m in ("reset_state", "observe", "detach_state", "backup_state", "restore_state")
                   if not callable(getattr(cls, m, None))]
        assert not missing, f"{cls.__name__} observes the stream but lacks {missing}"


def test_datasets_without_edge_features():
    """Zero-padded (DyGLib's loader) edge features work for every model; GraphMixer, whose channels are the edge
    feature columns, refuses a table with no columns by name, the others take it."""
    src, dst, ts, eids, node, _ = toy()
    g = TemporalNeighbors(src, dst, ts, eids, num_nodes=len(node))
    for edge in (np.zeros((len(src) + 1, 172)), np.zeros((len(src) + 1, 0))):
        tcl = TCL(node, edge, time_dim=4, num_neighbors=3, num_layers=1)
        tcl.set_graph(g)
        with torch.no_grad():
            assert torch.isfinite(tcl.pair_embeddings(src[:3], dst[:3], np.full(3, 25.0))[0]).all()
    mixer = GraphMixer(node, np.zeros((len(src) + 1, 172)), time_dim=4, num_neighbors=3, time_gap=5)
    mixer.set_graph(g)
    with torch.no_grad():
        assert torch.isfinite(mixer.pair_embeddings(src[:3], dst[:3], np.full(3, 25.0))[0]).all()
    with pytest.raises(ValueError, match="edge features"):
        GraphMixer(node, np.zeros((len(src) + 1, 0)), time_dim=4)
