"""Dataset-statistics artifacts of every paper (linear_time Tables 3 and 5, dyg_mamba Table 6, hawkes_attention
Table 1): the task (`tasks/dataset_statistics.py`) computes the rows in the published layout already."""

from __future__ import annotations

from .aggregate import aggregator


@aggregator("statistics_rows")
def statistics_rows(records: list[dict]) -> list[dict]:
    """Dataset statistics: the rows one run computed, already in the published layout, with their notes (what the
    data were when not the paper's bytes: real UCI's package copy)."""
    rows = []
    for r in records:
        for row in r["rows"]:
            rows.append({k: row[k] for k in ("row_group", "row", "column", "metric", "mean")}
                        | {"std": 0.0, "n_runs": 1, "_records": [r], "note": row.get("note") or ""})
    return rows
