"""Future link prediction on a continuous-time dynamic graph, DyGLib's protocol (`train_link_prediction.py`,
`evaluate_link_prediction.py`, `evaluate_models_utils.py`), for any backbone of the model registry.

* data: `prepare(dataset, standin=...)`, DyGLib's chronological 70/15/15 split with held-out new nodes;
* training: the training edges in time order, batches of `batch_size`, one random negative per
  positive (the positive source with a random destination), BCE, Adam(lr) (or `optimizer: adamw` with
  `weight_decay`, swinit's protocol); the model sees only the training edges while training and every
  edge while evaluating;
* model selection: early stopping on a validation metric (`monitor_metric`, DyGLib's batch-averaged
  AP by default) under `monitor_negatives` (random by default) on the validation edges of
  `monitor_setting` (transductive: all of them, by default; inductive: the new-node ones, as swinit's
  inductive runs), best weights restored;
* evaluation: validation and test, transductive (all edges of the split) and inductive (edges with a
  node unseen in training), under every sampler of `eval_negatives`, with DyGLib's batch-averaged AP
  and AUC and beside them the whole-split figures (`*_whole`);
* cost: mean training time per epoch, peak process RSS (and peak GPU memory on CUDA), parameters,
  and what the backbone reports about itself (`extra_metrics()`, optional).

Metric names: `{val|test}_{transductive|inductive}_{negatives}_{ap|auc|ap_whole|auc_whole}`.
A backbone is a model of params/models.yaml serving link_prediction (MODELS, a view of that file), whose
builder `build(config, data, split, train_graph) -> module` returns a module with
`pair_embeddings(src, dst, times) -> (h_src, h_dst)`, `set_graph(neighbors, rng)` and `out_dim`.
Optional, compatible extensions of that contract:
* `embed(nodes, times)` and `queries_independent` (`backbone.NodeEmbedder`): a backbone whose embedding
  of a (node, time) query does not depend on the other queries (TGAT, TGN with `recent` sampling) has a
  batch's 4B endpoint queries embedded in one call, so the sources shared by the positives and the
  random negatives (and any repeat) are embedded once (`LinkPredictionModel.score`);
* a state that evolves with the stream (TGN's memory) is a `memory.StreamState`, which the loops call
  explicitly through `stream_state(backbone)` (a no-op for backbones without one): reset at the start of
  every training epoch, observe each batch after it is scored, detach after each optimizer step, backup
  and restore named copies around validation and test (`models/graph/memory.py` says when and why).

Settings: `amp: bfloat16` runs the forward passes under autocast (`none`, float32, by default; not exact).
`eval_batch_size` (absent: `batch_size`, DyGLib's one size) batches validation and test apart from training, so
a laptop cut that trains in small batches still evaluates, and is floored by EdgeBank, under the paper's batching
(the batch-averaged AP and a memory model's updates depend on it).
The batch loops keep losses and probabilities on the model's device and read them back once per epoch
or evaluation; neighbour retrieval results are moved once per batch (`backbone.to_device`).
"""

from __future__ import annotations


import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from timerepro.data.ctdg import CTDGData, LinkSplit, link_prediction_split, load_processed
from timerepro.data.manifest import data_identity
from timerepro.data.prepare import prepare
from timerepro.graphs.evaluate import batched_metrics
from timerepro.graphs.negatives import STRATEGIES, dyglib_eval_samplers, train_sampler
from timerepro.graphs.neighbors import EVAL_NEIGHBOR_SEED, TRAIN_NEIGHBOR_SEED, TemporalNeighbors
from timerepro.models.graph.attention_record import RECORDABLE, attention_records, record_attention, sample_edges
from timerepro.models.graph.backbone import NodeEmbedder
from timerepro.models.graph import overrides
from timerepro.models.graph.memory import stream_state
from timerepro.models.graph.layers import LinkPredictor
from timerepro.models.registry import TaskModels
from timerepro.train import FitResult, fit

# evaluation parts: (name of the sampler in dyglib_eval_samplers, split mask, metric prefix)
PARTS = (("val", "val", "val_transductive"), ("new_node_val", "new_node_val", "val_inductive"),
         ("test", "test", "test_transductive"), ("new_node_test", "new_node_test", "test_inductive"))
MONITOR_MODE = {"ap": "max", "auc": "max", "ap_whole": "max", "auc_whole": "max", "loss": "min"}
# model selection on the validation edges of a setting (swinit's inductive runs select on new-node edges)
MONITOR_PARTS = {"transductive": "val", "inductive": "new_node_val"}
AMP = {"none": None, "bfloat16": torch.bfloat16}


MODELS = TaskModels("link_prediction")  # name -> builder, as params/models.yaml maps them


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

    def score(self, src, dst, neg_src, neg_dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits (B,) of a batch's positive edges and (B,) of its negatives, all at `times` (B,).

        A backbone with independent queries embeds the 4B endpoints in one call (each distinct
        (node, time) once: the sources the random negatives share with the positives, repeats); others
        are called as DyGLib calls them, positives then negatives. A backbone whose batch graph spans the whole
        batch (`embeds_whole_batch`: SWINIT's glued graph, as its authors' code) is called once per batch too."""
        bb = self.backbone
        whole = getattr(bb, "embeds_whole_batch", False)
        if not (isinstance(bb, NodeEmbedder) and (bb.queries_independent or whole)):
            return self(src, dst, times), self(neg_src, neg_dst, times)
        n = len(src)
        times = np.asarray(times, dtype=np.float64)
        h = bb.embed(np.concatenate([src, neg_src, dst, neg_dst]), np.tile(times, 4))  # (4B, d)
        # one predictor call on the 2B pairs: [h_src; h_neg_src] with [h_dst; h_neg_dst] -> (2B,)
        logits = self.predictor(h[: 2 * n], h[2 * n:])
        return logits[:n], logits[n:]


def autocast(amp: str, device: torch.device):
    """The forward passes' autocast context for the `amp` setting ("none": float32, a no-op)."""
    if amp not in AMP:
        raise ValueError(f"unknown amp setting {amp!r}; known: {sorted(AMP)}")
    return torch.autocast(device.type, dtype=AMP[amp], enabled=AMP[amp] is not None)


def _device(model: nn.Module) -> torch.device:
    """Where the model's tensors live (CPU for a model without any: EdgeBank)."""
    tensor = next(model.parameters(), None)
    if tensor is None:
        tensor = next(model.buffers(), None)
    return tensor.device if tensor is not None else torch.device("cpu")


def _neighbor_rng(seed: int) -> np.random.RandomState:
    return np.random.RandomState(seed)


def trainable(model: nn.Module) -> bool:
    """False for a model without trainable parameters (EdgeBank), which the task evaluates without training."""
    return any(p.requires_grad for p in model.parameters())


def count_parameters(model: nn.Module) -> int:
    return int(sum(p.numel() for p in model.parameters()))


OPTIMIZERS = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}


def make_optimizer(config: dict, params) -> torch.optim.Optimizer:
    """`optimizer` (adam: DyGLib; adamw: swinit 6.1) with `lr` and `weight_decay` (0 unless set), as one fused
    kernel over all parameters where torch has one (the same update, without a dozen small operations per
    parameter tensor)."""
    name = config.get("optimizer", "adam")
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; known: {sorted(OPTIMIZERS)}")
    params = list(params)
    fused = bool(params) and params[0].device.type in ("cpu", "cuda")
    return OPTIMIZERS[name](params, lr=float(config["lr"]), weight_decay=float(config.get("weight_decay", 0.0)),
                            fused=fused)


def adam(model: nn.Module, lr: float) -> torch.optim.Optimizer:
    """DyGLib's optimizer, Adam(lr), fused (`make_optimizer` with the defaults)."""
    return make_optimizer({"lr": lr}, model.parameters())


# ------------------------------------------------------------------ evaluation

@torch.no_grad()
def evaluate(model: LinkPredictionModel, data: CTDGData, idx: np.ndarray, sampler, graph: TemporalNeighbors,
             batch_size: int, amp: str = "none") -> dict:
    """DyGLib's evaluation of the edges `idx` (chronological): reset the negative sampler and the
    neighbour stream, score each batch's positives and its negatives (sigmoid probabilities in
    float32, as DyGLib), then AP/AUC per batch averaged (`ap`, `auc`), over the whole split
    (`ap_whole`, `auc_whole`), and the BCE over the whole split (`loss`). `amp`: the autocast setting
    (`autocast`). Probabilities stay on the device until the end."""
    model.eval()
    model.backbone.set_graph(graph, _neighbor_rng(EVAL_NEIGHBOR_SEED))
    sampler.reset()
    state = stream_state(model.backbone)
    device = _device(model)
    pos, neg = [], []
    for start in range(0, len(idx), batch_size):
        b = idx[start:start + batch_size]
        src, dst, ts = data.src[b], data.dst[b], data.ts[b]
        neg_src, neg_dst = sampler.sample_for_batch(src, dst, ts)
        with autocast(amp, device):
            pos_logits, neg_logits = model.score(src, dst, neg_src, neg_dst, ts)
        pos.append(torch.sigmoid(pos_logits.float()))
        neg.append(torch.sigmoid(neg_logits.float()))
        state.observe(src, dst, ts, data.edge_ids[b])  # the batch's edges, after its predictions
    pos_p, neg_p = torch.cat(pos).cpu(), torch.cat(neg).cpu()
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
    stream_state(model.backbone).restore_state("val_end")
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
    eval_batch_size = int(config.get("eval_batch_size") or batch_size)
    eval_negatives = list(config["eval_negatives"])
    monitor_negatives = config["monitor_negatives"]
    monitor = config["monitor_metric"]
    for s in eval_negatives + [monitor_negatives]:
        if s not in STRATEGIES:
            raise ValueError(f"unknown negative sampling strategy {s!r}; known: {STRATEGIES}")
    if monitor not in MONITOR_MODE:
        raise ValueError(f"unknown monitor_metric {monitor!r}; known: {sorted(MONITOR_MODE)}")
    builder = MODELS[config["model"]]  # unknown names are refused here, before any data is read
    monitor_part = MONITOR_PARTS.get(config.get("monitor_setting", "transductive"))
    if monitor_part is None:
        raise ValueError(f"unknown monitor_setting {config['monitor_setting']!r}; known: {sorted(MONITOR_PARTS)}")

    data, data_info = _load(config)
    split = link_prediction_split(data)
    train_graph = TemporalNeighbors.from_data(data, split.train)  # DyGLib: training sampler on training edges
    full_graph = TemporalNeighbors.from_data(data)  # validation and test see every edge (before t)
    train_idx = np.flatnonzero(split.train)

    device = torch.device(ctx.device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    torch.manual_seed(seed)
    model = LinkPredictionModel(builder(config, data, split, train_graph)).to(device)
    opt = make_optimizer(config, model.parameters()) if trainable(model) else None
    negatives = train_sampler(data, split, seed=seed)
    monitor_samplers = dyglib_eval_samplers(data, split, monitor_negatives)
    if monitor_part not in monitor_samplers:
        raise ValueError(f"{config['dataset']}: no new-node validation edge, so no inductive model selection")
    val_idx = np.flatnonzero(getattr(split, monitor_part))  # the edges of the monitored setting

    state = stream_state(model.backbone)
    amp = config.get("amp", "none")  # optional (absent from older configs, so their run ids stay)
    autocast(amp, device)  # refuse an unknown setting before the first epoch

    def train_epoch(epoch: int) -> dict:
        model.train()
        model.backbone.set_graph(train_graph, _neighbor_rng(TRAIN_NEIGHBOR_SEED))
        # the training negatives of epoch e come from a stream seeded by (seed, e): a resumed run
        # draws exactly the negatives the uninterrupted run drew
        negatives.random_state = np.random.RandomState([seed, epoch])
        state.reset_state()  # DyGLib: fresh memory at the start of every epoch
        total = torch.zeros((), device=device, dtype=torch.float64)  # read back once, at the end of the epoch
        for start in ctx.progress(range(0, len(train_idx), batch_size), desc=f"epoch {epoch}"):
            b = train_idx[start:start + batch_size]
            src, dst, ts = data.src[b], data.dst[b], data.ts[b]
            neg_src, neg_dst = negatives.sample_for_batch(src, dst, ts)  # neg_src = src (DyGLib training)
            with autocast(amp, device):
                pos_logits, neg_logits = model.score(src, dst, neg_src, neg_dst, ts)
            logits = torch.cat([pos_logits, neg_logits]).float()  # (2B,)
            labels = torch.cat([torch.ones(len(b), device=device), torch.zeros(len(b), device=device)])
            loss = F.binary_cross_entropy_with_logits(logits, labels)
            opt.zero_grad()
            loss.backward()
            state.observe(src, dst, ts, data.edge_ids[b])  # with the parameters that scored the batch
            opt.step()
            state.detach_state()  # DyGLib: no gradient back past this batch
            total += loss.detach().double() * len(b)
        state.backup_state("train_end")  # where validation starts (DyGLib's train backup)
        return {"train_loss": total.item() / max(len(train_idx), 1)}

    def validate() -> dict:
        m = evaluate(model, data, val_idx, monitor_samplers[monitor_part], full_graph, eval_batch_size, amp)
        return {k: v for k, v in m.items() if k != "n_edges"}

    if trainable(model):
        result = fit(model, opt, train_epoch=train_epoch, validate=validate, monitor=monitor,
                     mode=MONITOR_MODE[monitor], max_epochs=int(config["max_epochs"]),
                     patience=int(config["patience"]), ctx=ctx)
    else:  # nothing to train (EdgeBank): evaluated as built, no epochs
        result = FitResult()

    metrics: dict = {}
    evaluated: dict = {}
    state.backup_state("val_end")  # the best state has seen the validation edges
    for strategy in eval_negatives:
        samplers = monitor_samplers if strategy == monitor_negatives else dyglib_eval_samplers(data, split, strategy)
        for sampler_name, mask_name, prefix in PARTS:
            if sampler_name not in samplers:
                continue  # no new-node edge in this split (tiny graphs)
            idx = np.flatnonzero(getattr(split, mask_name))
            state.restore_state("train_end" if prefix.startswith("val") else "val_end")
            m = evaluate(model, data, idx, samplers[sampler_name], full_graph, eval_batch_size, amp)
            evaluated[f"{prefix}_{strategy}"] = m["n_edges"]
            for key in ("ap", "auc", "ap_whole", "auc_whole"):
                metrics[f"{prefix}_{strategy}_{key}"] = m[key]

    if int(config.get("record_attention", 0)) > 0 and config["model"] in RECORDABLE:  # 0: not a task default (run ids)
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
        "peak_rss_mb": round(ctx.peak_memory_mb(), 1),  # this run's own peak (timerepro.memory)
        "peak_gpu_memory_mb": (round(torch.cuda.max_memory_allocated(device) / 2**20, 1)
                               if device.type == "cuda" else None),
        # statistics of the training split's time differences handed to the encoder (used by
        # linear and cosine_scale, recorded for every encoder)
        "time_diff_mean": getattr(model.backbone, "time_mean", None),
        "time_diff_std": getattr(model.backbone, "time_std", None),
        **(model.backbone.extra_metrics() if hasattr(model.backbone, "extra_metrics") else {}),
    })
    return {
        "metrics": metrics,
        "data": {**data_info, "n_edges": int(len(data.src)), "n_train": int(split.train.sum()),
                 "n_val": int(split.val.sum()), "n_test": int(split.test.sum()),
                 "n_new_node_val": int(split.new_node_val.sum()), "n_new_node_test": int(split.new_node_test.sum()),
                 "evaluated_edges": evaluated},
        "resumed_from_epoch": result.resumed_from_epoch,
    }

