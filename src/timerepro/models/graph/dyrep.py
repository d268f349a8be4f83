"""DyRep (Trivedi et al. 2019) as DyGLib's `MemoryModel` writes it (`models/MemoryModel.py`, read, not copied);
the memory and its messages are `message_memory` (shared with TGN and JODIE).

An RNN cell updates the memory; the message of an endpoint carries the other endpoint's graph-attention
embedding at the edge's time (TGN's embedding module over memory + raw features) instead of its memory:
    m_u = [s_u; z_v(t); Phi(t - last_u); x_e];
the embedding used for prediction is the memory itself (after committing pending messages). DyGLib
computes z_v in the forward pass and stores the message with its graph, which is detached before it is
used: no gradient ever reaches the attention. Here `observe` recomputes z_v without gradient with the
parameters that scored the batch (the same values, same dropout mode).
docs/dyg_mamba.md ("JODIE and DyRep") lists the decisions.
"""

from __future__ import annotations

import numpy as np
import torch

from timerepro.data.ctdg import CTDGData, LinkSplit
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.message_memory import MessageMemory
from timerepro.models.graph.neighbor_attention import NeighborAttentionBackbone
from timerepro.models.graph.time_stats import time_diff_statistic, train_time_stats


class DyRep(MessageMemory, NeighborAttentionBackbone):
    """DyRep backbone (a `memory.StreamState`): memory per node, messages carrying the other endpoint's
    graph-attention embedding; the memory is the embedding."""

    samplings = ("recent", "uniform")

    def __init__(self, node_feat: np.ndarray, edge_feat: np.ndarray, *, encoder: str = "cosine", time_dim: int = 100,
                 time_mean: float = 0.0, time_std: float = 1.0, memory_updater: str = "rnn", num_layers: int = 1,
                 num_heads: int = 2, num_neighbors: int = 10, dropout: float = 0.1, sampling: str = "recent",
                 encoder_options: dict | None = None):
        object.__setattr__(self, "_cell", memory_updater)  # before nn.Module.__init__: it decides what _build_layers creates
        super().__init__(node_feat, edge_feat, encoder=encoder, time_dim=time_dim, time_mean=time_mean,
                         time_std=time_std, num_layers=num_layers, num_heads=num_heads, num_neighbors=num_neighbors,
                         dropout=dropout, sampling=sampling, encoder_options=encoder_options)
        self._register_memory()

    def _build_layers(self, num_heads: int, dropout: float) -> None:
        self._build_memory(self.node_dim, self._cell)  # DyGLib's order: memory updater, then the embedding module
        super()._build_layers(num_heads, dropout)

    @property
    def queries_independent(self) -> bool:
        """The embedding is a memory read: no random draws, whatever the neighbour sampling."""
        return True

    def embed(self, nodes, times) -> torch.Tensor:
        """(B,) nodes -> (B, d_mem): the memory after committing pending messages (DyGLib's DyRep embedding)."""
        return self.current_memory(nodes)

    def pair_embeddings(self, src, dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        return self.embed(src, times), self.embed(dst, times)

    def attention_embed(self, nodes, times) -> torch.Tensor:
        """(B,) nodes at (B,) times -> (B, d_node): the graph-attention embedding that messages carry."""
        return NeighborAttentionBackbone.embed(self, nodes, times)

    def _message_other(self, ids: torch.Tensor, nodes: np.ndarray, times: np.ndarray) -> torch.Tensor:
        # (2B, d_node): the other endpoints' attention embeddings at the edges' times, on the committed memory
        return self.attention_embed(nodes, times)


# ------------------------------------------------------------------ builder (params/models.yaml `module:`)

def build(config: dict, data: CTDGData, split: LinkSplit, train_graph: TemporalNeighbors) -> DyRep:
    """DyRep: statistics of t - t_k over the num_neighbors most recent training interactions (what the
    attention reads), as for TGN. `config`: an effective config (dataset defaults applied)."""
    k = int(config["num_neighbors"])
    mean, std = train_time_stats(data, split, train_graph, k, *time_diff_statistic(config))
    return DyRep(data.node_feat, data.edge_feat, encoder=config["encoder"], time_dim=int(config["d_T"]),
                 time_mean=mean, time_std=std, memory_updater=config["memory_updater"],
                 num_layers=int(config["num_layers"]), num_heads=int(config["num_heads"]), num_neighbors=k,
                 dropout=float(config["dropout"]), sampling=config["neighbor_sampling"],
                 encoder_options=config.get("encoder_options"))
