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


def _repeat_and_recency(df) -> tuple[float, float]:
    """Share of edges whose (src, dst) pair came before, and share of those that go to the source's most recent
    partner among sources with at least two past partners."""
    seen, last, repeats, recent, eligible = set(), {}, 0, 0, 0
    for u, v in zip(df.u.tolist(), df.i.tolist()):
        if (u, v) in seen:
            repeats += 1
            past = last.setdefault(u, [])
            if len(past) >= 2:
                eligible += 1
                recent += past[-1] == v
        seen.add((u, v))
        past = last.setdefault(u, [])
        if v in past:
            past.remove(v)
        past.append(v)
    return repeats / len(df), recent / max(eligible, 1)


@pytest.mark.parametrize("bipartite", [True, False])
def test_graph_standin_repeats_recent_partners_in_bursts(bipartite):
    df = standins.synth_graph(np.random.default_rng(3), 3000, 100, bipartite, 1)
    assert len(df) == 3000 and df.ts.is_monotonic_increasing
    repeat, recency = _repeat_and_recency(df)
    assert repeat > 0.7  # most interactions repeat an earlier pair (EdgeBank's signal)
    assert recency > 0.5  # ... and mostly the source's most recent partner (weight 1/k for the k-th most recent)
    gaps = np.concatenate([np.diff(g.to_numpy()) for _, g in df.groupby("u").ts if len(g) > 2])
    assert gaps.std() / gaps.mean() > 2  # bursts: far more dispersed than a Poisson stream (coefficient 1)
    assert np.median(gaps) < 0.05 * gaps.mean()  # most gaps are inside a session
    # every source joins early (its first session), so new nodes after training are mostly DyGLib's held-out ones
    assert (df.groupby("u").ts.min() < np.quantile(df.ts, 0.25)).all()
    if not bipartite:  # replies: a large share of edges u -> v is answered by v -> u within the hour
        nxt = {(u, v): t for u, v, t in zip(df.u, df.i, df.ts)}  # last time of each directed pair
        answered = [(v, u) in nxt and 0 < nxt[(v, u)] - t < 3600 for u, v, t in zip(df.u, df.i, df.ts)]
        assert np.mean(answered) > 0.2


def test_graph_standin_features_say_who_the_endpoints_are():
    """Wide edge features (Wikipedia's 172) are a latent vector of the destination plus one of the source plus
    noise: two edges to the same destination are alike, edges to different destinations are not."""
    df = standins.synth_graph(np.random.default_rng(4), 2000, 60, True, 172)
    f = df.filter(like="f").to_numpy()
    f = f / np.linalg.norm(f, axis=1, keepdims=True)
    same = df.i.to_numpy()[:, None] == df.i.to_numpy()[None, :]
    cos = f @ f.T
    off_diag = ~np.eye(len(df), dtype=bool)
    assert cos[same & off_diag].mean() > 0.4 and abs(cos[~same].mean()) < 0.1
    # weighted sets (counts, votes): positive weights that grow with the pair's past interactions
    w = standins.synth_graph(np.random.default_rng(4), 2000, 60, False, 1, clock="steps")
    assert (w.f0 > 0).all()
    first = ~w.duplicated(["u", "i"])
    assert w.f0[first].mean() < w.f0[~first].mean()
    assert (standins.synth_graph(np.random.default_rng(4), 300, 30, False, 1).f0 == 0).all()  # UCI: no features


# the laptop stand-ins; paper-size ones (real sizes, GBs: `timerepro rehearse`) are checked in test_paper_standins
@pytest.mark.parametrize("scale", [s for s in standins.SCALES if s != "paper"])
def test_every_graph_standin_goes_through_dyglib_evaluation(scale, data_root):
    """Each graph stand-in trains on at least one batch and every evaluation sampler (random, historical,
    inductive; transductive and new-node parts) can draw negatives for every batch (a part whose every
    source-destination pair is in one batch has none: DyGLib would loop forever)."""
    from timerepro.data.ctdg import link_prediction_split, load_processed
    from timerepro.graphs.negatives import dyglib_eval_samplers

    for name in [n for n in NAMES if LOCK.get(n).family == "ctdg" and not LOCK.get(n).options.get("alternative_to")]:
        data = load_processed(prepare(name, standin=scale))
        split = link_prediction_split(data)
        assert split.train.sum() >= 50 and split.test.sum() >= 10, name
        for strategy in ("random", "historical", "inductive"):
            for part, sampler in dyglib_eval_samplers(data, split, strategy).items():
                idx = np.flatnonzero(getattr(split, part))
                sampler.reset()
                for start in range(0, len(idx), 200):
                    b = idx[start:start + 200]
                    neg_src, neg_dst = sampler.sample_for_batch(data.src[b], data.dst[b], data.ts[b])
                    assert len(neg_dst) == len(b), (name, strategy, part)


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
        standins.write_standin(LOCK.get("uci"), "/tmp/never", "huge")  # smoke, offline and paper are the scales
