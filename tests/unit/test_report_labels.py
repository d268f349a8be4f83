"""Every rendered table and figure says what made its numbers: scale and data kind where a reader sees them, each
cell's kind where a table mixes kinds, words for a cell without a number, no delta beside a number that does not
measure what the paper's does, and a first screen that counts verdicts per paper by the data behind them."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest

from timerepro import registry
from timerepro.io import atomic_write_json, atomic_write_text
from timerepro.report import aggregate, claims, figures, html, published, render, suspects, tables
from timerepro.report.dyg_mamba import lp_tables
from timerepro.report.dyg_mamba.common import AVG_RANK

KEY = dict(paper="dyg_mamba", artifact="table2", metric="AP_inductive_random", row_group="rnd")


@pytest.fixture(scope="module")
def reg():
    return registry.load()


def frame(rows, **extra) -> pd.DataFrame:
    return pd.DataFrame([{**KEY, "row": r, "column": c, "mean": m, "std": 0.0, "note": "", **extra}
                         for r, c, m in rows])


def write_aggregate(results: Path, paper: str, rows: list[dict]) -> None:
    df = pd.DataFrame([{"note": "", "n_runs": 1, "std": 0.0, "scale": "offline", "data": "stand-in",
                        "data_kind": "standin", "paper": paper, **r} for r in rows])
    path = aggregate.aggregated_path(paper, results)
    atomic_write_text(path, df[aggregate.COLUMNS].to_csv(index=False))
    atomic_write_json(path.with_suffix(".provenance.json"), {"scale": "offline", "artifacts": {}})


def reproduced_cells(table: pd.DataFrame) -> list[str]:
    return [v for (_, src), col in table.items() if src == tables.REPRODUCED for v in col]


# ------------------------------------------------------------------ a column that mixes kinds of data

def test_a_column_of_real_and_stand_in_cells_marks_each_cell_with_its_kind():
    pub = frame([("UCI", "JODIE", 89.43), ("UCI", "TGN", 81.6), ("UCI", "DyG-Mamba", 95.0)])
    rep = pd.concat([frame([("UCI", "JODIE", 88.54)], data_kind="package_copy", scale="offline"),
                     frame([("UCI", "TGN", 70.5)], data_kind="standin", scale="offline"),
                     frame([(AVG_RANK, "TGN", 1.5)], data_kind="package_copy+standin", scale="offline")])
    t = tables.comparison(pub, rep)
    assert t.loc[("rnd", "UCI"), ("JODIE", "reproduced")] == "88.54 [p]"
    assert t.loc[("rnd", "UCI"), ("TGN", "reproduced")] == "70.50 [s]"
    assert t.loc[("rnd", AVG_RANK), ("TGN", "reproduced")] == "1.50 [p+s]"
    assert t.loc[("rnd", "UCI"), ("JODIE", tables.DELTA)] == "-0.89"  # the real cell keeps its delta
    assert t.loc[("rnd", "UCI"), ("TGN", tables.DELTA)] == ""  # the stand-in beside it has none
    line = tables.provenance_line("offline", rep)
    assert "[p] a package copy of the real data" in line and "[s] a synthetic stand-in" in line
    assert "[r]" not in line and "[t]" not in line  # the legend names the kinds the table has
    md, tex, page = tables.to_markdown(t, line), tables.to_latex(t, "Table 2", line), tables.to_html(t, line)
    assert "88.54 [p]" in md and "[p] a package copy" in md
    assert "88.54 [p]" in tex and r"\caption{Table 2. Reproduced at scale offline" in tex and "[s] a synthetic" in tex
    assert "<span class='kindmark kind-package_copy' title='a package copy of the real data'>[p]</span>" in page
    assert "<span class='kindmark kind-standin'" in page and "[p+s]</span>" in page


def test_a_table_of_one_kind_carries_no_marks():
    rep = frame([("UCI", "TGN", 70.0), ("Enron", "TGN", 60.0)], data_kind="standin", scale="offline")
    t = tables.comparison(frame([("UCI", "TGN", 81.6)]), rep)
    assert not any("[" in v for v in reproduced_cells(t))
    assert "marked with its data" not in tables.provenance_line("offline", rep)


# ------------------------------------------------------------------ words, not blanks

def test_a_cell_without_a_reproduced_number_says_so_in_words():
    pub = frame([("UCI", "TGN", 81.6), ("Enron", "TGN", 70.1), ("MOOC", "TGN", 80.0)])
    rep = pd.concat([frame([("UCI", "TGN", 75.0)]), frame([("Enron", "TGN", math.nan)]).assign(note="diverged")])
    t = tables.comparison(pub, rep)
    assert t.loc[("rnd", "Enron"), ("TGN", "reproduced")] == tables.NOT_REPRODUCED  # a row without a mean
    assert t.loc[("rnd", "MOOC"), ("TGN", "reproduced")] == tables.NOT_REPRODUCED  # no row at all
    assert "" not in reproduced_cells(t) and "at this scale" in tables.NOT_REPRODUCED
    placeholder = frame([("MOOC", "TGN", math.nan)]).assign(note=f"{tables.NOT_YET}: no run")
    assert tables.comparison(pub, placeholder).loc[("rnd", "MOOC"), ("TGN", "reproduced")] == tables.NOT_YET


@pytest.mark.parametrize("paper", ["dyg_mamba", "time2vec"])
def test_every_published_cell_of_a_reproduced_table_has_words_or_a_number(reg, tmp_path, paper, monkeypatch):
    """One reproduced cell per table: every other cell of it says it was not reproduced (Markdown and LaTeX)."""
    from collections import defaultdict

    import matplotlib.pyplot as plt

    # (a figure's renderer needs its own rows: one cell per artifact draws nothing)
    monkeypatch.setattr(figures, "RENDERERS", defaultdict(lambda: lambda df, meta: plt.figure()))
    monkeypatch.setattr(figures, "save", lambda fig, stem: plt.close(fig) or [])

    rows = []
    for art in reg.implemented(paper):
        pub = published.load(paper, art["id"])
        if not pub.empty and art["status"] != "qualitative":
            first = pub.iloc[0]
            rows.append({"artifact": art["id"], "row_group": first["row_group"], "row": first["row"],
                         "column": first["column"], "metric": first["metric"], "mean": 1.5})
    assert rows
    write_aggregate(tmp_path, paper, rows)
    render.render_paper(reg, paper, "offline", tmp_path)
    for r in rows:
        md = (tmp_path / "tables" / paper / f"{r['artifact']}.md").read_text()
        body = [line for line in md.splitlines() if line.startswith("| ") and "(published)" not in line]
        head = next(line for line in md.splitlines() if line.startswith("| "))
        rep_cols = [i for i, h in enumerate(head.split(" | ")) if h.strip(" |").endswith("(reproduced)")]
        for line in body:
            cells = line.split(" | ")
            assert all(cells[i].strip(" |") for i in rep_cols), f"{paper} {r['artifact']}: a blank cell in {line}"
        assert tables.NOT_REPRODUCED in md or len(body) == 1
        assert "Reproduced at scale offline" in (tmp_path / "tables" / paper / f"{r['artifact']}.tex").read_text()


# ------------------------------------------------------------------ no delta over another set

def _record(model, dataset, ap):
    return {"config": {"model": model, "dataset": dataset, "seed": 0, "task": "link_prediction"},
            "metrics": {"test_inductive_random_ap": ap}, "provenance": {}}


def test_dyg_mamba_ranks_over_fewer_datasets_are_not_comparable_and_carry_no_delta():
    recs = [_record(m, d, ap) for d in ("uci", "enron", "wikipedia")
            for m, ap in (("dyg_mamba", 0.9), ("tgn", 0.8), ("jodie", 0.7))]
    rows = lp_tables.dm_table2(recs)
    notes = {(r["row"], r["column"]): r["note"] for r in rows}
    assert notes[(AVG_RANK, "DyG-Mamba")].startswith(tables.NOT_COMPARABLE)
    assert "over 3 reproduced datasets" in notes[(AVG_RANK, "DyG-Mamba")] and "12 datasets" in notes[(AVG_RANK, "DyG-Mamba")]
    assert notes[(lp_tables.COUNT_ROW, "DyG-Mamba")].startswith(tables.NOT_COMPARABLE)
    rep = pd.DataFrame([{**KEY, **{k: r[k] for k in ("row", "column", "metric", "mean", "std", "note")},
                         "data_kind": "real", "scale": "paper"} for r in rows])
    t = tables.comparison(published.load("dyg_mamba", "table2"), rep)
    assert t.loc[("rnd", AVG_RANK), ("DyG-Mamba", "published")] == "1.08"
    assert t.loc[("rnd", AVG_RANK), ("DyG-Mamba", tables.DELTA)] == ""  # a rank over 3 datasets, the paper's over 12
    assert t.loc[("rnd", lp_tables.COUNT_ROW), ("DyG-Mamba", tables.DELTA)] == ""
    assert t.loc[("rnd", "UCI"), ("DyG-Mamba", tables.DELTA)] == "-4.15"  # a real cell keeps its delta (90 - 94.15)
    assert "another set than the paper's" in tables.provenance_line("paper", rep)


def test_a_rank_over_the_papers_own_datasets_and_models_is_comparable():
    datasets, models = lp_tables.paper_sets("table4", "rnd")
    assert len(datasets) == 12 and "DyG-Mamba" in models and "FreeDyG" not in models
    means = {(d, m): 1.0 for d in datasets for m in models}
    assert not lp_tables.rank_note("average rank", lp_tables.ranked_sets(means), (datasets, models)).startswith(
        tables.NOT_COMPARABLE)
    fewer = {k: v for k, v in means.items() if k[1] != "TGN"}  # every dataset, one model fewer
    assert lp_tables.rank_note("average rank", lp_tables.ranked_sets(fewer), (datasets, models)).startswith(
        tables.NOT_COMPARABLE)


# ------------------------------------------------------------------ Markdown, LaTeX, HTML, figures

def test_rendered_markdown_carries_a_visible_caption_and_line_not_only_a_comment(reg, tmp_path):
    write_aggregate(tmp_path, "dyg_mamba", [{"artifact": "table2", "row_group": "rnd", "row": "UCI",
                                             "column": "JODIE", "metric": "AP_inductive_random", "mean": 88.5}])
    render.render_paper(reg, "dyg_mamba", "offline", tmp_path)
    md = (tmp_path / "tables" / "dyg_mamba" / "table2.md").read_text()
    visible = re.sub(r"<!--.*?-->", "", md, flags=re.S)
    assert "**dyg_mamba table2:" in visible and "_Reproduced at scale offline on synthetic stand-ins" in visible
    assert "88.50" in visible and "88.50 [" not in visible  # one kind: no marks
    tex = (tmp_path / "tables" / "dyg_mamba" / "table2.tex").read_text()
    assert re.search(r"\\caption\{dyg\\_mamba table2: .*Reproduced at scale offline on synthetic stand-ins", tex)


def test_every_figure_states_scale_and_data_kind_even_if_its_renderer_forgets(reg, tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    art = next(a for a in reg.implemented("dyg_mamba") if a.get("render"))
    figures.RENDERERS[art["render"]]  # filled before its entry is replaced by one that forgets the stamp
    monkeypatch.setitem(figures.RENDERERS._entries, art["render"], lambda df, meta: plt.figure())
    saved = {}
    monkeypatch.setattr(figures, "save", lambda fig, stem: saved.setdefault(stem.name, [t.get_text() for t in fig.texts]) and [])
    write_aggregate(tmp_path, "dyg_mamba", [{"artifact": art["id"], "row_group": "g", "row": "r", "column": "c",
                                             "metric": "m", "mean": 1.5, "data": "UCI stand-in (offline)"}])
    render.render_paper(reg, "dyg_mamba", "offline", tmp_path)
    (text,) = saved[art["id"]]
    assert "scale=offline" in text and "stand-in (proves the pipeline, not the paper)" in text and "UCI stand-in" in text
    fig = plt.figure()
    meta = {"scale": "paper", "data": "UCI", "data_words": "real"}
    figures.stamp(fig, meta)
    figures.stamp(fig, meta)
    assert [t.get_text() for t in fig.texts] == ["reproduced · scale=paper · real · UCI"]  # once
    plt.close("all")


def test_many_cells_below_edgebank_make_one_footnote_line_linked_from_each_mark(reg, tmp_path):
    rows = [{"artifact": "table1", "row_group": "TGAT", "row": enc, "column": ds, "metric": "AP_random_NS_test",
             "mean": 40.0 + i} for i, (enc, ds) in enumerate((e, d) for e in ("Linear", "Sinusoidal")
                                                             for d in ("UCI", "Enron", "Reddit"))]
    write_aggregate(tmp_path, "linear_time", rows)
    write_aggregate(tmp_path, "dyg_mamba", [{"artifact": "table4", "row_group": "rnd", "row": d, "column": "EdgeBank",
                                             "metric": "AP_transductive_random", "mean": 90.0}
                                            for d in ("UCI", "Enron", "Reddit")])
    render.render_paper(reg, "linear_time", "offline", tmp_path)
    md = (tmp_path / "tables" / "linear_time" / "table1.md").read_text()
    notes = [line for line in md.splitlines() if "below EdgeBank" in line]
    assert len(notes) == 1 and "6 cells" in notes[0] and md.count(f" {suspects.MARK} |") == 6
    atomic_write_json(claims.claims_path(tmp_path), [])
    page = Path(html.build(reg, "offline", tmp_path)).read_text()
    assert page.count("<a class='notemark' href='#linear_time-table1-suspects'>†</a>") == 6
    box = page.split("id='linear_time-table1-suspects'>")[1].split("</div>")[0]
    assert "6 cells" in box and "<details><summary>every cell</summary>" in box and box.count("<br>") >= 5


# ------------------------------------------------------------------ the first screen

def test_the_first_screen_groups_each_verdicts_claims_by_the_data_behind_them():
    v = lambda i, verdict, data: {"paper": "p", "id": i, "text": f"claim {i}", "verdict": verdict, "data": data,
                                  "detail": "why", "scale": "offline", "n_cells": 1}
    table = html.verdict_table([v("c01", claims.HOLDS, "real cut"), v("c02", claims.PENDING, "stand-in"),
                                v("c03", claims.PENDING, "real cut"), v("c04", claims.PENDING, "stand-in"),
                                v("c05", claims.NEVER, claims.NO_CELLS)])
    pending = table.split("<tr><th><a href='#p-claims'>p</a></th>")[1].split("<td>")[3]
    assert pending.startswith("<span class='n'>3</span>")
    # real cut before stand-in, each with its count and its claims' links
    assert re.search(r"real cut 1: <a href='#p-claim-c03'.*?stand-in 2: <a href='#p-claim-c02'.*?#p-claim-c04", pending)
    assert "title='claim c03 | why'" in pending


def test_the_page_header_says_what_the_scale_is(reg, tmp_path):
    atomic_write_json(claims.claims_path(tmp_path), [])
    page = Path(html.build(reg, "smoke", tmp_path)).read_text()
    assert reg.scales["scales"]["smoke"]["description"] in page.split("</header>")[0]


def _lp(encoder, dataset, test):
    return {"config": {"model": "tgat", "encoder": encoder, "dataset": dataset, "dropout": 0.1, "seed": 0,
                       "experiment": "lp_tgat"},
            "metrics": {"val_transductive_random_ap": 0.5, "test_transductive_random_ap": test}}


def test_linear_time_wins_over_fewer_datasets_than_the_papers_carry_no_delta():
    from timerepro.report import link_prediction as lp
    from timerepro.report.linear_time import ap_tables

    few = [_lp(e, "uci", t) for e, t in (("linear", 0.9), ("cosine", 0.8), ("cosine_scale", 0.7))]
    wins = {r["row"]: r for r in ap_tables.lp_ap_random(few) if r["metric"] == lp.WINS_METRIC}
    assert wins["Linear"]["mean"] == 1 and wins["Linear"]["note"].startswith(tables.NOT_COMPARABLE)
    assert "over 3 reproduced cells (UCI), the paper's over 18" in wins["Linear"]["note"]
    printed = published.load("linear_time", "table1")
    printed = printed[(printed["row_group"] == "TGAT") & (printed["metric"] == "AP_random_NS_test")]
    labels = {"Linear": "linear", "Sinusoidal": "cosine", "Sinusoidal-scale": "cosine_scale"}
    datasets = {"Wikipedia": "wikipedia", "Reddit": "reddit", "LastFM": "lastfm", "Enron": "enron", "UCI": "uci",
                "US Legis": "uslegis"}
    every = [_lp(labels[r.row], datasets[r.column], r.mean / 100) for r in printed.itertuples()]
    full = {r["row"]: r for r in ap_tables.lp_ap_random(every) if r["metric"] == lp.WINS_METRIC}
    assert not full["Linear"]["note"].startswith(tables.NOT_COMPARABLE)  # the paper's 18 cells: comparable
    assert full["Linear"]["mean"] == 4  # the paper's own count, from its own cells
