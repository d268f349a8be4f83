"""CAWN (Wang et al. 2021) as DyGLib implements it (`models/CAWN.py`, `models/modules.py`; read, not copied).

For a candidate edge (u, v, t), each endpoint starts M = k^L temporal walks of length L backwards in
time (hop h+1 queries the hop-h node at its interaction time, strictly before it), sampled
time-interval-aware by default: P(t_j) proportional to exp(alpha (t_j - t)).

* anonymisation (`walk_counts`): for every node w met in the walks of the pair, the vector
  c(w) = [c_u(w, 0..L); c_v(w, 0..L)], c_u(w, h) = (number of times w is the hop-h node of u's walks)
  / k^h; the padding node 0 gets zeros. A node is identified by (batch row, node id), not by time;
* position features: MLP(c(w)[0]) + MLP(c(w)[1]) with MLP = Linear(L+1, d_p) -> ReLU -> Linear(d_p, d_p);
* each walk is a sequence of rows [x_w; Phi(t - t_w); x_e; position(w)] (the start row: its own features,
  Phi(0), edge 0); a BiLSTM reads the valid prefix of the walk and its output at the last valid step
  is the walk's code; a second BiLSTM does the same on the position features alone;
* the M walk codes of a node are projected to d_a = (d_node + d_edge + d_T + d_p) // 2 rounded up to a
  multiple of the heads, go through one Transformer encoder layer (self-attention over the walks, no
  mask, residual + LayerNorm, FFN 4 d_a) and are averaged, then projected to d_node. A walk drawn twice
  for the same query is encoded once (exact). docs/tgn_cawn.md lists every decision.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from timerepro.data.ctdg import CTDGData, LinkSplit
from timerepro.encoders import mean_and_std, standardization_values
from timerepro.graphs.neighbors import TRAIN_NEIGHBOR_SEED, TemporalNeighbors
from timerepro.models.dropout import Dropout
from timerepro.models.graph.backbone import TemporalBackbone, to_device
from timerepro.models.graph.time_stats import time_diff_statistic, train_time_stats

SAMPLING = ("recent", "uniform", "time_interval_aware")


def walks_as_array(nodes, times, hops: tuple[list, list, list], k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Multi-hop lists (each of L arrays (B, k^h)) -> walks (B, k^L, L+1) of ids, edge ids, times; column 0
    is the start node (edge 0, its query time), hop-h entries repeated k^(L-h) times (DyGLib's layout)."""
    ids, eids, ts = hops
    length = len(ids)
    width = k ** length
    nodes = np.asarray(nodes, dtype=np.int64)
    times = np.asarray(times, dtype=np.float64)
    out = []
    for first, levels, dtype in ((nodes, ids, np.int64), (np.zeros_like(nodes), eids, np.int64),
                                 (times, ts, np.float64)):
        cols = [np.repeat(first[:, None], width, axis=1)]
        cols += [np.repeat(np.asarray(lv, dtype=dtype), width // lv.shape[1], axis=1) for lv in levels]
        out.append(np.stack(cols, axis=-1))  # (B, k^L, L+1)
    return out[0], out[1], out[2]


def walk_counts(src_levels: list, dst_levels: list, src_walk_ids: np.ndarray, dst_walk_ids: np.ndarray):
    """CAWN's anonymisation of a batch of pairs.

    src_levels, dst_levels: L+1 arrays (B, k^h), h = 0..L, the hop-h nodes of the walks of each pair's
    source and destination (level 0 = the node itself); src_walk_ids, dst_walk_ids: (B, M, L+1) the same
    walks in array layout. Returns the counts of every walk entry, two arrays (B, M, L+1, 2, L+1):
    [..., 0, h] = (times the entry's node is a hop-h node of the source's walks) / k^h, [..., 1, h] the
    same for the destination; a node is identified by (pair, node id); the padding node 0 gets zeros."""
    batch = src_levels[0].shape[0]
    hops = len(src_levels)
    big = int(max(max(lv.max(initial=0) for lv in src_levels), max(lv.max(initial=0) for lv in dst_levels))) + 1
    keys, side, hop, weight = [], [], [], []
    for s, levels in enumerate((src_levels, dst_levels)):
        for h, lv in enumerate(levels):
            lv = np.asarray(lv, dtype=np.int64)
            # (B, n_h) -> keys pair * big + node id, each entry weighing 1 / n_h (a landing probability)
            keys.append((np.arange(batch)[:, None] * big + lv).ravel())
            side.append(np.full(lv.size, s))
            hop.append(np.full(lv.size, h))
            weight.append(np.full(lv.size, 1.0 / lv.shape[1], dtype=np.float32))
    keys = np.concatenate(keys)
    uniq, inverse = np.unique(keys, return_inverse=True)
    table = np.zeros((len(uniq), 2, hops), dtype=np.float32)  # (U, 2, L+1)
    np.add.at(table, (inverse, np.concatenate(side), np.concatenate(hop)), np.concatenate(weight))
    table[uniq % big == 0] = 0.0  # padding node

    def lookup(walk_ids: np.ndarray) -> np.ndarray:
        # (B, M, L+1) -> (B, M, L+1, 2, L+1)
        walk_keys = np.arange(batch)[:, None, None] * big + walk_ids
        return table[np.searchsorted(uniq, walk_keys)]

    return lookup(src_walk_ids), lookup(dst_walk_ids)


class BiLSTMLast(nn.Module):
    """BiLSTM over the valid prefix of each walk; the output at the last valid step (DyGLib's BiLSTMEncoder)."""

    def __init__(self, input_dim: int, hidden_dim: int):
        super().__init__()
        self.out_dim = 2 * (hidden_dim // 2)
        self.lstm = nn.LSTM(input_dim, hidden_dim // 2, batch_first=True, bidirectional=True)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor, last: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, M, L+1, d), lengths (B, M) >= 1 (on the host: the packing reads them there) -> (B, M, out_dim).
        `last`: lengths - 1 already on x's device, if the caller has it (saves a copy)."""
        b, m, steps, d = x.shape
        flat_len = lengths.reshape(-1).cpu()
        packed = pack_padded_sequence(x.reshape(b * m, steps, d), flat_len, batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=steps)  # (B*M, L+1, out_dim)
        last = (flat_len - 1).to(out.device) if last is None else last.reshape(-1)
        # (B*M, out_dim): the output at each walk's last valid step
        return out[torch.arange(b * m, device=out.device), last].reshape(b, m, self.out_dim)


class WalkTransformer(nn.Module):
    """One Transformer encoder layer over the walks of a node (DyGLib's TransformerEncoder): self-attention,
    dropout, residual, LayerNorm, FFN (4x, ReLU), dropout, residual, LayerNorm."""

    def __init__(self, dim: int, num_heads: int, dropout: float):
        super().__init__()
        self.attention = nn.MultiheadAttention(dim, num_heads, dropout=dropout, batch_first=True)
        self.ffn = nn.Sequential(nn.Linear(dim, 4 * dim), nn.ReLU(), Dropout(dropout), nn.Linear(4 * dim, dim))
        self.norm0, self.norm1 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.dropout = Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, M, d) -> (B, M, d)."""
        h = self.norm0(x + self.dropout(self.attention(x, x, x, need_weights=False)[0]))
        return self.norm1(h + self.dropout(self.ffn(h)))


class CAWN(TemporalBackbone):
    """CAWN backbone: pair embeddings from anonymised causal temporal walks."""

    samplings = SAMPLING

    def __init__(self, node_feat: np.ndarray, edge_feat: np.ndarray, *, encoder: str = "cosine", time_dim: int = 100,
                 time_mean: float = 0.0, time_std: float = 1.0, position_dim: int = 172, walk_length: int = 1,
                 num_walk_heads: int = 8, num_neighbors: int = 32, dropout: float = 0.1,
                 sampling: str = "time_interval_aware", time_scaling_factor: float = 1e-6,
                 encoder_options: dict | None = None):
        super().__init__(node_feat, edge_feat, encoder=encoder, time_dim=time_dim, time_mean=time_mean,
                         time_std=time_std, sampling=sampling, encoder_options=encoder_options)
        if walk_length < 1 or num_neighbors < 1:
            raise ValueError("walk_length and num_neighbors must be >= 1")
        self.position_dim, self.walk_length = position_dim, walk_length
        self.num_neighbors, self.time_scaling_factor = num_neighbors, float(time_scaling_factor)
        self.position_mlp = nn.Sequential(nn.Linear(walk_length + 1, position_dim), nn.ReLU(),
                                          nn.Linear(position_dim, position_dim))
        input_dim = self.node_dim + self.edge_dim + time_dim + position_dim
        attention_dim = input_dim // 2  # CAWN's half width, rounded up to a multiple of the heads
        attention_dim += (-attention_dim) % num_walk_heads
        self.feature_lstm = BiLSTMLast(input_dim, input_dim)
        self.position_lstm = BiLSTMLast(position_dim, position_dim)
        self.project_in = nn.Linear(self.feature_lstm.out_dim + self.position_lstm.out_dim, attention_dim)
        self.transformer = WalkTransformer(attention_dim, num_walk_heads, dropout)
        self.project_out = nn.Linear(attention_dim, self.node_dim)

    def _walks(self, nodes: np.ndarray, times: np.ndarray):
        hops = self.graph().multi_hop(nodes, times, self.num_neighbors, self.walk_length, strategy=self.sampling,
                                        rng=self.rng, time_scaling_factor=self.time_scaling_factor)
        levels = [nodes[:, None]] + list(hops[0])
        return levels, walks_as_array(nodes, times, hops, self.num_neighbors)

    def _encode(self, walk_ids: np.ndarray, walk_eids: np.ndarray, walk_times: np.ndarray,
                counts: np.ndarray) -> torch.Tensor:
        """Walks (B, M, L+1) and their counts (B, M, L+1, 2, L+1) -> node embeddings (B, d_node).

        Walks drawn more than once for the same query (sampling with replacement) are encoded once: a
        walk is fixed by its query row and its edge ids, so its code is the same (exact, a speed-up)."""
        batch, m, steps = walk_ids.shape
        # (B*M, 1 + L+1) keys [row, edge ids]; U distinct walks, inverse (B*M,) maps each walk to its code
        keys = np.concatenate([np.repeat(np.arange(batch), m)[:, None], walk_eids.reshape(batch * m, steps)], axis=1)
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        flat_times = walk_times.reshape(-1, steps)[first]  # (U, L+1)
        # t - t_w for every walk entry, float64 then float32 for the encoder: (U, L+1)
        dt = (flat_times[:, :1] - flat_times).astype(np.float32)
        flat_ids = walk_ids.reshape(-1, steps)[first]  # (U, L+1)
        lengths = (flat_ids != 0).sum(axis=-1)[None]  # (1, U): walks are valid up to their first padding entry
        ids, eids, dt, flat_counts, inverse, last = to_device(
            self.device, flat_ids, walk_eids.reshape(-1, steps)[first], dt,
            counts.reshape(batch * m, steps, 2, steps)[first], inverse.reshape(-1), lengths - 1)
        lengths = torch.from_numpy(lengths)
        x_node = self.node_feat[ids]  # (U, L+1, d_node)
        x_edge = self.edge_feat[eids]  # (U, L+1, d_edge)
        phi = self.time_encoder(dt)  # (U, L+1, d_T)
        # (U, L+1, 2, L+1) -> MLP -> (.., 2, d_p) -> sum of the source and destination views -> (.., d_p)
        pos = self.position_mlp(flat_counts).sum(dim=-2)
        walk = self.feature_lstm(torch.cat([x_node, phi, x_edge, pos], dim=-1)[None], lengths, last)[0]  # (U, d_f)
        walk_pos = self.position_lstm(pos[None], lengths, last)[0]  # (U, d_pl)
        codes = self.project_in(torch.cat([walk, walk_pos], dim=-1))  # (U, d_a)
        h = codes[inverse].reshape(batch, m, -1)  # (B, M, d_a)
        return self.project_out(self.transformer(h).mean(dim=1))  # mean over walks -> (B, d_node)

    def pair_embeddings(self, src, dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        """Both endpoints of B candidate edges at their times: two (B, d_node). Source walks are sampled
        before destination walks (DyGLib's order, which fixes the random draws)."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        times = np.asarray(times, dtype=np.float64)
        src_levels, (s_ids, s_eids, s_ts) = self._walks(src, times)
        dst_levels, (d_ids, d_eids, d_ts) = self._walks(dst, times)
        s_counts, d_counts = walk_counts(src_levels, dst_levels, s_ids, d_ids)
        return self._encode(s_ids, s_eids, s_ts, s_counts), self._encode(d_ids, d_eids, d_ts, d_counts)


WALK_ENTRIES = 1 << 25  # history entries the sampler flattens per call of the walk statistic (~2 GB of temporaries):
# real UCI's training endpoints sum 8.9 M (one range, as every offline run), the Reddit stand-in's 1.0 G, Wikipedia's 139 M


def walk_query_chunks(counts: np.ndarray, budget: int = WALK_ENTRIES) -> list[tuple[int, int]]:
    """Consecutive query ranges [lo, hi) whose summed history `counts` stays within `budget` (a query above it
    alone); one range for all when the whole fits. The time-interval-aware sampler flattens every entry of
    every query's history (`TemporalNeighbors.time_interval_aware`): over all training endpoints of a large
    graph that sum is quadratic in a node's degree (the Reddit stand-in: 1.0e9 entries, ~50 GB of temporaries)."""
    total = np.cumsum(counts, dtype=np.int64)  # (Q,) summed history up to each query
    out, lo = [], 0
    while lo < len(total):
        base = int(total[lo - 1]) if lo else 0
        hi = max(int(np.searchsorted(total, base + budget, side="right")), lo + 1)
        out.append((lo, hi))
        lo = hi
    return out


def walk_time_stats(graph: TemporalNeighbors, nodes, times, k: int, walk_length: int, sampling: str,
                    scaling: float, budget: int = WALK_ENTRIES) -> tuple[float, float]:
    """The authors' CAWN statistic (dg-linear-time `src/models/cawn.py` setup): k^L walks per query
    drawn once with the model's sampler (seed 0, DyGLib's training sampler), t - t_w at every walk
    position (position 0, the query itself, gives 0; padding, time 0, gives t), averaged over the
    walks per (query, position), then the mean and population std of those averages.
    Time-interval-aware walks are drawn over query ranges of at most `budget` history entries
    (`walk_query_chunks`; one range, the whole, where it fits: every offline run, bit for bit as before).
    With L = 1 the ranges take the same random numbers in the same order (rows without history draw none)
    and each (query, position) mean is the same row mean, so only the sampler's running sum, which each
    range restarts, can move a draw sitting on a rounding tie."""
    nodes, times = np.asarray(nodes, dtype=np.int64), np.asarray(times, dtype=np.float64)
    rng = np.random.RandomState(TRAIN_NEIGHBOR_SEED) if sampling != "recent" else None
    ranges = [(0, len(nodes))]
    if sampling == "time_interval_aware":
        ranges = walk_query_chunks(graph.count_before(nodes, times), budget) or ranges
    means = []
    for lo, hi in ranges:
        n, t = nodes[lo:hi], times[lo:hi]
        ids, _, ts = graph.multi_hop(n, t, k, walk_length, strategy=sampling, rng=rng, time_scaling_factor=scaling)
        _, _, walk_times = walks_as_array(n, t, (ids, [np.zeros_like(i) for i in ids], ts), k)  # (q, M, L+1)
        dt = walk_times[:, :, :1] - walk_times  # (q, M, L+1)
        # one row per (query, position), the M walks as its entries -> the row's mean: (q * (L+1),)
        means.append(standardization_values(dt.transpose(0, 2, 1).reshape(-1, dt.shape[1]), None, "per_query_mean"))
    return mean_and_std(np.concatenate(means))

# ------------------------------------------------------------------ builder (params/models.yaml `module:`)

def build(config: dict, data: CTDGData, split: LinkSplit, train_graph: TemporalNeighbors) -> CAWN:
    """CAWN (DyGLib's CAWN): statistics of t - t_k over the num_neighbors most recent training
    interactions (the first hop of the walks). `config`: an effective config (dataset defaults applied)."""
    k = int(config["num_neighbors"])
    sampling = config["neighbor_sampling"]
    scaling = float(config["time_scaling_factor"])
    if time_diff_statistic(config)[0] == "per_query_mean":
        src, dst, ts = data.src[split.train], data.dst[split.train], data.ts[split.train]
        mean, std = walk_time_stats(train_graph, np.concatenate([src, dst]), np.concatenate([ts, ts]), k,
                                    int(config["walk_length"]), sampling, scaling)
    else:
        mean, std = train_time_stats(data, split, train_graph, k)
    return CAWN(data.node_feat, data.edge_feat, encoder=config["encoder"], time_dim=int(config["d_T"]),
                time_mean=mean, time_std=std, position_dim=int(config["position_dim"]),
                walk_length=int(config["walk_length"]), num_walk_heads=int(config["num_walk_heads"]),
                num_neighbors=k, dropout=float(config["dropout"]), sampling=sampling, time_scaling_factor=scaling,
                encoder_options=config.get("encoder_options"))
