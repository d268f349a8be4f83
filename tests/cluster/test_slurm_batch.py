"""One batch of the project's training jobs (timerepro.batching) through profiles/slurm: one SLURM job with the
batch's resources (the largest memory of its jobs, the sum of their runtimes), its jobs run in forks of that
job's process, every run recorded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from timerepro import batching, cluster, records, registry
from timerepro.fingerprint import Fingerprinter

from .conftest import by_rule, is_final, run_id
from .test_slurm_pipeline import submitted_jobs

pytestmark = pytest.mark.slurm


def test_a_batch_is_one_slurm_job_with_its_resources(slurm_cluster, tmp_path, scratch_copy):
    scratch = scratch_copy(tmp_path / "slurm")
    env = {"PYTHONPATH": str(scratch / "src"), "TIMEREPRO_ROOT": str(scratch)}  # the copy's package and params
    reg = registry.load()  # the checkout's params and code: the copy's
    fingerprints = Fingerprinter(models=reg.models)
    jobs = reg.jobs("smoke", paper="linear_time")
    codes = {j.job_id: fingerprints.job([r.config for r in j.runs]) for j in jobs}
    batch = next(b for b in batching.batches(jobs, codes, batching.runs_per_batch(reg, "smoke"))
                 if len(b.jobs) > 1 and b.runs[0].experiment == "synthetic_seqcls")  # generated data: no inputs
    results = scratch / "results"
    marker = records.job_marker(results, "linear_time", batch.batch_id, batch.code)
    proc = slurm_cluster.snakemake(scratch, str(marker), "--config", "scale=smoke", f"results={results}",
                                   profile="slurm", env=env)
    assert proc.returncode == 0, proc.stdout[-4000:]
    submitted = submitted_jobs(proc.stdout)
    assert [j["rule"] for j in submitted.values()] == ["train"]
    (asked,) = submitted.values()
    assert asked["mem_mb"] == max(j.resources["mem_mb"] for j in batch.jobs)
    assert asked["runtime"] == sum(j.resources["runtime"] for j in batch.jobs)
    rows = slurm_cluster.wait_sacct(lambda r: len(r) == 1 and is_final(r[0]), name=run_id(proc.stdout), timeout=120)
    (row,) = by_rule(rows)["train"]
    assert row["State"] == "COMPLETED", row
    assert cluster.mem_mb(row["ReqMem"]) == asked["mem_mb"] and cluster.minutes(row["Timelimit"]) == asked["runtime"]
    doc = json.loads(marker.read_text())
    assert sorted(Path(p).name for p in doc["runs"]) == sorted(r.run_id for r in batch.runs)
    for run in batch.runs:
        assert (results / "runs" / "linear_time" / run.run_id / "metrics.json").is_file()
