"""One dataset from lock to data/processed/<name>/: fetch (or generate a stand-in), extract, preprocess.

Real data: <data>/raw/<name>/ -> <data>/extracted/<name>/<file>/ -> <data>/processed/<name>/.
Stand-ins: the same tree under <data>/standin/<scale>/, made from generated upstream-format files.
"""

from __future__ import annotations

import os
from pathlib import Path

from timerepro.data import archive, ctdg, package_copies, series, standins, time2vec, tpp
from timerepro.data.fetch import FetchResult, fetch_file, file_lock, hash_file
from timerepro.data.lock import Dataset, Lock, check_obtainable, load_lock
from timerepro.data.manifest import MANIFEST, PREPROCESS_VERSION, read_manifest
from timerepro.io import atomic_write_text
from timerepro.paths import data_dir, processed_path, tree_root  # noqa: F401 (processed_path, tree_root re-exported)

FAMILY_PREPARE = {"tpp": tpp.prepare, "series": series.prepare, "time2vec": time2vec.prepare}


PROBE_RETRIES = 1  # a second source stands by: an unreachable upstream costs one retry, not fetch_file's four


def fetch_dataset(name: str, *, lock: Lock | None = None, data_root=None, require_pinned: bool = False,
                  mirrors=None, progress: bool | None = None) -> list[FetchResult]:
    """Download and verify every file of a dataset into <data>/raw/<name>/ (a dataset with a package copy: its
    first usable source, `_first_source`)."""
    lock = lock or load_lock()
    ds = lock.get(name)
    check_obtainable(ds)
    mirrors = {**lock.mirrors, **(mirrors or {})}
    copy = package_copies.package_copy(ds)
    if copy is not None:
        return _first_source(ds, copy, data_root=data_root, require_pinned=require_pinned, mirrors=mirrors,
                             bundles=lock.bundles, progress=progress)
    files = lock.files(ds.name, require_pinned=require_pinned)
    return [fetch_file(f, data_root=data_root, mirrors=mirrors, bundles=lock.bundles, progress=progress) for f in files]


def _first_source(ds: Dataset, copy: package_copies.PackageCopy, *, data_root, require_pinned: bool, mirrors,
                  bundles, progress) -> list[FetchResult]:
    """The cached, verified upstream files; else, when the family puts the upstream first (UCI), the upstream
    download if it is reachable; else the package copy built from its pinned, checked member. A download whose
    bytes differ from the lock is refused (ChecksumError, nothing kept), never replaced by the copy; unpinned
    upstream files are skipped where pinned data are required (the pipeline), as `lock.files` would refuse them."""
    from timerepro.data.fetch import ChecksumError, DownloadError, cache_path, verify

    usable = not require_pinned or all(f.pinned for f in ds.files)
    fetch = dict(data_root=data_root, mirrors=mirrors, bundles=bundles, progress=progress)
    if usable and all(cache_path(f, data_root).exists() and not verify(f, *hash_file(cache_path(f, data_root)))
                      for f in ds.files):
        return [fetch_file(f, **fetch) for f in ds.files]
    unreachable = None
    if copy.upstream_first and usable and all(f.urls and not f.manual for f in ds.files):
        try:
            return [fetch_file(f, retries=PROBE_RETRIES, **fetch) for f in ds.files]
        except ChecksumError:
            raise
        except DownloadError as exc:
            unreachable = exc
    try:
        paths = copy.module.build_from_package(ds, package_copies.folder(ds, data_root or data_dir()))
    except Exception as exc:
        if unreachable is not None:
            exc.add_note(f"the upstream download failed first: {unreachable}")
        raise
    origin = copy.module.package_origin(ds)
    return [FetchResult(p, *hash_file(p), origin=origin) for p in (paths[f.name] for f in ds.files)]


def _materialize(ds: Dataset, raw: dict[str, Path], root: Path, verify_members: bool) -> dict[str, Path]:
    """Extract archives (once per source sha256) and return {file name: path of usable data}."""
    inputs = {}
    for f in ds.files:
        path = raw[f.name]
        if f.archive is None:
            inputs[f.name] = path
            continue
        dest = root / "extracted" / ds.name / f.name
        stamp = dest / ".source.sha256"
        sha = hash_file(path)[0]
        if not (stamp.exists() and stamp.read_text().strip() == sha):
            archive.extract(path, dest, f.archive)
            atomic_write_text(stamp, sha + "\n")
        if f.members and verify_members:
            time2vec.check_members(dest, f.members)
        if f.archive in ("gz", "bz2"):
            inputs[f.name] = dest / f.name.rsplit(".", 1)[0]
        else:
            inputs[f.name] = dest
    return inputs


def _up_to_date(out: Path, sources: list[dict], family: str) -> bool:
    if not (out / MANIFEST).exists():
        return False
    m = read_manifest(out)
    return (m.get("code_version", {}).get("preprocess") == PREPROCESS_VERSION[family]
            and sorted((s["name"], s["sha256"]) for s in m.get("sources", []))
            == sorted((s["name"], s["sha256"]) for s in sources))


def prepare(name: str, *, standin: str | None = None, lock: Lock | None = None, data_root=None,
            require_pinned: bool = False, mirrors=None, force: bool = False, seed: int = 0,
            progress: bool | None = None) -> Path:
    """Make <data>/processed/<name>/ (or the stand-in of scale `standin`) and return its folder.

    Real data are fetched and verified first (refused when unpinned and require_pinned);
    stand-ins are generated in the upstream format and labelled `standin: true` in the manifest.
    Skips the work when the manifest already matches the sources' sha256 and the code version.
    """
    lock = lock or load_lock()
    ds = lock.get(name)
    root = tree_root(standin, data_root)
    # one process at a time per dataset tree: parallel jobs (Snakemake, run-all --jobs, dvc) share the cache
    with file_lock(root / ".locks" / f"{ds.name}.lock"):
        out = processed_path(ds.name, standin, data_root)
        packaged = False
        kind = None  # the manifest's data kind when not `real` (a package copy that is not the upstream bytes)
        if standin:
            raw_dir = root / "raw" / ds.name
            raw = {k: Path(v) for k, v in standins.write_standin(ds, raw_dir, standin, seed=seed).items()} \
                if force or not _standin_complete(ds, raw_dir, seed) else {f.name: raw_dir / f.name for f in ds.files}
            label = standins.label_for(ds)
            sources = [{"name": k, "sha256": hash_file(p)[0], "generated": f"standins.py scale={standin} seed={seed}"}
                       for k, p in sorted(raw.items())]
        else:
            check_obtainable(ds)
            results = fetch_dataset(ds.name, lock=lock, data_root=data_root, require_pinned=require_pinned,
                                    mirrors=mirrors, progress=progress)
            raw = {f.name: r.path for f, r in zip(ds.files, results)}
            packaged = any(r.origin for r in results)  # already usable files (upstream bytes or DGB's layout)
            copy = package_copies.package_copy(ds) if packaged else None
            label = copy.label(ds) if copy else f"{ds.title} (real data)"
            kind = copy.kind.value if copy else None
            sources = [{"name": f.name, "sha256": r.sha256, "pinned": f.pinned,
                        "url": f.resolved_urls()[0] if f.urls else None, **({"origin": r.origin} if r.origin else {})}
                       for f, r in zip(ds.files, results)]
        if not force and _up_to_date(out, sources, ds.family):
            return out
        inputs = raw if not standin and packaged else _materialize(ds, raw, root, verify_members=not standin)
        common = dict(out_dir=out, sources=sources, standin=bool(standin), label=label)
        if ds.family == "ctdg":
            (src,) = inputs.values()
            source_dir = src if src.is_dir() else src.parent
            return ctdg.prepare(dataset=ds.name, upstream=ds.upstream_name, options=ds.options,
                                source_dir=source_dir, kind=kind, **common)
        return FAMILY_PREPARE[ds.family](dataset=ds.name, options=ds.options, inputs=inputs, **common)


def _standin_complete(ds: Dataset, raw_dir: Path, seed: int) -> bool:
    """Every file is there and the current generator made them with this seed."""
    marker = raw_dir / standins.MARKER
    return (marker.is_file() and marker.read_text() == standins.generator_stamp(seed)
            and all((raw_dir / f.name).exists() for f in ds.files))


def verify_dataset(name: str, *, lock: Lock | None = None, data_root=None) -> list[str]:
    """Re-hash cached raw files against the lock; returns problems (empty = all good)."""
    from timerepro.data.fetch import cache_path, verify

    lock = lock or load_lock()
    ds = lock.get(name)
    copy = package_copies.package_copy(ds)
    if copy:  # a package copy built from its pinned, checked member stands for the downloads
        if copy.module.cached_package_files(ds, package_copies.folder(ds, data_root or data_dir())) is not None:
            return []
    problems = []
    for f in ds.files:
        path = cache_path(f, data_root)
        if not path.exists():
            problems.append(f"{f.name}: not in the cache ({path})")
            continue
        sha, md5, size = hash_file(path)
        diffs = verify(f, sha, md5, size)
        if diffs:
            problems.append(f"{f.name}: " + "; ".join(diffs))
        elif not f.pinned:
            problems.append(f"{f.name}: present but unpinned (sha256 {sha}); run `timerepro data pin {name}`")
    return problems
