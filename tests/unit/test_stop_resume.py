"""A run stopped by a scheduler's signal mid-epoch writes a checkpoint at the next batch boundary and
exits; the resumed run continues at that batch and ends with the metrics of an uninterrupted run."""

from __future__ import annotations

import copy
import os
import signal

import pytest
import torch
from torch import nn

from timerepro import stopping
from timerepro.train import fit, seed_everything


class Ctx:
    """The part of RunContext that `fit` uses, in memory."""

    run_id = "toy"

    def __init__(self):
        self.ckpt, self.history = None, []

    def save_checkpoint(self, state):
        self.ckpt = copy.deepcopy(state)

    def load_checkpoint(self):
        return self.ckpt

    def write_history(self, history):
        self.history = list(history)

    def read_history(self):
        return list(self.history)

    def log(self, message):
        pass

    def progress(self, iterable, **kw):
        return iterable


def toy_fit(ctx, *, signal_at: tuple[int, int] | None = None, epochs: int = 3):
    """A dropout MLP over shuffled batches (a torch.Generator) with a running loss sum: every piece of
    state a batch boundary must carry. `signal_at=(epoch, batch)` sends SIGUSR1 to this process there."""
    seed_everything(0)
    x, y = torch.randn(96, 5), torch.randn(96, 1)
    model = nn.Sequential(nn.Linear(5, 8), nn.Dropout(0.3), nn.Linear(8, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(1)

    def train_epoch(epoch, cursor):
        model.train()
        order = torch.randperm(96, generator=gen)  # drawn before the loop: a resumed epoch draws it again
        carry = {"order": order, "total": 0.0}

        def load(saved):
            carry.update(saved)

        for i in cursor.batches(range(0, 96, 8), save=lambda: dict(carry), load=load):
            if signal_at == (epoch, i // 8):
                os.kill(os.getpid(), signal.SIGUSR1)  # the handler only notes it; the batch finishes
            b = carry["order"][i:i + 8]
            loss = ((model(x[b]) - y[b]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            carry["total"] += loss.item()
        return {"train_loss": carry["total"]}

    def validate():
        model.eval()
        with torch.no_grad():
            return {"loss": float(((model(x) - y) ** 2).mean())}

    with stopping.handlers():
        result = fit(model, opt, train_epoch=train_epoch, validate=validate, monitor="loss", mode="min",
                     max_epochs=epochs, patience=5, ctx=ctx, generator=gen, mid_epoch=True)
    return result, model


def strip(history):
    return [{k: v for k, v in row.items() if not k.endswith("_time_s")} for row in history]


def test_fit_stopped_by_a_signal_mid_epoch_resumes_at_that_batch_with_identical_metrics():
    expected, ref = toy_fit(Ctx())
    ctx = Ctx()
    with pytest.raises(stopping.JobStopped) as stopped:
        toy_fit(ctx, signal_at=(1, 4))
    assert stopped.value.code == stopping.EXIT_STOPPED
    assert ctx.ckpt["epoch"] == 0 and ctx.ckpt["batch"] == 5  # after batch 4 of epoch 1, before batch 5
    assert len(ctx.history) == 1
    got, model = toy_fit(ctx)  # the retry: same process here, a fresh one on the cluster
    assert got.resumed_from_epoch == 0
    assert strip(got.history) == strip(expected.history)
    for a, b in zip(model.state_dict().values(), ref.state_dict().values()):
        assert torch.equal(a, b)


def test_a_signal_during_the_last_batch_stops_before_validation_and_resumes_there():
    expected, _ = toy_fit(Ctx())
    ctx = Ctx()
    with pytest.raises(stopping.JobStopped):
        toy_fit(ctx, signal_at=(0, 11))
    assert ctx.ckpt["epoch"] == -1 and ctx.ckpt["batch"] == 12  # epoch 0 trained, not yet validated
    got, _ = toy_fit(ctx)
    assert strip(got.history) == strip(expected.history)


def test_outside_handlers_nothing_is_noted_and_inside_an_earlier_request_is_forgotten():
    request = stopping.StopRequest()
    request.request(signal.SIGTERM)
    with stopping.handlers(request):
        assert not request.requested
        os.kill(os.getpid(), signal.SIGTERM)
        assert request.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is not request.request
