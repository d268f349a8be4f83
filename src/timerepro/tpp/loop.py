"""One training epoch and one evaluation of a TPP model on a split; `timerepro.train.fit` drives the epochs.

    model = HawkesAttention(data.dim_process, ...)
    opt = torch.optim.Adam(model.optimizer_param_groups(phi_weight_decay=1e-3), lr=1e-3)
    gen = torch.Generator().manual_seed(seed)
    fit(model, opt, train_epoch=lambda e: train_epoch(model, opt, data.splits["train"], batch_size=256, generator=gen),
        validate=lambda: evaluate(model, data.splits["dev"], batch_size=256, thinning=None),
        monitor="loglike_per_event", mode="max", max_epochs=..., patience=..., ctx=ctx, generator=gen)
    test = evaluate(model, data.splits["test"], batch_size=256, thinning=ThinningConfig(), seed=seed)
"""

from __future__ import annotations

import numpy as np
import torch

from timerepro.data.tpp import EventSequences
from timerepro.tpp.batch import batch_of, batch_order, iterate_batches
from timerepro.tpp.likelihood import log_likelihood
from timerepro.tpp.metrics import Predictions, compute
from timerepro.tpp.thinning import ThinningConfig, predict_next


def train_epoch(model, optimizer: torch.optim.Optimizer, seqs: EventSequences, *, batch_size: int,
                shuffle: bool = False, generator: torch.Generator | None = None, num_samples: int = 20,
                sampling: str = "grid", max_grad_norm: float | None = None, cursor=None, progress=None) -> dict:
    """One pass; each step minimizes the batch's negative log-likelihood per event (EasyTPP's loss / num_events).

    `cursor` (a `train.EpochCursor`, from `train.fit(..., mid_epoch=True)`): the pass can stop between two batches
    and resume there; the pass's order and running sums travel in the checkpoint (`generator`, which drew the order
    and draws the integral's points, is restored with the other RNGs). `progress`: wraps the batches (a run's
    `ctx.progress`, which a rehearsal bounds and times)."""
    model.train()
    device = next(model.parameters()).device
    carry = {"order": batch_order(len(seqs), shuffle, generator), "total": 0.0, "events": 0}
    starts = range(0, len(seqs), batch_size)
    if cursor is not None:
        starts = cursor.batches(starts, carry=carry)
    for start in progress(starts) if progress is not None else starts:
        batch = batch_of(seqs, carry["order"][start:start + batch_size], model.pad_token_id)
        ll = log_likelihood(model, batch.to(device), num_samples=num_samples, sampling=sampling, generator=generator)
        n = ll.n_events
        if n == 0:  # only one-event sequences: nothing to score
            continue
        loss = -ll.total / n
        optimizer.zero_grad()
        loss.backward()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        carry["total"] += float(loss.detach()) * n
        carry["events"] += n
    total, events = carry["total"], carry["events"]
    return {"train_nll_per_event": total / events if events else float("nan")}


@torch.no_grad()
def evaluate(model, seqs: EventSequences, *, batch_size: int, thinning: ThinningConfig | None = ThinningConfig(),
             seed: int = 0, num_samples: int = 20, metrics=None) -> dict[str, float]:
    """loglike_per_event (integral on EasyTPP's grid) and, unless thinning is None, rmse, acc and error_rate
    of one-step thinning predictions after every event; seeded, so repeated calls give the same numbers."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    gen = torch.Generator().manual_seed(int(seed))
    ll_sum, n_events = 0.0, 0
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("pred_dtime", "pred_type", "label_dtime", "label_type", "mask")}
    for batch in iterate_batches(seqs, model.pad_token_id, batch_size):
        batch = batch.to(device)
        ll = log_likelihood(model, batch, num_samples=num_samples, sampling="grid")
        ll_sum += float(ll.total)
        n_events += ll.n_events
        if thinning is not None and batch.type_seqs.size(1) > 1:
            dt, ty = predict_next(model, batch, thinning, gen)
            for key, value in (("pred_dtime", dt), ("pred_type", ty), ("label_dtime", batch.time_delta_seqs[:, 1:]),
                               ("label_type", batch.type_seqs[:, 1:]), ("mask", batch.seq_non_pad_mask[:, 1:])):
                parts[key].append(value.cpu().numpy().reshape(-1))
    model.train(was_training)
    if thinning is None:
        preds = Predictions(*(np.zeros(0) for _ in range(5)), loglike_sum=ll_sum, n_events=n_events)
        names = metrics or ["loglike_per_event"]
    else:
        preds = Predictions(*(np.concatenate(parts[k]) if parts[k] else np.zeros(0)
                              for k in ("pred_dtime", "pred_type", "label_dtime", "label_type", "mask")),
                            loglike_sum=ll_sum, n_events=n_events)
        names = metrics or ["loglike_per_event", "rmse", "acc", "error_rate"]
    out = compute(preds, names)
    out["n_events"] = n_events
    return out
