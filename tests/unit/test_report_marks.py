"""What the report and the rendered tables mark: numbers made by other code (stale), cells below EdgeBank
(suspect), the paper-scale cost estimate, and the data kind of every artifact."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from timerepro import fingerprint, registry, runs
from timerepro.fingerprint import Fingerprinter
from timerepro.io import atomic_write_json, atomic_write_text
from timerepro.report import aggregate, claims, cost_plan, html, render, suspects

PACKAGE = Path(fingerprint.__file__).resolve().parent


@pytest.fixture(scope="module")
def reg():
    return registry.load()


def article(page: str, paper: str, aid: str) -> str:
    """The HTML of one artifact's box."""
    m = re.search(rf"<div class='art' id='{paper}-{aid}'( data-stale)?>(.*?)(?=<div class='art'|<h2 |</main>)", page, re.S)
    assert m, f"{paper} {aid} not in the page"
    return m.group(0)


def write_aggregate(results: Path, paper: str, rows: list[dict], prov: dict | None = None) -> None:
    df = pd.DataFrame([{**{"note": "", "n_runs": 1, "std": 0.0, "scale": "offline", "data": "stand-in",
                           "data_kind": "standin", "paper": paper}, **r} for r in rows])
    path = aggregate.aggregated_path(paper, results)
    atomic_write_text(path, df[aggregate.COLUMNS].to_csv(index=False))
    atomic_write_json(path.with_suffix(".provenance.json"), {"scale": "offline", "artifacts": prov or {}})


# ------------------------------------------------------------------ 1. stale numbers

def test_numbers_made_by_other_code_are_marked_with_the_modules_and_the_refresh_commands(reg, tmp_path):
    package = tmp_path / "pkg" / "timerepro"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("*.pyc"))
    config = dict(reg.runs("smoke", artifact="fig2")[0].config)
    results = tmp_path / "results"
    runs.execute_many([config], results=results, show_progress=False,
                      fingerprints=Fingerprinter(package_dir=package, models=reg.models))
    aggregate.write(reg, "linear_time", "smoke", results)

    page = Path(html.build(reg, "smoke", results, Fingerprinter(package_dir=package, models=reg.models))).read_text()
    assert "data-stale>" not in page and "badge stale'" not in page  # unchanged code: no mark
    assert "(stale)</th><td>0 artifact(s)" in page
    render.render_paper(reg, "linear_time", "smoke", results, Fingerprinter(package_dir=package, models=reg.models))
    assert "STALE" not in (results / "tables" / "linear_time" / "fig2.md").read_text()

    model = package / "models" / "seq" / "transformer.py"  # the synthetic task's model
    model.write_text(model.read_text() + "\n_EDITED = 1\n")
    edited = Fingerprinter(package_dir=package, models=reg.models)
    box = article(Path(html.build(reg, "smoke", results, edited)).read_text(), "linear_time", "fig2")
    assert "data-stale>" in box and "badge stale'" in box
    assert "timerepro.models.seq.transformer" in box and config["run_id"] in box
    assert "timerepro status --scale smoke --paper linear_time" in box and "snakemake --profile local" in box
    page = Path(results / "report" / "index.html").read_text()
    assert "(stale)</th><td>0 artifact(s)" not in page
    assert "badge stale'" not in article(page, "linear_time", "table3")  # no records behind it: nothing to mark
    render.render_paper(reg, "linear_time", "smoke", results, edited)
    md = (results / "tables" / "linear_time" / "fig2.md").read_text()
    assert "STALE" in md and "timerepro.models.seq.transformer" in md


# ------------------------------------------------------------------ 2. the paper-scale estimate

def test_the_paper_scale_estimate_renders_per_artifact_from_records(reg, tmp_path):
    run = next(r for r in reg.runs("smoke", paper="hawkes_attention", artifact="table7") if r.config["dataset"] == "taxi")
    d = tmp_path / "runs" / "hawkes_attention" / run.run_id
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps(run.config))
    (d / "metrics.json").write_text(json.dumps({"run_id": run.run_id}))
    (d / "history.json").write_text(json.dumps([{"epoch": 0, "epoch_time_s": 2.0, "val_time_s": 1.0}]))
    (d / "provenance.json").write_text(json.dumps({"wall_time_s": 10.0, "peak_memory_mb": 500.0, "device": "cpu",
                                                   "data": {"train_events": 100}}))
    frame, notes = cost_plan.table(reg, "hawkes_attention", "smoke", {}, tmp_path)
    rows = frame.set_index("artifact")
    assert set(rows.index) == {a["id"] for a in reg.implemented("hawkes_attention")} | {"total"}
    table7 = rows.loc["table7"]
    assert table7["runs"] == len(reg.artifact_runs("hawkes_attention", "table7", "paper"))
    assert table7["extrapolated"] > 0 and table7["peak memory"] != "?"
    assert rows.loc["table9", "CPU h"] == "?" and rows.loc["table9", "GPU h"] == "?"  # no record of its task: unknown
    assert any("upper bound" in n for n in notes)
    page = Path(html.build(reg, "smoke", tmp_path)).read_text()
    section = page.split("<h2 id='hawkes_attention'>")[1]
    assert "cost of a paper-scale rerun" in section and "<td>table7</td>" in section
    # at paper scale an artifact with all its runs is at paper scale already: not listed
    prov = {a: {"n_runs": 5, "n_expected": 5} for a in rows.index if a != "total"}
    prov["table7"] = {"n_runs": 1, "n_expected": 5}
    assert cost_plan.pending(reg, "hawkes_attention", "paper", prov) == ["table7"]


# ------------------------------------------------------------------ 3. below EdgeBank

def _lt(model, enc, dataset, mean, metric="AP_random_NS_test"):
    return {"artifact": "table1", "row_group": model, "row": enc, "column": dataset, "metric": metric, "mean": mean}


def _dm(model, dataset, mean, block="rnd", metric="AP_transductive_random"):
    return {"artifact": "table4", "row_group": block, "row": dataset, "column": model, "metric": metric, "mean": mean}


def test_cells_below_edgebank_are_flagged_in_the_report_and_the_markdown_notes(reg, tmp_path):
    write_aggregate(tmp_path, "dyg_mamba", [_dm("EdgeBank", "UCI", 75.0), _dm("TGN", "UCI", 60.5),
                                            _dm("DyG-Mamba", "UCI", 90.5), _dm("TGN", "Enron", 10.0),
                                            _dm("EdgeBank", "UCI", 50.0, block="hist", metric="AP_transductive_historical"),
                                            _dm("TGN", "UCI", 55.5, block="hist", metric="AP_transductive_historical")])
    write_aggregate(tmp_path, "linear_time", [_lt("TGAT", "Linear", "UCI", 70.5), _lt("TGAT", "Sinusoidal", "UCI", 80.5),
                                              _lt("TGAT", "Linear", "UCI", 52.0, metric="AP_historical_NS_test")])
    dm = suspects.flagged_in("dyg_mamba", tmp_path)
    assert list(zip(dm["column"], dm["row"])) == [("TGN", "UCI")]  # Enron has no EdgeBank: not judged
    lt = suspects.flagged_in("linear_time", tmp_path)  # judged against dyg_mamba's EdgeBank on the same graph
    assert list(zip(lt["row_group"], lt["row"], lt["metric"])) == [("TGAT", "Linear", "AP_random_NS_test")]

    for paper, aid, cell in (("dyg_mamba", "table4", "60.50 †"), ("linear_time", "table1", "70.50 †")):
        render.render_paper(reg, paper, "offline", tmp_path)
        md = (tmp_path / "tables" / paper / f"{aid}.md").read_text()
        assert cell in md and "† below EdgeBank: suspect" in md
        assert cell.replace(" †", r" \textdagger{}") in (tmp_path / "tables" / paper / f"{aid}.tex").read_text()
    md = (tmp_path / "tables" / "dyg_mamba" / "table4.md").read_text()
    assert "90.50 †" not in md and "55.50" in md and "55.50 †" not in md  # 55 > EdgeBank's 50 under historical NS
    box = article(Path(html.build(reg, "offline", tmp_path)).read_text(), "linear_time", "table1")
    assert "70.50 <a class='notemark' href='#linear_time-table1-suspects'>†</a>" in box
    assert "80.50 <a" not in box and "below EdgeBank: suspect" in box


def _sw(model, dataset, mean, setting="transductive"):
    return {"artifact": "table1", "row_group": setting, "row": model, "column": dataset,
            "metric": "precision_link_prediction", "mean": mean}


def test_swinit_cells_below_its_edgebank_floor_row_are_flagged_transductive_only(reg, tmp_path):
    write_aggregate(tmp_path, "swinit", [_sw("EdgeBank (floor)", "MOOC", 70.0), _sw("JODIE-rnn", "MOOC", 55.25),
                                         _sw("SWINIT-GRU", "MOOC", 80.0), _sw("DyRep", "Reddit", 40.0),
                                         _sw("JODIE-gru", "MOOC", 45.0, setting="inductive")])
    sw = suspects.flagged_in("swinit", tmp_path)
    # Reddit has no floor row: not judged; the inductive setting has no EdgeBank: not judged
    assert list(zip(sw["row_group"], sw["row"], sw["column"])) == [("transductive", "JODIE-rnn", "MOOC")]
    assert sw["dataset"].tolist() == ["jodie_mooc"] and sw["edgebank_mean"].tolist() == [70.0]
    render.render_paper(reg, "swinit", "offline", tmp_path)
    md = (tmp_path / "tables" / "swinit" / "table1.md").read_text()
    assert "55.25 †" in md and "80.00 †" not in md and "EdgeBank (floor)" in md and "† below EdgeBank: suspect" in md


def test_no_edgebank_row_means_no_flag(reg, tmp_path):
    write_aggregate(tmp_path, "dyg_mamba", [_dm("TGN", "UCI", 1.0)])
    assert suspects.flagged_in("dyg_mamba", tmp_path).empty
    render.render_paper(reg, "dyg_mamba", "offline", tmp_path)
    assert "†" not in (tmp_path / "tables" / "dyg_mamba" / "table4.md").read_text()


# ------------------------------------------------------------------ 4. data kind badges

def _prov(kind: str) -> dict:
    recs = [{"config": {"run_id": "r1"}, "provenance": {"data": {"kind": kind}, "wall_time_s": 1.0}}]
    return {**aggregate.provenance_summary(recs), "n_expected": 1}


@pytest.mark.parametrize("paper", ["dyg_mamba", "time2vec", "swinit"])
def test_every_artifact_of_the_new_papers_shows_its_data_kind(reg, tmp_path, paper):
    kinds = ["real", "package_copy", "standin", "synthetic_task"]
    arts = [a["id"] for a in reg.implemented(paper)]
    given = {aid: kinds[i % len(kinds)] for i, aid in enumerate(arts)}
    write_aggregate(tmp_path, paper, [{"artifact": aid, "row_group": "g", "row": "r", "column": "c", "metric": "m",
                                       "mean": 1.5, "data_kind": kind} for aid, kind in given.items()],
                    {aid: _prov(kind) for aid, kind in given.items()})
    atomic_write_json(claims.claims_path(tmp_path), [])  # (claim rules need real rows to judge)
    page = Path(html.build(reg, "offline", tmp_path)).read_text()
    for aid, kind in given.items():
        box = article(page, paper, aid)
        assert f"badge kind-{kind}'" in box and f"data: {kind}" in box
        assert all(f"data: {k}<" not in box for k in kinds if k != kind)


def test_markdown_tables_name_the_data_kinds_of_their_rows(reg, tmp_path):
    aid = next(a["id"] for a in reg.implemented("swinit") if not a.get("render"))
    write_aggregate(tmp_path, "swinit", [{"artifact": aid, "row_group": "g", "row": r, "column": "c", "metric": "m",
                                          "mean": 1.5, "data_kind": kind} for r, kind in (("a", "standin"), ("b", "real"))])
    render.render_paper(reg, "swinit", "offline", tmp_path)
    assert "data_kind=real+standin" in (tmp_path / "tables" / "swinit" / f"{aid}.md").read_text()
