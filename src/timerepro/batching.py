"""Scheduler jobs packed into batches, one `timerepro run-job` process each.

A job's process spends seconds before its first run (Python, torch, params/ and the fingerprints), which at
the offline scale is a large share of its work: a batch runs several jobs of one paper, made by the same code
and asking for the same cpus and GPUs, one after another in one process, up to the scale's `runs_per_batch`
runs (params/scales.yaml; 1 at paper scale: one SLURM job per run). Runs, run ids and records are the jobs';
a batch only changes how many processes start. A batch of one job keeps that job's id, so its marker is the
job's; a batch's code is the fingerprint its jobs share, so an edit makes due exactly the batches of the
jobs it makes due.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Batch:
    paper: str
    batch_id: str
    jobs: tuple  # registry.Job, in registry order
    code: str  # the fingerprint its jobs share (timerepro.fingerprint)
    resources: dict = field(hash=False, compare=False)  # mem_mb: the largest job's; runtime: the sum

    @property
    def runs(self) -> list:
        return [run for job in self.jobs for run in job.runs]


def runs_per_batch(registry, scale: str) -> int:
    """The scale's `runs_per_batch` (params/scales.yaml; default 1: one job per process)."""
    return int(registry.scales["scales"][scale].get("runs_per_batch", 1))


def batch_id(job_ids: list[str]) -> str:
    """A lone job's own id; otherwise a hash of the member job ids (12 hex digits, like a job id)."""
    if len(job_ids) == 1:
        return job_ids[0]
    return hashlib.sha256(("batch " + " ".join(job_ids)).encode()).hexdigest()[:12]


def batch_resources(jobs) -> dict:
    """What the process asks for: its jobs run one after another, so time adds up and memory is the largest."""
    res = dict(jobs[0].resources)
    res["runtime"] = sum(j.resources["runtime"] for j in jobs)
    for key in ("mem_mb", "cpus", "gpu"):
        if key in res:
            res[key] = max(j.resources[key] for j in jobs)
    return res


def batches(jobs, codes: dict[str, str], runs_per_batch: int) -> list[Batch]:
    """`jobs` (registry order) packed greedily: jobs of one (paper, code, cpus, gpu) fill a batch until the
    next would take it past `runs_per_batch` runs; a job with more runs than that stays alone."""
    if runs_per_batch < 1:
        raise ValueError(f"runs_per_batch must be >= 1, got {runs_per_batch}")
    jobs = list(jobs)
    position = {j.job_id: i for i, j in enumerate(jobs)}
    open_: dict[tuple, list] = {}
    closed: list[list] = []
    for job in jobs:
        key = (job.paper, codes[job.job_id], job.resources.get("cpus"), job.resources.get("gpu"))
        current = open_.setdefault(key, [])
        if current and sum(len(j.runs) for j in current) + len(job.runs) > runs_per_batch:
            closed.append(current)
            current = open_[key] = []
        current.append(job)
    members = sorted(closed + [c for c in open_.values() if c], key=lambda c: position[c[0].job_id])
    return [Batch(c[0].paper, batch_id([j.job_id for j in c]), tuple(c), codes[c[0].job_id], batch_resources(c))
            for c in members]

