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

Speed (docs/graph_speed.md; exact, in training with dropout exact in distribution): with `recent` sampling the
pairs of a call are independent (`pairs_independent`: the task scores positives and negatives in one call) and
each distinct (node, time) sequence goes through the first self-attention once (a source shared by its positive
and its negative pair); each sequence is projected to Q, K, V once per layer (one product serves its co-attention
as query and as key); every per-token operation runs on the real tokens only (a padding position is a masked key
everywhere and never read out); an all-zero node or edge table contributes its projection's bias only; the last
co-attention is queried at the read-out position only.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from timerepro.encoders import make_encoder
from timerepro.graphs.neighbors import Neighborhood, TemporalNeighbors
from timerepro.models import dropout as dropout_module
from timerepro.models.dropout import Dropout
from timerepro.models.graph.dygformer import BLOCK_TOKENS, attend, in_blocks
from timerepro.models.graph.features import FeatureTable
from timerepro.models.graph.queries import distinct_queries

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
    """DyGLib's TransformerEncoder: LN(q + Drop(MHA(q, k, v))), then LN(. + Drop(W2 Drop(ReLU(W1 .)))) (FFN 4d).

    `forward` is the block as DyGLib calls it (`nn.MultiheadAttention` on the padded sequences); TCL's pair pass
    calls `project` and `attend_projected`, the same function with each sequence's Q, K, V computed once."""

    # rows per block of the row-wise part after the attention (`_rows`); 0 = all rows at once
    block_tokens: int = BLOCK_TOKENS

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
        return self._rest(query, hidden)

    def project(self, h: torch.Tensor, part: str = "qkv") -> torch.Tensor:
        """(..., d) tokens -> their input projections (the module's own parameters): (..., 3d) for "qkv", (..., d) for
        "q", (..., 2d) for "kv"."""
        att, dim = self.attention, h.shape[-1]
        rows = {"qkv": slice(None), "q": slice(None, dim), "kv": slice(dim, None)}[part]
        return F.linear(h, att.in_proj_weight[rows], att.in_proj_bias[rows])

    def attend_projected(self, query: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                         key_bias: torch.Tensor, dense: torch.Tensor | None = None) -> torch.Tensor:
        """The block on projected inputs: q (N, Lq, d), keys k and values v (N, Lk, d), key_bias (N, Lk) 0 or -inf
        (padding: the mask `nn.MultiheadAttention` builds); `dense` (T,): the flat (N * Lq) positions of the queries
        kept, `query` their residual input (T, d) -> (T, d); None: every query, query (N, Lq, d) -> (N, Lq, d)."""
        att = self.attention
        n, lq, dim = q.shape
        heads = att.num_heads
        # (N, L, d) -> (N, H, L, d_h)
        q, k, v = (t.reshape(n, t.shape[1], heads, dim // heads).transpose(1, 2) for t in (q, k, v))
        out = attend(q, k, v, key_bias.to(q.dtype)[:, None, None, :], False, att.dropout, self.training)
        # heads concatenated: (N, H, Lq, d_h) -> (N * Lq, d) -> the kept queries -> output projection
        out = out.transpose(1, 2).reshape(n * lq, dim)
        if dense is None:
            return self._rest(query, F.linear(out.view(n, lq, dim), att.out_proj.weight, att.out_proj.bias))
        return self._rows(query, out.index_select(0, dense))

    def attend_read_out(self, query: torch.Tensor, keys: torch.Tensor, key_bias: torch.Tensor) -> torch.Tensor:
        """The block for one query position: query (N, d), keys = values (N, L, d) unprojected, key_bias (N, L) ->
        (N, d). The K and V projections absorbed into the query (TGAT's): q_h . (W_K,h k + b_K,h) = (W_K,h^T q_h) . k
        + q_h . b_K,h, and sum_j a_j (W_V,h k_j + b_V,h) = W_V,h (sum_j a_j k_j) + b_V,h sum_j a_j, so the L keys
        are never projected (the same function, float rounding aside)."""
        att = self.attention
        n, dim = query.shape
        heads = att.num_heads
        w, b = att.in_proj_weight.view(3, heads, dim // heads, dim), att.in_proj_bias.view(3, heads, dim // heads)
        q = F.linear(query, att.in_proj_weight[:dim], att.in_proj_bias[:dim]).view(n, heads, dim // heads)
        # (N, H, d_h) -> (N, H, d): W_K,h^T q_h; scores (N, H, L) = that . keys + q_h . b_K,h, scaled, masked
        scores = (torch.einsum("nhe,hed->nhd", q, w[1]) @ keys.transpose(1, 2) + (q * b[1]).sum(-1, keepdim=True))
        weights = dropout_module.dropout(torch.softmax(scores * (dim // heads) ** -0.5 + key_bias[:, None, :], dim=-1),
                                         att.dropout, self.training)  # (N, H, L)
        # (N, H, L) @ (N, L, d) -> (N, H, d) -> W_V,h per head -> (N, H, d_h) + b_V,h sum_j a_j -> (N, d)
        out = torch.einsum("nhd,hed->nhe", weights @ keys, w[2]) + b[2] * weights.sum(-1, keepdim=True)
        return self._rest(query, F.linear(out.reshape(n, dim), att.out_proj.weight, att.out_proj.bias))

    def _rows(self, query: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """The block after its attention on (T, d) rows: output projection of the heads `out`, then `_rest`, in
        blocks of `block_tokens` rows (`in_blocks`: each operation acts on a row, so a block's activations, the FFN's
        4d among them, pass through while still in cache) when no gradient is recorded: in training, blocks would
        sum the weights' gradients block by block (another float order: runs would not repeat bit for bit) and draw
        other dropout masks, for a gain within noise (docs/graph_speed.md)."""
        att = self.attention

        def finish(q: torch.Tensor, o: torch.Tensor) -> torch.Tensor:
            return self._rest(q, F.linear(o, att.out_proj.weight, att.out_proj.bias))

        return in_blocks(finish, 0 if torch.is_grad_enabled() else self.block_tokens, query, out)

    def _rest(self, query: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """LN(q + Drop(hidden)), then the FFN's residual: each residual sum and its branch's dropout one pass
        (`add_dropout`: the same masks and numbers as the sum of `Dropout`'s output)."""
        p, training = self.dropout.p, self.training
        out = self.norm_attn(dropout_module.add_dropout(query, hidden, p, training))
        branch = self.ffn_out(self.dropout(F.relu(self.ffn_in(out), inplace=True)))
        return self.norm_ffn(dropout_module.add_dropout(out, branch, p, training))


class Tokens(NamedTuple):
    """The real (non-padding) tokens of N sequences of length L: `dense` (T,) their positions in the flat (N * L)
    layout (row-major: the packed order), `pad` the positions of the others, `first` (N,) the packed index of each
    row's position 0 (the node itself, never padding), `key_bias` (N, L) 0 or -inf on padding (the key mask
    nn.MultiheadAttention builds)."""

    dense: torch.Tensor
    pad: torch.Tensor
    first: torch.Tensor
    key_bias: torch.Tensor

    @classmethod
    def of(cls, real: np.ndarray, like: torch.Tensor) -> "Tokens":
        counts = real.sum(axis=1).astype(np.int64)
        dense, pad, first = (torch.from_numpy(a).to(like.device)
                             for a in (np.flatnonzero(real), np.flatnonzero(~real), np.cumsum(counts) - counts))
        key_bias = torch.zeros(real.shape, dtype=like.dtype, device=like.device).masked_fill_(
            torch.from_numpy(~real).to(like.device), float("-inf"))
        return cls(dense, pad, first, key_bias)

    def padded(self, t: torch.Tensor) -> torch.Tensor:
        """Packed (T, c) -> (N, L, c), zeros at padding (a masked key must be finite). One write per row: the padding
        rows zeroed, the real ones copied in place into a fresh buffer (the out-of-place `index_copy` would fill the
        whole buffer with zeros and copy it once more first)."""
        n, length = self.key_bias.shape
        out = t.new_empty(n * length, t.shape[-1]).index_fill_(0, self.pad, 0.0)
        return out.index_copy_(0, self.dense, t).view(n, length, -1)


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
        # an all-zero table's projection is its bias, exactly (most DyGLib datasets' nodes; UCI's edges too)
        self.node_feat_zero, self.edge_feat_zero = self.node_feat.all_zero, self.edge_feat.all_zero
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

    @property
    def pairs_independent(self) -> bool:
        """True when a pair's embeddings do not depend on the other pairs of the call (no random draws): the task
        may then score a batch's positives and negatives in one call (`LinkPredictionModel.score`)."""
        return self.sampling == "recent"

    def _index(self, ids: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64)).to(self.node_feat.device)

    def _projected(self, part: str, table: FeatureTable, zero: bool, ids: np.ndarray) -> torch.Tensor:
        """(T,) ids -> (T, d_node) projected rows, or (d_node,) the bias alone for an all-zero table (W 0 + b = b)."""
        return self.projection[part].bias if zero else self.projection[part](table[self._index(ids)])

    def _inputs(self, nodes: np.ndarray, times: np.ndarray) -> tuple[torch.Tensor, np.ndarray]:
        """(T, d_node) inputs of the real tokens of the sequences [self, k neighbours], row-major (the packed order
        of `Tokens`), and the host (B, k + 1) mask of real tokens. A padding token is a masked key everywhere and
        never read out, so its input is never built (no time encoding, projection or sum on padding)."""
        hood = self._sample(nodes, times, self.num_neighbors)
        # (B, 1 + k): the node itself first, at time t with the padding edge
        ids = np.concatenate([nodes[:, None], hood.neighbor_ids], axis=1)
        real = ids != 0
        rows, cols = np.nonzero(real)  # (T,) each real token's sequence and position, row-major
        eids = np.concatenate([np.zeros((len(nodes), 1), np.int64), hood.edge_ids], axis=1)[rows, cols]
        ts = np.concatenate([times[:, None], hood.times.astype(np.float64)], axis=1)[rows, cols]
        dt = torch.from_numpy(times[rows] - ts).float().to(self.node_feat.device)  # (T,)
        depth = self.depth_embedding(self._index(cols))  # (T, d_node)
        # DyGLib's order of the sum: node + edge + time + depth, (T, d_node)
        x = (self._projected("node", self.node_feat, self.node_feat_zero, ids[rows, cols])
             + self._projected("edge", self.edge_feat, self.edge_feat_zero, eids)
             + self.projection["time"](self.time_encoder(dt)) + depth)
        return x, real

    def sequence(self, nodes: np.ndarray, times: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, k + 1, d_node) inputs [self, k neighbours], zeros at padding (a masked key, never read out), and the
        (B, k + 1) padding mask (True = padding): DyGLib's layout, for the block as DyGLib calls it."""
        x, real = self._inputs(nodes, times)
        return Tokens.of(real, x).padded(x), torch.from_numpy(~real).to(x.device)

    def pair_embeddings(self, src, dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        times = np.asarray(times, dtype=np.float64)
        n = len(src)
        if self.pairs_independent:  # each distinct (node, time) sequence once
            nodes, q_times, rows = distinct_queries(np.concatenate([src, dst]), np.tile(times, 2))
            x, real = self._inputs(nodes, q_times)
        else:  # DyGLib's order of the draws (uniform sampling): the sources' k, then the destinations'
            (x_u, real_u), (x_v, real_v) = self._inputs(src, times), self._inputs(dst, times)
            x, real, rows = torch.cat([x_u, x_v]), np.concatenate([real_u, real_v]), np.arange(2 * n)
        h = self.encode_pairs(x, real, rows[:n], rows[n:])  # (2B, d_node)
        return h[:n], h[n:]

    def encode_pairs(self, x: torch.Tensor, real: np.ndarray, u: np.ndarray, v: np.ndarray) -> torch.Tensor:
        """The real tokens x (T, d) of S sequences (row-major), their mask (S, L) (host), pairs (u[p], v[p]) of rows
        -> (2P, d): the read-outs of the u-sides, then of the v-sides. DyGLib's layers (self-attention on each side,
        then co-attention across the pair) on the real tokens only: a padding position is a masked key in every
        attention and never read out, so its own outputs are never used. The first self-attention runs once per
        sequence; from the first co-attention on, the 2P pair sides are the sequences (u-sides, then v-sides: a side's
        keys are the other half)."""
        p, dim = len(u), x.shape[-1]
        mine, other = np.concatenate([u, v]), np.concatenate([v, u])  # (2P,) rows: the query side, the key side
        token = np.full(real.shape, -1)
        token[real] = np.arange(int(real.sum()))  # (S, L): index of each real token among the S sequences' tokens
        seq, sides = Tokens.of(real, x), Tokens.of(real[mine], x)
        to_sides, mine, other = (self._index(a) for a in (token[mine][real[mine]], mine, other))
        h = x  # (T, d): the real tokens

        def across(t: torch.Tensor, first: bool, keys: bool) -> torch.Tensor:
            """Rows of the pair sides: the query side's (keys=False) or the other side's (keys=True)."""
            if first:  # S sequences -> 2P pair sides
                return t.index_select(0, other if keys else mine)
            return torch.cat([t[p:], t[:p]]) if keys else t  # the 2P sides: the keys of a side are the other half

        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            cur = seq if i == 0 else sides
            q, k, v = cur.padded(layer.project(h)).split(dim, dim=-1)  # (N, L, d) each
            h = layer.attend_projected(h, q, k, v, cur.key_bias, cur.dense)  # self-attention
            # co-attention, u-sides over their v-side, then v-sides over their u-side
            if i == last:  # queried at the read-out position 0 only: the other k are never read
                query, keys = h.index_select(0, cur.first), cur.padded(h)  # (N, d), (N, L, d)
                if i == 0:
                    h = layer.attend_read_out(across(query, True, False), across(keys, True, True),
                                              across(cur.key_bias, True, True))
                elif self.training and layer.dropout.p > 0:  # masks drawn in the sides' order
                    h = layer.attend_read_out(query, across(keys, False, True), across(cur.key_bias, False, True))
                else:  # side r's keys are side r + P's (mod 2P): the (2P, d) queries rotated by P, not the keys
                    h = layer.attend_read_out(torch.cat([query[p:], query[:p]]), keys, cur.key_bias)
                    h = torch.cat([h[p:], h[:p]])  # row r + P (mod 2P) is side r's
                return self.output(h)  # the node's own position, (2P, d)
            q, k, v = cur.padded(layer.project(h)).split(dim, dim=-1)
            query = h.index_select(0, to_sides) if i == 0 else h  # (T_sides, d)
            h = layer.attend_projected(query, across(q, i == 0, False), across(k, i == 0, True), across(v, i == 0, True),
                                       across(cur.key_bias, i == 0, True), sides.dense)


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
