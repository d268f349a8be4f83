"""Hawkes Attention (Tan et al., AISTATS 2026, sections 2.1-2.5): a THP-like encoder whose queries, keys
and values are modulated by learnable per-type kernels of the elapsed time.

For event j (type c_j, time t_j) and an earlier or equal event k, in every head:

    Q_{j,k} = W_Q x_j * phi_{c_j}(t_j - t_k)                      (Eq. 9)
    K_{k,j} = W_K x_k * phi_{c_k}(t_j - t_k)                      (Eq. 10)
    V_{k,j} = W_V x_k * phi_{c_k}(t_j - t_k)                      (Eq. 11)
    o_j     = sum_{k <= j} softmax_k(Q_{j,k} . K_{k,j} / sqrt(d_k)) V_{k,j}

phi_c is a scalar MLP of the time difference, one per event type and per head (and per layer).
Because phi is a scalar per (j, k), the modulated products never need the [B, H, L, L, d] tensors of the
authors' code: Q_{j,k} . K_{k,j} = (q_j . k_k) phiQ_{jk} phiK_{jk} and sum_k a_jk phiK_jk v_k = (a * phiK) @ v.

Intensity (Eq. 15 in the EasyTPP/THP form the authors' code uses): for t in (t_j, t_{j+1}], s = t - t_j,

    lambda_c(t) = softplus_{beta_c}(w_c * s + a_c^T h_j + mu_c),  softplus_beta(x) = log(1 + exp(beta x)) / beta

with a learnable scale beta_c per type. Decisions where the paper is silent: docs/hawkes_attention.md.
The model meets the protocol of `timerepro.tpp`: `encode(time_seqs, type_seqs) -> hidden [B, L, D]` and
`intensities_at(times_since_last [B, L, S], hidden [B, L, D]) -> [B, L, S, K]`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

KERNELS = ("mlp", "constant")  # "constant": phi == 1, the THP special case of the paper's ablation view
# "formula": softplus_beta(x) = log(1 + exp(beta x)) / beta (the paper); "easytpp": EasyTPP's ScaledSoftplus
# (easy_tpp/model/baselayer.py, copied in the authors' torch_baselayer.py:20-39), whose exp argument is clamped at
# log(1e5) below its threshold 20, so it is flat at log1p(1e5)/beta for beta x in (11.51, 20] (docs/fidelity.md)
SOFTPLUS = ("formula", "easytpp")


def causal_pad_mask(type_seqs: torch.Tensor, pad_token_id: int) -> torch.Tensor:
    """EasyTPP's mask, True = masked: key k is hidden from query j when k > j or k is padding. [B, L, L]"""
    L = type_seqs.size(1)
    causal = torch.ones(L, L, dtype=torch.bool, device=type_seqs.device).triu(1)  # [L, L]: k > j
    key_pad = (type_seqs == pad_token_id)[:, None, :]  # [B, 1, L]
    return causal[None] | key_pad


class TypeKernels(nn.Module):
    """phi_{c,h}(dt): one scalar MLP per event type c and head h, evaluated in one batched pass.

    MLP: phi_depth hidden layers of width phi_width with GELU (and dropout), then a linear read-out to 1,
    xavier-uniform weights (the authors' code). Input dt / time_scale. `shared=True` keeps one MLP per head
    for all types (Table 4). All weights are stacked: w0 [C, H, W], wh [depth-1, C, H, W, W], wo [C, H, W].
    """

    def __init__(self, num_types: int, num_heads: int, width: int, depth: int, *, dropout: float = 0.0,
                 shared: bool = False, time_scale: float = 1.0):
        super().__init__()
        if depth < 1:
            raise ValueError("phi_depth must be >= 1")
        if not time_scale > 0:
            raise ValueError(f"time_scale must be > 0, got {time_scale}")
        self.num_types, self.shared, self.dropout, self.time_scale = num_types, shared, dropout, float(time_scale)
        C = 1 if shared else num_types
        H, W = num_heads, width

        def xavier(*shape, fan_in, fan_out):
            bound = math.sqrt(6.0 / (fan_in + fan_out))
            return nn.Parameter(torch.empty(*shape).uniform_(-bound, bound))

        def bias(*shape, fan_in):  # nn.Linear's default bias initialisation
            bound = 1.0 / math.sqrt(fan_in)
            return nn.Parameter(torch.empty(*shape).uniform_(-bound, bound))

        self.w0, self.b0 = xavier(C, H, W, fan_in=1, fan_out=W), bias(C, H, W, fan_in=1)
        self.wh = xavier(depth - 1, C, H, W, W, fan_in=W, fan_out=W)
        self.bh = bias(depth - 1, C, H, W, fan_in=W)
        self.wo, self.bo = xavier(C, H, W, fan_in=W, fan_out=1), bias(C, H, fan_in=W)

    def _type_index(self, types: torch.Tensor) -> torch.Tensor:
        # padding (type K) gets kernel 0: its values only ever meet masked attention entries
        return torch.zeros_like(types) if self.shared else types.clamp(0, self.num_types - 1)

    def rowwise(self, dt: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        """phi_{types[b, r], h}(dt[b, r, n]) for every head: dt [B, R, N], types [B, R] -> [B, R, N, H]."""
        c = self._type_index(types)  # [B, R]
        x = (dt / self.time_scale)[..., None, None]  # [B, R, N, 1, 1]
        # first layer (1 -> W): [B, R, N, H, W]
        z = F.gelu(x * self.w0[c][:, :, None] + self.b0[c][:, :, None])
        z = F.dropout(z, self.dropout, self.training)
        for i in range(self.wh.size(0)):  # hidden layers (W -> W), per-row weights [B, R, H, W, W]
            z = torch.einsum("brnhw,brhwv->brnhv", z, self.wh[i][c]) + self.bh[i][c][:, :, None]
            z = F.dropout(F.gelu(z), self.dropout, self.training)
        # read-out (W -> 1): [B, R, N, H]
        return torch.einsum("brnhw,brhw->brnh", z, self.wo[c]) + self.bo[c][:, :, None]

    def forward(self, dt: torch.Tensor, types: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """dt [B, L, L] with dt[b, j, k] = t_j - t_k; returns (phiQ, phiK), each [B, H, L, L]:
        phiQ[b, h, j, k] = phi_{c_j, h}(dt_jk) (query's type), phiK[b, h, j, k] = phi_{c_k, h}(dt_jk) (key's type)."""
        phi_q = self.rowwise(dt, types).permute(0, 3, 1, 2)  # rows = queries j
        phi_k = self.rowwise(dt.transpose(1, 2), types).permute(0, 3, 2, 1)  # rows = keys k, back to [B, H, j, k]
        return phi_q, phi_k

    @torch.no_grad()
    def curves(self, dt: torch.Tensor) -> torch.Tensor:
        """phi_{c,h} on a grid dt [G] -> [C, H, G] (Figure 2); C = 1 when shared."""
        C = self.w0.size(0)
        types = torch.arange(C, device=dt.device)[None]  # [1, C]
        was_training, self.training = self.training, False  # no dropout in the curves
        try:
            return self.rowwise(dt.expand(1, C, -1), types)[0].permute(0, 2, 1)
        finally:
            self.training = was_training


class HawkesMultiHeadAttention(nn.Module):
    """Masked multi-head attention with time-modulated queries, keys and values (Eqs. 9-11).

    THP's sub-layer as in the authors' code: layer norm on the query input only, output projection,
    dropout, residual on the un-normalized input.
    """

    def __init__(self, num_types: int, d_model: int, num_heads: int, d_k: int, d_v: int, *, phi_width: int,
                 phi_depth: int, dropout: float = 0.1, shared_phi: bool = False, kernel: str = "mlp",
                 time_scale: float = 1.0):
        super().__init__()
        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
        self.h, self.d_k, self.d_v, self.kernel = num_heads, d_k, d_v, kernel
        self.w_q = nn.Linear(d_model, num_heads * d_k, bias=False)
        self.w_k = nn.Linear(d_model, num_heads * d_k, bias=False)
        self.w_v = nn.Linear(d_model, num_heads * d_v, bias=False)
        self.fc = nn.Linear(num_heads * d_v, d_model, bias=False)
        for lin in (self.w_q, self.w_k, self.w_v, self.fc):
            nn.init.xavier_uniform_(lin.weight)
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.dropout = nn.Dropout(dropout)
        self.phi = (TypeKernels(num_types, num_heads, phi_width, phi_depth, dropout=dropout, shared=shared_phi,
                                time_scale=time_scale) if kernel == "mlp" else None)

    def attend(self, xq: torch.Tensor, xkv: torch.Tensor, times: torch.Tensor, types: torch.Tensor,
               mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The modulated attention alone: queries from xq, keys/values from xkv [B, L, D]; times [B, L],
        types [B, L], mask [B, L, L] (True = masked). Returns (heads concatenated [B, L, H*d_v], weights [B, H, L, L])."""
        B, L, _ = xq.shape
        # [B, H, L, d]
        q = self.w_q(xq).view(B, L, self.h, self.d_k).transpose(1, 2)
        k = self.w_k(xkv).view(B, L, self.h, self.d_k).transpose(1, 2)
        v = self.w_v(xkv).view(B, L, self.h, self.d_v).transpose(1, 2)
        # [B, H, L, L]: q_j . k_k / sqrt(d_k)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        phi_k = None
        if self.phi is not None:
            # [B, L, L]: dt_jk = t_j - t_k, zeroed where masked (future or padding: those entries are never used)
            dt = (times[:, :, None] - times[:, None, :]).masked_fill(mask, 0.0)
            phi_q, phi_k = self.phi(dt, types)  # [B, H, L, L] each
            scores = scores * phi_q * phi_k  # Q_{j,k} . K_{k,j}
        scores = scores.masked_fill(mask[:, None], float("-inf"))
        attn = self.dropout(torch.softmax(scores, dim=-1))  # [B, H, L, L]
        # V_{k,j} = v_k phi_{c_k}(dt_jk): sum_k a_jk V_{k,j} = (a * phiK) @ v
        weights = attn if phi_k is None else attn * phi_k
        out = (weights @ v).transpose(1, 2).reshape(B, L, self.h * self.d_v)
        return out, attn

    def forward(self, x: torch.Tensor, times: torch.Tensor, types: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        # THP's sub-layer (authors' code): only the query input is layer-normalized; residual on the raw input
        out, _ = self.attend(self.layer_norm(x), x, times, types, mask)
        return x + self.dropout(self.fc(out))


class PositionwiseFeedForward(nn.Module):
    """THP's FFN as configured in the authors' encoder: GELU, dropout, residual, then layer norm (post-LN)."""

    def __init__(self, d_model: int, d_inner: int, dropout: float = 0.1):
        super().__init__()
        self.w_1, self.w_2 = nn.Linear(d_model, d_inner), nn.Linear(d_inner, d_model)
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dropout(self.w_2(self.dropout(F.gelu(self.w_1(x)))))
        return self.layer_norm(x + y)


class EncoderLayer(nn.Module):
    def __init__(self, num_types, d_model, d_inner, num_heads, d_k, d_v, *, phi_width, phi_depth, dropout,
                 shared_phi, kernel, time_scale):
        super().__init__()
        self.attn = HawkesMultiHeadAttention(num_types, d_model, num_heads, d_k, d_v, phi_width=phi_width,
                                             phi_depth=phi_depth, dropout=dropout, shared_phi=shared_phi,
                                             kernel=kernel, time_scale=time_scale)
        self.ffn = PositionwiseFeedForward(d_model, d_inner, dropout)

    def forward(self, x, times, types, mask, non_pad):  # non_pad [B, L, 1]
        x = self.attn(x, times, types, mask) * non_pad
        return self.ffn(x) * non_pad


def temporal_encoding(times: torch.Tensor, d_model: int) -> torch.Tensor:
    """THP's sinusoidal encoding of the event time: [B, L] -> [B, L, d_model], sin on even, cos on odd features,
    frequency 10000^(-2 floor(i/2) / d_model)."""
    i = torch.arange(d_model, device=times.device)
    freq = torch.exp(2 * torch.div(i, 2, rounding_mode="floor").float() * -(math.log(10000.0) / d_model))
    arg = times[..., None] * freq  # [B, L, d_model]
    return torch.where(i % 2 == 0, torch.sin(arg), torch.cos(arg))


class HawkesAttention(nn.Module):
    """Hawkes Attention for marked temporal point processes (K event types, padding id K as in EasyTPP).

    Structure (Table 7): d_model 64, d_inner 128, d_k = d_v = 64, 2 layers, 2 heads; per dataset (Table 8):
    phi_width, phi_depth, d_rnn (None = no RNN layer). Options: `shared_phi` (Table 4: one kernel per head for
    all types), `positional_encoding` (Table 5: THP's temporal encoding added before every layer),
    `kernel="constant"` (phi == 1: unmodulated attention), `time_scale` (phi sees dt / time_scale).
    """

    def __init__(self, num_event_types: int, *, d_model: int = 64, d_inner: int = 128, d_k: int = 64, d_v: int = 64,
                 num_layers: int = 2, num_heads: int = 2, phi_width: int = 8, phi_depth: int = 2,
                 dropout: float = 0.1, d_rnn: int | None = None, shared_phi: bool = False,
                 positional_encoding: bool = False, kernel: str = "mlp", time_scale: float = 1.0,
                 softplus: str = "formula"):
        super().__init__()
        if softplus not in SOFTPLUS:
            raise ValueError(f"softplus must be one of {SOFTPLUS}, got {softplus!r}")
        self.softplus = softplus
        K = int(num_event_types)
        self.num_event_types, self.pad_token_id, self.d_model = K, K, d_model
        self.positional_encoding = positional_encoding
        self.type_emb = nn.Embedding(K + 1, d_model, padding_idx=K)
        self.layers = nn.ModuleList([
            EncoderLayer(K, d_model, d_inner, num_heads, d_k, d_v, phi_width=phi_width, phi_depth=phi_depth,
                         dropout=dropout, shared_phi=shared_phi, kernel=kernel, time_scale=time_scale)
            for _ in range(num_layers)])
        self.rnn = nn.LSTM(d_model, d_rnn, batch_first=True) if d_rnn else None
        self.rnn_proj = nn.Linear(d_rnn, d_model) if d_rnn else None
        # intensity read-out: a_c^T h + mu_c (linear with bias), w_c s (THP's "current" term), softplus scale beta_c
        self.intensity = nn.Linear(d_model, K)
        self.decay = nn.Parameter(torch.empty(1, K))
        nn.init.xavier_normal_(self.decay)
        self.log_beta = nn.Parameter(torch.zeros(K))

    def encode(self, time_seqs: torch.Tensor, type_seqs: torch.Tensor,
               attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Hidden state h_j after each event j, from events k <= j: [B, L] times and types -> [B, L, d_model].

        The causal + key-padding mask is always built from type_seqs; an EasyTPP attention_mask (True = masked)
        can only hide more.
        """
        mask = causal_pad_mask(type_seqs, self.pad_token_id)
        if attention_mask is not None:
            mask = mask | attention_mask.bool()
        non_pad = (type_seqs != self.pad_token_id).unsqueeze(-1).to(self.type_emb.weight.dtype)  # [B, L, 1]
        x = self.type_emb(type_seqs)  # [B, L, D]
        pe = temporal_encoding(time_seqs, self.d_model) * non_pad if self.positional_encoding else None
        for layer in self.layers:
            if pe is not None:
                x = x + pe
            x = layer(x, time_seqs, type_seqs, mask, non_pad)
        if self.rnn is not None:
            lengths = non_pad[..., 0].sum(1).long().clamp(min=1).cpu()
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            out, _ = self.rnn(packed)
            x = self.rnn_proj(nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.size(1))[0])
        return x

    forward = encode

    def optimizer_param_groups(self, phi_weight_decay: float) -> list[dict]:
        """Adam parameter groups of the authors' code: L2 weight decay (Table 8's "decay") on the kernel MLPs only."""
        phi = [p for n, p in self.named_parameters() if ".phi." in n]
        rest = [p for n, p in self.named_parameters() if ".phi." not in n]
        return [{"params": phi, "weight_decay": float(phi_weight_decay)}, {"params": rest, "weight_decay": 0.0}]

    def scaled_softplus(self, x: torch.Tensor) -> torch.Tensor:
        """softplus_beta(x) = log(1 + exp(beta x)) / beta per type (x [..., K]); linear above beta x = 20.
        With softplus="easytpp", EasyTPP's clamped form (see SOFTPLUS)."""
        beta = self.log_beta.exp()
        if self.softplus == "easytpp":
            bx = beta * x
            return torch.where(bx <= 20.0, torch.log1p(bx.clamp(max=math.log(1e5)).exp()) / beta, x)
        return F.softplus(beta * x) / beta

    def intensities_at(self, times_since_last: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """lambda_c(t_j + s) for s = times_since_last[b, j, n] >= 0: [B, L, S], hidden [B, L, D] -> [B, L, S, K]."""
        base = self.intensity(hidden)[:, :, None, :]  # [B, L, 1, K]
        return self.scaled_softplus(self.decay * times_since_last[..., None] + base)

    def kernel_curves(self, dt: torch.Tensor) -> torch.Tensor:
        """phi on a grid dt [G] for every layer, type and head: [num_layers, C, H, G] (Figure 2)."""
        if self.layers[0].attn.phi is None:
            raise ValueError("kernel='constant' has no kernels")
        return torch.stack([layer.attn.phi.curves(dt) for layer in self.layers])
