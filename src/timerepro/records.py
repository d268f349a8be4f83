"""Reading run records (torch-free, so aggregation and reporting start fast), and their states.

A record lives in results/runs/<paper>/<run_id>/. Its provenance.json holds the fingerprint of the
code and pinned data that made it (`timerepro.fingerprint`). A record whose fingerprint is not the
current one is stale: it is moved, whole, to results/runs/<paper>/.by-code/<run_id>/<fingerprint>/
before the run is redone, so nothing computed is lost and reverting the code brings it back.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from timerepro.io import read_json
from timerepro.paths import results_dir

log = logging.getLogger("timerepro.records")

COMPLETE, STALE, MISSING, PARTIAL, CORRUPT = "complete", "stale", "missing", "partial", "corrupt"
SUPERSEDED = ".by-code"
EFFECTIVE_CONFIG = "effective_config.json"  # the config the task ran with (tasks.registry.effective_config), beside config.json


def run_dir(config: dict, results: Path | None = None) -> Path:
    return (results or results_dir()) / "runs" / config["paper"] / config["run_id"]


def superseded_root(config: dict, results: Path | None = None) -> Path:
    """Where the superseded records of a run are kept, one folder per fingerprint."""
    return (results or results_dir()) / "runs" / config["paper"] / SUPERSEDED / config["run_id"]


def read_metrics(directory: Path) -> dict | None:
    """metrics.json of a run folder; None when absent. A file that is not valid JSON raises
    CorruptRecord naming it (metrics.json is written atomically, so this means a damaged disk or
    a hand edit)."""
    path = directory / "metrics.json"
    if not path.is_file():
        return None
    try:
        return read_json(path)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptRecord(path, exc) from None


def read_history(directory: Path) -> list[dict]:
    """history.json of a run folder (one row per epoch: train_*, val_* metrics and times); [] when absent."""
    path = Path(directory) / "history.json"
    history = read_json(path) if path.is_file() else []
    return history if isinstance(history, list) else []


class CorruptRecord(ValueError):
    def __init__(self, path: Path, exc: Exception):
        self.path = path
        super().__init__(f"{path}: not a readable run record ({exc}); `timerepro run`, `run-all` or snakemake "
                         f"keeps it under {SUPERSEDED}/ and redoes the run")


def recorded_fingerprint(directory: Path) -> dict | None:
    """The `code` block of provenance.json (fingerprint, modules, data), or None."""
    prov = directory / "provenance.json"
    try:
        return read_json(prov).get("code") if prov.is_file() else None
    except (ValueError, UnicodeDecodeError):
        return None


@dataclass
class RecordState:
    state: str  # complete | stale | missing | partial | corrupt
    directory: Path
    changes: list[str] = field(default_factory=list)  # for stale: modules or data that differ
    fingerprint: str | None = None  # the record's own fingerprint, when it has one


def state_of(directory: Path, current) -> RecordState:
    """State of the record in `directory` against `current` (a fingerprint.RunFingerprint)."""
    from timerepro.fingerprint import changes

    if not directory.is_dir():
        return RecordState(MISSING, directory)
    try:
        if read_metrics(directory) is None:
            return RecordState(PARTIAL, directory)
    except CorruptRecord as exc:
        return RecordState(CORRUPT, directory, [str(exc)])
    recorded = recorded_fingerprint(directory)
    diff = changes(recorded, current)
    return RecordState(STALE if diff else COMPLETE, directory, diff, (recorded or {}).get("fingerprint"))


def is_complete(config: dict, results: Path | None = None, *, fingerprints=None) -> bool:
    """True when the run has a record made by the current code and data."""
    from timerepro.fingerprint import Fingerprinter

    fingerprints = fingerprints or Fingerprinter()
    return state_of(run_dir(config, results), fingerprints.run(config)).state == COMPLETE


def supersede(config: dict, results: Path | None = None, reason: str = "") -> Path:
    """Move the run's folder, whole and in one rename, under .by-code/<run_id>/<its fingerprint>/."""
    directory = run_dir(config, results)
    st_key = recorded_fingerprint(directory) or {}
    key = st_key.get("fingerprint") or ("corrupt" if reason == CORRUPT else "unfingerprinted")
    root = superseded_root(config, results)
    root.mkdir(parents=True, exist_ok=True)
    dest = root / key
    if dest.exists():  # the same fingerprint superseded twice (e.g. a corrupt copy): keep both
        dest = root / f"{key}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    os.replace(directory, dest)
    log.warning("[%s] record superseded%s: kept in %s", config["run_id"], f" ({reason})" if reason else "", dest)
    return dest


def restore(config: dict, current, results: Path | None = None) -> Path | None:
    """Bring back a superseded record made by the current code and data (the code was reverted);
    returns its run folder, or None when there is none."""
    import shutil

    root = superseded_root(config, results)
    if not root.is_dir():
        return None
    for candidate in sorted(root.iterdir()):
        if candidate.is_dir() and state_of(candidate, current).state == COMPLETE:
            directory = run_dir(config, results)
            if directory.exists():  # leftovers of an interrupted run of the same code: the record supersedes them
                shutil.rmtree(directory)
            os.replace(candidate, directory)
            log.info("[%s] record of this code restored from %s", config["run_id"], candidate)
            return directory
    return None


def read_effective_config(directory: Path) -> dict | None:
    """The effective config of a run folder (declared config + dataset defaults + variants + overrides, as the
    task ran with it); None for a record made before effective configs were recorded."""
    path = directory / EFFECTIVE_CONFIG
    return read_json(path) if path.is_file() else None


def load_record(directory: Path) -> dict | None:
    """The complete record of a run folder, or None while it has no (readable) metrics.json."""
    try:
        metrics = read_metrics(directory)
    except CorruptRecord as exc:
        log.warning("%s", exc)
        return None
    if metrics is None:
        return None
    record = {"dir": directory, "config": read_json(directory / "config.json"), "metrics": metrics,
              "effective_config": read_effective_config(directory)}
    prov = directory / "provenance.json"
    record["provenance"] = read_json(prov) if prov.is_file() else {}
    for extra in directory.glob("*.json"):
        if extra.stem not in ("config", "metrics", "provenance", "history", "effective_config"):
            record[extra.stem] = read_json(extra)
    return record


def job_marker(results: Path, paper: str, job_id: str, fingerprint: str) -> Path:
    """The file a scheduler job writes once all its runs are complete: named by the fingerprint of
    the code and data they were made by, so a change of either makes the job due again."""
    return results / "jobs" / paper / f"{job_id}.{fingerprint}.json"


def code_stamp(results: Path, paper: str) -> Path:
    """The fingerprints of a paper's scheduler jobs, one file the paper's aggregation depends on."""
    return results / "jobs" / f"{paper}.fingerprints.json"


def update_code_stamp(path: Path, fingerprints: dict, report_code: str) -> Path:
    """Write {"jobs": {job id: fingerprint}, "report": the report code's fingerprint} only when it differs from the
    file's content, so the file is newer than the paper's aggregate exactly when some of its jobs' code or data, or the
    code that aggregates and renders them, changed. Make judges by
    dates, and a job whose output exists never looks at inputs that are missing (the renamed markers):
    this date is what makes the aggregate, hence the changed jobs, due again, with or without
    Snakemake's metadata (.snakemake/, absent from a fresh clone or a copied results folder)."""
    import json

    from timerepro.io import atomic_write_text

    text = json.dumps({"jobs": fingerprints, "report": report_code}, indent=1, sort_keys=True) + "\n"
    if not path.is_file() or path.read_text() != text:
        atomic_write_text(path, text)
    return path


def write_job_marker(path: Path, job_id: str, runs: list[str], fingerprints: dict) -> Path:
    from timerepro.io import atomic_write_json

    for old in path.parent.glob(f"{job_id}.*.json"):  # markers of other code: their records were superseded
        if old != path:
            old.unlink(missing_ok=True)
    return atomic_write_json(path, {"job_id": job_id, "runs": runs, "fingerprints": fingerprints})
