"""A real single-node SLURM cluster for the tests marked `slurm`.

The session fixture `slurm_cluster` runs `workflow/scripts/slurm-cluster up` in a fresh folder
under /tmp (MariaDB + slurmdbd, munge, slurmctld, configless slurmd, one placeholder GPU) and
always runs `down` at the end. It skips, saying why, when the SLURM packages are not installed
(`workflow/scripts/install-slurm.sh`) or the tests do not run as root. Every command runs under
a hard timeout; snakemake runs under `timeout -s KILL`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from timerepro import cluster

REPO = Path(__file__).resolve().parents[2]
SLURM_CLUSTER = REPO / "workflow" / "scripts" / "slurm-cluster"
PROFILES = REPO / "profiles"

# Test-only: poll job states every second instead of the plugin's 40 s grace period (the
# shipped profile keeps the plugin's defaults, which protect a real cluster's slurmdbd).
FAST_POLLING = (
    "--slurm-init-seconds-before-status-checks", "1",
    "--seconds-between-status-checks", "1",
)
SITE_VARS = (cluster.ENV_PARTITION, cluster.ENV_ACCOUNT, cluster.ENV_GPU_MODEL)
UP_TIMEOUT = int(os.environ.get("TIMEREPRO_SLURM_UP_TIMEOUT", "180"))
FINAL_STATES = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
                "BOOT_FAIL", "DEADLINE", "PREEMPTED")


def is_final(row: dict[str, str]) -> bool:
    return row["State"].split()[0] in FINAL_STATES


@dataclass
class Cluster:
    state_dir: Path
    env: dict[str, str]
    bringup_seconds: float

    def run(self, cmd: Sequence[str | os.PathLike], timeout: float = 60, check: bool = True,
            **kw) -> subprocess.CompletedProcess:
        return subprocess.run([str(c) for c in cmd], env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=check, **kw)

    def sacct(self, job_ids=None, **kw) -> list[dict[str, str]]:
        return cluster.sacct_jobs(job_ids, env=self.env, **kw)

    def wait_sacct(self, done: Callable[[list[dict[str, str]]], bool], *, timeout: float = 90,
                   **query) -> list[dict[str, str]]:
        """Poll sacct until done(rows) holds: records reach slurmdbd asynchronously."""
        deadline = time.monotonic() + timeout
        rows: list[dict[str, str]] = []
        while True:
            rows = self.sacct(**query)
            if done(rows):
                return rows
            if time.monotonic() > deadline:
                raise AssertionError(f"sacct did not show the expected jobs within {timeout} s: {rows}")
            time.sleep(0.5)

    def snakemake_cmd(self, *args: str, profile: str | os.PathLike = PROFILES / "slurm",
                      timeout: float = 900) -> list[str]:
        return ["timeout", "-s", "KILL", str(int(timeout)), sys.executable, "-m", "snakemake",
                "--profile", str(profile), *FAST_POLLING, *args]

    def snakemake(self, workdir: Path, *args: str, profile: str | os.PathLike = PROFILES / "slurm",
                  timeout: float = 900, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run snakemake in workdir through a shipped profile; stdout+stderr in .stdout."""
        return subprocess.run(self.snakemake_cmd(*args, profile=profile, timeout=timeout),
                              cwd=workdir, env={**self.env, **(env or {})}, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout + 30)


def run_id(snakemake_output: str) -> str:
    """The plugin's run ID (the SLURM job name of every job of one snakemake invocation)."""
    for line in snakemake_output.splitlines():
        if line.startswith("SLURM run ID: "):
            return line.split(": ", 1)[1].strip()
    raise AssertionError(f"no 'SLURM run ID' in the snakemake output:\n{snakemake_output}")


def wait_for(path: Path, proc: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    """Wait until the Snakemake run `proc` (its output in `log`) makes `path`; fail if it ends first or times out."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"snakemake ended before {path.name} appeared:\n{log.read_text()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {timeout} s")
        time.sleep(0.3)


def by_rule(rows: list[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    """sacct rows grouped by rule (the plugin stores rule_<name>[_wildcards_...] as comment)."""
    out: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        comment = row["Comment"]
        assert comment.startswith("rule_"), row
        rule = comment[len("rule_"):].split("_wildcards_")[0]
        out.setdefault(rule, []).append(row)
    for jobs in out.values():
        jobs.sort(key=lambda r: int(r["JobID"].split("_")[0]))
    return out


@pytest.fixture(scope="session")
def slurm_cluster():
    if shutil.which("slurmctld") is None or shutil.which("slurmdbd") is None:
        pytest.skip("SLURM is not installed (slurmctld/slurmdbd missing): "
                    "run workflow/scripts/install-slurm.sh as root")
    if os.geteuid() != 0:
        pytest.skip("the test cluster's daemons need root")
    state = Path(tempfile.mkdtemp(prefix="timerepro-slurm-", dir="/tmp"))
    try:
        t0 = time.monotonic()
        up = subprocess.Popen([str(SLURM_CLUSTER), "up", str(state)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        try:
            out, err = up.communicate(timeout=UP_TIMEOUT)
        except subprocess.TimeoutExpired:
            up.terminate()  # the script stops what it started, then `down` below checks
            out, err = up.communicate(timeout=60)
            pytest.fail(f"slurm-cluster up did not finish in {UP_TIMEOUT} s:\n{err}")
        if up.returncode != 0:
            pytest.fail(f"slurm-cluster up failed ({up.returncode}):\n{err}")
        env = {k: v for k, v in os.environ.items() if k not in SITE_VARS}
        for line in out.splitlines():
            if line.startswith("export "):
                key, _, value = line[len("export "):].partition("=")
                env[key] = value
        assert env.get("SLURM_CONF") == str(state / "etc" / "slurm.conf"), out
        # tools and python of this venv inside jobs too (sbatch exports the environment)
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        yield Cluster(state, env, time.monotonic() - t0)
    finally:
        down = subprocess.run([str(SLURM_CLUSTER), "down", str(state)], capture_output=True,
                              text=True, timeout=UP_TIMEOUT)
        if down.returncode == 0:
            shutil.rmtree(state, ignore_errors=True)
        else:  # keep the logs for whoever looks
            print(f"slurm-cluster down failed; state kept in {state}:\n{down.stderr}", file=sys.stderr)
