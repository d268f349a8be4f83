"""Batches of scheduler jobs (timerepro.batching): every job once, one code per batch, resources that cover the
jobs, one job per batch at paper scale, and the same records whether a job runs alone or in a batch."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from timerepro import batching, stopping
from timerepro.fingerprint import Fingerprinter
from timerepro.registry import load

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def reg():
    return load()


@pytest.fixture(scope="module")
def codes(reg):
    fingerprints = Fingerprinter(models=reg.models)
    return {j.job_id: fingerprints.job([r.config for r in j.runs]) for s in ("smoke", "offline") for j in reg.jobs(s)}


@pytest.mark.parametrize("scale", ["smoke", "offline"])
def test_batches_cover_every_job_once_with_one_code_and_the_jobs_resources(reg, codes, scale):
    jobs = reg.jobs(scale)
    cap = batching.runs_per_batch(reg, scale)
    out = batching.batches(jobs, codes, cap)
    position = {j.job_id: i for i, j in enumerate(jobs)}
    assert [position[b.jobs[0].job_id] for b in out] == sorted(position[b.jobs[0].job_id] for b in out)
    assert sorted(j.job_id for b in out for j in b.jobs) == sorted(j.job_id for j in jobs)
    assert len(out) < len(jobs)  # the point: fewer processes
    assert len({b.batch_id for b in out}) == len(out)
    for b in out:
        assert {j.paper for j in b.jobs} == {b.paper} and {codes[j.job_id] for j in b.jobs} == {b.code}
        assert len(b.runs) <= cap or len(b.jobs) == 1
        assert b.resources["runtime"] == sum(j.resources["runtime"] for j in b.jobs)
        assert b.resources["mem_mb"] == max(j.resources["mem_mb"] for j in b.jobs)
        assert {j.resources["cpus"] for j in b.jobs} == {b.resources["cpus"]}
        if len(b.jobs) == 1:  # a lone job keeps its marker: its id and code
            assert (b.batch_id, b.code) == (b.jobs[0].job_id, codes[b.jobs[0].job_id])


def test_paper_scale_keeps_one_process_per_run(reg):
    jobs = reg.jobs("paper")[:200]
    out = batching.batches(jobs, {j.job_id: "0" * 16 for j in jobs}, batching.runs_per_batch(reg, "paper"))
    assert [b.batch_id for b in out] == [j.job_id for j in jobs]


def test_a_job_larger_than_the_cap_stays_alone(reg, codes):
    jobs = reg.jobs("offline")
    ten = [j for j in jobs if len(j.runs) == 10][:3]
    out = batching.batches(ten, codes, 10)
    assert [len(b.jobs) for b in out] == [1, 1, 1]
    with pytest.raises(ValueError):
        batching.batches(ten, codes, 0)


def _run_job(results: Path, paper: str, job_ids: list[str], marker: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    timing = marker.with_suffix(".timing.json")
    proc = subprocess.run([sys.executable, "-m", "timerepro", "--results", str(results), "run-job", paper, *job_ids,
                           "--scale", "smoke", "--marker", str(marker), "--timing", str(timing), "--quiet"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    t = json.loads(timing.read_text())
    assert [j["job_id"] for j in t["jobs"]] == job_ids and t["ready"] <= t["jobs"][0]["start"]


def _record(results: Path, paper: str, run_id: str) -> dict:
    d = results / "runs" / paper / run_id
    measured = ("time", "peak", "rss")  # wall clock and memory differ from process to process
    history = [{k: v for k, v in row.items() if not any(m in k for m in measured)}
               for row in json.loads((d / "history.json").read_text())]
    return {"metrics": json.loads((d / "metrics.json").read_text()), "history": history,
            "config": json.loads((d / "config.json").read_text())}


def test_a_batch_writes_the_records_its_jobs_write_alone(reg, codes, tmp_path):
    jobs = [j for j in reg.jobs("smoke", paper="linear_time") if j.runs[0].experiment == "synthetic_seqcls"][:2]
    assert len(jobs) == 2 and codes[jobs[0].job_id] == codes[jobs[1].job_id]
    alone, together = tmp_path / "alone", tmp_path / "together"
    for j in jobs:
        _run_job(alone, "linear_time", [j.job_id], alone / "markers" / f"{j.job_id}.json")
    ids = [j.job_id for j in jobs]
    marker = together / "markers" / "batch.json"
    _run_job(together, "linear_time", ids, marker)
    runs = [r.run_id for j in jobs for r in j.runs]
    assert len(runs) == 4
    for run_id in runs:
        assert _record(alone, "linear_time", run_id) == _record(together, "linear_time", run_id)
    doc = json.loads(marker.read_text())
    assert doc["job_id"] == batching.batch_id(ids) and sorted(Path(r).name for r in doc["runs"]) == sorted(runs)
    assert set(doc["fingerprints"]) == set(runs)


LONG_BATCH = """
import os, sys, time
from pathlib import Path
from types import SimpleNamespace
from timerepro import batching, stopping

out = Path(sys.argv[1])

def long_job(job):  # trains until asked to stop, as train.fit does between batches
    with stopping.handlers():
        (out / f"started-{job.job_id}").write_text(str(os.getpid()))
        while not stopping.requested():
            time.sleep(0.01)
        (out / f"stopped-{job.job_id}").write_text(str(stopping.STOP.signum))
        raise stopping.JobStopped(f"job {job.job_id}")

batching.run_each([SimpleNamespace(job_id="a"), SimpleNamespace(job_id="b")], long_job)
"""


def _wait_for(path: Path, proc: subprocess.Popen, limit_s: float = 120) -> None:
    deadline = time.monotonic() + limit_s  # a bound on a hung test, not a timing
    while not path.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1]
        time.sleep(0.05)


@pytest.mark.parametrize("signum", [signal.SIGUSR1, signal.SIGTERM])
@pytest.mark.parametrize("to", ["batch", "job"])
def test_a_stop_signal_reaches_the_running_job_and_the_batch_exits_to_be_retried(tmp_path, signum, to):
    """SLURM signals the batch's process (or every process of the job): the job running in its fork checkpoints
    (here: notes the request) and exits, the batch exits with EXIT_STOPPED and starts no further job."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-c", LONG_BATCH, str(tmp_path)], env=env, stderr=subprocess.PIPE,
                            text=True)
    try:
        _wait_for(tmp_path / "started-a", proc)
        child = int((tmp_path / "started-a").read_text())
        assert child != proc.pid  # the job runs in a fork of the batch
        os.kill(proc.pid if to == "batch" else child, signum)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == stopping.EXIT_STOPPED, err
    assert (tmp_path / "stopped-a").read_text() == str(int(signum))
    assert not (tmp_path / "started-b").exists()
