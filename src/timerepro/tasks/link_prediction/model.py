"""The link-prediction model: a backbone of the model registry and DyGLib's link predictor head."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from timerepro.models.graph.backbone import NodeEmbedder
from timerepro.models.graph.layers import LinkPredictor
from timerepro.models.registry import TaskModels

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
        batch (`embeds_whole_batch`: SWINIT's glued graph, as its authors' code) is called once per batch too. A backbone
        whose pairs are independent (`pairs_independent`: TCL, JODIE) gets the 2B pairs in one call and shares what
        they share itself."""
        bb = self.backbone
        if getattr(bb, "pairs_independent", False):
            n = len(src)
            logits = self(np.concatenate([src, neg_src]), np.concatenate([dst, neg_dst]),
                          np.tile(np.asarray(times, dtype=np.float64), 2))  # (2B,)
            return logits[:n], logits[n:]
        whole = getattr(bb, "embeds_whole_batch", False)
        if not (isinstance(bb, NodeEmbedder) and (bb.queries_independent or whole)):
            return self(src, dst, times), self(neg_src, neg_dst, times)
        n = len(src)
        times = np.asarray(times, dtype=np.float64)
        h = bb.embed(np.concatenate([src, neg_src, dst, neg_dst]), np.tile(times, 4))  # (4B, d)
        # one predictor call on the 2B pairs: [h_src; h_neg_src] with [h_dst; h_neg_dst] -> (2B,)
        logits = self.predictor(h[: 2 * n], h[2 * n:])
        return logits[:n], logits[n:]

    def score_negatives(self, neg_src, neg_dst, times) -> torch.Tensor:
        """Logits (B,) of a batch's negatives alone, for a pass that has its positives' from an earlier pass over the
        same batches (`evaluation.reuses_positives`): the call `score` makes for them, without the positives' rows
        (row-independent backbones give the same floats; `tests/tasks/test_lp_positive_reuse.py`)."""
        bb = self.backbone
        if getattr(bb, "pairs_independent", False) or not (isinstance(bb, NodeEmbedder) and bb.queries_independent):
            return self(neg_src, neg_dst, times)  # score's call for its negatives, or (2B-pair backbones) its rows
        n = len(neg_src)
        h = bb.embed(np.concatenate([neg_src, neg_dst]), np.tile(np.asarray(times, dtype=np.float64), 2))  # (2B, d)
        return self.predictor(h[:n], h[n:])  # (B,)


def build_model(config: dict, data, split, train_graph) -> LinkPredictionModel:
    """The registry's backbone of `config["model"]` (refused when params/models.yaml does not give it
    link_prediction) in DyGLib's head, untrained."""
    return LinkPredictionModel(MODELS[config["model"]](config, data, split, train_graph))


def device_of(model: nn.Module) -> torch.device:
    """Where the model's tensors live (CPU for a model without any: EdgeBank)."""
    tensor = next(model.parameters(), None)
    if tensor is None:
        tensor = next(model.buffers(), None)
    return tensor.device if tensor is not None else torch.device("cpu")


def trainable(model: nn.Module) -> bool:
    """False for a model without trainable parameters (EdgeBank), which the task evaluates without training."""
    return any(p.requires_grad for p in model.parameters())


def count_parameters(model: nn.Module) -> int:
    return int(sum(p.numel() for p in model.parameters()))
