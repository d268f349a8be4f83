"""The shipped profiles/slurm on a real SLURM cluster: resources, GPUs, retries, logs.

One throwaway workflow runs once through `snakemake --profile profiles/slurm` (module
fixture); the tests read what SLURM accounting recorded about its jobs.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from timerepro import cluster

from .conftest import by_rule, is_final, run_id

pytestmark = pytest.mark.slurm

SNAKEFILE = textwrap.dedent(
    """
    rule all:
        input: "out/plain.txt", "out/gpu_1.txt", "out/gpu_2.txt", "out/flaky.txt"

    rule plain:
        output: "out/plain.txt"
        resources: mem_mb=700, runtime=7, cpus_per_task=2
        shell: "echo job=$SLURM_JOB_ID cpus=$SLURM_CPUS_PER_TASK > {output}"

    # both ask for the cluster's single (placeholder) GPU: SLURM must run them one at a time
    rule gpu:
        output: "out/gpu_{i}.txt"
        resources: gpu=1, mem_mb=300, runtime=3
        shell:
            "echo job=$SLURM_JOB_ID gpus=$CUDA_VISIBLE_DEVICES start=$(date +%s.%N) > {output}.tmp; "
            "sleep 3; echo end=$(date +%s.%N) >> {output}.tmp; mv {output}.tmp {output}"

    # fails on its first attempt; resources grow with the attempt like the training rules'
    rule flaky:
        output: "out/flaky.txt"
        resources:
            mem_mb=lambda wc, attempt: 400 * attempt,
            runtime=lambda wc, attempt: 2 * attempt,
        shell:
            "echo $SLURM_JOB_ID >> attempts.txt; "
            "if [ ! -e failed-once ]; then touch failed-once; exit 3; fi; "
            "echo job=$SLURM_JOB_ID > {output}"
    """
)

N_JOBS = 5  # plain, gpu x2, flaky x2 (one failure, one retry)


def _fields(path: Path) -> dict[str, str]:
    return dict(item.split("=", 1) for item in path.read_text().split())


@pytest.fixture(scope="module")
def workflow_run(slurm_cluster, tmp_path_factory):
    wd = tmp_path_factory.mktemp("slurm-profile")
    (wd / "Snakefile").write_text(SNAKEFILE)
    proc = slurm_cluster.snakemake(
        wd, env={cluster.ENV_ACCOUNT: "timerepro", cluster.ENV_PARTITION: "debug"})
    assert proc.returncode == 0, proc.stdout
    rid = run_id(proc.stdout)
    rows = slurm_cluster.wait_sacct(
        lambda rows: len(rows) == N_JOBS and all(is_final(r) for r in rows), name=rid)
    return wd, proc.stdout, by_rule(rows)


def test_each_job_ran_as_a_slurm_job_with_its_resources(workflow_run):
    wd, _, jobs = workflow_run
    assert sorted(jobs) == ["flaky", "gpu", "plain"]
    (plain,) = jobs["plain"]
    assert plain["State"] == "COMPLETED"
    # the output was written inside that very SLURM job
    assert _fields(wd / "out/plain.txt") == {"job": plain["JobID"], "cpus": "2"}
    assert cluster.mem_mb(plain["ReqMem"]) == 700
    assert cluster.minutes(plain["Timelimit"]) == 7
    assert cluster.tres(plain["AllocTRES"])["cpu"] == "2"
    assert "gres/gpu" not in cluster.tres(plain["AllocTRES"])
    # partition and account came from the environment through the profile's default-resources
    assert (plain["Partition"], plain["Account"]) == ("debug", "timerepro")


def test_gpu_request_reaches_slurm_accounting(workflow_run):
    wd, _, jobs = workflow_run
    assert len(jobs["gpu"]) == 2
    for row in jobs["gpu"]:
        assert row["State"] == "COMPLETED"
        assert cluster.tres(row["AllocTRES"]).get("gres/gpu") == "1", row
        assert cluster.mem_mb(row["ReqMem"]) == 300
        assert cluster.minutes(row["Timelimit"]) == 3
    seen = {_fields(wd / f"out/gpu_{i}.txt")["job"] for i in (1, 2)}
    assert seen == {row["JobID"] for row in jobs["gpu"]}


def test_jobs_sharing_the_single_gpu_do_not_overlap(workflow_run):
    wd, _, jobs = workflow_run
    spans = []
    for i in (1, 2):
        f = _fields(wd / f"out/gpu_{i}.txt")
        assert f["gpus"] == "0"  # SLURM bound the placeholder GPU to the job
        spans.append((float(f["start"]), float(f["end"])))
    (s1, e1), (s2, e2) = sorted(spans)
    assert e1 <= s2, f"GPU jobs overlapped: {spans}"
    # the same from accounting (whole seconds)
    first, second = sorted(jobs["gpu"], key=lambda r: r["Start"])
    assert cluster.slurm_time(first["End"]) <= cluster.slurm_time(second["Start"])


def test_failed_job_is_retried_with_more_resources(workflow_run):
    wd, out, jobs = workflow_run
    failed, retried = jobs["flaky"]
    assert failed["State"] == "FAILED" and retried["State"] == "COMPLETED"
    assert (wd / "attempts.txt").read_text().split() == [failed["JobID"], retried["JobID"]]
    assert _fields(wd / "out/flaky.txt") == {"job": retried["JobID"]}
    # attempt 2 asked for twice the memory and time (the rule's resource callables)
    assert (cluster.mem_mb(failed["ReqMem"]), cluster.mem_mb(retried["ReqMem"])) == (400, 800)
    assert (cluster.minutes(failed["Timelimit"]), cluster.minutes(retried["Timelimit"])) == (2, 4)
    assert "Error in rule flaky" in out


def test_slurm_logs_are_kept_per_rule(workflow_run):
    wd, _, jobs = workflow_run
    logdir = wd / "results" / "logs" / "slurm"
    for rule, rows in jobs.items():
        for row in rows:
            logs = list((logdir / f"rule_{rule}").rglob(f"{row['JobID']}.log"))
            assert logs, f"no SLURM log for {rule} job {row['JobID']} under {logdir}"
