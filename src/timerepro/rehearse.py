"""Paper scale rehearsed before it is paid for: every distinct job shape runs a few batches on its paper-size stand-in.

A shape is what sets a run's cost per batch: task, model, data, and the parameters in COST_KEYS (batch sizes,
neighbours, sequence lengths, as its model's `variant` sets them); of a shape's runs the widest (WIDTH_KEYS) is
rehearsed, so its figures bound the others'. The rehearsal runs the task's own `run(config, ctx)` as `timerepro
run-job` does, on the dataset's paper-size stand-in (`standins.PAPER_GRAPHS` ...), with one epoch (and one backbone
epoch), and bounds it:
* a training loop through `ctx.progress(...)` (every task with batches: link prediction, node classification and its
  backbone, point processes, forecasting, next item, event classification) runs `batches` batches at the END of the
  epoch (the ones before its last, possibly partial, batch; the earlier items are passed over without running the
  loop's body), each timed (wall and CPU seconds), the first a warm-up left out of the median, and says how many an
  epoch has. The end, because a graph stream's batches come in time order: the first ones see almost no history,
  and the models that pack their history (GROWS_WITH_HISTORY) cost several times more per batch late in the epoch;
  records timed at the start (before `train_at` existed) are a lower bound for those models (`early_timed`);
* a loop that does not go through `ctx` (evaluation passes; node classification's embedding of every edge: BOUNDED)
  runs its first `batches` batches on its function's first pass (the first apart: warm-up) and one batch on each
  later pass, timed, and says how many the full pass has and whether it is paid every epoch or once (a pass whose
  one batch takes minutes, the point processes' thinning: PART_ROWS rows of its first batch, scaled up);
* a task with neither runs one whole epoch (`kind: epoch`): its history gives seconds per epoch.
The shapes of one dataset run one after another in forks of one process, which prepared and loaded the stand-in
once (`SharedData`): that time, measured once, is added to each shape's set-up (`setup_shared_s`), as a job pays it.
The record, results/rehearsal/<shape id>.json: set-up seconds, seconds per training batch and per batch of each
pass, batches per epoch and per pass, the rest that ran whole (`rest_s`: `rest_epoch_s` in each epoch,
`rest_once_s` once), peak host and device memory, the device, the load average before and after (a loaded CPU
inflates every figure: they stay upper bounds), or the error when the shape fails at this size.
`timerepro estimate --scale paper` and `timerepro resources --scale paper` read these records.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import importlib
import inspect
import json
import math
import os
import platform
import signal
import statistics
import sys
import tempfile
import resource
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from timerepro.io import atomic_write_json, read_json
from timerepro.memory import PeakMemory

# what changes a run's cost per batch besides task, model and data
COST_KEYS = ("batch_size", "eval_batch_size", "num_neighbors", "max_input_sequence_length", "sequence_length",
             "seq_len", "pred_len", "walk_length", "time_span", "num_exp",
             "input_mode")  # N-TIDIGITS18 raw: a step per event (up to ~14 k); binned: one per 100 events
BATCH_KEYS = ("batch_size", "eval_batch_size")  # a sibling of another batch size is priced by scaling its batch counts
# widths: a shape's rehearsed run is its widest (the product of these), an upper bound for the others
WIDTH_KEYS = ("d_model", "d_ch", "hidden", "memory_dim", "embedding_dim", "d_T", "num_layers", "e_layers", "d_ff",
              "layers", "d_inner", "num_heads", "n_heads", "d_state", "num_blocks")
DATA_KEYS = ("dataset", "series", "datasets")
# a series cut into windows (`data.series.n_windows`): a longer input or horizon leaves fewer windows, so a
# sibling that ran a larger value ran fewer batches and bounds only its own value (forecasting's pred_len 720
# has 8 % (training) to 22 % (validation, test) fewer windows than 96 on ETTh)
WINDOW_KEYS = ("seq_len", "pred_len")
HISTORY_TABLE = "sequence_length_by_dataset"  # acts only through `overrides.resolve`, on its model's knob (a COST_KEY)
# outputs beside the metrics that some runs also make: not rehearsed (their cost is not priced)
EXTRAS_OFF = {"record_attention": 0, "case_study_edges": 0, "noise_ratios": []}
REHEARSAL_DIR = "rehearsal"
COMMITTED_DIR = "benchmarks/rehearsals"  # records of lent machines, kept with the code (`committed_dir`)
FORMAT = "rehearsal/1"
# models whose cost per batch grows with the history they read (DyGFormer's family and DyG-Mamba pack the real tokens,
# `dygformer.pack_tokens`, TCL its real neighbours, `tcl.py`; TGAT embeds each distinct real neighbour of its hops;
# CAWN walks through the visible history; records: evaluation batches up to 12x a first training batch):
# their training batches are timed late
GROWS_WITH_HISTORY = ("dygformer", "dygdecoder", "dygformer_separate", "dyg_mamba", "cawn", "tcl", "tgat")
TRAIN_AT = "end"  # where in the epoch `_bounded` times its batches (the record's `train_at`)


def shape_of(config: dict) -> dict:
    """The cost-setting part of a config (see the module docstring), with its model's `variant` set over it, as the
    run runs it (`tasks.effective.with_variant`: vanilla Mamba's `time_span` false, not the declared default true).
    The tables that only fill unset keys (dataset defaults, history lengths) are in the shape as their entries."""
    from timerepro.tasks.effective import with_variant

    config = with_variant(config)
    shape = {"task": config["task"], "model": config.get("model")}
    for k in DATA_KEYS:
        if k in config:
            shape[k] = config[k]
    for k in COST_KEYS:
        if config.get(k) is not None:
            shape[k] = config[k]
    dataset = config.get("dataset")
    for k, v in config.items():  # per-dataset defaults of the shape's dataset (DyGFormer's sequence lengths)
        if isinstance(v, dict) and dataset in v and k in ("dataset_defaults", HISTORY_TABLE):
            shape[f"{k}[{dataset}]"] = v[dataset]
    return shape


def effective_shape(config: dict) -> dict:
    """`shape_of` the config the task runs with (`tasks.registry.effective_config`: dataset defaults filled, a history
    length written onto its model's knob by `overrides.resolve`), without the history length where the knob holds
    it: the table's entry always (read nowhere else; a model without a knob reads no history), `sequence_length`
    where the knob holds its value (a COST_KEY of this shape). What bounds compare (a sibling's, a pair's costliest)."""
    from timerepro.models.graph.overrides import KNOB
    from timerepro.tasks.registry import effective_config

    shape = shape_of(effective_config(config))
    knob = KNOB.get(shape.get("model"))
    held = knob is not None and "sequence_length" in shape and shape.get(knob) == shape["sequence_length"]
    return {k: v for k, v in shape.items()
            if not (k.startswith(f"{HISTORY_TABLE}[") or (held and k == "sequence_length"))}


def cost_size(shape: dict) -> float:
    """The sum of the logs of a shape's cost numbers, batch sizes aside: what orders a pair's shapes by cost."""
    return sum(math.log(max(float(v), 1.0)) for k, v in shape.items()
               if k in COST_KEYS and k not in BATCH_KEYS and isinstance(v, (int, float)) and not isinstance(v, bool))


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
        if "backbone_epochs" in config:  # node classification trains its backbone in the run
            config["backbone_epochs"] = 1
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
    """What a bounded run measured: its training batches (timed) and its bounded passes (`BOUNDED`)."""

    batches: int
    part_rows: int = 16  # rows of its first batch a `Bounded.part` pass runs (PART_ROWS, `--part-rows`)
    train: list[float] = field(default_factory=list)  # wall seconds of each timed training batch
    train_cpu: list[float] = field(default_factory=list)  # CPU seconds (all threads) of each
    train_per_epoch: int | None = None
    first_batch_at: float | None = None  # perf_counter when the first training batch or pass started
    passes: list[dict] = field(default_factory=list)  # per bounded pass: name, full batches, timed, seconds, in_epoch
    history: list[dict] = field(default_factory=list)
    in_fit: bool = False  # inside the epoch loop of train.fit: a pass now is paid every epoch
    backbone: "Timings | None" = None  # a nested run's (node classification's link-prediction backbone)

    def started(self, at: float) -> None:
        if self.first_batch_at is None:
            self.first_batch_at = at


_END = object()  # an exhausted iterator's marker in `_bounded`


def early_timed(rec: dict) -> bool:
    """A record whose training batches were timed at the epoch's start on a model whose cost grows with history:
    its training figures are a lower bound (rehearse it again)."""
    return (rec.get("kind") == "batches" and rec.get("train_at") != TRAIN_AT
            and rec.get("shape", {}).get("model") in GROWS_WITH_HISTORY)


class RehearsalContext:
    """A RunContext for a bounded run: training loops through `progress` stop after `batches` batches (timed);
    nothing is written (no run folder: the checkpoint stays in memory, for a nested run's caller to read)."""

    def __init__(self, config: dict, directory: Path, device: str, timings: Timings):
        self.config, self.run_id, self.dir, self.device = config, config["run_id"], directory, device
        self.show_progress, self.fingerprint, self.timings = False, None, timings
        self.effective = config
        self.memory = PeakMemory()
        self._checkpoint = None

    def peak_memory_mb(self) -> float:
        return self.memory.peak_mb()

    checkpoint_path = property(lambda self: self.dir / "checkpoint.pt")

    def save_checkpoint(self, state: dict) -> None:
        self._checkpoint = state

    def load_checkpoint(self):
        return self._checkpoint

    def nested(self, config: dict, directory: Path) -> "RehearsalContext":
        """A nested run's context (node classification's backbone): its batches timed apart (`Timings.backbone`)."""
        self.timings.backbone = Timings(self.timings.batches, self.timings.part_rows)
        sub = RehearsalContext(config, directory, self.device, self.timings.backbone)
        sub.memory = self.memory
        return sub

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
            return self._epochs(iterable)
        return self._bounded(iterable, total)

    def _epochs(self, iterable):
        self.timings.in_fit = True
        try:
            yield from iterable
        finally:
            self.timings.in_fit = False

    def _bounded(self, iterable, total):
        """The `batches` items before the epoch's last (a full batch, late history: `TRAIN_AT`), each timed; the
        items before them passed over (drawn, their loop body not run)."""
        t = self.timings
        t.train_per_epoch = total if total is not None else len(iterable)
        t.started(time.perf_counter())
        it = iter(iterable)
        for _ in range(max(t.train_per_epoch - 1 - t.batches, 0)):
            if next(it, _END) is _END:
                return
        for i in range(t.batches):
            start, cpu = time.perf_counter(), time.process_time()
            item = next(it, _END)
            if item is _END:
                return
            yield item
            t.train.append(time.perf_counter() - start)
            t.train_cpu.append(time.process_time() - cpu)


@dataclass(frozen=True)
class Bounded:
    """A loop over batches that does not go through `ctx.progress` (an evaluation pass, node classification's
    embedding of every edge): `function` of `module`, where the task's code looks it up, run by the rehearsal on
    the first batches of `items` (argument names; cut alike), `batch` its batch size from the bound arguments.
    With `part`, every pass runs PART_ROWS rows of its first batch instead (`_bounded_pass`)."""

    module: str
    function: str
    items: tuple[str, ...]
    batch: Callable[[dict], int]
    cut: Callable[[Any, int], Any] = lambda items, n: items[:n]  # the first n of `items`
    pad: Callable[[Any, int], Any] | None = None  # the output of a full pass of n items from a cut pass's
    nested: bool = False  # it runs in the nested run (node classification's backbone)
    part: Callable[[Any, int, int], Any] | None = None  # (items, batch size, rows) -> `rows` of the first batch,
    # the costliest of it among them: for a pass whose one batch takes minutes on a CPU (the point processes' thinning)
    cut_args: Callable[[dict, int], dict] | None = None  # (arguments, n) -> them with the first n items, where
    # another argument follows the items (next item's candidates: one row per target of the sequences kept)


PART_ROWS = 16  # rows of a batch a `Bounded.part` pass runs; its seconds x the batch's rows / these: an upper bound
# (fewer with `--part-rows` where 16 rows of one batch take minutes: FullyNN's thinning on StackOverflow; the bound
# is looser, the batch's fixed part counted batch_rows / rows times)


def _tpp_part(seqs, size: int, rows: int):
    """`rows` sequences of the first batch of `size`: its longest (a batch is padded to its longest sequence, every
    row computed at that length: the point processes' thinning) and the first rows - 1 others."""
    import numpy as np

    from timerepro.data.tpp import EventSequences

    m = min(size, len(seqs))
    longest = int(np.argmax(seqs.lengths[:m]))
    keep = np.array(sorted([i for i in range(m) if i != longest][: rows - 1] + [longest]))
    starts, ends = seqs.seq_ptr[keep], seqs.seq_ptr[keep + 1]
    take = np.concatenate([np.arange(a, b) for a, b in zip(starts, ends)])  # the kept sequences' events, in order
    ptr = np.concatenate([[0], np.cumsum(ends - starts)]).astype(seqs.seq_ptr.dtype)
    return EventSequences(ptr, seqs.time_since_start[take], seqs.time_since_last_event[take], seqs.type_event[take],
                          seqs.seq_idx[keep], None if seqs.label is None else seqs.label[keep])


def _pad_rows(out, n: int):
    """(k, d) embeddings of a cut pass -> (n, d): zeros for the rows not embedded (its metrics are dropped)."""
    import torch

    return torch.cat([out, out.new_zeros((n - len(out), *out.shape[1:]))]) if len(out) < n else out


def _forecast_batch(a: dict) -> int:  # forecasting.evaluate's own rule: at most max_elements values per batch
    return max(1, min(int(a["batch_size"]), int(a["max_elements"]) // a["y"][0].numel()))


_LP_EVALUATE = Bounded("timerepro.tasks.link_prediction.loop", "evaluate", ("idx",), lambda a: int(a["batch_size"]))
# the final test passes: `evaluate_pass` (a part's positives kept for its passes under the other samplers)
_LP_FINAL = Bounded(_LP_EVALUATE.module, "evaluate_pass", ("idx",), _LP_EVALUATE.batch)
def _next_item_cut(a: dict, n: int) -> dict:
    """next_item.evaluate's arguments for its first n test sequences: their candidate rows, one per target (a
    sequence has one target, `eval_positions` last, or one per step, all), in test order."""
    rows = sum(len(s["targets"]) for s in a["test"][:n])
    return {**a, "test": a["test"][:n], "candidates": a["candidates"][:rows]}


# task -> its bounded passes
BOUNDED = {
    "link_prediction": (_LP_EVALUATE, _LP_FINAL),
    "node_classification": (Bounded(_LP_EVALUATE.module, "evaluate", ("idx",), _LP_EVALUATE.batch, nested=True),
                            Bounded(_LP_FINAL.module, _LP_FINAL.function, ("idx",), _LP_FINAL.batch, nested=True),
                            Bounded("timerepro.tasks.node_classification", "source_embeddings", ("idx",),
                                    lambda a: int(a["batch_size"]), pad=_pad_rows)),
    "forecasting": (Bounded("timerepro.tasks.forecasting", "evaluate", ("x", "y"), _forecast_batch),),
    # one batch of AttNHP's thinning re-runs its encoder at 506 sampled times after every event: minutes on a CPU
    "temporal_point_process": (Bounded("timerepro.tasks.temporal_point_process", "evaluate", ("seqs",),
                                       lambda a: int(a["batch_size"]), part=_tpp_part),),
    # the test accuracy after every epoch: Event-MNIST's 10,000 sequences (N-TIDIGITS18's up to 14 k events) whole
    "event_classification": (Bounded("timerepro.tasks.event_classification", "accuracy", ("seqs", "labels"),
                                     lambda a: int(a["batch_size"])),),
    # every epoch: every test sequence ranked, then every training sequence's held-out item (Last.fm 1K: TimeLSTM's
    # step loop over 992 sequences of up to 199 items ran past 480 s)
    "next_item": (Bounded("timerepro.tasks.next_item", "evaluate", ("test",), lambda a: int(a["bs"]),
                          cut_args=_next_item_cut),),
}


def _bounded_pass(b: Bounded, original: Callable, timings: Timings) -> Callable:
    """`original`, run on its first batches and timed. A function's first pass runs `timings.batches` batches,
    the first of them apart (warm-up: allocation, kernel selection), each later pass one batch; every pass
    records its full number of batches, so the estimate prices it whole. A `part` pass runs PART_ROWS rows of its
    first batch (the function's first pass: once more before, a warm-up) and records them (`rows` of `batch_rows`):
    a batch costs c + rows x r at its padded length, so seconds x batch_rows / rows bound it."""
    signature = inspect.signature(original)

    def bounded(*args, **kwargs):
        target = timings.backbone if b.nested and timings.backbone is not None else timings
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        a = dict(bound.arguments)
        n = len(a[b.items[0]])
        size = b.batch(a)
        full = math.ceil(n / size)
        if full == 0:
            return original(**a)
        first = not any(p["name"] == b.function for p in target.passes)

        def call(cut: Callable[[Any], Any]):
            start = time.perf_counter()
            target.started(start)
            return original(**{**a, **{name: cut(a[name]) for name in b.items}}), time.perf_counter() - start

        def call_first(k: int):  # the first k items (`Bounded.cut`, or `cut_args` of every argument)
            if b.cut_args is None:
                return call(lambda items: b.cut(items, k))
            start = time.perf_counter()
            target.started(start)
            return original(**b.cut_args(a, k)), time.perf_counter() - start

        warm, rows = 0.0, {}
        if b.part is not None:  # PART_ROWS rows of the first batch, a warm-up of them first on the first pass
            rows = {"rows": min(target.part_rows, size, n), "batch_rows": min(size, n)}

            def part(items):
                return b.part(items, size, rows["rows"])

            if first:
                _, warm = call(part)
            want = 1
            out, seconds = call(part)
        else:
            want = min(full, target.batches if first else 1)
            if want > 1:  # warm-up batch apart
                _, warm = call_first(size)
                want -= 1
            out, seconds = call_first(want * size)
        target.passes.append({"name": b.function, "batches": full, "timed": want, "seconds": seconds,
                              "warmup_s": warm, "in_epoch": target.in_fit, **rows})
        return b.pad(out, n) if b.pad else out

    return bounded


@contextlib.contextmanager
def bounded_passes(task: str, timings: Timings):
    """The task's passes of BOUNDED on their first batches, timed, for the duration of the block."""
    patched = []
    try:
        for b in BOUNDED.get(task, ()):
            module = importlib.import_module(b.module)
            original = getattr(module, b.function)
            setattr(module, b.function, _bounded_pass(b, original, timings))
            patched.append((module, b.function, original))
        yield
    finally:
        for module, name, original in reversed(patched):
            setattr(module, name, original)


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


def _timed_s(t: Timings) -> float:
    """Seconds of what `t` timed (batches, passes with their warm-ups), a nested run's included."""
    own = sum(t.train) + sum(p["seconds"] + p["warmup_s"] for p in t.passes)
    return own + (_timed_s(t.backbone) if t.backbone is not None else 0.0)


def _epoch_s(row: dict) -> float:
    """An epoch's wall seconds from its history row: training and validation."""
    return float(row.get("epoch_time_s") or 0) + float(row.get("val_time_s") or 0)


def _pass_per_batch(p: dict) -> float:
    """Seconds per whole batch of a pass: its timed seconds per batch, x batch_rows / rows for a partial batch."""
    return p["seconds"] / max(p["timed"], 1) * p.get("batch_rows", 1) / p.get("rows", 1)


def _figures(t: Timings, strategies_key: str | None, config: dict) -> dict:
    """Per-batch figures of one run level (the run, or its nested backbone)."""
    out: dict = {}
    if t.train:
        out.update(train_batch_s=_per_batch(t.train), train_batch_cpu_s=_per_batch(t.train_cpu),
                   train_batches_timed=len(t.train), train_batches_per_epoch=t.train_per_epoch, train_at=TRAIN_AT)
    if t.passes:
        passes = [{**p, "per_batch_s": _pass_per_batch(p)} for p in t.passes]
        timed = sum(p["timed"] for p in passes)
        out.update(eval_passes=passes, eval_batch_s=sum(p["per_batch_s"] * p["timed"] for p in passes) / max(timed, 1),
                   eval_batches_per_epoch=sum(p["batches"] for p in passes if p["in_epoch"]),
                   eval_batches_final=sum(p["batches"] for p in passes if not p["in_epoch"]))
    if strategies_key:  # link prediction's final passes grow with its negative-sampling strategies
        out.update(eval_strategies=len(config.get(strategies_key) or [None]), strategies_key=strategies_key)
    if t.history:  # the epoch's wall time (training + validation) beyond what was timed: paid every epoch
        row = t.history[0]
        epoch = _epoch_s(row)
        timed = sum(t.train) + sum(p["seconds"] + p["warmup_s"] for p in t.passes if p["in_epoch"])
        out["rest_epoch_s"] = round(max(epoch - timed, 0.0), 3)
    return out


def rehearse(shape: Shape, *, batches: int = 3, device: str = "auto", standin: str = "paper",
             shared: dict | None = None, part_rows: int = PART_ROWS) -> dict:
    """Run `shape`'s widest config, bounded, in this process; return its rehearsal record. `shared`: the set-up
    measured once for the shape's data in this process ({"seconds", "what"}), added to the shape's set-up."""
    import torch

    from timerepro.runs import pick_device
    from timerepro.tasks.registry import effective_config, get_task
    from timerepro.train import seed_everything

    dev = pick_device(device)
    config = shape.config(standin)
    timings = Timings(batches=batches, part_rows=part_rows)
    record = {**_record_head(shape, batches, dev), "run_id": config["run_id"], "config": config,
              "torch": torch.__version__, "load_average": [_load_average()]}
    runner = get_task(config["task"])
    children = _children_peak_mb()
    memory = PeakMemory().start(dev)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rehearsal-") as tmp:
        ctx = RehearsalContext(config, Path(tmp), dev, timings)
        ctx.memory = memory
        try:
            seed_everything(int(config.get("seed", 0)))
            ctx.effective = effective_config(config)  # what the task runs with, as runs.py resolves it
            with bounded_passes(config["task"], timings):
                runner(ctx.effective, ctx)
            record["status"] = "ok"
        except (Exception, MemoryError) as e:  # what fails at this size is the rehearsal's finding
            record.update(status="failed", error=f"{type(e).__name__}: {e}"[:2000],
                          traceback=traceback.format_exc()[-4000:])
        finally:
            memory.stop()
    wall = time.perf_counter() - t0
    record["load_average"].append(_load_average())
    shared_s = float(shared["seconds"]) if shared else 0.0
    if shared:
        record.update(setup_shared_s=round(shared_s, 3), setup_shared=shared["what"])
    record["wall_s"] = round(wall + shared_s, 3)
    record["peak_rss_mb"] = round(memory.peak_mb(), 1)
    child = _children_peak_mb()
    if child > children:  # a process the run spawned and waited for (sequence_cost measures in one): the job holds
        # both, the run's own memory while its child peaks
        record.update(peak_child_rss_mb=round(child, 1), peak_rss_mb=round(memory.peak_mb() + child, 1))
    gpu = memory.peak_gpu_mb()
    record["peak_gpu_mb"] = None if gpu is None else round(gpu, 1)
    levels = [t for t in (timings, timings.backbone) if t is not None]
    starts = [t.first_batch_at for t in levels if t.first_batch_at is not None]
    strategies = {"link_prediction": "eval_negatives"}.get(config["task"])
    if starts:
        setup = min(starts) - t0
        record.update(kind="batches", setup_s=round(setup + shared_s, 3), trains=bool(timings.train),
                      **_figures(timings, strategies, ctx.effective))
        if timings.backbone is not None:
            record["backbone"] = _figures(timings.backbone, "backbone_eval_negatives", ctx.effective)
        # what ran whole: metrics, samplers, un-bounded evaluation; of it, each level's epoch part (`rest_epoch_s`)
        # is paid every epoch, the rest once
        record["rest_s"] = round(max(wall - setup - _timed_s(timings), 0.0), 3)
        every_epoch = record.get("rest_epoch_s", 0.0) + record.get("backbone", {}).get("rest_epoch_s", 0.0)
        record["rest_once_s"] = round(max(record["rest_s"] - every_epoch, 0.0), 3)
    elif timings.history:  # a whole epoch: its history says what an epoch costs
        row = timings.history[0]
        epoch = _epoch_s(row)
        record.update(kind="epoch", epoch_s=round(epoch, 3), once_s=round(max(wall - epoch, 0.0) + shared_s, 3))
    else:  # no epochs (statistics, cost probes): the run is its cost
        record.update(kind="run", once_s=round(wall + shared_s, 3))
    return record


def _children_peak_mb() -> float:
    """The largest peak resident set of this process's waited-for children so far (0 in a fresh fork)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0  # Linux: kilobytes


def _load_average() -> float | None:
    """The 1-minute load average (a loaded machine inflates the seconds a rehearsal measures)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


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


# ---------------------------------------------------------------- the shapes of one dataset in one process

LOADERS = {"ctdg": "timerepro.data.ctdg", "tpp": "timerepro.data.tpp", "series": "timerepro.data.series"}  # family ->
# the module whose load_processed reads its processed folder


def _prepare() -> Callable:
    """`timerepro.data.prepare.prepare` as the module holds it now (remembered while `SharedData` runs)."""
    return importlib.import_module("timerepro.data.prepare").prepare


def data_key(shape: dict) -> str | None:
    """The one dataset a shape reads (None: several, or none)."""
    data = shape.get("dataset") or shape.get("series")
    return data if isinstance(data, str) else None


class SharedData:
    """`prepare` and the families' `load_processed`, remembered in this process while the block runs: the shapes of
    one dataset, each rehearsed in a fork of this process (`rehearse_in_fork`), find their data prepared and loaded.
    `load(dataset)` does that once and says how long it took: the shared part of each shape's set-up."""

    def __init__(self, standin: str):
        self.standin, self.memo, self._patched = standin, {}, []

    def __enter__(self) -> "SharedData":
        originals = [_prepare()] + [importlib.import_module(m).load_processed for m in LOADERS.values()]
        for original in originals:
            remembered = self._remember(original)
            for module in [m for name, m in list(sys.modules.items()) if name.startswith("timerepro")]:
                for name, value in list(vars(module).items()):
                    if value is original:  # the defining module and every module that imported the name
                        setattr(module, name, remembered)
                        self._patched.append((module, name, original))
        return self

    def __exit__(self, *exc) -> None:
        for module, name, original in reversed(self._patched):
            setattr(module, name, original)
        self.forget()

    def _remember(self, fn: Callable) -> Callable:
        def remembered(*args, **kwargs):
            if fn.__name__ == "prepare":  # the folder depends on the dataset and the stand-in only
                key = (fn.__module__, fn.__name__, args[0] if args else kwargs["name"], kwargs.get("standin"))
            else:
                key = (fn.__module__, fn.__name__, str(args[0]), args[1:], tuple(sorted(kwargs.items())))
            if key not in self.memo:
                self.memo[key] = fn(*args, **kwargs)
            return self.memo[key]

        return remembered

    def load(self, dataset: str) -> dict | None:
        """Prepare and load `dataset`'s stand-in here (the forks inherit it); its seconds and what they cover. None for
        a dataset the task generates itself (not in the lock)."""
        from timerepro.data.lock import load_lock

        lock = load_lock()
        if dataset not in lock.datasets:
            return None
        family = lock.get(dataset).family
        t0 = time.perf_counter()
        folder = _prepare()(dataset, standin=self.standin, progress=False)
        if family in LOADERS:
            importlib.import_module(LOADERS[family]).load_processed(folder)
        what = f"prepare{' + load_processed' if family in LOADERS else ''} of {dataset}'s {self.standin} stand-in"
        return {"seconds": time.perf_counter() - t0,
                "what": f"{what}, measured once for the shapes of {dataset} rehearsed in one process"}

    def forget(self) -> None:
        self.memo.clear()
        gc.collect()


def _record_head(shape: Shape, batches: int, device: str) -> dict:
    """What every rehearsal record of `shape` starts with, measured or failed."""
    return {"format": FORMAT, "shape_id": shape.id, "shape": shape.shape, "name": shape.name, "runs": len(shape.runs),
            "batches": batches, "device": device_name(device), "device_type": device.split(":")[0],
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _failed(shape: Shape, batches: int, device: str, error: str) -> dict:
    return {**_record_head(shape, batches, device), "status": "failed", "error": error,
            "wall_s": None, "peak_rss_mb": None, "peak_gpu_mb": None}


def _kill_group(pid: int) -> None:
    """SIGKILL the fork `pid` and every process of its group (what it started and did not wait for yet)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        os.kill(pid, signal.SIGKILL)


def rehearse_in_fork(shape: Shape, *, timeout_s: float | None = None, **kwargs) -> dict | None:
    """`rehearse(shape, **kwargs)` in a fork of this process (its memory, caches and peak its own; the data of
    `SharedData` inherited); None when it ran past `timeout_s` (killed, nothing recorded: a later call tries again).
    A fork that dies (the kernel's out-of-memory killer) gives a failed record. Without fork: here."""
    if not hasattr(os, "fork"):
        return rehearse(shape, **kwargs)
    fd, out = tempfile.mkstemp(prefix="rehearsal-", suffix=".json")
    os.close(fd)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller
        code = 1
        os.setpgid(0, 0)  # a group of its own: a timeout kills the processes it started too (sequence_cost's step)
        try:
            atomic_write_json(out, rehearse(shape, **kwargs), durable=False)
            code = 0
        except BaseException:  # noqa: BLE001 (reported here, judged by the parent through the record's absence)
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    with contextlib.suppress(OSError):  # the same from this side (whichever runs first)
        os.setpgid(pid, pid)
    deadline = None if not timeout_s else time.monotonic() + timeout_s
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if deadline is not None and time.monotonic() > deadline:
                _kill_group(pid)
                os.waitpid(pid, 0)
                return None
            time.sleep(0.2)
        code = os.waitstatus_to_exitcode(status)
        rec = read_json(Path(out)) if code == 0 and os.path.getsize(out) else None
    except BaseException:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            _kill_group(pid)
            os.waitpid(pid, 0)
        raise
    finally:
        Path(out).unlink(missing_ok=True)
    if rec is None:
        from timerepro.runs import pick_device

        killed = " (killed: out of memory?)" if code == -signal.SIGKILL else ""
        rec = _failed(shape, kwargs.get("batches", 3), pick_device(kwargs.get("device", "auto")),
                      f"the rehearsal's process exited with status {code}{killed}")
    return rec


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
                   help="one shape per (task, model, data): the costliest (largest sequence lengths, neighbours), "
                        "which bounds its siblings; the estimate prices them from it")
    p.add_argument("--budget-s", type=float,
                   help="start no shape after this many seconds; the biggest data first (run again to go on)")
    p.add_argument("--smallest-first", action="store_true",
                   help="the smallest data first (a CPU with little time: the most shapes for it)")
    p.add_argument("--shape-timeout-s", type=float,
                   help="stop a shape after this many seconds, recording nothing (run again to try it again)")
    p.add_argument("--batches", type=int, default=3,
                   help="training batches timed per shape, the first a warm-up; a function's first evaluation pass "
                        "runs as many, each later pass one")
    p.add_argument("--part-rows", type=_positive, default=PART_ROWS,
                   help=f"rows of its first batch a point-process evaluation pass runs, scaled up to the batch "
                        f"(default {PART_ROWS}; fewer where those take minutes: a looser upper bound)")
    p.add_argument("--device", default="auto", help="auto (cuda when available), cpu, cuda, cuda:1")
    p.add_argument("--standin", default="paper", help="the stand-in size rehearsed on (default: paper; smoke in tests)")
    p.add_argument("--redo", action="store_true", help="rehearse again shapes with a record on this device type")
    p.add_argument("--missing", action="store_true",
                   help="only shapes without a successful record on any device (a CPU leaves the GPU's alone)")
    p.add_argument("--gpu-jobs", action="store_true",
                   help="only shapes whose jobs request a GPU at this scale (with --device cuda and no --missing: "
                        "those priced from a CPU record or none, what a lent GPU should take)")
    p.add_argument("--list", action="store_true", help="list the shapes and whether they have a record, then exit")
    p.add_argument("--results", type=Path, help="results folder (default: the project's)")
    p.set_defaults(func=_cmd)


def _positive(text: str) -> int:
    """An argument that must be a whole number >= 1 (argparse's type: a clear error otherwise)."""
    import argparse

    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def pair_of(shape: dict) -> str:
    """A shape's (task, model, data): its siblings differ only in batch sizes, neighbours or sequence lengths."""
    return shape_name(shape)


def _cost_rank(s: Shape) -> tuple:
    """Of a pair's shapes, the costliest first: the numbers of the cost keys it runs with (`effective_shape`: a
    history length on its knob), then its runs."""
    return cost_size(effective_shape(s.config())), len(s.runs)


def _selected(all_shapes: list[Shape], args) -> list[Shape]:
    out = all_shapes
    if args.task:
        out = [s for s in out if s.shape["task"] in args.task]
    if args.shape:
        out = [s for s in out if any(x == s.id or x in s.name for x in args.shape)]
    if getattr(args, "gpu_jobs", False):
        out = [s for s in out if any(r.resources.get("gpu") for r in s.runs)]
    if args.one_per_pair:
        best: dict[str, Shape] = {}
        for s in out:
            if s.name not in best or _cost_rank(s) > _cost_rank(best[s.name]):
                best[s.name] = s
        out = list(best.values())
    if getattr(args, "smallest_first", False):
        out = sorted(out, key=lambda s: _data_size(s.shape))
    elif args.budget_s:
        out = sorted(out, key=lambda s: -_data_size(s.shape))
    return out


def _data_size(shape: dict) -> int:
    """Edges of a shape's paper-size graph (0 for other data): what orders a budgeted rehearsal."""
    from timerepro.data.standins import PAPER_GRAPHS

    return PAPER_GRAPHS.get(shape.get("dataset"), {}).get("edges", 0)


def _groups(chosen: list[Shape]) -> list[tuple[str | None, list[Shape]]]:
    """The shapes by the one dataset they read (in the order of their first shape); shapes of several or none alone."""
    out: dict = {}
    for s in chosen:
        key = data_key(s.shape)
        out.setdefault(key if key is not None else ("alone", s.id), []).append(s)
    return [(k if isinstance(k, str) else None, v) for k, v in out.items()]


def _summary(rec: dict) -> str:
    if rec["status"] != "ok":
        return f"failed: {rec.get('error', '?')[:200]}"
    if rec.get("kind") == "batches" and rec.get("train_batch_s") is not None:
        what = f"train {rec['train_batch_s']:.3f} s/batch x {rec['train_batches_per_epoch']}"
    elif rec.get("kind") == "batches":
        what = f"eval {rec.get('eval_batch_s', 0):.3f} s/batch"
    else:
        what = f"{rec.get('kind')} {rec.get('epoch_s', rec.get('once_s', 0)):.1f} s"
    return (f"ok in {rec['wall_s']:.1f} s (set-up {rec.get('setup_s', 0):.1f} s), {what}, "
            f"peak {rec['peak_rss_mb']:.0f} MB"
            + (f", GPU {rec['peak_gpu_mb']:.0f} MB" if rec.get("peak_gpu_mb") else ""))


def _cmd(args) -> int:
    from timerepro.paths import results_dir
    from timerepro.registry import load
    from timerepro.runs import load_once, pick_device

    results = args.results or results_dir()
    chosen = _selected(shapes(load(), args.scale, paper=args.paper), args)
    have = load_records(results, committed_dir())  # what was measured here and on lent machines
    dev_type = pick_device(args.device).split(":")[0]
    if args.list:
        for s in chosen:
            rec = have.get(s.id)
            state = "-" if rec is None else f"{rec['status']} on {rec['device_type']}" + (" early" * early_timed(rec))
            print(f"{s.id}  {len(s.runs):5d} runs  {state:16s} {s.name}  {json.dumps(s.shape, default=str)}")
        print(f"{len(chosen)} shapes, {sum(len(s.runs) for s in chosen)} runs")
        return 0

    def recorded(s: Shape) -> bool:
        rec = have.get(s.id)
        return (rec is not None and rec["status"] == "ok" and not early_timed(rec)
                and (rec["device_type"] == dev_type or getattr(args, "missing", False)))

    todo = [s for s in chosen if args.redo or not recorded(s)]
    load_once({s.shape["task"] for s in todo})  # the task modules, imported before SharedData looks for its names
    failed, done = 0, 0
    t_all = time.perf_counter()

    said = []

    def spent() -> bool:
        over = bool(args.budget_s) and time.perf_counter() - t_all > args.budget_s
        if over and not said:
            said.append(True)
            print(f"budget of {args.budget_s:.0f} s spent: {len(todo) - done} shapes left (run again to go on)",
                  file=sys.stderr)
        return over

    standin = args.standin
    with SharedData(standin) if hasattr(os, "fork") else contextlib.nullcontext() as shared:
        for key, members in _groups(todo):
            if spent():
                break
            setup = None
            if key is not None and shared is not None:
                try:
                    setup = shared.load(key)
                except Exception as e:  # noqa: BLE001 (each shape meets it again and records it)
                    print(f"{key}: its data failed to load once ({type(e).__name__}: {e}); each shape alone",
                          file=sys.stderr)
            for s in members:
                if spent():
                    break
                done += 1
                rec = rehearse_in_fork(s, timeout_s=args.shape_timeout_s, batches=args.batches, device=args.device,
                                       standin=standin, shared=setup, part_rows=args.part_rows)
                if rec is None:
                    print(f"[{done}/{len(todo)}] {s.id} {s.name}: past {args.shape_timeout_s:.0f} s, stopped "
                          "(nothing recorded)", file=sys.stderr, flush=True)
                    continue
                atomic_write_json(record_path(results, s.id), rec)
                failed += rec["status"] != "ok"
                print(f"[{done}/{len(todo)}] {s.id} {s.name}: {_summary(rec)}", file=sys.stderr, flush=True)
            if shared is not None:
                shared.forget()
    print(f"rehearsed {done} of {len(todo)} shapes without a record ({len(chosen)} chosen) in "
          f"{time.perf_counter() - t_all:.0f} s; {failed} failed", file=sys.stderr)
    return 1 if failed else 0
