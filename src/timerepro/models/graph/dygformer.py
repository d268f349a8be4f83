"""DyGFormer (Yu et al. 2023) and linear_time's two variants, DyGFormer-separate and DyGDecoder.

linear_time, Appendix A.2 and section 3.3, for a candidate edge (u, v, t):

    S_u, S_v   first-hop histories before t (the most recent L - 1) plus the node itself
    X_i        = f1(P_V) || f2(P_E) || f3(P_T) || f4(P_C)   channels patched (P positions) and projected
    X_C        = f_C(C[:, 1]) + f_C(C[:, 2])                 neighbour co-occurrence encoding
    dygformer           transformer over [X_u; X_v]; mean over u's (v's) patches -> linear -> h_u (h_v)
    dygformer_separate  transformer over X_u and X_v separately; mean pooling per sequence
    dygdecoder          separate sequences, a learnable BOS embedding first, causal attention,
                        the target node's patch (last non-padding patch) read out

Where the paper is silent this follows DyGLib's `models/DyGFormer.py` and, for the two variants,
the authors' code (hsinghuan/dg-linear-time, `src/models/modules/dygformer.py`, `dygdecoder.py`);
both read, not copied. docs/dygformer.md lists every decision. The temporal channel width d_tc
(Figure 6) is `time_channel_dim`; the others are `channel_dim` (d_ch). `time_input="position"`
feeds the encoder the event's recency index instead of t - t_k (Table 6's positional control).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from timerepro.data.ctdg import CTDGData, LinkSplit
from timerepro.graphs.cooccurrence import cooccurrence_counts, dygformer_sequences, patch
from timerepro.graphs.neighbors import History, TemporalNeighbors
from timerepro.models import dropout as dropout_module
from timerepro.models.dropout import Dropout
from timerepro.models.graph.backbone import TemporalBackbone, to_device
from timerepro.models.graph.position_index import check_position_index, distinct_time_index
from timerepro.models.graph.time_stats import time_diff_statistic, train_time_stats

VARIANTS = ("dygformer", "dygformer_separate", "dygdecoder")
TIME_INPUTS = ("time", "position")
BLOCK_TOKENS = 2048  # tokens per block of row-wise work, whose activations stay in cache (docs/graph_speed.md)


# ------------------------------------------------------------------ sequences

def decoder_sequences(neighbors: TemporalNeighbors, nodes, times, max_input_sequence_length: int,
                      patch_size: int = 1) -> History:
    """The authors' DyGDecoder layout: [history oldest first, the node itself (edge 0, time t), 0s].

    Same content and width as `dygformer_sequences`, but the node itself comes right after its
    history, so that with a causal mask its position sees the whole history; `lengths` counts the
    node plus its kept history (the node sits at position lengths - 1)."""
    if max_input_sequence_length < 2:
        raise ValueError("max_input_sequence_length must be at least 2 (the node itself plus one neighbour)")
    nodes = np.asarray(nodes, dtype=np.int64)
    times = np.asarray(times, dtype=np.float64)
    hist = neighbors.history(nodes, times, max_input_sequence_length - 1)
    kept = hist.neighbor_ids.shape[1]
    width = kept + 1 + (-(kept + 1)) % patch_size
    batch = len(nodes)
    ids = np.zeros((batch, width), dtype=np.int64)
    eids = np.zeros((batch, width), dtype=np.int64)
    ts = np.zeros((batch, width), dtype=hist.times.dtype)
    ids[:, :kept], eids[:, :kept], ts[:, :kept] = hist.neighbor_ids, hist.edge_ids, hist.times
    rows = np.arange(batch)
    ids[rows, hist.lengths], ts[rows, hist.lengths] = nodes, times  # right after the history
    return History(ids, eids, ts, hist.lengths + 1)


def recency_index(seq: History, node_last: bool) -> np.ndarray:
    """(B, L) event index counted back from the query: the node itself 0, its most recent
    interaction 1, the one before 2, ...; padding 0. Table 6's positional input."""
    width = seq.neighbor_ids.shape[1]
    pos = np.arange(width)[None, :]  # (1, L)
    n_hist = (seq.lengths - 1)[:, None]  # (B, 1) history entries kept
    # DyGLib layout: self at 0, history at 1..n oldest first -> n - j + 1; decoder: history at
    # 0..n-1, self at n -> n - j
    index = n_hist - pos if node_last else np.where(pos == 0, 0, n_hist - pos + 1)
    return np.where(seq.neighbor_ids != 0, index, 0).astype(np.float64)


def position_input(seq: History, times: np.ndarray, node_last: bool, position_index: str) -> np.ndarray:
    """(B, L) Table 6's input of the encoder: `per_event` (`recency_index`), or `distinct_times`, the rank of each
    history entry's time among the DISTINCT kept history times (latest 1, ties share an index; the node itself and
    padding 0), as the authors' DyGFormer (dg-linear-time modules/dygformer.py pad_sequences :632-650)."""
    if position_index == "per_event":
        return recency_index(seq, node_last)
    # the node itself sits at the query's time, so it is not an earlier time and gets 0
    return distinct_time_index(seq.times, times, seq.neighbor_ids != 0).astype(np.float64)


def recency_index_stats(neighbors: TemporalNeighbors, nodes, times, max_len: int) -> tuple[float, float]:
    """Mean and population std of the recency indices 1..n (n = kept history, at most `max_len`) of
    the queries: the positional input's counterpart of the time-difference statistics. (0, 1)
    without history; std 1 when all indices are equal."""
    n = np.minimum(neighbors.count_before(nodes, times), max_len).astype(np.float64)  # (Q,)
    total = n.sum()
    if total == 0:
        return 0.0, 1.0
    # sum_{i<=n} i = n(n+1)/2 and sum_{i<=n} i^2 = n(n+1)(2n+1)/6, over every query
    mean = (n * (n + 1) / 2).sum() / total
    var = (n * (n + 1) * (2 * n + 1) / 6).sum() / total - mean**2
    std = float(np.sqrt(max(var, 0.0)))
    return float(mean), std if std > 0 else 1.0


def dygformer_hparams(config: dict) -> dict:
    """Constructor arguments of `DyGFormer` from an effective config (tasks/effective.py: `dataset_defaults`,
    DyGLib's per-dataset best configuration, already applied: a config without its values is refused); d_T falls
    back to `d_T_by_encoder` (1 for linear)."""
    encoder = config.get("encoder", "cosine")
    by_encoder = config.get("d_T_by_encoder", {})

    def pick(key, default=None):
        return config.get(key, default)

    time_dim = config.get("d_T", by_encoder.get(encoder, by_encoder.get("default", 100)))
    d_tc = pick("d_tc")
    return dict(variant=config["model"], encoder=encoder, time_dim=int(time_dim), channel_dim=int(pick("d_ch", 50)),
                time_channel_dim=None if d_tc is None else int(d_tc), patch_size=int(config["patch_size"]),
                max_input_sequence_length=int(config["max_input_sequence_length"]),
                num_layers=int(pick("num_layers", 2)), num_heads=int(pick("num_heads", 2)),
                dropout=float(config["dropout"]), time_input=pick("time_input", "time"),
                # Table 6's index; absent key = per_event, the code default, so that no other run id changes
                position_index=config.get("position_index", "per_event"), encoder_options=config.get("encoder_options"))


# ------------------------------------------------------------------ layers

class CooccurrenceEncoder(nn.Module):
    """f_C: each count (B, L, 2) -> Linear(1, d) ReLU Linear(d, d), summed over the two columns.

    Counts are small integers, so f_C is computed once per value 0..max_count (a table) and looked
    up, instead of once per entry (the same numbers). `max_count`: the largest count, if the caller
    knows it without reading the tensor (a count is at most the longer of the pair's two sequences)."""

    def __init__(self, dim: int):
        super().__init__()
        self.encode = nn.Sequential(nn.Linear(1, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, counts: torch.Tensor, max_count: int | None = None) -> torch.Tensor:
        if max_count is None:
            max_count = int(counts.max()) if counts.numel() else 0
        # values 0..max -> (max+1, 1) -> table (max+1, d); counts (B, L, 2) -> (B, L, 2, d) -> sum -> (B, L, d)
        values = torch.arange(max_count + 1, device=counts.device, dtype=counts.dtype)
        return lookup_rows(self.encode(values.unsqueeze(-1)), counts.long()).sum(dim=2)


class _RowLookup(torch.autograd.Function):
    """table[index] whose backward adds the rows' gradients with `index_add_` (one pass, in index order at any
    thread count) instead of autograd's `index_put_(accumulate=True)`, whose CPU kernel adds them with atomics
    across threads in no fixed order (two threads: other bits from one process to the next)."""

    @staticmethod
    def forward(ctx, table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(index)
        ctx.rows = table.shape[0]
        return table[index]

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (index,) = ctx.saved_tensors
        width = grad.shape[-1]
        # (..., d) -> (N, d) summed into (rows, d) by index, in index order
        out = grad.new_zeros(ctx.rows, width).index_add_(0, index.reshape(-1), grad.reshape(-1, width))
        return out, None


def lookup_rows(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """table (R, d)[index (...)] -> (..., d); on CPU with a gradient that one thread or two give bit for bit
    (`_RowLookup`: the same bits as autograd's own at one thread); elsewhere autograd's own."""
    if table.device.type != "cpu" or not torch.is_grad_enabled() or not table.requires_grad:
        return table[index]
    return _RowLookup.apply(table, index)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None, causal: bool,
           p: float, training: bool) -> torch.Tensor:
    """softmax(q k^T / sqrt(d_h) + bias) v, (B, H, L, d_h) each, with dropout p on the attention weights in
    training: `scaled_dot_product_attention`, except that a CPU training step with dropout spells out its
    math path (the same operations) so that the weights' mask comes from `models.dropout`."""
    if not (training and p > 0.0 and q.device.type == "cpu" and dropout_module.ENABLED):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=p if training else 0.0,
                                              is_causal=causal)
    scores = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)  # (B, H, L, L)
    if causal:  # -inf where the key comes after the query
        length = q.shape[-2]
        scores = scores.masked_fill(torch.ones(length, length, dtype=torch.bool, device=q.device).triu(1),
                                    float("-inf"))
    if bias is not None:
        scores = scores + bias
    return dropout_module.dropout(scores.softmax(dim=-1), p, True) @ v


def _spells_out(x: torch.Tensor, p: float, training: bool) -> bool:
    """Whether `attend` spells out its math path (a CPU training step with dropout on the weights)."""
    return training and p > 0.0 and x.device.type == "cpu" and dropout_module.ENABLED


def attend_heads(qkv: torch.Tensor, heads: int, bias: torch.Tensor | None, causal: bool, p: float,
                 training: bool) -> torch.Tensor:
    """`attend` on one QKV projection qkv (B, L, 3d) -> (B, L, d), the heads concatenated; `bias` (B, 1, L) on
    the keys. Where `attend` spells out its math path, one head at a time on strided views of qkv: `bmm` reads
    them in place (no copies of q, k and v; their gradient is one concatenation) and the 1/sqrt(d_h) scale and
    the bias ride in the product (`baddbmm`)."""
    batch, length, width = qkv.shape
    dim = width // 3
    d_head = dim // heads
    if not _spells_out(qkv, p, training):
        # (B, L, 3d) -> (B, L, 3, H, d_h) -> 3 x (B, H, L, d_h), views of the projection
        q, k, v = qkv.view(batch, length, 3, heads, d_head).permute(2, 0, 3, 1, 4).unbind(0)
        mask = None if bias is None else bias[:, None]  # (B, 1, 1, L)
        if causal and mask is not None:  # (L, L): -inf where the key comes after the query
            mask = mask + torch.full((length, length), float("-inf"), device=qkv.device, dtype=qkv.dtype).triu(1)
        out = attend(q, k, v, mask, causal and mask is None, p, training)  # (B, H, L, d_h)
        return out.transpose(1, 2).reshape(batch, length, dim)
    # what every head adds to its scores, broadcast to (B, L, L): the key bias (B, 1, L), the causal mask (L, L)
    add = qkv.new_zeros(1, 1, 1) if bias is None else bias
    if causal:
        add = add + torch.full((length, length), float("-inf"), device=qkv.device, dtype=qkv.dtype).triu(1)
    parts = qkv.split(d_head, dim=-1)  # 3H x (B, L, d_h): q heads, k heads, v heads, row stride 3d
    out = []
    for h in range(heads):
        q, k, v = parts[h], parts[heads + h], parts[2 * heads + h]
        # (B, L, d_h) @ (B, d_h, L) -> (B, L, L) scores, scaled, plus the bias
        scores = torch.baddbmm(add, q, k.transpose(1, 2), alpha=d_head ** -0.5)
        out.append(torch.bmm(dropout_module.dropout(scores.softmax(dim=-1), p, True), v))  # (B, L, d_h)
    return torch.cat(out, dim=-1)


def in_blocks(fn, rows: int, *xs: torch.Tensor) -> torch.Tensor:
    """fn(*xs) for a row-wise fn, on blocks of `rows` rows (dim 0) of the xs, concatenated: the same outputs, each
    block's activations still in cache for the next operation; one call when rows is 0 or covers them all, and on a
    GPU, where a block keeps nothing in a cache and costs a launch per kernel (TCL's evaluation on an H200 ran 1.54x
    its reference with blocks, docs/graph_speed.md round 15; the gain of one call there is not measured yet)."""
    if not rows or len(xs[0]) <= rows or xs[0].is_cuda:
        return fn(*xs)
    return torch.cat([fn(*parts) for parts in zip(*(x.split(rows) for x in xs))])


def side_means(out: torch.Tensor, n_u: int) -> torch.Tensor:
    """(B, Lu + Lv, d) -> (B, 2, d): the mean over each side's Lu, then Lv, positions (DyGLib: padding included).
    Equal sides (DyGFormer's layout) through a (B, 2, L, d) view: its backward writes one gradient, where a slice's
    zero-fills the whole (B, Lu + Lv, d) once per side (the same numbers)."""
    batch, length, width = out.shape
    if length == 2 * n_u:
        return out.reshape(batch, 2, n_u, width).mean(dim=2)
    return torch.stack([out[:, :n_u].mean(dim=1), out[:, n_u:].mean(dim=1)], dim=1)


class _GeluDropout(torch.autograd.Function):
    """GELU(h) masked by `kept` (0/1 in h's dtype) and scaled: `Dropout(F.gelu(h))`'s kernels and numbers, the mask
    applied in place on GELU's output (`addcmul` with out=) and, backward, GELU's gradient written over the masked
    gradient: one fresh (tokens, 4d) buffer each way instead of two (a fresh buffer's first write costs a pass from
    memory; this one is still in cache)."""

    @staticmethod
    def forward(ctx, h: torch.Tensor, kept: torch.Tensor, scale: float) -> torch.Tensor:
        ctx.save_for_backward(h, kept)
        ctx.scale = scale
        out = F.gelu(h)
        return torch.addcmul(out.new_zeros(()), out, kept, value=scale, out=out)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        h, kept = ctx.saved_tensors
        masked = torch.addcmul(grad.new_zeros(()), grad, kept, value=ctx.scale)
        return torch.ops.aten.gelu_backward.grad_input(masked, h, grad_input=masked), None, None


class TransformerLayer(nn.Module):
    """DyGLib's pre-LN layer: x + Drop(MHA(LN(x))), then + Drop(W2 Drop(GELU(W1 LN(.)))) (FFN 4d).

    `fused`: the attention as one QKV projection and `scaled_dot_product_attention` on the
    `nn.MultiheadAttention` module's own parameters (the same function, fewer copies; the module itself
    still serves `need_weights`, which the fused kernel does not return)."""

    block_tokens: int = BLOCK_TOKENS  # rows per block of the packed layer's row-wise part; 0 = all at once
    # the FFN's Drop(GELU(.)) in one (tokens, 4d) buffer each way (`_GeluDropout`); False: `Dropout` on `F.gelu`
    fuse_gelu_dropout: bool = True

    def __init__(self, dim: int, num_heads: int, dropout: float, fused: bool = True):
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"attention width {dim} must be divisible by num_heads = {num_heads}")
        self.attention = nn.MultiheadAttention(dim, num_heads, dropout=dropout, batch_first=True)
        self.norm_attn = nn.LayerNorm(dim)
        self.norm_ffn = nn.LayerNorm(dim)
        self.ffn_in = nn.Linear(dim, 4 * dim)
        self.ffn_out = nn.Linear(4 * dim, dim)
        self.dropout = Dropout(dropout)
        self.fused = fused

    def _fused_attention(self, h: torch.Tensor, causal: bool) -> torch.Tensor:
        att = self.attention
        qkv = F.linear(h, att.in_proj_weight, att.in_proj_bias)  # (B, L, d) -> (B, L, 3d)
        out = attend_heads(qkv, att.num_heads, None, causal, att.dropout, self.training)  # (B, L, d)
        return F.linear(out, att.out_proj.weight, att.out_proj.bias)

    def forward_packed(self, x: torch.Tensor, pack: Packing, causal: bool = False) -> torch.Tensor:
        """The layer on packed tokens x (T, d) -> (T, d): every per-token operation on the kept tokens
        only, the attention on the compact (B, W) layout with `pack.key_bias` on its keys."""
        att = self.attention
        tokens, dim = x.shape
        batch, width, heads = pack.key_bias.shape[0], pack.width, att.num_heads
        qkv = F.linear(self.norm_attn(x), att.in_proj_weight, att.in_proj_bias)  # (T, 3d)
        # (T, 3d) -> compact (B, W, 3d) -> (B, W, d), the key bias (B, 1, W) on every query
        out = attend_heads(qkv[pack.source].view(batch, width, 3 * dim), heads, pack.key_bias.to(qkv.dtype)[:, None, :],
                           causal, att.dropout, self.training)
        out = out.reshape(batch * width, dim)[pack.dense]  # (B * W, d) -> the kept tokens (T, d)
        # row-wise from here: in blocks unless a dropout mask is drawn (blocks would draw other masks)
        return in_blocks(self._after_attention, 0 if self.training and self.dropout.p > 0 else self.block_tokens, x, out)

    def _after_attention(self, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """Tokens x (T, d) and their attention heads out (T, d) -> the layer's output (T, d)."""
        att = self.attention
        x = self._residual(x, F.linear(out, att.out_proj.weight, att.out_proj.bias))
        return self._residual(x, self.ffn_out(self._gelu_dropout(self.ffn_in(self.norm_ffn(x)))))

    def _gelu_dropout(self, h: torch.Tensor) -> torch.Tensor:
        """Drop(GELU(h)), the FFN's hidden activation: one (tokens, 4d) buffer where the mask is drawn here
        (`_GeluDropout`), else `Dropout` on `F.gelu`."""
        p = self.dropout.p
        if not (self.fuse_gelu_dropout and dropout_module.draws_mask(h, p, self.training)):
            return self.dropout(F.gelu(h))
        return _GeluDropout.apply(h, dropout_module.kept_mask(h.shape, p, h.dtype), 1.0 / (1.0 - p))

    def _residual(self, x: torch.Tensor, branch: torch.Tensor) -> torch.Tensor:
        """x + Drop(branch), one pass where the mask is drawn by `models.dropout`."""
        return dropout_module.add_dropout(x, branch, self.dropout.p, self.training)

    def forward(self, x: torch.Tensor, causal: bool = False,
                need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x (B, L, d) -> (B, L, d) and, if asked, the head-averaged attention (B, L, L), rows = queries."""
        h = self.norm_attn(x)
        if self.fused and not need_weights:
            out, weights = self._fused_attention(h, causal), None
        else:
            length = x.shape[1]
            # (L, L) bool, True above the diagonal = key after query: not allowed under the causal mask
            mask = torch.triu(torch.ones(length, length, dtype=torch.bool, device=x.device), 1) if causal else None
            out, weights = self.attention(h, h, h, attn_mask=mask, need_weights=need_weights)
        x = self._residual(x, out)
        x = self._residual(x, self.ffn_out(self._gelu_dropout(self.ffn_in(self.norm_ffn(x)))))
        return x, weights


class Encoded(NamedTuple):
    """One side's transformer input: patches (B, Lp, d), its sequence and per-patch bookkeeping."""

    patches: torch.Tensor
    seq: History
    counts: np.ndarray  # (B, L, 2) co-occurrence counts fed to f_C


class Packing(NamedTuple):
    """The tokens of a (B, L) layout that are computed, packed in row-major order (T of them).

    `flat` (T,) their positions in the B*L layout; `dense` (T,) their slots in the compact (B, W)
    layout the attention runs on (W = most tokens kept in a row, order kept); `source` (B*W,) the
    packed token at each slot (an empty slot repeats token 0: it is masked as a key and its output
    is not read, so it adds nothing, to the outputs or to the gradients); `key_bias` (B, W)
    the log of the number of tokens each slot stands for (0 for a token standing for itself), -inf
    for an empty slot; `pools` (B, S, W) the weights of each side's mean; `readout` (B,) the packed
    index of one token per row (the decoder's target), or None."""

    flat: torch.Tensor
    dense: torch.Tensor
    source: torch.Tensor
    key_bias: torch.Tensor
    width: int
    pools: torch.Tensor
    readout: torch.Tensor | None


def pack_tokens(real: np.ndarray, share_padding: bool, sides: tuple[tuple[int, int], ...], device,
                readout: np.ndarray | None = None) -> Packing:
    """real (B, L) bool, the tokens that are not padding. Keeps them and, with `share_padding`, the
    first padding token of each row standing for all of that row's padding tokens: they have the same
    input (zero features, zero time features, zero counts, no position), hence, without dropout, the
    same output at every layer, and attending to m equal keys is attending to one with its logit
    raised by log m. `sides`: (lo, hi) column ranges whose tokens are averaged (padding included, as
    DyGLib): weight 1/(hi - lo) per real token of the side, n_pad/(hi - lo) for the representative.
    `readout` (B,): a kept column per row whose packed index is wanted."""
    batch, length = real.shape
    pad = ~real
    first = pad & (np.cumsum(pad, axis=1) == 1) if share_padding else np.zeros_like(pad)
    keep = real | first
    rows, cols = np.nonzero(keep)  # (T,) row-major
    slot = (np.cumsum(keep, axis=1) - 1)[rows, cols]  # compact position within the row
    width = int(keep.sum(axis=1).max())
    source = np.zeros(batch * width, dtype=np.int64)
    source[rows * width + slot] = np.arange(len(rows))
    key_bias = np.full((batch, width), -np.inf, dtype=np.float32)
    key_bias[rows, slot] = np.log(np.where(first, pad.sum(axis=1, keepdims=True), 1)[rows, cols])
    pools = np.zeros((batch, len(sides), width), dtype=np.float32)
    for j, (lo, hi) in enumerate(sides):
        n_pad = pad[:, lo:hi].sum(axis=1)[rows]  # (T,) the side's padding tokens in the token's row
        on_side = (cols >= lo) & (cols < hi) & real[rows, cols]
        pools[rows, j, slot] = np.where(on_side, 1.0, np.where(first[rows, cols], n_pad, 0.0)) / (hi - lo)
    extra = ()
    if readout is not None:
        packed_index = np.full((batch, length), -1, dtype=np.int64)
        packed_index[rows, cols] = np.arange(len(rows))
        extra = (packed_index[np.arange(batch), readout],)
    flat, dense, source, key_bias, pools, *extra = to_device(device, rows * length + cols, rows * width + slot, source,
                                                             key_bias, pools, *extra)
    return Packing(flat, dense, source, key_bias, width, pools, extra[0] if extra else None)


# ------------------------------------------------------------------ the model

class DyGFormer(TemporalBackbone):
    """DyGFormer backbone and its variants: node embeddings (B, d_node) for the endpoints of B edges.

    node_feat (N+1, d_node) and edge_feat (E+1, d_edge) are the padded feature tables of a
    `CTDGData` (row 0 = padding), kept as non-persistent buffers. The time encoder is
    `make_encoder(encoder, time_dim, mean=time_mean, std=time_std)`. `set_graph` chooses the
    interactions visible to the model (histories are deterministic: its `rng` is unused); the graph
    must be set before the first call.
    """

    # tokens per block of rows on the padded layout (`_run`); 0 = the whole batch at once
    block_tokens: int = BLOCK_TOKENS

    def __init__(self, node_feat: np.ndarray, edge_feat: np.ndarray, *, variant: str = "dygformer",
                 encoder: str = "cosine", time_dim: int = 100, time_mean: float = 0.0, time_std: float = 1.0,
                 channel_dim: int = 50, time_channel_dim: int | None = None, patch_size: int = 1,
                 max_input_sequence_length: int = 32, num_layers: int = 2, num_heads: int = 2,
                 dropout: float = 0.1, time_input: str = "time", fused_attention: bool = True,
                 encoder_options: dict | None = None, position_index: str = "per_event"):
        if variant not in VARIANTS:
            raise ValueError(f"unknown DyGFormer variant {variant!r}; known: {VARIANTS}")
        if time_input not in TIME_INPUTS:
            raise ValueError(f"unknown time_input {time_input!r}; known: {TIME_INPUTS}")
        if patch_size < 1 or max_input_sequence_length < 2 or num_layers < 1:
            raise ValueError("patch_size >= 1, max_input_sequence_length >= 2 and num_layers >= 1 are required")
        super().__init__(node_feat, edge_feat, encoder=encoder, time_dim=time_dim, time_mean=time_mean,
                         time_std=time_std, encoder_options=encoder_options)
        self.variant = variant
        self.time_input = time_input
        self.position_index = check_position_index(position_index)  # which index (models/graph/position_index.py)
        self.channel_dim = channel_dim
        self.time_channel_dim = channel_dim if time_channel_dim is None else int(time_channel_dim)
        self.patch_size = patch_size
        self.max_input_sequence_length = max_input_sequence_length
        self.cooccurrence = CooccurrenceEncoder(channel_dim)
        p = patch_size
        self.projection = nn.ModuleDict({
            "node": nn.Linear(p * self.node_dim, channel_dim),
            "edge": nn.Linear(p * self.edge_dim, channel_dim),
            "time": nn.Linear(p * time_dim, self.time_channel_dim),
            "cooccurrence": nn.Linear(p * channel_dim, channel_dim),
        })
        self.model_dim = 3 * channel_dim + self.time_channel_dim
        self.layers = nn.ModuleList(TransformerLayer(self.model_dim, num_heads, dropout, fused_attention)
                                    for _ in range(num_layers))
        self.output = nn.Linear(self.model_dim, self.node_dim)
        if variant == "dygdecoder":
            # the authors' BOS: one learnable row of the model width, standard normal init
            self.bos = nn.Parameter(torch.randn(1, 1, self.model_dim))

    @property
    def causal(self) -> bool:
        return self.variant == "dygdecoder"

    # ---- inputs
    def sequences(self, nodes, times) -> History:
        """The padded (B, L) sequence of each node at its time, in this variant's layout."""
        build = decoder_sequences if self.causal else dygformer_sequences
        return build(self.graph(), nodes, times, self.max_input_sequence_length, self.patch_size)

    def _channels(self, seq: History, times: np.ndarray, counts: np.ndarray) -> torch.Tensor:
        """(B, L) sequence -> projected patches (B, L/P, 3 d_ch + d_tc). An all-zero feature table gives
        its channel's bias alone (the projection of zeros, exactly)."""
        if self.time_input == "time":
            # t - t_k in float64, then float32 for the encoder (DyGLib casts at the same place): (B, L)
            dt = (times[:, None] - seq.times.astype(np.float64)).astype(np.float32)
        else:
            dt = position_input(seq, times, self.causal, self.position_index).astype(np.float32)
        max_count = int(counts.max(initial=0))
        ids, eids, dt, counts = to_device(self.device, seq.neighbor_ids, seq.edge_ids, dt, counts)  # one copy per dtype
        p = self.patch_size
        batch, n_patches = ids.shape[0], ids.shape[1] // p

        def channel(name: str, table: torch.Tensor, zero: bool, index: torch.Tensor) -> torch.Tensor:
            layer = self.projection[name]
            if zero:  # (d_ch,) -> (B, L/P, d_ch)
                return layer.bias.expand(batch, n_patches, -1)
            return layer(patch(table[index], p))  # (B, L, d) -> (B, L/P, P d) -> (B, L/P, d_ch)

        phi = self.time_encoder(dt)  # (B, L, d_T)
        phi = phi * (ids != 0).unsqueeze(-1)  # DyGLib: zero time features at padding
        cooc = self.cooccurrence(counts, max_count=max_count)  # (B, L, d_ch)
        # each channel (B, L/P, d_ch or d_tc), concatenated
        return torch.cat([channel("node", self.node_feat, self.node_feat_zero, ids),
                          channel("edge", self.edge_feat, self.edge_feat_zero, eids),
                          self.projection["time"](patch(phi, p)), self.projection["cooccurrence"](patch(cooc, p))],
                         dim=-1)

    def encode_inputs(self, src, dst, times) -> tuple[Encoded, Encoded]:
        """Both sides' patches before the transformer, with their sequences and co-occurrence counts."""
        times = np.asarray(times, dtype=np.float64)
        seq_u, seq_v = self.sequences(src, times), self.sequences(dst, times)
        counts_u, counts_v = cooccurrence_counts(seq_u.neighbor_ids, seq_v.neighbor_ids)  # (B, Lu, 2), (B, Lv, 2)
        return (Encoded(self._channels(seq_u, times, counts_u), seq_u, counts_u),
                Encoded(self._channels(seq_v, times, counts_v), seq_v, counts_v))

    # ---- transformer
    def _run(self, x: torch.Tensor, need_weights: bool = False,
             reduce=None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x (B, L, d) through every layer, in blocks of about `block_tokens` tokens (whole rows) unless the
        attention weights are asked for: every operation acts within a row, so a block's activations go
        through all the layers while they are still in cache, and the outputs are the same. `reduce`: a
        row-wise function applied to each block's output (B', L, d) before the blocks are concatenated."""
        rows = len(x) if need_weights or not self.block_tokens else max(1, self.block_tokens // x.shape[1])
        blocks, weights = [], None
        for block in x.split(rows):
            for layer in self.layers:
                block, weights = layer(block, causal=self.causal, need_weights=need_weights)
            blocks.append(block if reduce is None else reduce(block))
        return (blocks[0] if len(blocks) == 1 else torch.cat(blocks)), weights

    def _with_bos(self, x: torch.Tensor) -> torch.Tensor:
        # (1, 1, d) -> (B, 1, d) ++ (B, Lp, d) -> (B, 1 + Lp, d)
        return torch.cat([self.bos.expand(x.shape[0], 1, -1), x], dim=1)

    def _readout(self, out: torch.Tensor, seq: History) -> torch.Tensor:
        """Decoder: the patch holding the node itself (its last non-padding patch), after the BOS."""
        rows = torch.arange(out.shape[0], device=out.device)
        target = torch.from_numpy((seq.lengths - 1) // self.patch_size + 1).to(out.device)  # (B,)
        return out[rows, target]  # (B, d)

    # ---- packed tokens: the same outputs, padding computed once per row or not at all
    def _real_patches(self, seq: History) -> np.ndarray:
        """(B, L/P) bool: patches holding at least one real entry (the others are all padding)."""
        ids = seq.neighbor_ids
        return (ids.reshape(ids.shape[0], -1, self.patch_size) != 0).any(axis=-1)

    def _packs(self) -> bool:
        """Packed tokens need the fused attention; padding may share one token when nothing is random."""
        return self.layers[0].fused

    @property
    def _padding_shared(self) -> bool:
        return not self.training or self.layers[0].attention.dropout == 0.0

    def _run_packed(self, x: torch.Tensor, pack: Packing) -> torch.Tensor:
        """x (B, L, d) -> the kept tokens' outputs (T, d)."""
        h = x.reshape(-1, x.shape[-1])[pack.flat]  # (T, d)
        for layer in self.layers:
            h = layer.forward_packed(h, pack, causal=self.causal)
        return h

    def _pool(self, out: torch.Tensor, pack: Packing) -> torch.Tensor:
        """(T, d) outputs -> (B, S, d) mean of each side's patches, padding included (DyGLib)."""
        batch, width = pack.key_bias.shape
        # (T, d) -> compact (B, W, d); (B, S, W) @ (B, W, d) -> (B, S, d)
        return torch.bmm(pack.pools.to(out.dtype), out[pack.source].view(batch, width, -1))

    def side_outputs(self, enc: Encoded, need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One side through the transformer alone (separate and decoder variants): (B, d) pooled
        output before the output layer, and the last layer's attention if asked."""
        real = self._real_patches(enc.seq)
        if self.causal:
            x = self._with_bos(enc.patches)
            if need_weights or not self._packs():
                out, weights = self._run(x, need_weights)
                return self._readout(out, enc.seq), weights
            # the padding after the target never reaches it under the causal mask: left out, in training too
            target = (enc.seq.lengths - 1) // self.patch_size + 1  # (B,) the node's own patch, after the BOS
            pack = pack_tokens(np.concatenate([np.ones((len(real), 1), bool), real], axis=1), False, (), self.device,
                               readout=target)
            return self._run_packed(x, pack)[pack.readout], None
        if need_weights or not (self._packs() and self._padding_shared):
            out, weights = self._run(enc.patches, need_weights)
            return out.mean(dim=1), weights  # DyGLib: mean over every patch, padding included
        pack = pack_tokens(real, True, ((0, real.shape[1]),), self.device)
        return self._pool(self._run_packed(enc.patches, pack), pack)[:, 0], None

    def pair_embeddings(self, src, dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        """Embeddings (B, d_node) of both endpoints of B candidate edges at their times."""
        enc_u, enc_v = self.encode_inputs(src, dst, times)
        if self.variant == "dygformer":
            n_u = enc_u.patches.shape[1]
            # (B, Lu, d) ++ (B, Lv, d) -> (B, Lu + Lv, d): one sequence, joint attention
            x = torch.cat([enc_u.patches, enc_v.patches], dim=1)
            if self._packs() and self._padding_shared:
                real = np.concatenate([self._real_patches(enc_u.seq), self._real_patches(enc_v.seq)], axis=1)
                pack = pack_tokens(real, True, ((0, n_u), (n_u, real.shape[1])), self.device)
                pooled = self._pool(self._run_packed(x, pack), pack)  # (B, 2, d)
                h_u, h_v = pooled[:, 0], pooled[:, 1]
            else:  # each block's side means (B', 2, d): its outputs are never concatenated
                pooled, _ = self._run(x, reduce=lambda out: side_means(out, n_u))
                h_u, h_v = pooled[:, 0], pooled[:, 1]
        else:
            (h_u, _), (h_v, _) = self.side_outputs(enc_u), self.side_outputs(enc_v)
        return self.output(h_u), self.output(h_v)

# ------------------------------------------------------------------ builder (params/models.yaml `module:`)

def build(config: dict, data: CTDGData, split: LinkSplit, train_graph: TemporalNeighbors) -> DyGFormer:
    """DyGFormer, DyGFormer-separate or DyGDecoder (`config["model"]`); statistics of what the
    encoder reads on the training split: t - t_k over the kept histories, or the recency indices."""
    hp = dygformer_hparams(config)
    k = hp["max_input_sequence_length"] - 1
    if hp["time_input"] == "position":
        # the per_event indices' statistics (distinct_times has fewer indices where times tie): only the
        # standardizing encoders read them, and Table 6 runs the sinusoidal one
        src, dst, ts = data.src[split.train], data.dst[split.train], data.ts[split.train]
        mean, std = recency_index_stats(train_graph, np.concatenate([src, dst]), np.concatenate([ts, ts]), k)
    else:
        statistic, _ = time_diff_statistic(config)
        # the authors' code takes its per-query windows of max_input_sequence_length interactions, one
        # more than the model reads (dg-linear-time src/models/dygformer.py setup)
        mean, std = train_time_stats(data, split, train_graph, k + (statistic == "per_query_mean"), statistic)
    return DyGFormer(data.node_feat, data.edge_feat, time_mean=mean, time_std=std, **hp)
