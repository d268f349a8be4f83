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


def _prepare_paper(name, tmp_path, monkeypatch, lock=None):
    from timerepro.data.prepare import prepare

    monkeypatch.setenv("TIMEREPRO_DATA", str(tmp_path))
    return prepare(name, standin="paper", lock=lock, progress=False)


def _labelled(manifest: dict) -> bool:
    return manifest["standin"] is True and manifest["label"].startswith("synthetic stand-in for")


def test_every_dataset_of_the_papers_has_a_paper_size():
    """No stand-in of the `paper` scale falls back to a smaller scale's size."""
    sized = {**{n: "graph" for n in standins.PAPER_GRAPHS}, **{n: "tpp" for n in standins.PAPER_TPP},
             **{n: "next item" for n in standins.PAPER_NEXT_ITEM}, "event_mnist": "mnist", "ntidigits18": "hdf5"}
    lock = load_lock()
    missing = [d.name for d in lock.datasets.values()
               if d.family in ("ctdg", "tpp", "time2vec") and d.name not in sized]
    assert missing == []
    assert standins.MNIST_SIZE["paper"] == (60000, 10000) and standins.NTIDIGITS_SIZE["paper"] == (2464, 2486)


@pytest.mark.parametrize("name", ["jodie_wikipedia", "jodie_reddit", "jodie_mooc", "jodie_lastfm"])
def test_a_jodie_paper_stand_in_is_the_bare_csv_at_its_size(name, tmp_path, monkeypatch):
    """The paper generator at a small size: JODIE's bare CSV (no zip) with the set's feature width, through
    DyGLib's preprocessing, every node and edge kept, bipartite ids after the users, exact timestamps."""
    size = dict(nodes=60, sources=45, edges=3000, span=30 * standins.DAY)
    monkeypatch.setitem(standins.PAPER_GRAPHS, name, size)
    folder = _prepare_paper(name, tmp_path, monkeypatch)
    data = load_processed(folder)
    up = load_lock().get(name).upstream_name
    raw = tmp_path / "standin" / "paper" / "raw" / name / f"{up}.csv"
    assert raw.read_text().splitlines()[0] == "user_id,item_id,timestamp,state_label,comma_separated_list_of_features"
    width = standins.EDGE_FEAT_DIM.get(up, 1)
    assert len(data.src) == 3000 and data.manifest["rows"]["nodes"] == 60 and _labelled(data.manifest)
    assert data.manifest["rows"]["edge_feat_dim"] == width
    assert data.src.max() <= 45 < data.dst.min()  # users 1..45, items after them
    assert len(np.unique(data.ts)) > 0.95 * 3000
    assert np.mean(data.ts != np.round(data.ts)) > 0.5  # tenths of a second kept (not six significant digits)
    if width > 1:
        edge_feat = np.load(folder / f"ml_{up}.npy")
        assert edge_feat.shape == (3001, width) and len(np.unique(edge_feat[1:], axis=0)) > 100


def test_wide_features_are_rows_of_one_table_written_exactly():
    rng = np.random.default_rng(0)
    df, feats = standins.paper_graph(rng, dict(nodes=50, sources=40, edges=500, span=1e6), True, 172)
    assert feats.table.shape == (standins.FEATURE_ROWS, 172) and feats.rows.shape == (500,)
    assert feats.dense().shape == (500, 172)


@pytest.mark.parametrize("name", ["lastfm_1k", "citeulike"])
def test_a_next_item_paper_stand_in_has_its_users_and_vocabulary(name, tmp_path, monkeypatch):
    """At a small size: one sequence per user, the vocabulary cut keeps exactly the `vocab` items (the rare ones
    rank below them), sequences cut to max_seq_len."""
    from timerepro.data.tpp import load_processed as load_sequences

    size = {**standins.PAPER_NEXT_ITEM[name], "users": 40, "vocab": 60, "events": 12_000, "rare": 300}
    monkeypatch.setitem(standins.PAPER_NEXT_ITEM, name, size)
    lock = load_lock()
    monkeypatch.setitem(lock.get(name).options, "vocab", 60)  # the cut at the small size's vocabulary
    data = load_sequences(_prepare_paper(name, tmp_path, monkeypatch, lock))
    seqs = list(data.splits.values())
    assert sum(len(s) for s in seqs) == 40 and _labelled(data.manifest)
    assert data.dim_process == 60 and data.manifest["n_items_before_vocab_cut"] > 60
    lengths = np.concatenate([s.lengths for s in seqs])
    assert lengths.max() == 200 and lengths.min() > 0  # the busiest users' sequences are cut to max_seq_len


def test_event_mnist_paper_stand_in_has_the_real_event_counts(tmp_path, monkeypatch):
    from timerepro.data.tpp import load_processed as load_sequences

    monkeypatch.setitem(standins.MNIST_SIZE, "paper", (400, 100))
    data = load_sequences(_prepare_paper("event_mnist", tmp_path, monkeypatch))
    assert [len(data.splits[s]) for s in ("train", "test")] == [400, 100] and _labelled(data.manifest)
    counts = np.concatenate([data.splits[s].lengths for s in ("train", "test")])
    q = standins.MNIST_EVENT_QUANTILES
    assert q["events"][0] <= counts.min() and counts.max() <= q["events"][-1]
    assert np.median(counts) == pytest.approx(q["events"][q["levels"].index(0.5)], rel=0.1)


def test_mnist_event_quantiles_are_the_real_ones():
    """MNIST_EVENT_QUANTILES recomputed from the real MNIST (the pinned package copy), when it is installed."""
    from timerepro.data import time2vec
    from timerepro.data.package_source import PackageSourceError, member_path, read_member

    spec = load_lock().get("event_mnist").options["package_source"]
    try:
        raw = read_member(member_path(spec), spec)
    except PackageSourceError as exc:
        pytest.skip(str(exc))
    files = time2vec.mnist_idx_from_pickle(time2vec.load_mnist_pickle(raw))
    images = np.concatenate([np.frombuffer(files[f"{p}-images-idx3-ubyte"], np.uint8, offset=16).reshape(-1, 784)
                             for p in ("train", "t10k")])
    counts = (images.astype(np.float32) / 255.0 > 0.9).sum(axis=1)  # events per image, as time2vec.event_mnist
    q = standins.MNIST_EVENT_QUANTILES
    assert len(counts) == 70000
    assert list(np.quantile(counts, q["levels"], method="lower")) == list(q["events"])


def test_ntidigits_paper_stand_in_is_single_digit_utterances(tmp_path, monkeypatch):
    from timerepro.data.tpp import load_processed as load_sequences

    monkeypatch.setitem(standins.NTIDIGITS_SIZE, "paper", (33, 22))
    monkeypatch.setattr(standins, "NTIDIGITS_EVENTS", {**standins.NTIDIGITS_EVENTS, "median": 300, "min": 50})
    data = load_sequences(_prepare_paper("ntidigits18", tmp_path, monkeypatch))
    assert [len(data.splits[s]) for s in ("train", "test")] == [33, 22] and _labelled(data.manifest)
    lengths = np.concatenate([data.splits[s].lengths for s in ("train", "test")])
    assert lengths.min() >= 50 and np.median(lengths) == pytest.approx(300, rel=0.4)
    assert data.dim_process == 64 and all(set(np.unique(data.splits[s].label)) <= set(range(11)) for s in data.splits)
    t = data.splits["train"]
    first = t.time_since_start[t.seq_ptr[0]:t.seq_ptr[1]]
    assert np.all(np.diff(first) >= 0) and first[-1] <= standins.NTIDIGITS_EVENTS["seconds"][1]
