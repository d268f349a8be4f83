"""dvc.yaml is generated from params/ and `dvc repro` reproduces Snakemake's run records."""

import filecmp
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from timerepro import dvcgen, registry
from timerepro.report import aggregate

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.pipeline


def test_committed_dvc_yaml_is_up_to_date():
    assert (ROOT / "dvc.yaml").read_text() == dvcgen.render(registry.load()), "run `timerepro dvc` and commit dvc.yaml"


def test_stale_dvc_yaml_is_detected(tmp_path):
    stale = tmp_path / "dvc.yaml"
    stale.write_text((ROOT / "dvc.yaml").read_text().replace("--jobs 2", "--jobs 3"))
    proc = subprocess.run([sys.executable, "-m", "timerepro", "dvc", "--check", "--output", str(stale)],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "stale" in proc.stderr


def _scratch_copy(dst: Path) -> None:
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    for rel in files:
        src = ROOT / rel
        if src.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)


def _results(path: Path) -> dict:
    """metrics.json without the measured costs (wall times, memory), which differ between any two runs."""
    metrics = json.loads(path.read_text())
    return {k: v for k, v in metrics.items()
            if not (k.endswith("_time_s") or k.startswith("peak_") or k.endswith("_mb") or k.endswith("_seconds"))}


def test_dvc_repro_reproduces_the_snakemake_run_records(smoke_results, tmp_path):
    clone = tmp_path / "clone"
    _scratch_copy(clone)
    subprocess.run(["git", "init", "-q"], cwd=clone, check=True)
    (clone / "params" / "run.yaml").write_text("scale: smoke\n")
    env = {**os.environ, "TIMEREPRO_ROOT": str(clone), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("TIMEREPRO_RESULTS", None)
    proc = subprocess.run([sys.executable, "-m", "dvc", "repro", "-q"], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ours, theirs = clone / "results", smoke_results
    runs = registry.load().runs("smoke")
    for run in runs:
        a = ours / "runs" / run.paper / run.run_id
        b = theirs / "runs" / run.paper / run.run_id
        # every result is identical; measured costs (seconds, memory) are not results
        assert _results(a / "metrics.json") == _results(b / "metrics.json"), run.run_id
        assert filecmp.cmp(a / "config.json", b / "config.json", shallow=False)
    for paper in registry.PAPERS:
        # Tables 7 and 8 measure this machine's seconds and memory: compared on everything else
        pa, pb = (aggregate.results_only(aggregate.read(paper, d)) for d in (ours, theirs))
        pd.testing.assert_frame_equal(pa, pb)
    assert (ours / "figures" / "linear_time" / "fig2.png").is_file()
    assert (ours / "report" / "index.html").is_file()
    again = subprocess.run([sys.executable, "-m", "dvc", "status"], cwd=clone, env=env, capture_output=True, text=True)
    assert "up to date" in again.stdout, again.stdout
