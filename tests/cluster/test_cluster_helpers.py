"""Reading SLURM accounting, and the profiles as snakemake parses them (no cluster needed)."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime

import pytest
import yaml

from timerepro import cluster

from .conftest import PROFILES

SACCT_OUT = (
    "12|timerepro_ab|COMPLETED|0:0|timerepro|debug|billing=2,cpu=2,gres/gpu=1,mem=700M,node=1"
    "|700M|2|00:07:00|2026-01-02T03:04:05|2026-01-02T03:04:09|rule_train_wildcards_linear_time\n"
    "13|timerepro_ab|CANCELLED by 0|0:15|root|debug|||1|1-00:00:00|2026-01-02T03:04:06|Unknown|rule_b\n"
)


def test_parse_sacct_rows():
    rows = cluster.parse_sacct(SACCT_OUT)
    assert [r["JobID"] for r in rows] == ["12", "13"]
    assert rows[0]["Comment"] == "rule_train_wildcards_linear_time"
    assert rows[1]["State"] == "CANCELLED by 0" and rows[1]["AllocTRES"] == ""
    with pytest.raises(ValueError):
        cluster.parse_sacct("1|2|3\n")


def test_tres_mem_minutes_and_times():
    assert cluster.tres("billing=2,cpu=2,gres/gpu=1,mem=700M,node=1") == {
        "billing": "2", "cpu": "2", "gres/gpu": "1", "mem": "700M", "node": "1"}
    assert cluster.tres("") == {}
    assert [cluster.mem_mb(x) for x in ("700M", "2G", "4000Mn", "1024Mc", "1500", "512K")] == [
        700, 2048, 4000, 1024, 1500, 0.5]
    with pytest.raises(ValueError):
        cluster.mem_mb("lots")
    assert [cluster.minutes(x) for x in ("00:07:00", "01:30:00", "1-00:00:00", "05:30", "2-12", "45")] == [
        7, 90, 1440, 5.5, 2 * 1440 + 12 * 60, 45]
    assert cluster.minutes("UNLIMITED") is None
    assert cluster.slurm_time("2026-01-02T03:04:05") == datetime(2026, 1, 2, 3, 4, 5)
    assert cluster.slurm_time("Unknown") is None


def test_site_settings_from_environment():
    env = {cluster.ENV_PARTITION: "gpu", cluster.ENV_ACCOUNT: "proj42", cluster.ENV_GPU_MODEL: "a100"}
    assert cluster.drmaa_site_args(env) == "--partition=gpu --account=proj42"
    assert cluster.drmaa_site_args({}) == ""
    assert cluster.drmaa_gres_name(env) == "gpu:a100"
    assert cluster.gpu_model(env) == "a100" and cluster.gpu_model({}) == ""


def test_shipped_profiles():
    slurm = yaml.safe_load((PROFILES / "slurm" / "config.yaml").read_text())
    assert slurm["executor"] == "slurm"
    assert slurm["retries"] >= 1  # resources grow with the attempt
    assert slurm["slurm-keep-successful-logs"] is True
    assert "slurm-status-command" not in slurm  # the plugin's default: sacct
    local = yaml.safe_load((PROFILES / "local" / "config.yaml").read_text())
    assert local["cores"] == "all" and local["retries"] == 0 and local["keep-going"] is False
    assert "executor" not in local


@pytest.mark.parametrize("site, expected", [
    ({}, "slurm_partition=, slurm_account=,"),
    ({cluster.ENV_PARTITION: "long", cluster.ENV_ACCOUNT: "proj42"},
     "slurm_partition=long, slurm_account=proj42,"),
])
def test_slurm_profile_takes_partition_and_account_from_environment(tmp_path, site, expected):
    """Dry run through the slurm profile: the default-resources expressions see the env."""
    (tmp_path / "Snakefile").write_text('rule a:\n    output: "a.txt"\n    shell: "touch {output}"\n')
    env = {k: v for k, v in __import__("os").environ.items()
           if k not in (cluster.ENV_PARTITION, cluster.ENV_ACCOUNT)}
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--profile", str(PROFILES / "slurm"), "--dry-run", "a.txt"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env={**env, **site})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert expected in proc.stdout + proc.stderr


def test_normalise_slurm_job_states_reads_cancelled_by_uid_as_cancelled(monkeypatch):
    import asyncio
    import logging

    plugin = pytest.importorskip("snakemake_executor_plugin_slurm")
    original = plugin.query_job_status
    monkeypatch.setattr(plugin, "query_job_status", original)
    command = "printf '11|CANCELLED by 0\\n12|COMPLETED\\n13|RUNNING\\n14|TIMEOUT\\n'"
    raw, _ = asyncio.run(original(command, logging.getLogger("test")))
    assert raw["11"] == "CANCELLED by 0"  # what sacct prints and the plugin does not match
    assert cluster.normalise_slurm_job_states() is True
    assert cluster.normalise_slurm_job_states() is True  # idempotent: wrapped once
    assert plugin.query_job_status.__wrapped__ is original
    fixed, _ = asyncio.run(plugin.query_job_status(command, logging.getLogger("test")))
    assert fixed == {"11": "CANCELLED", "12": "COMPLETED", "13": "RUNNING", "14": "TIMEOUT"}
