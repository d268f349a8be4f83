"""time2vec's synthetic task (section 5.2, Figures 3 and 4): is a day a multiple of 7?

Model: sigmoid(a . t2v(tau) + b) with Time2Vec of length 32; Adam, binary cross-entropy, no regularization
(the paper). Not stated, decided in docs/time2vec.md: full-batch steps (one per epoch) for `max_epochs`, no
early stopping (there is no validation split: the last 25% of the days are the test). The seeds of one
configuration train together: their parameters are stacked along a leading member axis, one stacked forward
(`Time2VecClassifier.stacked`, bitwise equal to vmap) and one Adam step (elementwise, so each member's update is its own) serve them all.
The stack checkpoints every CHECKPOINT_EVERY epochs and, on a stop request (`timerepro.stopping`), after the
epoch under way (one full-batch step), with the history so far; the retry resumes there.

A run records the dominant sine (largest |a_i|): its frequency folded into [0, pi / input_scale] (inputs are
integers times `input_scale`, so w and w + 2 pi / input_scale give the same values: aliases), its phase and
weight; the pre-activation over every day (Figure 3) and every sine's (w_i, a_i) before and after training
(Figure 4).
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import functional_call

from timerepro import stopping
from timerepro.data import day_of_week
from timerepro.models.seq.time_lstm import Time2VecClassifier
from timerepro.train import stop_after_epoch

CHECKPOINT_FORMAT = "periodic-stack/1"
CHECKPOINT_EVERY = 2000  # steps


def fold(w: np.ndarray | float, scale: float) -> np.ndarray:
    """|w| reduced modulo the alias period 2 pi / scale into [0, pi / scale]."""
    period = 2 * math.pi / scale
    return np.abs(np.mod(np.asarray(w, dtype=np.float64) + period / 2, period) - period / 2)


def _data(config: dict) -> day_of_week.DayOfWeek:
    d = config["data"]
    return day_of_week.generate(d["n_days"], d["period"], d["train_fraction"], float(config["input_scale"]),
                                d.get("label_noise", 0.0), seed=int(config["seed"]))


def _model(config: dict) -> Time2VecClassifier:
    torch.manual_seed(int(config["seed"]))
    return Time2VecClassifier(int(config["t2v_dim"]), config)


def _sines(model_params: dict[str, torch.Tensor]) -> dict[str, list[float]]:
    """Every sine's frequency, phase and output weight (the linear term's weight is index 0 of `out`)."""
    return {"frequency": model_params["t2v.w"].tolist(), "phase": model_params["t2v.phi"].tolist(),
            "weight": model_params["out.weight"][0, -len(model_params["t2v.w"]):].tolist()}


def run_group(configs: list[dict], ctxs: list, finish) -> None:
    """Train the seeds of one configuration as one stack; `finish(i, outcome)` per run."""
    config = configs[0]
    data = [_data(c) for c in configs]
    models = [_model(c) for c in configs]
    initial = [{k: v.detach().clone() for k, v in m.named_parameters()} for m in models]
    names = list(initial[0])
    params = {k: torch.stack([p[k] for p in initial]).requires_grad_(True) for k in names}  # (S, ...)
    base = models[0]
    forward = base.stacked  # (S, N) -> (S, N)
    tau = torch.stack([torch.from_numpy(d.train[0]) for d in data])  # (S, N_train)
    y = torch.stack([torch.from_numpy(d.train[1]) for d in data])
    opt = torch.optim.Adam(params.values(), lr=float(config["lr"]))
    batch = config.get("batch_size") or tau.shape[1]
    gens = [torch.Generator().manual_seed(int(c["seed"])) for c in configs]
    steps_per_epoch = math.ceil(tau.shape[1] / batch)
    start, history = _resume(ctxs, params, opt, gens)
    resumed = start - 1 if start else None
    epochs = range(start, int(config["max_epochs"]))
    bar = ctxs[0].progress(epochs, desc=f"{len(configs)} seeds", total=int(config["max_epochs"]), initial=start)
    t0 = time.perf_counter()
    rows = torch.arange(len(configs)).unsqueeze(1)  # (S, 1): gathers each member's own batch
    for epoch in bar:
        # full batch: the whole training set in its order each step, no gather (the same values as gathering arange)
        order = torch.stack([torch.randperm(tau.shape[1], generator=g) for g in gens]) if batch < tau.shape[1] else None
        for b in range(steps_per_epoch):
            idx = order[:, b * batch:(b + 1) * batch] if order is not None else None  # (S, b)
            tau_b, y_b = (tau, y) if idx is None else (tau[rows, idx], y[rows, idx])
            logits = forward(params, tau_b)
            losses = F.binary_cross_entropy_with_logits(logits, y_b, reduction="none").mean(1)  # (S,)
            opt.zero_grad()
            losses.sum().backward()  # members share no parameter: each gets its own loss's gradient
            opt.step()
        if (epoch + 1) % max(1, int(config["max_epochs"]) // 20) == 0:
            history.append({"epoch": epoch, "train_loss": losses.detach().tolist()})
        last = epoch + 1 >= int(config["max_epochs"])
        if (epoch + 1) % CHECKPOINT_EVERY == 0 or (stopping.requested() and not last):  # a stop: at this step
            _checkpoint(ctxs, params, opt, gens, epoch, history)
        stop_after_epoch(epoch, last, ctxs[0])
    timing = {"train_time_s": round((time.perf_counter() - t0) / len(configs), 4)}  # provenance: each member's share
    with torch.no_grad():
        for i, (c, ctx, d) in enumerate(zip(configs, ctxs, data)):
            final = {k: v[i].detach().clone() for k, v in params.items()}
            ctx.write_history([{"epoch": h["epoch"], "train_loss": h["train_loss"][i]} for h in history])
            finish(i, {**_outcome(c, ctx, d, base, initial[i], final), "resumed_from_epoch": resumed, "timing": timing})


def _checkpoint(ctxs, params, opt, gens, epoch: int, history: list[dict]) -> None:
    state = opt.state_dict()
    for i, ctx in enumerate(ctxs):
        ctx.save_checkpoint({"format": CHECKPOINT_FORMAT, "epoch": epoch, "member": i, "n_members": len(ctxs),
                             "params": {k: v[i].detach().clone() for k, v in params.items()},
                             "adam": {n: {k: (v[i].clone() if torch.is_tensor(v) and v.dim() else v)
                                          for k, v in s.items()} for n, s in state["state"].items()},
                             "rng": gens[i].get_state(),
                             "history": [{"epoch": h["epoch"], "train_loss": h["train_loss"][i]} for h in history]})


def _resume(ctxs, params, opt, gens) -> tuple[int, list[dict]]:
    """Restore the stack when every member holds a checkpoint of the same epoch; else start at 0. Returns the next
    epoch and the stack's history so far (each row's `train_loss` one per member)."""
    ckpts = [ctx.load_checkpoint() for ctx in ctxs]
    if not all(c and c.get("format") == CHECKPOINT_FORMAT for c in ckpts) or len({c["epoch"] for c in ckpts}) != 1:
        return 0, []
    with torch.no_grad():
        for k, v in params.items():
            v.copy_(torch.stack([c["params"][k] for c in ckpts]))
    state = opt.state_dict()
    adam = {n: {k: (torch.stack([c["adam"][n][k] for c in ckpts]) if torch.is_tensor(ckpts[0]["adam"][n][k])
                    and ckpts[0]["adam"][n][k].dim() else ckpts[0]["adam"][n][k]) for k in ckpts[0]["adam"][n]}
            for n in ckpts[0]["adam"]}
    opt.load_state_dict({"state": {int(n): s for n, s in adam.items()}, "param_groups": state["param_groups"]})
    for g, c in zip(gens, ckpts):
        g.set_state(c["rng"])
    rows = zip(*(c.get("history", []) for c in ckpts))  # row j of every member
    history = [{"epoch": row[0]["epoch"], "train_loss": [r["train_loss"] for r in row]} for row in rows]
    ctxs[0].log(f"resumed {len(ctxs)} members after epoch {ckpts[0]['epoch']}")
    return int(ckpts[0]["epoch"]) + 1, history


def _outcome(config: dict, ctx, d: day_of_week.DayOfWeek, base, initial: dict, final: dict) -> dict:
    scale = float(config["input_scale"])
    all_tau = torch.from_numpy(d.tau)
    pre = functional_call(base, final, (all_tau,))  # (n_days,): the weighted sum before the sigmoid
    pred = (pre > 0).float().numpy()
    acc = {name: float((pred[sl] == d.y[sl]).mean()) for name, sl in (("train", slice(0, d.n_train)),
                                                                     ("test", slice(d.n_train, None)))}
    sines0, sines = _sines(initial), _sines(final)
    weights = np.abs(np.asarray(sines["weight"]))
    order = np.argsort(-weights, kind="stable")
    j = int(order[0])
    freq = fold(sines["frequency"], scale)
    ctx.write_artifact("time2vec_synthetic.json", {
        "day": (np.arange(1, len(d.tau) + 1)).tolist(), "tau": d.tau.tolist(), "label": d.y.tolist(),
        "n_train": d.n_train, "pre_activation": pre.tolist(),
        "initial": sines0, "learned": sines,
        "frequency_folding": f"|w| mod 2 pi / {scale:g} into [0, pi / {scale:g}] (inputs are multiples of {scale:g})",
    })
    return {
        "metrics": {
            "train_accuracy": acc["train"], "test_accuracy": acc["test"],
            "dominant_frequency": float(freq[j]), "dominant_frequency_raw": float(sines["frequency"][j]),
            "dominant_phase": float(np.mod(sines["phase"][j], 2 * math.pi)),
            "dominant_weight": float(sines["weight"][j]),
            "second_frequency": float(freq[order[1]]) if len(order) > 1 else None,
            "second_weight": float(sines["weight"][order[1]]) if len(order) > 1 else None,
            "epochs_run": int(config["max_epochs"]),
        },
        "data": {"source": "generated", "standin": False, "generator": "time2vec 5.2 day of week",
                 "sha256": d.sha256(), "n_train": d.n_train, "n_test": int(len(d.tau) - d.n_train),
                 "positives": int(d.y.sum())},
    }


def run(config: dict, ctx) -> dict:
    """One run alone: a stack of one (the same code, so the same result as inside a group)."""
    out = {}
    run_group([config], [ctx], lambda i, outcome: out.update(outcome))
    return out
