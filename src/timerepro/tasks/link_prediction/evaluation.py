"""DyGLib's evaluation of link prediction: the parts of the split, the model-selection metric, one pass over edges."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from timerepro import metric_keys
from timerepro.data.ctdg import CTDGData
from timerepro.graphs.evaluate import batched_metrics
from timerepro.graphs.neighbors import EVAL_NEIGHBOR_SEED, TemporalNeighbors, neighbor_rng
from timerepro.models.graph.backbone import DETERMINISTIC
from timerepro.models.graph.memory import NO_STATE, stream_state
from timerepro.tasks.link_prediction.model import LinkPredictionModel, device_of
from timerepro.tasks.link_prediction.training import autocast

# evaluation parts: (name of the sampler in dyglib_eval_samplers, split mask, split and setting of metric_keys)
PARTS = (("val", "val", "val", "transductive"), ("new_node_val", "new_node_val", "val", "inductive"),
         ("test", "test", "test", "transductive"), ("new_node_test", "new_node_test", "test", "inductive"))
MONITOR_MODE = {"ap": "max", "auc": "max", "ap_whole": "max", "auc_whole": "max", "loss": "min"}
# model selection on the validation edges of a setting (swinit's inductive runs select on new-node edges)
MONITOR_PARTS = {"transductive": "val", "inductive": "new_node_val"}
METRIC_KEYS = metric_keys.MEASURES  # recorded per part and sampler: metric_keys.link_prediction
# early stopping (`early_stopping`, absent: project) -> train.fit's monitored metrics, mode and whether a tie is a
# new best.
# project: `monitor_metric`, strictly better; dyglib: DyGLib's, which the DyG-Mamba code runs
# (Clearloveyuan/DyG-Mamba 05e397a train_link_prediction.py:431-434, utils/EarlyStopping.py:40-55): validation
# AP and AUC (batch means), a new best when both are >= their bests
# a batch under this many edges is scored in full even when its positives are known: a Linear on 1-3 rows takes
# another CPU kernel than on more, so a call of only its negatives could differ in the last bits (docs/graph_speed.md)
MIN_REUSE_BATCH = 8
EARLY_STOPPING = {"project": lambda monitor: {"monitor": monitor, "mode": MONITOR_MODE[monitor], "ties": False},
                  "dyglib": lambda monitor: {"monitor": ("ap", "auc"), "mode": "max", "ties": True}}


def early_stopping(config: dict) -> dict:
    """train.fit's `monitor`, `mode` and `ties` for the config's `early_stopping` (unknown names refused)."""
    name = config.get("early_stopping", "project")  # absent from other papers' configs, so their run ids stay
    if name not in EARLY_STOPPING:
        raise ValueError(f"unknown early_stopping {name!r}; known: {sorted(EARLY_STOPPING)}")
    return EARLY_STOPPING[name](config["monitor_metric"])


def reuses_positives(model: LinkPredictionModel) -> bool:
    """True when a pass's positive scores are those of any other pass over the same batches, whatever its negatives:
    no stream state (memory models' state evolves with each pass), no random draws (neighbour sampling `recent`, or
    none, as DyGFormer and DyG-Mamba), no glued batch graph (SWINIT) and a head of its own (not EdgeBank)."""
    bb = model.backbone
    return (stream_state(bb) is NO_STATE and getattr(bb, "sampling", DETERMINISTIC) == DETERMINISTIC
            and not getattr(bb, "embeds_whole_batch", False) and model.predictor is not None)


def evaluate(model: LinkPredictionModel, data: CTDGData, idx: np.ndarray, sampler, graph: TemporalNeighbors,
             batch_size: int, amp: str = "none") -> dict:
    """DyGLib's evaluation of the edges `idx` (chronological): reset the negative sampler and the
    neighbour stream, score each batch's positives and its negatives (sigmoid probabilities in
    float32, as DyGLib), then AP/AUC per batch averaged (`ap`, `auc`), over the whole split
    (`ap_whole`, `auc_whole`), and the BCE over the whole split (`loss`). `amp`: the autocast setting
    (`autocast`). Probabilities stay on the device until the end."""
    return evaluate_pass(model, data, idx, sampler, graph, batch_size, amp)[0]


@torch.no_grad()
def evaluate_pass(model: LinkPredictionModel, data: CTDGData, idx: np.ndarray, sampler, graph: TemporalNeighbors,
                  batch_size: int, amp: str = "none", positives: list | None = None) -> tuple[dict, list]:
    """`evaluate`'s figures and the positives' probabilities of each batch; `positives`: those of an earlier pass over
    the same edges and batches on the same weights, for a model that `reuses_positives` (only its negatives scored)."""
    model.eval()
    model.backbone.set_graph(graph, neighbor_rng(EVAL_NEIGHBOR_SEED))
    sampler.reset()
    state = stream_state(model.backbone)
    device = device_of(model)
    pos, neg = [], []
    for i, start in enumerate(range(0, len(idx), batch_size)):
        b = idx[start:start + batch_size]
        src, dst, ts = data.src[b], data.dst[b], data.ts[b]
        neg_src, neg_dst = sampler.sample_for_batch(src, dst, ts)
        full = positives is None or len(b) < MIN_REUSE_BATCH
        with autocast(amp, device):
            if full:
                pos_logits, neg_logits = model.score(src, dst, neg_src, neg_dst, ts)
            else:
                neg_logits = model.score_negatives(neg_src, neg_dst, ts)
        pos.append(torch.sigmoid(pos_logits.float()) if full else positives[i])
        neg.append(torch.sigmoid(neg_logits.float()))
        state.observe(src, dst, ts, data.edge_ids[b])  # the batch's edges, after its predictions
    pos_p, neg_p = torch.cat(pos).cpu(), torch.cat(neg).cpu()
    m = batched_metrics(pos_p.numpy(), neg_p.numpy(), batch_size=batch_size)
    probs = torch.cat([pos_p, neg_p])
    labels = torch.cat([torch.ones_like(pos_p), torch.zeros_like(neg_p)])
    return ({"ap": m["average_precision"], "auc": m["roc_auc"], "ap_whole": m["average_precision_whole"],
             "auc_whole": m["roc_auc_whole"], "loss": F.binary_cross_entropy(probs, labels).item(),
             "n_edges": int(len(idx))}, pos)


def selection_pass(result, part: str, negatives: str, n_edges: int) -> dict:
    """{(part, negatives): figures} of the validation pass that selected the model (`FitResult.selected`): the final
    evaluation of that part would run it again on the same weights, stream state (the selected epoch's `train_end`),
    sampler, neighbour stream and batches, so to the same numbers. Empty when no epoch was validated (EdgeBank)."""
    row = result.selected()
    if row is None:
        return {}
    return {(part, negatives): {**{k: row[f"val_{k}"] for k in METRIC_KEYS}, "n_edges": int(n_edges)}}
