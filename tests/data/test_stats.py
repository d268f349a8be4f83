"""Statistics artifacts: hand-checked values on tiny data; names match published_values.csv exactly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from timerepro.data import ctdg, stats
from timerepro.data.ctdg import CTDGData
from timerepro.data.lock import load_lock
from timerepro.data.tpp import EventSequences, TPPData
from timerepro.paths import params_dir

KEY = ["paper", "artifact", "row_group", "row", "column", "metric"]


def graph(src, dst, ts) -> CTDGData:
    E = len(src)
    return CTDGData("g", np.array(src), np.array(dst), np.array(ts, float), np.arange(1, E + 1), np.zeros(E),
                    np.zeros((E + 1, 172)), np.zeros((max(src + dst) + 1, 172)), {})


def published(paper, artifact) -> pd.DataFrame:
    df = pd.read_csv(params_dir() / "published" / "published_values.csv")
    return df[(df.paper == paper) & (df.artifact == artifact)]


# 3 nodes; minutes: edges at 0, 60, 120, 600, 6000 s
G = graph([1, 2, 1, 1, 3], [2, 3, 2, 3, 1], [0, 60, 120, 600, 6000])


def test_counts_by_hand():
    c = stats.graph_counts(G)
    assert c == {"n_nodes": 3, "n_edges_total": 5, "n_edges_unique": 4, "n_unique_timestamps": 5, "bipartite": False}
    assert stats.graph_counts(graph([1, 1], [2, 3], [0, 1]))["bipartite"] is True


def test_waiting_times_by_hand():
    src_w, dst_w = stats.waiting_times(G)
    # node 1: t=0 (first), 120 (prev 0), 600 (prev 120), 6000 as dst (prev 600)
    # node 2: 0 first, 60 (prev 0), 120 (prev 60); node 3: 60 first, 600 (prev 60), 6000 (prev 600)
    assert np.isnan(src_w[0]) and src_w[1:].tolist() == [60.0, 120.0, 480.0, 5400.0]
    # destinations: edge0 node 2 first; edge1 node 3 first; edge2 node 2 (prev 60); edge3 node 3 (prev 60);
    # edge4 node 1 (prev 600)
    assert np.isnan(dst_w[0]) and np.isnan(dst_w[1]) and dst_w[2:].tolist() == [60.0, 540.0, 5400.0]


def test_table5_rows_and_values(monkeypatch):
    df = stats.linear_time_table5(G)
    assert set(map(tuple, df[KEY].values)) == set(map(tuple, published("linear_time", "table5")[KEY].values))
    # time quantiles of [0,60,120,600,6000]: 0.70 -> 456, 0.85 -> 1680; train = first 3 edges
    train_src = df[(df.row_group == "Source node") & (df.row == "Train") & (df.column == "Average")]["mean"].item()
    assert train_src == pytest.approx(np.mean([60.0, 120.0]) / 60)
    test_dst = df[(df.row_group == "Destination node") & (df.row == "Test") & (df.column == "Median")]["mean"].item()
    assert test_dst == pytest.approx(5400 / 60)


def test_previous_interaction_strictly_earlier_skips_simultaneous_ones():
    """DyGLib's sampler finds interactions strictly before t (what made Table 5); edge order gives a tie 0."""
    g = graph([1, 1, 1], [2, 3, 2], [0, 0, 60])
    src_w, dst_w = stats.waiting_times(g)
    assert np.isnan(src_w[:2]).all() and src_w[2] == 60.0
    assert np.isnan(dst_w[:2]).all() and dst_w[2] == 60.0
    src_w, _ = stats.waiting_times(g, previous="edge_order")
    assert np.isnan(src_w[0]) and src_w[1:].tolist() == [0.0, 60.0]


def _ring(n_nodes: int = 12, n_edges: int = 60) -> CTDGData:
    """Edges (k mod n, k+1 mod n) at uneven times: every node is seen early, late edges touch every node."""
    k = np.arange(n_edges)
    return graph((k % n_nodes + 1).tolist(), ((k + 1) % n_nodes + 1).tolist(), (k * k * 7.0).tolist())


def test_table5_splits_cut_edge_order_at_dyglib_sizes():
    """The printed Table 5: the edges in time order cut at the sizes of DyGLib's train (less the new test nodes'
    edges) and validation sets, so "Validation" starts before the 70% time quantile; "time" is the paper's text."""
    g = _ring()
    split = ctdg.link_prediction_split(g)
    n_train, n_val = int(split.train.sum()), int(split.val.sum())
    assert n_train < int((g.ts <= split.val_time).sum())  # a held-out test node's edges left the train set
    src_w, dst_w = stats.waiting_times(g)

    def cell(df, group, row, column="Average"):
        return df[(df.row_group == group) & (df.row == row) & (df.column == column)]["mean"].item()

    df = stats.linear_time_table5(g)
    assert cell(df, "Source node", "Train") == pytest.approx(np.nanmean(src_w[:n_train]) / 60)
    assert cell(df, "Source node", "Validation") == pytest.approx(np.nanmean(src_w[n_train:n_train + n_val]) / 60)
    assert cell(df, "Destination node", "Test", "Median") == pytest.approx(np.nanmedian(dst_w[n_train + n_val:]) / 60)
    by_time = stats.linear_time_table5(g, split="time")
    assert cell(by_time, "Source node", "Validation") == pytest.approx(np.nanmean(src_w[split.val]) / 60)
    assert cell(by_time, "Source node", "Validation") != pytest.approx(cell(df, "Source node", "Validation"))
    assert df["note"].str.contains("splits dyglib_sizes, previous strictly_earlier").all()


def test_table5_reads_a_package_copy_in_edge_order():
    """A package copy's clock is cut to the minute, its rows keep the order to the second: previous = edge order."""
    g = graph([1, 1, 1], [2, 3, 2], [0, 0, 60])
    assert stats.table5_previous(g) == "strictly_earlier"
    g.manifest = {"kind": "package_copy", "label": "UCI: real UCI, minute resolution, package copy"}
    assert stats.table5_previous(g) == "edge_order"
    assert stats.linear_time_table5(g)["note"].str.contains("previous edge_order").all()


def test_table3_and_table6_names_match_published():
    lock = load_lock()
    names3 = [n for n, d in lock.datasets.items() if "table3" in d.papers.get("linear_time", {}).get("artifacts", [])]
    names6 = [n for n, d in lock.datasets.items() if "table6" in d.papers.get("dyg_mamba", {}).get("artifacts", [])]
    assert len(names3) == 6 and len(names6) == 12
    t3 = stats.linear_time_table3({n: G for n in names3})
    assert set(map(tuple, t3[KEY].values)) == set(map(tuple, published("linear_time", "table3")[KEY].values))
    t6 = stats.dyg_mamba_table6({n: G for n in names6})
    pub6 = set(map(tuple, published("dyg_mamba", "table6")[KEY].values))
    ours = set(map(tuple, t6[KEY].values))
    # published also quotes Poursafaei et al.'s Contact counts: another paper's numbers, not computed from data
    assert ours <= pub6 and {k[4] for k in pub6 - ours} == {"Poursafaei et al. 2022"}
    assert list(t6.columns) == stats.COLUMNS
    row = t6[(t6.row == "UCI") & (t6.metric == "duration")]
    assert row["mean"].item() == pytest.approx(6000 / 86400) and row["note"].item().startswith("value: ")


def test_steps_duration_counts_steps():
    g = graph([1, 2, 3], [2, 3, 1], [0, 5, 11])
    assert stats.duration(g, {"clock": "steps", "duration_unit": "congress"}) == (12.0, "congresses")
    assert stats.duration(graph([1, 2, 3], [2, 3, 1], [0, 1, 11]), {"clock": "steps", "duration_unit": "year"})[0] == 12.0


def test_hawkes_table1_by_hand():
    def split(lengths):
        ptr = np.concatenate([[0], np.cumsum(lengths)])
        n = ptr[-1]
        return EventSequences(ptr, np.zeros(n), np.zeros(n), np.zeros(n, int), np.arange(len(lengths)))

    d = TPPData("taxi", 10, {"train": split([3, 5]), "dev": split([4]), "test": split([2, 6])}, {})
    names = ["taobao", "amazon", "taxi", "stackoverflow"]
    df = stats.hawkes_attention_table1({n: d for n in names})
    assert set(map(tuple, df[KEY].values)) == set(map(tuple, published("hawkes_attention", "table1")[KEY].values))
    taxi = df[df.row == "Taxi"].set_index("metric")["mean"]
    assert taxi["n_event_types"] == 10 and taxi["event_tokens_train"] == 8 and taxi["event_tokens_valid"] == 4
    assert taxi["event_tokens_test"] == 8 and taxi["seq_length_min"] == 2 and taxi["seq_length_max"] == 6
    assert taxi["seq_length_mean"] == pytest.approx(4.0)
