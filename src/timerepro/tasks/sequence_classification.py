"""Event-sequence classification: the synthetic task of linear_time (Figures 2 and 3).

Train with BCE and Adam, early stopping on validation loss (the authors' code), restore the best
weights, then report accuracy on each split and the last layer's attention of the read-out row.
The seeds of one configuration train together as a stacked ensemble (`timerepro.ensemble`); each
run draws its batch order and dropout from its own generators, so its result is its own. Training and validation
run the classifier's hand-stacked forward (`SyntheticSequenceClassifier.stacked`), bitwise equal to the vmapped
model (`ensemble.vmapped`, its reference in the tests) at a fraction of the per-operator cost.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from timerepro.data import synthetic_events
from timerepro.datakind import DataKind
from timerepro.models.registry import TaskModels
from timerepro.models.seq.transformer import SyntheticSequenceClassifier
from timerepro import ensemble


def _tensors(seqs: synthetic_events.EventSequences) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return (torch.from_numpy(seqs.dt).float(), torch.from_numpy(seqs.x).float(), torch.from_numpy(seqs.y).float())


@torch.no_grad()
def evaluate(model, dt, x, y, batch_size: int = 1024) -> dict:
    """Loss, accuracy and the mean read-out attention over the M events (renormalized)."""
    model.eval()
    logits, attn_rows = [], []
    for i in range(0, len(y), batch_size):
        out, attn = model(dt[i : i + batch_size], x[i : i + batch_size])
        logits.append(out)
        attn_rows.append(attn[:, -1, :])  # (B, M+1): what the read-out (target) row attends to
    logits = torch.cat(logits)
    attn = torch.cat(attn_rows)
    loss = F.binary_cross_entropy_with_logits(logits, y).item()
    acc = ((logits > 0).float() == y).float().mean().item()
    events = attn[:, :-1]  # (N, M): drop the target row's attention to itself
    return {
        "loss": loss,
        "accuracy": acc,
        "attention_raw": attn.mean(0).tolist(),
        "attention_events": (events / events.sum(-1, keepdim=True)).mean(0).tolist(),
    }


def build_synthetic_transformer(config: dict, time_mean: float, time_std: float) -> SyntheticSequenceClassifier:
    """linear_time 3.2's classifier (params/models.yaml `synthetic_transformer`); the statistics standardize the
    time differences for the linear and cosine_scale encoders."""
    return SyntheticSequenceClassifier(encoder=config["encoder"], d_time=config["d_T"], layers=config["layers"],
                                       attention=config["attention"], dropout=config["dropout"],
                                       time_mean=time_mean, time_std=time_std)


MODELS = TaskModels("sequence_classification")  # name -> builder `build(config, time_mean, time_std)`


def _setup(config: dict, ctx) -> ensemble.Member:
    """Data, initial weights and generators of one run (everything seeded by the run's seed)."""
    data_cfg = config["data"]
    seqs = synthetic_events.generate(
        data_cfg["n_sequences"],
        n_events=data_cfg["n_events"],
        rate=data_cfg["rate"],
        decay=data_cfg["decay"],
        noise_var=data_cfg["noise_var"],
        seed=config["seed"],
    )
    parts = synthetic_events.split(len(seqs), tuple(data_cfg["split"]), seed=config["seed"])
    train, val, test = (seqs.subset(parts[k]) for k in ("train", "val", "test"))
    # Standardization statistics of the observed time differences, from the training split only.
    mean, std = float(train.dt.mean()), float(train.dt.std())
    torch.manual_seed(config["seed"])
    model = MODELS[config["model"]](config, mean, std)
    generators = {
        "order": torch.Generator().manual_seed(config["seed"]),
        "dropout": torch.Generator().manual_seed(int(np.random.SeedSequence([config["seed"], 1]).generate_state(1)[0])),
    }
    data = {"seqs": seqs, "test_seqs": test, "model": model, "tensors": {k: _tensors(t) for k, t in
                                                                        (("train", train), ("val", val), ("test", test))}}
    member = ensemble.new_member(ctx, model, generators, data, patience=config["patience"], mode="min")
    ensemble.resume(member)
    return member


def _dropout_uniforms(members: list[ensemble.Member], model, n: int, batch: int, n_events: int) -> torch.Tensor:
    """One epoch of uniforms for every dropout site of every step, one draw per member: (S, total)."""
    total = sum(int(np.prod(s)) for start in range(0, n, batch)
                for s in model.dropout_shapes(min(batch, n - start), n_events))
    return torch.stack([torch.rand(total, generator=m.generators["dropout"]) for m in members])


def _keep_scale(p: float) -> float:
    """1 / (1 - p) rounded to float32 as the division `mask.float() / (1 - p)` rounds it (float32 / float32)."""
    return float(torch.ones((), dtype=torch.float32) / (1 - p))


def _dropout_masks(uniforms: torch.Tensor, offset: int, model, batch: int, n_events: int,
                   p: float) -> tuple[list[torch.Tensor], int]:
    """This step's scaled keep-masks (S, *site) cut from the epoch's uniforms, and the next offset.

    One compare, cast and in-place scale over the step's contiguous slice, then a view per site: elementwise, so
    each site's mask is bitwise the one computed site by site as `(u >= p).float() / (1 - p)` (tests/unit:
    `_dropout_masks_per_site`): a keep-mask holds only 0 and 1, and 0 / q = 0 * (1 / q), 1 / q = 1 * (1 / q).
    """
    shapes = model.dropout_shapes(batch, n_events)
    sizes = [math.prod(s) for s in shapes]
    end = offset + sum(sizes)
    scaled = torch.ge(uniforms[:, offset:end], p).float().mul_(_keep_scale(p))  # (S, sum of site sizes)
    return [m.view(len(uniforms), *s) for m, s in zip(scaled.split(sizes, dim=1), shapes)], end


def run_group(configs: list[dict], ctxs: list, finish) -> None:
    """Train runs that differ only in their seed as one stacked ensemble; `finish(i, outcome)` per run."""
    members = [_setup(c, ctx) for c, ctx in zip(configs, ctxs)]
    config = configs[0]
    model = members[0].data["model"]
    forward = model.stacked  # f(params, buffers, dt, x, drops): every tensor with a leading member axis
    batch, p, n_events = config["batch_size"], config["dropout"], config["data"]["n_events"]

    def train_epoch(active, flat, buffers, opt, rnd) -> list[dict]:
        rows = torch.arange(len(active)).unsqueeze(1)  # (S, 1): gathers each member's own rows
        n = len(active[0].data["tensors"]["train"][2])
        order = torch.stack([torch.randperm(n, generator=m.generators["order"]) for m in active])  # (S, N)
        # The epoch's rows gathered once in each member's batch order, (S, N, M) and (S, N): each step takes a slice.
        dt, x, y = (torch.stack([m.data["tensors"]["train"][j] for m in active])[rows, order] for j in range(3))
        uniforms = _dropout_uniforms(active, model, n, batch, n_events) if p > 0 else None
        offset = 0
        total = torch.zeros(len(active))
        for i in range(0, n, batch):
            b = min(batch, n - i)
            drops = None
            if uniforms is not None:
                drops, offset = _dropout_masks(uniforms, offset, model, b, n_events, p)
            logits, _ = forward(flat.views(), buffers, dt[:, i : i + b], x[:, i : i + b], drops)  # (S, b)
            losses = F.binary_cross_entropy_with_logits(logits, y[:, i : i + b], reduction="none").mean(1)  # (S,)
            opt.zero_grad()
            losses.sum().backward()  # members share no parameter: each gets its own loss's gradient
            opt.step()
            total += losses.detach() * b
        return [{"train_loss": float(t / n)} for t in total]

    def validate(active, params, buffers) -> list[dict]:
        dt, x, y = (torch.stack([m.data["tensors"]["val"][j] for m in active]) for j in range(3))
        logits, _ = forward(params, buffers, dt, x)  # (S, N); no dropout masks: no dropout
        losses = F.binary_cross_entropy_with_logits(logits, y, reduction="none").mean(1)
        accs = ((logits > 0).float() == y).float().mean(1)
        return [{"loss": float(l), "accuracy": float(a)} for l, a in zip(losses, accs)]

    def on_done(m: ensemble.Member) -> None:
        net = m.data["model"]
        net.load_state_dict(m.state_dict())
        i = members.index(m)
        finish(i, _outcome(configs[i], m, net))

    bar = (lambda total: ctxs[0].progress(range(total), desc=f"{len(members)} seeds")) if ctxs[0].show_progress else None
    ensemble.fit_ensemble(members, lr=config["lr"], max_epochs=config["max_epochs"], monitor="loss",
                          train_epoch=train_epoch, validate=validate, on_done=on_done, progress=bar)


def _outcome(config: dict, m: ensemble.Member, model) -> dict:
    """Final metrics of one run on its best weights, and its Figure 3 attention artifact."""
    data_cfg = config["data"]
    t = m.data["tensors"]
    test = m.data["test_seqs"]
    splits = {name: evaluate(model, *t[name]) for name in ("train", "val", "test")}
    true_attn = synthetic_events.true_attention(test.dt, data_cfg["decay"]).mean(0)
    m.ctx.write_artifact("attention.json", {
        "event_index": list(range(1, data_cfg["n_events"] + 1)),
        "learned": splits["test"]["attention_events"],
        "learned_raw_with_target_row": splits["test"]["attention_raw"],
        "true": true_attn.tolist(),
        "normalization": "learned: read-out row's last-layer attention over the M events, renormalized to sum 1, "
                         "averaged over test sequences; true: exp(-alpha (t - t_m)) normalized over m, averaged",
    })
    learned = np.asarray(splits["test"]["attention_events"])
    return {
        "metrics": {
            "test_accuracy": splits["test"]["accuracy"],
            "val_accuracy": splits["val"]["accuracy"],
            "train_accuracy": splits["train"]["accuracy"],
            "test_loss": splits["test"]["loss"],
            "best_epoch": m.stopper.best_epoch,
            "epochs_run": len(m.history),
            "attention_l1_to_true": float(np.abs(learned - true_attn).sum()),
            "label_balance_test": float(test.y.mean()),
        },
        "data": {
            "kind": DataKind.SYNTHETIC_TASK.value,
            "source": "generated",
            "standin": False,
            "generator": "linear_time Eq. 2",
            "sha256": m.data["seqs"].sha256(),
            "n_train": len(t["train"][2]), "n_val": len(t["val"][2]), "n_test": len(t["test"][2]),
        },
        "resumed_from_epoch": m.resumed_from_epoch,
    }


def run(config: dict, ctx) -> dict:
    """One run alone: the ensemble of one (the same code, so the same result as inside a group)."""
    out = {}
    run_group([config], [ctx], lambda i, outcome: out.update(outcome))
    return out
