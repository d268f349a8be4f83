"""The smoke pipeline, run once per test session through Snakemake and papermill."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


# a loaded machine (shared cores) may need longer than a dedicated one: TIMEREPRO_PIPELINE_TIMEOUT seconds
TIMEOUT = int(os.environ.get("TIMEREPRO_PIPELINE_TIMEOUT", "2400"))


def snakemake(*args, results: Path, timeout: int = TIMEOUT) -> subprocess.CompletedProcess:
    env = {**os.environ, "TIMEREPRO_RESULTS": str(results)}
    cmd = [sys.executable, "-m", "snakemake", "--profile", "profiles/local", "--config", f"results={results}", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def smoke_results(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("smoke") / "results"
    proc = snakemake("scale=smoke", results=results)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return results

