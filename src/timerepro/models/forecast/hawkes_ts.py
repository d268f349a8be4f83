"""Hawkes Attention, time-series variant (Tan et al., AISTATS 2026, Appendix C.2, Eq. 21).

Encoder-only forecaster on raw multivariate observations. In every head of every layer, for tokens j, k
with times t_j, t_k and separate scalar kernels for queries, keys and values (shared by all tokens):

    Q_{j,k} = W_Q v_j phi_Q(t_j - t_k)
    K_{k,j} = W_K v_k phi_K(t_j - t_k)
    V_{k,j} = W_V v_k phi_V(t_j - t_k)
    o_j     = sum_k softmax_k(Q_{j,k} . K_{k,j} / sqrt(d)) V_{k,j}

phi is a scalar per (j, k, head), so Q_{j,k} . K_{k,j} = (q_j . k_k) phiQ_jk phiK_jk and
sum_k a_jk V_{k,j} = (a * phiV) @ v: no [B, H, N, N, d] tensors. The kernel MLPs are the event model's
`TypeKernels` with a single shared "type", evaluated once per distinct t_j - t_k (the kernel's dropout mask
is therefore shared by the pairs with the same lag). Token layouts (`tokens`):

* "temporal" (default): one token per time step of the length-seq_len history (its V observations embedded
  linearly); t_j - t_k is the lag in sampling steps, divided by seq_len. The projection maps the token axis to
  the horizon, then d_model to the V variates.
* "inverted": iTransformer's tokens, one per variate (its whole history embedded linearly); every token has
  the same time stamps, so t_j - t_k = 0 and each kernel is a learned constant phi(0) per head.

No positional encodings. Decisions where the paper is silent: docs/hawkes_attention.md (time-series section).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from timerepro.models.tpp.hawkes_attention import KERNELS, TypeKernels

TOKENS = ("temporal", "inverted")


class TimeKernel(nn.Module):
    """phi_h(dt): one scalar MLP per head, shared by all tokens (the event model's kernels with one type)."""

    def __init__(self, num_heads: int, width: int, depth: int, *, dropout: float = 0.0, time_scale: float = 1.0):
        super().__init__()
        self.mlp = TypeKernels(1, num_heads, width, depth, dropout=dropout, shared=True, time_scale=time_scale)

    def forward(self, lags: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """phi on the distinct time differences lags [U], spread back by index [N, N] -> phi [H, N, N]."""
        types = torch.zeros(1, 1, dtype=torch.long, device=lags.device)
        phi = self.mlp.rowwise(lags[None, None], types)[0, 0]  # [1, 1, U, H] -> [U, H]
        return phi[index].permute(2, 0, 1)  # [N, N, H] -> [H, N, N]


class HawkesTSAttention(nn.Module):
    """Multi-head attention of Eq. 21: separate kernels phi_Q, phi_K, phi_V of t_j - t_k (no mask)."""

    def __init__(self, d_model: int, num_heads: int, *, phi_width: int, phi_depth: int, dropout: float = 0.1,
                 kernel: str = "mlp", time_scale: float = 1.0):
        super().__init__()
        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
        if d_model % num_heads:
            raise ValueError(f"d_model {d_model} is not divisible by n_heads {num_heads}")
        self.h, self.d = num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, d_model, bias=False)
        self.w_v = nn.Linear(d_model, d_model, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.kernels = None
        if kernel == "mlp":
            self.kernels = nn.ModuleDict({name: TimeKernel(num_heads, phi_width, phi_depth, dropout=dropout,
                                                           time_scale=time_scale) for name in ("q", "k", "v")})

    def forward(self, x: torch.Tensor, dt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x [B, N, D], dt [N, N] with dt[j, k] = t_j - t_k -> (output [B, N, D], weights [B, H, N, N])."""
        B, N, D = x.shape
        # [B, H, N, d]
        q = self.w_q(x).view(B, N, self.h, self.d).transpose(1, 2)
        k = self.w_k(x).view(B, N, self.h, self.d).transpose(1, 2)
        v = self.w_v(x).view(B, N, self.h, self.d).transpose(1, 2)
        # [B, H, N, N]: q_j . k_k / sqrt(d)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        phi_v = None
        if self.kernels is not None:
            # dt holds few distinct values (2N - 1 lags for time-step tokens, one for variate tokens):
            # the MLPs run on those only; lags [U], index [N, N]
            lags, index = torch.unique(dt, return_inverse=True)
            phi_q, phi_k, phi_v = (self.kernels[name](lags, index) for name in ("q", "k", "v"))  # [H, N, N] each
            scores = scores * (phi_q * phi_k)[None]  # Q_{j,k} . K_{k,j}
        attn = self.dropout(torch.softmax(scores, dim=-1))  # [B, H, N, N]
        weights = attn if phi_v is None else attn * phi_v[None]  # sum_k a_jk phiV_jk v_k
        out = (weights @ v).transpose(1, 2).reshape(B, N, D)
        return out, attn


class EncoderLayer(nn.Module):
    """iTransformer's encoder layer with Eq. 21 attention: x + drop(attn) -> LN -> FFN residual -> LN."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, *, phi_width: int, phi_depth: int, dropout: float,
                 kernel: str, time_scale: float):
        super().__init__()
        self.attn = HawkesTSAttention(d_model, num_heads, phi_width=phi_width, phi_depth=phi_depth, dropout=dropout,
                                      kernel=kernel, time_scale=time_scale)
        self.ff1, self.ff2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)  # iTransformer's 1x1 convolutions
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, dt: torch.Tensor) -> torch.Tensor:
        out, _ = self.attn(x, dt)
        x = self.norm1(x + self.dropout(out))
        y = self.dropout(self.ff2(self.dropout(F.gelu(self.ff1(x)))))
        return self.norm2(x + y)


class HawkesTS(nn.Module):
    """Forecaster: x [B, seq_len, V] (scaled history) -> [B, pred_len, V]."""

    def __init__(self, n_vars: int, seq_len: int, pred_len: int, *, d_model: int = 64, n_heads: int = 2,
                 e_layers: int = 2, d_ff: int | None = None, phi_width: int = 8, phi_depth: int = 2,
                 dropout: float = 0.1,
                 tokens: str = "temporal", kernel: str = "mlp", use_norm: bool = True):
        super().__init__()
        if tokens not in TOKENS:
            raise ValueError(f"tokens must be one of {TOKENS}, got {tokens!r}")
        self.seq_len, self.pred_len, self.tokens, self.use_norm = seq_len, pred_len, tokens, use_norm
        d_ff = d_ff or d_model  # iTransformer's scripts set d_ff = d_model
        n_tokens = seq_len if tokens == "temporal" else n_vars
        self.embed = nn.Linear(n_vars if tokens == "temporal" else seq_len, d_model)
        self.embed_dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(EncoderLayer(d_model, n_heads, d_ff, phi_width=phi_width, phi_depth=phi_depth,
                                                 dropout=dropout, kernel=kernel, time_scale=float(seq_len))
                                    for _ in range(e_layers))
        self.norm = nn.LayerNorm(d_model)  # iTransformer's final encoder norm
        if tokens == "temporal":
            self.to_horizon = nn.Linear(seq_len, pred_len)  # token axis: seq_len steps -> pred_len steps
            self.to_vars = nn.Linear(d_model, n_vars)
        else:
            self.to_horizon = nn.Linear(d_model, pred_len)  # iTransformer's projector
        # dt[j, k] = t_j - t_k in sampling steps (temporal); all zero for variate tokens (same time stamps)
        steps = torch.arange(n_tokens, dtype=torch.float32) if tokens == "temporal" else torch.zeros(n_tokens)
        self.register_buffer("dt", steps[:, None] - steps[None, :], persistent=False)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Scaled history [B, seq_len, V] -> token states [B, N, d_model]."""
        tokens = x if self.tokens == "temporal" else x.transpose(1, 2)  # [B, N, V] or [B, V, seq_len]
        h = self.embed_dropout(self.embed(tokens))
        for layer in self.layers:
            h = layer(h, self.dt)
        return self.norm(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.use_norm:  # iTransformer's per-window normalization (use_norm=True), undone at the output
            mean = x.mean(1, keepdim=True).detach()  # [B, 1, V]
            std = torch.sqrt(x.var(1, keepdim=True, unbiased=False) + 1e-5).detach()
            x = (x - mean) / std
        h = self.encode(x)
        if self.tokens == "temporal":
            y = self.to_vars(self.to_horizon(h.transpose(1, 2)).transpose(1, 2))  # [B, D, L] -> [B, P, D] -> [B, P, V]
        else:
            y = self.to_horizon(h).transpose(1, 2)  # [B, V, P] -> [B, P, V]
        return y * std + mean if self.use_norm else y
