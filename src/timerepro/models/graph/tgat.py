"""TGAT (Xu et al. 2020) as linear_time writes it, with DyGLib's choices where the paper is silent.

linear_time's equations, for layer l of node i at time t:

    q_i(t)  = W_Q^T [h_i^(l-1)(t); Phi(0)]                       (the query's time difference is 0)
    N_i(t)  = rows [h_v^(l-1)(t_k); e_(i,v,t_k); Phi(t - t_k)]    (k sampled interactions before t)
    h_i(t)  = V^T softmax(K q_i(t) / sqrt(d_h)),  K = N W_K, V = N W_V   (one head)
    h_i^(l)(t) = W_1 ReLU(W_0 [h_i(t); x_i] + b_0) + b_1          (merge with the raw features x_i)

with h^(0) = x (raw node features). What the paper leaves unsaid follows DyGLib's `models/TGAT.py`
and `models/modules.py` (read, not copied): 2 layers, 2 heads of width (d_node + d_T) / heads,
20 most recent neighbours, recursive aggregation (the neighbours' layer l-1 embeddings are computed
at the neighbours' interaction times), an output projection + dropout + residual + LayerNorm after
the heads, dropout on the attention weights, padding neighbours masked with -1e10 (a node without
history attends uniformly to its padding rows, as DyGLib does). docs/tgat.md lists every decision.

Neighbour retrieval is `timerepro.graphs.neighbors.TemporalNeighbors`, strictly before the query
time, so an embedding at time t never sees an interaction at or after t. The attention, the merge and
the layer recursion are `neighbor_attention` (shared with TGN), which computes them with less work
than DyGLib and the same outputs.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from timerepro.data.ctdg import CTDGData, LinkSplit
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.layers import LinkPredictor, MergeLayer  # noqa: F401 (where they lived before)
from timerepro.models.graph.neighbor_attention import (MASK_VALUE, NeighborAttentionBackbone,  # noqa: F401
                                                       TemporalAttention, recency_ranks)
from timerepro.models.graph.time_stats import time_diff_statistic, train_time_stats

SAMPLING = ("recent", "uniform")


class TGAT(NeighborAttentionBackbone):
    """TGAT backbone: node embeddings at given times from sampled temporal neighbours.

    node_feat (N+1, d_node) and edge_feat (E+1, d_edge) are the padded feature tables of a
    `CTDGData` (row 0 = padding); they are buffers, not saved in checkpoints. The time encoder is
    `make_encoder(encoder, time_dim, mean=time_mean, std=time_std)`. `set_graph` chooses the
    interactions visible to the model (DyGLib: the training edges while training, all edges while
    evaluating); the graph must be set before the first call. Layer 0 is the raw node features.
    """

    samplings = SAMPLING

    def __init__(self, node_feat: np.ndarray, edge_feat: np.ndarray, *, encoder: str = "cosine", time_dim: int = 100,
                 time_mean: float = 0.0, time_std: float = 1.0, num_layers: int = 2, num_heads: int = 2,
                 num_neighbors: int = 20, dropout: float = 0.1, sampling: str = "recent", time_input: str = "time",
                 encoder_options: dict | None = None, position_index: str = "per_event"):
        super().__init__(node_feat, edge_feat, encoder=encoder, time_dim=time_dim, time_mean=time_mean,
                         time_std=time_std, num_layers=num_layers, num_heads=num_heads, num_neighbors=num_neighbors,
                         dropout=dropout, sampling=sampling, time_input=time_input, encoder_options=encoder_options,
                         position_index=position_index)
        self.base_is_zero = self.node_feat_zero

    def _base(self, nodes: np.ndarray, ids: torch.Tensor) -> torch.Tensor:
        return self.node_feat[ids]  # (U, d_node): h^(0) = raw node features

    def pair_embeddings(self, src, dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        """Embeddings of both endpoints of B candidate edges at their times: two (B, d_node). With random
        sampling the sources are embedded before the destinations (DyGLib's order of draws)."""
        if not self.queries_independent:
            return self.embed(src, times), self.embed(dst, times)
        n = len(src)
        h = self.embed(np.concatenate([np.asarray(src), np.asarray(dst)]), np.concatenate([times, times]))
        return h[:n], h[n:]

# ------------------------------------------------------------------ builder (params/models.yaml `module:`)

def build(config: dict, data: CTDGData, split: LinkSplit, train_graph: TemporalNeighbors) -> TGAT:
    """TGAT; statistics of what the encoder reads on the training split (t - t_k, or recency indices 1..k)."""
    k = int(config["num_neighbors"])
    time_input = config.get("time_input", "time")  # only Table 6's position runs set it (not a TGAT default: run ids)
    if time_input == "position":
        # every full neighbourhood holds indices 1..k once (per_event; with tied times, distinct_times has fewer):
        # only the standardizing encoders read these, and Table 6 runs the sinusoidal one
        ranks = np.arange(1, k + 1, dtype=np.float64)
        mean, std = float(ranks.mean()), float(ranks.std())
    else:
        mean, std = train_time_stats(data, split, train_graph, k, *time_diff_statistic(config))
    return TGAT(data.node_feat, data.edge_feat, encoder=config["encoder"], time_dim=int(config["d_T"]),
                time_mean=mean, time_std=std, num_layers=int(config["num_layers"]),
                num_heads=int(config["num_heads"]), num_neighbors=k, dropout=float(config["dropout"]),
                sampling=config["neighbor_sampling"], time_input=time_input,
                encoder_options=config.get("encoder_options"),
                # Table 6's index; absent key = per_event, the code default, so that no other run id changes
                position_index=config.get("position_index", "per_event"))
