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

The live state (memory, last update, pending messages) is made of persistent buffers, so it is in
`state_dict()` and therefore in every checkpoint and in the best-state copy of `fit`. TGN implements
the `memory.StreamState` protocol the tasks call (`BufferedState`: reset, named copies kept as the
module's extra state, also in `state_dict()`; its own `observe`). docs/tgn_cawn.md lists every decision.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from timerepro.data.ctdg import CTDGData, LinkSplit
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.backbone import to_device
from timerepro.models.graph.memory import BufferedState
from timerepro.models.graph.neighbor_attention import NeighborAttentionBackbone
from timerepro.models.graph.time_stats import time_diff_statistic, train_time_stats
from timerepro.models.graph.defaults import with_dataset_defaults

SAMPLING = ("recent", "uniform")
STATE = ("memory", "last_update", "pending_message", "pending_time", "has_pending")


class TGN(BufferedState, NeighborAttentionBackbone):
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
        # live state, (N,) or (N, d); times in float64 (exact differences, docs/graphs.md)
        self.register_buffer("memory", torch.zeros(self.num_nodes, self.memory_dim))
        self.register_buffer("last_update", torch.zeros(self.num_nodes, dtype=torch.float64))
        self.register_buffer("pending_message", torch.zeros(self.num_nodes, self.message_dim))
        self.register_buffer("pending_time", torch.zeros(self.num_nodes, dtype=torch.float64))
        self.register_buffer("has_pending", torch.zeros(self.num_nodes, dtype=torch.bool))

    def _build_layers(self, num_heads: int, dropout: float) -> None:
        self.memory_dim = self.node_dim  # DyGLib: memory as wide as the node features (they are summed)
        self.message_dim = 2 * self.memory_dim + self.time_dim + self.edge_dim
        self.memory_updater = nn.GRUCell(self.message_dim, self.memory_dim)  # created first: the seed's weights as before
        super()._build_layers(num_heads, dropout)

    # ------------------------------------------------------------------ the stream state

    @torch.no_grad()
    def observe(self, src, dst, times, edge_ids) -> None:
        """Feed a batch of positive edges to the memory, after the batch has been scored: commit the
        endpoints' pending messages, then store their new messages (DyGLib's update + store)."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        times = np.asarray(times, dtype=np.float64)
        # 2B messages, source roles first (DyGLib's list order); the last one per owner is kept:
        # the first occurrence in the reversed list
        owner, other = np.concatenate([src, dst]), np.concatenate([dst, src])
        t2, e2 = np.concatenate([times, times]), np.concatenate([edge_ids, edge_ids])
        _, first_rev = np.unique(owner[::-1], return_index=True)
        last = len(owner) - 1 - first_rev  # (U,) positions of each owner's last message
        nodes, own, oth, e2, last, keep, t2, keep_time = to_device(self.device, np.unique(owner), owner, other, e2, last,
                                                                   owner[last], t2, t2[last])
        # 1. commit the pending messages of the batch's endpoints (rows without one keep their memory)
        pending = self.has_pending[nodes]  # (U,)
        committed = self.memory_updater(self.pending_message[nodes], self.memory[nodes])  # (U, d_mem)
        self.memory[nodes] = torch.where(pending[:, None], committed, self.memory[nodes])
        self.last_update[nodes] = torch.where(pending, self.pending_time[nodes], self.last_update[nodes])
        self.has_pending[nodes] = False
        # 2. new messages on the committed state
        dt = (t2 - self.last_update[own]).float()  # (2B,)
        # (2B, d_mem) ++ (2B, d_mem) ++ (2B, d_T) ++ (2B, d_edge) -> (2B, message_dim)
        messages = torch.cat([self.memory[own], self.memory[oth], self.time_encoder(dt), self.edge_feat[e2]], dim=-1)
        self.pending_message[keep] = messages[last]
        self.pending_time[keep] = keep_time
        self.has_pending[keep] = True

    def detach_state(self) -> None:
        """Nothing to do: `observe` writes the state without gradient."""

    # ------------------------------------------------------------------ embeddings

    def current_memory(self, nodes) -> torch.Tensor:
        """(B,) ids -> (B, d_mem): the memory after committing pending messages, without storing it
        (DyGLib's get_updated_memories); differentiable through the GRU."""
        return self._memory_of(self._index(np.asarray(nodes, dtype=np.int64)))

    def _memory_of(self, ids: torch.Tensor) -> torch.Tensor:
        mem = self.memory[ids]  # (B, d_mem)
        updated = self.memory_updater(self.pending_message[ids], mem)  # (B, d_mem), out of place: the bank is untouched
        return torch.where(self.has_pending[ids][:, None], updated, mem)

    def _base(self, nodes: np.ndarray, ids: torch.Tensor) -> torch.Tensor:
        # (U, d_node): memory + raw features (DyGLib's layer-0 input, and what the layers merge with)
        return self._memory_of(ids) + self.node_feat[ids]

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
    interactions, as for TGAT (the attention's differences)."""
    config = with_dataset_defaults(config)
    k = int(config["num_neighbors"])
    mean, std = train_time_stats(data, split, train_graph, k, *time_diff_statistic(config))
    return TGN(data.node_feat, data.edge_feat, encoder=config["encoder"], time_dim=int(config["d_T"]),
               time_mean=mean, time_std=std, num_layers=int(config["num_layers"]),
               num_heads=int(config["num_heads"]), num_neighbors=k, dropout=float(config["dropout"]),
               sampling=config["neighbor_sampling"], encoder_options=config.get("encoder_options"))
