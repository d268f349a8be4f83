"""params/datasets.lock.yaml: load, validate, look up files, refuse unpinned files at paper scale.

The lock is the only place that holds dataset URLs, revisions, sizes and hashes.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from timerepro.io import atomic_write_text
from timerepro.paths import params_dir

FAMILIES = ("ctdg", "tpp", "series", "time2vec")
STATUSES = ("ok", "manual", "unobtainable")
ARCHIVES = (None, "zip", "tar.gz", "gz", "bz2")
_HEX = {"sha256": 64, "md5": 32}


class LockError(ValueError):
    """The lock file is malformed or a dataset/file is missing from it."""


class UnpinnedError(LockError):
    """A file has no sha256 where the scale requires pinned data."""


class UnobtainableError(LockError):
    """The dataset cannot be downloaded from anywhere we know of."""


@dataclass(frozen=True)
class FileEntry:
    """One downloadable file of a dataset, as the lock describes it."""

    dataset: str
    name: str
    urls: tuple[str, ...]
    revision: dict | None
    size: int | None
    sha256: str | None
    md5: str | None
    archive: str | None
    manual: bool = False
    members: dict = field(default_factory=dict)
    bundle: str | None = None
    member: str | None = None
    note: str | None = None

    @property
    def pinned(self) -> bool:
        return self.sha256 is not None

    def resolved_urls(self) -> list[str]:
        """URLs with {revision} replaced by the pinned commit, else by the revision's default."""
        rev = self.revision or {}
        value = rev.get("commit") or rev.get("default") or ""
        return [u.replace("{revision}", str(value)) for u in self.urls]


@dataclass(frozen=True)
class Dataset:
    """One dataset of the lock: family, status, papers using it, options for preprocessing, files."""

    name: str
    family: str
    title: str
    upstream_name: str
    status: str
    reason: str | None
    papers: dict
    options: dict
    files: tuple[FileEntry, ...]
    note: str | None = None

    def file(self, name: str) -> FileEntry:
        for f in self.files:
            if f.name == name:
                return f
        raise LockError(f"dataset {self.name!r} has no file {name!r}; files: {[f.name for f in self.files]}")

    def display_name(self, paper: str) -> str:
        """The row name this dataset has in `paper`'s tables."""
        try:
            return self.papers[paper]["name"]
        except KeyError:
            raise LockError(f"dataset {self.name!r} is not used by paper {paper!r}") from None

    @property
    def artifacts(self) -> list[str]:
        return [f"{p}:{a}" for p, v in self.papers.items() for a in v.get("artifacts", [])]


@dataclass(frozen=True)
class Lock:
    path: Path
    datasets: dict[str, Dataset]
    mirrors: dict[str, str]
    bundles: dict[str, dict]
    apis: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> Dataset:
        if name in self.datasets:
            return self.datasets[name]
        low = {k.lower(): k for k in self.datasets}
        if name.lower() in low:
            return self.datasets[low[name.lower()]]
        raise LockError(f"unknown dataset {name!r}; known: {', '.join(sorted(self.datasets))}")

    def by_family(self, family: str) -> list[Dataset]:
        return [d for d in self.datasets.values() if d.family == family]

    def files(self, name: str, require_pinned: bool = False) -> list[FileEntry]:
        """The files of dataset `name`; with require_pinned, refuse unpinned or unobtainable ones."""
        ds = self.get(name)
        if require_pinned:
            check_obtainable(ds)
            for f in ds.files:
                if not f.pinned:
                    others = sorted(n for n, d in self.datasets.items()
                                    if d.status == "ok" and d.files and not all(x.pinned for x in d.files))
                    raise UnpinnedError(
                        f"dataset {ds.name!r}: file {f.name!r} has no sha256 in {self.path}; paper scale needs "
                        f"pinned data: run `timerepro data pin --all` (or `timerepro data pin {ds.name}`) once "
                        f"with network and commit the lock. Unpinned datasets: {', '.join(others)}"
                    )
        return list(ds.files)


def default_lock_path() -> Path:
    return Path(os.environ.get("TIMEREPRO_LOCK") or params_dir() / "datasets.lock.yaml")


def check_obtainable(ds: Dataset) -> None:
    """Raise UnobtainableError naming the artifacts that depend on an unobtainable dataset."""
    if ds.status == "unobtainable":
        arts = ", ".join(ds.artifacts) or "none"
        raise UnobtainableError(
            f"dataset {ds.name!r} is unobtainable: {ds.reason}. Artifacts that need it cannot be reproduced "
            f"from real data: {arts}. If you hold a copy, put it in the cache and pin it (see docs/data.md)."
        )


def load_lock(path: str | os.PathLike | None = None) -> Lock:
    """Read and validate the lock (default params/datasets.lock.yaml, TIMEREPRO_LOCK overrides)."""
    path = Path(path) if path else default_lock_path()
    with open(path, encoding="utf-8") as fh:
        raw = yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml: the same data, ~7x faster
    return parse_lock(raw, path)


def parse_lock(raw: Any, path: Path) -> Lock:
    errors: list[str] = []
    if not isinstance(raw, dict) or raw.get("version") != 1 or not isinstance(raw.get("datasets"), dict):
        raise LockError(f"{path}: expected a mapping with version: 1 and datasets:")
    bundles = raw.get("bundles") or {}
    datasets: dict[str, Dataset] = {}
    for name, d in raw["datasets"].items():
        where = f"{path}: dataset {name!r}"
        if not isinstance(d, dict):
            errors.append(f"{where}: not a mapping")
            continue
        if d.get("family") not in FAMILIES:
            errors.append(f"{where}: family must be one of {FAMILIES}")
        if d.get("status", "ok") not in STATUSES:
            errors.append(f"{where}: status must be one of {STATUSES}")
        if d.get("status") in ("manual", "unobtainable") and not d.get("reason"):
            errors.append(f"{where}: status {d.get('status')} needs a reason")
        files = []
        for f in d.get("files") or []:
            fw = f"{where} file {f.get('name')!r}"
            for algo, n in _HEX.items():
                v = f.get(algo)
                if v is not None and not re.fullmatch(f"[0-9a-f]{{{n}}}", str(v)):
                    errors.append(f"{fw}: {algo} must be {n} lowercase hex digits or null")
            if f.get("archive") not in ARCHIVES:
                errors.append(f"{fw}: archive must be one of {ARCHIVES}")
            if not f.get("urls") and not f.get("manual"):
                errors.append(f"{fw}: no urls and not manual")
            if f.get("bundle") and f["bundle"] not in bundles:
                errors.append(f"{fw}: unknown bundle {f['bundle']!r}")
            size = f.get("size")
            if size is not None and (not isinstance(size, int) or size < 0):
                errors.append(f"{fw}: size must be a non-negative integer or null")
            files.append(FileEntry(
                dataset=name, name=str(f.get("name")), urls=tuple(f.get("urls") or ()), revision=f.get("revision"),
                size=size, sha256=f.get("sha256"), md5=f.get("md5"), archive=f.get("archive"),
                manual=bool(f.get("manual", False)), members=dict(f.get("members") or {}), bundle=f.get("bundle"),
                member=f.get("member"), note=f.get("note"),
            ))
        datasets[name] = Dataset(
            name=name, family=d.get("family"), title=d.get("title", name), upstream_name=d.get("upstream_name", name),
            status=d.get("status", "ok"), reason=d.get("reason"), papers=dict(d.get("papers") or {}),
            options=dict(d.get("options") or {}), files=tuple(files), note=d.get("note"),
        )
    if errors:
        raise LockError("invalid dataset lock:\n  " + "\n  ".join(errors))
    return Lock(path=path, datasets=datasets, mirrors=dict(raw.get("mirrors") or {}), bundles=dict(bundles),
                apis=dict(raw.get("apis") or {}))


def write_pins(path: str | os.PathLike, dataset: str, pins: dict[str, dict]) -> None:
    """Write {file name: {sha256, size, md5?, commit?}} into the lock atomically, keeping comments.

    Uses ruamel.yaml's round trip when installed (comments, order and flow style survive);
    otherwise falls back to PyYAML, which keeps order but drops comments.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        from ruamel.yaml import YAML
    except ImportError:  # pragma: no cover - ruamel comes with snakemake
        YAML = None
    if YAML is not None:
        ry = YAML()
        ry.preserve_quotes = True
        ry.width = 10**6
        doc = ry.load(text)
    else:  # pragma: no cover
        doc = yaml.safe_load(text)
    entry = doc["datasets"][dataset]
    for f in entry["files"]:
        pin = pins.get(f["name"])
        if not pin:
            continue
        for key in ("size", "sha256", "md5"):
            if pin.get(key) is not None:
                old = f.get(key)
                if key == "md5" and old and old != pin[key]:
                    raise LockError(f"{dataset}/{f['name']}: downloaded md5 {pin[key]} != published md5 {old}")
                f[key] = pin[key]
        if pin.get("commit") and f.get("revision") is not None:
            f["revision"]["commit"] = pin["commit"]
    parse_lock(yaml.safe_load(_dump(doc, YAML)), path)  # never write an invalid lock
    atomic_write_text(path, _dump(doc, YAML))


def _dump(doc: Any, YAML: Any) -> str:
    if YAML is None:  # pragma: no cover
        return yaml.safe_dump(doc, sort_keys=False, width=10**6)
    ry = YAML()
    ry.preserve_quotes = True
    ry.width = 10**6
    buf = io.StringIO()
    ry.dump(doc, buf)
    return buf.getvalue()
