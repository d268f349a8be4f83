"""One run = one resolved config -> one run record under results/runs/<paper>/<run_id>/.

A run record holds config.json (the declared config, written first; the run id hashes it),
effective_config.json (what the task ran with: `tasks.registry.effective_config`, resolved once here
before the task runs; `records.read_effective_config`), history.json (per epoch), checkpoint.pt (while
training), provenance.json (with the fingerprint of the code and data that made it), any task
artifacts, and metrics.json, written last and atomically: its presence marks the run complete. A
run without metrics.json is resumed from its checkpoint (when that checkpoint was made by the same
code). A record made by other code is superseded (kept under .by-code/) and the run redone, or a
superseded record of the current code is brought back (`timerepro.records`).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Iterable

import torch
from tqdm.auto import tqdm

from timerepro import provenance, records, stopping
from timerepro.fingerprint import Fingerprinter, RunFingerprint
from timerepro.io import atomic_write_bytes, atomic_write_json, read_json
from timerepro.memory import PeakMemory
from timerepro.records import EFFECTIVE_CONFIG, is_complete, load_record, run_dir  # noqa: F401 (re-exported)
from timerepro.tasks.registry import effective_config, get_group_runner, get_task
from timerepro.train import seed_everything

log = logging.getLogger("timerepro.runs")


class RunContext:
    """What a task may touch: its run folder, a checkpoint, history, artifacts, progress bars.
    `config` is the declared config (the record's config.json), `effective` what the task runs with."""

    def __init__(self, config: dict, directory: Path, *, device: str, show_progress: bool = True,
                 fingerprint: RunFingerprint | None = None, effective: dict | None = None):
        self.config = config
        self.effective = config if effective is None else effective
        self.run_id = config["run_id"]
        self.dir = directory
        self.device = device
        self.show_progress = show_progress
        self.fingerprint = fingerprint
        self.memory = PeakMemory()

    def nested(self, config: dict, directory: Path) -> "RunContext":
        """The context of a run nested in this one (node classification's backbone, `config` effective): its
        own folder and checkpoint; this run's device, progress bars, code fingerprint and memory measurement."""
        sub = RunContext(config, directory, device=self.device, show_progress=self.show_progress,
                         fingerprint=self.fingerprint, effective=config)
        sub.memory = self.memory  # the run's own peak covers what it nests
        return sub

    def peak_memory_mb(self) -> float:
        """Peak resident memory of this run so far (reset when the run started; shared by stacked seeds)."""
        return self.memory.peak_mb()

    @property
    def checkpoint_path(self) -> Path:
        return self.dir / "checkpoint.pt"

    def save_checkpoint(self, state: dict) -> None:
        import io

        buf = io.BytesIO()
        torch.save({**state, "_fingerprint": self._digest}, buf)
        atomic_write_bytes(self.checkpoint_path, buf.getvalue(), durable=False)

    def load_checkpoint(self) -> dict | None:
        """The run's checkpoint, or None; one written by other code is ignored (training restarts)."""
        if not self.checkpoint_path.is_file():
            return None
        state = torch.load(self.checkpoint_path, map_location="cpu", weights_only=False)
        if state.pop("_fingerprint", None) != self._digest:
            self.log("checkpoint made by other code ignored: training from the start")
            return None
        return state

    @property
    def _digest(self) -> str | None:
        return self.fingerprint.digest if self.fingerprint else None

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


def load_once(tasks: Iterable[str]) -> None:
    """What the runs of `tasks` import and read, loaded in a batch's process before it forks a process per job, so
    each job finds it loaded: the task modules, params/models.yaml, torch._dynamo (torch.optim imports it at a
    process's first optimizer: about 1 CPU-second per job otherwise) and the provenance every run shares (git's
    subprocesses). CUDA stays untouched (a fork cannot use it)."""
    import torch._dynamo  # noqa: F401

    from timerepro.models.registry import model_specs

    for task in tasks:
        get_task(task)
    model_specs()
    provenance.process_state()


def pick_device(requested: str = "auto") -> str:
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


def _open(config: dict, results: Path | None, device: str, show_progress: bool,
          fingerprint: RunFingerprint) -> RunContext | None:
    """The run's context with config.json written, or None when a record of this code is complete
    (in place, or brought back from .by-code/). A record of other code is superseded first."""
    directory = run_dir(config, results)
    state = records.state_of(directory, fingerprint)
    if state.state == records.COMPLETE:
        log.info("[%s] already complete: %s", config["run_id"], directory)
        return None
    if state.state in (records.STALE, records.CORRUPT):
        records.supersede(config, results, reason=state.state if state.state == records.CORRUPT
                          else "made by other code: " + ", ".join(state.changes))
    if records.restore(config, fingerprint, results) is not None:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    cfg_path = directory / "config.json"
    if cfg_path.is_file() and read_json(cfg_path) != config:
        raise RuntimeError(
            f"{cfg_path} holds a different config than run {config['run_id']}: the run id is a hash of "
            "the resolved config, so this means the folder was edited by hand; remove it and rerun"
        )
    atomic_write_json(cfg_path, config)
    effective = effective_config(config)
    atomic_write_json(directory / EFFECTIVE_CONFIG, effective)
    return RunContext(config, directory, device=device, show_progress=show_progress, fingerprint=fingerprint,
                      effective=effective)


def _close(ctx: RunContext, outcome: dict, wall: float, extra: dict | None = None) -> Path:
    """Provenance (with the task's `timing` of its phases, seconds), then metrics.json (last: marks the run
    complete); drop the checkpoint."""
    config = ctx.config
    prov = provenance.collect(device=ctx.device, seed=int(config["seed"]), data=outcome.get("data", {}), wall_time_s=wall,
                              memory=ctx.memory, code=ctx.fingerprint.as_record() if ctx.fingerprint else None,
                              extra={"resumed_from_epoch": outcome.get("resumed_from_epoch"),
                                     **outcome.get("timing", {}), **(extra or {})})
    atomic_write_json(ctx.dir / "provenance.json", prov)
    metrics = {"run_id": config["run_id"], "paper": config["paper"], "experiment": config["experiment"],
               **outcome["metrics"]}
    atomic_write_json(ctx.dir / "metrics.json", metrics)
    if ctx.checkpoint_path.is_file() and not config.get("keep_checkpoint", False):
        ctx.checkpoint_path.unlink()
    return ctx.dir


def _threads(config: dict, threads: int | None) -> None:
    threads = threads or int(os.environ.get("TIMEREPRO_THREADS", config.get("resources", {}).get("cpus", 1)))
    torch.set_num_threads(max(1, threads))


def group_key(config: dict) -> str:
    """Runs with the same key train together: the seeds of one configuration when the task stacks
    seeds (it has a `run_group`), otherwise each run alone."""
    if get_group_runner(config["task"]) is None:
        return config["run_id"]
    return json.dumps({k: v for k, v in config.items() if k not in ("seed", "run_id")}, sort_keys=True, default=str)


def _train(ctxs: list[RunContext], runner) -> None:
    t0 = time.perf_counter()
    if runner is not None:
        size = len(ctxs)
        runner([c.effective for c in ctxs], ctxs,
               lambda i, outcome: _close(ctxs[i], outcome, time.perf_counter() - t0,
                                         {"trained_with": f"stacked ensemble of {size} seeds (wall time shared)"}))
        missing = [c.run_id for c in ctxs if not (c.dir / "metrics.json").is_file()]
        if missing:
            raise RuntimeError(f"task {ctxs[0].config['task']} ended without finishing runs {missing}")
    else:
        ctx = ctxs[0]
        seed_everything(int(ctx.config["seed"]))
        outcome = get_task(ctx.config["task"])(ctx.effective, ctx)
        _close(ctx, outcome, time.perf_counter() - t0)


def execute(config: dict, *, results: Path | None = None, device: str = "auto", threads: int | None = None,
            show_progress: bool = True) -> Path:
    """Run `config` unless a record of the current code is complete; return the run folder."""
    return execute_many([config], results=results, device=device, threads=threads, show_progress=show_progress)[0]


def execute_many(configs: list[dict], *, results: Path | None = None, device: str = "auto",
                 threads: int | None = None, show_progress: bool = True,
                 fingerprints: Fingerprinter | None = None) -> list[Path]:
    """Run every config without a record of the current code; seeds of one configuration train
    together when their task can. Each run's peak memory is its own (reset when it starts)."""
    dev = pick_device(device)
    fingerprints = fingerprints or Fingerprinter()
    groups: dict[str, list[dict]] = {}
    for c in configs:
        groups.setdefault(group_key(c), []).append(c)
    with stopping.handlers():  # SLURM's stop signals: checkpoint at the next batch, exit to be retried
        for group in groups.values():
            if stopping.requested():
                raise stopping.JobStopped(f"before run {group[0]['run_id']}")
            ctxs = [ctx for ctx in (_open(c, results, dev, show_progress, fingerprints.run(c)) for c in group)
                    if ctx is not None]
            if not ctxs:
                continue
            _threads(ctxs[0].config, threads)
            runner = get_group_runner(ctxs[0].config["task"])
            for ctx in ctxs:  # one measurement for the group: its seeds share the process and the batches
                ctx.memory = ctxs[0].memory
            ctxs[0].memory.start(dev)
            try:
                _train(ctxs, runner)
            finally:
                ctxs[0].memory.stop()
    return [run_dir(c, results) for c in configs]
