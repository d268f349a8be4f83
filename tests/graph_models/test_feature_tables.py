"""Feature tables kept at their stored width (`PaddedFeatures`, `FeatureTable`) give every link-prediction model
exactly the numbers of DyGLib's zero-padded 172-column tables, and hold E x d, not E x 172, at a real size."""

from __future__ import annotations

import tracemalloc
from functools import lru_cache

import numpy as np
import pytest
import torch

from timerepro import registry
from timerepro.data.ctdg import CTDGData, PaddedFeatures, link_prediction_split, load_processed
from timerepro.data.manifest import build_manifest, write_manifest
from timerepro.graphs.neighbors import TRAIN_NEIGHBOR_SEED, TemporalNeighbors, neighbor_rng
from timerepro.models.graph.features import FeatureTable
from timerepro.tasks.link_prediction.model import MODELS, build_model
from timerepro.tasks.registry import effective_config

WIDTH = 172
# small widths so each builder's defaults fit a toy graph (the sequence models read up to these)
SMALL = {"num_neighbors": 4, "max_input_sequence_length": 8, "patch_size": 1, "walk_length": 1, "num_walks": 2,
         "time_gap": 4, "d_ch": 8, "d_T": 8, "memory_dim": 8, "embedding_dim": 8}


def toy(seed: int = 0, n_nodes: int = 12, n_edges: int = 120) -> tuple[dict, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    src = rng.integers(1, n_nodes + 1, n_edges)
    dst = rng.integers(1, n_nodes + 1, n_edges)
    arrays = dict(src=src, dst=dst, ts=np.sort(rng.uniform(0, 100, n_edges)), edge_ids=np.arange(1, n_edges + 1),
                  labels=np.zeros(n_edges))
    edge = np.vstack([np.zeros((1, 2)), rng.normal(size=(n_edges, 2))])  # a 2-wide table (LastFM, SocialEvo)
    node = np.vstack([np.zeros((1, 3)), rng.normal(size=(n_nodes, 3))])
    return arrays, edge, node


def padded(table: np.ndarray) -> np.ndarray:
    """DyGLib's loader: the table with zero columns up to 172 (what load_processed returned before)."""
    return np.concatenate([table, np.zeros((table.shape[0], WIDTH - table.shape[1]))], axis=1)


def test_padded_features_read_as_the_padded_table():
    _, edge, _ = toy()
    table = PaddedFeatures(edge, WIDTH)
    full = padded(edge)
    assert table.shape == full.shape and table.nbytes == edge.nbytes
    ids = np.array([[3, 0, 7], [1, 1, 120]])
    assert np.array_equal(table[ids], full[ids]) and np.array_equal(table[5], full[5])
    assert np.array_equal(table[1:, :2], full[1:, :2]) and np.array_equal(np.asarray(table), full)
    rows = FeatureTable(table)
    assert rows.shape == torch.Size(full.shape) and rows.values.shape == (edge.shape[0], 2)
    t = torch.as_tensor(full, dtype=torch.float32)
    assert torch.equal(rows[torch.from_numpy(ids)], t[torch.from_numpy(ids)])
    with pytest.raises(ValueError, match="bigger than 172"):
        PaddedFeatures(np.zeros((3, 173)), WIDTH)


@lru_cache(maxsize=None)
def _smoke_config(name: str) -> dict:
    """The effective config of the model's first link-prediction run at smoke scale, widths made small."""
    run = next(r for r in registry.load().runs("smoke")
               if r.config["task"] == "link_prediction" and r.config.get("model") == name)
    config = effective_config(run.config)
    return {**config, **{k: v for k, v in SMALL.items() if k in config}}


def _scores(name: str, data: CTDGData) -> tuple[torch.Tensor, torch.Tensor]:
    config = dict(_smoke_config(name))
    split = link_prediction_split(data)
    graph = TemporalNeighbors.from_data(data, split.train)
    torch.manual_seed(0)
    model = build_model(config, data, split, graph)
    model.backbone.set_graph(graph, neighbor_rng(TRAIN_NEIGHBOR_SEED))
    model.eval()
    b = np.flatnonzero(split.val)[:10]
    with torch.no_grad():
        return model.score(data.src[b], data.dst[b], data.dst[b], data.src[b], data.ts[b])


@pytest.mark.parametrize("name", sorted(set(MODELS) - {"edgebank"}))
def test_every_model_scores_bitwise_as_on_the_padded_tables(name):
    arrays, edge, node = toy()
    lazy = CTDGData("toy", **arrays, edge_feat=PaddedFeatures(edge, WIDTH), node_feat=PaddedFeatures(node, WIDTH),
                    manifest={})
    full = CTDGData("toy", **arrays, edge_feat=padded(edge), node_feat=padded(node), manifest={})
    for a, b in zip(_scores(name, lazy), _scores(name, full)):
        assert torch.equal(a, b), name


def test_a_real_size_one_wide_table_is_not_padded_in_memory(tmp_path):
    """Contacts' real size (2,426,279 edges, 692 nodes, one edge feature): loading held 3.3 GB of float64 padding
    and the model a further 1.7 GB of float32; now the data holds 19 MB and the model 10 MB."""
    n_edges, n_nodes = 2_426_279, 692
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "edges.npz", u=rng.integers(1, n_nodes + 1, n_edges), i=rng.integers(1, n_nodes + 1, n_edges),
             ts=np.arange(n_edges, dtype=np.float64), label=np.zeros(n_edges), idx=np.arange(1, n_edges + 1))
    np.save(tmp_path / "ml_Contacts.npy", rng.normal(size=(n_edges + 1, 1)))
    np.save(tmp_path / "ml_Contacts_node.npy", np.zeros((n_nodes + 1, WIDTH)))
    write_manifest(tmp_path, build_manifest(dataset="contacts", family="ctdg", sources=[], rows={}, standin=True,
                                            label="test", files=[], extra={"upstream_name": "Contacts"}))
    tracemalloc.start()
    try:
        data = load_processed(tmp_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    padded_mb = (n_edges + 1) * WIDTH * 8 / 2**20  # 3,184 MB: what the padding allocated
    assert data.edge_feat.shape == (n_edges + 1, WIDTH) and data.edge_feat.nbytes == (n_edges + 1) * 8
    assert peak / 2**20 < 0.1 * padded_mb, f"loading peaked at {peak / 2**20:.0f} MB"
    table = FeatureTable(data.edge_feat)
    assert table.shape == (n_edges + 1, WIDTH) and table.values.nbytes == (n_edges + 1) * 4
    assert table[torch.tensor([0, 5, n_edges])].shape == (3, WIDTH)


@pytest.mark.parametrize("statistic, uniform", [("pooled", False), ("per_query_mean", False), ("per_query_mean", True),
                                                ("pooled", True)])
def test_time_statistics_in_chunks_are_those_of_the_whole(statistic, uniform):
    """Every statistic gathered a few queries at a time (DyG-Mamba on LastFM built 1.8 M x 511 arrays, ~50 GB with
    their temporaries) equals, to the last bit, the one over the whole (Q, k) arrays; uniform windows draw the
    same numbers from the same stream (a node with no history among the queries draws none)."""
    from timerepro.encoders import standardization_stats
    from timerepro.models.graph.time_stats import time_difference_stats

    arrays, _, _ = toy(n_edges=400)
    graph = TemporalNeighbors(arrays["src"], arrays["dst"], arrays["ts"], arrays["edge_ids"], num_nodes=13)
    nodes, times = np.concatenate([arrays["src"], arrays["dst"]]), np.concatenate([arrays["ts"], arrays["ts"]])
    rng = (lambda: np.random.RandomState(3)) if uniform else (lambda: None)  # a fresh stream per call
    for k in (1, 5, 64):
        hood = graph.most_recent(nodes, times, k) if not uniform else graph.uniform(nodes, times, k, rng())
        assert (hood.neighbor_ids == 0).all(axis=1).any()  # rows without history are among the queries
        whole = standardization_stats(times[:, None] - hood.times, hood.neighbor_ids != 0, statistic)
        for chunk in (7, 100, 10_000):
            assert time_difference_stats(graph, nodes, times, k, statistic, rng(), chunk=chunk) == whole
