"""Where things live: the project root, params/, results/ and the data cache.

Every location can be moved with an environment variable so that tests, scratch clones
and clusters with a shared scratch disk use the same code.
"""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    """The checkout that holds params/ (TIMEREPRO_ROOT overrides; else found from this file)."""
    env = os.environ.get("TIMEREPRO_ROOT")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "params").is_dir() and (parent / "pyproject.toml").is_file():
            return parent
    return Path.cwd().resolve()


def params_dir() -> Path:
    return project_root() / "params"


def results_dir() -> Path:
    """Run records, aggregates, tables, figures and the report (TIMEREPRO_RESULTS overrides)."""
    env = os.environ.get("TIMEREPRO_RESULTS")
    return Path(env).resolve() if env else project_root() / "results"


def data_dir() -> Path:
    """Download cache and processed datasets (TIMEREPRO_DATA overrides)."""
    env = os.environ.get("TIMEREPRO_DATA")
    return Path(env).resolve() if env else project_root() / "data"
