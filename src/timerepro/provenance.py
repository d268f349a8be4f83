"""What made a run: code (commit and fingerprint), packages, machine, threads, device, timing and memory."""

from __future__ import annotations

import copy
import functools
import os
import platform
import socket
import subprocess
import sys
from importlib import metadata

from timerepro.paths import project_root

PACKAGES = ("timerepro", "torch", "numpy", "pandas", "scikit-learn", "snakemake", "dvc", "papermill")


def git_state(root=None) -> dict:
    """Commit of the checkout and whether tracked source differs from it (results/ ignored)."""
    root = root or project_root()
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!results"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return {"commit": commit, "dirty": bool(status)}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}


def package_versions() -> dict:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


@functools.cache
def process_state(root=None) -> dict:
    """What every run of this process shares (commit, packages, Python, machine), read once per process: the git
    calls are two subprocesses per run otherwise. A batch reads it before it forks (`runs.load_once`)."""
    return {"git": git_state(root), "packages": package_versions(), "python": sys.version.split()[0],
            "platform": platform.platform(), "host": socket.gethostname()}


def collect(*, device: str, seed: int, data: dict, wall_time_s: float, memory, code: dict | None = None,
            extra: dict | None = None) -> dict:
    """The provenance.json of a run; `memory` is the run's `timerepro.memory.PeakMemory`, `code` its
    fingerprint (`RunFingerprint.as_record()`)."""
    import torch

    record = {
        **copy.deepcopy(process_state()),  # a copy: the record is the run's own
        "torch_threads": torch.get_num_threads(),
        "device": device,
        "cuda_device_name": torch.cuda.get_device_name(0) if device.startswith("cuda") else None,
        "seed": seed,
        "data": data,
        "wall_time_s": round(wall_time_s, 3),
        "peak_memory_mb": round(memory.peak_mb(), 1),
        "peak_memory_method": memory.method,
        "rss_at_start_mb": round(memory.start_mb, 1) if memory.start_mb is not None else None,
        "peak_gpu_memory_mb": round(memory.peak_gpu_mb(), 1) if memory.peak_gpu_mb() is not None else None,
        "code": code,
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
    }
    if extra:
        record.update(extra)
    return record
