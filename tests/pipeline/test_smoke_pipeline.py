"""The smoke scale end to end through Snakemake and papermill, and what the outputs promise."""

import json
import re
import shutil

import nbformat
import pandas as pd
import pytest

from timerepro import registry
from timerepro.report import aggregate, html, render, tables

from .conftest import snakemake

pytestmark = pytest.mark.pipeline


def test_every_stage_produced_its_outputs(smoke_results):
    reg = registry.load()
    runs = reg.runs("smoke")
    for run in runs:
        assert (smoke_results / "runs" / run.paper / run.run_id / "metrics.json").is_file()
    df = aggregate.read("linear_time", smoke_results)
    assert set(df["artifact"]) == {a["id"] for a in reg.implemented("linear_time")}  # every one regenerated
    assert set(df["scale"]) == {"smoke"}
    synthetic = df[df["artifact"].isin(["fig2", "fig3"])]
    assert (synthetic["n_runs"] == 2).all() and set(synthetic["data"]) == {"generated (paper's own synthetic task)"}
    stats = df[df["artifact"].isin(["table3", "table5"])]
    assert set(stats["data"]) == {"synthetic stand-ins (smoke size), not the real data"}
    for paper in registry.PAPERS:
        nb = nbformat.read(smoke_results / "notebooks" / f"{paper}.ipynb", as_version=4)
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
        assert outputs and not [o for o in outputs if o.get("output_type") == "error"]
        assert nb.metadata["papermill"]["parameters"]["scale"] == "smoke"
    for ext in ("png", "pdf"):
        assert (smoke_results / "figures" / "linear_time" / f"fig2.{ext}").stat().st_size > 1000
        assert (smoke_results / "figures" / "linear_time" / f"fig3.{ext}").stat().st_size > 1000
    claims = json.loads((smoke_results / "claims.json").read_text())
    assert len(claims) == sum(len(p["claims"]) for p in reg.papers.values())
    verdicts = {c["id"]: c["verdict"] for c in claims if c["paper"] == "linear_time"}
    assert verdicts["c18"] in {"holds", "fails"}
    # c17 needs all four panels of Figure 2 (issue 25: the whole claim); smoke's grid has fewer
    assert verdicts["c17"] in {"holds", "fails", "cannot be evaluated yet"}


def test_report_shows_all_76_artifacts_and_the_regenerated_ones(smoke_results):
    reg = registry.load()
    implemented = sum(len(reg.implemented(p)) for p in registry.PAPERS)
    page = (smoke_results / "report" / "index.html").read_text()
    assert page.count("<div class='art'") == 76
    assert "<tr><th>artifacts</th><td>76</td></tr>" in page
    configuration = sum(html.is_configuration(a) for p in registry.PAPERS for a in reg.implemented(p))  # settings only
    assert f"<tr><th>regenerated</th><td>{implemented - configuration}</td></tr>" in page
    assert f"<tr><th>configuration (settings, not results)</th><td>{configuration}</td></tr>" in page
    assert page.count("class='badge regenerated'") == implemented - configuration >= 6
    assert page.count("class='badge configuration'") == configuration >= 5
    assert "synthetic stand-ins (smoke size), not the real data" in page
    assert "../figures/linear_time/fig2.png" in page and "scale <b>smoke</b>" in page


def test_rerun_does_no_work(smoke_results):
    proc = snakemake("scale=smoke", "-n", results=smoke_results)
    assert proc.returncode == 0
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_paper_scale_dry_run_lists_every_run(tmp_path):
    proc = snakemake("scale=paper", "-n", results=tmp_path / "r")
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", proc.stdout + proc.stderr, flags=re.M))
    reg = registry.load()
    assert int(counts["train"]) == len(reg.runs("paper")) == len(reg.jobs("paper"))
    assert len(reg.runs("paper", paper="linear_time", artifact="fig2")) == 480


def _reproduced_cells(md: str) -> list[str]:
    lines = [l for l in md.splitlines() if l.startswith("|")]
    head = [h.strip() for h in lines[0].strip("|").split("|")]
    cols = [i for i, h in enumerate(head) if h.endswith("(reproduced)")]
    # a reproduced cell may carry the report's marks (" †": below EdgeBank on the same data; " [s]": its data kind in a
    # table of several kinds); the number is what counts
    bare = lambda c: re.sub(r" \[[a-z+]+\]$", "", c.strip()).removesuffix(" †")
    return [[bare(c) for c in l.strip("|").split("|")][i] for l in lines[2:] for i in cols]


def test_reproduced_cells_come_only_from_aggregates(smoke_results):
    reg = registry.load()
    for paper in registry.PAPERS:
        df = aggregate.read(paper, smoke_results)
        implemented = {a["id"] for a in reg.implemented(paper)}
        for md in (smoke_results / "tables" / paper).glob("*.md"):
            art = df[df["artifact"] == md.stem]
            # a placeholder cell says so in words; it can never be a number
            allowed = {tables._fmt(m, s) for m, s in zip(art["mean"], art["std"])} | {"", tables.NOT_YET, tables.NOT_REPRODUCED}
            assert set(_reproduced_cells(md.read_text())) <= allowed, md
            if md.stem not in implemented:
                assert "(reproduced)" not in md.read_text(), f"{md}: reproduced column without runs"


def test_published_number_never_lands_in_a_reproduced_cell(smoke_results):
    rep = aggregate.read("linear_time", smoke_results)
    rep = rep[rep["artifact"] == "fig2"]
    target = rep.iloc[0]
    pub = pd.DataFrame([{**{k: target[k] for k in ("paper", "artifact", "row_group", "row", "column", "metric")},
                         "mean": 12345.678, "std": 0.5, "note": ""}])
    table = tables.comparison(pub, rep)
    row = table.loc[(target["row_group"], target["row"])]
    assert row[(target["column"], "published")] == tables._fmt(12345.678, 0.5) == "12345.68 ± 0.5"
    assert row[(target["column"], "reproduced")] == tables._fmt(target["mean"], target["std"])
    cells = _reproduced_cells(tables.to_markdown(table))
    assert not any("12345" in c for c in cells)


def test_deleting_run_records_empties_reproduced_cells(smoke_results, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(smoke_results, results)
    shutil.rmtree(results / "runs")
    reg = registry.load()
    aggregate.write(reg, "linear_time", "smoke", results)
    assert aggregate.read("linear_time", results).empty
    for paper in registry.PAPERS:
        aggregate.write(reg, paper, "smoke", results)
    manifest = render.render_paper(reg, "linear_time", "smoke", results)
    assert manifest["artifacts"]["fig2"]["figures"] == []
    for md in (results / "tables" / "linear_time").glob("*.md"):
        if md.stem in manifest["artifacts"] and manifest["artifacts"][md.stem]["tables"]:
            assert "(reproduced)" not in md.read_text()
    page = html.build(reg, "smoke", results).read_text()
    assert "<tr><th>regenerated</th><td>0</td></tr>" in page


def test_every_training_process_trusted_the_reference_checks_snakemake_ran(smoke_results):
    """The Snakefile exports the checked digest of params/ and code (registry.CHECKED_ENV): every run-job it
    started skipped the 0.6 s of reference checks, and says so in its log."""
    logs = sorted((smoke_results / "logs" / "jobs").glob("*/*.log"))
    assert logs
    for log in logs:
        assert "params/ references checked by the parent process" in log.read_text().splitlines()[0], log
