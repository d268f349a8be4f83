"""workflow/scripts/slurm-cluster itself: help, idempotent `up`, status, port conflicts."""

from __future__ import annotations

import subprocess

import pytest

from timerepro import cluster

from .conftest import SLURM_CLUSTER


def test_help_describes_every_command():
    proc = subprocess.run([str(SLURM_CLUSTER), "--help"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0
    for word in ("up", "down", "status", "STATE_DIR", "SLURM_CONF", "install-slurm.sh"):
        assert word in proc.stdout
    bad = subprocess.run([str(SLURM_CLUSTER), "frobnicate", "/tmp/x"], capture_output=True, text=True,
                         timeout=30)
    assert bad.returncode == 2 and "unknown command" in bad.stderr


@pytest.mark.slurm
def test_up_again_is_a_no_op_and_status_shows_the_gpu_node(slurm_cluster):
    again = slurm_cluster.run([SLURM_CLUSTER, "up", slurm_cluster.state_dir], timeout=60)
    assert "already up" in again.stderr
    assert f"export SLURM_CONF={slurm_cluster.env['SLURM_CONF']}" in again.stdout.splitlines()
    status = slurm_cluster.run([SLURM_CLUSTER, "status", slurm_cluster.state_dir], timeout=60)
    for daemon in ("slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged"):
        assert any(line.startswith(daemon) and "running" in line and "not running" not in line
                   for line in status.stdout.splitlines()), status.stdout
    assert "gpu:1" in status.stdout
    # plain sacct works: accounting goes through slurmdbd as on a production cluster
    assert cluster.sacct_jobs(env=slurm_cluster.env) is not None


@pytest.mark.slurm
def test_second_cluster_is_refused_while_one_runs(slurm_cluster, tmp_path):
    other = tmp_path / "other"
    proc = subprocess.run([str(SLURM_CLUSTER), "up", str(other)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0
    assert "in use" in proc.stderr
    status = subprocess.run([str(SLURM_CLUSTER), "status", str(other)], capture_output=True,
                            text=True, timeout=60)
    assert status.returncode == 3 and "running (pid" not in status.stdout
    # and the first one is unharmed
    slurm_cluster.run([SLURM_CLUSTER, "status", slurm_cluster.state_dir], timeout=60)
