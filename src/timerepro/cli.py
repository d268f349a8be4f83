"""timerepro: every command a user types. `timerepro <command> --help` explains each one.

The usual path is `snakemake --profile local` (or `--profile slurm`, or `dvc repro`), which calls
these commands: run -> aggregate -> notebook (render) -> claims -> report.

Exit status: 0 done; 1 a failure (with its traceback: a bug or a broken environment); 2 a problem
with the input: an invalid params/ file (the message names the file and the key), an unknown name
on the command line, a bad dataset lock, a results folder that cannot be written.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

from timerepro import rehearse, resources
from timerepro.registry import PAPERS
from timerepro.schema import ConfigError, NotFoundError

EPILOG = """examples:
  timerepro papers                              what is reproduced, paper by paper
  timerepro artifacts linear_time               every table and figure with its status
  timerepro runs --scale smoke --paper linear_time
  timerepro run linear_time <run_id>            one training run -> results/runs/linear_time/<run_id>/
  timerepro aggregate linear_time               run records -> results/aggregated/linear_time.csv
  timerepro notebook linear_time                papermill notebook -> tables, figures
  timerepro claims && timerepro report          verdicts and results/report/index.html
  timerepro status --scale smoke                which records are missing or made by other code
  timerepro estimate --scale paper              runs, CPU/GPU hours and memory a scale will cost
  timerepro dvc --check                         is dvc.yaml in step with params/?
  timerepro data pin --all                      pin every obtainable dataset (network, once)
"""


def _registry(trust_checked: bool = True):
    from timerepro import registry

    return registry.load(trust_checked=trust_checked)


def _scale(args, reg) -> str:
    return args.scale or reg.default_scale()


def cmd_validate(args) -> int:
    from timerepro.data.pinning import unpinned_report

    reg = _registry(trust_checked=False)  # asked for: every check, whatever a parent process ran
    problems = reg.report_code_problems()
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    n = {s: len(reg.runs(s)) for s in reg.scale_names()}
    print(f"params/ is valid: {len(reg.papers)} papers, "
          f"{sum(len(reg.artifacts(p)) for p in reg.papers)} artifacts; runs per scale: {n}")
    for scale in reg.scale_names():
        for line in reg.left_out(scale):
            print(f"left out at {scale} scale (unobtainable data): {line}")
    for scale in [args.scale] if args.scale else []:
        problem = unpinned_report(reg, scale)
        if problem:
            print(problem, file=sys.stderr)
            return 1
        print(f"every dataset scale {scale} downloads is pinned")
    return 0


def cmd_papers(args) -> int:
    reg = _registry()
    for paper, doc in reg.papers.items():
        arts = doc["artifacts"]
        counts = {s: sum(a["status"] == s for a in arts) for s in ("implemented", "planned", "diagram")}
        print(f"{paper:18s} {len(arts):3d} artifacts ({counts['implemented']} implemented, {counts['planned']} planned, "
              f"{counts['diagram']} diagrams)  {doc['title']}")
    return 0


def cmd_artifacts(args) -> int:
    reg = _registry()
    for paper in [args.paper] if args.paper else list(reg.papers):
        for art in reg.artifacts(paper):
            n = len(reg.artifact_runs(paper, art["id"], _scale(args, reg))) if art["status"] == "implemented" else 0
            print(f"{paper:18s} {art['id']:8s} {art['status']:12s} {n:5d} runs  {art['title'][:90]}")
    return 0


def _check_artifact(reg, args) -> None:
    if getattr(args, "artifact", None):
        if not args.paper:
            raise NotFoundError("--artifact needs --paper (artifact ids repeat across papers)")
        reg.artifact(args.paper, args.artifact)


def cmd_runs(args) -> int:
    from timerepro.fingerprint import Fingerprinter
    from timerepro.records import is_complete

    reg = _registry()
    _check_artifact(reg, args)
    runs = reg.runs(_scale(args, reg), paper=args.paper, artifact=args.artifact)
    fingerprints = Fingerprinter(models=reg.models)
    if args.format == "ids":
        for r in runs:
            print(f"{r.paper}/{r.run_id}")
    elif args.format == "json":
        print(json.dumps([{"paper": r.paper, "run_id": r.run_id, "config": r.config, "resources": r.resources} for r in runs], indent=1))
    else:
        done = 0
        for r in runs:
            ok = is_complete(r.config, fingerprints=fingerprints)
            done += ok
            keys = {k: r.config[k] for k in ("encoder", "d_T", "layers", "attention", "seed") if k in r.config}
            print(f"{'done' if ok else '    '} {r.paper}/{r.run_id} {r.experiment} {keys}")
        print(f"{len(runs)} runs at scale {_scale(args, reg)}, {done} complete", file=sys.stderr)
    return 0


def cmd_run(args) -> int:
    from timerepro import runs

    reg = _registry()
    run = reg.find_run(args.paper, args.run_id, _scale(args, reg))
    path = runs.execute(run.config, device=args.device, threads=args.threads, show_progress=not args.quiet)
    print(path / "metrics.json")
    return 0


def cmd_run_job(args) -> int:
    """Execute the runs of one scheduler job, or of a batch of jobs one after another, each in a fork of this process
    (timerepro.batching), then write the marker under results/jobs/; `--timing` records where its time went."""
    timing = {"process_start": _process_start(), "main_start": time.time()}
    from timerepro import batching, records, runs
    from timerepro.fingerprint import Fingerprinter
    from timerepro.paths import results_dir

    reg = _registry()
    scale = _scale(args, reg)
    known = {j.job_id: j for j in reg.jobs(scale, paper=args.paper)}
    jobs = [known.get(jid) or reg.find_job(args.paper, jid, scale) for jid in args.job_id]  # find_job: the error
    checked = "; params/ references checked by the parent process" if reg.checked_by_parent else ""
    print(f"jobs {' '.join(args.job_id)}: {sum(len(j.runs) for j in jobs)} runs{checked}", file=sys.stderr, flush=True)
    fingerprints = Fingerprinter(models=reg.models)
    tasks = {r.config["task"] for j in jobs for r in j.runs}
    if len(jobs) > 1:
        runs.load_once(tasks)  # once, before the forks
    for task in tasks:  # imported before `ready` (--timing)
        runs.get_task(task)
    timing.update(ready=time.time(), jobs=[])
    done, made_by = [], {}

    def execute(job) -> None:
        runs.execute_many([r.config for r in job.runs], device=args.device, threads=args.threads,
                          show_progress=not args.quiet, fingerprints=fingerprints)

    def finished(job, start: float) -> None:
        paths = [runs.run_dir(r.config) for r in job.runs]
        done.extend(str(p.relative_to(results_dir())) for p in paths)
        made_by.update({r.run_id: (records.recorded_fingerprint(p) or {}).get("fingerprint")
                        for r, p in zip(job.runs, paths)})
        timing["jobs"].append({"job_id": job.job_id, "runs": [r.run_id for r in job.runs], "start": start,
                               "end": time.time()})

    batching.run_each(jobs, execute, finished)  # several jobs: each in a fork; a stop signal goes on to it
    codes = {fingerprints.job([r.config for r in j.runs]) for j in jobs}
    marker = Path(args.marker) if args.marker else records.job_marker(
        results_dir(), args.paper, batching.batch_id(args.job_id), "-".join(sorted(codes)))
    records.write_job_marker(marker, batching.batch_id(args.job_id), done, made_by)
    if args.timing:
        _write_timing(Path(args.timing), timing)
    print(marker)
    return 0


def _process_start() -> float | None:
    """When this process started (seconds since the epoch), or None where psutil cannot say."""
    try:
        import psutil

        return psutil.Process().create_time()
    except Exception:  # noqa: BLE001 (timing is a measurement, never a reason to fail a job)
        return None


def _write_timing(path: Path, timing: dict) -> None:
    """The job process's clock (start, entry to main, first run, each job's runs, end) and CPU seconds (its own,
    and its forks' for the jobs of a batch)."""
    import resource

    from timerepro.io import atomic_write_json

    own, forks = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    atomic_write_json(path, {**timing, "end": time.time(), "cpu_s": round(own.ru_utime + own.ru_stime, 2),
                             "cpu_children_s": round(forks.ru_utime + forks.ru_stime, 2)})


def cmd_run_all(args) -> int:
    """Run every incomplete run of a scale in this process (the DVC front end uses this)."""
    from tqdm.auto import tqdm

    from timerepro import runs

    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing as mp

    from timerepro.fingerprint import Fingerprinter

    reg = _registry()
    _check_artifact(reg, args)
    fingerprints = Fingerprinter(models=reg.models)
    todo = [r for r in reg.runs(_scale(args, reg), paper=args.paper, artifact=args.artifact)
            if not runs.is_complete(r.config, fingerprints=fingerprints)]
    groups: dict[str, list[dict]] = {}  # the seeds of one configuration stay together (stacked training)
    for r in todo:
        groups.setdefault(runs.group_key(r.config), []).append(r.config)
    bar = tqdm(total=len(todo), desc=f"runs ({_scale(args, reg)})", file=sys.stderr, disable=args.quiet)
    if args.jobs <= 1:
        for group in groups.values():
            runs.execute_many(group, device=args.device, threads=args.threads, show_progress=False,
                              fingerprints=fingerprints)
            bar.update(len(group))
    else:
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=mp.get_context("spawn")) as pool:
            futures = [(len(g), pool.submit(runs.execute_many, g, device=args.device, threads=args.threads or 1,
                                            show_progress=False)) for g in groups.values()]
            for n, fut in futures:
                fut.result()
                bar.update(n)
    bar.close()
    print(f"{len(todo)} runs executed", file=sys.stderr)
    return 0


def cmd_aggregate(args) -> int:
    from timerepro import exports
    from timerepro.report import aggregate

    reg = _registry()
    for paper in _papers(args, reg):
        path = aggregate.write(reg, paper, _scale(args, reg))
        exports.write(reg, paper)  # the same numbers as DVC metrics and plots
        print(path)
    return 0


def cmd_render(args) -> int:
    from timerepro.report.render import render_paper

    reg = _registry()
    for paper in _papers(args, reg):
        manifest = render_paper(reg, paper, _scale(args, reg))
        n_fig = sum(len(a["figures"]) for a in manifest["artifacts"].values())
        n_tab = sum(len(a["tables"]) for a in manifest["artifacts"].values())
        print(f"{paper}: {n_tab} table files, {n_fig} figure files")
    return 0


def cmd_notebook(args) -> int:
    """Execute workflow/notebooks/<paper>.ipynb with papermill into results/notebooks/."""
    from timerepro.paths import project_root, results_dir

    reg = _registry()
    for paper in _papers(args, reg):
        out = results_dir() / "notebooks" / f"{paper}.ipynb"
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.tmp.ipynb")
        cmd = [sys.executable, "-m", "papermill", str(project_root() / "workflow" / "notebooks" / f"{paper}.ipynb"), str(tmp),
               "-p", "paper", paper, "-p", "scale", _scale(args, reg), "-p", "results", str(results_dir()),
               "-k", args.kernel, "--cwd", str(project_root())]
        if args.quiet:
            cmd.append("--no-progress-bar")
        subprocess.run(cmd, check=True)
        tmp.replace(out)
        print(out)
    return 0


def cmd_claims(args) -> int:
    from timerepro.report import claims

    reg = _registry()
    path = claims.write(reg)
    verdicts = json.loads(path.read_text())
    for c in verdicts:
        if c["verdict"] in (claims.HOLDS, claims.FAILS) or args.all:
            print(f"{c['paper']:18s} {c['id']:4s} {c['verdict']:24s} [{c['data']}] {c['detail'][:120]}")
    for paper, t in claims.tally(verdicts).items():  # per paper: verdict counts, each with the data behind it
        print(f"{paper:18s} {claims.tally_line(t)}")
    print(f"{path}: {sum(c['verdict'] == claims.HOLDS for c in verdicts)} hold, "
          f"{sum(c['verdict'] == claims.FAILS for c in verdicts)} fail, "
          f"{sum(c['verdict'] == claims.PENDING for c in verdicts)} cannot be evaluated yet, "
          f"{sum(c['verdict'] == claims.NEVER for c in verdicts)} never here")
    return 0


def cmd_report(args) -> int:
    from timerepro.report import html

    reg = _registry()
    print(html.build(reg, _scale(args, reg)))
    return 0


def cmd_status(args) -> int:
    """Missing, partial, stale (made by other code or data) and corrupt records of a scale."""
    from timerepro import records
    from timerepro.freshness import run_states

    reg = _registry()
    _check_artifact(reg, args)
    scale = _scale(args, reg)
    states = run_states(reg, scale, paper=args.paper, artifact=args.artifact)
    shown = {records.STALE, records.CORRUPT} | ({records.MISSING, records.PARTIAL} if args.all else set())
    for s in states:
        if s.state in shown:
            what = {records.STALE: "changed: ", records.CORRUPT: ""}.get(s.state, "")
            print(f"{s.state:8s} {s.paper}/{s.run_id} {s.experiment:28s} {what}{', '.join(s.changes)}".rstrip())
    counts = {k: sum(s.state == k for s in states) for k in
              (records.COMPLETE, records.STALE, records.PARTIAL, records.MISSING, records.CORRUPT)}
    print(f"{len(states)} runs at scale {scale}: {counts['complete']} complete, {counts['stale']} stale (made by other "
          f"code or data: rerun them with snakemake, `dvc repro` or `timerepro run-all`), {counts['partial']} "
          f"interrupted, {counts['missing']} not run, {counts['corrupt']} unreadable", file=sys.stderr)
    return 0


def cmd_estimate(args) -> int:
    """What running a scale costs, per artifact, from the run records measured so far."""
    from timerepro import estimate

    reg = _registry()
    _check_artifact(reg, args)
    scale = _scale(args, reg)
    plan = estimate.plan(reg, scale, paper=args.paper, artifact=args.artifact)
    print(estimate.format_plan(plan, scale))
    return 0


def cmd_dvc(args) -> int:
    from timerepro import dvcgen

    reg = _registry()
    text = dvcgen.render(reg)
    path = Path(args.output)
    if args.check:
        if not path.is_file() or path.read_text() != text:
            print(f"{path} is stale: regenerate it with `timerepro dvc`", file=sys.stderr)
            return 1
        print(f"{path} is up to date")
        return 0
    from timerepro.io import atomic_write_text

    atomic_write_text(path, text)
    print(path)
    return 0


def _papers(args, reg) -> list[str]:
    if getattr(args, "all", False) or not args.paper:
        return list(PAPERS)
    return [args.paper]


def build_parser() -> argparse.ArgumentParser:
    from timerepro.data import commands as data_commands

    parser = argparse.ArgumentParser(prog="timerepro", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    parser.add_argument("--results", help="results folder (default: ./results, or $TIMEREPRO_RESULTS)")
    parser.add_argument("--data-dir", dest="global_data_dir", metavar="DATA_DIR",
                        help="data cache (default: ./data, or $TIMEREPRO_DATA)")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name, func, help_text, paper=None, scale=True, writes=False):
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(writes_results=writes)
        if paper == "optional":
            p.add_argument("paper", nargs="?", choices=PAPERS, metavar="paper", help="paper key (default: all papers)")
        elif paper == "required":
            p.add_argument("paper", choices=PAPERS, metavar="paper",
                           help="paper key: linear_time, dyg_mamba, time2vec, swinit, hawkes_attention")
        if scale:
            p.add_argument("--scale", help="smoke, offline or paper (default: params/run.yaml)")
        p.set_defaults(func=func)
        return p

    p = add("validate", cmd_validate, "validate every params/ file; errors name the file and the key", scale=False)
    p.add_argument("--scale", help="also check that every dataset this scale downloads is pinned (e.g. paper)")
    add("papers", cmd_papers, "list the five papers and how many artifacts each has implemented", scale=False)
    add("artifacts", cmd_artifacts, "list every table and figure with its status and number of runs", paper="optional")
    p = add("runs", cmd_runs, "list the runs a scale needs (resolved configs with stable ids)")
    _filters(p)
    p.add_argument("--format", choices=["table", "ids", "json"], default="table")
    for name, func, text in (("run", cmd_run, "execute one run and write its run record"),
                             ("run-job", cmd_run_job, "execute the runs of one scheduler job (what Snakemake calls)"),
                             ("run-all", cmd_run_all, "execute every incomplete run of a scale, one after another")):
        p = add(name, func, text, paper="required" if name != "run-all" else None, writes=True)
        if name == "run":
            p.add_argument("run_id", help="12-hex-digit id from `timerepro runs`")
        elif name == "run-job":
            p.add_argument("job_id", nargs="+", help="12-hex-digit id of a job; several: a batch, run one after another "
                                                     "in this process (the Snakefile's train rule)")
            p.add_argument("--marker", help="where to write the marker (default: results/jobs/<paper>/<job or batch>."
                                            "<fingerprint>.json)")
            p.add_argument("--timing", help="also write the process's timing (start-up, each job, CPU) to this JSON file")
        else:
            _filters(p)
            p.add_argument("--jobs", type=int, default=1, help="runs in parallel, one process each (default 1)")
        p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda[:N]")
        p.add_argument("--threads", type=int, help="torch threads (default: the run's cpus resource)")
        p.add_argument("--quiet", action="store_true", help="no progress bar")
    add("aggregate", cmd_aggregate, "run records -> results/aggregated/<paper>.csv (and results/metrics/<paper>.json, "
                                    "results/plots/<paper>/: the same numbers for DVC)", paper="optional", writes=True)
    add("render", cmd_render, "aggregated + published -> tables (md, tex) and figures (png, pdf)", paper="optional",
        writes=True)
    p = add("notebook", cmd_notebook, "execute the paper's papermill notebook (which renders its tables and figures)",
            paper="optional", writes=True)
    p.add_argument("--kernel", default="python3", help="Jupyter kernel name (default: python3)")
    p.add_argument("--quiet", action="store_true")
    p = add("claims", cmd_claims, "evaluate every checkable claim on the aggregated results", writes=True)
    p.add_argument("--all", action="store_true", help="also list claims that cannot be evaluated yet or never here")
    add("report", cmd_report, "write results/report/index.html", writes=True)
    p = add("status", cmd_status, "list runs whose records were made by other code or data (with the modules that "
                                  "changed), and count complete, missing and interrupted ones")
    _filters(p)
    p.add_argument("--all", action="store_true", help="also list missing and interrupted runs")
    p = add("estimate", cmd_estimate, "per artifact: runs, CPU/GPU hours and peak memory a scale will cost, measured "
                                      "or extrapolated from the run records at hand (e.g. --scale paper)")
    _filters(p)
    p = add("dvc", cmd_dvc, "write dvc.yaml from params/ (or --check that it is up to date)", scale=False)
    p.add_argument("--check", action="store_true")
    p.add_argument("--output", default="dvc.yaml")
    resources.add_subcommand(sub)
    rehearse.add_subcommand(sub)
    data_commands.add_subcommands(sub)
    return parser


def _filters(p) -> None:
    p.add_argument("--paper", choices=PAPERS, metavar="PAPER", help="only this paper")
    p.add_argument("--artifact", help="only this artifact of --paper (e.g. table8)")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.results:
        os.environ["TIMEREPRO_RESULTS"] = str(Path(args.results).resolve())
    if args.global_data_dir:
        os.environ["TIMEREPRO_DATA"] = str(Path(args.global_data_dir).resolve())
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    from timerepro.data.fetch import DownloadError
    from timerepro.data.lock import LockError

    from timerepro.paths import NotWritableError, check_writable, results_dir

    try:
        if getattr(args, "writes_results", False):
            check_writable(results_dir())
        return args.func(args) or 0
    except ConfigError as exc:  # an invalid params/ file: file and key in the message
        print(f"error: invalid configuration: {exc}", file=sys.stderr)
        return 2
    except (NotFoundError, LockError, NotWritableError) as exc:  # a name params/ lacks, a bad lock, a read-only folder
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except DownloadError as exc:  # the network or an upstream host: nothing in the code to debug
        print(f"error: download failed: {exc}", file=sys.stderr)
        return 1
    # any other exception propagates: Python prints its traceback and exits with status 1


if __name__ == "__main__":
    sys.exit(main())
