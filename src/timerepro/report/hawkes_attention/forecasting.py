"""hawkes_attention Table 9: the time-series variant's test MSE/MAE per dataset and horizon, and its rank.

Only Ours is reproduced. The eleven baseline columns are numbers the paper copied from iTransformer: they
appear in tables only as published (report/published.py) and enter here only as the constants the rank is
computed against. The rank rows are recomputed from values, reproduced Ours among the published baselines,
and carry their own metric names (RANK_METRICS) so they never pair with the paper's printed ranks.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd

from timerepro.names import dataset_label

from .. import published
from ..aggregate import aggregator
from ..claims import FAILS, HOLDS, PENDING, rule
from . import PAPER

ARTIFACT = "table9"
OURS = "Ours"
BASELINES = ("iTransformer", "RLinear", "PatchTST", "Crossformer", "TiDE", "TimesNet", "DLinear", "SCINet",
             "FEDformer", "Stationary", "Autoformer")
# the paper's parenthesized rank: among attention models (the reference's inferred rule, 52 of 63 printed ranks)
ATTENTION_MODELS = ("iTransformer", "PatchTST", "Crossformer", "FEDformer", "Stationary", "Autoformer")
RANK_COLUMN = "Rank"
Cell = tuple[str, str, str]  # (dataset, horizon, metric)
RANK_SUFFIX = " (ours reproduced among published baselines)"
RANK_METRICS = {(m, scope): f"rank_{m}_{scope}{RANK_SUFFIX}" for m in ("MSE", "MAE")
                for scope in ("overall", "among_attention_models")}


def rank(value: float, others: dict[str, float], among: tuple[str, ...] | None = None) -> int:
    """1 + number of models (optionally only those in `among`) with a strictly lower value."""
    return 1 + sum(1 for name, v in others.items() if (among is None or name in among) and v < value)


def baseline_values(frame: pd.DataFrame | None = None) -> dict[Cell, dict[str, float]]:
    """Published baseline values: (dataset, horizon, metric) -> {model: value}; missing cells left out, so a
    rank is then taken among the baselines that have a value."""
    df = published.load(PAPER, ARTIFACT) if frame is None else frame
    df = df[df["column"].isin(BASELINES) & df["metric"].isin(["MSE", "MAE"])]
    out: dict[Cell, dict[str, float]] = defaultdict(dict)
    for r in df.itertuples(index=False):
        if pd.notna(r.mean):  # one cell is missing in the paper's table (Traffic-336 Autoformer MAE)
            out[(r.row_group, r.row, r.metric)][r.column] = float(r.mean)
    return dict(out)


def rank_rows(ours: dict[Cell, float], baselines: dict[Cell, dict[str, float]]) -> list[dict]:
    """Rank rows for every reproduced (dataset, horizon, metric) that has published baselines."""
    rows = []
    for (group, horizon, metric), value in sorted(ours.items()):
        others = baselines.get((group, horizon, metric))
        if not others:
            continue  # e.g. the smoke horizon: no published baseline to rank against
        for scope, among in (("overall", None), ("among_attention_models", ATTENTION_MODELS)):
            rows.append({"row_group": group, "row": horizon, "column": RANK_COLUMN,
                         "metric": RANK_METRICS[(metric, scope)], "mean": float(rank(value, others, among))})
    return rows


SEARCH_KEYS = ("e_layers", "n_heads", "d_model")  # the paper's L x H x D search


def select_by_validation(records: list[dict]) -> list[dict]:
    """Records of the search point with the lowest mean validation MSE (ties: the first point in key order)."""
    points = defaultdict(list)
    for r in records:
        points[tuple(r["config"].get(k) for k in SEARCH_KEYS)].append(r)
    key = min(sorted(points, key=str), key=lambda k: float(np.mean([r["metrics"]["val_mse"] for r in points[k]])))
    return points[key]


@aggregator("forecasting_table9")
def forecasting_table9(records: list[dict]) -> list[dict]:
    """Per (dataset, horizon): the search point chosen on validation MSE, its test MSE/MAE over seeds, then
    the recomputed ranks."""
    groups = defaultdict(list)
    for r in records:
        c = r["config"]
        groups[(dataset_label(c["series"], PAPER), str(c["pred_len"]))].append(r)
    rows, ours, chosen = [], {}, {}
    for (group, horizon), candidates in sorted(groups.items()):
        rs = chosen[(group, horizon)] = select_by_validation(candidates)
        for metric, key in (("MSE", "test_mse"), ("MAE", "test_mae")):
            values = np.array([r["metrics"][key] for r in rs], dtype=float)
            mean, std = float(values.mean()), float(values.std()) if len(values) > 1 else 0.0
            ours[(group, horizon, metric)] = mean
            rows.append({"row_group": group, "row": horizon, "column": OURS, "metric": metric, "mean": mean,
                         "std": std, "n_runs": len(rs), "_records": rs})
    for row in rank_rows(ours, baseline_values()):
        rs = chosen[(row["row_group"], row["row"])]
        rows.append({**row, "std": 0.0, "n_runs": len(rs), "_records": rs})
    return rows


def _verdict(df: pd.DataFrame, group: str, ok: bool, detail: str):
    """The verdict on one dataset's rows, with the cells it read (Ours at horizon 96 of that dataset): the engine
    withholds it when they come from a stand-in of that dataset, whatever the other datasets ran on."""
    read = df[(df["artifact"] == ARTIFACT) & (df["row_group"] == group) & (df["row"] == "96") & (df["column"] == OURS)]
    return HOLDS if ok else FAILS, detail, read


def _ours(df: pd.DataFrame, group: str, horizon: str, metric: str) -> float | None:
    sel = df[(df["artifact"] == ARTIFACT) & (df["row_group"] == group) & (df["row"] == horizon)
             & (df["column"] == OURS) & (df["metric"] == metric)]
    return None if sel.empty else float(sel["mean"].iloc[0])


@rule("table9_ecl96_second")
def table9_ecl96_second(df: pd.DataFrame):
    """c07: reproduced Ours ranks 2nd by MSE among the 12 models at (ECL, 96) ("second only to TimesNet"; the
    published iTransformer 0.148 is below TimesNet 0.168, so the rank is the claim's checkable content), baselines as
    published (computed here from Ours' MSE, so the rule also judges the published table)."""
    value = _ours(df, "ECL", "96", "MSE")
    if value is None:
        return PENDING, "table9 has no reproduced (ECL, 96) run at this scale"
    base = baseline_values()[("ECL", "96", "MSE")]
    r, ahead = rank(value, base), sorted(m for m, v in base.items() if v < value)
    detail = (f"rank of reproduced Ours by MSE at (ECL, 96) among the published baselines: {r}; lower: "
              f"{', '.join(ahead) or 'none'} (holds at rank 2: the published iTransformer is below TimesNet, so "
              "'second only to TimesNet' cannot hold literally)")
    return _verdict(df, "ECL", r == 2, detail)


@rule("table9_weather96_beats")
def table9_weather96_beats(df: pd.DataFrame):
    """c08: reproduced Ours has lower MSE and MAE at (Weather, 96) than FEDformer, Autoformer, DLinear,
    SCINet and TimesNet (their published values: the paper copied them, nobody re-ran them)."""
    beaten = ("FEDformer", "Autoformer", "DLinear", "SCINet", "TimesNet")
    base = baseline_values()
    details, ok = [], True
    for metric in ("MSE", "MAE"):
        value = _ours(df, "Weather", "96", metric)
        if value is None:
            return PENDING, "table9 has no reproduced (Weather, 96) run at this scale"
        others = base[("Weather", "96", metric)]
        worse = [m for m in beaten if not value < others[m]]
        ok &= not worse
        details.append(f"{metric} {value:.3f}: " + ("below all five" if not worse else "not below " + ", ".join(
            f"{m} {others[m]:.3f}" for m in worse)))
    return _verdict(df, "Weather", ok, "; ".join(details))
