"""The DRMAA profile: its native specification, and a run through the real DRMAA plugin.

No slurm-drmaa library exists for Debian and none can be built offline, so the end-to-end
test puts a test double of the `drmaa` binding first on PYTHONPATH (fake_drmaa/): it checks
each specification against slurm-drmaa's grammar and submits with sbatch to the test cluster.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from timerepro import cluster

from .conftest import PROFILES, REPO, by_rule, is_final

PROFILE = PROFILES / "slurm-drmaa"
FAKE_DRMAA = Path(__file__).parent / "fake_drmaa"
SITE = {cluster.ENV_PARTITION: "debug", cluster.ENV_ACCOUNT: "timerepro"}

needs_drmaa_plugin = pytest.mark.skipif(
    importlib.util.find_spec("snakemake_executor_plugin_drmaa") is None,
    reason="snakemake-executor-plugin-drmaa is not installed (pip install -e .[workflow])",
)


def _profile() -> dict:
    return yaml.safe_load((PROFILE / "config.yaml").read_text())


def _spec_options(spec: str) -> dict[str, str]:
    return dict(tok[2:].partition("=")[::2] for tok in spec.split())


# --- the mapping ------------------------------------------------------------------------------

def test_native_spec_carries_partition_account_time_memory_cpus_and_gpus():
    spec = cluster.drmaa_native_spec(
        {"mem_mb": 16000, "runtime": 1500, "cpus_per_task": 4, "gpu": 2},
        rule="train",
        environ={**SITE, cluster.ENV_PARTITION: "gpu-long"},
    )
    assert _spec_options(spec) == {
        "ntasks": "1",
        "cpus-per-task": "4",
        "mem": "16000",
        "time": "0:1500:00",  # 25 h as hours:minutes:seconds, read alike by slurm-drmaa and sbatch
        "gres": "gpu:2",
        "comment": "rule_train",
        "partition": "gpu-long",
        "account": "timerepro",
    }


def test_native_spec_defaults_and_gpu_model():
    spec = cluster.drmaa_native_spec({}, environ={cluster.ENV_GPU_MODEL: "a100"})
    opts = _spec_options(spec)
    assert (opts["mem"], opts["time"], opts["cpus-per-task"]) == ("2000", "0:60:00", "1")
    assert opts["gres"] == "gpu:a100:0"
    assert "partition" not in opts and "account" not in opts  # the cluster's defaults


@pytest.mark.parametrize("resources, environ", [
    ({"mem_mb": 1.5e3}, {}),
    ({"runtime": 0}, {}),
    ({"gpu": -1}, {}),
    ({"cpus_per_task": True}, {}),
    ({}, {cluster.ENV_PARTITION: "two words"}),
    ({}, {cluster.ENV_ACCOUNT: "'quoted'"}),
])
def test_native_spec_rejects_what_slurm_drmaa_would_misparse(resources, environ):
    with pytest.raises(ValueError):
        cluster.drmaa_native_spec(resources, environ=environ)


def test_profile_carries_the_template_and_defaults_of_the_package():
    profile = _profile()
    assert profile["executor"] == "drmaa"
    assert profile["drmaa-args"] == cluster.DRMAA_ARGS_TEMPLATE
    defaults = profile["default-resources"]
    assert {k: defaults[k] for k in cluster.DRMAA_DEFAULT_RESOURCES} == cluster.DRMAA_DEFAULT_RESOURCES
    slurm_defaults = yaml.safe_load((PROFILES / "slurm" / "config.yaml").read_text())["default-resources"]
    for key in ("mem_mb", "runtime", "cpus_per_task"):
        assert slurm_defaults[key] == defaults[key]


def test_profile_expressions_and_snakemake_formatting_give_drmaa_native_spec(monkeypatch):
    """Evaluate the profile's site expressions and format its template as snakemake does."""
    from snakemake.iocontainers import ResourceList  # what Job.resources is
    from snakemake.utils import format as snakemake_format

    for key, value in SITE.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv(cluster.ENV_GPU_MODEL, "h100")
    defaults = _profile()["default-resources"]
    site = {k: eval(defaults[k]) for k in ("drmaa_site", "drmaa_gres")}  # as snakemake evaluates
    job = {"mem_mb": 3000, "runtime": 45, "cpus_per_task": 2, "gpu": 1}
    rendered = snakemake_format(_profile()["drmaa-args"], resources=ResourceList(fromdict={**job, **site}),
                                rule="train")
    assert " ".join(rendered.split()) == cluster.drmaa_native_spec(job, rule="train")
    assert "--gres=gpu:h100:1" in rendered and "--partition=debug" in rendered


@needs_drmaa_plugin
def test_profile_is_accepted_by_snakemake(tmp_path):
    (tmp_path / "Snakefile").write_text('rule a:\n    output: "a.txt"\n    shell: "touch {output}"\n')
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--profile", str(PROFILE), "--dry-run", "a.txt"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- through the real DRMAA plugin, onto the test cluster -------------------------------------

SNAKEFILE = textwrap.dedent(
    """
    rule all:
        input: "out/cpu.txt", "out/gpu.txt"

    rule cpu:
        output: "out/cpu.txt"
        resources: mem_mb=600, runtime=90, cpus_per_task=2
        shell: "echo $SLURM_JOB_ID > {output}"

    rule gpu:
        output: "out/gpu.txt"
        resources: gpu=1, mem_mb=300, runtime=3
        shell: "echo $SLURM_JOB_ID > {output}"
    """
)
RESOURCES = {"cpu": {"mem_mb": 600, "runtime": 90, "cpus_per_task": 2},
             "gpu": {"gpu": 1, "mem_mb": 300, "runtime": 3}}


@pytest.mark.slurm
@needs_drmaa_plugin
def test_drmaa_profile_submits_each_job_with_its_native_spec(slurm_cluster, tmp_path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    record = tmp_path / "native-specs.jsonl"
    env = {**SITE, "PYTHONPATH": f"{FAKE_DRMAA}:{REPO / 'src'}", "FAKE_DRMAA_RECORD": str(record)}
    proc = slurm_cluster.snakemake(tmp_path, profile=PROFILE, env=env)
    assert proc.returncode == 0, proc.stdout

    specs = {json.loads(line)["jobName"].split(".")[1]: json.loads(line)["nativeSpecification"]
             for line in record.read_text().splitlines()}
    assert sorted(specs) == ["cpu", "gpu"]
    for rule, spec in specs.items():
        assert " ".join(spec.split()) == cluster.drmaa_native_spec(RESOURCES[rule], rule=rule, environ=SITE)

    ids = {rule: (tmp_path / f"out/{rule}.txt").read_text().strip() for rule in specs}
    rows = slurm_cluster.wait_sacct(lambda r: len(r) == 2 and all(is_final(x) for x in r),
                                    job_ids=ids.values())
    jobs = {rule: rows_[0] for rule, rows_ in by_rule(rows).items()}
    cpu, gpu = jobs["cpu"], jobs["gpu"]
    assert cpu["JobID"] == ids["cpu"] and gpu["JobID"] == ids["gpu"]
    assert (cpu["State"], cpu["Partition"], cpu["Account"]) == ("COMPLETED", "debug", "timerepro")
    assert cluster.minutes(cpu["Timelimit"]) == 90
    assert cluster.mem_mb(cpu["ReqMem"]) == 600
    assert cluster.tres(cpu["AllocTRES"])["cpu"] == "2"
    assert "gres/gpu" not in cluster.tres(cpu["AllocTRES"])
    assert cluster.tres(gpu["AllocTRES"]).get("gres/gpu") == "1"
    assert list((tmp_path / "results/logs/drmaa").glob(f"*.{ids['gpu']}.log"))
