"""Reproduced link-prediction APs below EdgeBank's on the same data, flagged "below EdgeBank: suspect" (issue 15).

`floors.below_edgebank` judges cells against EdgeBank on the same dataset, metric, scale and data; this module
brings each paper's table layout to those keys (LAYOUTS: paper -> aggregated rows -> one row per cell with its
dataset name, model and sampler), takes EdgeBank's rows of every paper as the floor (linear_time runs no EdgeBank
of its own: dyg_mamba's runs it on the same graphs; swinit's Table 1 has a floor row on its JODIE graphs), and marks
the flagged cells in tables and notes.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pandas as pd

from . import aggregate
from .floors import below_edgebank
from .published import KEY

EDGEBANK = "EdgeBank"
MARK = "†"
LABEL = "below EdgeBank: suspect"
SAMPLERS = ("random", "historical", "inductive")
METRICS = tuple(f"AP_{s}_NS_test" for s in SAMPLERS)  # linear_time's metric names, the canonical ones here


@lru_cache(maxsize=None)
def _dataset_names(paper: str) -> dict[str, str]:
    """How `paper` prints a dataset -> the dataset's name (params/datasets.lock.yaml `papers.<paper>.name`)."""
    from timerepro.data.lock import load_lock

    return {e["name"]: name for name, ds in load_lock().datasets.items() for p, e in ds.papers.items()
            if p == paper and e.get("name")}


def _cells(df: pd.DataFrame, dataset: pd.Series, model: pd.Series, metric: pd.Series) -> pd.DataFrame:
    names = _dataset_names(df["paper"].iloc[0]) if len(df) else {}
    return df.assign(dataset=dataset.map(lambda label: names.get(label, label)), model=model, canonical=metric)


def _linear_time(df: pd.DataFrame) -> pd.DataFrame:
    """Tables 1, 2, 4, 9: row_group = model, row = encoder, column = dataset, metric AP_<sampler>_NS_test."""
    sel = df[df["metric"].isin(METRICS)]
    return _cells(sel, sel["column"], sel["row_group"], sel["metric"])


DM_METRICS = {f"AP_transductive_{s}": f"AP_{s}_NS_test" for s in SAMPLERS}


def _dyg_mamba(df: pd.DataFrame) -> pd.DataFrame:
    """Tables 4 and 5: row_group = sampler block (rnd, hist, ind), row = dataset, column = model or variant."""
    sel = df[df["metric"].isin(DM_METRICS) & df["row_group"].isin(("rnd", "hist", "ind"))]
    return _cells(sel, sel["row"], sel["column"], sel["metric"].map(DM_METRICS))


def _swinit(df: pd.DataFrame) -> pd.DataFrame:
    """Table 1: row_group = setting, row = model (EdgeBank's floor row included), column = dataset, test AP x 100
    under random negatives; the transductive setting only (EdgeBank has no notion of unseen nodes)."""
    from .swinit import AP, EDGEBANK as FLOOR

    sel = df[(df["artifact"] == "table1") & (df["metric"] == AP) & (df["row_group"] == "transductive")]
    model = sel["row"].where(sel["row"] != FLOOR, EDGEBANK)
    return _cells(sel, sel["column"], model, pd.Series("AP_random_NS_test", index=sel.index))


LAYOUTS = {"linear_time": _linear_time, "dyg_mamba": _dyg_mamba, "swinit": _swinit}


def flagged(frames: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """{paper: aggregated rows} -> {paper: its cells below EdgeBank on the same data (KEY columns, artifact,
    `edgebank_mean`, `margin`, `dataset`)}: EdgeBank's rows of every paper given form the floor."""
    cells = {p: LAYOUTS[p](df.reset_index(drop=True)) for p, df in frames.items() if p in LAYOUTS and not df.empty}
    pool = [c[c["model"] == EDGEBANK] for c in cells.values()]
    floor = pd.concat(pool, ignore_index=True) if pool else pd.DataFrame()
    out = {}
    for paper, c in cells.items():
        judged = c[(c["model"] != EDGEBANK) & c["mean"].notna()]
        if floor.empty or judged.empty:
            out[paper] = pd.DataFrame()
            continue
        keep = ["scale", "data"]
        rows = judged.rename(columns={"column": "orig_column", "metric": "orig_metric"}).assign(
            column=judged["dataset"], metric=judged["canonical"])
        base = floor.assign(column=floor["dataset"], metric=floor["canonical"])[["column", "metric", "mean"] + keep]
        below = below_edgebank(rows, base, metrics=METRICS)
        out[paper] = below.drop(columns=["column", "metric"]).rename(
            columns={"orig_column": "column", "orig_metric": "metric"})
    return out


def flagged_in(paper: str, results: Path | None = None) -> pd.DataFrame:
    """`paper`'s cells below EdgeBank, from the aggregated rows under `results` (empty for other papers)."""
    if paper not in LAYOUTS:
        return pd.DataFrame()
    return flagged({p: aggregate.read(p, results) for p in LAYOUTS}).get(paper, pd.DataFrame())


def mark(reproduced: pd.DataFrame, suspects: pd.DataFrame) -> pd.DataFrame:
    """`reproduced` with a `mark` column (MARK on the suspect cells) that `tables.comparison` appends to them."""
    if suspects.empty:
        return reproduced
    keys = set(map(tuple, suspects[["artifact"] + KEY[2:]].astype(str).to_numpy()))
    hit = [tuple(map(str, k)) in keys for k in reproduced[["artifact"] + KEY[2:]].to_numpy()]
    return reproduced.assign(mark=[f" {MARK}" if h else "" for h in hit])


def notes(suspects: pd.DataFrame, artifact: str) -> list[str]:
    """One line per suspect cell of `artifact`, worst first."""
    if suspects.empty:
        return []
    sel = suspects[suspects["artifact"] == artifact]
    return [f"{MARK} {LABEL}: {r.row_group} / {r.row} / {r.column} ({r.metric}) {r.mean:.2f} < EdgeBank's "
            f"{r.edgebank_mean:.2f} on the same data ({r.dataset}, scale {r.scale})"
            for r in sel.itertuples()]
