"""Negative samplers: DyGLib's candidate sets written out with Python sets (as DyGLib does), its random
stream, the fallback to random pairs, and deterministic evaluation."""

from __future__ import annotations

import numpy as np
import pytest

from timerepro.data.ctdg import CTDGData, link_prediction_split
from timerepro.graphs.negatives import NegativeEdgeSampler, dyglib_eval_samplers, train_sampler


def toy_graph(n_src=12, n_dst=8, n_edges=1500, seed=0):
    """Bipartite, chronological, with recurring pairs (so historical candidates exist)."""
    rng = np.random.default_rng(seed)
    src = rng.integers(1, n_src + 1, n_edges)
    dst = rng.integers(n_src + 1, n_src + n_dst + 1, n_edges)
    ts = np.sort(rng.integers(0, 600, n_edges)).astype(float)
    return src, dst, ts


def edges_between(src, dst, ts, start, end):
    """DyGLib's get_unique_edges_between_start_end_time: both ends inclusive."""
    return {(int(s), int(d)) for s, d, t in zip(src, dst, ts) if start <= t <= end}


def batches(ts, first, size=200):
    for i in range(first, len(ts), size):
        yield slice(i, min(i + size, len(ts)))


def test_random_negatives_are_dyglibs_draws():
    src, dst, ts = toy_graph()
    sampler = NegativeEdgeSampler(src, dst, seed=2)
    neg_src, neg_dst = sampler.sample(50)
    rs = np.random.RandomState(2)  # DyGLib: randint over unique sources, then over unique destinations
    assert neg_src.tolist() == np.unique(src)[rs.randint(0, len(np.unique(src)), 50)].tolist()
    assert neg_dst.tolist() == np.unique(dst)[rs.randint(0, len(np.unique(dst)), 50)].tolist()
    # evaluation call: sources kept, destinations from the same stream (sources drawn and dropped)
    sampler.reset()
    b_src, b_dst = src[:30], dst[:30]
    e_src, e_dst = sampler.sample_for_batch(b_src, b_dst, ts[:30])
    rs = np.random.RandomState(2)
    rs.randint(0, len(np.unique(src)), 30)
    assert e_src.tolist() == b_src.tolist()
    assert e_dst.tolist() == np.unique(dst)[rs.randint(0, len(np.unique(dst)), 30)].tolist()


@pytest.mark.parametrize("strategy", ["historical", "inductive"])
def test_candidates_equal_dyglibs_set_arithmetic(strategy):
    src, dst, ts = toy_graph()
    last_observed = float(ts[1000])
    sampler = NegativeEdgeSampler(src, dst, ts, strategy=strategy, last_observed_time=last_observed, seed=0)
    observed = edges_between(src, dst, ts, ts.min(), last_observed)
    for sl in batches(ts, 900):
        start, end = ts[sl][0], ts[sl][-1]
        expected = edges_between(src, dst, ts, ts.min(), start) - edges_between(src, dst, ts, start, end)
        if strategy == "inductive":
            expected -= observed
        c_src, c_dst = sampler.candidates(start, end)
        assert set(zip(c_src.tolist(), c_dst.tolist())) == expected


def test_historical_negative_was_a_past_pair_and_is_absent_from_the_batch():
    src, dst, ts = toy_graph(n_src=40, n_dst=30, n_edges=3000)
    sampler = NegativeEdgeSampler(src, dst, ts, strategy="historical", seed=0)
    n_historical = 0
    for sl in batches(ts, 1000):
        b_src, b_dst, b_ts = src[sl], dst[sl], ts[sl]
        assert len(sampler.candidate_codes(b_ts[0], b_ts[-1])) >= len(b_src)  # no random top-up here
        neg_src, neg_dst = sampler.sample_for_batch(b_src, b_dst, b_ts)
        assert len(neg_src) == len(b_src)
        past = edges_between(src[: sl.start], dst[: sl.start], ts[: sl.start], -np.inf, np.inf)
        batch_pairs = set(zip(b_src.tolist(), b_dst.tolist()))
        for pair in zip(neg_src.tolist(), neg_dst.tolist()):
            assert pair not in batch_pairs
            assert pair in past
            n_historical += 1
        # strictly earlier than the batch's first time
        seen_before = edges_between(src, dst, ts, -np.inf, np.nextafter(b_ts[0], -np.inf))
        assert set(zip(neg_src.tolist(), neg_dst.tolist())) <= seen_before
    assert n_historical > 0


@pytest.mark.parametrize("n_src, n_dst, train_edges, enough", [(30, 20, 2000, False), (60, 40, 300, True)])
def test_inductive_negatives_come_only_from_edges_unseen_in_training(n_src, n_dst, train_edges, enough):
    src, dst, ts = toy_graph(n_src=n_src, n_dst=n_dst, n_edges=3000)
    train_end = float(ts[train_edges])
    sampler = NegativeEdgeSampler(src, dst, ts, strategy="inductive", last_observed_time=train_end, seed=3)
    train_pairs = edges_between(src, dst, ts, -np.inf, train_end)
    drawn_inductive = 0
    for sl in batches(ts, 2400):
        b_src, b_dst, b_ts = src[sl], dst[sl], ts[sl]
        cands = set(zip(*(c.tolist() for c in sampler.candidates(b_ts[0], b_ts[-1]))))
        neg = list(zip(*(x.tolist() for x in sampler.sample_for_batch(b_src, b_dst, b_ts))))
        assert len(neg) == len(b_src)
        batch_pairs = set(zip(b_src.tolist(), b_dst.tolist()))
        assert not (set(neg) & batch_pairs)
        from_candidates = [p for p in neg if p in cands]
        assert all(p not in train_pairs for p in cands)
        assert (len(cands) >= len(b_src)) == enough  # both branches are exercised across the cases
        if len(cands) >= len(b_src):
            assert len(from_candidates) == len(neg)  # enough: only inductive pairs
        else:
            assert cands <= set(neg)  # too few: all of them, topped up with random pairs
        drawn_inductive += len(from_candidates)
    assert drawn_inductive > 0


def test_fallback_tops_up_with_random_pairs_outside_the_batch():
    # 3 x 2 possible pairs; history holds only (1, 4)
    src, dst, ts = np.array([1, 1, 2, 3]), np.array([4, 5, 4, 5]), np.array([1.0, 5.0, 5.0, 6.0])
    sampler = NegativeEdgeSampler(src, dst, ts, strategy="historical", seed=0)
    neg_src, neg_dst = sampler.sample(4, src[1:3], dst[1:3], 5.0, 5.0)
    pairs = list(zip(neg_src.tolist(), neg_dst.tolist()))
    assert pairs[-1] == (1, 4)  # DyGLib's order: random ones first, then every candidate
    # 6 pairs - 2 in the batch = 4 allowed; 3 needed: drawn without replacement
    assert len(set(pairs[:3])) == 3 and not set(pairs[:3]) & {(1, 5), (2, 4)}
    # 10 needed > 4 allowed: with replacement, never a batch pair
    neg_src, neg_dst = sampler.sample(11, src[1:3], dst[1:3], 5.0, 5.0)
    assert not set(zip(neg_src.tolist(), neg_dst.tolist())) & {(1, 5), (2, 4)}
    assert neg_src.dtype == np.int64 and len(neg_src) == 11


def test_random_pairs_outside_batch_are_uniform_without_replacement_on_a_large_space():
    rng = np.random.default_rng(1)
    src, dst = rng.integers(1, 3001, 5000), rng.integers(3001, 6001, 5000)
    sampler = NegativeEdgeSampler(src, dst, np.arange(5000.0), strategy="historical", seed=5)
    r_src, r_dst = sampler._random_outside_batch(200, src[:200], dst[:200])
    pairs = set(zip(r_src.tolist(), r_dst.tolist()))
    assert len(pairs) == 200 and not pairs & set(zip(src[:200].tolist(), dst[:200].tolist()))
    assert set(r_src.tolist()) <= set(src.tolist()) and set(r_dst.tolist()) <= set(dst.tolist())


@pytest.mark.parametrize("strategy", ["random", "historical", "inductive"])
def test_evaluation_sampler_is_deterministic(strategy):
    src, dst, ts = toy_graph()

    def run(sampler):
        out = []
        for sl in batches(ts, 1000):
            out.append(np.stack(sampler.sample_for_batch(src[sl], dst[sl], ts[sl])))
        return np.concatenate(out, axis=1)

    a = NegativeEdgeSampler(src, dst, ts, strategy=strategy, last_observed_time=float(ts[900]), seed=0)
    first = run(a)
    a.reset()
    assert np.array_equal(run(a), first)  # same negatives at every evaluation
    b = NegativeEdgeSampler(src, dst, ts, strategy=strategy, last_observed_time=float(ts[900]), seed=0)
    assert np.array_equal(run(b), first)
    c = NegativeEdgeSampler(src, dst, ts, strategy=strategy, last_observed_time=float(ts[900]), seed=1)
    assert not np.array_equal(run(c), first)


def test_dyglib_sampler_set_follows_the_split():
    src, dst, ts = toy_graph(n_src=40, n_dst=30, n_edges=2000)
    data = CTDGData(name="toy", src=src, dst=dst, ts=ts, edge_ids=np.arange(1, 2001), labels=np.zeros(2000),
                    edge_feat=np.zeros((2001, 172)), node_feat=np.zeros((71, 172)), manifest={})
    split = link_prediction_split(data)
    samplers = dyglib_eval_samplers(data, split, "inductive")
    seeds = {"val": 0, "new_node_val": 1, "test": 2, "new_node_test": 3}
    assert {"val", "test"} <= set(samplers) and all(samplers[k].seed == seeds[k] for k in samplers)
    assert samplers["val"].last_observed_time == ts[split.train][-1]
    assert samplers["test"].last_observed_time == ts[split.val][-1]
    assert set(samplers["new_node_test"].unique_dst) <= set(dst[split.new_node_test].tolist())
    rnd = dyglib_eval_samplers(data, split, "random")
    assert rnd["test"].strategy == "random" and rnd["test"].seed == 2
    tr = train_sampler(data, split, seed=7)
    assert set(tr.unique_dst.tolist()) == set(dst[split.train].tolist())


def test_historical_and_inductive_need_a_seed_and_times():
    src, dst, ts = toy_graph()
    with pytest.raises(ValueError):
        NegativeEdgeSampler(src, dst, ts, strategy="historical")
    with pytest.raises(ValueError):
        NegativeEdgeSampler(src, dst, strategy="historical", seed=0)
    with pytest.raises(ValueError):
        NegativeEdgeSampler(src, dst, ts, strategy="inductive", seed=0)
    with pytest.raises(ValueError):
        NegativeEdgeSampler(src, dst, strategy="nonsense")
