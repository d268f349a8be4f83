"""Reading run records (torch-free, so aggregation and reporting start fast)."""

from __future__ import annotations

from pathlib import Path

from timerepro.io import read_json
from timerepro.paths import results_dir


def run_dir(config: dict, results: Path | None = None) -> Path:
    return (results or results_dir()) / "runs" / config["paper"] / config["run_id"]


def is_complete(config: dict, results: Path | None = None) -> bool:
    return (run_dir(config, results) / "metrics.json").is_file()


def load_record(directory: Path) -> dict | None:
    """The complete record of a run folder, or None while it has no metrics.json."""
    metrics = directory / "metrics.json"
    if not metrics.is_file():
        return None
    record = {"dir": directory, "config": read_json(directory / "config.json"), "metrics": read_json(metrics)}
    prov = directory / "provenance.json"
    record["provenance"] = read_json(prov) if prov.is_file() else {}
    for extra in directory.glob("*.json"):
        if extra.stem not in ("config", "metrics", "provenance", "history"):
            record[extra.stem] = read_json(extra)
    return record
