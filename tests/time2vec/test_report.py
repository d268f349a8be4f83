"""time2vec report: best-of-sizes selection, curves over runs, the Figure 3 summary and the claim rules."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from timerepro.report.time2vec import curves, rules, sines


def _record(tmp_path, name, config, accs):
    d = tmp_path / name
    d.mkdir()
    (d / "history.json").write_text(json.dumps([{"epoch": e, "val_test_accuracy": a} for e, a in enumerate(accs)]))
    base = {"dataset": "event_mnist", "model": "lstm", "seed": 0}
    return {"dir": d, "config": {**base, **config}, "metrics": {}, "provenance": {}}


def test_curves_and_best_size_selection(tmp_path):
    recs = [_record(tmp_path, "t0", {"time_input": "tau"}, [0.2, 0.4]),
            _record(tmp_path, "t1", {"time_input": "tau", "seed": 1}, [0.4, 0.6]),
            _record(tmp_path, "k16", {"time_input": "t2v", "k_sines": 16}, [0.3, 0.5]),
            _record(tmp_path, "k64", {"time_input": "t2v", "k_sines": 64}, [0.3, 0.7])]
    rows = curves.t2v_curves_best(recs)
    final = {r["row"]: r for r in rows if r["column"] == "final"}
    assert set(final) == {"LSTM+T", "LSTM+Time2Vec"}
    assert math.isclose(final["LSTM+T"]["mean"], 0.5) and math.isclose(final["LSTM+T"]["std"], 0.1)
    assert final["LSTM+Time2Vec"]["mean"] == 0.7 and "64+1" in final["LSTM+Time2Vec"]["note"]
    assert "selected on the test curve" in final["LSTM+Time2Vec"]["note"]  # Event-MNIST: no validation part
    assert {r["column"] for r in rows} == {"epoch 1", "epoch 2", "final"}
    every = {r["row"] for r in curves.t2v_curves(recs)}
    assert every == {"LSTM+T", "LSTM+Time2Vec (16+1)", "LSTM+Time2Vec (64+1)"}


def _recommendation(tmp_path, name, k, test_recall, selection, experiment="lastfm_t2v"):
    """A next-item run: its test curve (history) and its held-out final `selection_recall_at_10` (metrics)."""
    d = tmp_path / name
    d.mkdir()
    (d / "history.json").write_text(json.dumps([{"epoch": e, "val_recall_at_10": a} for e, a in enumerate(test_recall)]))
    config = {"dataset": "lastfm", "model": "time_lstm", "variant": 3, "time_input": "t2v", "k_sines": k, "seed": 0,
              "experiment": experiment}
    metrics = {} if selection is None else {"selection_recall_at_10": selection}
    return {"dir": d, "config": config, "metrics": metrics, "provenance": {}}


def test_the_best_size_is_selected_on_validation_where_the_runs_hold_it(tmp_path):
    """Size 64 has the better test curve, size 16 the better held-out items: 16 is shown (never chosen on test),
    in Figures 1-2 and in Figure 5d; without selection metrics the test curve decides and the note says so."""
    recs = [_recommendation(tmp_path, "k16", 16, [0.2, 0.3], 0.5), _recommendation(tmp_path, "k64", 64, [0.2, 0.6], 0.4)]
    final = next(r for r in curves.t2v_curves_best(recs) if r["column"] == "final")
    assert final["row"] == "TLSTM3+Time2Vec" and final["mean"] == 0.3
    assert "(16+1), selected on validation (selection_recall_at_10)" in final["note"]
    cite = [_recommendation(tmp_path, f"c{k}", k, curve, sel, "cite_tlstm_t2v")
            for k, curve, sel in ((16, [0.3], 0.5), (64, [0.6], 0.4))]
    panel = [r for r in curves.t2v_ablations(cite) if r["row_group"] == curves.FIG5_PANELS["d"]]
    assert [r["mean"] for r in panel if r["column"] == "final"] == [0.3]
    assert all("best of sizes 16/64: 16, selected on validation" in r["note"] for r in panel)
    no_val = [_recommendation(tmp_path, f"n{k}", k, curve, None) for k, curve in ((16, [0.3]), (64, [0.6]))]
    final = next(r for r in curves.t2v_curves_best(no_val) if r["column"] == "final")
    assert final["mean"] == 0.6 and "(64+1), selected on the test curve" in final["note"]


def test_labels_of_the_variants():
    assert curves.model_label({"model": "time_lstm", "variant": 3, "time_input": "tau"}) == "TLSTM3"
    assert curves.model_label({"model": "lstm", "time_input": "t2v", "k_sines": 16, "frequencies": "equally_spaced"}) \
        == "LSTM+Time2Vec (16+1, equally spaced)"
    assert curves.model_label({"model": "lstm", "time_input": "t2v", "k_sines": 64, "linear_term": False,
                            "activation": "mod"}) == "LSTM+Time2Vec (64, no linear term, mod)"


def _fig3(scale, freq, phase, second, perfect):
    g = sines.SYNTHETIC_GROUPS[scale]
    rows = [("main_sine_frequency_mode", freq), ("learned_phase_shift", phase), ("share_of_runs_perfect_test", perfect),
            ("learned_frequency", 2 * math.pi / (7 * scale)),
            ("share_of_runs_second_sine_near_zero", second), ("share_of_runs_at_fundamental", 0.5)]
    return [{"artifact": "fig3", "row_group": g, "row": "Time2Vec learned", "column": "main sine", "metric": m,
             "mean": v, "std": 0.0, "n_runs": 10, "data": "generated", "note": ""} for m, v in rows]


def test_synthetic_claim_rules():
    df = pd.DataFrame(_fig3(1.0, 0.89, 1.57, 0.8, 0.6) + _fig3(2.0, 0.45, 1.57, 0.8, 0.6))
    assert rules.t2v_main_sine_2pi_over_7(df)[0] == "holds"
    assert rules.t2v_only_2pi_over_7_and_zero(df)[0] == "holds"
    x2_harmonic_mode = pd.DataFrame(_fig3(1.0, 0.89, 1.57, 0.8, 0.6) + _fig3(2.0, 0.89, 1.57, 0.8, 0.6))
    verdict, detail = rules.t2v_main_sine_2pi_over_7(x2_harmonic_mode)
    assert verdict == "holds" and "mode of all runs 0.890" in detail  # the runs at 2pi/14 decide, the mode is shown
    bad = pd.DataFrame(_fig3(1.0, 1.79, 1.57, 0.2, 0.6) + _fig3(2.0, 0.45, 1.57, 0.8, 0.6))
    verdict, detail = rules.t2v_main_sine_2pi_over_7(bad)
    assert verdict == "fails" and "1.790 within 0.898" in detail
    assert rules.t2v_only_2pi_over_7_and_zero(bad)[0] == "fails"
    assert rules.t2v_main_sine_2pi_over_7(pd.DataFrame(_fig3(1.0, 0.9, 1.57, 1, 1)))[0] == "cannot be evaluated yet"


def test_mode_bin_and_histogram_rows():
    assert math.isclose(sines.mode_bin([0.897, 0.899, 1.795, 0.01]), 0.89)
    recs = [{"config": {}, "time2vec_frequencies": {"learned_abs_frequency": [0.31, 0.33, 0.86, 0.029, 1.5]}}]
    rows = curves._hist_rows(recs, "h")
    counts = {r["column"]: r["mean"] for r in rows if r["metric"] == "frequency_count"}
    assert counts["0.35"] == 2 and counts["0.85"] == 1 and counts["0.05"] == 1 and counts[">= 1"] == 1
    summary = {r["metric"]: r for r in rows if r["column"] == "panel c histogram"}
    assert math.isclose(summary["min_learned_frequency"]["mean"], 0.029)
    assert math.isclose(summary["share_of_frequencies_in_(0,1)"]["mean"], 0.8)
    assert summary["two_most_populated_bins"]["note"].startswith("centres: 0.35")
    assert np.isclose(summary["two_most_populated_bins"]["mean"], 0.05)
