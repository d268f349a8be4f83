"""Comparison tables: published numbers only under `published` headings."""

import pandas as pd

from timerepro.report import tables

KEY = dict(paper="p", artifact="table1", metric="AP", row_group="TGAT")


def frame(rows):
    return pd.DataFrame([{**KEY, "row": r, "column": c, "mean": m, "std": s} for r, c, m, s in rows])


def test_published_and_reproduced_in_labelled_columns_with_delta():
    pub = frame([("Linear", "UCI", 95.41, 0.06), ("Linear", "Enron", 82.31, 0.08)])
    rep = frame([("Linear", "UCI", 90.00, 1.00)])
    t = tables.comparison(pub, rep)
    assert list(t.columns) == [("UCI", "published"), ("UCI", "reproduced"), ("UCI", tables.DELTA),
                               ("Enron", "published"), ("Enron", "reproduced"), ("Enron", tables.DELTA)]
    row = t.loc[("TGAT", "Linear")]
    assert row[("UCI", "published")] == "95.41 ± 0.06"
    assert row[("UCI", "reproduced")] == "90.00 ± 1.00"
    assert row[("UCI", tables.DELTA)] == "-5.41"
    assert row[("Enron", "reproduced")] == tables.NOT_REPRODUCED and row[("Enron", tables.DELTA)] == ""


def test_no_delta_beside_a_stand_in_a_configuration_echo_or_a_row_not_comparable():
    pub = frame([("Linear", "UCI", 95.41, 0.06), ("Sinusoidal", "UCI", 90.0, 0.1)])
    rep = frame([("Linear", "UCI", 90.00, 1.00), ("Sinusoidal", "UCI", 80.0, 1.0)]).assign(data_kind="real", note="")
    assert tables.comparison(pub, rep).loc[("TGAT", "Linear"), ("UCI", tables.DELTA)] == "-5.41"
    standin = tables.comparison(pub, rep.assign(data_kind="standin"))
    assert tables.DELTA not in {s for _, s in standin.columns}  # every row a stand-in: no delta column at all
    mixed = tables.comparison(pub, rep.assign(data_kind=["real", "real+standin"]))
    assert mixed.loc[("TGAT", "Linear"), ("UCI", tables.DELTA)] == "-5.41"
    assert mixed.loc[("TGAT", "Sinusoidal"), ("UCI", tables.DELTA)] == ""
    ranks = tables.comparison(pub, rep.assign(note=["", tables.NOT_COMPARABLE + ": ranks over 3 datasets, not 12"]))
    assert ranks.loc[("TGAT", "Sinusoidal"), ("UCI", tables.DELTA)] == ""
    assert tables.DELTA not in {s for _, s in tables.comparison(pub, rep, delta=False).columns}


def test_every_rendering_states_scale_and_data_where_a_reader_sees_it():
    pub = frame([("Linear", "UCI", 95.41, 0.06)])
    rep = frame([("Linear", "UCI", 90.0, 1.0)]).assign(data_kind="standin", scale="offline", note="")
    line = tables.provenance_line("offline", rep)
    assert "scale offline" in line and "stand-in" in line and "No delta" in line
    t = tables.comparison(pub, rep)
    md, tex, htm = tables.to_markdown(t, line), tables.to_latex(t, "cap", line), tables.to_html(t, line)
    assert md.startswith(f"_{line}_") and "<!--" not in md
    assert r"\caption{cap. Reproduced at scale offline" in tex and "stand-ins" in tex
    assert "tableline" in htm and "scale offline" in htm
    real_cut = tables.provenance_line("offline", rep.assign(data_kind="real"))
    real = tables.provenance_line("paper", rep.assign(data_kind="real", scale="paper"))
    assert "real data below paper scale" in real_cut and "real data at paper scale" in real
    assert "nothing reproduced" in tables.provenance_line("smoke", rep.iloc[:0])


def test_many_notes_of_one_kind_are_summarised_in_one_line():
    lines = [f"cell {i}" for i in range(19)]
    out = tables.summarise(lines, "below EdgeBank")
    assert out == ["below EdgeBank: 19 cells; the first 3: cell 0 · cell 1 · cell 2"]
    assert tables.summarise(lines[:2], "x") == lines[:2]


def test_without_reproduction_there_is_no_reproduced_column():
    t = tables.comparison(frame([("Linear", "UCI", 95.41, 0.06)]), frame([]).reindex(columns=list(KEY) + ["row", "column", "mean", "std"]))
    assert {s for _, s in t.columns} == {"published"}
    assert "95.41" in tables.to_markdown(t) and "(published)" in tables.to_markdown(t)


def test_counts_print_as_integers_and_metric_joins_row_only_when_needed():
    assert tables._fmt(1899.0, 0.0) == "1899" and tables._fmt(0.25, 0.01) == "0.25 ± 0.01"
    pub = pd.concat([frame([("Linear", "UCI", 95.4, 0.1)]), frame([("Linear", "UCI", 3.0, None)]).assign(metric="wins")])
    assert tables.comparison(pub, pub.iloc[:0]).index.nlevels == 3


def test_numeric_columns_sorted_numerically():
    rep = frame([("Linear", "16", 0.9, 0.0), ("Linear", "2", 0.8, 0.0), ("Linear", "4", 0.85, 0.0)])
    t = tables.comparison(frame([]).reindex(columns=rep.columns), rep)
    assert [c for c, _ in t.columns] == ["2", "4", "16"]
    assert r"\begin{tabular}" in tables.to_latex(t, "caption") and "<table>" in tables.to_html(t)
