"""Claims on the link-prediction and node-classification tables: C01-C09 (ranks, best counts) and C21 (the
printed average ranks are recomputable)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..claims import FAILS, HOLDS, PENDING, rule
from .common import AVG_RANK, NSS, OURS, RIVAL, average_ranks, published_quote


def _two_ranks(artifact: str, metric: str):
    def quote(pub) -> str:
        r = _ranks(pub, artifact, metric)
        r = r[~r.index.duplicated()]  # a rank printed twice (e.g. under two row groups) is quoted once
        return ", ".join(f"{m} {r[m]:.2f}" for m in (OURS, RIVAL))
    return quote


def _table(df: pd.DataFrame, artifact: str, metric: str) -> pd.DataFrame:
    """dataset x model means of one block (Avg. Rank rows excluded)."""
    t = df[(df["artifact"] == artifact) & (df["metric"] == metric) & (df["row"] != AVG_RANK)]
    return t.pivot_table(index="row", columns="column", values="mean")


def _ranks(df: pd.DataFrame, artifact: str, metric: str) -> pd.Series:
    t = df[(df["artifact"] == artifact) & (df["metric"] == f"avg_rank_{metric}") & (df["row"] == AVG_RANK)]
    return t.groupby("column")["mean"].first().sort_values()  # one rank per model (published rows may repeat one)


def _need(df: pd.DataFrame, artifact: str, metric: str, models=(OURS,)) -> str | None:
    """A reason why a table cannot be judged yet, or None."""
    t = _table(df, artifact, metric)
    if t.empty:
        return f"{artifact} has no reproduced {metric} cells at this scale"
    missing = [m for m in models if m not in t.columns]
    if missing:
        return f"{artifact} has no {', '.join(missing)} cells at this scale"
    return None


def _lowest_rank(df: pd.DataFrame, artifact: str, metrics: list[str]) -> tuple[str, str]:
    details, ok = [], True
    for metric in metrics:
        if (why := _need(df, artifact, metric)):
            return PENDING, why
        r = _ranks(df, artifact, metric)
        best = r.index[0] if len(r) else None
        ok &= best == OURS and r.iloc[0] < (r.iloc[1] if len(r) > 1 else np.inf)
        details.append(f"{metric}: " + ", ".join(f"{m} {v:.2f}" for m, v in r.head(3).items()))
    return (HOLDS if ok else FAILS), "; ".join(details) + f" (models ranked: {len(_ranks(df, artifact, metrics[0]))})"


@rule("dm_c01")
def dm_c01(df):
    """C01: DyG-Mamba has the lowest average rank in Table 2 and DyGFormer the second lowest."""
    metric = "AP_inductive_random"
    if (why := _need(df, "table2", metric, (OURS, RIVAL))):
        return PENDING, why
    r = _ranks(df, "table2", metric)
    ok = list(r.index[:2]) == [OURS, RIVAL]
    return (HOLDS if ok else FAILS), "average ranks: " + ", ".join(f"{m} {v:.2f}" for m, v in r.items()) + f" (published {published_quote(_two_ranks('table2', metric))})"


@rule("dm_c02")
def dm_c02(df):
    """C02: DyG-Mamba is best on all but at most one dataset in Table 2 (published: 11 of 12)."""
    metric = "AP_inductive_random"
    if (why := _need(df, "table2", metric)):
        return PENDING, why
    t = _table(df, "table2", metric)
    best = t.idxmax(axis=1)
    n = int((best == OURS).sum())
    return (HOLDS if n >= len(t) - 1 else FAILS), f"best on {n} of {len(t)} reproduced datasets ({', '.join(best[best != OURS].index)} not)"


@rule("dm_c03")
def dm_c03(df):
    """C03: node classification: DyG-Mamba first on Reddit, second on Wikipedia, lower average rank than DyGFormer."""
    metric = "AUC_node_classification"
    t = df[(df["artifact"] == "table3") & (df["metric"] == metric)].pivot_table(index="row", columns="column", values="mean")
    if t.empty or OURS not in t.columns or RIVAL not in t.columns:
        return PENDING, "table3 needs DyG-Mamba and DyGFormer cells"
    need = [d for d in ("Reddit", "Wikipedia") if d not in t.index]
    if need:
        return PENDING, f"table3 has no {', '.join(need)} row at this scale"
    rank = t.rank(axis=1, ascending=False, method="min")
    r = _ranks(df, "table3", metric)
    ok = rank.loc["Reddit", OURS] == 1 and rank.loc["Wikipedia", OURS] == 2 and r[OURS] < r[RIVAL]
    return (HOLDS if ok else FAILS), (f"rank on Reddit {rank.loc['Reddit', OURS]:.0f}, Wikipedia {rank.loc['Wikipedia', OURS]:.0f}; "
                                      f"average ranks {OURS} {r[OURS]:.2f}, {RIVAL} {r[RIVAL]:.2f} "
                                      f"(published {published_quote(_two_ranks('table3', metric))})")


def _mean_rank_rule(df, artifacts_metrics: list[tuple[str, str]]):
    def pair(frame, artifact, metric):
        return frame[(frame["artifact"] == artifact) & (frame["metric"] == metric)].set_index("column")["mean"]

    quoted = published_quote(lambda pub: "; ".join(f"{a}: {OURS} {pair(pub, a, m)[OURS]:.2f}, {RIVAL} {pair(pub, a, m)[RIVAL]:.2f}"
                                          for a, m in artifacts_metrics))
    details, ok = [], True
    for artifact, metric in artifacts_metrics:
        t = pair(df, artifact, metric)
        if t.empty or OURS not in t or RIVAL not in t:
            return PENDING, f"{artifact} needs all three negative-sampler blocks with DyG-Mamba and DyGFormer"
        ok &= t.idxmin() == OURS
        details.append(f"{artifact} {metric}: {OURS} {t[OURS]:.2f}, {RIVAL} {t[RIVAL]:.2f}, lowest {t.idxmin()}")
    return (HOLDS if ok else FAILS), "; ".join(details) + f" (published {quoted})"


@rule("dm_c04")
def dm_c04(df):
    """C04: inductive, the mean of the three Avg. Rank rows is lowest for DyG-Mamba (AP and AUC)."""
    return _mean_rank_rule(df, [("table10", "mean_avg_rank_AP_inductive"), ("table11", "mean_avg_rank_AUC_inductive")])


@rule("dm_c05")
def dm_c05(df):
    """C05: transductive AP: DyG-Mamba best or second on most datasets under each sampler (published 11, 8, 10 of 12)."""
    def top2(frame, metric) -> tuple[int, int]:
        t = _table(frame, "table4", metric)
        return int((t.rank(axis=1, ascending=False, method="min")[OURS] <= 2).sum()), len(t)

    details, ok = [], True
    for short, strategy in NSS.items():
        metric = f"AP_transductive_{strategy}"
        if (why := _need(df, "table4", metric)):
            return PENDING, why
        n, total = top2(df, metric)
        ok &= n > total / 2
        details.append(f"{short} {n} of {total}")
    quoted = published_quote(lambda pub: ", ".join("{} {} of {}".format(short, *top2(pub, f"AP_transductive_{strategy}"))
                                          for short, strategy in NSS.items()))
    return (HOLDS if ok else FAILS), "top-2 on " + ", ".join(details) + f" datasets; holds when more than half (published {quoted})"


@rule("dm_c06")
def dm_c06(df):
    """C06: transductive, the mean of the three Avg. Rank rows is lowest for DyG-Mamba (AP and AUC)."""
    return _mean_rank_rule(df, [("table4", "mean_avg_rank_AP_transductive"), ("table9", "mean_avg_rank_AUC_transductive")])


@rule("dm_c07")
def dm_c07(df):
    """C07: DyG-Mamba has the lowest transductive AP average rank under each sampler."""
    return _lowest_rank(df, "table4", [f"AP_transductive_{s}" for s in NSS.values()])


@rule("dm_c08")
def dm_c08(df):
    """C08: ... and the lowest transductive AUC average rank (FreeDyG unranked)."""
    return _lowest_rank(df, "table9", [f"AUC_transductive_{s}" for s in NSS.values()])


@rule("dm_c09")
def dm_c09(df):
    """C09: ... and the lowest inductive AUC average rank."""
    return _lowest_rank(df, "table11", [f"AUC_inductive_{s}" for s in NSS.values()])



@rule("dm_c21")
def dm_c21(df):
    """C21: the printed average ranks are per-dataset mean ranks: recomputed from the reproduced cells they equal
    the Avg. Rank rows the aggregators wrote (a consistency check of the reproduced tables)."""
    parts, ok = [], True
    for artifact in ("table2", "table4", "table9", "table10", "table11"):
        t = df[(df["artifact"] == artifact) & df["metric"].str.startswith("avg_rank_")]
        for metric in sorted(set(t["metric"])):
            base = metric.replace("avg_rank_", "")
            cells = _table(df, artifact, base)
            means = {(ds, m): v for ds, row in cells.iterrows() for m, v in row.items() if not pd.isna(v)}
            re = average_ranks(means)
            printed = t[t["metric"] == metric].set_index("column")["mean"]
            bad = [m for m, v in printed.items() if m in re and abs(re[m][0] - v) > 0.01]
            ok &= not bad
            parts.append(f"{artifact} {base}: {len(printed)} ranks" + (f", off: {bad}" if bad else ""))
    if not parts:
        return PENDING, "no reproduced Avg. Rank rows at this scale"
    return (HOLDS if ok else FAILS), "; ".join(parts)
