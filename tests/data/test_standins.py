"""Stand-ins: every obtainable dataset's smoke stand-in is written in the upstream format and goes through
the real preprocessing; manifests say so; generation is seeded; planted structure is present."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from timerepro.data import standins, tpp
from timerepro.data.lock import load_lock
from timerepro.data.prepare import prepare, processed_path

LOCK = load_lock()
NAMES = [n for n, d in LOCK.datasets.items() if d.status != "unobtainable"]


@pytest.mark.parametrize("name", NAMES)
def test_smoke_standin_prepares_and_is_labelled(name, data_root):
    out = prepare(name, standin="smoke")
    assert out == processed_path(name, "smoke") and out.parent.parent == data_root / "standin" / "smoke"
    m = json.loads((out / "manifest.json").read_text())
    assert m["standin"] is True and m["label"].startswith("synthetic stand-in for") and "(not the real data)" in m["label"]
    assert all(len(s["sha256"]) == 64 for s in m["sources"])
    assert not (data_root / "processed").exists()  # never mixed with real data


def test_standins_are_seeded_and_skipped_when_up_to_date(data_root):
    a = prepare("uci", standin="smoke")
    first = (a / "manifest.json").read_text()
    prepare("uci", standin="smoke")
    assert (a / "manifest.json").read_text() == first  # up to date: not redone
    raw = data_root / "standin" / "smoke" / "raw" / "uci" / "uci.zip"
    before = raw.read_bytes()
    prepare("uci", standin="smoke", force=True)
    assert raw.read_bytes() == before


def test_standin_made_by_an_older_generator_is_regenerated(data_root):
    import os

    prepare("uci", standin="smoke")
    raw_dir = data_root / "standin" / "smoke" / "raw" / "uci"
    raw = raw_dir / "uci.zip"
    os.utime(raw, ns=(1, 1))  # a recognisable stamp: untouched files keep it
    prepare("uci", standin="smoke")
    assert raw.stat().st_mtime_ns == 1  # made by the current generator: the cache is trusted
    (raw_dir / standins.MARKER).write_text("version=1 seed=0")
    prepare("uci", standin="smoke")
    assert raw.stat().st_mtime_ns != 1  # made by an older generator: regenerated
    assert (raw_dir / standins.MARKER).read_text() == standins.generator_stamp(0)


def test_reddit_standin_is_deflate64_like_upstream(data_root):
    prepare("reddit", standin="smoke")
    raw = data_root / "standin" / "smoke" / "raw" / "reddit" / "reddit.zip"
    with zipfile.ZipFile(raw) as zf:
        assert {i.compress_type for i in zf.infolist()} == {9}
        assert "reddit/reddit.csv" in zf.namelist() and "reddit/ml_reddit.csv" in zf.namelist()


def test_uci_standin_ships_only_ml_files_like_upstream(data_root):
    prepare("uci", standin="smoke")
    with zipfile.ZipFile(data_root / "standin" / "smoke" / "raw" / "uci" / "uci.zip") as zf:
        assert sorted(zf.namelist()) == ["uci/ml_uci.csv", "uci/ml_uci.npy", "uci/ml_uci_node.npy"]


def test_graph_standin_has_recurring_periodic_pairs():
    df = standins.synth_graph(np.random.default_rng(3), 3000, 100, True, 1)
    assert len(df) == 3000 and df.ts.is_monotonic_increasing
    src, dst, ts = df.u.to_numpy(), df.i.to_numpy(), df.ts.to_numpy()
    pairs, counts = np.unique(np.stack([src, dst], 1), axis=0, return_counts=True)
    top = pairs[np.argmax(counts)]
    t = ts[(src == top[0]) & (dst == top[1])]
    gaps = np.diff(t)
    # a planted pair: many events whose gaps cluster around one period (low relative spread of the median gaps)
    assert counts.max() >= 20 and np.median(np.abs(gaps - np.median(gaps))) < 0.1 * np.median(gaps)


def test_hawkes_simulation_is_self_exciting():
    rng = np.random.default_rng(0)
    mu, alpha, beta = np.array([0.2]), np.array([[0.8]]), 2.0
    t, k = standins.simulate_hawkes(rng, mu, alpha, beta, 4000)
    assert np.all(np.diff(t) > 0) and set(k.tolist()) == {0}
    rate = len(t) / t[-1]
    assert rate == pytest.approx(0.2 / (1 - 0.8), rel=0.2)  # stationary rate mu / (1 - branching)
    gaps = np.diff(t)
    assert np.std(gaps) / np.mean(gaps) > 1.2  # clustered: over-dispersed vs Poisson (CV = 1)


def test_tpp_standin_is_valid_easytpp_json(data_root):
    prepare("taxi", standin="smoke")
    recs = json.loads((data_root / "standin" / "smoke" / "raw" / "taxi" / "train.json").read_text())
    for r in recs:
        assert r["dim_process"] == 10 and r["seq_len"] == len(r["type_event"]) and r["time_since_last_event"][0] == 0.0
        assert r["time_since_start"][0] == 0.0 and all(0 <= x < 10 for x in r["type_event"])
    d = tpp.load_processed(processed_path("taxi", "smoke"))
    assert len(d.splits["train"]) == standins.TPP_SIZE["smoke"]["train"]


def test_unknown_scale_is_refused():
    with pytest.raises(ValueError, match="scale"):
        standins.write_standin(LOCK.get("uci"), "/tmp/never", "paper")
