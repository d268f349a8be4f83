"""Snakemake's scheduler keeps one pending re-evaluation timer (timerepro.scheduler_timer), not one per finished job."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from timerepro import scheduler_timer

JobScheduler = pytest.importorskip("snakemake.scheduling.job_scheduler").JobScheduler


@pytest.fixture
def patched(monkeypatch):
    """The single-timer method on JobScheduler for this test only."""
    monkeypatch.setattr(JobScheduler, "_schedule_reevalutation", JobScheduler._schedule_reevalutation)
    assert scheduler_timer.single_reevaluation_timer() is True
    assert scheduler_timer.single_reevaluation_timer() is True  # idempotent: wrapped once
    assert not hasattr(JobScheduler._schedule_reevalutation.__wrapped__, "__wrapped__")
    return JobScheduler._schedule_reevalutation


def timers() -> int:
    return sum(isinstance(t, threading.Timer) and t.is_alive() for t in threading.enumerate())


def test_passes_share_one_pending_timer_and_it_wakes_the_scheduler_once(patched):
    class Scheduler:  # what the method touches: the semaphore the scheduling loop waits on
        _open_jobs = threading.Semaphore(0)

    s = Scheduler()
    before = timers()
    for _ in range(5):  # five passes (finished jobs) within one timespan: upstream starts five timers
        patched(s, 0.2)
    assert timers() - before == 1
    assert s._open_jobs.acquire(timeout=5)  # the timer woke the loop ...
    assert not s._open_jobs.acquire(timeout=0.5)  # ... once
    patched(s, 0.05)  # the pass it woke schedules the next one
    assert s._open_jobs.acquire(timeout=5)
    deadline = time.monotonic() + 5
    while timers() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert timers() == before


def test_a_real_workflow_ends_with_at_most_one_timer_and_does_not_wait_for_it(tmp_path):
    # 12 jobs on 2 cores: upstream leaves about one timer per finished job alive (7 here when measured)
    (tmp_path / "Snakefile").write_text(
        "import threading\n"
        "from timerepro.scheduler_timer import single_reevaluation_timer\n"
        "assert single_reevaluation_timer()\n"
        "rule all:\n"
        "    input: expand('out/{i}.txt', i=range(12))\n"
        "rule one:\n"
        "    output: 'out/{i}.txt'\n"
        "    shell: 'sleep 0.3; echo {wildcards.i} > {output}'\n"
        "onsuccess:\n"
        "    print('TIMERS', sum(isinstance(t, threading.Timer) and t.is_alive() for t in threading.enumerate()))\n")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-c", "2", "--scheduler", "greedy",
                           "--max-jobs-per-timespan", "100/30s"],  # a pending timer of 30 s must not hold the exit
                          cwd=tmp_path, capture_output=True, text=True, timeout=25)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(list(Path(tmp_path, "out").glob("*.txt"))) == 12
    counts = [int(line.split()[1]) for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("TIMERS")]
    assert counts and counts[0] <= 1, proc.stdout[-2000:]
