"""The epoch loop every task shares: early stopping, best-state restore, checkpoint and resume.

A checkpoint holds the model, optimizer, RNG states, the best state so far and the history, so a
run killed between epochs resumes and ends with exactly the metrics of an uninterrupted run.
"""

from __future__ import annotations

import copy
import random
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch


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
    }


def set_rng_state(state: dict, generator: torch.Generator | None = None) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
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


@dataclass
class FitResult:
    history: list[dict] = field(default_factory=list)
    best_epoch: int = -1
    epochs_run: int = 0
    resumed_from_epoch: int | None = None


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
) -> FitResult:
    """Train until `patience` epochs without improvement of `monitor`; restore the best weights.

    `monitor` may name several metrics (DyGLib: validation AP and AUC), a new best then needing all of them
    to improve; `ties`: equal counts as improved (DyGLib's `>=`), else strictly better.

    `train_epoch(epoch)` returns training statistics, `validate()` returns validation metrics
    (including `monitor`). A checkpoint is written after every epoch through `ctx`.
    """
    stopper = EarlyStopping(patience=patience, mode=mode, ties=ties)
    result = FitResult()
    best_state = copy.deepcopy(model.state_dict())
    start_epoch = 0

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
        ctx.log(f"resumed from checkpoint after epoch {ckpt['epoch']}")

    epochs = ctx.progress(range(start_epoch, max_epochs), desc=ctx.run_id, initial=start_epoch, total=max_epochs)
    for epoch in epochs:
        if stopper.should_stop:
            break
        t0 = time.perf_counter()
        train_stats = train_epoch(epoch)
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
        ctx.save_checkpoint(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "best_state": best_state,
                "stopper": stopper.__dict__.copy(),
                "epoch": epoch,
                "rng": rng_state(generator),
            }
        )
        if hasattr(epochs, "set_postfix"):
            shown = monitor if isinstance(monitor, tuple) else (monitor,)
            epochs.set_postfix({**{m: f"{val[m]:.4f}" for m in shown}, "best": stopper.best_epoch})
    model.load_state_dict(best_state)
    result.best_epoch = stopper.best_epoch
    result.epochs_run = len(result.history)
    return result
