"""The aggregated numbers in the shapes DVC reads, written beside each aggregate:

* results/metrics/<paper>.json: {artifact: {"row_group | row | column | metric": mean}} for every
  reproduced number (measured costs, seconds and memory, left out: they move on every run), so
  `dvc metrics diff` lists the numbers a code change moved;
* results/plots/<paper>/<figure>.csv: the rows behind each implemented figure (series, x, y, std),
  so `dvc plots diff` draws them for two revisions side by side.
"""

from __future__ import annotations

import math
from pathlib import Path

from timerepro.io import atomic_write_json, atomic_write_text
from timerepro.paths import results_dir

PLOT_COLUMNS = ["series", "x", "y", "std", "metric"]


def metrics_path(paper: str, results: Path | None = None) -> Path:
    return (results or results_dir()) / "metrics" / f"{paper}.json"


def plots_dir(paper: str, results: Path | None = None) -> Path:
    return (results or results_dir()) / "plots" / paper


def figures(reg, paper: str) -> list[str]:
    """The implemented figures of a paper: the ones with plot data."""
    return [a["id"] for a in reg.implemented(paper) if a["kind"] == "figure"]


def _number(value) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def metrics(df) -> dict:
    from timerepro.report.aggregate import results_only

    out: dict[str, dict] = {}
    for row in results_only(df).itertuples(index=False):
        key = " | ".join(str(getattr(row, k)) for k in ("row_group", "row", "column", "metric"))
        out.setdefault(row.artifact, {})[key] = _number(row.mean)
    return out


def write(reg, paper: str, results: Path | None = None) -> list[Path]:
    """Write the metrics file and the plot files of `paper` from its aggregate."""
    import pandas as pd

    from timerepro.report import aggregate

    df = aggregate.read(paper, results)
    written = [atomic_write_json(metrics_path(paper, results), metrics(df))]
    folder = plots_dir(paper, results)
    folder.mkdir(parents=True, exist_ok=True)
    for fig in figures(reg, paper):
        rows = aggregate.results_only(df[df["artifact"] == fig])
        table = pd.DataFrame({"series": rows["row_group"].astype(str) + " | " + rows["row"].astype(str),
                              "x": rows["column"], "y": rows["mean"], "std": rows["std"], "metric": rows["metric"]},
                             columns=PLOT_COLUMNS)
        written.append(atomic_write_text(folder / f"{fig}.csv", table.to_csv(index=False)))
    return written
