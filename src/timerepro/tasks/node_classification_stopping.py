"""The head's epoch loop of DyG-Mamba's node-classification script (`head_epoch: test_stepped`; docs/dyg_mamba.md M09).

Clearloveyuan/DyG-Mamba 05e397a `train_node_classification.py` steps ONE DyGLib `EarlyStopping`
(`utils/EarlyStopping.py:29-63`) twice on epochs where (epoch + 1) % test_interval_epochs == 0: first with the test
ROC-AUC (:287-313), then with the validation ROC-AUC (:315-319), and once (validation) on the other epochs. Both
metrics carry the same name (`roc_auc`), so they share one best value and one counter: a step whose value is
>= the best saves the head and zeroes the counter, any other step adds one; once the counter reaches the patience
the stop is kept (`self.early_stop` is never reset) and the loop ends after that epoch (:321-322). The head saved
last is loaded and evaluated (:325-348). `train.fit` steps once per epoch, so this loop is its own; it writes the
same checkpoint and history, and resumes the same way.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Callable

from timerepro import metric_keys
from timerepro.train import FitResult, resumed_cursor, rng_state, set_rng_state, stop_after_epoch, stoppable_epoch


@dataclass
class SharedStopper:
    """DyGLib's EarlyStopping for one metric name (utils/EarlyStopping.py:36-63): `step(value)` is True when the
    value is >= the best (a save); the counter counts the steps since; `stop` stays True once counter >= patience."""

    patience: int
    best: float | None = None
    counter: int = 0
    stop: bool = False
    best_epoch: int = -1

    def step(self, value: float, epoch: int) -> bool:
        if self.best is None or value >= self.best:
            self.best, self.counter, self.best_epoch = float(value), 0, epoch
            return True
        self.counter += 1
        if self.counter >= self.patience:
            self.stop = True
        return False


def tests_at(epoch: int, interval: int) -> bool:
    """Whether the script evaluates (and steps on) the test split after `epoch` (0-based; :287)."""
    return (epoch + 1) % interval == 0


def fit_test_stepped(head, optimizer, *, train_epoch: Callable, validate: Callable[[], dict],
                     test: Callable[[], dict], interval: int, max_epochs: int, patience: int, ctx,
                     mid_epoch: bool = False) -> FitResult:
    """Train the head as the DyG-Mamba script does (module docstring); `validate()` and `test()` return
    {"auc", "loss"} of the current head. Returns the history (with `test_auc` on test epochs) and the saved epoch;
    the head ends with the weights saved last. A checkpoint after every epoch and, with `mid_epoch`
    (`train_epoch(epoch, cursor)`), at the batch a stop request arrives before, as `train.fit`."""
    stopper = SharedStopper(patience)
    result = FitResult()
    best_state = copy.deepcopy(head.state_dict())
    start = 0
    resumed = None

    def checkpoint(epoch: int, **extra) -> None:
        ctx.save_checkpoint({"model": head.state_dict(), "optimizer": optimizer.state_dict(), "best_state": best_state,
                             "stopper": stopper.__dict__.copy(), "epoch": epoch, "rng": rng_state(), **extra})

    ckpt = ctx.load_checkpoint()
    if ckpt is not None:
        head.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        best_state, stopper = ckpt["best_state"], SharedStopper(**ckpt["stopper"])
        result.history = ctx.read_history()[: ckpt["epoch"] + 1]
        result.resumed_from_epoch = ckpt["epoch"]
        start = ckpt["epoch"] + 1
        set_rng_state(ckpt["rng"])
        resumed = resumed_cursor(ckpt)
        ctx.log(f"resumed from checkpoint after epoch {ckpt['epoch']}"
                + (f", before batch {ckpt['batch']} of epoch {start}" if resumed is not None else ""))
    for epoch in ctx.progress(range(start, max_epochs), desc=ctx.run_id, initial=start, total=max_epochs):
        if stopper.stop:
            break
        t0 = time.perf_counter()
        stats = stoppable_epoch(train_epoch, epoch, resumed, checkpoint, ctx) if mid_epoch else train_epoch(epoch)
        row = {"epoch": epoch, **stats}
        row["epoch_time_s"] = round(time.perf_counter() - t0, 4)
        val = validate()
        row.update({metric_keys.validation(k): v for k, v in val.items()})
        saved = False
        if tests_at(epoch, interval):  # :287-313, the test step first
            tested = test()
            row.update({metric_keys.node_classification("test", k): v for k, v in tested.items()})
            saved |= stopper.step(tested["auc"], epoch)
        saved |= stopper.step(val["auc"], epoch)  # :315-319, every epoch
        if saved:
            best_state = copy.deepcopy(head.state_dict())
        row.update(saved=saved, stop_counter=stopper.counter)
        result.history.append(row)
        ctx.write_history(result.history)
        checkpoint(epoch)
        stop_after_epoch(epoch, epoch + 1 >= max_epochs or stopper.stop, ctx)
    head.load_state_dict(best_state)
    result.best_epoch, result.epochs_run = stopper.best_epoch, len(result.history)
    return result
