"""Checkable claims (engine: no paper here): each rule reads aggregated (reproduced) numbers and returns a verdict.

A rule is a function of a paper module marked `@rule("name")` (params/<paper>.yaml claims `rule:`),
`df -> (verdict, detail)` or `df -> (verdict, detail, cells)`, where df is the paper's aggregated rows and `cells`
the rows the rule read (default: every row of the claim's artifacts). Verdicts:
- `holds` / `fails`;
- `cannot be evaluated yet`: no rule, the cells it reads are missing or incomplete at this scale (the detail says
  which), or one of the cells it read was computed on a synthetic stand-in (`data_kind` `standin`: the detail says
  what the verdict would be). Withholding is decided per claim, from the cells that claim read;
- `never here`: params/<paper>.yaml declares `never_here:` on the claim (the data cannot be had, or the claim is
  about a measurement this machine cannot make); the detail says why and what would decide it, before any run.
A verdict never reads a published value; a detail that quotes the paper's figure computes it from the published
values (`report.published`) with the same function. Every verdict lists the cells it read, each with its data kind
and scale, and the words for that data (`data_words`): real, real cut (below paper scale), stand-in, ...
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

from timerepro import datakind
from timerepro.catalog import Catalog
from timerepro.io import atomic_write_json
from timerepro.paths import results_dir
from timerepro.registry import PAPERS, Registry

from . import aggregate, families
from .badges import NO_CELLS, data_words

HOLDS, FAILS, PENDING, NEVER = "holds", "fails", "cannot be evaluated yet", "never here"
VERDICTS = (HOLDS, FAILS, PENDING, NEVER)
RULES: Catalog[Callable[[pd.DataFrame], tuple]] = Catalog("claim rule", fill=lambda: families.fill(RULES))
rule = RULES.register  # @rule("name") on a function of a module listed in report/families.py

CELL_KEYS = ("artifact", "row_group", "row", "column", "metric")


def on_standins(df: pd.DataFrame, artifacts: str | None = None, row_group: str | None = None) -> bool:
    """True when reproduced rows (of `artifacts`, "table2" or "table7, table8", and optionally one row group) were
    computed on synthetic stand-ins (their `data_kind`): they prove the pipeline, not the paper."""
    if "data_kind" not in df.columns:
        return False
    sel = df if artifacts is None else df[df["artifact"].isin([a.strip() for a in str(artifacts).split(",")])]
    if row_group is not None:
        sel = sel[sel["row_group"] == row_group]
    return any(datakind.proves_pipeline_only(cell) for cell in sel["data_kind"])


def withheld_on_standins(verdict: str, detail: str) -> tuple[str, str]:
    """A verdict computed on stand-ins is reported as not yet evaluable, with what it would be."""
    if verdict in (PENDING, NEVER):
        return verdict, detail
    return PENDING, f"on synthetic stand-ins only (would be {verdict}): {detail}"


def real_rows(read: pd.DataFrame) -> pd.DataFrame:
    """The rows of `read` computed on real data (no synthetic stand-in behind them): the part of an incomplete or
    partly stand-in table that can still refute a claim about every cell."""
    if read.empty or "data_kind" not in read.columns:
        return read
    return read[~read["data_kind"].map(datakind.proves_pipeline_only)]


def data_of(rows: pd.DataFrame) -> str:
    """The data behind some rows, as a verdict names it: their `data` labels with kind and scale, e.g. "real UCI,
    minute resolution, package copy (package_copy, offline)"."""
    cols = [c for c in ("data", "data_kind", "scale") if c in rows.columns]
    if not cols:
        return "cells without a data label"
    seen = dict.fromkeys(tuple("" if pd.isna(v) else str(v) for v in r) for r in rows[cols].itertuples(index=False))
    return "; ".join(f"{d[0]} ({', '.join(x for x in d[1:] if x)})" if len(d) > 1 else d[0] for d in seen) or "no cells"


def cells_of(df: pd.DataFrame, artifacts: str) -> pd.DataFrame:
    """The rows of a claim's artifacts ("fig8, fig9") that carry a number (placeholders dropped)."""
    if df.empty:
        return df
    sel = df[df["artifact"].isin([a.strip() for a in str(artifacts).split(",")])]
    return sel.dropna(subset=["mean"]) if "mean" in sel.columns else sel


def cell_list(cells: pd.DataFrame) -> list[dict]:
    """The cells a verdict read, as records: their keys, data kind and scale."""
    if cells is None or cells.empty:
        return []
    cols = [c for c in (*CELL_KEYS, "data_kind", "scale") if c in cells.columns]
    return [{c: ("" if pd.isna(v) else str(v)) for c, v in zip(cols, row)}
            for row in cells[cols].drop_duplicates().itertuples(index=False)]


def missing_cells(read: pd.DataFrame, expected: pd.DataFrame, keys=("row_group", "row", "column")) -> list[str]:
    """The `expected` cells (e.g. the published cells a claim covers) that `read` lacks a number for, by `keys`:
    a claim about a whole table is not judged on part of it."""
    have = set(map(tuple, read.dropna(subset=["mean"])[list(keys)].astype(str).to_numpy())) if not read.empty else set()
    want = list(dict.fromkeys(map(tuple, expected[list(keys)].astype(str).to_numpy())))
    return [" / ".join(k) for k in want if k not in have]


def select(df: pd.DataFrame, artifact: str, metrics, rows=None, columns=None) -> pd.DataFrame:
    """The rows a rule reads: of `artifact` and `metrics`, optionally some `rows` and `columns` only."""
    sel = df[(df["artifact"] == artifact) & df["metric"].isin(list(metrics))]
    for col, allowed in (("row", rows), ("column", columns)):
        sel = sel if allowed is None else sel[sel[col].isin(list(allowed))]
    return sel


def covered(df: pd.DataFrame, paper: str, artifact: str, metric: str, *, row_groups=None, rows=None,
            columns=None) -> tuple[pd.DataFrame, list[str]]:
    """The reproduced cells of one table a claim covers (optionally some row groups, rows, columns) and the published
    cells among them that have no reproduced number: only the keys of the published rows are read, never a value."""
    from . import published  # the published file names the cells a claim about a printed table covers

    def pick(t: pd.DataFrame) -> pd.DataFrame:
        t = t[(t["artifact"] == artifact) & (t["metric"] == metric)]
        for col, allowed in (("row_group", row_groups), ("row", rows), ("column", columns)):
            if allowed is not None:
                t = t[t[col].isin(list(allowed))]
        return t

    read = pick(df).dropna(subset=["mean"]) if not df.empty else df
    return read, missing_cells(read, pick(published.load(paper)).dropna(subset=["mean"]))  # a cell printed empty ("—") is not asked for


def incomplete(missing: list[str], what: str, shown: int = 4) -> str:
    """The detail of a verdict withheld for missing cells."""
    more = f" and {len(missing) - shown} more" if len(missing) > shown else ""
    return f"{what} lacks {len(missing)} cell(s) the claim covers: {'; '.join(missing[:shown])}{more}"


def judge(claim: dict, df: pd.DataFrame) -> dict:
    """One claim's verdict on the aggregated rows df, with the cells it read and the words for their data."""
    name = claim.get("rule")
    read = cells_of(df, claim["artifact"])
    if name:  # a rule name params/ uses is registered: checked when params/ loaded
        out = RULES[name](df)
        verdict, detail = out[0], out[1]
        if len(out) > 2 and out[2] is not None:
            read = out[2].dropna(subset=["mean"]) if "mean" in out[2].columns else out[2]
        if on_standins(read):
            verdict, detail = withheld_on_standins(verdict, detail)
            if not real_rows(read).empty:  # not "only": some of the cells it read are real
                detail = detail.replace("on synthetic stand-ins only", "partly on synthetic stand-ins", 1)
        elif verdict in (HOLDS, FAILS) and read.empty:  # it read cells it does not name: their data is unknown
            verdict, detail = PENDING, (f"the rule read no cell of {claim['artifact']} and names none it read, so "
                                        f"their data cannot be checked (would be {verdict}): {detail}")
    else:
        verdict, detail = PENDING, "no rule implemented yet for this claim"
    if claim.get("never_here"):
        would = f" (not a verdict: what this machine's cells show: {detail})" if name and not read.empty else ""
        verdict, detail = NEVER, claim["never_here"] + would
    elif verdict == PENDING and read.empty and name:
        detail = f"no reproduced cells of {claim['artifact']} at this scale; {detail}"
    return {"paper": claim.get("paper", ""), "id": claim["id"], "artifact": claim["artifact"], "text": claim["text"],
            "check": claim.get("check", ""), "rule": name, "verdict": verdict, "detail": detail,
            "data": data_words(read), "scale": "; ".join(sorted(set(map(str, read["scale"])))) if "scale" in read else "",
            "n_cells": len(cell_list(read)), "cells": cell_list(read)}


def evaluate(reg: Registry, results: Path | None = None) -> list[dict]:
    out = []
    for paper in PAPERS:
        df = aggregate.read(paper, results)
        out += [judge({**claim, "paper": paper}, df) for claim in reg.papers[paper]["claims"]]
    return out


def tally(verdicts: list[dict]) -> dict[str, dict]:
    """paper -> {verdict: count, "data": {verdict: {data words: count}}}: what `timerepro claims` and the report's
    first screen print."""
    out: dict[str, dict] = {}
    for v in verdicts:
        t = out.setdefault(v["paper"], {**{k: 0 for k in VERDICTS}, "data": {k: {} for k in VERDICTS}})
        t[v["verdict"]] += 1
        by = t["data"][v["verdict"]]
        by[v.get("data", NO_CELLS)] = by.get(v.get("data", NO_CELLS), 0) + 1
    return out


SHORT = {HOLDS: "hold", FAILS: "fail", PENDING: "cannot yet", NEVER: "never here"}


def tally_line(t: dict) -> str:
    """'2 hold (real cut 2) · 1 fail (stand-in 1) · ...' for one paper's tally."""
    parts = []
    for v in VERDICTS:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(t["data"][v].items()))
        parts.append(f"{t[v]} {SHORT[v]}" + (f" ({kinds})" if t[v] and v != NEVER else ""))
    return " · ".join(parts)


def claims_path(results: Path | None = None) -> Path:
    return (results or results_dir()) / "claims.json"


def write(reg: Registry, results: Path | None = None) -> Path:
    return atomic_write_json(claims_path(results), evaluate(reg, results))
