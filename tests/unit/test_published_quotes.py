"""Claim details quote the paper's figures from params/published/ (computed with the rule's own function), never from
literals in code; aggregated rows and run records carry their data kind, which claims and badges read."""

import ast
import re
from pathlib import Path

import pandas as pd

from timerepro import datakind
from timerepro.report import html, published
from timerepro.report.linear_time import ap_tables, costs, dimensions, statistics

REPORT = Path(__file__).parents[2] / "src" / "timerepro" / "report"
QUOTED_NUMBER = re.compile(r"published[^{}]{0,40}?\d")  # "published 22 of 24", "published: Linear 19"


def _strings(tree: ast.AST):
    """String literals of a module, docstrings left out (they may cite the paper)."""
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node


def test_no_report_module_prints_a_published_number_from_a_literal():
    offending = [f"{path.relative_to(REPORT)}:{node.lineno}: {node.value!r}"
                 for path in sorted(REPORT.rglob("*.py")) for node in _strings(ast.parse(path.read_text()))
                 if QUOTED_NUMBER.search(node.value)]
    assert not offending, offending
    assert QUOTED_NUMBER.search("(published 22 of 24)") and QUOTED_NUMBER.search("published: Linear 19")


def test_quoted_figures_are_computed_from_the_published_values(monkeypatch):
    pub = published.load("linear_time")
    reproduced = pub[pub["artifact"].isin(["table1", "table2", "table4", "table5", "table6", "table7", "table8",
                                           "table9", "fig5"])]
    details = {name: rule(reproduced)[1] for name, rule in (
        ("c01", ap_tables.linear_most_wins_random), ("c02", ap_tables.linear_beats_scaled_mostly),
        ("c03", ap_tables.linear_largest_gains_tgat), ("c09", ap_tables.cosine_sine_cosine_no_difference),
        ("c11", costs.linear_cheaper_mostly), ("c14", dimensions.sinusoidal_drops_more_reducing_dT),
        ("c19", statistics.uci_waiting_times_shift))}
    # the figures the paper prints, as the literals of the code before said them
    assert "(published: Linear 19, Sinusoidal 5, Sinusoidal-scale 2 of 24)" in details["c01"]
    assert "(published 22 of 24)" in details["c02"]
    assert "TGAT UCI +15.14, TGAT Enron +10.24; smallest DyGFormer Enron -0.34" in details["c03"]
    assert "(published 9 / 12 / 3 of 24)" in details["c09"]
    assert "(published 23 of 24 and 23 of 24, peak_gpu_memory_GB)" in details["c11"]
    assert "(published sinusoidal 8.08 (LastFM), linear 2.44 (UCI))" in details["c14"]
    assert "(published source 8.0x, destination 10.8x)" in details["c19"]
    # another published file, other quoted figures: nothing is typed into the code
    moved = pub.copy()
    sel = (moved["artifact"] == "table1") & (moved["row"] == "Sinusoidal-scale")
    moved.loc[sel, "mean"] = 100.0
    monkeypatch.setattr(published, "load", lambda paper=None, artifact=None, path=None: moved)
    assert "(published 0 of 24)" in ap_tables.linear_beats_scaled_mostly(reproduced)[1]


def test_data_kind_of_old_and_new_records():
    assert datakind.of_data({"kind": "package_copy", "standin": False}) is datakind.DataKind.PACKAGE_COPY
    assert datakind.of_data({"source": "standin", "standin": True}) is datakind.DataKind.STANDIN  # before `kind`
    assert datakind.of_data({"source": "generated", "standin": False}) is datakind.DataKind.SYNTHETIC_TASK
    assert datakind.of_data({"source": "real", "standin": False}) is datakind.DataKind.REAL
    recs = [{"provenance": {"data": {"kind": k}}} for k in ("standin", "real", "standin")]
    assert datakind.of_records(recs) == "real+standin" and datakind.parse("real+standin") == {
        datakind.DataKind.REAL, datakind.DataKind.STANDIN}
    assert datakind.proves_pipeline_only("real+standin") and not datakind.proves_pipeline_only("synthetic_task")


def test_the_badge_reads_the_data_kind_not_the_label():
    art = {"status": "implemented"}
    prov = {"n_runs": 2, "n_expected": 2, "data": "real data (a stand-in was not needed)", "data_kind": "real"}
    assert html._status(art, prov) == ("regenerated", "regenerated")
    worded = {**prov, "data": "UCI", "data_kind": "standin"}
    assert html._status(art, worded) == ("regenerated", "regenerated on synthetic stand-ins, not the real data")


def test_configuration_tables_are_badged_as_configuration_not_regenerated():
    from timerepro import registry

    prov = {"n_runs": 2, "n_expected": 2, "data": "Taxi", "data_kind": "real"}
    reg = registry.load()
    configuration = {(p, a["id"]) for p in registry.PAPERS for a in reg.artifacts(p) if html.is_configuration(a)}
    assert {("hawkes_attention", t) for t in ("table6", "table7", "table8")} <= configuration
    assert {("dyg_mamba", "table7"), ("dyg_mamba", "table8")} <= configuration
    for paper, aid in configuration:
        art = next(a for a in reg.artifacts(paper) if a["id"] == aid)
        if art["status"] == "implemented":
            assert html._status(art, prov)[0] == "configuration", (paper, aid)
            assert html._status(art, {**prov, "n_runs": 0})[0] == "planned"  # no runs: nothing rendered yet
    table2 = next(a for a in reg.artifacts("hawkes_attention") if a["id"] == "table2")
    assert not html.is_configuration(table2) and html._status(table2, prov)[0] == "regenerated"


def test_aggregated_rows_carry_the_data_kind_of_their_runs(tmp_path):
    from timerepro import registry
    from timerepro.io import atomic_write_json
    from timerepro.report import aggregate

    reg = registry.load()
    runs = reg.artifact_runs("linear_time", "fig2", "smoke")
    for run in runs:  # records as the synthetic task writes them, on the runs fig2 expects
        d = tmp_path / "runs" / run.paper / run.run_id
        atomic_write_json(d / "config.json", run.config)
        atomic_write_json(d / "provenance.json", {"data": {"kind": "synthetic_task", "source": "generated"}})
        atomic_write_json(d / "attention.json", {"learned": [0.2, 0.3, 0.5], "true": [0.1, 0.3, 0.6]})
        atomic_write_json(d / "metrics.json", {"test_accuracy": 0.5})
    df, prov = aggregate.aggregate_paper(reg, "linear_time", "smoke", tmp_path)
    fig2 = df[df["artifact"] == "fig2"]
    assert len(fig2) and set(fig2["data_kind"]) == {"synthetic_task"}
    assert set(fig2["data"]) == {"generated (paper's own synthetic task)"}  # the label column stays
    assert prov["fig2"]["data_kind"] == "synthetic_task"
    assert isinstance(pd.read_csv(aggregate.write(reg, "linear_time", "smoke", tmp_path))["data_kind"][0], str)
