"""Run records -> results/aggregated/<paper>.csv, in the columns of the published values (engine: no paper here).

Each implemented artifact names an aggregator (params/<paper>.yaml `aggregate:`); an aggregator is a
function of a paper module marked `@aggregator("name")`, `records -> rows`, that turns the complete run
records of the artifact into long-format rows (row_group, row, column, metric, mean, std, n_runs, and
`_records`: the records behind the row). This module adds the columns every row has: paper, artifact,
scale, `data` (a human-readable label of the data) and `data_kind` (`timerepro.datakind`: what claims
and badges read).
"""

from __future__ import annotations

import re

from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from timerepro import datakind
from timerepro.catalog import Catalog
from timerepro.io import atomic_write_json, atomic_write_text
from timerepro.paths import results_dir
from timerepro.registry import Registry
from timerepro.records import load_record, run_dir

from . import families
from .published import KEY

COLUMNS = KEY + ["mean", "std", "note", "n_runs", "scale", "data", "data_kind"]
# Metrics that measure the machine (seconds, memory), not the model: two runs of the same config differ in them.
TIME_PER_EPOCH, PEAK_GPU, PEAK_RSS = "train_time_per_epoch_s", "peak_gpu_memory_GB", "peak_cpu_rss_GB"
MEASURED_COSTS = frozenset({TIME_PER_EPOCH, PEAK_GPU, PEAK_RSS,
                            # dyg_mamba Figure 3 (report/dyg_mamba/efficiency.py): per-step time, memory and what depends on them
                            "time_per_step_s", "peak_memory_MB", "growth_exponent_time_per_step_s",
                            "growth_exponent_peak_memory_MB", "speedup_vs_DyGFormer_x",
                            "gpu_memory_saving_vs_DyGFormer_pct", "cpu_memory_saving_vs_DyGFormer_pct"})

AGGREGATORS: Catalog[Callable[[list[dict]], list[dict]]] = Catalog("aggregator", fill=lambda: families.fill(AGGREGATORS))
aggregator = AGGREGATORS.register  # @aggregator("name") on a function of a module listed in report_catalog.py


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and population std over seeds (std 0 for one run)."""
    arr = np.asarray(values, dtype=float)
    return float(arr.mean()), float(arr.std(ddof=0)) if len(arr) > 1 else 0.0


def _standin_size(data: dict) -> str | None:
    """The stand-in size a record's data was generated at ("smoke", "offline"): its provenance field, or for a record
    written before that field, the generator line of its sources."""
    if data.get("standin_size"):
        return data["standin_size"]
    for source in data.get("sources") or []:
        match = re.search(r"\bscale=(\w+)", source.get("generated", ""))
        if match:
            return match.group(1)
    return None


def _data_label(records: list[dict]) -> str:
    """The human-readable `data` cell (what the data was, in words); `data_kind` is the field to test."""
    labels = set()
    for r in records:
        d = r["provenance"].get("data", {})
        if datakind.of_data(d) is datakind.DataKind.STANDIN:
            size = _standin_size(d)  # smoke and offline stand-ins of one dataset are different graphs
            labels.add(d.get("label", "synthetic stand-in") + (f", {size} size" if size else ""))
        elif datakind.of_data(d) is datakind.DataKind.PACKAGE_COPY:  # real data, but not the paper's bytes: say how
            labels.add(d.get("label") or "package copy")
        else:
            labels.add({"generated": "generated (paper's own synthetic task)"}.get(d.get("source"), d.get("source", "unknown")))
    return "; ".join(sorted(labels))


def provenance_summary(records: list[dict]) -> dict:
    """What a reader needs to trust a cell: commits, dirty flags, devices, versions, time."""
    prov = [r["provenance"] for r in records]
    return {
        "n_runs": len(records),
        "git_commits": sorted({(p.get("git") or {}).get("commit") or "unknown" for p in prov}),
        "any_dirty": any((p.get("git") or {}).get("dirty") for p in prov),
        "devices": sorted({p.get("device", "?") for p in prov}),
        "torch": sorted({(p.get("packages") or {}).get("torch") or "?" for p in prov}),
        "hosts": sorted({p.get("host", "?") for p in prov}),
        "slurm_jobs": sum(1 for p in prov if p.get("slurm_job_id")),
        "wall_time_s_total": round(sum(p.get("wall_time_s", 0.0) for p in prov), 1),
        "peak_memory_mb_max": max((p.get("peak_memory_mb", 0.0) for p in prov), default=0.0),
        "data": _data_label(records),
        "data_kind": datakind.of_records(records),
        "run_ids": sorted(r["config"]["run_id"] for r in records),
    }


def aggregate_paper(reg: Registry, paper: str, scale: str, results: Path | None = None) -> tuple[pd.DataFrame, dict]:
    """Aggregate the complete runs of every implemented artifact; missing runs are counted."""
    results = results or results_dir()
    frames, provenance = [], {}
    for art in reg.implemented(paper):
        runs = reg.artifact_runs(paper, art["id"], scale)
        records = [rec for run in runs if (rec := load_record(run_dir(run.config, results))) is not None]
        summary = provenance_summary(records)
        summary["n_expected"] = len(runs)
        provenance[art["id"]] = summary
        if not records:
            continue
        rows = AGGREGATORS[art["aggregate"]](records)  # names were checked when params/ loaded
        for row in rows:
            rs = row.pop("_records")
            row.update({"paper": paper, "artifact": art["id"], "note": row.get("note", ""), "scale": scale,
                        "data": _data_label(rs), "data_kind": datakind.of_records(rs)})
        frames.append(pd.DataFrame(rows))
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    return df[COLUMNS], provenance


def results_only(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of an aggregate that a rerun must reproduce exactly: everything but the measured costs."""
    return df[~df["metric"].isin(MEASURED_COSTS)].reset_index(drop=True)


def aggregated_path(paper: str, results: Path | None = None) -> Path:
    return (results or results_dir()) / "aggregated" / f"{paper}.csv"


def write(reg: Registry, paper: str, scale: str, results: Path | None = None) -> Path:
    df, prov = aggregate_paper(reg, paper, scale, results)
    path = aggregated_path(paper, results)
    atomic_write_text(path, df.to_csv(index=False))
    atomic_write_json(path.with_suffix(".provenance.json"), {"scale": scale, "artifacts": prov})
    return path


def read(paper: str, results: Path | None = None) -> pd.DataFrame:
    path = aggregated_path(paper, results)
    if not path.is_file():
        return pd.DataFrame(columns=COLUMNS)
    return pd.read_csv(path, dtype={c: str for c in ["paper", "artifact", "row_group", "row", "column", "metric", "note", "scale", "data", "data_kind"]},
                       keep_default_na=False, na_values={"mean": [""], "std": [""]})
