"""linear_time's link-prediction artifacts: model selection on validation AP, the paper's win rule, claims on
reproduced cells (shared pieces in report/link_prediction.py, the paper's in report/linear_time/)."""

import numpy as np
import pandas as pd
import pytest

from timerepro.report import aggregate, published
from timerepro.report import link_prediction as lp
from timerepro.report.linear_time import ap_tables, attention_maps, costs, dimensions, node_classification, statistics
from timerepro.report.claims import FAILS, HOLDS, PENDING


def _rec(model, encoder, dataset, dropout, seed, val, test, hist=0.5, params=1000, epoch_time=1.0, exp="lp_tgat", **extra):
    return {"config": {"model": model, "encoder": encoder, "dataset": dataset, "dropout": dropout, "seed": seed,
                       "experiment": exp, **extra},
            "metrics": {"val_transductive_random_ap": val, "test_transductive_random_ap": test,
                        "val_transductive_historical_ap": hist, "test_transductive_historical_ap": hist,
                        "n_parameters": params, "epoch_time_s": epoch_time, "peak_rss_mb": 2048, "peak_gpu_memory_mb": None}}


def test_ties_at_two_decimals_win_together():
    assert lp.winners({"Linear": 95.414, "Sinusoidal": 95.405, "Sinusoidal-scale": 90.0}) == {"Linear", "Sinusoidal"}
    assert lp.winners({"Linear": 95.42, "Sinusoidal": 95.41}) == {"Linear"}


def test_selection_keeps_the_best_validation_configuration_not_the_best_test():
    records = [_rec("tgat", "linear", "uci", 0.1, s, val=0.90, test=0.70) for s in range(2)]
    records += [_rec("tgat", "linear", "uci", 0.3, s, val=0.80, test=0.99) for s in range(2)]
    chosen = lp.select_by_validation(records, "random")
    assert {r["config"]["dropout"] for r in chosen[("tgat", "linear", "uci")]} == {0.1}
    rows = ap_tables.lp_ap_random(records)
    cell = [r for r in rows if r["metric"] == "AP_random_NS_test"][0]
    assert cell["mean"] == pytest.approx(70.0) and cell["n_runs"] == 2 and "dropout=0.1" in cell["note"]


def test_tables_read_the_ap_the_run_monitored_whole_split_or_batch_mean():
    """linear_time monitors the whole-split AP (authors' code, docs/fidelity.md item 1): selection and cells read
    `*_ap_whole`; a run that monitored DyGLib's batch mean (`ap`) is read on `*_ap`."""
    def rec(dropout, seed, val, test, val_whole, test_whole, monitor):
        r = _rec("tgat", "linear", "uci", dropout, seed, val=val, test=test, monitor_metric=monitor)
        r["metrics"] |= {"val_transductive_random_ap_whole": val_whole, "test_transductive_random_ap_whole": test_whole}
        return r
    for monitor, dropout, mean in (("ap_whole", 0.3, 60.0), ("ap", 0.1, 70.0)):
        records = [rec(0.1, s, 0.90, 0.70, 0.50, 0.50, monitor) for s in range(2)]
        records += [rec(0.3, s, 0.80, 0.99, 0.95, 0.60, monitor) for s in range(2)]
        cell = [r for r in ap_tables.lp_ap_random(records) if r["metric"] == "AP_random_NS_test"][0]
        assert cell["mean"] == pytest.approx(mean) and f"dropout={dropout}" in cell["note"], monitor


def test_linear_time_runs_use_the_authors_protocol_and_keep_the_papers_as_options():
    from timerepro import registry
    reg = registry.load()
    runs = [r.config for e in ("lp_tgat", "lp_dygformer", "lp_tgn") for r in reg.experiment_runs("linear_time", e, "paper")]
    assert {c["monitor_metric"] for c in runs} == {"ap_whole"} and {c["time_diff_statistic"] for c in runs} == {"per_query_mean"}
    tgat = [c for c in runs if c["model"] == "tgat"]
    assert {c["neighbor_sampling"] for c in tgat if c["dataset"] == "reddit"} == {"uniform"}
    assert {c["neighbor_sampling"] for c in tgat if c["dataset"] != "reddit"} == {"recent"}
    assert {str(c.get("encoder_options")) for c in runs if c["encoder"] == "sine_cosine"} == {"{'scale': False, 'phase': True}"}
    dyg = [c for c in runs if c["model"] == "dygformer"]
    assert {str(c.get("encoder_options")) for c in dyg if c["encoder"] == "linear"} == {"{'affine': False}"}
    assert all("encoder_options" not in c for c in runs if c["encoder"] in ("cosine", "cosine_scale"))
    assert all("encoder_options" not in c for c in runs if c["model"] == "tgat" and c["encoder"] == "linear")
    # every cell at the authors' selected hyperparameters (docs/fidelity.md table H), one configuration per cell
    cell = lambda model, enc, ds: {(c["dropout"], c.get("d_ch")) for c in runs + dyg
                                     if (c["model"], c["encoder"], c["dataset"], c["monitor_negatives"]) == (model, enc, ds, "random")}
    assert cell("tgat", "cosine", "wikipedia") == {(0.5, None)} and cell("tgat", "linear", "reddit") == {(0.3, None)}
    assert cell("dygformer", "cosine", "enron") == {(0.0, 50)} and cell("dygformer", "cosine", "reddit") == {(0.2, 50)}
    assert cell("dygformer", "linear", "wikipedia") == {(0.1, 30)}
    assert all(c["dropout"] == 0.1 for c in runs if c["dataset"] == "lastfm" and c["model"] != "tgn")
    # the paper's search stays a named option
    search = [r.config for r in reg.experiment_runs("linear_time", "lp_tgat_search", "paper")]
    assert {c["dropout"] for c in search if (c["encoder"], c["dataset"]) == ("cosine", "uci")} == {0.1, 0.3, 0.5}
    # the other papers keep DyGLib's batch mean and the paper's statistic (no key: the code default)
    others = [r.config for p in ("dyg_mamba", "swinit") for r in reg.runs("paper", paper=p) if r.config["task"] == "link_prediction"]
    assert others and {c["monitor_metric"] for c in others} <= {"ap", "auc", "loss"}
    assert not any("time_diff_statistic" in c or "encoder_options" in c for c in others)


def test_table2_reads_its_own_historical_select_runs_and_labels_the_cut_without_them():
    table1 = [_rec("tgat", "linear", "uci", 0.1, s, val=0.9, test=0.9, hist=0.40, monitor_negatives="random") for s in range(2)]
    own = [_rec("tgat", "linear", "uci", 0.3, s, val=0.5, test=0.5, hist=0.80, monitor_negatives="historical") for s in range(2)]
    cell = lambda recs, agg: [r for r in agg(recs) if r["metric"].startswith("AP_")][0]
    t2 = cell(table1 + own, ap_tables.lp_ap_historical)
    assert t2["mean"] == pytest.approx(80.0) and "dropout=0.3" in t2["note"] and "cut" not in t2["note"]
    t1 = cell(table1 + own, ap_tables.lp_ap_random)  # Table 1 never reads Table 2's runs
    assert t1["mean"] == pytest.approx(90.0) and "dropout=0.1" in t1["note"]
    cut = cell(table1, ap_tables.lp_ap_historical)
    assert cut["mean"] == pytest.approx(40.0) and "cut: runs monitored on random NS" in cut["note"]


def test_table2_has_its_own_runs_at_paper_scale_and_a_labelled_cut_below():
    from timerepro import registry
    reg = registry.load()
    paper = [r.config for r in reg.artifact_runs("linear_time", "table2", "paper")]
    hist = [c for c in paper if c["monitor_negatives"] == "historical"]
    assert len(hist) == 4 * 3 * 6 * 5 and {c["encoder"] for c in hist} == {"cosine", "cosine_scale", "linear"}
    pick = lambda model, enc, ds: {(c["dropout"], c.get("d_ch")) for c in hist if (c["model"], c["encoder"], c["dataset"]) == (model, enc, ds)}
    assert pick("tgat", "cosine", "reddit") == {(0.3, None)} and pick("dygformer", "cosine", "enron") == {(0.5, 50)}
    assert all(c["neighbor_sampling"] == "uniform" for c in hist if c["model"] == "tgat" and c["dataset"] == "reddit")
    table1 = [r.config for r in reg.artifact_runs("linear_time", "table1", "paper")]
    assert {c["monitor_negatives"] for c in table1} == {"random"}
    assert {r.config["monitor_negatives"] for r in reg.artifact_runs("linear_time", "table2", "offline")} == {"random"}


def test_win_counts_per_model_over_datasets():
    records = []
    for ds, (lin, sin) in {"uci": (0.95, 0.80), "enron": (0.70, 0.72), "wikipedia": (0.9, 0.9)}.items():
        records.append(_rec("tgat", "linear", ds, 0.1, 0, val=0.5, test=lin))
        records.append(_rec("tgat", "cosine", ds, 0.1, 0, val=0.5, test=sin))
    wins = {r["row"]: r["mean"] for r in ap_tables.lp_ap_random(records) if r["metric"] == lp.WINS_METRIC}
    assert wins == {"Linear": 2.0, "Sinusoidal": 2.0}  # uci linear, enron sinusoidal, wikipedia tied


def _frame(cells, artifact="table1", metric="AP_random_NS_test"):
    return pd.DataFrame([{"artifact": artifact, "metric": metric, "row_group": m, "row": e, "column": d, "mean": v}
                         for (m, e, d), v in cells.items()])


def _published(artifact, metric="AP_random_NS_test", change=None, drop=()):
    """The paper's own cells of one table as reproduced rows (every cell a claim covers), with `change`
    {(model, encoder, dataset): mean} applied and the `drop` cells removed."""
    pub = published.load("linear_time", artifact)
    pub = pub[pub["metric"] == metric].reset_index(drop=True)
    for (m, e, d), v in (change or {}).items():
        hit = (pub["row_group"] == m) & (pub["row"] == e) & (pub["column"] == d)
        assert hit.any(), (m, e, d)
        pub.loc[hit, "mean"] = v
    for m, e, d in drop:
        pub = pub[~((pub["row_group"] == m) & (pub["row"] == e) & (pub["column"] == d))]
    return pub


def test_most_wins_rule_holds_and_fails():
    verdict, detail, read = ap_tables.linear_most_wins_random(_published("table1"))
    assert verdict == HOLDS and "Linear 19" in detail and len(read) == 72
    # linear loses every TGAT and DyGFormer cell: at most 12 of 24 left, not more than half
    lose = {(m, "Linear", d): 1.0 for m in ("TGAT", "DyGFormer")
            for d in ("UCI", "Wikipedia", "Enron", "Reddit", "LastFM", "US Legis")}
    assert ap_tables.linear_most_wins_random(_published("table1", change=lose))[0] == FAILS
    verdict, detail, _ = ap_tables.linear_most_wins_random(_published("table1", drop=[("TGAT", "Linear", "UCI")]))
    assert verdict == PENDING and "TGAT / Linear / UCI" in detail
    assert ap_tables.scaling_hurts_on_uci(_published("table1"))[0] == HOLDS
    assert ap_tables.scaling_hurts_on_uci(_published("table1", change={("TGAT", "Sinusoidal-scale", "UCI"): 99.0}))[0] == FAILS
    no_model = _published("table1", drop=[("DyGDecoder", "Sinusoidal-scale", "UCI")])
    assert ap_tables.scaling_hurts_on_uci(no_model)[0] == PENDING  # every model, not the ones present


def test_tgat_dimension_figures_derived_from_runs():
    records = []
    for ds in ("uci", "enron"):
        records.append(_rec("tgat", "cosine", ds, 0.1, 0, val=0.5, test=0.80, params=1000, d_T=100, exp="lp_tgat_dim"))
        records.append(_rec("tgat", "linear", ds, 0.1, 0, val=0.5, test=0.85, params=1000, d_T=100, exp="lp_tgat_dim"))
        records.append(_rec("tgat", "cosine", ds, 0.1, 0, val=0.5, test=0.70, params=600, d_T=2, exp="lp_tgat_dim"))
        records.append(_rec("tgat", "linear", ds, 0.1, 0, val=0.5, test=0.84 if ds == "uci" else 0.75, params=600,
                            d_T=2, exp="lp_tgat_dim"))
    derived = {(r["row"], r["metric"]): r for r in dimensions.lp_tgat_dim(records) if r["row_group"] == "TGAT"}
    assert derived[("Linear d_T=2", "param_saving_pct_vs_dT100")]["mean"] == pytest.approx(40.0)
    assert derived[("Linear d_T=2 vs Sinusoidal d_T=100", "n_datasets_linear_dT2_higher_AP")]["mean"] == 1.0
    drop = derived[("Sinusoidal", "max_AP_drop_reducing_dT_from_100")]
    assert drop["mean"] == pytest.approx(10.0)
    lin = derived[("Linear", "max_AP_drop_reducing_dT_from_100")]
    assert lin["mean"] == pytest.approx(10.0) and lin["column"] == "Enron"



def test_fig5_selects_every_d_T_by_validation_alike():
    """Figure 5 (issue 11 item 6): d_T = 100 is chosen among its own searched dropouts exactly as 50 and 2 are,
    whatever experiment the runs come from; each cell's note names the choice and how many were compared."""
    records = []
    for d_T in (100, 50, 2):
        for dropout, val, test in ((0.1, 0.60, 0.99), (0.3, 0.90, 0.70), (0.5, 0.80, 0.95)):
            for seed in range(2):
                records.append(_rec("tgat", "cosine", "uci", dropout, seed, val=val, test=test - d_T / 1000,
                                    d_T=d_T, exp="lp_tgat_dim", monitor_negatives="random"))
    rows = [r for r in dimensions.lp_tgat_dim(records) if r["metric"] == "AP_random_NS_test"]
    assert sorted(r["row_group"] for r in rows) == ["TGAT d_T=100", "TGAT d_T=2", "TGAT d_T=50"]
    for r in rows:
        d_T = int(r["row_group"].split("=")[1])
        assert r["mean"] == pytest.approx(100 * (0.70 - d_T / 1000))  # dropout 0.3: best validation, not best test
        assert r["n_runs"] == 2 and {x["config"]["dropout"] for x in r["_records"]} == {0.3}
        assert r["note"] == "selected on validation AP: dropout=0.3 (of 3 configurations)"
    # an offline-style cut (one dropout) says so in the note
    one = [r for r in records if r["config"]["dropout"] == 0.1]
    notes = {r["note"] for r in dimensions.lp_tgat_dim(one) if r["metric"] == "AP_random_NS_test"}
    assert notes == {"selected on validation AP: dropout=0.1 (of 1 configuration)"}

def test_attention_map_cells_average_the_recorded_scores(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    # two query-key pairs in the same (dt_query, dt_key) cell, one elsewhere; source side only
    np.savez(d / "attention_records.npz", side=np.array([0, 0, 0]), dt_query=np.array([10.0, 10.0, 1000.0]),
             dt_key=np.array([10.0, 10.0, 1000.0]), score=np.array([0.2, 0.4, 0.9]), edge=np.zeros(3), query=np.zeros(3),
             key=np.zeros(3))
    rec = _rec("dygdecoder", "linear", "reddit", 0.1, 0, val=0.5, test=0.5)
    rec["dir"] = d
    rows = attention_maps.lp_attention_map([rec])
    assert {r["row_group"] for r in rows} == {"DyGDecoder; Linear; Reddit; source"}
    means = sorted(r["mean"] for r in rows)
    assert means == pytest.approx([0.3, 0.9])


def test_node_classification_cells_and_claim():
    recs = []
    for model, enc, auc in (("tgat", "linear", 0.9), ("tgat", "cosine", 0.8), ("dygformer", "linear", 0.7),
                            ("dygformer", "cosine", 0.75)):
        recs.append({"config": {"model": model, "encoder": enc, "dataset": "wikipedia"}, "metrics": {"test_auc": auc}})
    rows = node_classification.nc_auc(recs)
    assert {(r["row_group"], r["row"]): round(r["mean"], 6) for r in rows} == {
        ("TGAT", "Linear"): 90.0, ("TGAT", "Sinusoidal"): 80.0, ("DyGFormer", "Linear"): 70.0, ("DyGFormer", "Sinusoidal"): 75.0}
    cells = {(r["row_group"], r["row"], r["column"]): r["mean"] for r in rows}
    rule = node_classification.node_classification_encoder_preference
    t10 = lambda **kw: _published("table10", "AUROC_node_classification_test", **kw)
    assert rule(t10(change=cells))[0] == HOLDS
    assert rule(t10(change=cells | {("DyGFormer", "Linear", "Wikipedia"): 80.0}))[0] == FAILS
    verdict, detail, _ = rule(_frame(cells, "table10", "AUROC_node_classification_test"))  # Wikipedia only
    assert verdict == PENDING and "Reddit" in detail


def test_cost_tables_are_the_only_rows_a_rerun_may_change():
    records = [_rec("tgat", "linear", "uci", 0.1, s, val=0.9, test=0.8, epoch_time=1.0 + s) for s in range(2)]
    rows = ap_tables.lp_ap_random(records) + costs.lp_epoch_time(records) + costs.lp_peak_memory(records)
    df = pd.DataFrame([{k: v for k, v in r.items() if k != "_records"} for r in rows])
    kept = aggregate.results_only(df)
    assert set(df["metric"]) - set(kept["metric"]) == {"train_time_per_epoch_s", "peak_cpu_rss_GB"}
    assert "AP_random_NS_test" in set(kept["metric"]) and len(kept) == len(df) - 2


def _two_encoders(values, a="Linear", b="Sinusoidal"):
    """{(model, dataset): (a, b)} -> {(model, encoder, dataset): mean} for `_frame`."""
    return {(m, e, d): v for (m, d), pair in values.items() for e, v in zip((a, b), pair)}


def test_gain_rules_c03_c07():
    t1 = lambda **kw: _published("table1", **kw)
    verdict, detail, _ = ap_tables.linear_largest_gains_tgat(t1())
    assert verdict == HOLDS and "TGAT UCI +15.14" in detail
    big_drop = {("DyGFormer", "Sinusoidal", "Enron"): 99.0}  # a drop of -5.7 > a tenth of the largest gain
    assert ap_tables.linear_largest_gains_tgat(t1(change=big_drop))[0] == FAILS
    other_top = {("DyGFormer", "Linear", "LastFM"): 99.9, ("DyGFormer", "Sinusoidal", "LastFM"): 50.0}  # a DyGFormer
    # cell among the two largest gains
    assert ap_tables.linear_largest_gains_tgat(t1(change=other_top))[0] == FAILS
    assert ap_tables.linear_largest_gains_tgat(t1(drop=[("TGAT", "Sinusoidal", "UCI")]))[0] == PENDING

    t2 = lambda **kw: _published("table2", "AP_historical_NS_test", **kw)
    assert ap_tables.linear_largest_gains_historical(t2())[0] == HOLDS
    assert ap_tables.linear_largest_gains_historical(t2(change={("DyGFormer-separate", "Linear", "Enron"): 1.0}))[0] == FAILS
    # the largest gain of the DyGFormer variants must be DyGFormer UCI (+7.28)
    decoder_top = {("DyGDecoder", "Linear", "LastFM"): 99.9, ("DyGDecoder", "Sinusoidal", "LastFM"): 85.0}
    assert ap_tables.linear_largest_gains_historical(t2(change=decoder_top))[0] == FAILS
    verdict, detail, _ = ap_tables.linear_largest_gains_historical(t2(drop=[("DyGFormer", "Linear", "UCI")]))
    assert verdict == PENDING and "DyGFormer / Linear / UCI" in detail


def test_historical_win_rules_c06_c08():
    t2 = lambda **kw: _published("table2", "AP_historical_NS_test", **kw)
    assert ap_tables.linear_best_historical_uci_wikipedia_enron(t2())[0] == HOLDS
    assert ap_tables.linear_wins_us_legis_only_dygformer_separate(t2())[0] == HOLDS
    verdict, detail, _ = ap_tables.linear_best_historical_uci_wikipedia_enron(t2(change={("TGAT", "Linear", "Wikipedia"): 1.0}))
    assert verdict == FAILS and "TGAT Wikipedia" in detail
    assert ap_tables.linear_wins_us_legis_only_dygformer_separate(t2(change={("TGAT", "Linear", "US Legis"): 99.0}))[0] == FAILS
    verdict, detail, _ = ap_tables.linear_wins_us_legis_only_dygformer_separate(t2(drop=[("DyGDecoder", "Linear", "US Legis")]))
    assert verdict == PENDING and "DyGDecoder" in detail
    assert ap_tables.linear_best_historical_uci_wikipedia_enron(t2(drop=[("TGAT", "Sinusoidal", "Enron")]))[0] == PENDING


def _table4(cells):
    """Table 4's 24 cells with every cell tied at 80 but `cells` {(model, dataset): (cosine, sine-cosine)}."""
    pub = _published("table4")
    tied = {(m, e, d): 80.0 for m, e, d in pub[["row_group", "row", "column"]].itertuples(index=False)}
    return _published("table4", change=tied | _two_encoders(cells, "Cosine", "Sine-cosine"))


def test_cosine_vs_sine_cosine_sign_test_c09():
    assert ap_tables._sign_test(9, 21) > 0.5 and ap_tables._sign_test(9, 9) < 0.01 and ap_tables._sign_test(0, 0) == 1.0
    assert ap_tables.cosine_sine_cosine_no_difference(_published("table4"))[0] == HOLDS
    datasets = ("UCI", "Wikipedia", "Enron", "Reddit", "LastFM", "US Legis")
    mixed = {("TGAT", d): (81.0, 80.0) if i % 2 else (80.0, 81.0) for i, d in enumerate(datasets)}
    mixed |= {("DyGFormer", d): (81.0, 80.0) if i % 2 else (80.0, 81.0) for i, d in enumerate(datasets)}
    verdict, detail, _ = ap_tables.cosine_sine_cosine_no_difference(_table4(mixed))
    assert verdict == HOLDS and "ties in 12" in detail
    lopsided = {k: (81.0, 80.0) for k in mixed}
    assert ap_tables.cosine_sine_cosine_no_difference(_table4(lopsided))[0] == FAILS
    assert ap_tables.cosine_sine_cosine_no_difference(_published("table4", drop=[("TGAT", "Cosine", "UCI")]))[0] == PENDING


def test_c09_cannot_hold_by_construction_with_five_or_fewer_non_tied_cells():
    """A sign test over <= 5 cells never rejects at 5%: the rule says so (PENDING) instead of holding; 6 can fail."""
    assert ap_tables.MIN_SIGN_TEST_CELLS == 6 and ap_tables._sign_test(0, 5) >= 0.05 > ap_tables._sign_test(0, 6)
    lopsided = {("TGAT", d): (81.0, 80.0) for d in ("UCI", "Wikipedia", "Enron", "Reddit", "LastFM")}
    verdict, detail, _ = ap_tables.cosine_sine_cosine_no_difference(_table4(lopsided))
    assert verdict == PENDING and "5 non-tied cells" in detail and "cannot fail" in detail
    assert ap_tables.cosine_sine_cosine_no_difference(_table4(lopsided | {("DyGFormer", "UCI"): (81.0, 80.0)}))[0] == FAILS


def test_time_vs_position_c10_and_tgn_cawn_c12():
    t6 = lambda **kw: _published("table6", **kw)
    verdict, detail, _ = ap_tables.time_beats_position_mostly(t6())
    assert verdict == HOLDS and "TGAT 0.08" in detail
    # Reddit changes by more than 0.1 AP: the second half of the claim fails though time still wins most cells
    assert ap_tables.time_beats_position_mostly(t6(change={("TGAT", "Position", "Reddit"): 97.0}))[0] == FAILS
    pub = t6()
    swapped = pub.assign(row=pub["row"].map({"Time": "Position", "Position": "Time"}))
    assert ap_tables.time_beats_position_mostly(swapped)[0] == FAILS
    verdict, detail, _ = ap_tables.time_beats_position_mostly(t6(drop=[("TGAT", "Position", "Reddit")]))
    assert verdict == PENDING and "Reddit" in detail

    t9 = lambda **kw: _published("table9", **kw)
    assert ap_tables.linear_beats_sinusoidal_tgn_cawn(t9())[0] == HOLDS
    pub = t9()
    worse = pub.assign(row=pub["row"].map({"Linear": "Sinusoidal", "Sinusoidal": "Linear"}))
    assert ap_tables.linear_beats_sinusoidal_tgn_cawn(worse)[0] == FAILS
    assert ap_tables.linear_beats_sinusoidal_tgn_cawn(t9().assign(artifact="table1"))[0] == PENDING


def test_cost_rule_c11_uses_the_memory_metric_present():
    time = _published("table7", aggregate.TIME_PER_EPOCH)
    gpu = _published("table8", aggregate.PEAK_GPU)
    rss = gpu.assign(metric=aggregate.PEAK_RSS)
    verdict, detail, _ = costs.linear_cheaper_mostly(pd.concat([time, rss]))
    assert verdict == HOLDS and aggregate.PEAK_RSS in detail and "23 of 24" in detail
    swap = lambda t: t.assign(row=t["row"].map({"Linear": "Sinusoidal", "Sinusoidal": "Linear"}))
    verdict, detail, _ = costs.linear_cheaper_mostly(pd.concat([time, rss, swap(gpu)]))
    assert verdict == FAILS and aggregate.PEAK_GPU in detail
    assert costs.linear_cheaper_mostly(time)[0] == PENDING
    assert costs.linear_cheaper_mostly(pd.concat([time.iloc[1:], rss]))[0] == PENDING


def test_dimension_rules_c14_c15_on_aggregated_runs():
    def fig5(enron_linear_dt2, reddit_linear_dt2=0.79, small_params=600, datasets=("uci", "wikipedia", "enron",
                                                                                  "reddit", "lastfm", "uslegis")):
        records = []
        for ds in datasets:
            records.append(_rec("tgat", "cosine", ds, 0.1, 0, val=0.5, test=0.80, params=1000, d_T=100, exp="lp_tgat_dim"))
            records.append(_rec("tgat", "linear", ds, 0.1, 0, val=0.5, test=0.85, params=1000, d_T=100, exp="lp_tgat_dim"))
            records.append(_rec("tgat", "cosine", ds, 0.1, 0, val=0.5, test=0.70, params=small_params, d_T=2, exp="lp_tgat_dim"))
            lin2 = {"enron": enron_linear_dt2, "reddit": reddit_linear_dt2}.get(ds, 0.84)
            records.append(_rec("tgat", "linear", ds, 0.1, 0, val=0.5, test=lin2, params=small_params, d_T=2, exp="lp_tgat_dim"))
        rows = dimensions.lp_tgat_dim(records)
        return pd.DataFrame([{k: v for k, v in r.items() if k != "_records"} | {"artifact": "fig5"} for r in rows])

    good, bad = fig5(0.83), fig5(0.60)
    assert dimensions.sinusoidal_drops_more_reducing_dT(good)[0] == HOLDS
    verdict, detail = dimensions.tiny_linear_beats_full_sinusoidal(good)
    assert verdict == HOLDS and "5 of 5" in detail and "40%" in detail
    assert dimensions.sinusoidal_drops_more_reducing_dT(bad)[0] == FAILS
    assert dimensions.tiny_linear_beats_full_sinusoidal(bad)[0] == FAILS
    assert dimensions.tiny_linear_beats_full_sinusoidal(fig5(0.83, reddit_linear_dt2=0.9))[0] == FAILS  # no exception
    assert dimensions.tiny_linear_beats_full_sinusoidal(fig5(0.83, small_params=900))[0] == FAILS  # saves 10%, not 43%
    assert dimensions.tiny_linear_beats_full_sinusoidal(fig5(0.83, datasets=("uci", "enron", "reddit")))[0] == PENDING
    assert dimensions.sinusoidal_drops_more_reducing_dT(good[good["row"] != "Linear"])[0] == PENDING
    assert dimensions.tiny_linear_beats_full_sinusoidal(good[good["row_group"] != "TGAT d_T=2"])[0] == PENDING


def test_dtc_rule_c16():
    curves = {"UCI": {"Linear": (90, 92, 91), "Sinusoidal": (90, 89, 88)},
              "US Legis": {"Linear": (70, 70, 71), "Sinusoidal": (70, 70, 69)},
              "Enron": {"Linear": (92, 91, 90), "Sinusoidal": (93, 92, 91)},
              "LastFM": {"Linear": (93, 92, 85), "Sinusoidal": (93, 90, 80)}}
    cells = {(f"DyGFormer d_tc={dim}", enc, ds): ap for ds, encs in curves.items() for enc, aps in encs.items()
             for dim, ap in zip((50, 24, 2), aps)}
    assert dimensions.dtc_reduction_pattern(_frame(cells, "fig6"))[0] == HOLDS
    verdict, detail = dimensions.dtc_reduction_pattern(_frame(cells | {("DyGFormer d_tc=24", "Sinusoidal", "UCI"): 91}, "fig6"))
    assert verdict == FAILS and "sinusoidal UCI declines: NO" in detail
    verdict, detail = dimensions.dtc_reduction_pattern(_frame({k: v for k, v in cells.items() if k[2] != "LastFM"}, "fig6"))
    assert verdict == PENDING and "LastFM" in detail


def test_waiting_time_shift_c19():
    means = {("Source node", "Train"): 266.9, ("Source node", "Test"): 2129.37, ("Destination node", "Train"): 415.55,
             ("Destination node", "Test"): 4476.33, ("Source node", "Validation"): 414.49}
    table5 = lambda m: _frame({(g, s, "Average"): v for (g, s), v in m.items()}, "table5", "waiting_time_minutes_mean")
    verdict, detail = statistics.uci_waiting_times_shift(table5(means))
    assert verdict == HOLDS and "source 8.0x" in detail and "destination 10.8x" in detail
    assert statistics.uci_waiting_times_shift(table5(means | {("Destination node", "Test"): 500.0}))[0] == FAILS
    assert statistics.uci_waiting_times_shift(table5(means | {("Source node", "Test"): float("nan")}))[0] == PENDING
    missing = {k: v for k, v in means.items() if k != ("Destination node", "Train")}
    verdict, detail = statistics.uci_waiting_times_shift(table5(missing))
    assert verdict == PENDING and "Destination node Train" in detail
