"""Declared resources against measured ones: every scheduler job of a scale asks for `mem_mb` and `runtime`
(params/tasks.yaml < params/models.yaml < params/scales.yaml `resources`, each with its `per_dataset` entries:
`Registry.resources`), its run records say what it used.

A job's peak is the largest `peak_memory_mb` of its runs' provenance. Today that figure is ru_maxrss of the
whole process, and a job runs its seeds in one process: the last run of a job reports the job's peak, which
is what a scheduler enforces, so it is the right figure to hold against the job's `mem_mb`. A job's time is
the sum of its runs' `wall_time_s` (the largest when its seeds trained together as one stacked ensemble,
whose runs each report the shared wall time), held against `runtime` x runs (minutes), as the Snakefile asks.
A scheduler step may run a batch of jobs (timerepro.batching), one after another, each in a fork: it asks for
the largest `mem_mb` and the sum of the runtimes of its jobs, so jobs within their own declarations keep
their batch within its.

`check(registry, scale)` returns one `JobUse` per job with a record; `timerepro resources --scale S` prints
them and exits 1 when a job used more than it declared, naming the params/ key to raise. At paper scale, where
no run has a record before the money is spent, each job is held against its shape's rehearsal instead
(`timerepro rehearse`): peak host memory against `mem_mb`, the estimated wall time (max_epochs: an upper bound)
against `runtime` (a GPU job rehearsed only on CPU is held to its memory, not its time).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from timerepro.records import load_record, run_dir

PEAK_KEYS = ("peak_memory_mb",)  # provenance fields holding a run's peak resident memory (MB), first found wins
STACKED = "stacked ensemble"  # provenance `trained_with` of seeds trained together (wall time shared)


@dataclass(frozen=True)
class JobUse:
    paper: str
    job_id: str
    experiment: str
    task: str
    model: str | None
    runs: int  # runs of the job with a complete record
    mem_mb: float  # declared
    peak_mb: float | None  # measured (None: no record holds a peak)
    runtime_min: float  # declared for the whole job
    wall_min: float | None
    mem_source: str  # the params/ key that set mem_mb
    runtime_source: str

    @property
    def over_memory(self) -> bool:
        return self.peak_mb is not None and self.peak_mb > self.mem_mb

    @property
    def over_time(self) -> bool:
        return self.wall_min is not None and self.wall_min > self.runtime_min


def _peak(provenance: dict) -> float | None:
    for key in PEAK_KEYS:
        if provenance.get(key) is not None:
            return float(provenance[key])
    return None


def check(registry, scale: str, paper: str | None = None, results: Path | None = None) -> list[JobUse]:
    """Declared against measured for every job of `scale` with at least one complete run record."""
    out = []
    for job in registry.jobs(scale, paper=paper):
        records = [r for r in (load_record(run_dir(run.config, results)) for run in job.runs) if r is not None]
        if not records:
            continue
        config = job.runs[0].config
        peaks = [p for p in (_peak(r["provenance"]) for r in records) if p is not None]
        walls = [float(r["provenance"]["wall_time_s"]) for r in records if r["provenance"].get("wall_time_s") is not None]
        stacked = all(STACKED in str(r["provenance"].get("trained_with", "")) for r in records)
        wall = (max(walls) if stacked else sum(walls)) / 60.0 if walls else None
        task, model = config["task"], config.get("model")
        out.append(JobUse(job.paper, job.job_id, config["experiment"], task, model, len(records),
                          float(job.resources["mem_mb"]), max(peaks) if peaks else None,
                          float(job.resources["runtime"]), wall,
                          registry.resource_source(task, model, scale, config.get("dataset"), "mem_mb"),
                          registry.resource_source(task, model, scale, config.get("dataset"), "runtime")))
    return out


def summary(uses: list[JobUse]) -> list[dict]:
    """One row per (task, model, declaration): jobs, the largest measured peak and wall time, and the verdict."""
    groups: dict[tuple, list[JobUse]] = {}
    for u in uses:
        groups.setdefault((u.task, u.model or "-", u.mem_mb, u.mem_source), []).append(u)
    rows = []
    for (task, model, mem, source), us in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        peaks = [u.peak_mb for u in us if u.peak_mb is not None]
        over = [u for u in us if u.over_memory]
        slow = [u for u in us if u.over_time]
        rows.append({"task": task, "model": model, "jobs": len(us), "mem_mb": mem, "peak_mb": max(peaks) if peaks else None,
                     "over_memory": len(over), "over_time": len(slow), "mem_source": source,
                     "worst": max(over, key=lambda u: u.peak_mb) if over else None})
    return rows


def report(uses: list[JobUse], scale: str, file=None) -> bool:
    """Print the summary and every job over its declaration; True when every job stayed within it."""
    file = file or sys.stdout
    if not uses:
        print(f"no run records at scale {scale}: nothing to check", file=file)
        return True
    print(f"{'task':24s} {'model':20s} {'jobs':>4s} {'mem_mb':>7s} {'peak_mb':>8s}  verdict", file=file)
    for row in summary(uses):
        peak = "-" if row["peak_mb"] is None else f"{row['peak_mb']:.0f}"
        verdict = "ok" if not row["over_memory"] else f"{row['over_memory']} job(s) over: raise {row['mem_source']}"
        print(f"{row['task']:24s} {row['model']:20s} {row['jobs']:4d} {row['mem_mb']:7.0f} {peak:>8s}  {verdict}", file=file)
    over = [u for u in uses if u.over_memory or u.over_time]
    for u in over:
        what = []
        if u.over_memory:
            what.append(f"peak {u.peak_mb:.0f} MB > mem_mb {u.mem_mb:.0f} ({u.mem_source})")
        if u.over_time:
            what.append(f"wall {u.wall_min:.1f} min > runtime {u.runtime_min:.0f} min ({u.runtime_source})")
        print(f"OVER {u.paper}/{u.job_id} {u.experiment} ({u.runs} runs): " + "; ".join(what), file=file)
    print(f"{len(uses)} jobs with records at scale {scale}: {sum(u.over_memory for u in uses)} over memory, "
          f"{sum(u.over_time for u in uses)} over runtime", file=file)
    return not over


@dataclass(frozen=True)
class RehearsedJob:
    """A paper-scale job against its shape's rehearsal: peak host memory and the estimated wall time (upper bound)."""

    paper: str
    job_id: str
    shape: str  # rehearse.shape_name
    dataset: str | None
    mem_mb: float
    peak_mb: float
    runtime_min: float
    estimate_min: float
    gpu: int
    device: str  # where the rehearsal ran (cpu/cuda)
    mem_source: str
    runtime_source: str

    @property
    def over_memory(self) -> bool:
        return self.peak_mb > self.mem_mb

    @property
    def over_time(self) -> bool:
        """On the rehearsal's device: a GPU job rehearsed on CPU is not held to its runtime (an upper bound only)."""
        return self.estimate_min > self.runtime_min and (self.device == "cuda" or not self.gpu)


def check_rehearsed(registry, results: Path | None = None, paper: str | None = None) -> tuple[list[RehearsedJob], dict]:
    """Every paper-scale job whose shape has a successful rehearsal; and {reason: jobs} for the others."""
    from timerepro.estimate import rehearsed_seconds
    from timerepro.rehearse import project_records, shape_id, shape_of

    recs = project_records(results)
    out, unchecked = [], {}
    for job in registry.jobs("paper", paper=paper):
        config = job.runs[0].config
        rec = recs.get(shape_id(shape_of(config)))
        if rec is None or rec["status"] != "ok":
            why = "not rehearsed" if rec is None else f"rehearsal failed: {rec.get('error', '?')[:120]}"
            unchecked[why] = unchecked.get(why, 0) + 1
            continue
        minutes = sum(rehearsed_seconds(rec, r.config) for r in job.runs) / 60.0
        task, model, dataset = config["task"], config.get("model"), config.get("dataset")
        out.append(RehearsedJob(job.paper, job.job_id, rec["name"], dataset,
                                float(job.resources["mem_mb"]), float(rec["peak_rss_mb"]),
                                float(job.resources["runtime"]), minutes, int(job.resources.get("gpu") or 0),
                                rec["device_type"], registry.resource_source(task, model, "paper", dataset, "mem_mb"),
                                registry.resource_source(task, model, "paper", dataset, "runtime")))
    return out, unchecked


def report_rehearsed(jobs: list[RehearsedJob], unchecked: dict, file=None) -> bool:
    """Per shape the worst job against its declaration; every key to raise; True when all checked jobs fit."""
    file = file or sys.stdout
    worst: dict[str, RehearsedJob] = {}
    for j in jobs:
        if j.shape not in worst or (j.over_memory, j.over_time, j.estimate_min) > \
                (worst[j.shape].over_memory, worst[j.shape].over_time, worst[j.shape].estimate_min):
            worst[j.shape] = j
    print(f"{'shape':44s} {'mem_mb':>7s} {'peak_mb':>8s} {'runtime':>7s} {'est.min':>8s} dev  verdict", file=file)
    raise_keys: dict[str, float] = {}
    for name, j in sorted(worst.items()):
        verdict = []
        if j.over_memory:
            verdict.append(f"raise {j.mem_source} to >= {j.peak_mb:.0f}")
            raise_keys[j.mem_source] = max(raise_keys.get(j.mem_source, 0), j.peak_mb)
        if j.over_time:
            verdict.append(f"raise {j.runtime_source} to >= {j.estimate_min:.0f}")
            raise_keys[j.runtime_source] = max(raise_keys.get(j.runtime_source, 0), j.estimate_min)
        print(f"{name:44s} {j.mem_mb:7.0f} {j.peak_mb:8.0f} {j.runtime_min:7.0f} {j.estimate_min:8.0f} "
              f"{j.device:4s} {'; '.join(verdict) or 'ok'}", file=file)
    for why, n in sorted(unchecked.items(), key=lambda kv: -kv[1]):
        print(f"UNCHECKED {n} job(s): {why}", file=file)
    for key, need in sorted(raise_keys.items()):
        print(f"RAISE {key} (needs {need:.0f}{' MB' if key.endswith('mem_mb') else ' min'})", file=file)
    print(f"{len(jobs)} paper-scale jobs checked against their rehearsal: {sum(j.over_memory for j in jobs)} over "
          f"memory, {sum(j.over_time for j in jobs)} over runtime; {sum(unchecked.values())} unchecked", file=file)
    return not raise_keys


def add_subcommand(sub) -> None:
    p = sub.add_parser("resources", help="check that declared mem_mb/runtime cover the run records' peaks",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", help="smoke, offline or paper (default: params/run.yaml)")
    p.add_argument("--paper", help="one paper (default: all)")
    p.set_defaults(func=_cmd)


def _cmd(args) -> int:
    from timerepro.registry import load

    registry = load()
    scale = args.scale or registry.default_scale()
    if scale == "paper":  # no paper-scale records yet: the declarations are held against the rehearsal
        return 0 if report_rehearsed(*check_rehearsed(registry, paper=args.paper)) else 1
    return 0 if report(check(registry, scale, paper=args.paper), scale) else 1
