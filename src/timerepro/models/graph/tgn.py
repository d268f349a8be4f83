"""TGN (Rossi et al. 2020) as DyGLib implements it (`models/MemoryModel.py`, read, not copied).

Per node a memory s_i (width d_node), its last update time and one pending message. For a batch of
positive edges (u, v, e, t), after the batch has been scored (`observe`):

  1. every endpoint with a pending message commits it: s_i <- GRU(m_i, s_i), last_i <- t(m_i);
  2. each endpoint gets a new pending message, identity message function on the committed state:
         m_u = [s_u; s_v; Phi(t - last_u); x_e],   m_v = [s_v; s_u; Phi(t - last_v); x_e]
     and only the last one per node is kept (DyGLib's last-message aggregator; "last" in DyGLib's
     list order: the source-role messages of the batch, then the destination-role ones).

An embedding at time t (`pair_embeddings`) reads the memory as it would be after committing the
pending messages (GRU applied on the fly, with gradient, the bank left untouched), so a batch never
sees its own edges: they reach the memory only through `observe`, after their predictions. The
embedding module is TGAT's attention (`TemporalAttention`) over the k most recent neighbours, on
node features memory + raw features, merged with them by `MergeLayer` (DyGLib's
GraphAttentionEmbedding; 1 layer in DyGLib's TGN configurations). One time encoder serves messages and
attention.

The memory, its messages and `observe` are `message_memory.MessageMemory` (shared with JODIE and DyRep):
persistent buffers, so the live state is in `state_dict()` and therefore in every checkpoint and in the
best-state copy of `fit`; TGN implements the `memory.StreamState` protocol the tasks call.
docs/tgn_cawn.md lists every decision.
"""

from __future__ import annotations

import numpy as np
import torch

from timerepro.data.ctdg import CTDGData, LinkSplit
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.message_memory import STATE, MessageMemory
from timerepro.models.graph.neighbor_attention import NeighborAttentionBackbone
from timerepro.models.graph.time_stats import time_diff_statistic, train_time_stats

SAMPLING = ("recent", "uniform")


class TGN(MessageMemory, NeighborAttentionBackbone):
    """TGN backbone with memory (a `memory.StreamState`): reset, observe, detach, backup, restore."""

    samplings = SAMPLING
    state_names = STATE

    def __init__(self, node_feat: np.ndarray, edge_feat: np.ndarray, *, encoder: str = "cosine", time_dim: int = 100,
                 time_mean: float = 0.0, time_std: float = 1.0, num_layers: int = 1, num_heads: int = 2,
                 num_neighbors: int = 10, dropout: float = 0.1, sampling: str = "recent",
                 encoder_options: dict | None = None):
        super().__init__(node_feat, edge_feat, encoder=encoder, time_dim=time_dim, time_mean=time_mean,
                         time_std=time_std, num_layers=num_layers, num_heads=num_heads, num_neighbors=num_neighbors,
                         dropout=dropout, sampling=sampling, encoder_options=encoder_options)
        self.num_nodes = self.node_feat.shape[0]
        self._register_memory()

    def _build_layers(self, num_heads: int, dropout: float) -> None:
        # DyGLib: memory as wide as the node features (they are summed); the GRU created first: the seed's weights as before
        self._build_memory(self.node_dim, "gru")
        super()._build_layers(num_heads, dropout)

    # ------------------------------------------------------------------ embeddings

    def pair_embeddings(self, src, dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        """Both endpoints of B candidate edges at their times (DyGLib embeds them together): two (B, d_node);
        reads the memory, never changes it."""
        src = np.asarray(src, dtype=np.int64)
        times = np.asarray(times, dtype=np.float64)
        h = self.embed(np.concatenate([src, np.asarray(dst, dtype=np.int64)]), np.concatenate([times, times]))
        return h[: len(src)], h[len(src):]

# ------------------------------------------------------------------ builder (params/models.yaml `module:`)

def build(config: dict, data: CTDGData, split: LinkSplit, train_graph: TemporalNeighbors) -> TGN:
    """TGN (DyGLib's MemoryModel): statistics of t - t_k over the num_neighbors most recent training
    interactions, as for TGAT (the attention's differences). `config`: an effective config (dataset defaults
    applied)."""
    k = int(config["num_neighbors"])
    mean, std = train_time_stats(data, split, train_graph, k, *time_diff_statistic(config))
    return TGN(data.node_feat, data.edge_feat, encoder=config["encoder"], time_dim=int(config["d_T"]),
               time_mean=mean, time_std=std, num_layers=int(config["num_layers"]),
               num_heads=int(config["num_heads"]), num_neighbors=k, dropout=float(config["dropout"]),
               sampling=config["neighbor_sampling"], encoder_options=config.get("encoder_options"))
