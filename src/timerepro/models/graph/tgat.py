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
time, so an embedding at time t never sees an interaction at or after t.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from timerepro.encoders import make_encoder
from timerepro.graphs.neighbors import Neighborhood, TemporalNeighbors

MASK_VALUE = -1e10  # DyGLib/TGAT: finite, so a row with no valid neighbour still has a softmax
SAMPLING = ("recent", "uniform")


class MergeLayer(nn.Module):
    """[a; b] -> W_1 ReLU(W_0 [a; b] + b_0) + b_1 (DyGLib's MergeLayer; linear_time's merge equation)."""

    def __init__(self, dim_a: int, dim_b: int, hidden: int, out: int):
        super().__init__()
        self.fc0 = nn.Linear(dim_a + dim_b, hidden)
        self.fc1 = nn.Linear(hidden, out)

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        # (..., dim_a) ++ (..., dim_b) -> (..., dim_a + dim_b) -> (..., out)
        return self.fc1(torch.relu(self.fc0(torch.cat([a, b], dim=-1))))


class LinkPredictor(nn.Module):
    """Score of a pair from its endpoint embeddings: MergeLayer(d, d, d, 1) on [h_i; h_j] (DyGLib)."""

    def __init__(self, dim: int):
        super().__init__()
        self.merge = MergeLayer(dim, dim, dim, 1)

    def forward(self, h_src: torch.Tensor, h_dst: torch.Tensor) -> torch.Tensor:
        """(B, d), (B, d) -> (B,) logits."""
        return self.merge(h_src, h_dst).squeeze(-1)


class TemporalAttention(nn.Module):
    """One TGAT layer's multi-head attention of a query row over its neighbour rows.

    query input  [h_i; Phi(0)]            : d_q = d_node + d_T
    key/value    [h_v; e; Phi(t - t_k)]   : d_kv = d_node + d_edge + d_T
    Heads split the d_q-wide projections into `num_heads` blocks of d_h = d_q / num_heads.
    """

    def __init__(self, node_dim: int, edge_dim: int, time_dim: int, *, num_heads: int = 2, dropout: float = 0.1):
        super().__init__()
        self.query_dim = node_dim + time_dim
        kv_dim = node_dim + edge_dim + time_dim
        if self.query_dim % num_heads:
            raise ValueError(f"d_node + d_T = {self.query_dim} must be divisible by num_heads = {num_heads}")
        self.num_heads = num_heads
        self.head_dim = self.query_dim // num_heads
        self.w_q = nn.Linear(self.query_dim, self.query_dim, bias=False)
        self.w_k = nn.Linear(kv_dim, self.query_dim, bias=False)
        self.w_v = nn.Linear(kv_dim, self.query_dim, bias=False)
        self.w_o = nn.Linear(self.query_dim, self.query_dim)
        self.norm = nn.LayerNorm(self.query_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, h_self: torch.Tensor, phi_self: torch.Tensor, h_nbr: torch.Tensor, e_nbr: torch.Tensor,
                phi_nbr: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """h_self (B, d_node), phi_self (B, d_T), h_nbr (B, k, d_node), e_nbr (B, k, d_edge),
        phi_nbr (B, k, d_T), valid (B, k) bool -> output (B, d_q), attention weights (B, H, k)."""
        batch, k = valid.shape
        heads, dh = self.num_heads, self.head_dim
        q_in = torch.cat([h_self, phi_self], dim=-1)  # (B, d_q)
        kv_in = torch.cat([h_nbr, e_nbr, phi_nbr], dim=-1)  # (B, k, d_kv)
        q = self.w_q(q_in).view(batch, heads, 1, dh)  # (B, H, 1, d_h): head h = block h of the projection
        key = self.w_k(kv_in).view(batch, k, heads, dh).transpose(1, 2)  # (B, H, k, d_h)
        value = self.w_v(kv_in).view(batch, k, heads, dh).transpose(1, 2)  # (B, H, k, d_h)
        # (B, H, 1, d_h) @ (B, H, d_h, k) -> (B, H, k): one query per node
        scores = (q @ key.transpose(-1, -2)).squeeze(2) / math.sqrt(dh)
        scores = scores.masked_fill(~valid.unsqueeze(1), MASK_VALUE)  # padding rows out (unless all are padding)
        attn = self.dropout(torch.softmax(scores, dim=-1))  # (B, H, k)
        # (B, H, 1, k) @ (B, H, k, d_h) -> (B, H, d_h) -> (B, H * d_h) = (B, d_q), heads concatenated
        heads_out = (attn.unsqueeze(2) @ value).squeeze(2).reshape(batch, self.query_dim)
        out = self.norm(self.dropout(self.w_o(heads_out)) + q_in)  # DyGLib: projection, residual, LayerNorm
        return out, attn


def recency_ranks(times: np.ndarray) -> np.ndarray:
    """(B, k) neighbour times -> their recency index within each row: 1 for the latest, k for the oldest
    (padding, time 0, ranks last and is masked anyway)."""
    order = np.argsort(-times, axis=1, kind="stable")  # latest first
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(1, times.shape[1] + 1), times.shape), axis=1)
    return ranks


class TGAT(nn.Module):
    """TGAT backbone: node embeddings at given times from sampled temporal neighbours.

    node_feat (N+1, d_node) and edge_feat (E+1, d_edge) are the padded feature tables of a
    `CTDGData` (row 0 = padding); they are buffers, not saved in checkpoints. The time encoder is
    `make_encoder(encoder, time_dim, mean=time_mean, std=time_std)`. `set_graph` chooses the
    interactions visible to the model (DyGLib: the training edges while training, all edges while
    evaluating); the graph must be set before the first call.
    """

    def __init__(self, node_feat: np.ndarray, edge_feat: np.ndarray, *, encoder: str = "cosine", time_dim: int = 100,
                 time_mean: float = 0.0, time_std: float = 1.0, num_layers: int = 2, num_heads: int = 2,
                 num_neighbors: int = 20, dropout: float = 0.1, sampling: str = "recent", time_input: str = "time",
                 encoder_options: dict | None = None):
        super().__init__()
        if time_input not in ("time", "position"):
            raise ValueError(f"time_input must be 'time' or 'position', got {time_input!r}")
        self.time_input = time_input  # 'position': encode neighbours' recency indices 1..k instead of t - t_k (Table 6)
        if sampling not in SAMPLING:
            raise ValueError(f"unknown neighbour sampling {sampling!r}; known: {SAMPLING}")
        if num_layers < 1 or num_neighbors < 1:
            raise ValueError("num_layers and num_neighbors must be >= 1")
        self.register_buffer("node_feat", torch.as_tensor(np.asarray(node_feat), dtype=torch.float32), persistent=False)
        self.register_buffer("edge_feat", torch.as_tensor(np.asarray(edge_feat), dtype=torch.float32), persistent=False)
        self.node_dim = self.node_feat.shape[1]
        self.edge_dim = self.edge_feat.shape[1]
        self.time_dim = time_dim
        self.num_layers = num_layers
        self.num_neighbors = num_neighbors
        self.sampling = sampling
        self.time_mean, self.time_std = float(time_mean), float(time_std)
        # encoder_options: the encoder's named variants (docs/fidelity.md, item 5)
        self.time_encoder = make_encoder(encoder, time_dim, mean=time_mean, std=time_std, **(encoder_options or {}))
        self.attention = nn.ModuleList(
            TemporalAttention(self.node_dim, self.edge_dim, time_dim, num_heads=num_heads, dropout=dropout)
            for _ in range(num_layers))
        # merge [attention output (d_node + d_T); raw features (d_node)] -> d_node, hidden d_node (DyGLib)
        self.merge = nn.ModuleList(
            MergeLayer(self.node_dim + time_dim, self.node_dim, self.node_dim, self.node_dim) for _ in range(num_layers))
        self.neighbors: TemporalNeighbors | None = None
        self.rng = None

    @property
    def out_dim(self) -> int:
        return self.node_dim

    def set_graph(self, neighbors: TemporalNeighbors, rng: np.random.RandomState | np.random.Generator | None = None) -> None:
        """Interactions the model may look at, and the random stream of uniform sampling (DyGLib
        resets it whenever the sampler is set: seed 0 for training, 1 for evaluation)."""
        if self.sampling == "uniform" and rng is None:
            raise ValueError("uniform neighbour sampling needs a random stream")
        self.neighbors = neighbors
        self.rng = rng

    def _sample(self, nodes: np.ndarray, times: np.ndarray) -> Neighborhood:
        if self.neighbors is None:
            raise RuntimeError("call set_graph(neighbors) before computing embeddings")
        if self.sampling == "recent":
            return self.neighbors.most_recent(nodes, times, self.num_neighbors)
        return self.neighbors.uniform(nodes, times, self.num_neighbors, self.rng)

    def _index(self, ids: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64)).to(self.node_feat.device)

    def embed(self, nodes, times, layer: int | None = None) -> torch.Tensor:
        """Embeddings (B, d_node) of `nodes` (B,) at `times` (B,) after `layer` layers (default all)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        times = np.asarray(times, dtype=np.float64)
        return self._embed(nodes, times, self.num_layers if layer is None else layer)

    def _embed(self, nodes: np.ndarray, times: np.ndarray, layer: int) -> torch.Tensor:
        raw = self.node_feat[self._index(nodes)]  # (B, d_node)
        if layer == 0:
            return raw
        n = len(nodes)
        device = raw.device
        # DyGLib's order (it fixes the draws of uniform sampling): the nodes' own layer l-1
        # embeddings, then their neighbours, then the neighbours' layer l-1 embeddings
        h_self = self._embed(nodes, times, layer - 1)  # (B, d_node)
        hood = self._sample(nodes, times)  # (B, k) ids, edge ids, times; padding = 0
        k = hood.neighbor_ids.shape[1]
        # neighbours at their own interaction times: (B * k,) queries -> (B, k, d_node)
        h_nbr = self._embed(hood.neighbor_ids.ravel(), hood.times.ravel().astype(np.float64), layer - 1).reshape(n, k, -1)
        if self.time_input == "position":
            dt = torch.from_numpy(recency_ranks(hood.times)).float().to(device)  # (B, k): 1 = most recent
        else:
            # time differences t - t_k in float64, then float32 for the encoder (as DyGLib): (B, k)
            dt = torch.from_numpy(times[:, None] - hood.times.astype(np.float64)).float().to(device)
        phi_nbr = self.time_encoder(dt)  # (B, k, d_T)
        phi_self = self.time_encoder(torch.zeros(n, device=device))  # (B, d_T): Phi(0), the query's own time
        e_nbr = self.edge_feat[self._index(hood.edge_ids)]  # (B, k, d_edge)
        valid = torch.from_numpy(hood.neighbor_ids != 0).to(device)  # (B, k); node 0 is padding only
        out, _ = self.attention[layer - 1](h_self, phi_self, h_nbr, e_nbr, phi_nbr, valid)  # (B, d_node + d_T)
        return self.merge[layer - 1](out, raw)  # (B, d_node)

    def pair_embeddings(self, src, dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        """Embeddings of both endpoints of B candidate edges at their times: two (B, d_node)."""
        return self.embed(src, times), self.embed(dst, times)
