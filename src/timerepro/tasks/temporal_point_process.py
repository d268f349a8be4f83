"""Marked temporal point processes, EasyTPP's protocol (hawkes_attention Tables 2-5, Figure 2), for any model that
params/models.yaml gives this task (`timerepro.models.registry`). Its builder is `build(config, num_event_types)
-> nn.Module`: `config` is the resolved run config (the model's defaults merged in), and the module meets the
protocol of `timerepro.tpp.likelihood`: `encode(time_seqs, type_seqs[, attention_mask]) -> hidden [B, L, D]` and
`intensities_at(times_since_last [B, L, S], hidden [B, L, D]) -> [B, L, S, K]`, padding id = num_event_types
(EasyTPP). A model may define `optimizer_param_groups(weight_decay)` for its own Adam groups (`param_groups`).

* data: `prepare(dataset, standin=...)`, EasyTPP's train/dev/test splits (optionally the first
  `train_sequences` training and `test_sequences` test sequences, labelled cuts of the offline scale);
* training: Adam on the negative log-likelihood per event (integral on EasyTPP's grid of
  `loss_integral_num_sample_per_step` points), batches of `batch_size` in stored order unless `shuffle`;
* model selection: early stopping on the validation log-likelihood per event, best weights restored;
* evaluation: test log-likelihood per event, next-event time RMSE and type error rate from one-step thinning
  predictions (EasyTPP's EventSampler settings from the config, seeded by the run's seed);
* Figure 2: the learned kernels phi_c(dt) of every layer, type and head on a dt grid over the observed range
  (`kernels.json`), for models that have them, with the same seed's kernels before training (`phi_initial`, the
  control of claim c10: an untrained model already has every shape class).
"""

from __future__ import annotations

import time

import numpy as np
import torch

from timerepro.data.manifest import data_identity
from timerepro.data.prepare import prepare
from timerepro.data.tpp import EventSequences, TPPData, load_processed
from timerepro.models.registry import build
from timerepro.tpp import ThinningConfig, evaluate, train_epoch
from timerepro.tpp.thinning import THINNING_KEYS
from timerepro.train import fit


def head(seqs: EventSequences, n: int | None) -> EventSequences:
    """The first n sequences of a split (all of them when n is None or larger)."""
    if n is None or n >= len(seqs):
        return seqs
    end = int(seqs.seq_ptr[n])
    return EventSequences(seqs.seq_ptr[: n + 1].copy(), seqs.time_since_start[:end], seqs.time_since_last_event[:end],
                          seqs.type_event[:end], seqs.seq_idx[:n], None if seqs.label is None else seqs.label[:n])


def param_groups(model: torch.nn.Module, config: dict) -> list[dict]:
    """Adam parameter groups: a model's own (Hawkes Attention: decay on the kernel MLPs only) or one group."""
    if hasattr(model, "optimizer_param_groups"):
        return model.optimizer_param_groups(float(config["phi_weight_decay"]))  # hawkes_attention's default: models.yaml
    return [{"params": list(model.parameters()), "weight_decay": float(config.get("weight_decay", 0.0))}]  # no YAML default


def observed_dt_quantile(seqs: EventSequences, q: float = 0.99) -> float:
    """Quantile q of every time difference t_j - t_k (k <= j) within the sequences: what the kernels see."""
    diffs = []
    for n in range(len(seqs)):
        t = seqs.sequence(n)["time_since_start"]
        d = t[:, None] - t[None, :]  # [L, L]: t_j - t_k
        diffs.append(d[np.tril_indices(len(t))])
    all_d = np.concatenate(diffs) if diffs else np.zeros(1)
    return float(np.quantile(all_d, q)) if all_d.size else 1.0


def kernel_curves(model, train: EventSequences, num_event_types: int, points: int) -> dict | None:
    """phi of every layer, type and head on `points` dt values in [0, q99 of the observed t_j - t_k] (Figure 2)."""
    if not hasattr(model, "kernel_curves") or model.layers[0].attn.phi is None:
        return None
    top = max(observed_dt_quantile(train), 1e-6)
    dt = torch.linspace(0.0, top, points, device=next(model.parameters()).device)
    phi = model.kernel_curves(dt).cpu()  # [num_layers, C, H, G]; C = 1 when phi is shared
    dt = dt.cpu()
    counts = np.bincount(train.type_event, minlength=num_event_types)
    return {"dt": dt.tolist(), "phi": phi.tolist(), "axes": ["layer", "type", "head", "dt"],
            "shared": bool(phi.size(1) == 1 and num_event_types > 1),
            "type_counts_train": counts.tolist(), "dt_max": top,
            "dt_range": "0 to the 0.99 quantile of all t_j - t_k (k <= j) of the training sequences"}


def log_inter_time_stats(seqs: EventSequences) -> tuple[float, float]:
    """Mean and std of log inter-event times (first events left out, clipped at 1e-5) of a training split."""
    ptr = seqs.seq_ptr[:-1]  # [S]: index of each sequence's first event
    keep = np.ones(len(seqs.time_since_last_event), dtype=bool)
    keep[ptr[seqs.lengths > 0]] = False
    logs = np.log(np.clip(seqs.time_since_last_event[keep], 1e-5, None))
    return (float(logs.mean()), float(logs.std())) if logs.size else (0.0, 1.0)


def builder_config(config: dict, train: EventSequences) -> dict:
    """The run config plus what EasyTPP's runner derives from the training split (IntensityFree's log-time
    normalisation); values set in the config win, a null (params/models.yaml's default) is filled from the split."""
    derived = dict(zip(("mean_log_inter_time", "std_log_inter_time"), log_inter_time_stats(train)))
    return {**config, **{k: v for k, v in derived.items() if config.get(k) is None}}


def _load(config: dict) -> tuple[TPPData, dict]:
    standin = config.get("standin")
    folder = prepare(config["dataset"], standin=standin, require_pinned=standin is None, progress=False)
    data = load_processed(folder)
    return data, data_identity(config["dataset"], standin, data.manifest)


def run(config: dict, ctx) -> dict:
    seed = int(config["seed"])
    data, info = _load(config)
    K = data.dim_process
    train = head(data.splits["train"], config["train_sequences"])
    dev, test = data.splits["dev"], head(data.splits["test"], config["test_sequences"])
    batch = int(config["batch_size"])
    n_int = int(config["loss_integral_num_sample_per_step"])

    device = torch.device(ctx.device)
    torch.manual_seed(seed)
    model = build("temporal_point_process", config["model"], builder_config(config, train), K).to(device)
    initial = kernel_curves(model, train, K, int(config["kernel_grid_points"]))  # Figure 2's control (claim c10)
    opt = torch.optim.Adam(param_groups(model, config), lr=float(config["lr"]))
    gen = torch.Generator().manual_seed(seed)
    n_batches = -(-len(train) // batch)  # ceil

    def one_epoch(epoch: int, cursor) -> dict:
        return train_epoch(model, opt, train, batch_size=batch, shuffle=bool(config["shuffle"]), generator=gen,
                           num_samples=n_int, max_grad_norm=config.get("max_grad_norm"), cursor=cursor,
                           progress=lambda batches: ctx.progress(batches, desc=f"epoch {epoch}", total=n_batches))

    def validate() -> dict:
        m = evaluate(model, dev, batch_size=batch, thinning=None, num_samples=n_int)
        return {"loglike_per_event": m["loglike_per_event"]}

    result = fit(model, opt, train_epoch=one_epoch, validate=validate, monitor="loglike_per_event", mode="max",
                 max_epochs=int(config["max_epochs"]), patience=int(config["patience"]), ctx=ctx, generator=gen,
                 mid_epoch=True)

    thinning = ThinningConfig(**{k: config[k] for k in THINNING_KEYS})
    t_test = time.perf_counter()
    te = evaluate(model, test, batch_size=batch, thinning=thinning, seed=seed, num_samples=n_int)
    timing = {"test_time_s": round(time.perf_counter() - t_test, 4)}  # provenance: the thinning predictions
    selected = result.selected()  # the dev pass that chose the restored weights (`validate`): read, not run again
    val_ll = (selected["val_loglike_per_event"] if selected is not None
              else evaluate(model, dev, batch_size=batch, thinning=None, num_samples=n_int)["loglike_per_event"])
    curves = kernel_curves(model, train, K, int(config["kernel_grid_points"]))
    if curves is not None:  # phi_initial: the same seed's kernels before training, on the same dt grid
        ctx.write_artifact("kernels.json", curves | {"phi_initial": initial["phi"]})
    epoch_times = [row["epoch_time_s"] for row in result.history]
    return {
        "metrics": {
            "test_loglike_per_event": te["loglike_per_event"],
            "test_rmse": te["rmse"],
            "test_error_rate": te["error_rate"],
            "test_acc": te["acc"],
            "test_n_events": te["n_events"],
            "val_loglike_per_event": val_ll,
            "best_epoch": result.best_epoch,
            "epochs_run": result.epochs_run,
            "epoch_time_s": float(np.mean(epoch_times)) if epoch_times else None,
            "n_parameters": int(sum(p.numel() for p in model.parameters())),
        },
        "data": {**info, "num_event_types": K, "n_train": len(train), "n_train_available": len(data.splits["train"]),
                 "n_val": len(dev), "n_test": len(test), "train_events": int(train.lengths.sum())},
        "resumed_from_epoch": result.resumed_from_epoch,
        "timing": timing,
    }
