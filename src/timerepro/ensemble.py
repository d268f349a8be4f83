"""Train the seeds of one configuration together: one vmapped model, one optimizer step for all.

Small models spend their time in per-operator overhead, so S copies stacked along a leading axis
cost little more than one. Each member keeps everything that makes its run its own: its initial
weights, its data, its generators (batch order, dropout), its Adam step count, its early stopping
and its checkpoint, so a member's result does not depend on which other members share its batch
(tested) and a killed member resumes from its own checkpoint whatever epoch the others reached.
Members leave the stack as soon as they stop early; the stack is rebuilt only when one leaves (its rows kept),
and a member's tensors are copied out of it only when needed (checkpoint, best weights, finish).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn
from torch.func import functional_call, vmap

from timerepro import stopping
from timerepro.train import EarlyStopping

CHECKPOINT_FORMAT = "ensemble-member/1"


class StackedAdam:
    """Adam (torch.optim.Adam's update) on tensors whose first axis is the member, each member with its own step count."""

    def __init__(self, params: dict[str, torch.Tensor], *, lr: float, steps: torch.Tensor,
                 exp_avg: dict[str, torch.Tensor], exp_avg_sq: dict[str, torch.Tensor],
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.params, self.lr, self.betas, self.eps = params, lr, betas, eps
        self.steps = steps.clone()  # (S,) float64: steps taken by each member
        self.exp_avg, self.exp_avg_sq = exp_avg, exp_avg_sq

    @torch.no_grad()
    def step(self) -> None:
        b1, b2 = self.betas
        self.steps += 1
        bc1 = 1 - b1 ** self.steps  # (S,)
        step_size = (self.lr / bc1).float()
        bc2_sqrt = (1 - b2 ** self.steps).sqrt().float()
        for name, param in self.params.items():
            g = param.grad
            # `.data`: updated without bumping the version counter that views built once (FlatParams) share
            p = param.data
            view = (-1,) + (1,) * (p.dim() - 1)  # broadcast a per-member scalar over a member's tensor
            m, v = self.exp_avg[name], self.exp_avg_sq[name]
            m.lerp_(g, 1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v.sqrt() / bc2_sqrt.view(view)).add_(self.eps)
            p.sub_(step_size.view(view) * m / denom)

    def zero_grad(self) -> None:
        for p in self.params.values():
            p.grad = None


class FlatParams:
    """Every member's parameters in one (S, P) leaf tensor, so that one Adam update covers them all.

    `views()` gives name -> (S, *shape) views for `functional_call`, built once per stack: their backward
    nodes keep no tensor, so every step's backward runs through them again into the flat tensor's gradient
    (the optimizer writes through `.data`, so their version never changes).
    """

    def __init__(self, members: list["Member"], flat: torch.Tensor | None = None):
        first = members[0].params
        self.names = list(first)
        self.shapes = [first[k].shape for k in self.names]
        self.sizes = [first[k].numel() for k in self.names]
        self.flat = (self.flatten(members, "params") if flat is None else flat).requires_grad_(True)
        self._views = self._split(self.flat)

    def flatten(self, members: list["Member"], attr: str) -> torch.Tensor:
        return torch.stack([torch.cat([getattr(m, attr)[k].reshape(-1) for k in self.names]) for m in members])

    def kept(self, members: list["Member"], rows: torch.Tensor) -> "FlatParams":
        """The stack of the members left: the same values, rows `rows` of this one (their layout is shared)."""
        return FlatParams(members, self.flat.detach()[rows])

    def _split(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        chunks = flat.split(self.sizes, dim=-1)  # (..., n_k) each
        return {k: c.view(*flat.shape[:-1], *shape) for k, c, shape in zip(self.names, chunks, self.shapes)}

    def views(self, flat: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        return self._views if flat is None else self._split(flat)

    def unflatten(self, flat: torch.Tensor, i: int) -> dict[str, torch.Tensor]:
        """Member i's tensors, copied out of a (S, P) tensor in one copy (views of its row)."""
        return self._split(flat[i].detach().clone())


@dataclass
class Member:
    """One run inside an ensemble: its context, state and bookkeeping."""

    ctx: object
    params: dict[str, torch.Tensor]
    buffers: dict[str, torch.Tensor]
    generators: dict[str, torch.Generator]
    data: object = None  # whatever the task needs per member (its own tensors)
    exp_avg: dict[str, torch.Tensor] = field(default_factory=dict)
    exp_avg_sq: dict[str, torch.Tensor] = field(default_factory=dict)
    steps: float = 0.0
    epoch: int = 0  # next epoch to run
    stopper: EarlyStopping | None = None
    best_state: dict[str, torch.Tensor] = field(default_factory=dict)
    history: list[dict] = field(default_factory=list)
    resumed_from_epoch: int | None = None
    done: bool = False

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {**self.params, **self.buffers}


def new_member(ctx, module: nn.Module, generators: dict[str, torch.Generator], data, patience: int, mode: str) -> Member:
    params = {k: v.detach().clone() for k, v in module.named_parameters()}
    buffers = {k: v.detach().clone() for k, v in module.named_buffers()}
    return Member(ctx=ctx, params=params, buffers=buffers, generators=generators, data=data,
                  exp_avg={k: torch.zeros_like(v) for k, v in params.items()},
                  exp_avg_sq={k: torch.zeros_like(v) for k, v in params.items()},
                  stopper=EarlyStopping(patience=patience, mode=mode),
                  best_state={k: v.clone() for k, v in params.items()})


def _checkpoint(m: Member) -> dict:
    return {"format": CHECKPOINT_FORMAT, "params": m.params, "exp_avg": m.exp_avg, "exp_avg_sq": m.exp_avg_sq,
            "steps": m.steps, "epoch": m.epoch - 1, "stopper": m.stopper.__dict__.copy(), "best_state": m.best_state,
            "rng": {k: g.get_state() for k, g in m.generators.items()}}


def resume(m: Member) -> None:
    """Restore `m` from its run's checkpoint if there is one of this format."""
    ckpt = m.ctx.load_checkpoint()
    if ckpt is None:
        return
    if ckpt.get("format") != CHECKPOINT_FORMAT:
        m.ctx.log("checkpoint of another format ignored: training from the start")
        return
    m.params, m.exp_avg, m.exp_avg_sq = ckpt["params"], ckpt["exp_avg"], ckpt["exp_avg_sq"]
    m.steps, m.best_state = ckpt["steps"], ckpt["best_state"]
    m.stopper = EarlyStopping(**ckpt["stopper"])
    for k, g in m.generators.items():
        g.set_state(ckpt["rng"][k])
    m.epoch = ckpt["epoch"] + 1
    m.resumed_from_epoch = ckpt["epoch"]
    m.history = m.ctx.read_history()[: m.epoch]
    m.ctx.log(f"resumed from checkpoint after epoch {ckpt['epoch']}")


def stack(members: list[Member], attr: str) -> dict[str, torch.Tensor]:
    """Stack one per-member dict of tensors along a new leading member axis: name -> (S, ...)."""
    first = getattr(members[0], attr)
    return {k: torch.stack([getattr(m, attr)[k] for m in members]) for k in first}


def vmapped(module: nn.Module) -> Callable:
    """f(params, buffers, *args) with a leading member axis on every argument; `module` lends only its code."""
    base = copy.deepcopy(module).to("meta")

    def call(params, buffers, *args):
        return functional_call(base, (params, buffers), args)

    fn = vmap(call, randomness="error")  # randomness must come from the members' generators
    fn.base = base
    return fn


CHECKPOINT_EVERY_S = 20.0  # a group checkpoints its members at most this often: a kill loses at most ~20 s


def fit_ensemble(members: list[Member], *, lr: float, max_epochs: int, monitor: str,
                 train_epoch: Callable[[list[Member], FlatParams, dict, StackedAdam, int], list[dict]],
                 validate: Callable[[list[Member], dict, dict], list[dict]],
                 on_done: Callable[[Member], None], progress: Callable | None = None) -> None:
    """Train the members in lockstep until each stops early (or reaches max_epochs), then call on_done.

    `train_epoch(active, flat, buffers, opt, round)` runs one epoch of every active member (parameters
    from `flat.views()`) and returns per-member statistics; `validate(active, params, buffers)` returns
    per-member metrics including `monitor`. On on_done the member's params hold its best weights.
    Checkpoints of all active members are written in the same round (at most every CHECKPOINT_EVERY_S), so a
    resumed group restarts from one common round; a stop request (`timerepro.stopping`) checkpoints them at the
    end of the round and raises `stopping.JobStopped` (the synthetic epochs are short: a stop waits one round).
    """
    for m in members:
        if m.epoch >= max_epochs or m.stopper.should_stop:
            _finish(m, on_done)
    bar = progress(total=max_epochs) if progress else None
    rnd, last_save = 0, time.monotonic()
    stacked: list[Member] = []  # the members of the current stack (flat, buffers, opt)
    flat = buffers = opt = None
    while any(not m.done for m in members):
        active = [m for m in members if not m.done]
        if len(active) != len(stacked):  # the first round, or members left: stack (again) the members still training
            flat, buffers, opt = _restack(active, stacked, flat, opt, lr) if stacked else _stack(active, lr)
            stacked = active
        t0 = time.perf_counter()
        stats = train_epoch(active, flat, buffers, opt, rnd)
        epoch_time = (time.perf_counter() - t0) / len(active)  # a member's share of the stacked epoch
        with torch.no_grad():
            vals = validate(active, flat.views(), buffers)
        stop = stopping.requested()  # SLURM's stop: every member still training checkpoints this round, then exit
        save = stop or time.monotonic() - last_save >= CHECKPOINT_EVERY_S
        for i, m in enumerate(active):
            m.steps = float(opt.steps[i])
            if m.stopper.update(float(vals[i][monitor]), m.epoch):
                m.best_state = flat.unflatten(flat.flat, i)
            m.history.append({"epoch": m.epoch, "epoch_time_s": round(epoch_time, 4), "ensemble_size": len(active),
                              **stats[i], **{f"val_{k}": v for k, v in vals[i].items()}})
            m.epoch += 1
            if m.stopper.should_stop or m.epoch >= max_epochs:
                _copy_out(m, flat, opt, i)
                m.ctx.write_history(m.history)
                _finish(m, on_done)
            elif save:
                _copy_out(m, flat, opt, i)
                m.ctx.write_history(m.history)
                m.ctx.save_checkpoint(_checkpoint(m))
        if save:
            last_save = time.monotonic()
        if stop and any(not m.done for m in members):
            members[0].ctx.log(f"stop requested: checkpoints of the members still training after round {rnd}")
            raise stopping.JobStopped(f"{members[0].ctx.run_id}: ensemble, after round {rnd}")
        rnd += 1
        if bar is not None:
            bar.update(1)
            bar.set_postfix({"active": sum(not m.done for m in members)})
    if bar is not None:
        bar.close()


def _stack(active: list[Member], lr: float) -> tuple[FlatParams, dict, StackedAdam]:
    """The members' parameters, buffers and Adam state stacked from their own tensors."""
    flat = FlatParams(active)
    opt = StackedAdam({"flat": flat.flat}, lr=lr, steps=torch.tensor([m.steps for m in active], dtype=torch.float64),
                      exp_avg={"flat": flat.flatten(active, "exp_avg")},
                      exp_avg_sq={"flat": flat.flatten(active, "exp_avg_sq")})
    return flat, stack(active, "buffers"), opt


def _restack(active: list[Member], stacked: list[Member], flat: FlatParams, opt: StackedAdam,
             lr: float) -> tuple[FlatParams, dict, StackedAdam]:
    """The stack of `active` cut from the previous one's rows (`stacked` is its members): values copied, not recomputed."""
    rows = torch.tensor([j for j, m in enumerate(stacked) if not m.done])  # `active`, in the same order
    kept = flat.kept(active, rows)
    new = StackedAdam({"flat": kept.flat}, lr=lr, steps=opt.steps[rows],
                      exp_avg={"flat": opt.exp_avg["flat"][rows]}, exp_avg_sq={"flat": opt.exp_avg_sq["flat"][rows]})
    return kept, stack(active, "buffers"), new


def _copy_out(m: Member, flat: FlatParams, opt: StackedAdam, i: int) -> None:
    """Member i's parameters and Adam state copied out of the stack (for its checkpoint or its end)."""
    m.params = flat.unflatten(flat.flat, i)
    m.exp_avg = flat.unflatten(opt.exp_avg["flat"], i)
    m.exp_avg_sq = flat.unflatten(opt.exp_avg_sq["flat"], i)


def _finish(m: Member, on_done: Callable[[Member], None]) -> None:
    m.params = {k: v.clone() for k, v in m.best_state.items()}
    m.done = True
    on_done(m)
