"""Real UCI (the package copy) in the offline default and in the offline paper-protocol command.

Offline: the real-UCI experiments replace the UCI stand-in cells they stand for (never both in one cell); smoke and
paper scales do not run them (paper scale's own experiments read real UCI). The command's selection keeps exactly
the paper-scale runs whose downloaded data are all obtainable offline.
"""

from __future__ import annotations

import numpy as np
import pytest

from timerepro import registry
from timerepro import offline_paper
from timerepro.data import ctdg, stats
from timerepro.data.lock import load_lock

REAL_UCI = {"linear_time": ["lp_tgat_real_uci", "stats_table3_real_uci"],
            "dyg_mamba": ["lp_jodie_real_uci", "lp_edgebank_real_uci", "stats_table6_real_uci"]}


@pytest.fixture(scope="module")
def reg():
    return registry.load()


def _uci_cells(reg, paper, artifact, scale):
    """(model, encoder, standin) of the artifact's link-prediction runs on UCI."""
    return sorted({(r.config["model"], str(r.config.get("encoder")), str(r.config["standin"]))
                   for r in reg.artifact_runs(paper, artifact, scale)
                   if r.config.get("dataset") == "uci" and r.config["task"] == "link_prediction"})


@pytest.mark.parametrize("scale", ["smoke", "paper"])
def test_real_uci_experiments_run_only_offline(reg, scale):
    for paper, exps in REAL_UCI.items():
        for exp in exps:
            assert reg.experiment_runs(paper, exp, scale) == []
            assert reg.experiment_runs(paper, exp, "offline"), exp


def test_offline_table1_tgat_uci_is_real_and_only_real(reg):
    cells = _uci_cells(reg, "linear_time", "table1", "offline")
    tgat = [c for c in cells if c[0] == "tgat"]
    assert tgat == [("tgat", "cosine", "None"), ("tgat", "cosine_scale", "None"), ("tgat", "linear", "None")]
    run = next(r for r in reg.experiment_runs("linear_time", "lp_tgat_real_uci", "offline") if r.config["encoder"] == "linear")
    c = run.config  # the paper's model and batching, a labelled cut of epochs and seeds
    assert (c["num_neighbors"], c["num_layers"], c["batch_size"], c["dropout"], c["max_epochs"]) == (20, 2, 200, 0.1, 1)
    assert c["monitor_metric"] == "ap_whole" and c["time_diff_statistic"] == "per_query_mean"


def test_offline_dyg_mamba_uci_cells_never_mix_sources(reg):
    for art in ("table2", "table4"):
        cells = _uci_cells(reg, "dyg_mamba", art, "offline")
        by_model = {}
        for model, _enc, standin in cells:
            by_model.setdefault(model, set()).add(standin)
        assert all(len(s) == 1 for s in by_model.values()), by_model
        assert by_model["jodie"] == {"None"} and by_model["tgn"] == {"offline"}
    assert _uci_cells(reg, "dyg_mamba", "table4", "offline").count(("edgebank", "None", "None")) == 1


def test_offline_statistics_read_uci_from_the_real_data(reg):
    for paper, art in (("linear_time", "table3"), ("linear_time", "table5"), ("dyg_mamba", "table6")):
        runs = reg.artifact_runs(paper, art, "offline")
        with_uci = [r for r in runs if "uci" in r.config["datasets"]]
        assert len(with_uci) == 1 and with_uci[0].config["standin"] is None and with_uci[0].config["datasets"] == ["uci"]
        assert all(r.config["standin"] == "offline" for r in runs if r not in with_uci)


def test_paper_protocol_runs_that_are_obtainable_offline(reg):
    runs = offline_paper.obtainable_runs(reg, "paper", paper="linear_time", artifact="table1",
                                         sources={"uci": "package copy"})
    assert runs and all(r.config["dataset"] == "uci" for r in runs)
    ids = {r.run_id for r in runs}
    assert {"24a428596fc1", "e16391f6f9a1", "579ed4cb7e59"} <= ids  # seed 0 of the three encoders (docs/reruns.md)
    # Table 3 reads six datasets in one run: not obtainable while five are missing
    assert offline_paper.obtainable_runs(reg, "paper", paper="linear_time", artifact="table3", sources={"uci": "x"}) == []
    assert offline_paper.obtainable_runs(reg, "paper", paper="linear_time", artifact="table5", sources={"uci": "x"})


def test_local_source_sees_the_installed_copy_and_nothing_else(tmp_path):
    lock = load_lock()
    assert offline_paper.local_source(lock.get("uci"), tmp_path) == "package copy"
    assert offline_paper.local_source(lock.get("wikipedia"), tmp_path) is None


def test_statistics_rows_say_when_the_data_are_a_package_copy():
    label = "UCI (DyGLib/DGB): real UCI, minute resolution, package copy"
    e = np.array([1, 2])
    g = ctdg.CTDGData("uci", e, e[::-1], np.array([0.0, 60.0]), e, np.zeros(2), np.zeros((3, 1)), np.zeros((3, 1)),
                      {"kind": "package_copy", "label": label})
    for df in (stats.linear_time_table3({"uci": g}), stats.linear_time_table5(g), stats.dyg_mamba_table6({"uci": g})):
        assert df["note"].str.contains("real UCI, minute resolution, package copy").all()
    g.manifest = {"label": "UCI (real data)"}
    assert not stats.linear_time_table3({"uci": g})["note"].str.contains("package").any()
