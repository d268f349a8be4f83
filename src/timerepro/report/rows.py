"""The helpers paper modules build aggregated rows with (long format: `aggregate.COLUMNS` plus `_records`).

A cell is the mean and population std over seeds (`aggregate.mean_std`) of one metric of the runs behind it;
a row carries the runs in `_records`, which the engine turns into the `data` and `data_kind` columns.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

from .aggregate import mean_std


def over_runs(rs: list[dict], key, scale: float = 100.0) -> tuple[float, float, list[dict]] | None:
    """Mean and population std of `key(metrics)` (or metrics[key]) x scale over the runs that have it, and those
    runs; None when no run has it."""
    get = key if callable(key) else (lambda m: m.get(key))
    kept = [r for r in rs if get(r["metrics"]) is not None]
    if not kept:
        return None
    mean, std = mean_std([scale * float(get(r["metrics"])) for r in kept])
    return mean, std, kept


def cell_row(group, row, column, metric, cell, note: str = "") -> dict:
    """The row of a cell made by `over_runs` (n_runs: the runs that had the metric)."""
    mean, std, rs = cell
    return {"row_group": group, "row": row, "column": column, "metric": metric, "mean": mean, "std": std,
            "n_runs": len(rs), "_records": rs, "note": note}


def values_row(group: str, row: str, column: str, metric: str, values: list[float], rs: list[dict],
               note: str = "") -> dict:
    """The row of a cell given as its per-run values (n_runs: the number of values)."""
    mean, std = mean_std(values)
    return {"row_group": group, "row": row, "column": column, "metric": metric, "mean": mean, "std": std,
            "n_runs": len(values), "_records": rs, "note": note}


def group_by(records: list[dict], key: Callable[[dict], object]) -> dict:
    """key(config) -> the records with that key, in the records' order."""
    groups = defaultdict(list)
    for r in records:
        groups[key(r["config"])].append(r)
    return groups
