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
`state_dict()` and therefore in every checkpoint and in the best-state copy of `fit`. Named copies
(`backup_state`/`restore_state`, DyGLib's backup/reload of the memory bank) are kept as the module's
extra state, also in `state_dict()`. docs/tgn_cawn.md lists every decision.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from timerepro.encoders import make_encoder
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.tgat import MergeLayer, TemporalAttention

SAMPLING = ("recent", "uniform")
STATE = ("memory", "last_update", "pending_message", "pending_time", "has_pending")


class TGN(nn.Module):
    """TGN backbone with memory; implements the optional task hooks reset/observe/backup/restore."""

    def __init__(self, node_feat: np.ndarray, edge_feat: np.ndarray, *, encoder: str = "cosine", time_dim: int = 100,
                 time_mean: float = 0.0, time_std: float = 1.0, num_layers: int = 1, num_heads: int = 2,
                 num_neighbors: int = 10, dropout: float = 0.1, sampling: str = "recent",
                 encoder_options: dict | None = None):
        super().__init__()
        if sampling not in SAMPLING:
            raise ValueError(f"unknown neighbour sampling {sampling!r}; known: {SAMPLING}")
        if num_layers < 1 or num_neighbors < 1:
            raise ValueError("num_layers and num_neighbors must be >= 1")
        self.register_buffer("node_feat", torch.as_tensor(np.asarray(node_feat), dtype=torch.float32), persistent=False)
        self.register_buffer("edge_feat", torch.as_tensor(np.asarray(edge_feat), dtype=torch.float32), persistent=False)
        self.num_nodes, self.node_dim = self.node_feat.shape
        self.edge_dim = self.edge_feat.shape[1]
        self.memory_dim = self.node_dim  # DyGLib: memory as wide as the node features (they are summed)
        self.message_dim = 2 * self.memory_dim + time_dim + self.edge_dim
        self.time_dim, self.num_layers, self.num_neighbors, self.sampling = time_dim, num_layers, num_neighbors, sampling
        self.time_mean, self.time_std = float(time_mean), float(time_std)
        # encoder_options: the encoder's named variants (docs/fidelity.md, item 5)
        self.time_encoder = make_encoder(encoder, time_dim, mean=time_mean, std=time_std, **(encoder_options or {}))
        self.memory_updater = nn.GRUCell(self.message_dim, self.memory_dim)
        self.attention = nn.ModuleList(
            TemporalAttention(self.node_dim, self.edge_dim, time_dim, num_heads=num_heads, dropout=dropout)
            for _ in range(num_layers))
        self.merge = nn.ModuleList(
            MergeLayer(self.node_dim + time_dim, self.node_dim, self.node_dim, self.node_dim) for _ in range(num_layers))
        # live state, (N,) or (N, d); times in float64 (exact differences, docs/graphs.md)
        self.register_buffer("memory", torch.zeros(self.num_nodes, self.memory_dim))
        self.register_buffer("last_update", torch.zeros(self.num_nodes, dtype=torch.float64))
        self.register_buffer("pending_message", torch.zeros(self.num_nodes, self.message_dim))
        self.register_buffer("pending_time", torch.zeros(self.num_nodes, dtype=torch.float64))
        self.register_buffer("has_pending", torch.zeros(self.num_nodes, dtype=torch.bool))
        self.saved_states: dict[str, dict[str, torch.Tensor]] = {}
        self.neighbors: TemporalNeighbors | None = None
        self.rng = None

    @property
    def out_dim(self) -> int:
        return self.node_dim

    # ------------------------------------------------------------------ task hooks

    def set_graph(self, neighbors: TemporalNeighbors, rng=None) -> None:
        """Interactions the embedding module may look at, and the stream of uniform sampling."""
        if self.sampling == "uniform" and rng is None:
            raise ValueError("uniform neighbour sampling needs a random stream")
        self.neighbors, self.rng = neighbors, rng

    def reset_state(self) -> None:
        """Empty memory, no pending message (DyGLib: at the start of every training epoch)."""
        for name in STATE:
            getattr(self, name).zero_()

    def backup_state(self, name: str) -> None:
        """Keep a copy of the live state under `name` (saved with the module's state_dict)."""
        self.saved_states[name] = {k: getattr(self, k).detach().clone() for k in STATE}

    def restore_state(self, name: str) -> None:
        """Make the copy saved under `name` the live state (it stays saved)."""
        for k, v in self.saved_states[name].items():
            getattr(self, k).copy_(v)

    def get_extra_state(self) -> dict:
        return {"saved_states": {n: {k: v.clone() for k, v in s.items()} for n, s in self.saved_states.items()}}

    def set_extra_state(self, state: dict) -> None:
        self.saved_states = {n: {k: v.clone() for k, v in s.items()} for n, s in state["saved_states"].items()}

    @torch.no_grad()
    def observe(self, src, dst, times, edge_ids) -> None:
        """Feed a batch of positive edges to the memory, after the batch has been scored: commit the
        endpoints' pending messages, then store their new messages (DyGLib's update + store)."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        times = np.asarray(times, dtype=np.float64)
        device = self.memory.device
        # 1. commit the pending messages of the batch's endpoints
        nodes = self._index(np.unique(np.concatenate([src, dst])))  # (U,)
        nodes = nodes[self.has_pending[nodes]]
        if len(nodes):
            self.memory[nodes] = self.memory_updater(self.pending_message[nodes], self.memory[nodes])
            self.last_update[nodes] = self.pending_time[nodes]
            self.has_pending[nodes] = False
        # 2. new messages on the committed state: (2B,) owners, source roles first (DyGLib's list order)
        owner = np.concatenate([src, dst])
        other = np.concatenate([dst, src])
        t2 = np.concatenate([times, times])
        e2 = self._index(np.concatenate([edge_ids, edge_ids]))
        own, oth = self._index(owner), self._index(other)
        dt = (torch.from_numpy(t2).to(device) - self.last_update[own]).float()  # (2B,)
        # (2B, d_mem) ++ (2B, d_mem) ++ (2B, d_T) ++ (2B, d_edge) -> (2B, message_dim)
        messages = torch.cat([self.memory[own], self.memory[oth], self.time_encoder(dt), self.edge_feat[e2]], dim=-1)
        # keep the last message of each owner: first occurrence in the reversed list
        _, first_rev = np.unique(owner[::-1], return_index=True)
        last = len(owner) - 1 - first_rev  # (U,) positions of each owner's last message
        keep = self._index(owner[last])
        self.pending_message[keep] = messages[self._index(last)]
        self.pending_time[keep] = torch.from_numpy(t2[last]).to(device)
        self.has_pending[keep] = True

    # ------------------------------------------------------------------ embeddings

    def _index(self, ids) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64)).to(self.memory.device)

    def current_memory(self, nodes) -> torch.Tensor:
        """(B,) ids -> (B, d_mem): the memory after committing pending messages, without storing it
        (DyGLib's get_updated_memories); differentiable through the GRU."""
        nodes = np.asarray(nodes, dtype=np.int64)
        uniq, inverse = np.unique(nodes, return_inverse=True)
        u = self._index(uniq)
        mem = self.memory[u]  # (U, d_mem)
        pending = self.has_pending[u]  # (U,)
        if bool(pending.any()):
            rows = torch.nonzero(pending).squeeze(1)
            updated = self.memory_updater(self.pending_message[u[rows]], mem[rows])  # (P, d_mem)
            mem = mem.index_put((rows,), updated)  # out of place: the bank is not touched
        return mem[self._index(inverse)]

    def _sample(self, nodes: np.ndarray, times: np.ndarray):
        if self.neighbors is None:
            raise RuntimeError("call set_graph(neighbors) before computing embeddings")
        if self.sampling == "recent":
            return self.neighbors.most_recent(nodes, times, self.num_neighbors)
        return self.neighbors.uniform(nodes, times, self.num_neighbors, self.rng)

    def _embed(self, nodes: np.ndarray, times: np.ndarray, layer: int) -> torch.Tensor:
        idx = self._index(nodes)
        base = self.current_memory(nodes) + self.node_feat[idx]  # (B, d_node): memory + raw features
        if layer == 0:
            return base
        n = len(nodes)
        device = base.device
        h_self = self._embed(nodes, times, layer - 1)  # (B, d_node)
        hood = self._sample(nodes, times)  # (B, k), strictly before t
        k = hood.neighbor_ids.shape[1]
        # neighbours at their interaction times: (B * k,) -> (B, k, d_node)
        h_nbr = self._embed(hood.neighbor_ids.ravel(), hood.times.ravel().astype(np.float64), layer - 1).reshape(n, k, -1)
        dt = torch.from_numpy(times[:, None] - hood.times.astype(np.float64)).float().to(device)  # (B, k)
        phi_nbr = self.time_encoder(dt)  # (B, k, d_T)
        phi_self = self.time_encoder(torch.zeros(n, device=device))  # (B, d_T): Phi(0)
        e_nbr = self.edge_feat[self._index(hood.edge_ids)]  # (B, k, d_edge)
        valid = torch.from_numpy(hood.neighbor_ids != 0).to(device)  # (B, k)
        out, _ = self.attention[layer - 1](h_self, phi_self, h_nbr, e_nbr, phi_nbr, valid)  # (B, d_node + d_T)
        return self.merge[layer - 1](out, base)  # (B, d_node); DyGLib merges with memory + raw features

    def embed(self, nodes, times) -> torch.Tensor:
        """(B,) nodes at (B,) times -> (B, d_node); reads the memory, never changes it."""
        return self._embed(np.asarray(nodes, dtype=np.int64), np.asarray(times, dtype=np.float64), self.num_layers)

    def pair_embeddings(self, src, dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        """Both endpoints of B candidate edges at their times (DyGLib embeds them together): two (B, d_node)."""
        src = np.asarray(src, dtype=np.int64)
        times = np.asarray(times, dtype=np.float64)
        h = self.embed(np.concatenate([src, np.asarray(dst, dtype=np.int64)]), np.concatenate([times, times]))
        return h[: len(src)], h[len(src):]
