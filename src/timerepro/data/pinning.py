"""Pinning datasets: download once, check what the host publishes, write sha256/size into the lock.

`pin_dataset` pins one dataset, `pin_all` every obtainable one (or a paper's) in one go, and
`unpinned_report` says, before a paper-scale run, which datasets it would refuse and the command
that fixes it. Published checksums checked: Zenodo's md5 (record API), HuggingFace's X-Linked-Etag
(the sha256 of an LFS file) or ETag (the git blob sha1 of a small file), and md5s the lock quotes
from other sources (`md5_source`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from timerepro.data.fetch import DownloadError, fetch_file, fetch_json, head_headers
from timerepro.data.lock import Dataset, LockError, load_lock, write_pins

PIN_ALL = "timerepro data pin --all"


def obtainable(ds: Dataset) -> bool:
    """A dataset `pin` can download by itself: status ok and every file has a URL (not manual)."""
    return ds.status == "ok" and bool(ds.files) and all(f.urls and not f.manual for f in ds.files)


def is_pinned(ds: Dataset) -> bool:
    return all(f.pinned for f in ds.files)


def _hf_published(headers: dict) -> dict[str, str]:
    """What HuggingFace publishes about a file in its HEAD answer: the LFS sha256 or the git blob sha1."""
    out = {}
    linked = (headers.get("x-linked-etag") or "").strip('"')
    etag = (headers.get("etag") or "").removeprefix("W/").strip('"')
    if re.fullmatch(r"[0-9a-f]{64}", linked):
        out["sha256"] = linked
    elif re.fullmatch(r"[0-9a-f]{40}", etag):
        out["git_blob_sha1"] = etag
    return out


def git_blob_sha1(path: Path) -> str:
    """git's object id of a file (what HuggingFace sends as the ETag of a file stored without LFS)."""
    h = hashlib.sha1(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def pin_dataset(name: str, *, lock_path=None, data_root=None, mirrors=None) -> dict[str, dict]:
    """Download every file of `name` (as pinned or not), check every checksum the host publishes,
    then write sha256/size/md5/commit into the lock. A mismatch raises LockError and writes nothing."""
    lock = load_lock(lock_path)
    ds = lock.get(name)
    mirrors = {**lock.mirrors, **(mirrors or {})}
    pins: dict[str, dict] = {}
    zenodo_cache: dict[str, dict] = {}
    for f in ds.files:
        rev = dict(f.revision or {})
        commit = rev.get("commit")
        published: dict[str, str] = {}
        if rev.get("host") == "huggingface":
            headers = head_headers(f.resolved_urls()[0], mirrors)
            if not commit and headers.get("x-repo-commit"):
                commit = rev["commit"] = headers["x-repo-commit"]
            published = _hf_published(headers)
        published_md5 = f.md5
        if rev.get("host") == "zenodo":
            record = str(rev["record"])
            if record not in zenodo_cache:
                meta = fetch_json(lock.apis["zenodo_record"].format(record=record), mirrors)
                zenodo_cache[record] = {x["key"]: x for x in meta.get("files", [])}
            info = zenodo_cache[record].get(f.name)
            if info and str(info.get("checksum", "")).startswith("md5:"):
                published_md5 = info["checksum"][4:]
        entry = dataclasses.replace(f, revision=rev or None, md5=published_md5)
        result = fetch_file(entry, data_root=data_root, mirrors=mirrors, bundles=lock.bundles)
        if "sha256" in published and published["sha256"] != result.sha256:
            raise LockError(f"{name}/{f.name}: downloaded sha256 {result.sha256} != the sha256 HuggingFace "
                            f"publishes (X-Linked-Etag) {published['sha256']}; nothing pinned")
        if "git_blob_sha1" in published and published["git_blob_sha1"] != git_blob_sha1(result.path):
            raise LockError(f"{name}/{f.name}: downloaded file's git blob id {git_blob_sha1(result.path)} != the "
                            f"ETag HuggingFace publishes {published['git_blob_sha1']}; nothing pinned")
        pins[f.name] = {"sha256": result.sha256, "size": result.size, "md5": result.md5 if published_md5 else None,
                        "commit": commit, "checked": sorted(published) + (["md5"] if published_md5 else [])}
    write_pins(lock.path, ds.name, pins)
    return pins


@dataclass
class PinOutcome:
    pinned: dict[str, dict] = field(default_factory=dict)  # dataset -> pins
    already: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # dataset -> why it cannot be pinned here
    failed: dict[str, str] = field(default_factory=dict)  # dataset -> error


def pin_all(*, paper: str | None = None, lock_path=None, data_root=None, mirrors=None, force: bool = False,
            progress=print) -> PinOutcome:
    """Pin every obtainable dataset of the lock (of `paper` only, when given) that is not pinned yet
    (`force`: re-pin those too). One failure does not stop the others; each is reported."""
    lock = load_lock(lock_path)
    out = PinOutcome()
    for name, ds in lock.datasets.items():
        if paper and paper not in ds.papers:
            continue
        if not obtainable(ds):
            out.skipped[name] = ds.reason or "a file has no direct URL (manual download)"
            continue
        if is_pinned(ds) and not force:
            out.already.append(name)
            continue
        try:
            out.pinned[name] = pin_dataset(name, lock_path=lock.path, data_root=data_root, mirrors=mirrors)
            progress(f"{name}: pinned {len(out.pinned[name])} files")
        except (DownloadError, LockError, OSError) as exc:  # OSError: urllib's errors of the metadata APIs
            out.failed[name] = str(exc)
            progress(f"{name}: FAILED: {exc}")
    return out


def unpinned_report(reg, scale: str, lock=None) -> str | None:
    """None when every real dataset the runs of `scale` read is pinned; otherwise a message naming
    the unpinned ones and the command that pins them (and the ones no command can fetch)."""
    from timerepro.data.reads import run_datasets

    lock = lock or load_lock()
    needed = sorted({name for run in reg.runs(scale) if "standin" in run.config and not run.config["standin"]
                     for name in run_datasets(run.config) if name in lock.datasets})
    # a dataset whose lock pins a package copy (member sha256) is read from it when its download is not pinned
    unpinned = [n for n in needed if obtainable(lock.datasets[n]) and not is_pinned(lock.datasets[n])
                and not lock.datasets[n].options.get("package_source")]
    manual = [n for n in needed if not obtainable(lock.datasets[n])]
    if not unpinned and not manual:
        return None
    lines = [f"scale {scale} reads real data that is not pinned in {lock.path}:"]
    if unpinned:
        lines.append(f"  unpinned ({len(unpinned)}): {', '.join(unpinned)}")
        lines.append(f"  pin them once with network: `{PIN_ALL}` (or `timerepro data pin NAME`), then commit the lock")
    if manual:
        lines.append(f"  not downloadable by the pipeline ({len(manual)}): {', '.join(manual)} "
                     "(see `timerepro data list` and docs/data.md)")
    return "\n".join(lines)
