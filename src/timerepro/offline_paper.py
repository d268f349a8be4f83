"""The paper's full protocol on every dataset this machine can obtain without network, priced before it runs.

A paper-scale run qualifies when every downloaded dataset it reads has a verified local source: a pinned package
copy that is installed with its pinned bytes (today real UCI and Event-MNIST), or a cached download that matches
its pin. Its cost comes from `timerepro estimate`'s model (`timerepro.estimate`); `--run` then executes the
incomplete ones with the pipeline's own run machinery (records under results/runs/, resumed when killed).

    python -m timerepro.offline_paper [--paper P] [--artifact A]            # the runs and their estimate
    python -m timerepro.offline_paper --run [--jobs N] [--threads T] ...    # then run them (docs/reruns.md)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from timerepro.data import package_copies
from timerepro.data.lock import Dataset, Lock, load_lock
from timerepro.paths import data_dir


def local_source(ds: Dataset, data_root: Path | None = None) -> str | None:
    """How `ds` is obtained offline: 'package copy' (already built, or installed with its member's pinned bytes),
    'cached download' (every file cached, pinned and matching), or None."""
    from timerepro.data.fetch import cache_path, hash_file, verify

    copy = package_copies.package_copy(ds)
    if copy is not None and (package_copies.installed(ds) or copy.module.cached_package_files(
            ds, package_copies.folder(ds, data_root or data_dir())) is not None):
        return "package copy"
    files = [(f, cache_path(f, data_root)) for f in ds.files]
    if files and all(f.pinned and p.is_file() and not verify(f, *hash_file(p)) for f, p in files):
        return "cached download"
    return None


def offline_sources(lock: Lock | None = None, data_root: Path | None = None) -> dict[str, str]:
    """{dataset: how it is obtained} for every dataset of the lock obtainable offline."""
    lock = lock or load_lock()
    return {name: src for name, ds in lock.datasets.items() if (src := local_source(ds, data_root))}


def obtainable_runs(reg, scale: str = "paper", *, paper: str | None = None, artifact: str | None = None,
                    sources: dict[str, str] | None = None) -> list:
    """The runs of `scale` that read downloaded data, all of it obtainable offline (`sources`)."""
    from timerepro.data.reads import run_datasets

    sources = offline_sources() if sources is None else sources
    out = []
    for run in reg.runs(scale, paper=paper, artifact=artifact):
        names = run_datasets(run.config)
        if names and all(n in sources for n in names):
            out.append(run)
    return out


def plan(reg, runs: list, scale: str, references: list[Path] | None = None):
    """`timerepro estimate`'s plan of exactly these runs, per artifact that reads them, learning costs from the
    complete records under each results folder of `references` (default: the results folder)."""
    from timerepro import estimate
    from timerepro.paths import results_dir

    wanted = {(r.paper, r.run_id) for r in runs}
    refs = estimate.References([rec for d in (references or [results_dir()]) for rec in estimate.records_at_hand(Path(d))])
    cache: dict[tuple, estimate.RunEstimate] = {}
    arts = []
    for paper in sorted({r.paper for r in runs}, key=[r.paper for r in runs].index):
        for art in reg.implemented(paper):
            est = estimate.ArtifactEstimate(paper, art["id"])
            for run in reg.artifact_runs(paper, art["id"], scale):
                if (paper, run.run_id) in wanted:
                    key = (paper, run.run_id)
                    if key not in cache:
                        cache[key] = estimate.estimate_run(run, refs)
                    est.runs.append(cache[key])
                    est.declared_mem_mb = max(est.declared_mem_mb, int(run.resources.get("mem_mb", 0)))
            if est.runs:
                arts.append(est)
    return estimate.Plan(scale, arts)


def main(argv: list[str] | None = None) -> int:
    from timerepro import estimate, registry

    ap = argparse.ArgumentParser(prog="python -m timerepro.offline_paper", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", default="paper")
    ap.add_argument("--paper")
    ap.add_argument("--artifact")
    ap.add_argument("--run", action="store_true", help="execute the incomplete runs after the estimate")
    ap.add_argument("--jobs", type=int, default=1, help="runs in parallel, one process each")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--references", nargs="+", type=Path, help="results folders whose complete records price the "
                    "runs (default: the results folder)")
    args = ap.parse_args(argv)
    reg = registry.load()
    sources = offline_sources()
    runs = obtainable_runs(reg, args.scale, paper=args.paper, artifact=args.artifact, sources=sources)
    print("datasets obtainable offline: " + (", ".join(f"{k} ({v})" for k, v in sorted(sources.items())) or "none"))
    print(estimate.format_plan(plan(reg, runs, args.scale, args.references), args.scale))
    if not args.run:
        print(f"\n{len(runs)} runs; add --run to execute the incomplete ones", file=sys.stderr)
        return 0
    return _execute(runs, args)


def _execute(runs: list, args) -> int:
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing as mp

    from timerepro import runs as runs_mod
    from timerepro.fingerprint import Fingerprinter

    fingerprints = Fingerprinter()
    todo = [r for r in runs if not runs_mod.is_complete(r.config, fingerprints=fingerprints)]
    groups: dict[str, list[dict]] = {}
    for r in todo:
        groups.setdefault(runs_mod.group_key(r.config), []).append(r.config)
    print(f"executing {len(todo)} incomplete runs in {len(groups)} groups", file=sys.stderr)
    if args.jobs <= 1:
        for group in groups.values():
            runs_mod.execute_many(group, device=args.device, threads=args.threads, show_progress=False,
                                  fingerprints=fingerprints)
    else:
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=mp.get_context("spawn")) as pool:
            for fut in [pool.submit(runs_mod.execute_many, g, device=args.device, threads=args.threads or 1,
                                    show_progress=False) for g in groups.values()]:
                fut.result()
    return 0


if __name__ == "__main__":
    sys.exit(main())
