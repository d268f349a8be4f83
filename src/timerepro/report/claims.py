"""Checkable claims: each rule reads aggregated (reproduced) numbers and returns a verdict.

Verdicts: `holds`, `fails`, or `cannot be evaluated yet` (no rule implemented, the artifact it
needs has not been regenerated at this scale, or its numbers come from synthetic stand-ins: then
the detail says what the verdict would be). Rules never read published values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from timerepro.io import atomic_write_json
from timerepro.paths import results_dir
from timerepro.registry import PAPERS, Registry

from . import aggregate

HOLDS, FAILS, PENDING = "holds", "fails", "cannot be evaluated yet"
RULES: dict[str, Callable[[pd.DataFrame], tuple[str, str]]] = {}


def rule(name: str):
    def deco(fn):
        RULES[name] = fn
        return fn

    return deco


@rule("linear_not_worse_at_min_dim")
def linear_not_worse_at_min_dim(df: pd.DataFrame) -> tuple[str, str]:
    """linear_time c17: at the smallest d_T, linear >= both sinusoidal variants in every panel."""
    fig = df[(df["artifact"] == "fig2") & (df["metric"] == "test_accuracy")]
    if fig.empty:
        return PENDING, "fig2 has no reproduced runs at this scale"
    details, ok = [], True
    for panel, g in fig.groupby("row_group"):
        dmin = min(g["column"].astype(int))
        at = g[g["column"].astype(int) == dmin].set_index("row")["mean"]
        if "Linear" not in at or len(at) < 2:
            return PENDING, f"{panel}: not every encoder was run at d_T={dmin}"
        others = at.drop("Linear")
        good = bool((at["Linear"] >= others).all())
        ok &= good
        details.append(f"{panel} d_T={dmin}: linear {at['Linear']:.3f} vs " + ", ".join(f"{k.lower()} {v:.3f}" for k, v in others.items()) + (" ok" if good else " NOT >="))
    return (HOLDS if ok else FAILS), "; ".join(details)


@rule("attention_closer_at_larger_dim")
def attention_closer_at_larger_dim(df: pd.DataFrame) -> tuple[str, str]:
    """linear_time c18: L1(learned, true) smaller at d_T=8 than d_T=2, and learned rises with m."""
    fig = df[(df["artifact"] == "fig3") & (df["metric"] == "attention_score")]
    groups = {g: sub for g, sub in fig.groupby("row_group")}
    if not {"d_T=2", "d_T=8"} <= set(groups):
        return PENDING, "fig3 needs both d_T=2 and d_T=8 runs"

    def curve(g, row):
        sub = groups[g][groups[g]["row"] == row]
        return sub.assign(m=sub["column"].astype(int)).sort_values("m")["mean"].to_numpy()

    l1 = {g: float(np.abs(curve(g, "Learned (linear)") - curve(g, "True")).sum()) for g in ("d_T=2", "d_T=8")}
    rising = {g: bool(np.all(np.diff(curve(g, "Learned (linear)")) > 0)) for g in ("d_T=2", "d_T=8")}
    ok = l1["d_T=8"] < l1["d_T=2"] and all(rising.values())
    detail = (f"L1 to true: d_T=2 {l1['d_T=2']:.4f}, d_T=8 {l1['d_T=8']:.4f}; "
              f"learned increasing in m: d_T=2 {rising['d_T=2']}, d_T=8 {rising['d_T=8']}")
    return (HOLDS if ok else FAILS), detail


def on_standins(df: pd.DataFrame, artifacts: str, row_group: str | None = None) -> bool:
    """True when reproduced rows of `artifacts` ("table2" or "table7, table8"), optionally of one row group,
    were computed on synthetic stand-ins: they prove the pipeline, not the paper."""
    if "data" not in df.columns:
        return False
    sel = df[df["artifact"].isin([a.strip() for a in str(artifacts).split(",")])]
    if row_group is not None:
        sel = sel[sel["row_group"] == row_group]
    return bool(sel["data"].astype(str).str.contains("stand-in").any())


def withheld_on_standins(verdict: str, detail: str) -> tuple[str, str]:
    """A verdict computed on stand-ins is reported as not yet evaluable, with what it would be."""
    if verdict == PENDING:
        return verdict, detail
    return PENDING, f"on synthetic stand-ins only (would be {verdict}): {detail}"


def evaluate(reg: Registry, results: Path | None = None) -> list[dict]:
    from . import families

    families.load()
    out = []
    for paper in PAPERS:
        df = aggregate.read(paper, results)
        for claim in reg.papers[paper]["claims"]:
            name = claim.get("rule")
            if not name:
                verdict, detail = PENDING, "no rule implemented yet for this claim"
            elif name not in RULES:
                verdict, detail = PENDING, f"rule {name!r} is not registered"
            else:
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
