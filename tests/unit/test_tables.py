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
    assert row[("Enron", "reproduced")] == "" and row[("Enron", tables.DELTA)] == ""


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
