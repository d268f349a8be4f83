"""Where a pipeline run's time goes (issue 27): Snakemake's own process, the start-up of every job's process,
data preparation, training, validation, test evaluation, evaluation probes, the rest of each run, aggregation and
notebooks.

Read from what a run leaves: the run records (provenance `wall_time_s`, `train_time_s`, `test_time_s`, `probe_time_s`;
history `epoch_time_s`/`val_time_s`, a node-classification run's backbone history with its own),
the training processes' timing files (`results/logs/jobs/<paper>/<batch>.<code>.timing.json`, written by
`timerepro run-job --timing`), Snakemake's metadata (`.snakemake/metadata`: start and end of every step) and,
when the run was started through `measure`, Snakemake's own CPU seconds. Works on a results folder of any scale.
Timing is only meaningful on an otherwise idle machine.

    python benchmarks/offline_breakdown.py measure -- snakemake --profile local     # the run, with Snakemake's CPU
    python benchmarks/offline_breakdown.py report                                    # results/ at params/run.yaml's scale
    python benchmarks/offline_breakdown.py report --results DIR --scale smoke
    python benchmarks/offline_breakdown.py report --experiments 20               # and the 20 experiments with most rest
    python benchmarks/offline_breakdown.py startup --repeat 5   # one process's start-up, x the jobs of each scale
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from timerepro import batching, registry
from timerepro.paths import project_root, results_dir
from timerepro.records import load_record, run_dir

PROCESS_FILE = ("logs", "snakemake_process.json")  # under the results folder, written by `measure`
STACKED = "stacked ensemble"  # provenance `trained_with` of seeds trained as one model (wall time shared)
SCHEDULING, STARTUP, DATA = ("scheduling (Snakemake's own process)", "process start-up (Python, torch, params/, fingerprints)",
                             "data preparation")
TRAINING, VALIDATION = "training (epochs)", "validation (per epoch)"
TEST, PROBES = "test evaluation (after training: provenance test_time_s)", "evaluation probes (provenance probe_time_s)"
REST = "rest of each run (data, model, checkpoints, untimed evaluation)"
BOOKKEEPING, AGGREGATION, NOTEBOOKS = ("job bookkeeping (records, provenance, marker)", "aggregation, claims, report",
                                       "notebooks")
ORDER = (SCHEDULING, STARTUP, DATA, TRAINING, VALIDATION, TEST, PROBES, REST, BOOKKEEPING, AGGREGATION, NOTEBOOKS)
STEPS = {"prepare_dataset": DATA, "prepare_standin": DATA, "aggregate": AGGREGATION, "claims": AGGREGATION,
         "report": AGGREGATION, "notebook": NOTEBOOKS}
PARTS = ("wall", "train", "val", "test", "probes")  # what run_times sums per job


# ---- measure --------------------------------------------------------------------------------------------------
def _own_cpu(pid: int) -> float | None:
    """User + system seconds of process `pid` itself (not its children), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(command: list[str], results: Path) -> dict:
    """Run `command` (Snakemake), polling its own CPU seconds; write them with the elapsed and total CPU time."""
    start = time.time()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(command)
    own = 0.0
    while proc.poll() is None:
        own = _own_cpu(proc.pid) or own
        time.sleep(1.0)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = {"command": command, "returncode": proc.returncode, "start": start, "end": time.time(),
           "elapsed_s": round(time.time() - start, 1), "snakemake_cpu_s": round(own, 1), "cores": os.cpu_count(),
           "total_cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1)}
    path = results.joinpath(*PROCESS_FILE)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    return out


# ---- report ---------------------------------------------------------------------------------------------------
def snakemake_steps(metadata: Path, roots: list[Path]) -> list[dict]:
    """Every step Snakemake recorded whose output lies under one of `roots`: rule, output, start, end (Snakemake
    keeps one record per output file: a step of several outputs counts once)."""
    steps: dict[tuple, dict] = {}
    if not metadata.is_dir():
        return []
    for f in metadata.iterdir():
        try:
            output = base64.b64decode(f.name.replace("@", "/")).decode()
            meta = json.loads(f.read_text())
        except (ValueError, OSError):
            continue
        if meta.get("starttime") and meta.get("endtime") and any(output.startswith(str(r) + os.sep) for r in roots):
            key = (meta["rule"], meta.get("job_hash") or output)  # a step's outputs: one job hash, starts ms apart
            steps.setdefault(key, {"rule": meta["rule"], "output": output, "start": meta["starttime"],
                                   "end": meta["endtime"]})
    return list(steps.values())


def _history(directory: Path) -> list[dict]:
    path = directory / "history.json"
    return json.loads(path.read_text()) if path.is_file() else []


NESTED = ("backbone",)  # runs a task trains inside its own (node classification's link-prediction backbone)


def history_seconds(directory: Path) -> tuple[float, float]:
    """(training, validation) seconds of a run's history and of the nested runs' histories in its folder."""
    rows = [h for d in (directory, *(directory / n for n in NESTED)) for h in _history(d)]
    return sum(float(h.get("epoch_time_s") or 0.0) for h in rows), sum(float(h.get("val_time_s") or 0.0) for h in rows)


def run_times(reg, scale: str, results: Path, only: set[str] | None = None) -> dict[str, dict]:
    """Per job of `scale` with records (of `only` these jobs when given): its runs' wall, training and validation
    seconds. Seeds trained as one stacked model share one wall clock (its largest) and record each their share of
    every stacked epoch (summed)."""
    out = {}
    for job in reg.jobs(scale):
        if only is not None and job.job_id not in only:
            continue
        recs = [r for r in (load_record(run_dir(run.config, results)) for run in job.runs) if r is not None]
        if not recs:
            continue
        walls = [float(r["provenance"].get("wall_time_s") or 0.0) for r in recs]
        train, val = (sum(x) for x in zip(*(history_seconds(r["dir"]) for r in recs)))
        # phases a task timed itself (a loop without per-epoch rows: periodic_classification's train_time_s)
        extra, test, probes = (sum(float(r["provenance"].get(k) or 0.0) for r in recs)
                               for k in ("train_time_s", "test_time_s", "probe_time_s"))
        stacked = all(STACKED in str(r["provenance"].get("trained_with", "")) for r in recs)
        out[job.job_id] = {"runs": len(recs), "wall": max(walls) if stacked else sum(walls), "train": train + extra,
                           "val": val, "test": test, "probes": probes, "label": f"{job.paper}/{job.runs[0].experiment}"}
    return out


def breakdown(reg, scale: str, results: Path, metadata: Path, data: Path | None = None) -> dict:
    """Seconds per category (process wall time, one core each), with the elapsed time and the process counts."""
    roots = [results] + ([data] if data else [])
    steps = snakemake_steps(metadata, roots)
    cat = dict.fromkeys(ORDER, 0.0)
    for s in steps:
        if s["rule"] in STEPS:
            cat[STEPS[s["rule"]]] += s["end"] - s["start"]
    train_steps = [s for s in steps if s["rule"] == "train"]
    timings = [json.loads(p.read_text()) for p in results.glob("logs/jobs/*/*.timing.json")]
    # the jobs of the processes that finished (a run still in progress has records of jobs not yet timed)
    runs = run_times(reg, scale, results, {j["job_id"] for t in timings for j in t["jobs"]} if timings else None)
    for t in timings:  # the processes themselves say where their time went
        ran = sum(j["end"] - j["start"] for j in t["jobs"])
        start = t["process_start"] or t["main_start"]
        cat[STARTUP] += t["ready"] - start
        cat[BOOKKEEPING] += (t["end"] - t["ready"]) - ran
    in_runs = {k: sum(r[k] for r in runs.values()) for k in PARTS}
    cat[TRAINING] += in_runs["train"]
    cat[VALIDATION] += in_runs["val"]
    cat[TEST] += in_runs["test"]
    cat[PROBES] += in_runs["probes"]
    cat[REST] += in_runs["wall"] - sum(in_runs[k] for k in PARTS[1:])
    train_wall = sum(s["end"] - s["start"] for s in train_steps)
    if timings:  # the jobs' own clocks say how long a run took; what else their processes did is bookkeeping
        ran = sum(j["end"] - j["start"] for t in timings for j in t["jobs"])
        cat[BOOKKEEPING] += ran - in_runs["wall"]
    else:  # results of code that wrote no timing: all of a job's process beyond its runs counts as start-up
        cat[STARTUP] += train_wall - in_runs["wall"]
    process = results.joinpath(*PROCESS_FILE)
    measured = json.loads(process.read_text()) if process.is_file() else None
    if measured:
        cat[SCHEDULING] = measured["snakemake_cpu_s"]
    span = (max(s["end"] for s in steps) - min(s["start"] for s in steps)) if steps else 0.0
    return {"seconds": cat, "elapsed_s": measured["elapsed_s"] if measured else span, "measured": measured,
            "processes": {"train": len(train_steps) or len(timings), "other": len(steps) - len(train_steps)},
            "runs": sum(r["runs"] for r in runs.values()), "train_wall_s": train_wall, "jobs": runs}


def print_breakdown(b: dict, cores: int, file=sys.stdout) -> None:
    budget = b["elapsed_s"] * cores
    print(f"elapsed {b['elapsed_s'] / 60:.1f} min x {cores} cores = {budget / 60:.1f} core-minutes; "
          f"{b['processes']['train']} training processes ({b['runs']} runs), {b['processes']['other']} other steps",
          file=file)
    if not b["measured"]:
        print("(no logs/snakemake_process.json: Snakemake's own CPU is not measured; run through `measure`)", file=file)
    print(f"{'where':68s} {'minutes':>8s} {'share':>6s}", file=file)
    for name in ORDER:
        sec = b["seconds"][name]
        print(f"{name:68s} {sec / 60:8.1f} {100 * sec / budget if budget else 0:5.1f}%", file=file)
    rest = budget - sum(b["seconds"].values())
    print(f"{'cores idle or unaccounted (waits between steps, other processes)':68s} {rest / 60:8.1f} "
          f"{100 * rest / budget if budget else 0:5.1f}%", file=file)


def print_experiments(b: dict, top: int, file=sys.stdout) -> None:
    """Per experiment, the `top` largest by the rest of their runs: runs and seconds of wall, epochs, validation,
    test evaluation, probes and rest (the figures of `run_times`, summed over the experiment's jobs)."""
    rows: dict[str, dict] = {}
    for job in b["jobs"].values():
        row = rows.setdefault(job["label"], dict.fromkeys(("runs", *PARTS), 0.0))
        for k in ("runs", *PARTS):
            row[k] += job[k]
    for row in rows.values():
        row["rest"] = row["wall"] - sum(row[k] for k in PARTS[1:])
    print(f"{'experiment':44s} {'runs':>5s} " + " ".join(f"{k:>8s}" for k in (*PARTS, "rest")) + "  (seconds)", file=file)
    for name, row in sorted(rows.items(), key=lambda kv: -kv[1]["rest"])[:top]:
        print(f"{name:44s} {int(row['runs']):5d} " + " ".join(f"{row[k]:8.1f}" for k in (*PARTS, "rest")), file=file)


# ---- startup --------------------------------------------------------------------------------------------------
def _time(cmd: list[str], env: dict) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def startup(reg, scale: str, results: Path, repeat: int) -> None:
    """The start-up of one job's process (median of `repeat`), and what it costs over each scale's processes."""
    from timerepro.fingerprint import Fingerprinter

    env = {**os.environ, "PYTHONPATH": str(project_root() / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    probes = {"python -c pass": [sys.executable, "-c", "pass"],
              "python -c 'import timerepro.cli'": [sys.executable, "-c", "import timerepro.cli"],
              "python -c 'import torch'": [sys.executable, "-c", "import torch"]}
    probe_marker = results / "logs" / "startup-probe.json"
    done = next((j for j in reg.jobs(scale) if all((run_dir(r.config, results) / "metrics.json").is_file()
                                                    for r in j.runs)), None)
    if done is not None:  # a job whose runs are complete: its process does everything but train
        probes[f"no-op run-job ({done.paper} {done.job_id}, {scale})"] = [
            sys.executable, "-m", "timerepro", "--results", str(results), "run-job", done.paper, done.job_id,
            "--scale", scale, "--marker", str(probe_marker), "--quiet"]
    else:
        print(f"no job of scale {scale} is complete in {results}: the no-op run-job is not timed")
    med = {}
    for name, cmd in probes.items():
        samples = sorted(_time(cmd, env) for _ in range(repeat))
        wall, cpu = samples[len(samples) // 2]
        med[name] = cpu
        print(f"{name:64s} wall {wall:5.2f} s  cpu {cpu:5.2f} s  (median of {repeat})")
    probe_marker.unlink(missing_ok=True)
    per = max(med.values())
    fingerprints = Fingerprinter(models=reg.models)
    for each in reg.scale_names():
        jobs = reg.jobs(each)
        codes = {j.job_id: fingerprints.job([r.config for r in j.runs]) for j in jobs}
        n = len(batching.batches(jobs, codes, batching.runs_per_batch(reg, each)))
        print(f"{each:8s} {len(jobs):5d} jobs -> {n:5d} processes: start-up {len(jobs) * per / 60:6.1f} -> "
              f"{n * per / 60:6.1f} CPU-minutes at {per:.2f} s each")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("measure", help="run a command (Snakemake) and record its own CPU seconds")
    p.add_argument("--results", type=Path, help="where to write logs/snakemake_process.json (default: results/)")
    p.add_argument("command", nargs=argparse.REMAINDER)
    p = sub.add_parser("report", help="print the breakdown of a results folder")
    p.add_argument("--results", type=Path)
    p.add_argument("--data-dir", type=Path, help="the data cache the run prepared (default: ./data)")
    p.add_argument("--scale", help="default: params/run.yaml")
    p.add_argument("--snakemake-dir", type=Path, default=project_root() / ".snakemake")
    p.add_argument("--cores", type=int, help="default: the measured run's, else this machine's")
    p.add_argument("--experiments", type=int, default=0, metavar="N", help="also the N experiments with the most rest")
    p = sub.add_parser("startup", help="time one job process's start-up, and its cost over every scale's processes")
    p.add_argument("--results", type=Path, help="a results folder with a complete job (its no-op run-job is timed)")
    p.add_argument("--scale", help="that job's scale (default: params/run.yaml)")
    p.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    results = (args.results or results_dir()).resolve()
    if args.what == "measure":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        out = measure(command, results)
        print(json.dumps(out), file=sys.stderr)
        return out["returncode"]
    reg = registry.load()
    if args.what == "startup":
        startup(reg, args.scale or reg.default_scale(), results, args.repeat)
        return 0
    data = (args.data_dir or project_root() / "data").resolve()
    b = breakdown(reg, args.scale or reg.default_scale(), results, args.snakemake_dir / "metadata", data)
    print_breakdown(b, args.cores or (b["measured"] or {}).get("cores") or os.cpu_count())
    if args.experiments:
        print_experiments(b, args.experiments)
    return 0


if __name__ == "__main__":
    sys.exit(main())
