"""Scheduler jobs packed into batches, one `timerepro run-job` process each.

A job's process spends seconds before its first run (Python, torch, params/ and the fingerprints), which at
the offline scale is a large share of its work: a batch runs several jobs of one paper, made by the same code
and asking for the same cpus and GPUs, one after another in one process, up to the scale's `runs_per_batch`
runs (params/scales.yaml; 1 at paper scale: one SLURM job per run). Runs, run ids and records are the jobs';
a batch only changes how many processes start. A batch of one job keeps that job's id, so its marker is the
job's; a batch's code is the fingerprint its jobs share, so an edit makes due exactly the batches of the
jobs it makes due. Each job of a batch runs in a fork of its process (`run_each`), and SLURM's stop signal
(timerepro.stopping) to the batch goes on to the job running there.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

from timerepro import stopping


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


def run_each(jobs: list, execute: Callable, finished: Callable | None = None) -> None:
    """`execute(job)` for each job in turn, then `finished(job, start time)`: a lone job in this process, several
    each in a fork of it (`in_own_process`). A stop signal (SLURM's, timerepro.stopping) goes on to the running job;
    then, or when it comes between two jobs, the batch exits with EXIT_STOPPED, so the retry runs it again: the
    finished runs are complete, the stopped one resumes from its checkpoint."""
    alone = len(jobs) == 1  # its runs set the handlers themselves (timerepro.runs)
    with contextlib.nullcontext() if alone else stopping.handlers():
        for job in jobs:
            if stopping.requested():
                raise stopping.JobStopped(f"a batch, before job {job.job_id}")
            start = time.time()
            if alone:
                execute(job)
            else:
                in_own_process(lambda job=job: execute(job), job.job_id)
            if finished is not None:
                finished(job, start)


def _forward_to(pid: int):
    """The stop-signal handler of a process waiting on its fork `pid`: note the request, send the signal on."""

    def forward(signum: int, frame=None) -> None:
        stopping.STOP.request(signum)
        with contextlib.suppress(ProcessLookupError):  # the fork has just ended
            os.kill(pid, signum)

    return forward


def in_own_process(fn: Callable[[], None], job_id: str) -> None:
    """Run `fn()` in a forked copy of this process: Python, torch, params/ and the fingerprints are loaded once
    per batch, while each job's memory, caches and random state start as they would in a process of its own
    (its runs' peak memory is theirs alone), stop signals included: default until its run sets its handlers.
    A stop signal to this process meanwhile is sent on to the fork, and JobStopped raised once the fork has
    ended; RuntimeError when the fork fails. Without fork (not POSIX) run it here."""
    if not hasattr(os, "fork"):
        fn()
        return
    sys.stdout.flush()
    sys.stderr.flush()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, stopping.STOP_SIGNALS)  # none lands between fork and handlers
    pid = os.fork()
    if pid == 0:  # the child: never returns into the parent's code
        code = 1
        try:
            for s in stopping.STOP_SIGNALS:
                signal.signal(s, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            fn()
            code = 0
        except SystemExit as exc:  # JobStopped: EXIT_STOPPED
            code = exc.code if isinstance(exc.code, int) else 1
            if code:
                print(f"job {job_id}: {exc}", file=sys.stderr)
        except BaseException:  # noqa: BLE001 (reported here, judged by the parent through the exit status)
            import traceback

            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    previous = {s: signal.signal(s, _forward_to(pid)) for s in stopping.STOP_SIGNALS}
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if stopping.requested():  # it came just before the fork
            _forward_to(pid)(stopping.STOP.signum)
        _, status = os.waitpid(pid, 0)  # retried after a handler runs (PEP 475)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    code = os.waitstatus_to_exitcode(status)
    if stopping.requested() or code == stopping.EXIT_STOPPED:
        raise stopping.JobStopped(f"job {job_id} of a batch (its process exited with status {code})")
    if code != 0:
        raise RuntimeError(f"job {job_id} failed (its process exited with status {code}): see the traceback above")
