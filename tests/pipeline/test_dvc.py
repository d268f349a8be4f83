"""dvc.yaml is generated from params/ and `dvc repro` reproduces Snakemake's run records."""

import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from timerepro import dvcgen, registry
from timerepro.report import aggregate

from .conftest import TIMEOUT

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


def _results(path: Path) -> dict:
    """metrics.json without the measured costs (times in seconds: `*_s`, memory), which differ between any two runs."""
    metrics = json.loads(path.read_text())
    return {k: v for k, v in metrics.items()
            if not (k.endswith("_s") or k.startswith("peak_") or k.endswith("_mb") or k.endswith("_seconds"))}


def _git(clone: Path, *args) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t.invalid"}
    subprocess.run(["git", *args], cwd=clone, env=env, check=True, capture_output=True)


# A change of the synthetic task's code that moves its numbers: the true attention curve (Figure 3)
TRUE_ATTENTION_EDIT = """

_true_attention = true_attention


def true_attention(dt, decay):
    return _true_attention(dt, 2 * decay)
"""


def test_dvc_exp_run_reproduces_the_snakemake_records_and_a_code_change_reruns_exactly_its_runs(smoke_results, tmp_path,
                                                                                              scratch_copy):
    clone = scratch_copy(tmp_path / "clone")
    _git(clone, "init", "-q")
    _git(clone, "add", "-A")
    _git(clone, "commit", "-qm", "scratch")
    env = {**os.environ, "TIMEREPRO_ROOT": str(clone), "PYTHONPATH": str(clone / "src"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("TIMEREPRO_RESULTS", None)

    def dvc(*args, check=True):
        proc = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=clone, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT)
        assert proc.returncode == 0 or not check, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc

    # an experiment at the smoke scale, set on the command line over params/run.yaml (offline there)
    dvc("exp", "run", "-S", "params/run.yaml:scale=smoke")
    ours, theirs = clone / "results", smoke_results
    reg = registry.load()
    runs = reg.runs("smoke")
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
    assert "up to date" in dvc("status").stdout
    metrics = json.loads(dvc("metrics", "show", "--json").stdout)
    assert "fig2" in json.dumps(metrics) and "fig3" in json.dumps(metrics)

    # commit the smoke results, then change the synthetic task's code
    _git(clone, "add", "-A")
    _git(clone, "commit", "-qm", "smoke results")
    stamps = {r.run_id: (ours / "runs" / r.paper / r.run_id / "metrics.json").stat().st_mtime_ns for r in runs}
    path = clone / "src" / "timerepro" / "data" / "synthetic_events.py"
    path.write_text(path.read_text() + TRUE_ATTENTION_EDIT)
    assert "train_linear_time" in dvc("status").stdout
    dvc("repro")
    redone = {r.run_id for r in runs if (ours / "runs" / r.paper / r.run_id / "metrics.json").stat().st_mtime_ns
              != stamps[r.run_id]}
    assert redone == {r.run_id for r in runs if r.config["task"] == "sequence_classification"}
    for run_id in redone:  # the old records are kept, by fingerprint
        assert list((ours / "runs" / "linear_time" / ".by-code" / run_id).iterdir())
    moved = dvc("metrics", "diff", "--json").stdout
    assert "fig3" in moved and "True | " in moved  # the true attention curve moved
    plots = dvc("plots", "diff", "--json", "HEAD").stdout
    assert "results/plots/linear_time/fig3.csv" in plots
