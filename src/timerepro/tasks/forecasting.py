"""Long-term multivariate forecasting with iTransformer's protocol (hawkes_attention Table 9).

* data: `prepare(series, standin=...)`, iTransformer's split borders and a StandardScaler fitted on the
  training rows only (`timerepro.data.series.split`); windows: history x = rows [i, i + seq_len), target
  y = rows [i + seq_len, i + seq_len + pred_len), i = 0 .. len - seq_len - pred_len (`__len__` of
  iTransformer's Dataset_*); val/test rows start seq_len earlier, so their first target follows the border;
* training: MSE on scaled values, Adam(lr), shuffled batches with the last incomplete batch dropped,
  learning rate lr * 0.5^epoch (iTransformer's `lradj: type1`), early stopping on the validation MSE
  (patience 3 in iTransformer), best weights restored; `max_train_windows` (below paper scale only)
  trains each epoch on a random subset of the training windows and `max_eval_windows` evaluates val and
  test on evenly spaced windows;
* evaluation: MSE and MAE over every window and every value of the scaled test (and val) split, as
  iTransformer's `metric(preds, trues)` without inverse scaling.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from timerepro.data import series
from timerepro.data.manifest import data_identity
from timerepro.data.prepare import prepare
from timerepro.models.forecast.hawkes_ts import HawkesTS
from timerepro.models.registry import TaskModels
from timerepro.train import fit

MODEL_KEYS = ("d_model", "n_heads", "e_layers", "d_ff", "phi_width", "phi_depth", "dropout", "tokens", "kernel",
              "use_norm")


def build_hawkes_ts(config: dict, n_vars: int) -> HawkesTS:
    return HawkesTS(n_vars, int(config["seq_len"]), int(config["pred_len"]),
                    **{k: config[k] for k in MODEL_KEYS if k in config})


MODELS = TaskModels("forecasting")  # name -> builder `build(config, n_vars)`, as params/models.yaml maps them


def windows(values: np.ndarray, seq_len: int, pred_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Every (history, target) pair of a split: [T, V] -> x [n, seq_len, V], y [n, pred_len, V] (views)."""
    t = torch.as_tensor(values, dtype=torch.float32)
    n = max(0, t.size(0) - seq_len - pred_len + 1)
    # unfold: [T - w + 1, V, w] -> [n, w, V], w = seq_len + pred_len
    w = t.unfold(0, seq_len + pred_len, 1)[:n].transpose(1, 2)
    return w[:, :seq_len], w[:, seq_len:]


def evenly_spaced(x: torch.Tensor, y: torch.Tensor, cap: int) -> tuple[torch.Tensor, torch.Tensor]:
    """At most `cap` windows, evenly spaced from the first to the last (all of them when fewer)."""
    if len(x) <= cap:
        return x, y
    idx = torch.linspace(0, len(x) - 1, cap).round().long()
    return x[idx], y[idx]


@torch.no_grad()
def evaluate(model, x: torch.Tensor, y: torch.Tensor, batch_size: int = 256, max_elements: int = 2 ** 22) -> dict:
    """MSE and MAE of the model's forecasts over all windows (no inverse scaling); batches hold at most
    `max_elements` forecast values (Traffic: 862 variates x 720 steps per window)."""
    model.eval()
    if len(x) == 0:
        raise ValueError("no windows to evaluate: the split is shorter than seq_len + pred_len")
    device = next(model.parameters(), torch.empty(0)).device
    batch_size = max(1, min(batch_size, max_elements // y[0].numel()))
    sq, ab, count = 0.0, 0.0, 0
    for i in range(0, len(x), batch_size):
        diff = model(x[i:i + batch_size].to(device)) - y[i:i + batch_size].to(device)
        sq += float(diff.square().sum(dtype=torch.float64))
        ab += float(diff.abs().sum(dtype=torch.float64))
        count += diff.numel()
    return {"mse": sq / count, "mae": ab / count, "n_windows": len(x)}


def load(config: dict) -> tuple[series.SeriesData, dict]:
    """The processed series named by config['series'] (its labelled stand-in below paper scale)."""
    name = config["series"]
    if config.get("datasets") and name not in config["datasets"]:
        raise ValueError(f"series {name!r} is not one of the experiment's datasets {config['datasets']}")
    standin = config.get("standin")
    data = series.load_processed(prepare(name, standin=standin, require_pinned=standin is None, progress=False))
    return data, data_identity(name, standin, data.manifest)


def run(config: dict, ctx) -> dict:
    seed, batch = int(config["seed"]), int(config["batch_size"])
    seq_len, pred_len = int(config["seq_len"]), int(config["pred_len"])
    builder = MODELS[config["model"]]  # unknown names are refused here, before any data is read
    data, info = load(config)
    parts = series.split(data, seq_len=seq_len)
    (xtr, ytr), (xva, yva), (xte, yte) = (windows(getattr(parts, s), seq_len, pred_len)
                                          for s in ("train", "val", "test"))
    n_windows = {"train": len(xtr), "val": len(xva), "test": len(xte)}
    cap_eval = config["max_eval_windows"]
    if cap_eval:  # below paper scale only: at most cap_eval evenly spaced windows of val and test
        (xva, yva), (xte, yte) = (evenly_spaced(x, y, int(cap_eval)) for x, y in ((xva, yva), (xte, yte)))
    if min(len(xtr), len(xva), len(xte)) == 0:
        raise ValueError(f"{config['series']}: a split has no window of {seq_len} + {pred_len} rows "
                         f"(train/val/test windows {len(xtr)}/{len(xva)}/{len(xte)})")

    torch.manual_seed(seed)
    device = torch.device(ctx.device)
    model = builder(config, data.values.shape[1]).to(device)
    lr0 = float(config["lr"])
    opt = torch.optim.Adam(model.parameters(), lr=lr0)
    cap = config["max_train_windows"]

    def train_epoch(epoch: int, cursor) -> dict:
        model.train()
        lr = lr0 * 0.5 ** epoch if config["lradj"] == "type1" else lr0  # iTransformer's type1
        for group in opt.param_groups:
            group["lr"] = lr
        # the order of epoch e comes from a stream seeded by (seed, e): a resumed run sees the same batches
        gen = torch.Generator().manual_seed(seed * 100003 + epoch)
        order = torch.randperm(len(xtr), generator=gen)
        if cap:
            order = order[:int(cap)]
        steps = max(1, len(order) // batch)  # drop_last=True (one short batch if fewer windows)
        carry = {"total": 0.0}  # what a stopped epoch carries to its resumption (dropout: the global RNG, restored)
        batches = cursor.batches(range(steps), carry=carry)
        for b in ctx.progress(batches, desc=f"epoch {epoch}", total=steps):  # a rehearsal bounds and times it
            idx = order[b * batch:(b + 1) * batch]
            loss = F.mse_loss(model(xtr[idx].to(device)), ytr[idx].to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            carry["total"] += loss.item()
        return {"train_loss": carry["total"] / steps, "lr": lr}

    def validate() -> dict:
        m = evaluate(model, xva, yva)
        return {"loss": m["mse"], "mae": m["mae"]}

    result = fit(model, opt, train_epoch=train_epoch, validate=validate, monitor="loss", mode="min",
                 max_epochs=int(config["max_epochs"]), patience=int(config["patience"]), ctx=ctx, mid_epoch=True)
    test = evaluate(model, xte, yte)
    selected = result.selected()  # the validation pass that chose the restored weights: read, not run again
    val = ({"mse": selected["val_loss"], "mae": selected["val_mae"]} if selected is not None
           else evaluate(model, xva, yva))
    return {
        "metrics": {
            "test_mse": test["mse"], "test_mae": test["mae"], "val_mse": val["mse"], "val_mae": val["mae"],
            "best_epoch": result.best_epoch, "epochs_run": result.epochs_run,
            "n_parameters": int(sum(p.numel() for p in model.parameters())),
            "n_windows": n_windows,
            "train_windows_per_epoch": min(len(xtr), int(cap)) if cap else len(xtr),
            "eval_windows": {"val": len(xva), "test": len(xte)},
        },
        "data": {**info, "rows": int(len(data.values)), "variables": int(data.values.shape[1]),
                 "borders": [parts.border1s, parts.border2s]},
        "resumed_from_epoch": result.resumed_from_epoch,
    }
