"""Paper scale rehearsed before it is paid for: every distinct job shape runs a few batches on its paper-size stand-in.

A shape is what sets a run's cost per batch: task, model, data, and the parameters in COST_KEYS (batch sizes,
neighbours, sequence lengths); of a shape's runs the widest (WIDTH_KEYS) is rehearsed, so its figures bound the
others'. Link prediction's final evaluation passes grow with the number of `eval_negatives` strategies, which the
estimate scales by (`eval_strategies`). The rehearsal runs the task's own `run(config, ctx)` in this process, as `timerepro run-job` does, on the
dataset's paper-size stand-in (`standins.PAPER_GRAPHS` ...), with one epoch, and bounds it:
* a training loop that iterates through `ctx.progress(...)` (link prediction, node classification) runs its
  first `batches` batches, each timed, and says how many an epoch has;
* link prediction's evaluation passes (`evaluate` of the task's module) score their first `batches` batches,
  timed, and say how many a full pass has;
* a task with neither runs one whole epoch (`kind: epoch`): its history gives seconds per epoch.
The record, results/rehearsal/<shape id>.json, holds set-up seconds, seconds per training and evaluation batch,
batches per epoch and per evaluation pass, peak host memory and peak device memory (CUDA), the device, and the
error when the shape fails at this size. `timerepro estimate --scale paper` and `timerepro resources --scale
paper` read these records.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import platform
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from timerepro.io import atomic_write_json, read_json
from timerepro.memory import PeakMemory

# what changes a run's cost per batch besides task, model and data
COST_KEYS = ("batch_size", "eval_batch_size", "num_neighbors", "max_input_sequence_length", "sequence_length",
             "seq_len", "pred_len", "walk_length", "time_span", "num_exp")
# widths: a shape's rehearsed run is its widest (the product of these), an upper bound for the others
WIDTH_KEYS = ("d_model", "d_ch", "hidden", "memory_dim", "embedding_dim", "d_T", "num_layers", "e_layers", "d_ff",
              "layers", "d_inner", "num_heads", "n_heads", "d_state", "num_blocks")
DATA_KEYS = ("dataset", "series", "datasets")
# outputs beside the metrics that some runs also make: not rehearsed (their cost is not priced)
EXTRAS_OFF = {"record_attention": 0, "case_study_edges": 0, "noise_ratios": []}
REHEARSAL_DIR = "rehearsal"
COMMITTED_DIR = "benchmarks/rehearsals"  # records of lent machines, kept with the code (`committed_dir`)
FORMAT = "rehearsal/1"


def shape_of(config: dict) -> dict:
    """The cost-setting part of a config (see the module docstring)."""
    shape = {"task": config["task"], "model": config.get("model")}
    for k in DATA_KEYS:
        if k in config:
            shape[k] = config[k]
    for k in COST_KEYS:
        if config.get(k) is not None:
            shape[k] = config[k]
    dataset = config.get("dataset")
    for k, v in config.items():  # per-dataset defaults of the shape's dataset (DyGFormer's sequence lengths)
        if isinstance(v, dict) and dataset in v and k in ("dataset_defaults", "sequence_length_by_dataset"):
            shape[f"{k}[{dataset}]"] = v[dataset]
    return shape


def shape_id(shape: dict) -> str:
    return hashlib.sha256(json.dumps(shape, sort_keys=True, default=str).encode()).hexdigest()[:12]


def shape_name(shape: dict) -> str:
    data = shape.get("dataset") or shape.get("series") or shape.get("datasets") or "-"
    return f"{shape['task']}/{shape.get('model') or '-'}/{data if isinstance(data, str) else '+'.join(map(str, data))}"


def _width(config: dict) -> float:
    return math.prod(float(config[k]) for k in WIDTH_KEYS if isinstance(config.get(k), (int, float)) and config[k] > 0)


@dataclass
class Shape:
    id: str
    shape: dict
    runs: list = field(default_factory=list)  # registry Runs

    @property
    def name(self) -> str:
        return shape_name(self.shape)

    def config(self, standin: str = "paper") -> dict:
        """The widest run's config, on the stand-in of size `standin`, for one epoch, without the extras."""
        widest = max(self.runs, key=lambda r: _width(r.config))
        config = dict(widest.config)
        if any(k in config for k in DATA_KEYS) or "standin" in config:
            config["standin"] = standin
        config.update({k: v for k, v in EXTRAS_OFF.items() if k in config})
        config["max_epochs"] = 1
        return config


def shapes(reg, scale: str = "paper", paper: str | None = None) -> list[Shape]:
    """Every distinct shape of the scale's jobs, with its runs."""
    out: dict[str, Shape] = {}
    for job in reg.jobs(scale, paper=paper):
        for run in job.runs:
            s = shape_of(run.config)
            sid = shape_id(s)
            out.setdefault(sid, Shape(sid, s)).runs.append(run)
    return sorted(out.values(), key=lambda s: (s.shape["task"], s.name, s.id))


# ---------------------------------------------------------------- the bounded run

@dataclass
class Timings:
    batches: int
    train: list[float] = field(default_factory=list)  # seconds of each timed training batch
    train_per_epoch: int | None = None
    first_batch_at: float | None = None  # perf_counter when the first training batch started
    evals: list[dict] = field(default_factory=list)  # per evaluation pass: full batches, timed batches, seconds
    history: list[dict] = field(default_factory=list)


class RehearsalContext:
    """A RunContext for a bounded run: training loops through `progress` stop after `batches` batches (timed);
    nothing is written (no checkpoint, history or artifact lands in a run folder)."""

    def __init__(self, config: dict, directory: Path, device: str, timings: Timings):
        self.config, self.run_id, self.dir, self.device = config, config["run_id"], directory, device
        self.show_progress, self.fingerprint, self.timings = False, None, timings
        self.effective = config
        self.memory = PeakMemory()

    def peak_memory_mb(self) -> float:
        return self.memory.peak_mb()

    checkpoint_path = property(lambda self: self.dir / "checkpoint.pt")

    def save_checkpoint(self, state: dict) -> None:
        pass

    def load_checkpoint(self):
        return None

    def write_history(self, history: list[dict]) -> None:
        self.timings.history = list(history)

    def read_history(self) -> list[dict]:
        return list(self.timings.history)

    def write_artifact(self, name: str, obj) -> Path:
        return self.dir / name

    def log(self, message: str) -> None:
        pass

    def progress(self, iterable, desc: str = "", total: int | None = None, **kwargs):
        if desc == self.run_id:  # fit's epoch loop, not a batch loop
            return iterable
        return self._bounded(iterable, total)

    def _bounded(self, iterable, total):
        t = self.timings
        t.train_per_epoch = total if total is not None else len(iterable)
        it = iter(iterable)
        for i in range(t.batches):
            start = time.perf_counter()
            if t.first_batch_at is None:
                t.first_batch_at = start
            try:
                item = next(it)
            except StopIteration:
                return
            yield item
            t.train.append(time.perf_counter() - start)


# tasks whose run() calls a module-level `evaluate(model, data, idx, sampler, graph, batch_size, amp)` per pass
BOUNDED_EVALUATION = ("link_prediction",)


@contextlib.contextmanager
def bounded_evaluation(task: str, task_module, timings: Timings):
    """The task's evaluation passes on their first batches, timed (tasks of BOUNDED_EVALUATION)."""
    if task not in BOUNDED_EVALUATION:
        yield
        return
    original = task_module.evaluate  # where run() looks it up

    def evaluate(model, data, idx, sampler, graph, batch_size, amp="none"):
        full = math.ceil(len(idx) / batch_size)
        n = min(full, timings.batches)
        t0 = time.perf_counter()
        out = original(model, data, idx[: n * batch_size], sampler, graph, batch_size, amp)
        timings.evals.append({"batches": full, "timed": n, "seconds": time.perf_counter() - t0})
        return out

    task_module.evaluate = evaluate
    try:
        yield
    finally:
        task_module.evaluate = original


def _per_batch(seconds: list[float]) -> float | None:
    """Median seconds per batch, the first (warm-up: allocation, kernel selection) left out when there are more."""
    if not seconds:
        return None
    return statistics.median(seconds[1:] if len(seconds) > 2 else seconds)


def device_name(device: str) -> str:
    import torch  # here, not at the top: every `timerepro` command imports this module for its arguments

    if device.startswith("cuda"):
        return f"{device} ({torch.cuda.get_device_name(torch.device(device))})"
    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def rehearse(shape: Shape, *, batches: int = 3, device: str = "auto", standin: str = "paper") -> dict:
    """Run `shape`'s widest config, bounded, in this process; return its rehearsal record."""
    import sys as _sys

    import torch

    from timerepro.runs import pick_device
    from timerepro.tasks.registry import effective_config, get_task
    from timerepro.train import seed_everything

    dev = pick_device(device)
    config = shape.config(standin)
    timings = Timings(batches=batches)
    record = {"format": FORMAT, "shape_id": shape.id, "shape": shape.shape, "name": shape.name,
              "runs": len(shape.runs), "run_id": config["run_id"], "config": config, "batches": batches,
              "device": device_name(dev), "device_type": dev.split(":")[0], "torch": torch.__version__,
              "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    runner = get_task(config["task"])
    memory = PeakMemory().start(dev)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rehearsal-") as tmp:
        ctx = RehearsalContext(config, Path(tmp), dev, timings)
        ctx.memory = memory
        try:
            seed_everything(int(config.get("seed", 0)))
            ctx.effective = effective_config(config)  # what the task runs with, as runs.py resolves it
            with bounded_evaluation(config["task"], _sys.modules[runner.__module__], timings):
                runner(ctx.effective, ctx)
            record["status"] = "ok"
        except (Exception, MemoryError) as e:  # what fails at this size is the rehearsal's finding
            record.update(status="failed", error=f"{type(e).__name__}: {e}"[:2000],
                          traceback=traceback.format_exc()[-4000:])
        finally:
            memory.stop()
    wall = time.perf_counter() - t0
    record["wall_s"] = round(wall, 3)
    record["peak_rss_mb"] = round(memory.peak_mb(), 1)
    gpu = memory.peak_gpu_mb()
    record["peak_gpu_mb"] = None if gpu is None else round(gpu, 1)
    if timings.train:
        record.update(kind="batches", setup_s=round(timings.first_batch_at - t0, 3),
                      train_batch_s=_per_batch(timings.train), train_batches_timed=len(timings.train),
                      train_batches_per_epoch=timings.train_per_epoch)
        timed_s = sum(timings.train) + sum(e["seconds"] for e in timings.evals)
        record["rest_s"] = round(max(wall - record["setup_s"] - timed_s, 0.0), 3)  # what ran whole (metrics, passes)
        if timings.evals:
            timed = sum(e["timed"] for e in timings.evals)
            record.update(eval_batch_s=sum(e["seconds"] for e in timings.evals) / max(timed, 1),
                          eval_batches_per_epoch=timings.evals[0]["batches"],
                          eval_batches_final=sum(e["batches"] for e in timings.evals[1:]),
                          eval_strategies=len(config.get("eval_negatives") or [None]))
    elif timings.history:  # a whole epoch: its history says what an epoch costs
        row = timings.history[0]
        epoch = float(row.get("epoch_time_s") or 0) + float(row.get("val_time_s") or 0)
        record.update(kind="epoch", epoch_s=round(epoch, 3), once_s=round(max(wall - epoch, 0.0), 3))
    else:  # no epochs (EdgeBank, statistics, cost probes): the run is its cost
        record.update(kind="run", once_s=round(wall, 3))
    return record


def record_path(results: Path, sid: str) -> Path:
    return results / REHEARSAL_DIR / f"{sid}.json"


def committed_dir() -> Path:
    """Rehearsal records kept with the code (measured on lent machines, copied from their results/rehearsal/)."""
    from timerepro.paths import project_root

    return project_root() / COMMITTED_DIR


def load_records(results: Path, committed: Path | None = None) -> dict[str, dict]:
    """shape id -> its rehearsal record: those of `committed` (a folder of records), then those under
    results/rehearsal/, which win (a shape rehearsed here again)."""
    out = {}
    for folder in ([committed] if committed else []) + [results / REHEARSAL_DIR]:
        for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            rec = read_json(p)
            if isinstance(rec, dict) and rec.get("format") == FORMAT:
                out[rec["shape_id"]] = rec
    return out


def project_records(results: Path | None = None) -> dict[str, dict]:
    """The records a command reads: the project's results/rehearsal/ over the committed ones; only those of
    `results` when a results folder is given."""
    from timerepro.paths import results_dir

    return load_records(results, None) if results else load_records(results_dir(), committed_dir())


# ---------------------------------------------------------------- command

def add_subcommand(sub) -> None:
    p = sub.add_parser("rehearse", help="run a few batches of every paper-scale job shape on its paper-size stand-in",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", default="paper", help="the scale whose job shapes are rehearsed (default: paper)")
    p.add_argument("--paper", help="one paper (default: all)")
    p.add_argument("--shape", action="append", default=[],
                   help="a shape id, or text in its name task/model/data (repeatable; default: every shape)")
    p.add_argument("--task", action="append", default=[], help="only shapes of this task (repeatable)")
    p.add_argument("--one-per-pair", action="store_true",
                   help="one shape per (task, model, data): the one with the most runs (its siblings are priced "
                        "from it, scaled by their batch counts)")
    p.add_argument("--budget-s", type=float,
                   help="start no shape after this many seconds; the biggest data first (run again to go on)")
    p.add_argument("--batches", type=int, default=3, help="training and evaluation batches timed per shape")
    p.add_argument("--device", default="auto", help="auto (cuda when available), cpu, cuda, cuda:1")
    p.add_argument("--redo", action="store_true", help="rehearse again shapes with a record on this device type")
    p.add_argument("--list", action="store_true", help="list the shapes and whether they have a record, then exit")
    p.add_argument("--results", type=Path, help="results folder (default: the project's)")
    p.set_defaults(func=_cmd)


def pair_of(shape: dict) -> str:
    """A shape's (task, model, data): its siblings differ only in batch sizes, neighbours or sequence lengths."""
    return shape_name(shape)


def _selected(all_shapes: list[Shape], args) -> list[Shape]:
    out = all_shapes
    if args.task:
        out = [s for s in out if s.shape["task"] in args.task]
    if args.shape:
        out = [s for s in out if any(x == s.id or x in s.name for x in args.shape)]
    if args.one_per_pair:
        best: dict[str, Shape] = {}
        for s in out:
            if s.name not in best or len(s.runs) > len(best[s.name].runs):
                best[s.name] = s
        out = list(best.values())
    if args.budget_s:
        out = sorted(out, key=lambda s: -_data_size(s.shape))
    return out


def _data_size(shape: dict) -> int:
    """Edges of a shape's paper-size graph (0 for other data): what orders a budgeted rehearsal."""
    from timerepro.data.standins import PAPER_GRAPHS

    return PAPER_GRAPHS.get(shape.get("dataset"), {}).get("edges", 0)


def _cmd(args) -> int:
    from timerepro.paths import results_dir
    from timerepro.registry import load
    from timerepro.runs import pick_device

    results = args.results or results_dir()
    chosen = _selected(shapes(load(), args.scale, paper=args.paper), args)
    have = project_records(args.results)
    dev_type = pick_device(args.device).split(":")[0]
    if args.list:
        for s in chosen:
            rec = have.get(s.id)
            state = "-" if rec is None else f"{rec['status']} on {rec['device_type']}"
            print(f"{s.id}  {len(s.runs):5d} runs  {state:16s} {s.name}  {json.dumps(s.shape, default=str)}")
        print(f"{len(chosen)} shapes, {sum(len(s.runs) for s in chosen)} runs")
        return 0
    failed = 0
    t_all = time.perf_counter()
    for i, s in enumerate(chosen, 1):
        rec = have.get(s.id)
        if rec is not None and rec["device_type"] == dev_type and rec["status"] == "ok" and not args.redo:
            continue
        if args.budget_s and time.perf_counter() - t_all > args.budget_s:
            print(f"budget of {args.budget_s:.0f} s spent: {len(chosen) - i + 1} shapes left (run again to go on)",
                  file=sys.stderr)
            break
        rec = rehearse(s, batches=args.batches, device=args.device)
        atomic_write_json(record_path(results, s.id), rec)
        failed += rec["status"] != "ok"
        what = (f"train {rec['train_batch_s']:.3f} s/batch x {rec['train_batches_per_epoch']}"
                if rec.get("kind") == "batches" else f"{rec.get('kind')} {rec.get('epoch_s', rec.get('once_s', 0)):.1f} s")
        print(f"[{i}/{len(chosen)}] {s.id} {s.name}: {rec['status']} in {rec['wall_s']:.1f} s, {what}, "
              f"peak {rec['peak_rss_mb']:.0f} MB" + (f", GPU {rec['peak_gpu_mb']:.0f} MB" if rec['peak_gpu_mb'] else "")
              + (f"; {rec['error'][:200]}" if rec["status"] != "ok" else ""), file=sys.stderr, flush=True)
    print(f"rehearsed {len(chosen)} shapes in {time.perf_counter() - t_all:.0f} s; {failed} failed", file=sys.stderr)
    return 1 if failed else 0
