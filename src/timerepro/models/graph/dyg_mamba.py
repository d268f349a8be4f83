"""DyG-Mamba (Li et al. 2024, arXiv 2408.06966; authors' code Clearloveyuan/DyG-Mamba at 05e397a): a selective
state space model over each node's first-hop history whose step size comes from the time spans between
interactions. docs/dyg_mamba.md lists every decision (A01-A19, M01-M10) with its source.

The defaults are the authors' code (`models/DyGMamba.py`, `models/mamba_simple.py` `MambaTimeDelta`); the
equivalence fixture `dyg_mamba_authors` holds the module to it at 1e-5. For a candidate edge (u, v, tau):

    sequence   [u itself at tau, the L-1 most recent interactions before tau (oldest first), 0 ...]: the node
               first, right padding, width = longest kept history + 2 (DyGMamba.py:278-320)     `layout`
    Z_u        = [Z_V ; Z_E ; Z_T ; Z_C]: node, edge, X_T = cos(w (tau - t_j) + b) (trained, DyGLib's init)
               and co-occurrence channels, each projected to d: width 4d
    r_k        spans (t_k - t_(k-1)) / (tau - t_1) + 1 / n, clipped (encoders.dygmamba_span_ratios)
    s_k        = Linear(cos(w r_k + b)), w from 1/10^linspace(0, 0.9) trained               `span_encoder`
    block      Z' = Norm(Z) (RMSNorm); [x ; z] = W_in Z'; x' = SiLU(CausalConv1d(x))
               Delta = softplus(W_up (W_down s) + b); B = W_B x'; C = W_C x'  (mamba_simple.py:497-532)
               y = SSM(x'; A, B, C, Delta) + D x' (D = 1 initially, trained)                 `skip`
               Z <- Z + (y * SiLU(z)) W_out; after the last block a final RMSNorm
    coupling   H_u = LN(Z_u + Linear(softmax_row(Q_u) (softmax_col(K_v)^T V_v) / sqrt(w))), Q = Z_u W_Q,
               K, V = Z_v W_K, W_V (one module); then H_v from Z_v and the updated H_u (DyGMamba.py:224-225,
               1125-1166)                                                                 `cross_attention`
    read-out   g = softmax over positions of a learned logit (one gate per side), the top 64 kept and
               renormalised; h_u = Linear(sum_i g_i H_u[i]) (d_out) (DyGMamba.py:229-262)    `readout`

In the authors' layout nothing is masked: padding enters the cross-attention keys and the read-out softmax,
and its inputs are the projections' biases (its time channels are zero), as in their code.

Switches (params/models.yaml `variants` name the paper's ablations, Table 5 and Figures 1, 5, 11), the
authors' value first: `layout` ("node_first", or the project's "node_last": left padding, masked everywhere),
`span_encoder` ("trainable", or the project's "fixed": SiLU(Linear(cos(omega r))) with GraphMixer's omega and
the spans of `encoders.time_spans`), `readout` ("gate_topk", or "mean" over real positions),
`cross_attention` ("softmax", the project's "elu": Eqs. 10-13 with phi = elu + 1, both sides from the
pre-attention states, or "none"), `skip` (D), `norm` ("rms" or "layer"), `selective` (True; False: the
authors' "w/o Selective": the code replaces the span input by ones (mamba_simple.py:509), so Delta, B and C
are one value each, computed from the weights; "s4": the project's former S4-style learned constants Delta,
B, C), `time_span` (Delta from the spans, else from x' as vanilla Mamba), `bc_source` ("data" or "time": B, C
from W_in s as the authors' `time_mamba`), `time_encoding` (the Z_T channel), `cooccurrence` (the Z_C
channel), `pairing` ("separate" or "joint": [S_u ; S_v] through one scan, the vanilla Mamba of Figure 1),
`bidirectional` (Algorithm 1's forward + backward scans), `zoh` ("simplified" B_bar = Delta B as mamba_ssm,
or "exact", Eq. 8).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from timerepro.encoders import (TimeSpanControl, TrainableTimeSpanControl, dygmamba_span_ratios, make_encoder,
                                time_spans)
from timerepro.graphs.cooccurrence import cooccurrence_counts
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.dropout import Dropout
from timerepro.models.graph.features import FeatureTable
from timerepro.models.graph.dygformer import CooccurrenceEncoder
from timerepro.models.graph.selective_scan import BACKENDS, ZOH, causal_conv1d, selective_scan

CROSS_ATTENTION = ("softmax", "elu", "none")
PAIRING = ("separate", "joint")
BC_SOURCES = ("data", "time")
LAYOUTS = ("node_first", "node_last")
SPAN_ENCODERS = ("trainable", "fixed")
READOUTS = ("gate_topk", "mean")
NORMS = ("rms", "layer")
# (rows, L, inner) elements of one block activation above which a training step keeps only the inputs of each stage
# (channels, blocks, final norm, cross-attention + read-out) and recomputes the rest in backward (as mamba_ssm's fused
# kernel recomputes its block): at Enron's L = 2048 with batches of 200 (dyg_mamba Figure 7; 200 x 2049 x 400 = 164 M)
# autograd kept ~370 MB per batch row, 74 GB a step (docs/dyg_mamba.md, the scan's cost); every offline and other paper-scale
# shape (UCI 1024 x 200: 82 M) stays below it and runs the plain path, bit for bit
RECOMPUTE_ACTIVATIONS_MIN = 1 << 27
# (rows, L, inner, d_state) states of one piece of a recomputed block: its rows are recomputed a piece at a time
# (rows are independent), so backward holds one piece's activations and scan states (~256 MiB per state tensor)
RECOMPUTE_PIECE_STATES = 1 << 26
SWITCHES = {  # switch -> allowed values
    "time_span": (True, False), "selective": (True, False, "s4"), "time_encoding": (True, False),
    "cooccurrence": (True, False), "bidirectional": (True, False), "cross_attention": CROSS_ATTENTION,
    "pairing": PAIRING, "bc_source": BC_SOURCES, "zoh": ZOH, "layout": LAYOUTS, "span_encoder": SPAN_ENCODERS,
    "readout": READOUTS, "skip": (True, False), "norm": NORMS,
}


# ------------------------------------------------------------------ sequences

class Sequence(NamedTuple):
    """Padded sequences (B, W): ids, edge ids, times, and `valid` (the node itself and its kept history)."""

    neighbor_ids: np.ndarray
    edge_ids: np.ndarray
    times: np.ndarray
    valid: np.ndarray


def mamba_sequences(neighbors: TemporalNeighbors, nodes, times, max_input_sequence_length: int,
                    layout: str = "node_first") -> Sequence:
    """The node and its L-1 most recent interactions before t (oldest first), in one of two layouts:

    node_first  [node, h_1 .. h_n, 0 ...], width = longest kept history of the batch + 2 (the authors'
                pad_sequences, DyGMamba.py:278-320, with its extra column `more_tokens`)
    node_last   [0 ..., h_1 .. h_n, node], width = longest kept history + 1 (the project's former layout)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown sequence layout {layout!r}; known: {LAYOUTS}")
    if max_input_sequence_length < 1:
        raise ValueError("max_input_sequence_length must be >= 1 (the node itself)")
    nodes = np.asarray(nodes, dtype=np.int64)
    times = np.asarray(times, dtype=np.float64)
    keep = max_input_sequence_length - 1
    batch = len(nodes)
    if layout == "node_first":
        if keep and batch:
            hist = neighbors.history(nodes, times, keep)  # (B, longest) right-padded, oldest first
            h_ids, h_eids, h_ts, n = hist.neighbor_ids, hist.edge_ids, hist.times.astype(np.float64), hist.lengths
        else:
            h_ids, h_eids, h_ts, n = (np.zeros((batch, 0), np.int64), np.zeros((batch, 0), np.int64),
                                      np.zeros((batch, 0)), np.zeros(batch, np.int64))
        pad = np.zeros((batch, 1), np.int64)
        ids = np.concatenate([nodes[:, None], h_ids, pad], axis=1)
        eids = np.concatenate([pad, h_eids, pad], axis=1)
        ts = np.concatenate([times[:, None], h_ts, np.zeros((batch, 1))], axis=1)
        valid = np.arange(ids.shape[1])[None, :] <= n[:, None]  # the node and its n interactions
        return Sequence(ids, eids, ts, valid)
    longest = int(np.minimum(neighbors.count_before(nodes, times), keep).max()) if batch and keep else 0
    if longest:
        hood = neighbors.most_recent(nodes, times, longest)  # (B, longest) left-padded, oldest first
        ids, eids, ts = hood.neighbor_ids, hood.edge_ids, hood.times.astype(np.float64)
    else:
        ids, eids, ts = (np.zeros((batch, 0), np.int64), np.zeros((batch, 0), np.int64), np.zeros((batch, 0)))
    ids = np.concatenate([ids, nodes[:, None]], axis=1)
    eids = np.concatenate([eids, np.zeros((batch, 1), np.int64)], axis=1)
    ts = np.concatenate([ts, times[:, None]], axis=1)
    valid = ids != 0
    valid[:, -1] = True  # the node itself (even node 0, which never has a history)
    return Sequence(ids, eids, ts, valid)


def span_ratios(seq: Sequence, times: np.ndarray, layout: str, span_encoder: str) -> np.ndarray:
    """(B, W) spans of the time-span signal: the authors' (`dygmamba_span_ratios`, which reads the node-first
    layout) or the project's former `time_spans` (which reads chronological rows, the node last); a row in the
    other layout is rearranged, computed and put back."""
    width = seq.valid.shape[1]
    col = np.arange(width)[None, :]
    node_col = 0 if layout == "node_first" else width - 1
    is_node = col == node_col
    if span_encoder == "fixed":
        if layout == "node_last":
            return time_spans(seq.times, times, seq.valid)
        # padding first, then the history, then the node: chronological (B, W)
        order = np.argsort(np.where(is_node, 2 * width, np.where(seq.valid, width + col, col)), axis=1, kind="stable")
        r = time_spans(np.take_along_axis(seq.times, order, 1), times, np.take_along_axis(seq.valid, order, 1))
        return _put_back(r, order)
    if layout == "node_first":
        return dygmamba_span_ratios(seq.times, seq.valid, times)
    # the node, then the history, then padding, and one more padding column as the authors' rows have (B, W + 1)
    order = np.argsort(np.where(is_node, -1, np.where(seq.valid, col, width + col)), axis=1, kind="stable")
    valid = np.concatenate([np.take_along_axis(seq.valid, order, 1), np.zeros((len(times), 1), bool)], axis=1)
    t = np.concatenate([np.take_along_axis(seq.times, order, 1), np.zeros((len(times), 1))], axis=1)
    return _put_back(dygmamba_span_ratios(np.where(valid, t, 0.0), valid, times)[:, :-1], order)


def _put_back(values: np.ndarray, order: np.ndarray) -> np.ndarray:
    """values[b, k] belongs at column order[b, k] of the original row."""
    out = np.zeros_like(values)
    np.put_along_axis(out, order, values, axis=1)
    return out


# ------------------------------------------------------------------ layers

def inverse_softplus(x: torch.Tensor) -> torch.Tensor:
    return x + torch.log(-torch.expm1(-x))


def _norm(kind: str, width: int) -> nn.Module:
    return nn.RMSNorm(width, eps=1e-5) if kind == "rms" else nn.LayerNorm(width, eps=1e-5)


class MambaBlock(nn.Module):
    """One block: Norm, [x ; z] = W_in (no bias), the scan per direction, gate, W_out (no bias), residual
    (mamba_simple.py `Block` and `MambaTimeDelta`); see the module docstring."""

    def __init__(self, width: int, *, d_state: int = 16, expand: int = 2, conv_kernel: int = 4, dropout: float = 0.0,
                 time_span: bool = True, selective=True, bc_source: str = "data", zoh: str = "simplified",
                 bidirectional: bool = False, scan_backend: str = "auto", skip: bool = True, norm: str = "rms",
                 num_blocks: int = 1):
        super().__init__()
        inner = expand * width
        self.width, self.inner = width, inner
        self.time_span, self.selective, self.bc_source, self.zoh = time_span, selective, bc_source, zoh
        self.bidirectional, self.scan_backend, self.skip = bidirectional, scan_backend, skip
        self.norm = _norm(norm, width)
        self.in_proj = nn.Linear(width, 2 * inner, bias=False)  # rows: x then z (xz.chunk(2))
        self.out = nn.Linear(inner, width, bias=False)
        with torch.no_grad():  # mamba_ssm _init_weights: out_proj rescaled by 1/sqrt(n_layer)
            self.out.weight /= math.sqrt(max(num_blocks, 1))
        self.dropout = Dropout(dropout)
        self.directions = nn.ModuleList(_Direction(width, inner, d_state, conv_kernel, self)
                                        for _ in range(2 if bidirectional else 1))

    def forward(self, z_in: torch.Tensor, mask: torch.Tensor, span_signal: torch.Tensor | None) -> torch.Tensor:
        """z_in (B, L, width), mask (B, L) bool (all true in the authors' layout), span_signal (B, L, width)."""
        x, z = self.in_proj(self.norm(z_in)).chunk(2, dim=-1)  # (B, L, inner) each
        x = x * mask.unsqueeze(-1)
        w_x = self.in_proj.weight[: self.inner]  # (inner, width): W_in's x rows, for B, C of the variants
        y = self.directions[0](x, mask, span_signal, w_x)
        if self.bidirectional:  # Algorithm 1: the same block on the reversed sequence, outputs summed
            flip = lambda t: None if t is None else t.flip(1)  # noqa: E731
            y = y + self.directions[1](x.flip(1), mask.flip(1), flip(span_signal), w_x).flip(1)
        return z_in + self.dropout(self.out(y * F.silu(z)))


class _Direction(nn.Module):
    """Conv, Delta, B, C, A and D of one scan direction."""

    def __init__(self, width: int, inner: int, d_state: int, conv_kernel: int, block: MambaBlock):
        super().__init__()
        self.cfg = {k: getattr(block, k) for k in ("time_span", "selective", "bc_source", "zoh", "scan_backend", "skip")}
        self.width = width
        self.conv = nn.Conv1d(inner, inner, conv_kernel, groups=inner)
        # A = -exp(A_log), A_log[d, n] = log(n + 1): S4D-real (mamba_simple.py:439-445)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, d_state + 1, dtype=torch.float32)).repeat(inner, 1))
        if self.cfg["skip"]:
            self.D = nn.Parameter(torch.ones(inner))  # mamba_simple.py:449
        # Delta's bias: softplus(b) ~ logU(1e-3, 1e-1) (mamba_simple.py:426-436)
        dt = torch.exp(torch.rand(inner) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3)).clamp(min=1e-4)
        if self.cfg["selective"] == "s4":  # the project's former S4-style: Delta, B, C learned constants
            self.dt_bias = nn.Parameter(inverse_softplus(dt))
            self.B = nn.Parameter(torch.randn(inner, d_state) / math.sqrt(d_state))
            self.C = nn.Parameter(torch.randn(inner, d_state) / math.sqrt(d_state))
            return
        rank = math.ceil(width / 16)  # Mamba's dt_rank "auto"
        # Delta = softplus(W_up W_down s + b): W_down the authors' dt_generate_layer (from the span signal) or,
        # without time spans, vanilla Mamba's x_proj rows for dt (from x')
        self.dt_down = nn.Linear(width if self.cfg["time_span"] else inner, rank, bias=False)
        self.dt_proj = nn.Linear(rank, inner)
        with torch.no_grad():
            nn.init.uniform_(self.dt_proj.weight, -rank ** -0.5, rank ** -0.5)
            self.dt_proj.bias.copy_(inverse_softplus(dt))
        self.B, self.C = nn.Linear(inner, d_state, bias=False), nn.Linear(inner, d_state, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, span_signal: torch.Tensor | None,
                w_x: torch.Tensor) -> torch.Tensor:
        """x (B, L, inner) before the conv -> y (B, L, inner) (with the skip term D x')."""
        m = mask.unsqueeze(-1)
        xc = F.silu(causal_conv1d(x, self.conv.weight, self.conv.bias)) * m  # x' (B, L, inner)
        A = -torch.exp(self.A_log)  # (inner, N)
        if self.cfg["selective"] == "s4":
            delta = F.softplus(self.dt_bias).expand_as(xc)
            B, C = self.B, self.C  # (inner, N)
        else:
            if self.cfg["selective"] is False:
                # mamba_simple.py:508-527: the span input is replaced by ones (dts = torch.ones(...)), so Delta,
                # B and C are one value each over batch and positions: softplus(W_up W_down 1 + b), W_B W_in 1
                ones = torch.ones(self.dt_down.in_features, device=x.device, dtype=x.dtype)
                delta = F.softplus(self.dt_proj(self.dt_down(ones))).expand_as(xc)  # (B, L, inner)
                x_ones = F.linear(torch.ones(self.width, device=x.device, dtype=x.dtype), w_x)  # (inner,)
                B, C = (lin(x_ones).expand(*xc.shape[:2], -1) for lin in (self.B, self.C))  # (B, L, N)
                y = selective_scan(xc, delta, A, B, C, zoh=self.cfg["zoh"], backend=self.cfg["scan_backend"])
                return y + xc * self.D if self.cfg["skip"] else y
            delta = F.softplus(self.dt_proj(self.dt_down(span_signal if self.cfg["time_span"] else xc)))
            if self.cfg["bc_source"] == "time":  # mamba_simple.py:497-507 (time_mamba): B, C of W_in s
                bc_in = F.linear(span_signal, w_x)  # (B, L, inner)
                B, C = self.B(bc_in), self.C(bc_in)
            else:
                B, C = self.B(xc), self.C(xc)  # (B, L, N)
        y = selective_scan(xc, delta, A, B, C, zoh=self.cfg["zoh"], backend=self.cfg["scan_backend"])
        return y + xc * self.D if self.cfg["skip"] else y


class SoftmaxCrossAttention(nn.Module):
    """The authors' cross-attention (DyGMamba.py:1125-1166): softmax linear attention with a residual,
    H = LN(X + Drop(W_o (softmax_row(X W_Q) / sqrt(w)) (softmax_col(Y W_K)^T (Y W_V)))); padding keys left
    out of the column softmax where `mask_kv` says so (all true in the authors' layout)."""

    def __init__(self, width: int, dropout: float = 0.1):
        super().__init__()
        self.q, self.k, self.v = (nn.Linear(width, width, bias=False) for _ in range(3))
        self.proj, self.norm = nn.Linear(width, width), nn.LayerNorm(width)
        self.dropout = Dropout(dropout)

    def forward(self, z_q: torch.Tensor, z_kv: torch.Tensor, mask_kv: torch.Tensor) -> torch.Tensor:
        """z_q (B, Lq, w), z_kv (B, Lk, w), mask_kv (B, Lk) -> (B, Lq, w)."""
        width = z_q.shape[-1]
        q = self.q(z_q).softmax(dim=-1) * width ** -0.5  # (B, Lq, w): softmax over features
        k = self.k(z_kv).masked_fill(~mask_kv.unsqueeze(-1), float("-inf")).softmax(dim=1)  # over positions
        context = k.transpose(1, 2) @ self.v(z_kv)  # (B, w, Lk) @ (B, Lk, w) -> (B, w, w)
        return self.norm(z_q + self.dropout(self.proj(q @ context)))


class LinearCrossAttention(nn.Module):
    """Eqs. 10-13 as the project read them (`cross_attention: elu`): O = phi(Q) (phi(K)^T V) / (phi(Q) .
    sum phi(K)), phi = elu + 1, padding keys left out; H = LN(Linear(O + Q)). Weights shared by both sides."""

    def __init__(self, width: int, dropout: float = 0.1):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(width, width), nn.Linear(width, width), nn.Linear(width, width)
        self.proj, self.norm = nn.Linear(width, width), nn.LayerNorm(width)
        self.dropout = Dropout(dropout)

    def forward(self, z_q: torch.Tensor, z_kv: torch.Tensor, mask_kv: torch.Tensor) -> torch.Tensor:
        """z_q (B, Lq, w), z_kv (B, Lk, w), mask_kv (B, Lk) -> (B, Lq, w)."""
        q = self.q(z_q)
        phi_q = F.elu(q) + 1  # (B, Lq, w)
        phi_k = (F.elu(self.k(z_kv)) + 1) * mask_kv.unsqueeze(-1)  # (B, Lk, w), zero at padding
        kv = phi_k.transpose(1, 2) @ self.v(z_kv)  # (B, w, Lk) @ (B, Lk, w) -> (B, w, w): sum_j phi(K_j) V_j^T
        num = phi_q @ kv  # (B, Lq, w)
        den = (phi_q * phi_k.sum(dim=1, keepdim=True)).sum(-1, keepdim=True)  # (B, Lq, 1)
        out = num / den.clamp(min=1e-6)
        return self.norm(self.proj(self.dropout(out) + q))


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over the real positions: x (B, L, w), mask (B, L) -> (B, w)."""
    m = mask.unsqueeze(-1).to(x.dtype)
    return (x * m).sum(1) / m.sum(1).clamp(min=1.0)


def gate_topk(x: torch.Tensor, logits: torch.Tensor, mask: torch.Tensor, k: int) -> torch.Tensor:
    """The authors' read-out (DyGMamba.py:229-257): softmax of one logit per position over the (unmasked)
    positions, the k largest weights kept and renormalised. x (B, L, w), logits (B, L, 1) -> (B, w)."""
    weights = logits.masked_fill(~mask.unsqueeze(-1), float("-inf")).softmax(dim=1)  # (B, L, 1)
    top, idx = torch.topk(weights, min(k, x.shape[1]), dim=1)  # (B, k, 1)
    top = top / top.sum(dim=1, keepdim=True)
    kept = torch.zeros_like(weights).scatter(1, idx, top)  # (B, L, 1)
    return (x * kept).sum(1)


# ------------------------------------------------------------------ the model

class Encoded(NamedTuple):
    """One side of a pair after the blocks: hidden states per layer (B, L, w), the sequence, its real
    positions (`mask`) and the positions attention and read-out see (`attend`: all in the authors' layout)."""

    layers: list
    seq: Sequence
    mask: torch.Tensor
    attend: torch.Tensor


class DyGMamba(nn.Module):
    """DyG-Mamba backbone: embeddings (B, d_out) of both endpoints of B candidate edges (see the module docstring).

    node_feat (N+1, d_node), edge_feat (E+1, d_edge): padded feature tables (row 0 = padding), buffers."""

    def __init__(self, node_feat: np.ndarray, edge_feat: np.ndarray, *, time_encoder: str = "cosine",
                 time_dim: int = 100, time_mean: float = 0.0, time_std: float = 1.0, channel_dim: int = 50,
                 cooccurrence_dim: int = 50, max_input_sequence_length: int = 32, num_blocks: int = 2,
                 d_state: int = 16, expand: int = 2, conv_kernel: int = 4, d_out: int = 172, dropout: float = 0.1,
                 block_dropout: float = 0.0, top_k: int = 64, time_span: bool = True, selective=True,
                 bc_source: str = "data", time_encoding: bool = True, cooccurrence: bool = True,
                 cross_attention: str = "softmax", pairing: str = "separate", bidirectional: bool = False,
                 zoh: str = "simplified", scan_backend: str = "auto", layout: str = "node_first",
                 span_encoder: str = "trainable", readout: str = "gate_topk", skip: bool = True, norm: str = "rms"):
        super().__init__()
        switches = dict(time_span=time_span, selective=selective, bc_source=bc_source, zoh=zoh,
                        time_encoding=time_encoding, cooccurrence=cooccurrence, cross_attention=cross_attention,
                        pairing=pairing, bidirectional=bidirectional, layout=layout, span_encoder=span_encoder,
                        readout=readout, skip=skip, norm=norm)
        for key, value in switches.items():
            if not any(value is v or (type(value) is type(v) and value == v) for v in SWITCHES[key]):
                raise ValueError(f"DyG-Mamba switch {key}={value!r} is not one of {SWITCHES[key]}")
        if scan_backend not in BACKENDS:
            raise ValueError(f"DyG-Mamba scan_backend={scan_backend!r} is not one of {BACKENDS}")
        if bc_source == "time" and not (selective is True and time_span):
            raise ValueError("bc_source='time' needs the time-span signal (selective and time_span true)")
        if pairing == "joint" and cross_attention != "none":
            raise ValueError("pairing='joint' (one sequence for both nodes) has no cross-attention: set cross_attention='none'")
        if max_input_sequence_length < 1 or num_blocks < 0 or top_k < 1:
            raise ValueError("max_input_sequence_length >= 1, num_blocks >= 0 and top_k >= 1 are required")
        self.node_feat = FeatureTable(node_feat)
        self.edge_feat = FeatureTable(edge_feat)
        self.node_dim, self.edge_dim = self.node_feat.shape[1], self.edge_feat.shape[1]
        self.max_input_sequence_length = max_input_sequence_length
        self.time_mean, self.time_std = float(time_mean), float(time_std)
        self.time_encoding, self.use_cooccurrence = time_encoding, cooccurrence
        self.cross_attention, self.pairing, self.time_span = cross_attention, pairing, time_span
        self.layout, self.span_encoder, self.readout_kind, self.top_k = layout, span_encoder, readout, top_k
        self.needs_spans = (time_span and selective != "s4") or bc_source == "time"
        self.time_encoder = make_encoder(time_encoder, time_dim, mean=time_mean, std=time_std)
        proj = {"node": nn.Linear(self.node_dim, channel_dim), "edge": nn.Linear(self.edge_dim, channel_dim)}
        if time_encoding:
            proj["time"] = nn.Linear(time_dim, channel_dim)
        if cooccurrence:
            self.cooccurrence = CooccurrenceEncoder(cooccurrence_dim)  # f of Eq. 3 (2-layer MLP, summed)
            proj["cooccurrence"] = nn.Linear(cooccurrence_dim, channel_dim)  # W_C, b_C
        self.projection = nn.ModuleDict(proj)
        self.width = channel_dim * len(proj)  # 4d (3d without one channel)
        if self.needs_spans:  # shared by the blocks
            control = TrainableTimeSpanControl if span_encoder == "trainable" else TimeSpanControl
            self.span_signal = control(time_dim, self.width)
        self.blocks = nn.ModuleList(MambaBlock(self.width, d_state=d_state, expand=expand, conv_kernel=conv_kernel,
                                               dropout=block_dropout, time_span=time_span, selective=selective,
                                               bc_source=bc_source, zoh=zoh, bidirectional=bidirectional,
                                               scan_backend=scan_backend, skip=skip, norm=norm, num_blocks=num_blocks)
                                    for _ in range(num_blocks))
        self.final_norm = _norm(norm, self.width)
        if cross_attention != "none":
            cls = SoftmaxCrossAttention if cross_attention == "softmax" else LinearCrossAttention
            self.coupling = cls(self.width, dropout)
        if readout == "gate_topk":  # one gate per side (src_gate, dst_gate)
            self.gate_u = nn.Linear(self.width, 1, bias=False)
            self.gate_v = nn.Linear(self.width, 1, bias=False)
        self.output = nn.Linear(self.width, d_out)  # Algorithm 2's phi(r(H))
        self.neighbors: TemporalNeighbors | None = None

    @property
    def out_dim(self) -> int:
        return self.output.out_features

    def set_graph(self, neighbors: TemporalNeighbors, rng=None) -> None:
        """Interactions the model may look at (histories are deterministic: `rng` is unused)."""
        self.neighbors = neighbors

    def _index(self, ids: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64)).to(self.node_feat.device)

    # ---- inputs
    def sequences(self, nodes, times) -> Sequence:
        if self.neighbors is None:
            raise RuntimeError("call set_graph(neighbors) before computing embeddings")
        return mamba_sequences(self.neighbors, nodes, times, self.max_input_sequence_length, self.layout)

    def _inputs(self, seq: Sequence, times: np.ndarray, counts: np.ndarray | None) -> torch.Tensor:
        """Z (B, L, width): the projected channels of Eq. 4."""
        device = self.node_feat.device
        valid = torch.from_numpy(seq.valid).to(device)
        parts = [self.projection["node"](self.node_feat[self._index(seq.neighbor_ids)]),
                 self.projection["edge"](self.edge_feat[self._index(seq.edge_ids)])]
        if self.time_encoding:
            dt = torch.from_numpy(times[:, None] - seq.times).float().to(device)  # (B, L), float64 first
            parts.append(self.projection["time"](self.time_encoder(dt) * valid.unsqueeze(-1)))
        if self.use_cooccurrence:
            parts.append(self.projection["cooccurrence"](self.cooccurrence(torch.from_numpy(counts).to(device))))
        return torch.cat(parts, dim=-1)

    def _spans(self, seq: Sequence, times: np.ndarray) -> torch.Tensor | None:
        if not self.needs_spans:
            return None
        r = span_ratios(seq, times, self.layout, self.span_encoder)  # (B, L) float64
        device = self.node_feat.device
        return self.span_signal(torch.from_numpy(r).float().to(device), torch.from_numpy(seq.valid).to(device))

    def _blocks(self, z: torch.Tensor, mask: torch.Tensor, spans: torch.Tensor | None) -> list:
        stage = _recomputed if self._recomputes(*z.shape[:2]) else _called
        out = [z]
        for block in self.blocks:
            z = stage(block, z, mask, spans, rows=self._piece_rows(block, z))
            out.append(z)
        out[-1] = stage(self.final_norm, z)
        return out

    def _recomputes(self, rows: int, length: int) -> bool:
        """True when a training step at this size keeps only each stage's inputs (RECOMPUTE_ACTIVATIONS_MIN)."""
        inner = self.blocks[0].inner if len(self.blocks) else self.width
        return torch.is_grad_enabled() and rows * length * inner > RECOMPUTE_ACTIVATIONS_MIN

    @staticmethod
    def _piece_rows(block: "MambaBlock", z: torch.Tensor) -> int:
        """Rows per recomputed piece of a block: all of them where its dropout draws (the masks stay the whole
        batch's), else as many as keep RECOMPUTE_PIECE_STATES states."""
        if block.training and block.dropout.p > 0:
            return z.shape[0]
        states = z.shape[1] * block.inner * block.directions[0].A_log.shape[1]
        return max(1, RECOMPUTE_PIECE_STATES // states)

    def _attend(self, seq: Sequence) -> torch.Tensor:
        """Positions the scan, attention and read-out see: all in the authors' layout, the real ones else."""
        visible = np.ones_like(seq.valid) if self.layout == "node_first" else seq.valid
        return torch.from_numpy(visible).to(self.node_feat.device)

    def encode_pair(self, src, dst, times) -> tuple[Encoded, Encoded]:
        """Both sides through the blocks: the hidden states of every layer (input first, last normalised)."""
        times = np.asarray(times, dtype=np.float64)
        seq_u, seq_v = self.sequences(src, times), self.sequences(dst, times)
        counts_u = counts_v = None
        if self.use_cooccurrence:
            counts_u, counts_v = cooccurrence_counts(seq_u.neighbor_ids, seq_v.neighbor_ids)  # (B, L, 2) each
        device = self.node_feat.device
        mask_u, mask_v = torch.from_numpy(seq_u.valid).to(device), torch.from_numpy(seq_v.valid).to(device)
        att_u, att_v = self._attend(seq_u), self._attend(seq_v)
        frugal = self._recomputes(*seq_u.valid.shape) or self._recomputes(*seq_v.valid.shape)  # keep only the ids
        stage = _recomputed if frugal else _called
        z_u, z_v = stage(self._inputs, seq_u, times, counts_u), stage(self._inputs, seq_v, times, counts_v)
        s_u, s_v = stage(self._spans, seq_u, times), stage(self._spans, seq_v, times)
        if self.pairing == "separate":
            return (Encoded(self._blocks(z_u, att_u, s_u), seq_u, mask_u, att_u),
                    Encoded(self._blocks(z_v, att_v, s_v), seq_v, mask_v, att_v))
        # joint: [S_u ; S_v] as one sequence (B, Lu + Lv, width), split after the blocks
        n_u = z_u.shape[1]
        cat = lambda a, b: None if a is None else torch.cat([a, b], dim=1)  # noqa: E731
        layers = self._blocks(torch.cat([z_u, z_v], 1), torch.cat([att_u, att_v], 1), cat(s_u, s_v))
        return (Encoded([h[:, :n_u] for h in layers], seq_u, mask_u, att_u),
                Encoded([h[:, n_u:] for h in layers], seq_v, mask_v, att_v))

    def readout(self, enc_u: Encoded, enc_v: Encoded) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, width) pooled states of both sides, after the cross-attention when there is one; above
        RECOMPUTE_ACTIVATIONS_MIN each cross-attention call keeps only its inputs (whole batch: the same dropout
        masks; the gate and the mean keep no more than their inputs)."""
        h_u, h_v = enc_u.layers[-1], enc_v.layers[-1]
        frugal = self._recomputes(*h_u.shape[:2]) or self._recomputes(*h_v.shape[:2])
        couple = (lambda *a: _recomputed(self.coupling, *a)) if frugal else getattr(self, "coupling", None)
        if self.cross_attention == "softmax":  # the second side attends to the updated first (DyGMamba.py:224-225)
            h_u = couple(h_u, h_v, enc_v.attend)
            h_v = couple(h_v, h_u, enc_u.attend)
        elif self.cross_attention == "elu":
            h_u, h_v = couple(h_u, h_v, enc_v.attend), couple(h_v, h_u, enc_u.attend)
        if self.readout_kind == "gate_topk":
            return (gate_topk(h_u, self.gate_u(h_u), enc_u.attend, self.top_k),
                    gate_topk(h_v, self.gate_v(h_v), enc_v.attend, self.top_k))
        return masked_mean(h_u, enc_u.mask), masked_mean(h_v, enc_v.mask)

    def pair_embeddings(self, src, dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        """Embeddings (B, d_out) of both endpoints of B candidate edges at their times."""
        h_u, h_v = self.readout(*self.encode_pair(src, dst, times))
        return self.output(h_u), self.output(h_v)


def _called(fn, *args, rows: int | None = None):
    """fn(*args), kept for backward as autograd keeps it: `_recomputed`'s counterpart below its size."""
    return fn(*args)


def _recomputed(fn, *args, rows: int | None = None):
    """fn(*args) with only its inputs kept for backward, which runs it again (torch's checkpoint, the random state
    restored, so dropout draws the same masks); with `rows`, over batch rows that many at a time (tensor arguments
    (B, ...) sliced, None passed as is), the pieces concatenated: fn must treat rows independently."""
    if rows is None or rows >= args[0].shape[0]:
        return checkpoint(fn, *args, use_reentrant=False)
    pieces = [slice(i, i + rows) for i in range(0, args[0].shape[0], rows)]
    return torch.cat([checkpoint(fn, *(None if a is None else a[s] for a in args), use_reentrant=False)
                      for s in pieces])


# ------------------------------------------------------------------ configuration

MODEL_KEYS = ("encoder", "d_T", "d_ch", "d_cooc", "max_input_sequence_length", "num_blocks", "d_state",
              "expand", "conv_kernel", "d_out", "dropout", "block_dropout", "top_k", "scan_backend")


def dyg_mamba_hparams(config: dict) -> dict:
    """Constructor arguments from a run config: the model keys, then the switches, where the named
    `variant` (params/models.yaml `variants`) sets its switches over the config's."""
    from timerepro.models.graph.defaults import with_dataset_defaults

    config = with_dataset_defaults(config)
    variants = config.get("variants", {})
    name = config.get("variant", "dyg_mamba")
    if name not in variants:
        raise KeyError(f"unknown DyG-Mamba variant {name!r} (config key 'variant'); known: {sorted(variants)}")
    switches = {k: config[k] for k in SWITCHES if k in config}
    unknown = set(variants[name]) - set(SWITCHES) - set(MODEL_KEYS)
    if unknown:
        raise KeyError(f"DyG-Mamba variant {name!r} sets unknown keys {sorted(unknown)}; switches: {sorted(SWITCHES)}")
    resolved = {**{k: config[k] for k in MODEL_KEYS if k in config}, **switches, **variants[name]}
    missing = [k for k in MODEL_KEYS if k not in resolved]
    if missing:
        raise KeyError(f"DyG-Mamba config lacks {missing} (params/models.yaml dyg_mamba defaults)")
    return dict(time_encoder=resolved["encoder"], time_dim=int(resolved["d_T"]),
                channel_dim=int(resolved["d_ch"]), cooccurrence_dim=int(resolved["d_cooc"]),
                max_input_sequence_length=int(resolved["max_input_sequence_length"]),
                num_blocks=int(resolved["num_blocks"]), d_state=int(resolved["d_state"]), expand=int(resolved["expand"]),
                conv_kernel=int(resolved["conv_kernel"]), d_out=int(resolved["d_out"]),
                dropout=float(resolved["dropout"]), block_dropout=float(resolved["block_dropout"]),
                top_k=int(resolved["top_k"]), scan_backend=resolved["scan_backend"],
                **{k: resolved[k] for k in SWITCHES if k in resolved})


def build(config: dict, data, split, train_graph) -> DyGMamba:
    """DyG-Mamba for the link-prediction task (and as the frozen backbone of node classification)."""
    from timerepro.models.graph.time_stats import train_time_stats

    hp = dyg_mamba_hparams(config)
    mean, std = train_time_stats(data, split, train_graph, max(hp["max_input_sequence_length"] - 1, 1))
    return DyGMamba(data.node_feat, data.edge_feat, time_mean=mean, time_std=std, **hp)
