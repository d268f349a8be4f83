"""Link-prediction tables: model selection on validation AP, the paper's win rule, claims on reproduced cells."""

import numpy as np
import pandas as pd
import pytest

from timerepro.report import aggregate
from timerepro.report import link_prediction as lp
from timerepro.report.claims import FAILS, HOLDS


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
    chosen = lp.select_by_validation(records, "val_transductive_random_ap")
    assert {r["config"]["dropout"] for r in chosen[("tgat", "linear", "uci")]} == {0.1}
    rows = lp.lp_ap_random(records)
    cell = [r for r in rows if r["metric"] == "AP_random_NS_test"][0]
    assert cell["mean"] == pytest.approx(70.0) and cell["n_runs"] == 2 and "dropout=0.1" in cell["note"]


def test_win_counts_per_model_over_datasets():
    records = []
    for ds, (lin, sin) in {"uci": (0.95, 0.80), "enron": (0.70, 0.72), "wikipedia": (0.9, 0.9)}.items():
        records.append(_rec("tgat", "linear", ds, 0.1, 0, val=0.5, test=lin))
        records.append(_rec("tgat", "cosine", ds, 0.1, 0, val=0.5, test=sin))
    wins = {r["row"]: r["mean"] for r in lp.lp_ap_random(records) if r["metric"] == lp.WINS_METRIC}
    assert wins == {"Linear": 2.0, "Sinusoidal": 2.0}  # uci linear, enron sinusoidal, wikipedia tied


def _frame(cells, artifact="table1", metric="AP_random_NS_test"):
    return pd.DataFrame([{"artifact": artifact, "metric": metric, "row_group": m, "row": e, "column": d, "mean": v}
                         for (m, e, d), v in cells.items()])


def test_most_wins_rule_holds_and_fails():
    cells = {("TGAT", "Linear", "UCI"): 90, ("TGAT", "Sinusoidal", "UCI"): 80, ("TGAT", "Sinusoidal-scale", "UCI"): 70,
             ("TGAT", "Linear", "Enron"): 90, ("TGAT", "Sinusoidal", "Enron"): 95, ("TGAT", "Sinusoidal-scale", "Enron"): 70,
             ("DyGFormer", "Linear", "UCI"): 90, ("DyGFormer", "Sinusoidal", "UCI"): 80, ("DyGFormer", "Sinusoidal-scale", "UCI"): 70}
    verdict, detail = lp.linear_most_wins_random(_frame(cells))
    assert verdict == HOLDS and "Linear 2" in detail
    cells[("DyGFormer", "Sinusoidal", "UCI")] = 99
    assert lp.linear_most_wins_random(_frame(cells))[0] == FAILS
    verdict, detail = lp.scaling_hurts_on_uci(_frame(cells))
    assert verdict == HOLDS and "TGAT" in detail


def test_tgat_dimension_figures_derived_from_runs():
    records = []
    for ds in ("uci", "enron"):
        records.append(_rec("tgat", "cosine", ds, 0.1, 0, val=0.5, test=0.80, params=1000, d_T=100))
        records.append(_rec("tgat", "linear", ds, 0.1, 0, val=0.5, test=0.85, params=1000, d_T=100))
        records.append(_rec("tgat", "cosine", ds, 0.1, 0, val=0.5, test=0.70, params=600, d_T=2, exp="lp_tgat_dim"))
        records.append(_rec("tgat", "linear", ds, 0.1, 0, val=0.5, test=0.84 if ds == "uci" else 0.75, params=600,
                            d_T=2, exp="lp_tgat_dim"))
    derived = {(r["row"], r["metric"]): r for r in lp.lp_tgat_dim(records) if r["row_group"] == "TGAT"}
    assert derived[("Linear d_T=2", "param_saving_pct_vs_dT100")]["mean"] == pytest.approx(40.0)
    assert derived[("Linear d_T=2 vs Sinusoidal d_T=100", "n_datasets_linear_dT2_higher_AP")]["mean"] == 1.0
    drop = derived[("Sinusoidal", "max_AP_drop_reducing_dT_from_100")]
    assert drop["mean"] == pytest.approx(10.0)
    lin = derived[("Linear", "max_AP_drop_reducing_dT_from_100")]
    assert lin["mean"] == pytest.approx(10.0) and lin["column"] == "Enron"


def test_attention_map_cells_average_the_recorded_scores(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    # two query-key pairs in the same (dt_query, dt_key) cell, one elsewhere; source side only
    np.savez(d / "attention_records.npz", side=np.array([0, 0, 0]), dt_query=np.array([10.0, 10.0, 1000.0]),
             dt_key=np.array([10.0, 10.0, 1000.0]), score=np.array([0.2, 0.4, 0.9]), edge=np.zeros(3), query=np.zeros(3),
             key=np.zeros(3))
    rec = _rec("dygdecoder", "linear", "reddit", 0.1, 0, val=0.5, test=0.5)
    rec["dir"] = d
    rows = lp.lp_attention_map([rec])
    assert {r["row_group"] for r in rows} == {"DyGDecoder; Linear; Reddit; source"}
    means = sorted(r["mean"] for r in rows)
    assert means == pytest.approx([0.3, 0.9])


def test_node_classification_cells_and_claim():
    recs = []
    for model, enc, auc in (("tgat", "linear", 0.9), ("tgat", "cosine", 0.8), ("dygformer", "linear", 0.7),
                            ("dygformer", "cosine", 0.75)):
        recs.append({"config": {"model": model, "encoder": enc, "dataset": "wikipedia"}, "metrics": {"test_auc": auc}})
    rows = lp.nc_auc(recs)
    assert {(r["row_group"], r["row"]): round(r["mean"], 6) for r in rows} == {
        ("TGAT", "Linear"): 90.0, ("TGAT", "Sinusoidal"): 80.0, ("DyGFormer", "Linear"): 70.0, ("DyGFormer", "Sinusoidal"): 75.0}
    cells = {(r["row_group"], r["row"], r["column"]): r["mean"] for r in rows}
    assert lp.node_classification_encoder_preference(_frame(cells, "table10", "AUROC_node_classification_test"))[0] == HOLDS
    cells[("DyGFormer", "Linear", "Wikipedia")] = 80.0
    assert lp.node_classification_encoder_preference(_frame(cells, "table10", "AUROC_node_classification_test"))[0] == FAILS


def test_cost_tables_are_the_only_rows_a_rerun_may_change():
    records = [_rec("tgat", "linear", "uci", 0.1, s, val=0.9, test=0.8, epoch_time=1.0 + s) for s in range(2)]
    rows = lp.lp_ap_random(records) + lp.lp_epoch_time(records) + lp.lp_peak_memory(records)
    df = pd.DataFrame([{k: v for k, v in r.items() if k != "_records"} for r in rows])
    kept = aggregate.results_only(df)
    assert set(df["metric"]) - set(kept["metric"]) == {"train_time_per_epoch_s", "peak_cpu_rss_GB"}
    assert "AP_random_NS_test" in set(kept["metric"]) and len(kept) == len(df) - 2
