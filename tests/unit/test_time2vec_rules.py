"""time2vec's claim rules on frames built to make each hold and fail (issue 25): the paper prints no cell (its
results are figures). CiteULike cannot be had: c01 and c10 judge the other datasets and say so; c03 and c09 are
never here; c04, c05 and c08 read their Event-MNIST panel only, so Figure 5's CiteULike stand-in withholds none.
"""

from __future__ import annotations

import pandas as pd

from timerepro import registry
from timerepro.report import claims
from timerepro.report.time2vec import rules
from timerepro.report.time2vec.curves import FIG5_PANELS

HOLDS, FAILS, PENDING = claims.HOLDS, claims.FAILS, claims.PENDING
OBTAINABLE = ("Event-MNIST", "N-TIDIGITS18", "Stack Overflow (SOF)", "Last.FM")


def frame(rows: list[tuple], kind: str = "real") -> pd.DataFrame:
    """(artifact, row_group, row, column, metric, mean[, std, note]) -> an aggregated frame at paper scale."""
    out = [dict(zip(("artifact", "row_group", "row", "column", "metric", "mean", "std", "note"), (*r, 0.0, "")[:8]))
           for r in rows]
    return pd.DataFrame(out).assign(n_runs=5, data_kind=kind, scale="paper")


def fig1(t2v: dict, t: float = 0.80, datasets=OBTAINABLE) -> pd.DataFrame:
    return frame([("fig1", ds, row, "final", "accuracy", v) for ds in datasets
                  for row, v in (("LSTM+T", t), ("LSTM+Time2Vec", t2v.get(ds, 0.85)))])


def test_c01_judges_the_four_obtainable_datasets():
    verdict, detail, read = rules.t2v_improves_lstm(fig1({}))
    assert verdict == HOLDS and "judged on 4 of the paper's 5 datasets (CiteULike cannot be had)" in detail
    assert set(read["row_group"]) == set(OBTAINABLE)
    assert rules.t2v_improves_lstm(fig1({"Last.FM": 0.70}))[0] == FAILS  # deteriorates on one dataset
    assert rules.t2v_improves_lstm(fig1({d: 0.80 for d in OBTAINABLE[1:]}))[0] == FAILS  # strictly better on 1 of 4 only
    assert rules.t2v_improves_lstm(fig1({}, datasets=OBTAINABLE[:3]))[0] == PENDING  # Last.FM missing
    # a CiteULike stand-in beside the four real datasets is not read, so nothing is withheld
    stand_in = frame([("fig1", "CiteULike", r, "final", "Recall@10", 0.1) for r in ("LSTM+T", "LSTM+Time2Vec")], "standin")
    claim = next(c for c in registry.load().papers["time2vec"]["claims"] if c["id"] == "c01")
    out = claims.judge({**claim, "paper": "time2vec"}, pd.concat([fig1({}), stand_in]))
    assert out["verdict"] == HOLDS and out["n_cells"] == 8 and {c["data_kind"] for c in out["cells"]} == {"real"}


def test_c02_mean_and_variance():
    df = frame([("fig1", "N-TIDIGITS18", "LSTM+T", "final", "accuracy", 0.80, 0.05),
                ("fig1", "N-TIDIGITS18", "LSTM+Time2Vec", "final", "accuracy", 0.85, 0.01)])
    assert rules.t2v_tidigits_mean_and_variance(df)[0] == HOLDS
    df.loc[df["row"] == "LSTM+Time2Vec", "std"] = 0.09
    assert rules.t2v_tidigits_mean_and_variance(df)[0] == FAILS


def fig5(a: dict, b: dict, kind_d: str = "standin") -> pd.DataFrame:
    rows = [("fig5", FIG5_PANELS["a"], k, "final", "accuracy", v) for k, v in a.items()]
    rows += [("fig5", FIG5_PANELS["b"], k, "final", "accuracy", v) for k, v in b.items()]
    d = frame([("fig5", FIG5_PANELS["d"], k, "final", "Recall@10", 0.3) for k in ("with linear term", "without linear term")],
              kind_d)
    return pd.concat([frame(rows), d])


ACT = {"sin": 0.95, "mod": 0.93, "triangle": 0.92, "sigmoid": 0.90, "tanh": 0.89, "relu": 0.88}
FREQ = {"learned": 0.94, "equally spaced": 0.90, "positional": 0.91}


def test_fig5_rules_read_their_event_mnist_panel_only():
    reg = registry.load()
    for cid, rule, bad in (("c04", rules.t2v_periodic_activations_best, fig5(ACT | {"relu": 0.99}, FREQ)),
                           ("c05", rules.t2v_learned_frequencies_best, fig5(ACT, FREQ | {"positional": 0.97}))):
        assert rule(fig5(ACT, FREQ))[0] == HOLDS and rule(bad)[0] == FAILS
        claim = next(c for c in reg.papers["time2vec"]["claims"] if c["id"] == cid)
        out = claims.judge({**claim, "paper": "time2vec"}, fig5(ACT, FREQ))  # panel (d) on a CiteULike stand-in
        assert out["verdict"] == HOLDS, out["detail"]
        assert {c["data_kind"] for c in out["cells"]} == {"real"}
    assert rules.t2v_periodic_activations_best(fig5({k: v for k, v in ACT.items() if k != "mod"}, FREQ))[0] == PENDING


def hist(share: float, top: str) -> pd.DataFrame:
    return frame([("fig5", "Event-MNIST", "LSTM+Time2Vec", "panel c histogram", "share_of_frequencies_in_(0,1)", share),
                  ("fig5", "Event-MNIST", "LSTM+Time2Vec", "panel c histogram", "min_learned_frequency", 0.03),
                  ("fig5", "Event-MNIST", "LSTM+Time2Vec", "panel c histogram", "two_most_populated_bins", 0.35, 0.0,
                   f"centres: {top}")])


def test_c08_histogram():
    assert rules.t2v_mnist_frequency_histogram(hist(1.0, "0.85, 0.35"))[0] == HOLDS
    assert rules.t2v_mnist_frequency_histogram(hist(1.0, "0.15, 0.35"))[0] == FAILS
    assert rules.t2v_mnist_frequency_histogram(hist(0.9, "0.85, 0.35"))[0] == FAILS


def sizes(art: str, group: str, base: str, values: dict) -> list[tuple]:
    return [(art, group, f"{base}+Time2Vec ({k}+1)", "final", "accuracy", v, 0.001) for k, v in values.items()]


def test_c10_best_size_without_citeulike():
    good = sizes("fig7", "Event-MNIST", "LSTM", {16: 0.90, 32: 0.91, 64: 0.93}) + \
        sizes("fig13", "Last.FM", "TLSTM3", {16: 0.30, 32: 0.28, 64: 0.27})
    cite = sizes("fig14", "CiteULike", "TLSTM3", {16: 0.1, 32: 0.2, 64: 0.3})  # would refute TLSTM3's 16; not read
    verdict, detail, read = rules.t2v_best_size(pd.concat([frame(good), frame(cite, "standin")]))
    assert verdict == HOLDS and "CiteULike panels left out" in detail and "CiteULike" not in set(read["row_group"])
    bad = good[:3] + sizes("fig13", "Last.FM", "TLSTM3", {16: 0.25, 32: 0.28, 64: 0.27})
    assert rules.t2v_best_size(frame(bad))[0] == FAILS


def test_c11_binned_times_only():
    rows = lambda t2v: frame([("fig6", "N-TIDIGITS18 (event-binned, times only)", r, "final", "accuracy", v)  # noqa: E731
                              for r, v in (("LSTM+T", 0.5), ("LSTM+Time2Vec", t2v))])
    assert rules.t2v_binned_times_only(rows(0.6))[0] == HOLDS
    assert rules.t2v_binned_times_only(rows(0.4))[0] == FAILS
