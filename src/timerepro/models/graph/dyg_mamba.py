"""DyG-Mamba (Li et al. 2024, arXiv 2408.06966v1): a selective state space model over each node's first-hop
history whose step size comes from the time spans between interactions. docs/dyg_mamba.md lists every
decision (A01-A19) with its source.

For a candidate edge (u, v, tau):

    sequence   [padding..., the L-1 most recent interactions before tau (oldest first), u itself at tau]
    Z_u        = [Z_V ; Z_E ; Z_T ; Z_C]   node, edge, X_T = cos(omega (tau - t_j)) (fixed omega) and
                 co-occurrence (Eq. 3) channels, each projected to d (Eq. 4): width 4d
    r_k        normalised spans (t_k - t_(k-1)) / (tau - t_1), r_1 = 1 / (tau - t_1)      (A01)
    s_k        = SiLU(Linear(cos(omega r_k)))                          time-span control signal (Eq. 5)
    block      Z' = LN(Z); x = W_x Z'; z = W_z Z'; x' = SiLU(CausalConv1d(x))          (Eq. 6)
               Delta = softplus(W_Delta s + b_Delta); B = W_B x'; C = W_C x'           (Eq. 7, Alg. 1)
               y = SSM(x'; A, B, C, Delta), A = -exp(A_log) diagonal (S4D-real)       (Eqs. 2, 8)
               Z <- Z + Drop((y * SiLU(z)) W_out + b_out)                             (Eq. 9, residual)
    coupling   Q_u = Z_u W_Q, K_v = Z_v W_K, V_v = Z_v W_V; phi = elu + 1               (Eqs. 10-12)
               O_u[i] = phi(Q_u[i]) sum_j phi(K_v[j]) V_v[j]^T / (phi(Q_u[i]) . sum_j phi(K_v[j]))
               H_u = LN(Linear(O_u + Q_u))                                            (Eq. 13)
    read-out   h_u = Linear(mean_i H_u[i]) (d_out), scored with [h_u ; h_v] by DyGLib's MLP   (Eq. 14, A05)

Padding sits on the left and is masked: the SSM input is zero there, so the state stays zero until the
first real interaction and a padded row gives exactly the output of the unpadded sequence; the conv sees
zeros before the first real entry (Mamba's own left padding); cross-attention and the mean skip padding.

Switches (params/models.yaml `variants` name the paper's ablations, Table 5 and Figures 1, 5, 11):
`time_span` (Delta from the spans, else from the input: s = SiLU(Linear(x'))), `selective` (else Delta, B,
C are learned constants, S4-style), `bc_source` ("data" or "time": B, C from the span signal),
`time_encoding` (the Z_T channel), `cooccurrence` (the Z_C channel), `cross_attention` ("cross" or
"none"), `pairing` ("separate" sequences, or "joint": [S_u ; S_v] through one scan, DyGFormer's layout,
the vanilla Mamba of Figure 1), `bidirectional` (Algorithm 1's forward + backward scans), `zoh`
("simplified" B_bar = Delta B as Algorithm 1 and mamba_ssm, or "exact", Eq. 8).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from timerepro.encoders import TimeSpanControl, make_encoder, time_spans
from timerepro.graphs.cooccurrence import cooccurrence_counts
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.dropout import Dropout
from timerepro.models.graph.dygformer import CooccurrenceEncoder
from timerepro.models.graph.selective_scan import BACKENDS, ZOH, causal_conv1d, selective_scan

CROSS_ATTENTION = ("cross", "none")
PAIRING = ("separate", "joint")
BC_SOURCES = ("data", "time")
SWITCHES = {  # switch -> allowed values (booleans for the rest)
    "time_span": (True, False), "selective": (True, False), "time_encoding": (True, False),
    "cooccurrence": (True, False), "bidirectional": (True, False), "cross_attention": CROSS_ATTENTION,
    "pairing": PAIRING, "bc_source": BC_SOURCES, "zoh": ZOH,
}


# ------------------------------------------------------------------ sequences

class Sequence(NamedTuple):
    """Left-padded sequences (B, W): ids, edge ids, times, valid mask; the node itself in the last column."""

    neighbor_ids: np.ndarray
    edge_ids: np.ndarray
    times: np.ndarray
    valid: np.ndarray


def mamba_sequences(neighbors: TemporalNeighbors, nodes, times, max_input_sequence_length: int) -> Sequence:
    """[0 ..., the L-1 most recent interactions before t (oldest first), the node itself at t (edge 0)].

    The width is the longest kept history of the batch + 1 (<= L): masking makes the outputs at the real
    positions independent of the width, so a batch need not pay for L when its histories are shorter."""
    if max_input_sequence_length < 1:
        raise ValueError("max_input_sequence_length must be >= 1 (the node itself)")
    nodes = np.asarray(nodes, dtype=np.int64)
    times = np.asarray(times, dtype=np.float64)
    keep = max_input_sequence_length - 1
    longest = int(np.minimum(neighbors.count_before(nodes, times), keep).max()) if len(nodes) and keep else 0
    batch = len(nodes)
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


# ------------------------------------------------------------------ layers

def inverse_softplus(x: torch.Tensor) -> torch.Tensor:
    return x + torch.log(-torch.expm1(-x))


class MambaBlock(nn.Module):
    """One DyG-Mamba block (Eqs. 6-9 with Algorithm 1's pre-norm and residual); see the module docstring."""

    def __init__(self, width: int, *, d_state: int = 16, expand: int = 2, conv_kernel: int = 4, dropout: float = 0.1,
                 time_span: bool = True, selective: bool = True, bc_source: str = "data", zoh: str = "simplified",
                 bidirectional: bool = False, scan_backend: str = "auto"):
        super().__init__()
        inner = expand * width
        self.time_span, self.selective, self.bc_source, self.zoh = time_span, selective, bc_source, zoh
        self.bidirectional, self.scan_backend = bidirectional, scan_backend
        self.norm = nn.LayerNorm(width)
        self.in_x, self.in_z = nn.Linear(width, inner), nn.Linear(width, inner)
        self.out = nn.Linear(inner, width)
        self.dropout = Dropout(dropout)
        self.directions = nn.ModuleList(_Direction(width, inner, d_state, conv_kernel, self)
                                        for _ in range(2 if bidirectional else 1))

    def forward(self, z_in: torch.Tensor, mask: torch.Tensor, span_signal: torch.Tensor | None) -> torch.Tensor:
        """z_in (B, L, width), mask (B, L) bool, span_signal (B, L, width) or None -> (B, L, width)."""
        h = self.norm(z_in)
        x = self.in_x(h) * mask.unsqueeze(-1)  # (B, L, inner); zeros at padding
        gate = F.silu(self.in_z(h))  # (B, L, inner)
        y = self.directions[0](x, mask, span_signal)
        if self.bidirectional:  # Algorithm 1: the same block on the reversed sequence, outputs summed
            flip = lambda t: None if t is None else t.flip(1)  # noqa: E731
            y = y + self.directions[1](x.flip(1), mask.flip(1), flip(span_signal)).flip(1)
        return z_in + self.dropout(self.out(y * gate))


class _Direction(nn.Module):
    """Conv, Delta, B, C and A of one scan direction (Algorithm 1's per-direction parameters)."""

    def __init__(self, width: int, inner: int, d_state: int, conv_kernel: int, block: MambaBlock):
        super().__init__()
        self.cfg = {k: getattr(block, k) for k in ("time_span", "selective", "bc_source", "zoh", "scan_backend")}
        self.conv = nn.Conv1d(inner, inner, conv_kernel, groups=inner)
        # A = -exp(A_log), A_log[d, n] = log(n + 1): S4D-real, eigenvalues real and negative (A07)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, d_state + 1, dtype=torch.float32)).repeat(inner, 1))
        # Delta = softplus(W s + b); b initialised so that softplus(b) ~ logU(1e-3, 1e-1) (Mamba's dt init)
        dt = torch.exp(torch.rand(inner) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3)).clamp(min=1e-4)
        if self.cfg["selective"]:
            if not self.cfg["time_span"]:  # w/o time span: s = SiLU(Linear(x')) from the input (vanilla Mamba)
                self.data_signal = nn.Linear(inner, width)
            self.dt_proj = nn.Linear(width, inner)
            with torch.no_grad():
                self.dt_proj.bias.copy_(inverse_softplus(dt))
            bc_in = inner if self.cfg["bc_source"] == "data" else width
            self.B, self.C = nn.Linear(bc_in, d_state, bias=False), nn.Linear(bc_in, d_state, bias=False)
        else:  # S4-style: Delta, B, C learned constants per channel
            self.dt_bias = nn.Parameter(inverse_softplus(dt))
            self.B = nn.Parameter(torch.randn(inner, d_state) / math.sqrt(d_state))
            self.C = nn.Parameter(torch.randn(inner, d_state) / math.sqrt(d_state))

    def forward(self, x: torch.Tensor, mask: torch.Tensor, span_signal: torch.Tensor | None) -> torch.Tensor:
        """x (B, L, inner) zero at padding -> y (B, L, inner)."""
        m = mask.unsqueeze(-1)
        xc = F.silu(causal_conv1d(x, self.conv.weight, self.conv.bias)) * m  # x' (B, L, inner), Eq. 6
        A = -torch.exp(self.A_log)  # (inner, N)
        if self.cfg["selective"]:
            if self.cfg["time_span"]:
                signal = span_signal  # (B, L, width), Eq. 5
            else:
                signal = F.silu(self.data_signal(xc))
            delta = F.softplus(self.dt_proj(signal))  # (B, L, inner)
            bc_in = xc if self.cfg["bc_source"] == "data" else span_signal
            B, C = self.B(bc_in), self.C(bc_in)  # (B, L, N) each: data- or time-dependent
        else:
            delta = F.softplus(self.dt_bias).expand_as(xc)
            B, C = self.B, self.C  # (inner, N)
        return selective_scan(xc, delta, A, B, C, zoh=self.cfg["zoh"], backend=self.cfg["scan_backend"])


class LinearCrossAttention(nn.Module):
    """Eqs. 10-13 with Q from one sequence and K, V from the other (A04): O = phi(Q) (phi(K)^T V) / (phi(Q) .
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


# ------------------------------------------------------------------ the model

class Encoded(NamedTuple):
    """One side of a pair after the blocks: hidden states per layer (B, L, w), the sequence and its mask."""

    layers: list
    seq: Sequence
    mask: torch.Tensor


class DyGMamba(nn.Module):
    """DyG-Mamba backbone: embeddings (B, d_out) of both endpoints of B candidate edges (see the module docstring).

    node_feat (N+1, d_node), edge_feat (E+1, d_edge): padded feature tables (row 0 = padding), buffers."""

    def __init__(self, node_feat: np.ndarray, edge_feat: np.ndarray, *, time_encoder: str = "fixed_cosine",
                 time_dim: int = 100, time_mean: float = 0.0, time_std: float = 1.0, channel_dim: int = 50,
                 cooccurrence_dim: int = 50, max_input_sequence_length: int = 32, num_blocks: int = 2,
                 d_state: int = 16, expand: int = 2, conv_kernel: int = 4, d_out: int = 172, dropout: float = 0.1,
                 time_span: bool = True, selective: bool = True, bc_source: str = "data", time_encoding: bool = True,
                 cooccurrence: bool = True, cross_attention: str = "cross", pairing: str = "separate",
                 bidirectional: bool = False, zoh: str = "simplified", scan_backend: str = "auto"):
        super().__init__()
        for key, value in dict(time_span=time_span, selective=selective, bc_source=bc_source, zoh=zoh,
                               time_encoding=time_encoding, cooccurrence=cooccurrence, cross_attention=cross_attention,
                               pairing=pairing, bidirectional=bidirectional).items():
            if value not in SWITCHES[key]:
                raise ValueError(f"DyG-Mamba switch {key}={value!r} is not one of {SWITCHES[key]}")
        if scan_backend not in BACKENDS:
            raise ValueError(f"DyG-Mamba scan_backend={scan_backend!r} is not one of {BACKENDS}")
        if bc_source == "time" and not (selective and time_span):
            raise ValueError("bc_source='time' needs the time-span signal (selective and time_span true)")
        if pairing == "joint" and cross_attention != "none":
            raise ValueError("pairing='joint' (one sequence for both nodes) has no cross-attention: set cross_attention='none'")
        if max_input_sequence_length < 1 or num_blocks < 0:
            raise ValueError("max_input_sequence_length >= 1 and num_blocks >= 0 are required")
        self.register_buffer("node_feat", torch.as_tensor(np.asarray(node_feat), dtype=torch.float32), persistent=False)
        self.register_buffer("edge_feat", torch.as_tensor(np.asarray(edge_feat), dtype=torch.float32), persistent=False)
        self.node_dim, self.edge_dim = self.node_feat.shape[1], self.edge_feat.shape[1]
        self.max_input_sequence_length = max_input_sequence_length
        self.time_mean, self.time_std = float(time_mean), float(time_std)
        self.time_encoding, self.use_cooccurrence = time_encoding, cooccurrence
        self.cross_attention, self.pairing, self.time_span = cross_attention, pairing, time_span
        self.needs_spans = (time_span and selective) or bc_source == "time"
        self.time_encoder = make_encoder(time_encoder, time_dim, mean=time_mean, std=time_std)
        proj = {"node": nn.Linear(self.node_dim, channel_dim), "edge": nn.Linear(self.edge_dim, channel_dim)}
        if time_encoding:
            proj["time"] = nn.Linear(time_dim, channel_dim)
        if cooccurrence:
            self.cooccurrence = CooccurrenceEncoder(cooccurrence_dim)  # f of Eq. 3 (2-layer MLP, summed)
            proj["cooccurrence"] = nn.Linear(cooccurrence_dim, channel_dim)  # W_C, b_C
        self.projection = nn.ModuleDict(proj)
        self.width = channel_dim * len(proj)  # 4d (3d without one channel)
        if self.needs_spans:
            self.span_signal = TimeSpanControl(time_dim, self.width)  # Eq. 5, shared by the blocks
        self.blocks = nn.ModuleList(MambaBlock(self.width, d_state=d_state, expand=expand, conv_kernel=conv_kernel,
                                               dropout=dropout, time_span=time_span, selective=selective,
                                               bc_source=bc_source, zoh=zoh, bidirectional=bidirectional,
                                               scan_backend=scan_backend) for _ in range(num_blocks))
        self.final_norm = nn.LayerNorm(self.width)
        if cross_attention == "cross":
            self.coupling = LinearCrossAttention(self.width, dropout)
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
        return mamba_sequences(self.neighbors, nodes, times, self.max_input_sequence_length)

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
        r = time_spans(seq.times, times, seq.valid)  # (B, L) float64
        return self.span_signal(torch.from_numpy(r).float().to(self.node_feat.device))  # (B, L, width)

    def _blocks(self, z: torch.Tensor, mask: torch.Tensor, spans: torch.Tensor | None) -> list:
        out = [z]
        for block in self.blocks:
            z = block(z, mask, spans)
            out.append(z)
        out[-1] = self.final_norm(z)
        return out

    def encode_pair(self, src, dst, times) -> tuple[Encoded, Encoded]:
        """Both sides through the blocks: the hidden states of every layer (input first, last normalised)."""
        times = np.asarray(times, dtype=np.float64)
        seq_u, seq_v = self.sequences(src, times), self.sequences(dst, times)
        counts_u = counts_v = None
        if self.use_cooccurrence:
            counts_u, counts_v = cooccurrence_counts(seq_u.neighbor_ids, seq_v.neighbor_ids)  # (B, L, 2) each
        device = self.node_feat.device
        mask_u, mask_v = torch.from_numpy(seq_u.valid).to(device), torch.from_numpy(seq_v.valid).to(device)
        z_u, z_v = self._inputs(seq_u, times, counts_u), self._inputs(seq_v, times, counts_v)
        s_u, s_v = self._spans(seq_u, times), self._spans(seq_v, times)
        if self.pairing == "separate":
            return (Encoded(self._blocks(z_u, mask_u, s_u), seq_u, mask_u),
                    Encoded(self._blocks(z_v, mask_v, s_v), seq_v, mask_v))
        # joint: [S_u ; S_v] as one sequence (B, Lu + Lv, width), split after the blocks
        n_u = z_u.shape[1]
        cat = lambda a, b: None if a is None else torch.cat([a, b], dim=1)  # noqa: E731
        layers = self._blocks(torch.cat([z_u, z_v], 1), torch.cat([mask_u, mask_v], 1), cat(s_u, s_v))
        return (Encoded([h[:, :n_u] for h in layers], seq_u, mask_u), Encoded([h[:, n_u:] for h in layers], seq_v, mask_v))

    def readout(self, enc_u: Encoded, enc_v: Encoded) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, width) pooled states of both sides, after the cross-attention when there is one."""
        h_u, h_v = enc_u.layers[-1], enc_v.layers[-1]
        if self.cross_attention == "cross":
            h_u, h_v = self.coupling(h_u, h_v, enc_v.mask), self.coupling(h_v, h_u, enc_u.mask)
        return masked_mean(h_u, enc_u.mask), masked_mean(h_v, enc_v.mask)

    def pair_embeddings(self, src, dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        """Embeddings (B, d_out) of both endpoints of B candidate edges at their times."""
        h_u, h_v = self.readout(*self.encode_pair(src, dst, times))
        return self.output(h_u), self.output(h_v)


# ------------------------------------------------------------------ configuration

MODEL_KEYS = ("encoder", "d_T", "d_ch", "d_cooc", "max_input_sequence_length", "num_blocks", "d_state",
              "expand", "conv_kernel", "d_out", "dropout", "scan_backend")


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
                dropout=float(resolved["dropout"]), scan_backend=resolved["scan_backend"],
                **{k: resolved[k] for k in SWITCHES if k in resolved})


def build(config: dict, data, split, train_graph) -> DyGMamba:
    """DyG-Mamba for the link-prediction task (and as the frozen backbone of node classification)."""
    from timerepro.models.graph.time_stats import train_time_stats

    hp = dyg_mamba_hparams(config)
    mean, std = train_time_stats(data, split, train_graph, max(hp["max_input_sequence_length"] - 1, 1))
    return DyGMamba(data.node_feat, data.edge_feat, time_mean=mean, time_std=std, **hp)
