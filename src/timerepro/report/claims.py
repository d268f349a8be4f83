"""Checkable claims (engine: no paper here): each rule reads aggregated (reproduced) numbers and returns a verdict.

A rule is a function of a paper module marked `@rule("name")` (params/<paper>.yaml claims `rule:`),
`df -> (verdict, detail)` where df is the paper's aggregated rows. Verdicts: `holds`, `fails`, or
`cannot be evaluated yet` (no rule implemented, the artifact it needs has not been regenerated at this
scale, or its rows were computed on synthetic stand-ins, `data_kind` `standin`: then the detail says
what the verdict would be). A verdict never reads a published value; a detail that quotes the paper's
figure computes it from the published values (`report.published`) with the same function.
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

HOLDS, FAILS, PENDING = "holds", "fails", "cannot be evaluated yet"
RULES: Catalog[Callable[[pd.DataFrame], tuple[str, str]]] = Catalog("claim rule", fill=lambda: families.fill(RULES))
rule = RULES.register  # @rule("name") on a function of a module listed in report/families.py


def on_standins(df: pd.DataFrame, artifacts: str, row_group: str | None = None) -> bool:
    """True when reproduced rows of `artifacts` ("table2" or "table7, table8"), optionally of one row group,
    were computed on synthetic stand-ins (their `data_kind`): they prove the pipeline, not the paper."""
    if "data_kind" not in df.columns:
        return False
    sel = df[df["artifact"].isin([a.strip() for a in str(artifacts).split(",")])]
    if row_group is not None:
        sel = sel[sel["row_group"] == row_group]
    return any(datakind.proves_pipeline_only(cell) for cell in sel["data_kind"])


def withheld_on_standins(verdict: str, detail: str) -> tuple[str, str]:
    """A verdict computed on stand-ins is reported as not yet evaluable, with what it would be."""
    if verdict == PENDING:
        return verdict, detail
    return PENDING, f"on synthetic stand-ins only (would be {verdict}): {detail}"


def evaluate(reg: Registry, results: Path | None = None) -> list[dict]:
    out = []
    for paper in PAPERS:
        df = aggregate.read(paper, results)
        for claim in reg.papers[paper]["claims"]:
            name = claim.get("rule")
            if not name:
                verdict, detail = PENDING, "no rule implemented yet for this claim"
            else:  # a rule name params/ uses is registered: checked when params/ loaded
                verdict, detail = RULES[name](df)
                if on_standins(df, claim["artifact"]):
                    verdict, detail = withheld_on_standins(verdict, detail)
            out.append({"paper": paper, "id": claim["id"], "artifact": claim["artifact"], "text": claim["text"],
                        "check": claim.get("check", ""), "rule": name, "verdict": verdict, "detail": detail})
    return out


def claims_path(results: Path | None = None) -> Path:
    return (results or results_dir()) / "claims.json"


def write(reg: Registry, results: Path | None = None) -> Path:
    return atomic_write_json(claims_path(results), evaluate(reg, results))
