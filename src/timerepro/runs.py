"""One run = one resolved config -> one run record under results/runs/<paper>/<run_id>/.

A run record holds config.json (written first), history.json (per epoch), checkpoint.pt (while
training), provenance.json, any task artifacts, and metrics.json, written last and atomically:
its presence marks the run complete. A run without metrics.json is resumed from its checkpoint.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import Iterable

import torch
from tqdm.auto import tqdm

from timerepro import provenance
from timerepro.io import atomic_write_bytes, atomic_write_json, read_json
from timerepro.records import is_complete, load_record, run_dir  # noqa: F401 (re-exported)
from timerepro.tasks.registry import get_task
from timerepro.train import seed_everything

log = logging.getLogger("timerepro.runs")


class RunContext:
    """What a task may touch: its run folder, a checkpoint, history, artifacts, progress bars."""

    def __init__(self, config: dict, directory: Path, *, device: str, show_progress: bool = True):
        self.config = config
        self.run_id = config["run_id"]
        self.dir = directory
        self.device = device
        self.show_progress = show_progress

    @property
    def checkpoint_path(self) -> Path:
        return self.dir / "checkpoint.pt"

    def save_checkpoint(self, state: dict) -> None:
        import io

        buf = io.BytesIO()
        torch.save(state, buf)
        atomic_write_bytes(self.checkpoint_path, buf.getvalue(), durable=False)

    def load_checkpoint(self) -> dict | None:
        if not self.checkpoint_path.is_file():
            return None
        return torch.load(self.checkpoint_path, map_location="cpu", weights_only=False)

    def write_history(self, history: list[dict]) -> None:
        atomic_write_json(self.dir / "history.json", history, durable=False)

    def read_history(self) -> list[dict]:
        path = self.dir / "history.json"
        return read_json(path) if path.is_file() else []

    def write_artifact(self, name: str, obj) -> Path:
        return atomic_write_json(self.dir / name, obj)

    def log(self, message: str) -> None:
        log.info("[%s] %s", self.run_id, message)

    def progress(self, iterable: Iterable, **kwargs):
        if not self.show_progress:
            return iterable
        return tqdm(iterable, leave=False, dynamic_ncols=True, mininterval=1.0, file=sys.stderr, **kwargs)


def pick_device(requested: str = "auto") -> str:
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


def execute(config: dict, *, results: Path | None = None, device: str = "auto", threads: int | None = None,
            show_progress: bool = True) -> Path:
    """Run `config` unless its record is complete; return the run folder."""
    directory = run_dir(config, results)
    if (directory / "metrics.json").is_file():
        log.info("[%s] already complete: %s", config["run_id"], directory)
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    cfg_path = directory / "config.json"
    if cfg_path.is_file() and read_json(cfg_path) != config:
        raise RuntimeError(
            f"{cfg_path} holds a different config than run {config['run_id']}: the run id is a hash of "
            "the resolved config, so this means the folder was edited by hand; remove it and rerun"
        )
    atomic_write_json(cfg_path, config)

    threads = threads or int(os.environ.get("TIMEREPRO_THREADS", config.get("resources", {}).get("cpus", 1)))
    torch.set_num_threads(max(1, threads))
    dev = pick_device(device)
    seed_everything(int(config["seed"]))
    ctx = RunContext(config, directory, device=dev, show_progress=show_progress)

    t0 = time.perf_counter()
    outcome = get_task(config["task"])(config, ctx)
    wall = time.perf_counter() - t0

    prov = provenance.collect(device=dev, seed=int(config["seed"]), data=outcome.get("data", {}), wall_time_s=wall,
                              extra={"resumed_from_epoch": outcome.get("resumed_from_epoch")})
    atomic_write_json(directory / "provenance.json", prov)
    metrics = {"run_id": config["run_id"], "paper": config["paper"], "experiment": config["experiment"],
               **outcome["metrics"]}
    atomic_write_json(directory / "metrics.json", metrics)  # last: marks the run complete
    if ctx.checkpoint_path.is_file() and not config.get("keep_checkpoint", False):
        ctx.checkpoint_path.unlink()
    return directory
