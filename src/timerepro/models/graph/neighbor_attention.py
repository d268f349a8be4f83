"""Attention over temporal neighbours, shared by TGAT, TGN's embedding module and (phase 2) DyRep.

DyGLib's `models/modules.py` (`MultiHeadAttention`, `MergeLayer`) and the layer recursion of
`models/TGAT.py::compute_node_temporal_embeddings` / `MemoryModel.py::GraphAttentionEmbedding`, read,
not copied. Layer l of node i at time t (linear_time's equations, DyGLib's multi-head form):

    q = W_Q [h_i^(l-1)(t); Phi(0)]        rows r_k = [h_{v_k}^(l-1)(t_k); e_k; Phi(t - t_k)]
    head j: a_jk = softmax_k(q_j . W_K^j r_k / sqrt(d_h)),   o_j = sum_k a_jk W_V^j r_k
    h_i^(l)(t) = Merge(LayerNorm(Dropout(W_O [o_1 .. o_H]) + [h_i^(l-1); Phi(0)]), base_i)

with h^(0) = base (TGAT: raw node features; TGN: memory + raw features). A model subclasses
`NeighborAttentionBackbone` and says what its base is (`_base`).

The same outputs (to float rounding; tests/graph_models/test_neighbor_attention.py compares with the
equations written out) from less work:

1. projections absorbed into the query: q_j . W_K^j r_k = (W_K^j^T q_j) . r_k and
   sum_k a_jk W_V^j r_k = W_V^j (sum_k a_jk r_k). DyGLib projects every one of the k neighbour rows
   of width d_kv to d_q twice (2 k d_kv d_q multiply-adds per query); here each query projects H
   vectors of width d_kv once each way (2 d_kv d_q), k times fewer;
2. rows are never concatenated: the node, edge and time parts of r_k meet the matching column blocks
   of W_K and W_V, and a part whose feature table is all zeros is left out (its terms are exactly 0);
3. with the deterministic `recent` sampling, `embed` computes each distinct (node, time) query once per
   layer: sources shared by a batch's positives and negatives, nodes repeated in a batch, neighbours
   shared by several queries; the neighbourhood of a query is retrieved once for every layer (DyGLib
   retrieves it again at each layer), and the host arrays of a call reach the device in one copy per
   dtype. Random sampling keeps DyGLib's recursion and its order of random draws.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from timerepro.graphs.neighbors import Neighborhood
from timerepro.models.dropout import Dropout
from timerepro.models.graph.backbone import DETERMINISTIC, TemporalBackbone, to_device
from timerepro.models.graph.layers import MergeLayer
from timerepro.models.graph.position_index import check_position_index, distinct_time_index
from timerepro.models.graph.queries import distinct_queries

MASK_VALUE = -1e10  # DyGLib/TGAT: finite, so a row with no valid neighbour still has a softmax
TIME_INPUTS = ("time", "position")


class TemporalAttention(nn.Module):
    """One layer's multi-head attention of a query row over its neighbour rows (DyGLib's MultiHeadAttention).

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
        # column blocks of W_K and W_V that meet the node, edge and time parts of a neighbour row
        self.blocks = (slice(0, node_dim), slice(node_dim, node_dim + edge_dim), slice(node_dim + edge_dim, kv_dim))
        self.w_q = nn.Linear(self.query_dim, self.query_dim, bias=False)
        self.w_k = nn.Linear(kv_dim, self.query_dim, bias=False)
        self.w_v = nn.Linear(kv_dim, self.query_dim, bias=False)
        self.w_o = nn.Linear(self.query_dim, self.query_dim)
        self.norm = nn.LayerNorm(self.query_dim)
        self.dropout = Dropout(dropout)

    def forward(self, h_self: torch.Tensor, phi_self: torch.Tensor, h_nbr: torch.Tensor | None,
                e_nbr: torch.Tensor | None, phi_nbr: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """h_self (B, d_node), phi_self (B, d_T), h_nbr (B, k, d_node), e_nbr (B, k, d_edge),
        phi_nbr (B, k, d_T), valid (B, k) bool -> output (B, d_q), attention weights (B, H, k).
        h_nbr or e_nbr None: that part of every row is zero (left out, exactly)."""
        batch, k = valid.shape
        heads, dh = self.num_heads, self.head_dim
        q_in = torch.cat([h_self, phi_self], dim=-1)  # (B, d_q)
        q = self.w_q(q_in).view(batch, heads, dh)  # (B, H, d_h): head j = block j of the projection
        parts = [(x, block) for x, block in zip((h_nbr, e_nbr, phi_nbr), self.blocks) if x is not None]
        w_k = self.w_k.weight.view(heads, dh, -1)  # (H, d_h, d_kv): head j's rows of W_K
        w_v = self.w_v.weight.view(heads, dh, -1)
        scores = None
        for x, block in parts:
            # query absorbed into the key projection: (B, H, d_h) x (H, d_h, d_p) -> (B, H, d_p)
            q_abs = torch.einsum("bjd,jdp->bjp", q, w_k[:, :, block])
            # (B, k, d_p) @ (B, d_p, H) -> (B, k, H): every neighbour row against every head's vector
            part = torch.bmm(x, q_abs.transpose(1, 2))
            scores = part if scores is None else scores + part
        scores = scores.transpose(1, 2) / math.sqrt(dh)  # (B, H, k)
        scores = scores.masked_fill(~valid.unsqueeze(1), MASK_VALUE)  # padding rows out (unless all are padding)
        attn = self.dropout(torch.softmax(scores, dim=-1))  # (B, H, k)
        heads_out = None
        for x, block in parts:
            # rows averaged first, projected after: (B, H, k) @ (B, k, d_p) -> (B, H, d_p) -> W_V^j -> (B, H, d_h)
            part = torch.einsum("bjp,jdp->bjd", torch.bmm(attn, x), w_v[:, :, block])
            heads_out = part if heads_out is None else heads_out + part
        # (B, H, d_h) -> (B, H * d_h) = (B, d_q), heads concatenated
        out = self.norm(self.dropout(self.w_o(heads_out.reshape(batch, self.query_dim))) + q_in)
        return out, attn


def recency_ranks(times: np.ndarray) -> np.ndarray:
    """(B, k) neighbour times -> their recency index within each row: 1 for the latest, k for the oldest
    (padding, time 0, ranks last and is masked anyway)."""
    order = np.argsort(-times, axis=1, kind="stable")  # latest first
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(1, times.shape[1] + 1), times.shape), axis=1)
    return ranks


class NeighborAttentionBackbone(TemporalBackbone):
    """Layers of neighbour attention + merge over the k sampled neighbours (TGAT's recursion).

    Subclasses give the layer-0 input `_base(nodes, ids)`: (U, d_node) for U node ids (a function of the
    node only, at the time of the call). `base_is_zero` says when it is identically zero (TGAT on a
    dataset without node features), so that the layer-1 neighbour rows lose their node part exactly."""

    def __init__(self, node_feat: np.ndarray, edge_feat: np.ndarray, *, encoder: str = "cosine", time_dim: int = 100,
                 time_mean: float = 0.0, time_std: float = 1.0, num_layers: int = 2, num_heads: int = 2,
                 num_neighbors: int = 20, dropout: float = 0.1, sampling: str = "recent", time_input: str = "time",
                 encoder_options: dict | None = None, position_index: str = "per_event"):
        super().__init__(node_feat, edge_feat, encoder=encoder, time_dim=time_dim, time_mean=time_mean,
                         time_std=time_std, sampling=sampling, encoder_options=encoder_options)
        if time_input not in TIME_INPUTS:
            raise ValueError(f"time_input must be 'time' or 'position', got {time_input!r}")
        if num_layers < 1 or num_neighbors < 1:
            raise ValueError("num_layers and num_neighbors must be >= 1")
        self.time_input = time_input  # 'position': encode neighbours' recency indices instead of t - t_k
        self.position_index = check_position_index(position_index)  # which index (models/graph/position_index.py)
        self.num_layers, self.num_neighbors = num_layers, num_neighbors
        self._build_layers(num_heads, dropout)

    def _build_layers(self, num_heads: int, dropout: float) -> None:
        """The attention and merge layers (a subclass creating modules of its own before them overrides
        this, so that a seed gives the same initial weights as before the shared base existed)."""
        self.attention = nn.ModuleList(
            TemporalAttention(self.node_dim, self.edge_dim, self.time_dim, num_heads=num_heads, dropout=dropout)
            for _ in range(self.num_layers))
        # merge [attention output (d_node + d_T); base (d_node)] -> d_node, hidden d_node (DyGLib)
        self.merge = nn.ModuleList(
            MergeLayer(self.node_dim + self.time_dim, self.node_dim, self.node_dim, self.node_dim)
            for _ in range(self.num_layers))

    # ---- what a subclass provides
    base_is_zero = False

    def _base(self, nodes: np.ndarray, ids: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    # ---- queries
    @property
    def queries_independent(self) -> bool:
        """True when the embedding of a (node, time) query does not depend on the other queries of the
        call (no random draws): callers may then embed many queries in one call and share repeats."""
        return self.sampling == DETERMINISTIC

    def _sample(self, nodes: np.ndarray, times: np.ndarray) -> Neighborhood:
        graph = self.graph()
        if self.sampling == DETERMINISTIC:
            return graph.most_recent(nodes, times, self.num_neighbors)
        return graph.uniform(nodes, times, self.num_neighbors, self.rng)

    def _time_input(self, times: np.ndarray, hood_times: np.ndarray) -> np.ndarray:
        """(Q,) query times, (Q, k) neighbour times -> the encoder's input: t - t_k in float64, then
        float32 (DyGLib casts at the same place), or recency indices (Table 6): `per_event` 1..k, one per
        neighbour; `distinct_times` the rank among the row's distinct times, padding (time 0) counted as one
        more time, so it sits one index past the oldest neighbour (the authors' TGAT)."""
        if self.time_input == "position":
            if self.position_index == "distinct_times":
                return distinct_time_index(hood_times, times, np.ones(hood_times.shape, dtype=bool)).astype(np.float32)
            return recency_ranks(hood_times).astype(np.float32)
        return (times[:, None] - hood_times.astype(np.float64)).astype(np.float32)

    def _layer(self, layer: int, h_self: torch.Tensor, h_nbr: torch.Tensor | None, e_nbr: torch.Tensor | None,
               dt: torch.Tensor, valid: torch.Tensor, base_self: torch.Tensor) -> torch.Tensor:
        """One attention + merge layer for Q queries: (Q, d_node) each, neighbours (Q, k, .)."""
        phi_nbr = self.time_encoder(dt)  # (Q, k, d_T)
        phi_self = self.time_encoder(torch.zeros(len(dt), device=dt.device))  # (Q, d_T): Phi(0), the query's own time
        out, _ = self.attention[layer - 1](h_self, phi_self, h_nbr, e_nbr, phi_nbr, valid)  # (Q, d_node + d_T)
        return self.merge[layer - 1](out, base_self)  # (Q, d_node)

    def embed(self, nodes, times, layer: int | None = None) -> torch.Tensor:
        """Embeddings (B, d_node) of `nodes` (B,) at `times` (B,) after `layer` layers (default all)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        times = np.asarray(times, dtype=np.float64)
        layer = self.num_layers if layer is None else layer
        if layer == 0 or len(nodes) == 0:
            return self._base(nodes, self._index(nodes))
        if self.sampling == DETERMINISTIC:
            return self._embed_shared(nodes, times, layer)
        return self._embed_recursive(nodes, times, layer)

    def _embed_recursive(self, nodes: np.ndarray, times: np.ndarray, layer: int) -> torch.Tensor:
        """DyGLib's recursion, in its order (it fixes the draws of random sampling): the nodes' own
        layer l-1 embeddings, then their neighbours, then the neighbours' layer l-1 embeddings."""
        if layer == 0:
            return self._base(nodes, self._index(nodes))
        n = len(nodes)
        h_self = self._embed_recursive(nodes, times, layer - 1)  # (B, d_node)
        hood = self._sample(nodes, times)  # (B, k) ids, edge ids, times; padding = 0
        k = hood.neighbor_ids.shape[1]
        # neighbours at their own interaction times: (B * k,) queries -> (B, k, d_node)
        h_nbr = self._embed_recursive(hood.neighbor_ids.ravel(), hood.times.ravel().astype(np.float64),
                                      layer - 1).reshape(n, k, -1)
        ids, eids, dt = to_device(self.device, nodes, hood.edge_ids, self._time_input(times, hood.times))
        e_nbr = None if self.edge_feat_zero else self.edge_feat[eids]  # (B, k, d_edge)
        valid = h_nbr.new_tensor(hood.neighbor_ids != 0, dtype=torch.bool)  # (B, k); node 0 is padding only
        return self._layer(layer, h_self, h_nbr, e_nbr, dt, valid, self._base(nodes, ids))

    def _embed_shared(self, nodes: np.ndarray, times: np.ndarray, layers: int) -> torch.Tensor:
        """Deterministic sampling: each distinct (node, time) query once per layer.

        The queries of layer l are a prefix of those of layer l-1 (which adds their neighbours at the
        neighbours' interaction times), so every query's neighbourhood is retrieved once, for the
        longest list (layer 1), and layer l reads the first Q_l rows of it."""
        k = self.num_neighbors
        q_nodes, q_times, top = distinct_queries(nodes, times)
        sizes = [len(q_nodes)]  # Q_L, Q_{L-1}, ..., Q_1
        hoods = [self._sample(q_nodes, q_times)]
        below = []  # for layers L..2: (Q_l, k) positions of each neighbour among the queries of layer l-1
        for _ in range(layers - 1):
            ids = np.concatenate([h.neighbor_ids for h in hoods])  # (Q_l, k)
            nbr_times = np.concatenate([h.times for h in hoods]).astype(np.float64)
            q_nodes, q_times, pos = distinct_queries(np.concatenate([q_nodes, ids.ravel()]),
                                                     np.concatenate([q_times, nbr_times.ravel()]))
            below.append(pos[sizes[-1]:].reshape(sizes[-1], k))
            hoods.append(self._sample(q_nodes[sizes[-1]:], q_times[sizes[-1]:]))  # the added queries only
            sizes.append(len(q_nodes))
        ids = np.concatenate([h.neighbor_ids for h in hoods])  # (Q_1, k)
        eids = np.concatenate([h.edge_ids for h in hoods])
        dt = self._time_input(q_times, np.concatenate([h.times for h in hoods]))  # (Q_1, k)
        # layer 0 depends on the node only: one base row per distinct node of the call
        base_nodes, base_pos = np.unique(np.concatenate([q_nodes, ids.ravel()]), return_inverse=True)
        base_pos = base_pos.reshape(-1)
        # every host array of the call, to the device with one copy per dtype
        base_ids, base_pos, valid, eids, dt, top, *below = to_device(self.device, base_nodes, base_pos, ids != 0, eids,
                                                                     dt, top, *below)
        q1 = sizes[-1]
        base = self._base(base_nodes, base_ids)  # (U, d_node)
        base_self = base[base_pos[:q1]]  # (Q_1, d_node)
        e_nbr = None if self.edge_feat_zero else self.edge_feat[eids]  # (Q_1, k, d_edge)
        # segments of the query list: the call's own queries, then each layer's added neighbours
        bounds = [0] + sizes
        h = base_self
        for layer in range(1, layers + 1):
            q_l = sizes[layers - layer]  # layer l embeds the first Q_l queries
            if layer == 1:
                h_nbr = None if self.base_is_zero else base[base_pos[q1:].view(q1, k)]  # (Q_1, k, d_node)
            else:
                h_nbr = h[below[layers - layer]]  # (Q_l, k, d_node): layer l-1 embeddings of the neighbours
            out = []
            for lo, hi in zip(bounds[:-1], bounds[1:]):  # DyGLib's order: the nodes, then their neighbours
                if hi > q_l:
                    break
                if hi > lo:
                    out.append(self._layer(layer, h[lo:hi], None if h_nbr is None else h_nbr[lo:hi],
                                           None if e_nbr is None else e_nbr[lo:hi], dt[lo:hi], valid[lo:hi],
                                           base_self[lo:hi]))
            h = torch.cat(out) if len(out) > 1 else out[0]  # (Q_l, d_node)
        return h[top]
