"""Dynamic node classification, DyGLib's protocol (`train_node_classification.py`,
`evaluate_models_utils.py::evaluate_model_node_classification`, `models/modules.py::MLPClassifier`).

* backbone (`backbone_weights`, absent: `trained`): a link-prediction model (`tasks.link_prediction.MODELS`),
  trained in this run by the link-prediction task for `backbone_epochs` epochs (its record in
  `<run>/backbone/`), or loaded from a completed link-prediction run record (`backbone_run_dir`, a run kept with
  `keep_checkpoint: true`); or `random`: the model as built from the run's seed, untrained (DyG-Mamba's script,
  whose checkpoint load is commented out: train_node_classification.py:132-136); then frozen: eval mode,
  `requires_grad` off, not given to the optimizer;
* data: DyGLib's node-classification split (time quantiles 0.70/0.85, no held-out nodes), the edge's
  `label` (state change of the source after the interaction) as target;
* input of the head: the backbone's source embedding of each edge at its time (the destination is the
  edge's own), every split on the full graph (DyGLib's `full_neighbor_sampler`, seed 1, reset per pass);
* head: DyGLib's MLPClassifier (d -> 80 -> 10 -> 1, ReLU, dropout), BCE, Adam(lr) (or the `optimizer`
  of the config, as the backbone), batches of `batch_size` in time order; the head tested (`head_epoch`): the
  best validation ROC-AUC over the whole split (`best`, DyGLib), the last epoch's (`last`, swinit's authors) or
  DyGLib's early stopping stepped on test and validation AUC (`test_stepped`, DyG-Mamba's script:
  node_classification_stopping.py); a backbone may say what the head reads (`classification_embeddings`,
  `classification_dim`; default: its link-prediction source embedding);
* metrics: `val_auc`, `test_auc` (ROC-AUC over the whole split, DyGLib's `roc_auc_score`), losses.

The backbone is frozen and in eval mode, so every epoch of DyGLib recomputes the same embeddings: here
they are computed once per run (same batches, same order, same neighbour draws) and the head trains on them.
"""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from timerepro.data.ctdg import CTDGData, link_prediction_split, node_classification_split
from timerepro.graphs.evaluate import roc_auc
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.io import atomic_write_bytes, atomic_write_json
from timerepro.models.graph.memory import stream_state
from timerepro.tasks import link_prediction as lp
from timerepro.tasks.effective import effective_config
from timerepro.tasks.node_classification_stopping import fit_test_stepped
from timerepro.train import fit

# which epoch's head is tested: best validation AUC (DyGLib), the last (swinit), or DyGLib's early stopping stepped on
# test and validation AUC with one shared best (DyG-Mamba's train_node_classification.py:286-322)
HEAD_EPOCHS = ("best", "last", "test_stepped")
# keys of a node-classification config that configure the head, not the backbone's link prediction
BACKBONE_KEYS = {"backbone_lr": "lr", "backbone_epochs": "max_epochs", "backbone_patience": "patience",
                 "backbone_eval_negatives": "eval_negatives"}


class MLPClassifier(nn.Module):
    """DyGLib's node-classification head: Linear(d, 80) ReLU dropout Linear(80, 10) ReLU dropout Linear(10, 1)."""

    def __init__(self, input_dim: int, dropout: float = 0.1):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(input_dim, 80), nn.Linear(80, 10), nn.Linear(10, 1)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, d) -> (B,) logits."""
        x = self.dropout(F.relu(self.fc1(x)))  # (B, 80)
        x = self.dropout(F.relu(self.fc2(x)))  # (B, 10)
        return self.fc3(x).squeeze(-1)


# ------------------------------------------------------------------ the backbone

def backbone_config(config: dict) -> dict:
    """The link-prediction config of the backbone: the node-classification config with `backbone_*`
    keys in place of the head's lr, epochs, patience and evaluation samplers."""
    out = {**config, "task": "link_prediction", "run_id": f"{config['run_id']}-backbone"}
    for key, target in BACKBONE_KEYS.items():
        out[target] = config[key]
    return out


def _rebuild(lp_config: dict, data: CTDGData) -> lp.LinkPredictionModel:
    """An untrained link-prediction model built exactly as `link_prediction.run` builds it (same split,
    hence the same time-difference statistics, which are attributes and not in the state dict). `lp_config`:
    an effective config; a name params/models.yaml does not give link_prediction is refused."""
    split = link_prediction_split(data)
    return lp.build_model(lp_config, data, split, TemporalNeighbors.from_data(data, split.train))


def train_backbone(config: dict, ctx, data: CTDGData) -> tuple[lp.LinkPredictionModel, dict]:
    """Train (or resume, or reuse) the backbone by link prediction in `<run>/backbone/`; return the
    model with its selected weights and the link-prediction metrics."""
    lp_config = backbone_config(config)
    folder = Path(ctx.dir) / "backbone"
    weights = folder / "backbone.pt"
    if not weights.is_file():
        sub = ctx.nested(lp_config, folder)  # its own folder and checkpoint; this run's device, code and memory
        folder.mkdir(parents=True, exist_ok=True)
        outcome = lp.run(lp_config, sub)  # resumes from backbone/checkpoint.pt after a kill
        best = sub.load_checkpoint()["best_state"]  # the weights link_prediction selected
        buf = io.BytesIO()
        torch.save({"state": best, "metrics": {"run_id": lp_config["run_id"], **outcome["metrics"]}}, buf)
        atomic_write_bytes(weights, buf.getvalue())
        atomic_write_json(folder / "metrics.json", {"run_id": lp_config["run_id"], **outcome["metrics"]})
        sub.checkpoint_path.unlink(missing_ok=True)
    saved = torch.load(weights, map_location="cpu", weights_only=False)
    model = _rebuild(lp_config, data)
    model.load_state_dict(saved["state"])
    return model, saved["metrics"]


def load_backbone(config: dict, data: CTDGData) -> tuple[lp.LinkPredictionModel, dict]:
    """The selected weights of a completed link-prediction run record (kept with `keep_checkpoint: true`)."""
    folder = Path(config["backbone_run_dir"])
    cfg_path, ckpt = folder / "config.json", folder / "checkpoint.pt"
    if not (folder / "metrics.json").is_file() or not cfg_path.is_file():
        raise FileNotFoundError(f"{folder}: not a completed run record (config.json, metrics.json)")
    if not ckpt.is_file():
        raise FileNotFoundError(f"{ckpt}: the link-prediction run kept no weights; rerun it with keep_checkpoint: true")
    lp_config = effective_config(json.loads(cfg_path.read_text()))  # config.json is the declared config
    if lp_config.get("task") != "link_prediction":
        raise ValueError(f"{folder}: task {lp_config.get('task')!r}, not link_prediction")
    for key in ("dataset", "standin", "model"):
        if lp_config.get(key) != config.get(key):
            raise ValueError(f"{folder}: {key} {lp_config.get(key)!r} differs from this run's {config.get(key)!r}")
    model = _rebuild(lp_config, data)
    model.load_state_dict(torch.load(ckpt, map_location="cpu", weights_only=False)["best_state"])
    return model, json.loads((folder / "metrics.json").read_text())


def random_backbone(config: dict, ctx, data: CTDGData) -> tuple[lp.LinkPredictionModel, dict]:
    """The untrained backbone of the run's seed: DyG-Mamba's node-classification script builds the model after
    `set_random_seed(run)` and leaves its checkpoint load commented out (train_node_classification.py:56, 118-136),
    so its classifier reads a random, frozen model. No link prediction runs: no backbone metrics."""
    if config.get("backbone_run_dir"):
        raise ValueError("backbone_weights: random takes no backbone_run_dir (a kept record is a trained backbone)")
    torch.manual_seed(int(config["seed"]))
    return _rebuild(backbone_config(config), data), {}


def trained_backbone(config: dict, ctx, data: CTDGData) -> tuple[lp.LinkPredictionModel, dict]:
    """DyGLib's: the selected weights of a kept link-prediction record, or of link prediction trained in this run."""
    return load_backbone(config, data) if config.get("backbone_run_dir") else train_backbone(config, ctx, data)


# `backbone_weights` (absent: trained, so the other papers' run ids stay) -> (config, ctx, data) -> (model, metrics)
BACKBONE_WEIGHTS = {"trained": trained_backbone, "random": random_backbone}


def freeze(model: nn.Module) -> nn.Module:
    """Eval mode (no dropout) and no gradients, as DyGLib's `model[0].eval()` under `torch.no_grad()`."""
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


# ------------------------------------------------------------------ embeddings and the head

@torch.no_grad()
def source_embeddings(model: lp.LinkPredictionModel, data: CTDGData, idx: np.ndarray, graph: TemporalNeighbors,
                      batch_size: int, reset: bool = False) -> torch.Tensor:
    """Source embeddings (len(idx), d) of the edges `idx` at their times, batch by batch as DyGLib: the
    neighbour stream restarts (seed 1), a memory backbone is reset first if `reset` and sees each batch
    after it is embedded."""
    model.backbone.set_graph(graph, lp.neighbor_rng(lp.EVAL_NEIGHBOR_SEED))
    state = stream_state(model.backbone)
    if reset:
        state.reset_state()
    out = []
    for start in range(0, len(idx), batch_size):
        b = idx[start:start + batch_size]
        src, dst, ts = data.src[b], data.dst[b], data.ts[b]
        h_src, _ = _classification_embeddings(model.backbone)(src, dst, ts)  # (B, d)
        out.append(h_src.float())  # on the device until the end of the pass
        state.observe(src, dst, ts, data.edge_ids[b])
    return torch.cat(out).cpu() if out else torch.zeros(0, _classification_dim(model.backbone))


def _classification_embeddings(backbone: nn.Module):
    """What the head reads: `classification_embeddings` where a backbone defines it (SWINIT reads its
    memory, as the authors' code), else the link-prediction embeddings."""
    return getattr(backbone, "classification_embeddings", backbone.pair_embeddings)


def _classification_dim(backbone: nn.Module) -> int:
    return getattr(backbone, "classification_dim", backbone.out_dim)


@torch.no_grad()
def evaluate_head(head: MLPClassifier, emb: torch.Tensor, labels: np.ndarray, batch_size: int) -> dict:
    """Probabilities of the split (sigmoid, float32), its ROC-AUC over the whole split and its BCE."""
    head.eval()
    probs = torch.cat([torch.sigmoid(head(emb[s:s + batch_size])) for s in range(0, len(emb), batch_size)])
    y = torch.as_tensor(labels, dtype=torch.float32)
    return {"auc": roc_auc(labels, probs.numpy()), "loss": F.binary_cross_entropy(probs, y).item(), "probs": probs.numpy()}


def _check_labels(name: str, labels: np.ndarray) -> None:
    values = set(np.unique(labels).tolist())
    if not values <= {0.0, 1.0}:
        raise ValueError(f"{name} labels must be 0/1 for binary node classification, got {sorted(values)[:5]}")
    if len(values) < 2:
        raise ValueError(f"{name} split holds a single class ({values}): ROC-AUC is undefined")


def _head_epoch(config: dict) -> str:
    """The config's `head_epoch` (absent: best), refused when unknown or incomplete."""
    head_epoch = config.get("head_epoch", "best")
    if head_epoch not in HEAD_EPOCHS:
        raise ValueError(f"unknown head_epoch {head_epoch!r}; known: {HEAD_EPOCHS}")
    if head_epoch == "test_stepped" and not config.get("test_interval_epochs"):
        raise ValueError("head_epoch: test_stepped needs test_interval_epochs (DyGLib's 10: load_configs.py:444)")
    return head_epoch


def train_head(model: lp.LinkPredictionModel, data: CTDGData, config: dict, ctx) -> dict:
    """Embed every split with the frozen backbone, train DyGLib's MLPClassifier on the source embeddings
    with `fit` or `fit_test_stepped` (checkpoint and resume through ctx), return the metrics of the selected head."""
    split = node_classification_split(data)
    graph = TemporalNeighbors.from_data(data)  # DyGLib: the full graph for training, validation and test
    batch_size = int(config["batch_size"])
    parts = {name: np.flatnonzero(getattr(split, name)) for name in ("train", "val", "test")}
    labels = {name: data.labels[idx].astype(np.float64) for name, idx in parts.items()}
    for name in ("val", "test"):
        _check_labels(name, labels[name])
    t0 = time.perf_counter()
    # memory backbones continue from train to val to test, as DyGLib's frozen memory does
    emb = {name: source_embeddings(model, data, idx, graph, batch_size, reset=name == "train")
           for name, idx in parts.items()}
    embed_time = time.perf_counter() - t0

    torch.manual_seed(int(config["seed"]))  # the head's initialisation does not depend on the backbone's path
    # DyGLib's head uses the backbone's dropout (per dataset for DyGFormer: dataset_defaults, in the effective config);
    # `head_dropout` its own (swinit's authors: MLP(drop=0.1), node_classification.py ~509)
    dropout = config.get("head_dropout", config["dropout"])
    head = MLPClassifier(_classification_dim(model.backbone), float(dropout))
    opt = lp.make_optimizer(config, head.parameters())
    y_train = torch.as_tensor(labels["train"], dtype=torch.float32)
    # `head_epoch: last` keeps the last epoch's head (swinit's authors report its test AUC, ~515-526): the monitored
    # count of trained epochs improves every epoch; absent or `best`: the best validation AUC (DyGLib);
    # `test_stepped`: DyG-Mamba's script (node_classification_stopping.py)
    head_epoch = _head_epoch(config)
    trained = [0]

    def train_epoch(epoch: int, cursor) -> dict:
        trained[0] = epoch + 1
        head.train()
        carry = {"total": 0.0}  # what a stopped epoch carries to its resumption (dropout: the global RNG, restored)
        starts = range(0, len(y_train), batch_size)
        for start in ctx.progress(cursor.batches(starts, carry=carry),
                                  desc=f"epoch {epoch}", initial=cursor.start, total=len(starts)):
            logits = head(emb["train"][start:start + batch_size])  # (B,)
            loss = F.binary_cross_entropy_with_logits(logits, y_train[start:start + batch_size])
            opt.zero_grad()
            loss.backward()
            opt.step()
            carry["total"] += loss.item() * len(logits)
        return {"train_loss": carry["total"] / max(len(y_train), 1)}

    def evaluate(name: str) -> dict:
        m = evaluate_head(head, emb[name], labels[name], batch_size)
        return {"auc": m["auc"], "loss": m["loss"]}

    def validate() -> dict:
        return {**evaluate("val"), **({"trained_epochs": trained[0]} if head_epoch == "last" else {})}

    if head_epoch == "test_stepped":
        result = fit_test_stepped(head, opt, train_epoch=train_epoch, validate=validate, test=lambda: evaluate("test"),
                                  interval=int(config["test_interval_epochs"]), max_epochs=int(config["max_epochs"]),
                                  patience=int(config["patience"]), ctx=ctx, mid_epoch=True)
    else:
        monitor = "trained_epochs" if head_epoch == "last" else "auc"
        result = fit(head, opt, train_epoch=train_epoch, validate=validate, monitor=monitor, mode="max",
                     max_epochs=int(config["max_epochs"]), patience=int(config["patience"]), ctx=ctx, mid_epoch=True)
    metrics: dict = {}
    for name in ("val", "test"):
        m = evaluate_head(head, emb[name], labels[name], batch_size)
        metrics[f"{name}_auc"], metrics[f"{name}_loss"] = m["auc"], m["loss"]
    epoch_times = [row["epoch_time_s"] for row in result.history]
    metrics.update({
        "best_epoch": result.best_epoch, "epochs_run": result.epochs_run,
        "epoch_time_s": float(np.mean(epoch_times)) if epoch_times else None, "embedding_time_s": embed_time,
        "n_parameters": lp.count_parameters(head), "n_backbone_parameters": lp.count_parameters(model.backbone),
        **{f"n_{name}": int(len(idx)) for name, idx in parts.items()},
        **{f"n_{name}_positive": int(labels[name].sum()) for name in parts},
    })
    return {"metrics": metrics, "resumed_from_epoch": result.resumed_from_epoch}


# ------------------------------------------------------------------ the run

def run(config: dict, ctx) -> dict:
    """Backbone (trained here, loaded, or random: `backbone_weights`), frozen; head trained and selected as
    `head_epoch` says. `config`: the effective config (`effective_config`, applied by the run before the task)."""
    if config["model"] not in lp.MODELS:
        raise KeyError(f"unknown link-prediction model {config['model']!r}; known: {sorted(lp.MODELS)}")
    weights = config.get("backbone_weights", "trained")
    if weights not in BACKBONE_WEIGHTS:
        raise ValueError(f"unknown backbone_weights {weights!r}; known: {sorted(BACKBONE_WEIGHTS)}")
    _head_epoch(config)  # refused before any training
    data, data_info = lp.load_data(config)
    split = node_classification_split(data)
    for name in ("val", "test"):  # before any training
        _check_labels(name, data.labels[getattr(split, name)])
    model, backbone_metrics = BACKBONE_WEIGHTS[weights](config, ctx, data)
    model = freeze(model.to(torch.device(ctx.device)))
    outcome = train_head(model, data, config, ctx)
    metrics = outcome["metrics"]
    metrics.update({f"backbone_{k}": v for k, v in backbone_metrics.items() if k not in ("paper", "experiment")})
    metrics.update({
        "peak_rss_mb": round(ctx.peak_memory_mb(), 1),  # this run's own peak (timerepro.memory)
        "time_diff_mean": getattr(model.backbone, "time_mean", None),
        "time_diff_std": getattr(model.backbone, "time_std", None),
    })
    return {"metrics": metrics,
            "data": {**data_info, "n_edges": int(len(data.src)), "n_train": int(split.train.sum()),
                     "n_val": int(split.val.sum()), "n_test": int(split.test.sum())},
            "resumed_from_epoch": outcome["resumed_from_epoch"]}
