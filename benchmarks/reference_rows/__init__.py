"""The rows of benchmarks/reference_table.py whose reference is not DyGLib: one module per family, one protocol.

    SOURCE, METRIC, LOSS   the reference's label, the evaluation metric's and the training loss's names
    MODELS                 the family's rows (registry model names)
    NEEDS                  the options of reference_table.py (reference checkouts) the family cannot run without
    STEPS                  timed steps per phase and process unless --batches says (short steps: more of them)
    PYTHON                 the option naming the interpreter both sides run in (None: reference_table's own)
    batch_size(model)      the batch size of the row
    measure(impl, model, paths, n, seed) -> {train_bps, eval_bps, loss, metric, n_parameters}
        impl "reference" or "project": one untimed warm-up step, then n timed training steps; the same for
        evaluation; a phase the reference cannot run is reported as `<rate>_error` instead of its rate; the rate is
        1 / the median step, with `timing.summary`'s step figures where the family times steps one by one
    floor_note(model, runs) -> str | None   optional: a line printed under the row (the EasyTPP rows' floor)

`measure.py` runs one measurement in a process of its own (threads set, peak resident memory added unless the
measurement set it: the EasyTPP rows' floor profiles after their peak is read); `run` does
what reference_table.py does for DyGLib's rows: processes alternate reference / project, seed by seed, and each
row is printed with reference_table's `row` as soon as it is measured.
"""

from __future__ import annotations

import importlib
import json
import math
import subprocess
import sys
import time
import traceback
from pathlib import Path

from reference_rows.timing import describe, ratio_note

HERE = Path(__file__).resolve().parent
FAMILIES = {"swinit": "reference_rows.swinit", "easytpp": "reference_rows.easytpp",
            "hawkes_attention": "reference_rows.hawkes"}
OPTIONS = {"hawkes": "TanXZfra/Time-aware-Hawkes-Attention checkout (Hawkes Attention row)",
           "swinit": "bzho3923/GNN_SWINIT checkout (SWINIT rows)",
           "pyg_python": "python of an environment with torch_geometric and the project's packages (SWINIT rows)"}


def family(name: str):
    return importlib.import_module(FAMILIES[name])


def add_arguments(parser) -> None:
    """reference_table.py's options for these rows: which families, and the checkouts they read."""
    parser.add_argument("--rows", nargs="*", default=list(FAMILIES), choices=list(FAMILIES),
                        help="non-DyGLib reference rows to measure (default: every family whose inputs are given)")
    for key, help_ in OPTIONS.items():
        parser.add_argument(f"--{key.replace('_', '-')}", default="", help=help_)
    parser.add_argument("--row-models", nargs="*", default=[], help="only these rows of the families (default: all)")
    parser.add_argument("--max-gb", type=float, default=8.0, help="address-space limit of each process of these rows")


def paths_of(args) -> dict:
    return {k: str(Path(getattr(args, k)).absolute()) for k in OPTIONS if getattr(args, k, "")}  # venv python: as given


def missing(name: str, args) -> list[str]:
    """The options a family needs that were not given."""
    fam = family(name)
    return [f"--{k.replace('_', '-')}" for k in (*fam.NEEDS, *([fam.PYTHON] if fam.PYTHON else ()))
            if not getattr(args, k, "")]


def child(args, env: dict, name: str, impl: str, model: str, seed: int) -> dict:
    """One measurement in its own process; its JSON, or {"error": ...}."""
    fam = family(name)
    python = getattr(args, fam.PYTHON) if fam.PYTHON else sys.executable
    cmd = [python, str(HERE / "measure.py"), name, impl, model, str(seed), "--batches", str(args.batches or fam.STEPS),
           "--threads", str(args.threads), "--max-gb", str(args.max_gb), "--paths", json.dumps(paths_of(args))]
    return run_json(cmd, env, time_left(args))


def start_row(args) -> None:
    """A row begins: its processes share --row-timeout-s from now (`time_left`)."""
    args.row_end = time.monotonic() + (getattr(args, "row_timeout_s", None) or math.inf)


def time_left(args) -> float:
    """Seconds the next measuring process may run: --timeout, within what is left of its row's time (`start_row`) and
    of the table's (`args.end`, from --budget-s)."""
    now = time.monotonic()
    return min(args.timeout, getattr(args, "row_end", math.inf) - now, getattr(args, "end", math.inf) - now)


def run_json(cmd: list[str], env: dict, timeout: float) -> dict:
    """Run one measuring process; the JSON of its last stdout line, or {"error": its last stderr line} with its whole
    stderr (the traceback) copied to this process's stderr, so that one failed process costs its row a cell, not the
    table its run."""
    if timeout <= 0:
        return {"error": "not run: its row's time (--row-timeout-s) or the table's (--budget-s) is spent"}
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        _relay(cmd, e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr or "")
        return {"error": f"timed out after {timeout:.0f} s"}
    if out.returncode:
        _relay(cmd, out.stderr)
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        _relay(cmd, out.stderr + out.stdout[-3000:])
        return {"error": "no JSON result on the last line of its stdout"}


def _relay(cmd: list[str], stderr: str) -> None:
    """A failed measuring process's stderr (its traceback), under its command line, on this process's stderr."""
    print(f"--- failed: {' '.join(cmd)}\n{stderr.rstrip()}\n---", file=sys.stderr, flush=True)


def run(args, env: dict, row, print_row) -> list[tuple[str, str]]:
    """Measure and print every selected family's rows; returns (row, reason) for the families not measured."""
    skipped, notes = [], []
    for name in args.rows:
        need = missing(name, args)
        if need:
            skipped.append((name, f"its reference is not given: pass {' '.join(need)}"))
            continue
        fam = family(name)
        for model in [m for m in fam.MODELS if not args.row_models or m in args.row_models]:
            try:
                runs = {"reference": [], "project": []}
                start_row(args)
                for seed in range(args.seeds):
                    for impl in (("reference", "project") if seed % 2 == 0 else ("project", "reference")):
                        res = child(args, env, name, impl, model, seed)
                        runs[impl].append(res)
                        print(f"  {model} {impl} seed {seed}: {describe(res)}", file=sys.stderr, flush=True)
                print_row(row(model, runs, source=fam.SOURCE, batch=fam.batch_size(model), metric="metric"))
                print(ratio_note(model, runs), flush=True)
                note = fam.floor_note(model, runs) if hasattr(fam, "floor_note") else None
                if note:
                    print(note, flush=True)
            except Exception:  # noqa: BLE001 (one row's failure: its traceback, then the next row)
                traceback.print_exc()
                print(f"{model}: failed (traceback on stderr)", flush=True)
        notes.append(f"{name} rows: loss = {fam.LOSS}, metric = {fam.METRIC}")
    for note in notes:
        print(note)
    return skipped
