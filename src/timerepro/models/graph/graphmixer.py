"""GraphMixer (Cong et al. 2023) as DyGLib implements it (`models/GraphMixer.py`; read, not copied).

Link encoder: the node's k sampled interactions before t (left-padded), each [x_e ; Phi(t - t_j)] with
the FIXED time encoder Phi(dt) = cos(omega dt), omega_i = alpha^(-(i-1)/beta) (`encoders.FixedCosineEncoder`,
DyGLib's frequencies, never trained), time features zeroed at padding, projected to d_edge channels, then
`num_layers` MLP-Mixer blocks (token mixing over the k positions with expansion 0.5, channel mixing with
expansion 4, GELU, pre-LN, residuals), then the mean over the k tokens.
Node encoder (`time_gap`): the node's `time_gap` sampled neighbours' node features, averaged as DyGLib does
(softmax weights over the real neighbours, then a mean over all time_gap rows, i.e. their sum / time_gap),
plus the node's own features. Output: Linear([link encoding ; node encoding]) -> d_node.

Speed (docs/graph_speed.md, exact): with `recent` sampling a query's embedding depends on nothing else in the call
(`queries_independent`: the task embeds a batch's 4B endpoints in one call) and each distinct (node, time) is
embedded once (the sources shared by the positives and the negatives); an all-zero edge table drops out of the
input projection (only the time columns of its weight are used) and an all-zero node table makes the node encoder
0 without retrieving the time_gap neighbours (uniform sampling still draws them: the stream stays DyGLib's).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from timerepro.encoders import make_encoder
from timerepro.models.dropout import Dropout
from timerepro.models.graph.features import FeatureTable
from timerepro.models.graph.queries import distinct_queries
from timerepro.models.graph.tcl import SAMPLING, SampledHistory

MASK_VALUE = -1e10  # DyGLib: finite, so a node without neighbours gets uniform (zero-feature) weights


class FeedForward(nn.Module):
    """Linear(d, e d) GELU Dropout Linear(e d, d) Dropout (DyGLib's FeedForwardNet)."""

    def __init__(self, dim: int, expansion: float, dropout: float):
        super().__init__()
        hidden = int(expansion * dim)
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), Dropout(dropout), nn.Linear(hidden, dim),
                                 Dropout(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class MixerBlock(nn.Module):
    """Token mixing then channel mixing, each x + FFN(LN(x)), on (B, tokens, channels)."""

    def __init__(self, num_tokens: int, num_channels: int, token_expansion: float = 0.5,
                 channel_expansion: float = 4.0, dropout: float = 0.1):
        super().__init__()
        self.token_norm, self.token_mix = nn.LayerNorm(num_tokens), FeedForward(num_tokens, token_expansion, dropout)
        self.channel_norm = nn.LayerNorm(num_channels)
        self.channel_mix = FeedForward(num_channels, channel_expansion, dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # (B, T, C) -> (B, C, T): mix along the tokens -> back to (B, T, C), residual
        x = x + self.token_mix(self.token_norm(x.transpose(1, 2))).transpose(1, 2)
        return x + self.channel_mix(self.channel_norm(x))  # (B, T, C)


class GraphMixer(SampledHistory, nn.Module):
    """GraphMixer backbone: embeddings (B, d_node) of both endpoints of B candidate edges."""

    def __init__(self, node_feat: np.ndarray, edge_feat: np.ndarray, *, encoder: str = "fixed_cosine",
                 time_dim: int = 100, time_mean: float = 0.0, time_std: float = 1.0, num_neighbors: int = 20,
                 num_layers: int = 2, time_gap: int = 2000, token_expansion: float = 0.5,
                 channel_expansion: float = 4.0, dropout: float = 0.1, sampling: str = "recent"):
        nn.Module.__init__(self)
        if sampling not in SAMPLING:
            raise ValueError(f"unknown neighbour sampling {sampling!r}; known: {SAMPLING}")
        if num_neighbors < 1 or num_layers < 1 or time_gap < 1:
            raise ValueError("num_neighbors, num_layers and time_gap must be >= 1")
        self.node_feat = FeatureTable(node_feat)
        self.edge_feat = FeatureTable(edge_feat)
        self.node_dim, self.edge_dim = self.node_feat.shape[1], self.edge_feat.shape[1]
        # all-zero tables: the node encoder is then 0, the edge part of the input projection drops out (exactly)
        self.node_feat_is_zero, self.edge_feat_zero = self.node_feat.all_zero, self.edge_feat.all_zero
        if self.edge_dim < 1:
            raise ValueError("GraphMixer's channels are the edge feature columns: a dataset without edge features "
                             "needs them zero-padded (timerepro.data.ctdg.load_processed pads to 172)")
        self.num_neighbors, self.time_gap, self.sampling = num_neighbors, time_gap, sampling
        self.time_mean, self.time_std = float(time_mean), float(time_std)
        self.time_encoder = make_encoder(encoder, time_dim, mean=time_mean, std=time_std)
        self.projection = nn.Linear(self.edge_dim + time_dim, self.edge_dim)
        self.mixers = nn.ModuleList(MixerBlock(num_neighbors, self.edge_dim, token_expansion, channel_expansion, dropout)
                                    for _ in range(num_layers))
        self.output = nn.Linear(self.edge_dim + self.node_dim, self.node_dim)

    @property
    def out_dim(self) -> int:
        return self.node_dim

    @property
    def queries_independent(self) -> bool:
        """True when a (node, time) query's embedding does not depend on the other queries of the call (no random
        draws): the task may then embed a batch's 4B endpoints in one call (`backbone.NodeEmbedder`)."""
        return self.sampling == "recent"

    def _index(self, ids: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64)).to(self.node_feat.device)

    def embed(self, nodes: np.ndarray, times: np.ndarray) -> torch.Tensor:
        """(B,) nodes at (B,) times -> (B, d_node); with `recent` sampling each distinct (node, time) once."""
        nodes, times = np.asarray(nodes, dtype=np.int64), np.asarray(times, dtype=np.float64)
        if not self.queries_independent:
            return self._embed(nodes, times)
        q_nodes, q_times, rows = distinct_queries(nodes, times)
        h = self._embed(q_nodes, q_times)  # (Q, d_node), in order of first appearance
        return h if len(q_nodes) == len(nodes) else h.index_select(0, self._index(rows))

    def _links(self, edge_ids: np.ndarray, phi: torch.Tensor) -> torch.Tensor:
        """(B, k) edge ids, (B, k, d_T) time features -> (B, k, d_edge): Linear([x_e ; phi]); an all-zero edge table
        leaves W_T phi + b (its columns of W multiply zeros)."""
        if self.edge_feat_zero:
            return F.linear(phi, self.projection.weight[:, self.edge_dim:], self.projection.bias)
        return self.projection(torch.cat([self.edge_feat[self._index(edge_ids)], phi], dim=-1))

    def _embed(self, nodes: np.ndarray, times: np.ndarray) -> torch.Tensor:
        device = self.node_feat.device
        # link encoder: (B, k) left-padded interactions
        hood = self._sample(nodes, times, self.num_neighbors)
        dt = torch.from_numpy(times[:, None] - hood.times.astype(np.float64)).float().to(device)  # (B, k)
        phi = self.time_encoder(dt) * torch.from_numpy(hood.neighbor_ids != 0).to(device).unsqueeze(-1)  # (B, k, d_T)
        x = self._links(hood.edge_ids, phi)  # (B, k, d_edge)
        for mixer in self.mixers:
            x = mixer(x)
        link = x.mean(dim=1)  # (B, d_edge)
        # node encoder: the time_gap sampled neighbours' features, DyGLib's softmax-then-mean average
        if self.node_feat_is_zero:  # exactly 0; uniform sampling still draws the neighbours (DyGLib's stream)
            if self.sampling != "recent":
                self._sample(nodes, times, self.time_gap)
            node = self.node_feat.values.new_zeros(len(nodes), self.node_dim)
        else:
            gap = self._sample(nodes, times, self.time_gap).neighbor_ids  # (B, time_gap)
            scores = torch.softmax(torch.from_numpy(np.where(gap > 0, 1.0, MASK_VALUE)).float().to(device), dim=1)
            node = self._neighbour_mean(gap, scores) + self.node_feat[self._index(nodes)]
        return self.output(torch.cat([link, node], dim=-1))

    def _neighbour_mean(self, gap: np.ndarray, scores: torch.Tensor) -> torch.Tensor:
        """mean_j scores[b, j] node_feat[gap[b, j]] -> (B, d_node), DyGLib's (B, time_gap, d_node) product and mean
        computed without materialising time_gap feature rows per query (2000 x 172 on UCI): the weights summed
        per distinct node, (B, U) @ (U, d_node), the same sum grouped by node (float rounding only)."""
        uniq, inverse = np.unique(gap, return_inverse=True)
        # (B, time_gap) scores summed into (B, U): row b, column of node gap[b, j] gets scores[b, j]
        weights = torch.zeros(len(gap), len(uniq), dtype=scores.dtype, device=scores.device)
        weights.scatter_add_(1, self._index(inverse.reshape(gap.shape)), scores)
        return (weights @ self.node_feat[self._index(uniq)]) / gap.shape[1]  # (B, U) @ (U, d_node)

    def pair_embeddings(self, src, dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        times = np.asarray(times, dtype=np.float64)
        if self.queries_independent:  # one call: a node at a time shared by both sides once
            h = self.embed(np.concatenate([src, dst]), np.tile(times, 2))
            return h[:len(src)], h[len(src):]
        # DyGLib's order of the draws: the source's k and time_gap, then the destination's
        return self._embed(src, times), self._embed(dst, times)


def build(config: dict, data, split, train_graph) -> GraphMixer:
    """GraphMixer with DyGLib's per-dataset configuration (params/models.yaml `dataset_defaults`, applied in the
    effective config, tasks/effective.py)."""
    return GraphMixer(data.node_feat, data.edge_feat, encoder=config["encoder"], time_dim=int(config["d_T"]),
                      num_neighbors=int(config["num_neighbors"]), num_layers=int(config["num_layers"]),
                      time_gap=int(config["time_gap"]), token_expansion=float(config["token_expansion"]),
                      channel_expansion=float(config["channel_expansion"]), dropout=float(config["dropout"]),
                      sampling=config.get("neighbor_sampling", "recent"))
