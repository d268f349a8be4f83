"""Paper-size stand-ins: the sizes agree with the papers' statistics tables, and a generated one has them
after the same preprocessing as the real data."""

from __future__ import annotations

import numpy as np
import pytest

from timerepro.data import standins
from timerepro.data.ctdg import load_processed
from timerepro.data.lock import load_lock
from timerepro.report import published

# the statistics tables' metric names for nodes and edges
STATS = {("linear_time", "table3"): ("n_nodes", "n_edges_total"), ("dyg_mamba", "table6"): ("num_nodes", "total_edges")}


def test_every_graph_of_the_papers_has_a_paper_size():
    lock = load_lock()
    graphs = [d.name for d in lock.datasets.values() if d.family == "ctdg"]
    assert sorted(graphs) == sorted(standins.PAPER_GRAPHS)


def test_paper_sizes_agree_with_the_published_statistics_tables():
    lock = load_lock()
    checked = 0
    for (paper, artifact), (nodes, edges) in STATS.items():
        table = published.load(paper, artifact)
        for name, size in standins.PAPER_GRAPHS.items():
            ds = lock.get(name)
            if paper not in ds.papers or name.startswith("jodie_"):
                continue
            rows = table[table["row"] == ds.papers[paper]["name"]]
            for metric, want in ((nodes, size["nodes"]), (edges, size["edges"])):
                values = rows[rows["metric"] == metric]["mean"].astype(float).tolist()
                if values:
                    assert want in values, (name, metric, values)
                    checked += 1
    assert checked >= 20


def test_tpp_sizes_give_the_published_training_tokens_within_five_percent():
    table = published.load("hawkes_attention", "table1")
    lock = load_lock()
    for name, size in standins.PAPER_TPP.items():
        ds = lock.get(name)
        if "hawkes_attention" not in ds.papers:
            continue
        rows = table[table["row"] == ds.papers["hawkes_attention"]["name"]]
        tokens = rows[rows["metric"] == "event_tokens_train"]["mean"].astype(float).tolist()
        if tokens:
            mean_len = (size["min_len"] + size["max_len"]) / 2
            assert size["train"] * mean_len == pytest.approx(tokens[0], rel=0.05), name


@pytest.mark.parametrize("name", ["uci", "uslegis"])  # unix clock, copied ml_* files; steps, preprocessed CSV
def test_a_paper_stand_in_has_the_real_size_after_preprocessing(name, tmp_path, monkeypatch):
    from timerepro.data.prepare import prepare

    monkeypatch.setenv("TIMEREPRO_DATA", str(tmp_path))
    data = load_processed(prepare(name, standin="paper", progress=False))
    size = standins.PAPER_GRAPHS[name]
    assert len(data.src) == size["edges"]
    assert data.manifest["rows"]["nodes"] == size["nodes"] and data.manifest["standin"] is True
    assert len(np.unique(np.concatenate([data.src, data.dst]))) == size["nodes"]
    if "steps" in size:
        assert len(np.unique(data.ts)) == size["steps"]
    else:
        assert len(np.unique(data.ts)) > 0.9 * size["edges"]
        assert data.ts.max() - data.ts.min() == pytest.approx(size["span"], rel=0.01)
