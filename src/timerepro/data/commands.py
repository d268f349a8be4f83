"""`timerepro data ...`: list, fetch, pin, prepare, verify datasets (also `python -m timerepro.data.commands`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from timerepro.data.fetch import DownloadError, cache_path
from timerepro.data.lock import LockError, load_lock
from timerepro.data.pinning import pin_all, pin_dataset  # noqa: F401 (pin_dataset re-exported)
from timerepro.names import STANDIN_SCALES as SCALES


def add_subcommands(subparsers) -> argparse.ArgumentParser:
    """Add the `data` command and its subcommands to an argparse subparsers object."""
    data = subparsers.add_parser("data", help="datasets: list, fetch, pin, prepare, verify",
                                 description="Download, verify and preprocess the datasets of the five papers. "
                                             "URLs and hashes live only in params/datasets.lock.yaml.")
    data.add_argument("--data-dir", default=None, help="data cache (default: TIMEREPRO_DATA or <project>/data)")
    data.add_argument("--lock", default=None, help="lock file (default: params/datasets.lock.yaml)")
    sub = data.add_subparsers(dest="data_command", required=True)

    p = sub.add_parser("list", help="datasets, families, pinned or not, cached or not",
                       description="One line per dataset: family, status, pinned files, cached files, processed.")
    p.add_argument("--family", choices=["ctdg", "tpp", "series", "time2vec"], help="only this family")
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser("fetch", help="download and verify a dataset's files into the cache",
                       description="Download every file of NAME (or of all obtainable datasets with --all), "
                                   "verify sha256/md5 and keep them under <data>/raw/NAME/.")
    p.add_argument("name", nargs="?", help="dataset name from the lock")
    p.add_argument("--all", action="store_true", help="every dataset that has direct URLs")
    p.add_argument("--require-pinned", action="store_true", help="refuse files without sha256 (paper scale)")
    p.set_defaults(func=_cmd_fetch)

    p = sub.add_parser("pin", help="download once and write sha256/size/md5 (and HF commit) into the lock",
                       description="Trust on first use: download NAME (or every obtainable dataset not pinned yet "
                                   "with --all, or those of one paper with --paper), check every checksum the host "
                                   "publishes (Zenodo md5, HuggingFace sha256/ETag, md5s quoted in the lock), and "
                                   "record sha256, size and revision in the lock atomically (comments kept). "
                                   "Exit 1 when any dataset failed; the others are pinned all the same.")
    p.add_argument("name", nargs="?", help="dataset name from the lock")
    p.add_argument("--all", action="store_true", help="every obtainable dataset that is not pinned yet")
    p.add_argument("--paper", help="with --all (implied): only the datasets of this paper")
    p.add_argument("--force", action="store_true", help="with --all: re-pin datasets that are pinned already")
    p.set_defaults(func=_cmd_pin)

    p = sub.add_parser("prepare", help="fetch + extract + preprocess into <data>/processed/NAME/ (or a stand-in)",
                       description="Make the processed dataset with its manifest.json. With --standin, generate a "
                                   "synthetic stand-in in the upstream format instead of downloading.")
    p.add_argument("name", help="dataset name from the lock")
    p.add_argument("--standin", choices=SCALES, help="synthetic stand-in of this scale (no network)")
    p.add_argument("--require-pinned", action="store_true", help="refuse unpinned files (paper scale)")
    p.add_argument("--force", action="store_true", help="redo even if the manifest is up to date")
    p.add_argument("--seed", type=int, default=0, help="stand-in seed")
    p.set_defaults(func=_cmd_prepare)

    p = sub.add_parser("verify", help="re-hash cached files against the lock",
                       description="Exit 1 when a cached file is missing, unpinned or differs from the lock.")
    p.add_argument("name", nargs="?", help="dataset name (default: every cached dataset)")
    p.set_defaults(func=_cmd_verify)
    return data


def _lock(args):
    return load_lock(args.lock)


def _cmd_list(args) -> int:
    from timerepro.data import prepare as prep  # pandas and the preprocessors: only when needed

    lock = _lock(args)
    print(f"{'dataset':17s} {'family':9s} {'status':13s} {'pinned':7s} {'cached':7s} processed")
    for name, ds in lock.datasets.items():
        if args.family and ds.family != args.family:
            continue
        n = len(ds.files)
        pinned = sum(f.pinned for f in ds.files)
        cached = sum(cache_path(f, args.data_dir).exists() for f in ds.files)
        done = [s or "real" for s in (None, *SCALES)
                if (prep.processed_path(name, s, args.data_dir) / "manifest.json").exists()]
        print(f"{name:17s} {ds.family:9s} {ds.status:13s} {pinned}/{n:<5d} {cached}/{n:<5d} {','.join(done) or '-'}")
    return 0


def _cmd_fetch(args) -> int:
    from timerepro.data import prepare as prep  # pandas and the preprocessors: only when needed

    lock = _lock(args)
    if args.all:
        names = [n for n, d in lock.datasets.items() if d.status == "ok"]
    elif args.name:
        names = [args.name]
    else:
        raise SystemExit("give a dataset NAME or --all")
    failed = 0
    for name in names:
        try:
            for r in prep.fetch_dataset(name, lock=lock, data_root=args.data_dir, require_pinned=args.require_pinned):
                print(f"{name}: {r.path} sha256={r.sha256}")
        except (DownloadError, LockError) as exc:
            failed += 1
            print(f"{name}: {exc}", file=sys.stderr)
    return 1 if failed else 0


def _cmd_pin(args) -> int:
    if args.all or args.paper:
        if args.name:
            raise SystemExit("give a dataset NAME or --all/--paper, not both")
        out = pin_all(paper=args.paper, lock_path=args.lock, data_root=args.data_dir, force=args.force)
        for name, why in out.skipped.items():
            print(f"{name}: not downloadable by the pipeline: {why}")
        print(f"pinned {len(out.pinned)} datasets, {len(out.already)} were pinned already, "
              f"{len(out.skipped)} cannot be downloaded here, {len(out.failed)} failed"
              + (f": {', '.join(out.failed)}" if out.failed else ""), file=sys.stderr)
        return 1 if out.failed else 0
    if not args.name:
        raise SystemExit("give a dataset NAME, or --all (every obtainable dataset), or --paper P")
    pins = pin_dataset(args.name, lock_path=args.lock, data_root=args.data_dir)
    for name, p in pins.items():
        checked = f" checked={'+'.join(p['checked'])}" if p.get("checked") else ""
        print(f"{args.name}/{name}: sha256={p['sha256']} size={p['size']}"
              + (f" commit={p['commit']}" if p.get("commit") else "") + checked)
    return 0


def _cmd_prepare(args) -> int:
    from timerepro.data import prepare as prep  # pandas and the preprocessors: only when needed

    out = prep.prepare(args.name, standin=args.standin, lock=_lock(args), data_root=args.data_dir,
                       require_pinned=args.require_pinned, force=args.force, seed=args.seed)
    print(out / "manifest.json")
    return 0


def _cmd_verify(args) -> int:
    from timerepro.data import prepare as prep  # pandas and the preprocessors: only when needed

    lock = _lock(args)
    names = [args.name] if args.name else [n for n, d in lock.datasets.items()
                                           if any(cache_path(f, args.data_dir).exists() for f in d.files)]
    bad = 0
    for name in names:
        problems = prep.verify_dataset(name, lock=lock, data_root=args.data_dir)
        for p in problems:
            print(f"{name}: {p}")
        if not problems:
            print(f"{name}: ok")
        bad += bool(problems)
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m timerepro.data.commands")
    sub = parser.add_subparsers(dest="command", required=True)
    add_subcommands(sub)
    args = parser.parse_args(argv)
    if args.data_dir:
        os.environ["TIMEREPRO_DATA"] = str(Path(args.data_dir).resolve())
    try:
        return int(args.func(args) or 0)
    except (DownloadError, LockError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
