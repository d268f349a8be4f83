"""TCL (Wang et al. 2021) as DyGLib implements it (`models/TCL.py`, `models/modules.py::TransformerEncoder`;
read, not copied).

For a candidate edge (u, v, t), each endpoint's sequence is [the node itself (edge 0, time t), its k
sampled interactions before t, oldest first, left-padded with 0] (k + 1 = DyGLib's num_depths). Every
position carries node features + edge features + Phi(t - t_j) (learnable cosine, DyGLib's TimeEncoder),
each projected to d_node, plus a learnable depth embedding of the position. Per layer: self-attention
over u's sequence, self-attention over v's, then co-attention (u's queries over v's keys and the reverse),
each a post-LN Transformer block (MHA, residual, LayerNorm, ReLU FFN 4d, residual, LayerNorm) with padding
keys masked. The embedding is the output at the node's own position (0), through a linear output layer.

DyGLib's `TransformerEncoder` is reused for both attentions, so one layer's weights serve the self- and the
co-attention (as in DyGLib). Neighbour retrieval is strictly before t, so no interaction at or after t is seen.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from timerepro.encoders import make_encoder
from timerepro.graphs.neighbors import Neighborhood, TemporalNeighbors
from timerepro.models.dropout import Dropout
from timerepro.models.graph.features import FeatureTable

SAMPLING = ("recent", "uniform")


class SampledHistory:
    """Mixin: `set_graph(neighbors, rng)` and `_sample(nodes, times, k)` under `self.sampling`
    (DyGLib's 'recent' or 'uniform' with the task's random stream)."""

    sampling: str = "recent"
    neighbors: TemporalNeighbors | None = None
    rng = None

    def set_graph(self, neighbors: TemporalNeighbors, rng=None) -> None:
        """Interactions the model may look at, and the random stream of uniform sampling."""
        if self.sampling == "uniform" and rng is None:
            raise ValueError("uniform neighbour sampling needs a random stream")
        self.neighbors, self.rng = neighbors, rng

    def _sample(self, nodes: np.ndarray, times: np.ndarray, k: int) -> Neighborhood:
        if self.neighbors is None:
            raise RuntimeError("call set_graph(neighbors) before computing embeddings")
        if self.sampling == "recent":
            return self.neighbors.most_recent(nodes, times, k)
        return self.neighbors.uniform(nodes, times, k, self.rng)


class TransformerBlock(nn.Module):
    """DyGLib's TransformerEncoder: LN(q + Drop(MHA(q, k, v))), then LN(. + Drop(W2 Drop(ReLU(W1 .)))) (FFN 4d)."""

    def __init__(self, dim: int, num_heads: int, dropout: float):
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"attention width {dim} must be divisible by num_heads = {num_heads}")
        self.attention = nn.MultiheadAttention(dim, num_heads, dropout=dropout, batch_first=True)
        self.ffn_in, self.ffn_out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.norm_attn, self.norm_ffn = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.dropout = Dropout(dropout)

    def forward(self, query: torch.Tensor, key: torch.Tensor, key_padding: torch.Tensor) -> torch.Tensor:
        """query (B, Lq, d), key = value (B, Lk, d), key_padding (B, Lk) bool True = padding -> (B, Lq, d)."""
        hidden, _ = self.attention(query, key, key, key_padding_mask=key_padding, need_weights=False)
        out = self.norm_attn(query + self.dropout(hidden))
        return self.norm_ffn(out + self.dropout(self.ffn_out(self.dropout(F.relu(self.ffn_in(out))))))


class TCL(SampledHistory, nn.Module):
    """TCL backbone: embeddings (B, d_node) of both endpoints of B candidate edges."""

    def __init__(self, node_feat: np.ndarray, edge_feat: np.ndarray, *, encoder: str = "cosine", time_dim: int = 100,
                 time_mean: float = 0.0, time_std: float = 1.0, num_neighbors: int = 20, num_layers: int = 2,
                 num_heads: int = 2, dropout: float = 0.1, sampling: str = "recent"):
        nn.Module.__init__(self)
        if sampling not in SAMPLING:
            raise ValueError(f"unknown neighbour sampling {sampling!r}; known: {SAMPLING}")
        if num_neighbors < 1 or num_layers < 1:
            raise ValueError("num_neighbors and num_layers must be >= 1")
        self.node_feat = FeatureTable(node_feat)
        self.edge_feat = FeatureTable(edge_feat)
        self.node_dim, self.edge_dim = self.node_feat.shape[1], self.edge_feat.shape[1]
        if self.node_dim < 1:
            raise ValueError("TCL's width is the node feature width: node features must have >= 1 column")
        self.num_neighbors, self.sampling = num_neighbors, sampling
        self.time_mean, self.time_std = float(time_mean), float(time_std)
        self.time_encoder = make_encoder(encoder, time_dim, mean=time_mean, std=time_std)
        self.depth_embedding = nn.Embedding(num_neighbors + 1, self.node_dim)
        self.projection = nn.ModuleDict({"node": nn.Linear(self.node_dim, self.node_dim),
                                         "edge": nn.Linear(self.edge_dim, self.node_dim),
                                         "time": nn.Linear(time_dim, self.node_dim)})
        self.layers = nn.ModuleList(TransformerBlock(self.node_dim, num_heads, dropout) for _ in range(num_layers))
        self.output = nn.Linear(self.node_dim, self.node_dim)

    @property
    def out_dim(self) -> int:
        return self.node_dim

    def _index(self, ids: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64)).to(self.node_feat.device)

    def sequence(self, nodes: np.ndarray, times: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, k + 1, d_node) inputs [self, k neighbours] and (B, k + 1) padding mask (True = padding)."""
        hood = self._sample(nodes, times, self.num_neighbors)
        # (B, 1 + k): the node itself first, at time t with the padding edge
        ids = np.concatenate([nodes[:, None], hood.neighbor_ids], axis=1)
        eids = np.concatenate([np.zeros((len(nodes), 1), np.int64), hood.edge_ids], axis=1)
        ts = np.concatenate([times[:, None], hood.times.astype(np.float64)], axis=1)
        dt = torch.from_numpy(times[:, None] - ts).float().to(self.node_feat.device)  # (B, 1 + k)
        depth = self.depth_embedding(torch.arange(ids.shape[1], device=dt.device))  # (1 + k, d_node)
        x = (self.projection["node"](self.node_feat[self._index(ids)]) + self.projection["edge"](self.edge_feat[self._index(eids)])
             + self.projection["time"](self.time_encoder(dt)) + depth)  # (B, 1 + k, d_node)
        return x, torch.from_numpy(ids == 0).to(dt.device)

    def pair_embeddings(self, src, dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        times = np.asarray(times, dtype=np.float64)
        # DyGLib's order of the draws (uniform sampling): the source's k, then the destination's
        x_u, pad_u = self.sequence(src, times)
        x_v, pad_v = self.sequence(dst, times)
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            x_u, x_v = layer(x_u, x_u, pad_u), layer(x_v, x_v, pad_v)  # self-attention
            # co-attention across the pair; in the last layer only the read-out position 0 is queried: a block acts
            # on each query position alone (attention over the keys, then per-token LN and FFN), so (B, 1, d) of
            # queries give DyGLib's position-0 outputs exactly and the other k positions are never read
            q_u, q_v = (x_u[:, :1], x_v[:, :1]) if i == last else (x_u, x_v)
            x_u, x_v = layer(q_u, x_v, pad_v), layer(q_v, x_u, pad_u)
        return self.output(x_u[:, 0]), self.output(x_v[:, 0])  # the node's own position


def build(config: dict, data, split, train_graph) -> TCL:
    """TCL with DyGLib's per-dataset configuration (params/models.yaml `dataset_defaults`, applied in the
    effective config, tasks/effective.py)."""
    from timerepro.models.graph.time_stats import train_time_stats

    k = int(config["num_neighbors"])
    mean, std = train_time_stats(data, split, train_graph, k)
    return TCL(data.node_feat, data.edge_feat, encoder=config["encoder"], time_dim=int(config["d_T"]),
               time_mean=mean, time_std=std, num_neighbors=k, num_layers=int(config["num_layers"]),
               num_heads=int(config["num_heads"]), dropout=float(config["dropout"]),
               sampling=config.get("neighbor_sampling", "recent"))
