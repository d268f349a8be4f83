"""Future link prediction on a continuous-time dynamic graph, DyGLib's protocol (`train_link_prediction.py`,
`evaluate_link_prediction.py`, `evaluate_models_utils.py`), for any backbone of the model registry.

* data: `prepare(dataset, standin=...)`, DyGLib's chronological 70/15/15 split with held-out new nodes;
* training: the training edges in time order, batches of `batch_size`, one random negative per
  positive (the positive source with a random destination), BCE, Adam(lr); the model sees only the
  training edges while training and every edge while evaluating;
* model selection: early stopping on a validation metric (`monitor_metric`, DyGLib's batch-averaged
  AP by default) under `monitor_negatives` (random by default), best weights restored;
* evaluation: validation and test, transductive (all edges of the split) and inductive (edges with a
  node unseen in training), under every sampler of `eval_negatives`, with DyGLib's batch-averaged AP
  and AUC and beside them the whole-split figures (`*_whole`);
* cost: mean training time per epoch, peak process RSS (and peak GPU memory on CUDA), parameters.

Metric names: `{val|test}_{transductive|inductive}_{negatives}_{ap|auc|ap_whole|auc_whole}`.
A backbone is one entry of MODELS: `builder(config, data, split, train_graph) -> module` with
`pair_embeddings(src, dst, times) -> (h_src, h_dst)`, `set_graph(neighbors, rng)` and `out_dim`.
A backbone with a state that evolves with the stream (TGN's memory) also has the optional hooks the
task calls when present (`_hook`), as DyGLib drives its memory bank:
`reset_state()` at the start of every training epoch; `observe(src, dst, times, edge_ids)` after each
batch of positives has been scored (training: after `backward`, before the optimizer step; evaluation:
after the batch's negatives too), so a batch never sees its own edges; `backup_state(name)` /
`restore_state(name)`: copies kept in the backbone's `state_dict` (hence in checkpoints), taken at the
end of each training epoch ("train_end") and after model selection ("val_end"): validation parts start
from the end of training, test parts from the end of validation. `pair_embeddings` must not change
that state.
"""

from __future__ import annotations

import resource
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from timerepro.data.ctdg import CTDGData, LinkSplit, link_prediction_split, load_processed
from timerepro.data.manifest import data_identity
from timerepro.data.prepare import prepare
from timerepro.graphs.evaluate import batched_metrics
from timerepro.graphs.negatives import STRATEGIES, dyglib_eval_samplers, train_sampler
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.dygformer import DyGFormer, dygformer_hparams, recency_index_stats
from timerepro.models.graph.attention_record import RECORDABLE, attention_records, record_attention, sample_edges
from timerepro.models.graph.cawn import CAWN
from timerepro.models.graph.defaults import with_dataset_defaults
from timerepro.models.graph import dyg_mamba, edgebank, graphmixer, overrides, tcl
from timerepro.models.graph.tgat import TGAT, LinkPredictor
from timerepro.models.graph.tgn import TGN
from timerepro.train import FitResult, fit

# DyGLib's seeds of the neighbour samplers' streams (uniform sampling), reset at every set_graph
TRAIN_NEIGHBOR_SEED, EVAL_NEIGHBOR_SEED = 0, 1
# evaluation parts: (name of the sampler in dyglib_eval_samplers, split mask, metric prefix)
PARTS = (("val", "val", "val_transductive"), ("new_node_val", "new_node_val", "val_inductive"),
         ("test", "test", "test_transductive"), ("new_node_test", "new_node_test", "test_inductive"))
MONITOR_MODE = {"ap": "max", "auc": "max", "ap_whole": "max", "auc_whole": "max", "loss": "min"}


# ------------------------------------------------------------------ statistics of time differences

def time_difference_stats(graph: TemporalNeighbors, nodes, times, k: int) -> tuple[float, float]:
    """Mean and (population) standard deviation of every t - t_k over the queries (nodes, times) and
    their k most recent interactions before t in `graph`; padding left out. (0, 1) without any
    history; std 1 when all differences are equal (the linear encoder needs std > 0)."""
    hood = graph.most_recent(nodes, times, k)  # (Q, k)
    valid = hood.neighbor_ids != 0
    dt = (np.asarray(times, dtype=np.float64)[:, None] - hood.times.astype(np.float64))[valid]
    if dt.size == 0:
        return 0.0, 1.0
    std = float(dt.std())
    return float(dt.mean()), std if std > 0 else 1.0


def train_time_stats(data: CTDGData, split: LinkSplit, train_graph: TemporalNeighbors, k: int) -> tuple[float, float]:
    """linear_time App. D.2 on the training split: both endpoints of every training edge at its
    time, against the k most recent training interactions (what the first layer encodes)."""
    src, dst, ts = data.src[split.train], data.dst[split.train], data.ts[split.train]
    return time_difference_stats(train_graph, np.concatenate([src, dst]), np.concatenate([ts, ts]), k)


# ------------------------------------------------------------------ model registry

def build_tgat(config: dict, data: CTDGData, split: LinkSplit, train_graph: TemporalNeighbors) -> TGAT:
    """TGAT; statistics of what the encoder reads on the training split (t - t_k, or recency indices 1..k)."""
    k = int(config["num_neighbors"])
    time_input = config.get("time_input", "time")
    if time_input == "position":
        ranks = np.arange(1, k + 1, dtype=np.float64)  # every full neighbourhood holds indices 1..k once
        mean, std = float(ranks.mean()), float(ranks.std())
    else:
        mean, std = train_time_stats(data, split, train_graph, k)
    return TGAT(data.node_feat, data.edge_feat, encoder=config["encoder"], time_dim=int(config["d_T"]),
                time_mean=mean, time_std=std, num_layers=int(config["num_layers"]),
                num_heads=int(config["num_heads"]), num_neighbors=k, dropout=float(config["dropout"]),
                sampling=config.get("neighbor_sampling", "recent"), time_input=time_input)


def build_dygformer(config: dict, data: CTDGData, split: LinkSplit, train_graph: TemporalNeighbors) -> DyGFormer:
    """DyGFormer, DyGFormer-separate or DyGDecoder (`config["model"]`); statistics of what the
    encoder reads on the training split: t - t_k over the kept histories, or the recency indices."""
    hp = dygformer_hparams(config)
    k = hp["max_input_sequence_length"] - 1
    if hp["time_input"] == "position":
        src, dst, ts = data.src[split.train], data.dst[split.train], data.ts[split.train]
        mean, std = recency_index_stats(train_graph, np.concatenate([src, dst]), np.concatenate([ts, ts]), k)
    else:
        mean, std = train_time_stats(data, split, train_graph, k)
    return DyGFormer(data.node_feat, data.edge_feat, time_mean=mean, time_std=std, **hp)


def build_tgn(config: dict, data: CTDGData, split: LinkSplit, train_graph: TemporalNeighbors) -> TGN:
    """TGN (DyGLib's MemoryModel): statistics of t - t_k over the num_neighbors most recent training
    interactions, as for TGAT (the attention's differences)."""
    config = with_dataset_defaults(config)
    k = int(config["num_neighbors"])
    mean, std = train_time_stats(data, split, train_graph, k)
    return TGN(data.node_feat, data.edge_feat, encoder=config["encoder"], time_dim=int(config["d_T"]),
               time_mean=mean, time_std=std, num_layers=int(config["num_layers"]),
               num_heads=int(config["num_heads"]), num_neighbors=k, dropout=float(config["dropout"]),
               sampling=config.get("neighbor_sampling", "recent"))


def build_cawn(config: dict, data: CTDGData, split: LinkSplit, train_graph: TemporalNeighbors) -> CAWN:
    """CAWN (DyGLib's CAWN): statistics of t - t_k over the num_neighbors most recent training
    interactions (the first hop of the walks)."""
    config = with_dataset_defaults(config)
    k = int(config["num_neighbors"])
    mean, std = train_time_stats(data, split, train_graph, k)
    return CAWN(data.node_feat, data.edge_feat, encoder=config["encoder"], time_dim=int(config["d_T"]),
                time_mean=mean, time_std=std, position_dim=int(config["position_dim"]),
                walk_length=int(config["walk_length"]), num_walk_heads=int(config["num_walk_heads"]),
                num_neighbors=k, dropout=float(config["dropout"]),
                sampling=config.get("neighbor_sampling", "time_interval_aware"),
                time_scaling_factor=float(config.get("time_scaling_factor", 1e-6)))


MODELS: dict[str, Callable[[dict, CTDGData, LinkSplit, TemporalNeighbors], nn.Module]] = {
    "tgat": build_tgat,
    "tgn": build_tgn,
    "cawn": build_cawn,
    "dygformer": build_dygformer,
    "dygformer_separate": build_dygformer,
    "dygdecoder": build_dygformer,
    # dyg_mamba's zoo (issue 12)
    "tcl": tcl.build,
    "graphmixer": graphmixer.build,
    "edgebank": edgebank.build,
    "dyg_mamba": dyg_mamba.build,
}


class LinkPredictionModel(nn.Module):
    """A backbone and DyGLib's link predictor head; forward gives one logit per candidate edge."""

    def __init__(self, backbone: nn.Module):
        super().__init__()
        self.backbone = backbone
        # a backbone that scores pairs itself (EdgeBank: no parameters) needs no predictor
        self.predictor = None if hasattr(backbone, "score") else LinkPredictor(backbone.out_dim)

    def forward(self, src, dst, times) -> torch.Tensor:
        """src, dst, times: (B,) numpy arrays -> (B,) logits."""
        if self.predictor is None:
            return self.backbone.score(src, dst, times)
        h_src, h_dst = self.backbone.pair_embeddings(src, dst, times)
        return self.predictor(h_src, h_dst)


def _hook(model: LinkPredictionModel, name: str, *args) -> None:
    """Call the backbone's optional state hook `name` if it has one (see the module docstring)."""
    method = getattr(model.backbone, name, None)
    if method is not None:
        method(*args)


def _neighbor_rng(seed: int) -> np.random.RandomState:
    return np.random.RandomState(seed)


def trainable(model: nn.Module) -> bool:
    """False for a model without trainable parameters (EdgeBank), which the task evaluates without training."""
    return any(p.requires_grad for p in model.parameters())


def count_parameters(model: nn.Module) -> int:
    return int(sum(p.numel() for p in model.parameters()))


# ------------------------------------------------------------------ evaluation

@torch.no_grad()
def evaluate(model: LinkPredictionModel, data: CTDGData, idx: np.ndarray, sampler, graph: TemporalNeighbors,
             batch_size: int) -> dict:
    """DyGLib's evaluation of the edges `idx` (chronological): reset the negative sampler and the
    neighbour stream, score each batch's positives and its negatives (sigmoid probabilities in
    float32, as DyGLib), then AP/AUC per batch averaged (`ap`, `auc`), over the whole split
    (`ap_whole`, `auc_whole`), and the BCE over the whole split (`loss`)."""
    model.eval()
    model.backbone.set_graph(graph, _neighbor_rng(EVAL_NEIGHBOR_SEED))
    sampler.reset()
    pos, neg = [], []
    for start in range(0, len(idx), batch_size):
        b = idx[start:start + batch_size]
        src, dst, ts = data.src[b], data.dst[b], data.ts[b]
        neg_src, neg_dst = sampler.sample_for_batch(src, dst, ts)
        pos.append(torch.sigmoid(model(src, dst, ts)).cpu())
        neg.append(torch.sigmoid(model(neg_src, neg_dst, ts)).cpu())
        _hook(model, "observe", src, dst, ts, data.edge_ids[b])  # the batch's edges, after its predictions
    pos_p, neg_p = torch.cat(pos), torch.cat(neg)
    m = batched_metrics(pos_p.numpy(), neg_p.numpy(), batch_size=batch_size)
    probs = torch.cat([pos_p, neg_p])
    labels = torch.cat([torch.ones_like(pos_p), torch.zeros_like(neg_p)])
    return {"ap": m["average_precision"], "auc": m["roc_auc"], "ap_whole": m["average_precision_whole"],
            "auc_whole": m["roc_auc_whole"], "loss": F.binary_cross_entropy(probs, labels).item(),
            "n_edges": int(len(idx))}


# ------------------------------------------------------------------ the run

def _load(config: dict) -> tuple[CTDGData, dict]:
    standin = config.get("standin")
    folder = prepare(config["dataset"], standin=standin, require_pinned=standin is None, progress=False)
    data = load_processed(folder)
    return data, data_identity(config["dataset"], standin, data.manifest)


def _record_attention(model: LinkPredictionModel, data: CTDGData, split: LinkSplit, graph: TemporalNeighbors,
                      k: int, seed: int, ctx) -> None:
    """linear_time Figures 7-12: last-layer attention of k sampled test edges, one row per (query, key)
    pair of real patches, written as attention_records.npz (columns of `attention_record.attention_records`)."""
    import io

    from timerepro.io import atomic_write_bytes

    idx = sample_edges(np.flatnonzero(split.test), k, seed=seed)
    _hook(model, "restore_state", "val_end")
    model.backbone.set_graph(graph, _neighbor_rng(EVAL_NEIGHBOR_SEED))
    recorded = record_attention(model.backbone, data.src[idx], data.dst[idx], data.ts[idx])
    columns = attention_records(recorded, causal=model.backbone.causal)
    buf = io.BytesIO()
    np.savez_compressed(buf, **columns)
    atomic_write_bytes(ctx.dir / "attention_records.npz", buf.getvalue())


def run(config: dict, ctx) -> dict:
    config = overrides.resolve(config)  # dyg_mamba: per-dataset overrides, one history length for all models
    seed = int(config["seed"])
    batch_size = int(config["batch_size"])
    eval_negatives = list(config["eval_negatives"])
    monitor_negatives = config.get("monitor_negatives", "random")
    monitor = config.get("monitor_metric", "ap")
    for s in eval_negatives + [monitor_negatives]:
        if s not in STRATEGIES:
            raise ValueError(f"unknown negative sampling strategy {s!r}; known: {STRATEGIES}")
    if monitor not in MONITOR_MODE:
        raise ValueError(f"unknown monitor_metric {monitor!r}; known: {sorted(MONITOR_MODE)}")
    if config["model"] not in MODELS:
        raise KeyError(f"unknown link-prediction model {config['model']!r}; known: {sorted(MODELS)}")

    data, data_info = _load(config)
    split = link_prediction_split(data)
    train_graph = TemporalNeighbors.from_data(data, split.train)  # DyGLib: training sampler on training edges
    full_graph = TemporalNeighbors.from_data(data)  # validation and test see every edge (before t)
    train_idx = np.flatnonzero(split.train)

    device = torch.device(ctx.device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    torch.manual_seed(seed)
    model = LinkPredictionModel(MODELS[config["model"]](config, data, split, train_graph)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=float(config["lr"])) if trainable(model) else None
    negatives = train_sampler(data, split, seed=seed)
    monitor_samplers = dyglib_eval_samplers(data, split, monitor_negatives)
    val_idx = np.flatnonzero(split.val)

    def train_epoch(epoch: int) -> dict:
        model.train()
        model.backbone.set_graph(train_graph, _neighbor_rng(TRAIN_NEIGHBOR_SEED))
        # the training negatives of epoch e come from a stream seeded by (seed, e): a resumed run
        # draws exactly the negatives the uninterrupted run drew
        negatives.random_state = np.random.RandomState([seed, epoch])
        _hook(model, "reset_state")  # DyGLib: fresh memory at the start of every epoch
        total, count = 0.0, 0
        for start in ctx.progress(range(0, len(train_idx), batch_size), desc=f"epoch {epoch}"):
            b = train_idx[start:start + batch_size]
            src, dst, ts = data.src[b], data.dst[b], data.ts[b]
            neg_src, neg_dst = negatives.sample_for_batch(src, dst, ts)  # neg_src = src (DyGLib training)
            logits = torch.cat([model(src, dst, ts), model(neg_src, neg_dst, ts)])  # (2B,)
            labels = torch.cat([torch.ones(len(b)), torch.zeros(len(b))]).to(device)
            loss = F.binary_cross_entropy_with_logits(logits, labels)
            opt.zero_grad()
            loss.backward()
            _hook(model, "observe", src, dst, ts, data.edge_ids[b])  # with the parameters that scored the batch
            opt.step()
            total += loss.item() * len(b)
            count += len(b)
        _hook(model, "backup_state", "train_end")  # where validation starts (DyGLib's train backup)
        return {"train_loss": total / max(count, 1)}

    def validate() -> dict:
        m = evaluate(model, data, val_idx, monitor_samplers["val"], full_graph, batch_size)
        return {k: v for k, v in m.items() if k != "n_edges"}

    if trainable(model):
        result = fit(model, opt, train_epoch=train_epoch, validate=validate, monitor=monitor,
                     mode=MONITOR_MODE[monitor], max_epochs=int(config["max_epochs"]),
                     patience=int(config["patience"]), ctx=ctx)
    else:  # nothing to train (EdgeBank): evaluated as built, no epochs
        result = FitResult()

    metrics: dict = {}
    evaluated: dict = {}
    _hook(model, "backup_state", "val_end")  # the best state has seen the validation edges
    for strategy in eval_negatives:
        samplers = monitor_samplers if strategy == monitor_negatives else dyglib_eval_samplers(data, split, strategy)
        for sampler_name, mask_name, prefix in PARTS:
            if sampler_name not in samplers:
                continue  # no new-node edge in this split (tiny graphs)
            idx = np.flatnonzero(getattr(split, mask_name))
            _hook(model, "restore_state", "train_end" if prefix.startswith("val") else "val_end")
            m = evaluate(model, data, idx, samplers[sampler_name], full_graph, batch_size)
            evaluated[f"{prefix}_{strategy}"] = m["n_edges"]
            for key in ("ap", "auc", "ap_whole", "auc_whole"):
                metrics[f"{prefix}_{strategy}_{key}"] = m[key]

    if int(config.get("record_attention", 0)) > 0 and config["model"] in RECORDABLE:
        _record_attention(model, data, split, full_graph, int(config["record_attention"]), seed, ctx)
    if config.get("noise_ratios"):  # dyg_mamba Figures 8, 9: the test edges again, with noisy neighbours
        from timerepro.tasks.noise_robustness import evaluate_under_noise
        metrics.update(evaluate_under_noise(model, data, split, full_graph, config))
    if int(config.get("case_study_edges", 0)) > 0:  # dyg_mamba Figure 6 (B-D)
        from timerepro.models.graph.case_study import record_case_study
        record_case_study(model, data, split, full_graph, int(config["case_study_edges"]), ctx)

    epoch_times = [row["epoch_time_s"] for row in result.history]
    metrics.update({
        "best_epoch": result.best_epoch,
        "epochs_run": result.epochs_run,
        "epoch_time_s": float(np.mean(epoch_times)) if epoch_times else None,
        "n_parameters": count_parameters(model),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "peak_gpu_memory_mb": (round(torch.cuda.max_memory_allocated(device) / 2**20, 1)
                               if device.type == "cuda" else None),
        # statistics of the training split's time differences handed to the encoder (used by
        # linear and cosine_scale, recorded for every encoder)
        "time_diff_mean": getattr(model.backbone, "time_mean", None),
        "time_diff_std": getattr(model.backbone, "time_std", None),
    })
    return {
        "metrics": metrics,
        "data": {**data_info, "n_edges": int(len(data.src)), "n_train": int(split.train.sum()),
                 "n_val": int(split.val.sum()), "n_test": int(split.test.sum()),
                 "n_new_node_val": int(split.new_node_val.sum()), "n_new_node_test": int(split.new_node_test.sum()),
                 "evaluated_edges": evaluated},
        "resumed_from_epoch": result.resumed_from_epoch,
    }

