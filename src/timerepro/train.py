"""The epoch loop every task shares: early stopping, best-state restore, checkpoint and resume.

A checkpoint holds the model, optimizer, RNG states, the best state so far and the history, so a
run killed between epochs resumes and ends with exactly the metrics of an uninterrupted run. A task
whose epoch loops over `EpochCursor.batches` can also be stopped between two batches (a SLURM stop
request, `timerepro.stopping`): the checkpoint then holds the batch position and the task's state
there too, and the resumed run continues the epoch at that batch, with the same metrics.
"""

from __future__ import annotations

import copy
import random
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np
import torch

from timerepro import stopping


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def rng_state(generator: torch.Generator | None = None) -> dict:
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "generator": generator.get_state() if generator is not None else None,
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None,
    }


def set_rng_state(state: dict, generator: torch.Generator | None = None) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    if generator is not None and state.get("generator") is not None:
        generator.set_state(state["generator"])


@dataclass
class EarlyStopping:
    """Tracks the monitored value; `mode` is 'min' for losses and 'max' for accuracies."""

    patience: int
    mode: str = "min"
    best: float | None = None
    best_epoch: int = -1
    stale: int = 0

    ties: bool = False  # DyGLib's EarlyStopping (utils/EarlyStopping.py:40-49): a value equal to the best is a new best

    def improved(self, value) -> bool:
        """`value` one number, or a list of several monitored ones: a new best when every one is (DyGLib)."""
        if self.best is None:
            return True
        values, best = (value, self.best) if isinstance(value, list) else ([value], [self.best])
        if self.ties:
            return all(v <= b if self.mode == "min" else v >= b for v, b in zip(values, best))
        return all(v < b if self.mode == "min" else v > b for v, b in zip(values, best))

    def update(self, value, epoch: int) -> bool:
        """Record `value`; True when it is a new best."""
        if self.improved(value):
            self.best, self.best_epoch, self.stale = value, epoch, 0
            return True
        self.stale += 1
        return False

    @property
    def should_stop(self) -> bool:
        return self.stale >= self.patience


class StopAtBatch(Exception):
    """A stop request seen before batch `batch` of an epoch; `state` is the task's state there."""

    def __init__(self, batch: int, state: dict):
        super().__init__(f"stop requested before batch {batch}")
        self.batch, self.state = batch, state


@dataclass
class EpochCursor:
    """Where a training epoch stands: the next batch and the task's own state there (None: the epoch's start).

    `batches(items, carry=...)` (or `save=..., load=...`) yields items from `start` on; at every batch boundary (also
    after the last batch) a stop request ends the epoch with `StopAtBatch(i, save())`. A resumed
    epoch first gives the saved state to `load`, then sets the RNGs back to their state at the stop
    (whatever the epoch drew before its loop, it draws again on resumption). `save` returns what the loop carries from batch to
    batch beyond the model, optimizer and global RNGs (its generators, running sums)."""

    epoch: int
    start: int = 0
    state: dict | None = None
    rng: dict | None = None  # the RNG states at the stop: set again after the epoch's preamble drew from them
    generator: torch.Generator | None = None
    stop: Callable[[], bool] = stopping.requested

    def batches(self, items: Sequence | Iterable, *, carry: dict | None = None,
                save: Callable[[], dict] | None = None, load: Callable[[dict], None] | None = None):
        """`carry`: a dict of running values saved and restored whole (the usual case); else `save` and `load`."""
        if carry is not None:
            save, load = (lambda: dict(carry)), carry.update
        items = items if isinstance(items, Sequence) else list(items)
        if self.state is not None:
            load(self.state)
            set_rng_state(self.rng, self.generator)
        for i in range(self.start, len(items) + 1):
            if self.stop():
                raise StopAtBatch(i, save())
            if i < len(items):
                yield items[i]


def resumed_cursor(ckpt: dict, generator: torch.Generator | None = None) -> EpochCursor | None:
    """The cursor of the epoch a checkpoint stopped inside (None: it was written after a whole epoch)."""
    if ckpt.get("batch") is None:
        return None
    return EpochCursor(ckpt["epoch"] + 1, start=ckpt["batch"], state=ckpt["task_state"], rng=ckpt["rng"],
                       generator=generator)


def stoppable_epoch(train_epoch: Callable, epoch: int, resumed: EpochCursor | None, checkpoint: Callable, ctx) -> dict:
    """`train_epoch(epoch, cursor)`, continuing `resumed` if it is this epoch's; a stop request at a batch boundary
    writes `checkpoint(epoch - 1, batch=..., task_state=...)` (the last whole epoch, and where this one stands)
    and raises `stopping.JobStopped`. Every epoch loop with mid-epoch stops goes through here (`fit`, the head
    loop of `tasks.node_classification_stopping`)."""
    cursor = resumed if resumed is not None and resumed.epoch == epoch else EpochCursor(epoch)
    try:
        return train_epoch(epoch, cursor)
    except StopAtBatch as stop:
        checkpoint(epoch - 1, batch=stop.batch, task_state=stop.state)
        ctx.log(f"stop requested: checkpoint before batch {stop.batch} of epoch {epoch}")
        raise stopping.JobStopped(f"{ctx.run_id}: epoch {epoch}, batch {stop.batch}") from None


def stop_after_epoch(epoch: int, last: bool, ctx) -> None:
    """After an epoch whose checkpoint is written: a stop request ends the job there, unless the loop ends anyway."""
    if stopping.requested() and not last:
        ctx.log(f"stop requested: checkpoint after epoch {epoch}")
        raise stopping.JobStopped(f"{ctx.run_id}: after epoch {epoch}")


@dataclass
class FitResult:
    history: list[dict] = field(default_factory=list)
    best_epoch: int = -1
    epochs_run: int = 0
    resumed_from_epoch: int | None = None

    def selected(self) -> dict | None:
        """The history row of the epoch whose weights `fit` restored (None: no epoch validated). Its `val_*` figures
        are what validating the returned model computes again, so a task reads them instead of rerunning that pass."""
        return next((row for row in self.history if row["epoch"] == self.best_epoch), None)


def fit(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    train_epoch: Callable[[int], dict],
    validate: Callable[[], dict],
    monitor: str | tuple[str, ...],
    mode: str,
    max_epochs: int,
    patience: int,
    ctx,
    generator: torch.Generator | None = None,
    ties: bool = False,
    mid_epoch: bool = False,
) -> FitResult:
    """Train until `patience` epochs without improvement of `monitor`; restore the best weights.

    `monitor` may name several metrics (DyGLib: validation AP and AUC), a new best then needing all of them
    to improve; `ties`: equal counts as improved (DyGLib's `>=`), else strictly better.

    `train_epoch(epoch)` returns training statistics, `validate()` returns validation metrics
    (including `monitor`). A checkpoint is written after every epoch through `ctx`. With `mid_epoch`,
    `train_epoch(epoch, cursor)` loops over `cursor.batches(...)` (an `EpochCursor`), so a stop
    request is answered at the next batch; otherwise at the end of the epoch. Either way the
    checkpoint is written and `stopping.JobStopped` raised.
    """
    stopper = EarlyStopping(patience=patience, mode=mode, ties=ties)
    result = FitResult()
    best_state = copy.deepcopy(model.state_dict())
    start_epoch = 0
    resumed: EpochCursor | None = None

    def checkpoint(epoch: int, **extra) -> None:
        """`epoch` is the last complete epoch; `extra` says where a stopped epoch stands."""
        ctx.save_checkpoint({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                             "best_state": best_state, "stopper": stopper.__dict__.copy(), "epoch": epoch,
                             "rng": rng_state(generator), **extra})

    ckpt = ctx.load_checkpoint()
    if ckpt is not None:
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        best_state = ckpt["best_state"]
        stopper = EarlyStopping(**ckpt["stopper"])
        result.history = ctx.read_history()[: ckpt["epoch"] + 1]  # history.json, not the checkpoint
        start_epoch = ckpt["epoch"] + 1
        result.resumed_from_epoch = ckpt["epoch"]
        set_rng_state(ckpt["rng"], generator)
        resumed = resumed_cursor(ckpt, generator)
        ctx.log(f"resumed from checkpoint before batch {ckpt['batch']} of epoch {start_epoch}" if resumed is not None
                else f"resumed from checkpoint after epoch {ckpt['epoch']}")

    epochs = ctx.progress(range(start_epoch, max_epochs), desc=ctx.run_id, initial=start_epoch, total=max_epochs)
    for epoch in epochs:
        if stopper.should_stop:
            break
        t0 = time.perf_counter()
        train_stats = (stoppable_epoch(train_epoch, epoch, resumed, checkpoint, ctx) if mid_epoch
                       else train_epoch(epoch))
        epoch_time = time.perf_counter() - t0
        val = validate()
        val_time = time.perf_counter() - t0 - epoch_time
        is_best = stopper.update([float(val[m]) for m in monitor] if isinstance(monitor, tuple)
                                 else float(val[monitor]), epoch)
        if is_best:
            best_state = copy.deepcopy(model.state_dict())
        row = {"epoch": epoch, "epoch_time_s": round(epoch_time, 4), "val_time_s": round(val_time, 4), **train_stats,
               **{f"val_{k}": v for k, v in val.items()}}
        result.history.append(row)
        ctx.write_history(result.history)
        checkpoint(epoch)
        if hasattr(epochs, "set_postfix"):
            shown = monitor if isinstance(monitor, tuple) else (monitor,)
            epochs.set_postfix({**{m: f"{val[m]:.4f}" for m in shown}, "best": stopper.best_epoch})
        stop_after_epoch(epoch, epoch + 1 >= max_epochs or stopper.should_stop, ctx)
    model.load_state_dict(best_state)
    result.best_epoch = stopper.best_epoch
    result.epochs_run = len(result.history)
    return result
