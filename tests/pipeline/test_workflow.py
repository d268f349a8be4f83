"""The workflow's conventions (lint, profiles by name) and code-aware reruns through Snakemake: a code
change makes exactly the jobs of the runs that use the changed code due, nothing else."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from timerepro import batching, registry
from timerepro.fingerprint import Fingerprinter
from timerepro.paths import data_dir

from .conftest import ROOT

pytestmark = pytest.mark.pipeline


def snakemake_in(repo: Path, *args, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "TIMEREPRO_ROOT": str(repo), **(env or {})}
    env.pop("TIMEREPRO_RESULTS", None)
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=timeout)


def job_counts(output: str) -> dict[str, int]:
    if "Nothing to be done" in output:
        return {}
    return {k: int(v) for k, v in re.findall(r"^(\w+)\s+(\d+)$", output, flags=re.M)}


def test_snakemake_lint_is_clean():
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--lint", "--config", "scale=smoke"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.mark.parametrize("profile", ["local", "slurm"])
def test_a_profile_named_by_a_plain_word_is_found_from_the_repository_root(profile, tmp_path):
    """`snakemake --profile slurm` in the repository root, with an empty home folder."""
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config")}
    env.pop("SNAKEMAKE_PROFILE", None)
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--profile", profile, "-n", "--nolock", "--config",
                           "scale=smoke", f"results={tmp_path / 'results'}"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"Using profile {profile} for setting default command line arguments" in proc.stdout + proc.stderr


@pytest.fixture
def copies(smoke_results, tmp_path, scratch_copy):
    """A scratch repository and a copy of the session's smoke results (run records, job markers)."""
    repo = scratch_copy(tmp_path / "repo")
    results = tmp_path / "results"
    shutil.copytree(smoke_results, results, symlinks=True)
    return repo, results


def dry_run(repo: Path, results: Path) -> dict[str, int]:
    proc = snakemake_in(repo, "--profile", "local", "-n", "--config", "scale=smoke", f"results={results}",
                        f"data_dir={data_dir()}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return job_counts(proc.stdout + proc.stderr)


def edit_method(path: Path, cls: str, method: str) -> None:
    tree = ast.parse(path.read_text())
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls)
    fn = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == method)
    fn.body.insert(1, ast.parse("_edited = 1").body[0])
    path.write_text(ast.unparse(tree))


def test_editing_a_models_forward_makes_only_its_jobs_due(copies):
    repo, results = copies
    assert dry_run(repo, results).get("train", 0) == 0  # the copy is complete
    edit_method(repo / "src" / "timerepro" / "models" / "graph" / "tgat.py", "TGAT", "pair_embeddings")
    reg = registry.load()
    fingerprints = Fingerprinter(models=reg.models)
    jobs = reg.jobs("smoke")
    codes = {j.job_id: fingerprints.job([r.config for r in j.runs]) for j in jobs}
    expected = [b for b in batching.batches(jobs, codes, batching.runs_per_batch(reg, "smoke"))
                if any(r.config.get("model") == "tgat" for r in b.runs)]  # the batches (processes) of TGAT's jobs
    assert expected and dry_run(repo, results)["train"] == len(expected)


def test_editing_report_code_makes_no_training_due(copies):
    repo, results = copies
    path = repo / "src" / "timerepro" / "report" / "aggregate.py"
    path.write_text(path.read_text() + "\n\ndef _edited():\n    return 1\n")
    assert dry_run(repo, results).get("train", 0) == 0


def test_a_slurm_jobs_own_snakemake_leaves_the_stamps_to_the_submitting_process(tmp_path):
    """`--mode remote` is how the SLURM plugin starts Snakemake inside a job: its parse writes no code stamps (the
    submitting process did) and runs no unpinned-data report; the submitting parse writes them."""
    def parse(results: Path, *mode: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "snakemake", "-l", *mode, "--config", "scale=smoke",
                               f"results={results}"], cwd=ROOT, capture_output=True, text=True, timeout=300)

    remote, submitting = parse(tmp_path / "remote", "--mode", "remote"), parse(tmp_path / "submitting")
    assert remote.returncode == 0 and submitting.returncode == 0, remote.stderr[-2000:] + submitting.stderr[-2000:]
    assert "train" in remote.stdout.split()  # the rules were parsed
    assert not (tmp_path / "remote").exists()
    assert {p.name for p in (tmp_path / "submitting" / "jobs").iterdir()} == {
        f"{p}.fingerprints.json" for p in registry.PAPERS}
