"""The same runs under two checkouts (issue 27: cuts of a run's work must leave its results bitwise equal): every
run's metrics, history and artifacts compared exactly (measured seconds and memory aside), and the CPU seconds
of each run under each checkout, measured alternately, one process per run, one thread.

    python benchmarks/same_metrics.py --before /path/to/other/checkout --scale offline \\
        dyg_mamba/lp_tgn:1 linear_time/lp_dygformer_separate:1 hawkes_attention/tpp_taxi:2 --repeat 3

A selection `paper/experiment:n` is the experiment's first n runs of the scale (registry order; default 1),
`paper/experiment@i,j` its runs i and j. Each
run executes in a fresh process whose source tree is the checkout's (`PYTHONPATH`, `TIMEREPRO_ROOT`), its results
in a scratch folder, the data cache shared (`--data`, default: a scratch folder, prepared by the first process).
A run alone trains as the ensemble of one where its task stacks seeds: the same result as in its group.
Exit status 1 when a run's results differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
# what a run measures rather than computes: left out of the comparison
MEASURED = {"epoch_time_s", "val_time_s", "train_time_s", "embedding_time_s", "peak_rss_mb", "peak_gpu_memory_mb"}
MEASURED |= {f"backbone_{k}" for k in MEASURED}  # node classification records its backbone's with this prefix
COMPARED_JSON = ("metrics.json", "history.json", "backbone/metrics.json", "backbone/history.json")
UNCOMPARED = {"config.json", "effective_config.json", "provenance.json", "checkpoint.pt", "backbone/backbone.pt",
              *COMPARED_JSON}  # configs are the input; provenance holds the code fingerprint and clock


def _strip(obj):
    """`obj` without the measured keys, at any depth."""
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in MEASURED}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def fingerprint_of_results(directory: Path) -> dict[str, object]:
    """What a run folder holds that must not change: the JSON records without measured keys, every other file's
    sha256."""
    out: dict[str, object] = {}
    for name in COMPARED_JSON:
        path = directory / name
        if path.is_file():
            out[name] = _strip(json.loads(path.read_text()))
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        rel = path.relative_to(directory).as_posix()
        if rel not in UNCOMPARED and not path.name.startswith("."):
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def child(results: Path, scale: str, paper: str, experiment: str, index: int) -> None:
    """In the checkout's interpreter: run the index-th run of the experiment, print its id, folder and CPU seconds."""
    from timerepro import registry, runs

    selected = [r for r in registry.load().runs(scale, paper=paper) if r.experiment == experiment]
    if index >= len(selected):
        raise SystemExit(f"{paper}/{experiment} has {len(selected)} runs at scale {scale}, not {index + 1}")
    config = selected[index].config
    cpu, wall = time.process_time(), time.perf_counter()
    folder = runs.execute(config, results=results, device="cpu", threads=1, show_progress=False)
    print(json.dumps({"run_id": config["run_id"], "dir": str(folder), "cpu_s": time.process_time() - cpu,
                      "wall_s": time.perf_counter() - wall}))


def run_once(checkout: Path, results: Path, data: Path, scale: str, selection: tuple[str, str, int]) -> dict:
    """One run in a fresh process of `checkout`; its record in `results` (emptied first)."""
    paper, experiment, index = selection
    env = {**os.environ, "PYTHONPATH": str(checkout / "src"), "TIMEREPRO_ROOT": str(checkout),
           "TIMEREPRO_DATA": str(data), "TIMEREPRO_THREADS": "1", "OMP_NUM_THREADS": "1"}
    env.pop("TIMEREPRO_RESULTS", None)
    proc = subprocess.run([sys.executable, str(HERE), "_child", str(results), scale, paper, experiment, str(index)],
                          env=env, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{checkout}: {paper}/{experiment}[{index}] failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def parse_selection(text: str) -> list[tuple[str, str, int]]:
    """`paper/experiment[:n]`: its first n runs; `paper/experiment@i,j,..`: its runs i, j, .. (registry order)."""
    name, picked, indices = text.partition("@")
    if not picked:
        name, _, n = text.partition(":")
        indices = ",".join(str(i) for i in range(int(n or 1)))
    paper, _, experiment = name.partition("/")
    if not experiment:
        raise argparse.ArgumentTypeError(f"{text!r}: expected paper/experiment[:n] or paper/experiment@i,j")
    return [(paper, experiment, int(i)) for i in indices.split(",")]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_child"]:
        child(Path(argv[1]), argv[2], argv[3], argv[4], int(argv[5]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("selections", nargs="+", help="paper/experiment[:n] or paper/experiment@i,j")
    parser.add_argument("--before", type=Path, required=True, help="the other checkout (its src/ and params/)")
    parser.add_argument("--after", type=Path, default=HERE.parents[1], help="default: this checkout")
    parser.add_argument("--scale", default="offline")
    parser.add_argument("--repeat", type=int, default=1, help="runs per checkout, alternating (timing)")
    parser.add_argument("--data", type=Path, help="shared data cache (default: a scratch folder)")
    parser.add_argument("--keep", type=Path, help="keep the run records here (default: a scratch folder, removed)")
    args = parser.parse_args(argv)
    selections = [s for text in args.selections for s in parse_selection(text)]
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    with tempfile.TemporaryDirectory(prefix="same-metrics-") as tmp:
        scratch = args.keep or Path(tmp)
        data = args.data or scratch / "data"
        differ = 0
        print(f"{'run':48s} {'before cpu s':>14s} {'after cpu s':>14s} {'saved':>7s}  results")
        totals = {"before": 0.0, "after": 0.0}
        for paper, experiment, index in selections:
            cpu: dict[str, list[float]] = {"before": [], "after": []}
            seen: dict[str, dict] = {}
            for r in range(args.repeat):
                order = ("before", "after") if r % 2 == 0 else ("after", "before")
                for name in order:
                    results = scratch / name / str(r)
                    out = run_once(trees[name], results, data, args.scale, (paper, experiment, index))
                    cpu[name].append(out["cpu_s"])
                    got = fingerprint_of_results(Path(out["dir"]))
                    if name in seen and seen[name] != got:
                        raise RuntimeError(f"{name}: {paper}/{experiment}[{index}] differs between repeats: not "
                                           "deterministic, so nothing can be compared")
                    seen[name] = got
                    run_id = out["run_id"]
            same = seen["before"] == seen["after"]
            differ += not same
            b, a = min(cpu["before"]), min(cpu["after"])
            totals["before"] += b
            totals["after"] += a
            label = f"{paper}/{experiment}[{index}] {run_id}"
            print(f"{label:48s} {b:14.2f} {a:14.2f} {100 * (b - a) / b if b else 0:6.1f}%  "
                  f"{'identical' if same else 'DIFFER'}", flush=True)
            if not same:
                keys = sorted(k for k in set(seen["before"]) | set(seen["after"])
                              if seen["before"].get(k) != seen["after"].get(k))
                print(f"    differs in: {', '.join(keys)}")
        b, a = totals["before"], totals["after"]
        print(f"{'total (min over repeats)':48s} {b:14.2f} {a:14.2f} {100 * (b - a) / b if b else 0:6.1f}%  "
              f"{differ} of {len(selections)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
