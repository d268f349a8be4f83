"""A job killed by the scheduler: reported clearly, rerun next time, finished work kept.

snakemake-executor-plugin-slurm 2.8.0 never notices a job cancelled with scancel (sacct says
`CANCELLED by <uid>`, the plugin looks for `CANCELLED`) and waits forever; the workflow
applies timerepro.cluster.normalise_slurm_job_states(), as the project's Snakefile must.
"""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from .conftest import by_rule, is_final, run_id, wait_for

pytestmark = pytest.mark.slurm

# `long` blocks until the test cancels it; the rerun finds `release` and finishes at once.
# Every execution appends to ran/<rule>, so reruns are counted.
SNAKEFILE = textwrap.dedent(
    """
    from timerepro.cluster import normalise_slurm_job_states
    normalise_slurm_job_states()

    rule all:
        input: "out/quick.txt", "out/long.txt"

    rule quick:
        output: "out/quick.txt"
        resources: mem_mb=200, runtime=2
        shell: "echo $SLURM_JOB_ID >> ran/quick; echo $SLURM_JOB_ID > {output}"

    rule long:
        output: "out/long.txt"
        resources: mem_mb=200, runtime=10
        shell:
            "echo $SLURM_JOB_ID >> ran/long; "
            "if [ ! -e release ]; then echo $SLURM_JOB_ID > started; sleep 600; fi; "
            "echo $SLURM_JOB_ID > {output}"
    """
)


def test_scancelled_job_is_reported_and_rerun_without_redoing_finished_jobs(slurm_cluster, tmp_path):
    wd = tmp_path
    (wd / "Snakefile").write_text(SNAKEFILE)
    (wd / "ran").mkdir()
    # --retries 0: the shipped profile would resubmit the cancelled job (right for preemption,
    # and shown for failures in test_slurm_profile); here the failure itself is under test.
    cmd = slurm_cluster.snakemake_cmd("--retries", "0", timeout=300)
    log = tmp_path.parent / f"{tmp_path.name}-snakemake.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen(cmd, cwd=wd, env=slurm_cluster.env, stdout=sink,
                                stderr=subprocess.STDOUT, text=True)
        try:
            wait_for(wd / "started", proc, log)
            wait_for(wd / "out/quick.txt", proc, log)
            long_job = (wd / "started").read_text().strip()
            slurm_cluster.run(["scancel", long_job])
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:  # `timeout` passes SIGTERM on; snakemake cancels its jobs
                proc.terminate()
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    out = log.read_text()

    # reported clearly: non-zero exit (not the KILL of the timeout), the rule and the state
    assert proc.returncode not in (0, 124, 137), out
    assert "Error in rule long" in out
    assert f"SLURM-job '{long_job}' failed, SLURM status is: 'CANCELLED" in out
    assert not (wd / "out/long.txt").exists()
    rows = slurm_cluster.wait_sacct(lambda r: len(r) == 2 and all(is_final(x) for x in r),
                                    name=run_id(out))
    jobs = by_rule(rows)
    assert jobs["long"][0]["JobID"] == long_job
    assert jobs["long"][0]["State"].startswith("CANCELLED")
    assert jobs["quick"][0]["State"] == "COMPLETED"
    quick_mtime = (wd / "out/quick.txt").stat().st_mtime_ns

    # the next invocation reruns only the cancelled job
    (wd / "release").touch()
    again = slurm_cluster.snakemake(wd)
    assert again.returncode == 0, again.stdout
    assert "rule long:" in again.stdout and "rule quick:" not in again.stdout
    assert len((wd / "ran/quick").read_text().split()) == 1
    runs_of_long = (wd / "ran/long").read_text().split()
    assert len(runs_of_long) == 2 and runs_of_long[0] == long_job
    assert (wd / "out/long.txt").read_text().strip() == runs_of_long[1]
    assert (wd / "out/quick.txt").stat().st_mtime_ns == quick_mtime
    rerun = slurm_cluster.wait_sacct(lambda r: len(r) == 1 and is_final(r[0]), name=run_id(again.stdout))
    assert by_rule(rerun)["long"][0]["State"] == "COMPLETED"
