"""The project's own pipeline at smoke scale through profiles/slurm, in a scratch copy.

Training jobs must run as SLURM jobs with the resources snakemake computed for them (from
params/ through the registry), the local rules must stay local, and the aggregate must equal
the one the local profile produces.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from timerepro import cluster
from timerepro.report import aggregate

from .conftest import PROFILES, REPO, by_rule, is_final, run_id

pytestmark = [pytest.mark.slurm, pytest.mark.pipeline]

AGGREGATE = Path("aggregated") / "linear_time.csv"
# a guard against hangs, not a speed target: the whole smoke DAG (168 runs) on 2 shared cores
TIMEOUT = int(os.environ.get("TIMEREPRO_PIPELINE_TIMEOUT", "2400"))


def submitted_jobs(output: str) -> dict[str, dict[str, int | str]]:
    """SLURM job id -> rule and resources, as snakemake printed them when submitting."""
    blocks: dict[str, dict[str, int | str]] = {}
    current: dict[str, int | str] | None = None
    for line in output.splitlines():
        if m := re.match(r"^(local)?rule (\w+):$", line):
            current = {"rule": m.group(2), "local": bool(m.group(1))}
        elif current is not None and (m := re.match(r"^\s+jobid: (\d+)$", line)):
            blocks[m.group(1)] = current
        elif current is not None and line.strip().startswith("resources:"):
            for key in ("mem_mb", "runtime", "cpus_per_task", "gpu"):
                if m := re.search(rf"\b{key}=(\d+)", line):
                    current[key] = int(m.group(1))
    jobs = {}
    for m in re.finditer(r"^Job (\d+) has been submitted with SLURM jobid (\d+)", output, flags=re.M):
        jobs[m.group(2)] = blocks[m.group(1)]
    return jobs


def test_smoke_pipeline_runs_training_as_slurm_jobs_and_matches_local(slurm_cluster, tmp_path, scratch_copy):
    if not (REPO / "Snakefile").is_file():
        pytest.skip(f"no Snakefile at {REPO} yet: the pipeline is not there to run")
    # two copies: the local reference runs alongside the SLURM run (whose jobs leave the CPUs
    # idle between status polls), and neither locks the other's folder
    scratch = scratch_copy(tmp_path / "slurm")
    reference = scratch_copy(tmp_path / "local")

    def copy_env(root: Path) -> dict[str, str]:
        # the copy's package and params, not the checkout's (the venv has the checkout installed)
        return {"PYTHONPATH": str(root / "src"), "TIMEREPRO_ROOT": str(root)}

    local_results = reference / "results"
    local_log = tmp_path / "local.log"
    with open(local_log, "w") as sink:
        local = subprocess.Popen(
            ["timeout", "-s", "KILL", str(TIMEOUT), sys.executable, "-m", "snakemake",
             "--profile", str(PROFILES / "local"), str(local_results / AGGREGATE),
             "--config", "scale=smoke", f"results={local_results}"],
            cwd=reference, env={**slurm_cluster.env, **copy_env(reference)}, stdout=sink,
            stderr=subprocess.STDOUT, text=True)
        try:
            results = scratch / "results"
            # `--profile slurm`, a plain word, from the repository root: the design card's command
            proc = slurm_cluster.snakemake(scratch, "--config", "scale=smoke", f"results={results}",
                                           profile="slurm", timeout=TIMEOUT, env=copy_env(scratch))
            local.wait(timeout=TIMEOUT + 60)
        finally:
            if local.poll() is None:
                local.terminate()
                local.wait(timeout=60)
    assert local.returncode == 0, local_log.read_text()[-4000:]
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert (results / "report" / "index.html").is_file()

    submitted = submitted_jobs(proc.stdout)
    assert submitted, proc.stdout[-4000:]
    assert {job["rule"] for job in submitted.values()} == {"train"}  # the rest are localrules (data included)
    assert "Using profile slurm for setting default command line arguments" in proc.stdout
    rows = slurm_cluster.wait_sacct(
        lambda r: len(r) == len(submitted) and all(is_final(x) for x in r),
        name=run_id(proc.stdout), timeout=120)
    assert list(by_rule(rows)) == ["train"]
    for row in rows:
        asked = submitted[row["JobID"]]
        assert row["State"] == "COMPLETED", row
        assert cluster.mem_mb(row["ReqMem"]) == asked["mem_mb"], (row, asked)
        assert cluster.minutes(row["Timelimit"]) == asked["runtime"], (row, asked)
        assert int(row["ReqCPUS"]) == asked["cpus_per_task"], (row, asked)
        gpus = int(cluster.tres(row["AllocTRES"]).get("gres/gpu", 0))
        assert gpus == asked.get("gpu", 0), (row, asked)

    # equal results; Tables 7 and 8 (seconds, memory) measure the machine and differ between any two runs
    pd.testing.assert_frame_equal(aggregate.results_only(aggregate.read("linear_time", results)),
                                  aggregate.results_only(aggregate.read("linear_time", local_results)))
    assert list((scratch / "results" / "logs" / "slurm" / "rule_train").rglob("*.log"))
