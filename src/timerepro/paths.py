"""Where things live: the project root, params/, results/ and the data cache.

Every location can be moved with an environment variable so that tests, scratch clones
and clusters with a shared scratch disk use the same code.
"""

from __future__ import annotations

import os
import tempfile
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


def tree_root(standin: str | None = None, data_root: str | os.PathLike | None = None) -> Path:
    """The data tree of real data (<data>/) or of the stand-ins of a scale (<data>/standin/<scale>/)."""
    root = Path(data_root or data_dir())
    return root / "standin" / standin if standin else root


def processed_path(name: str, standin: str | None = None, data_root: str | os.PathLike | None = None) -> Path:
    """Folder of a processed dataset (real or stand-in of a scale); manifest.json marks it complete."""
    return tree_root(standin, data_root) / "processed" / name


class NotWritableError(OSError):
    """A folder the command must write into cannot take new files."""


def check_writable(folder: Path) -> Path:
    """Refuse before any work when `folder` (created if missing) cannot take a new file: a read-only
    disk or mount, permissions. Returns the folder."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise NotWritableError(f"{folder} is not writable ({exc.strerror or exc}): nothing was run and nothing in it "
                               "was changed; fix its permissions or mount, or pass --results DIR") from None
    return folder
