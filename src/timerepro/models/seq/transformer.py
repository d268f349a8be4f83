"""DyGFormer's transformer layer (linear_time, Appendix A.2) and the synthetic-task classifier.

Pre-LN layer, single head as the equations are written:
    Q, K, V = LN(Z) W_Q, LN(Z) W_K, LN(Z) W_V
    O = softmax(Q K^T / sqrt(d_h) + mask) V;  H = O + Z
    Y = GELU(LN(H) W_1 + b_1) W_2 + b_2;      Z' = H + Y      (FFN width 4 d)
With `causal=True` position i attends only to positions <= i (the autoregressive variant).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from timerepro.encoders import make_encoder


def causal_mask(length: int, device: torch.device | None = None) -> torch.Tensor:
    """Additive mask (length, length): 0 where key j <= query i, -inf above the diagonal."""
    upper = torch.triu(torch.ones(length, length, dtype=torch.bool, device=device), diagonal=1)
    return torch.zeros(length, length, device=device).masked_fill(upper, float("-inf"))


class TransformerLayer(nn.Module):
    """One pre-LN transformer layer that also returns its attention weights."""

    def __init__(self, dim: int, *, dropout: float = 0.1, ffn_mult: int = 4):
        super().__init__()
        self.dim = dim
        self.ln_attn = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)  # W_Q, W_K, W_V stacked: one matmul
        self.ln_ffn = nn.LayerNorm(dim)
        self.ffn = nn.Sequential(
            nn.Linear(dim, ffn_mult * dim),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(ffn_mult * dim, dim),
        )
        self.dropout = nn.Dropout(dropout)

    def dropout_shapes(self, batch: int, length: int) -> list[tuple[int, ...]]:
        """Shapes of the three dropout sites: attention output, FFN hidden, FFN output."""
        return [(batch, length, self.dim), (batch, length, self.ffn[0].out_features), (batch, length, self.dim)]

    def forward(self, z: torch.Tensor, mask: torch.Tensor | None = None,
                drops: tuple[torch.Tensor, ...] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """z: (B, L, d) -> (B, L, d) and attention (B, L, L), rows = queries.

        `drops`: dropout given as three scaled keep-masks (see `dropout_shapes`) drawn by the caller
        from its own generator; without them, training-mode dropout draws from torch's global RNG.
        """
        drop = [(lambda t, m=m: t * m) for m in drops] if drops is not None else [self.dropout, self.ffn[2], self.dropout]
        q, k, v = self.qkv(self.ln_attn(z)).chunk(3, dim=-1)  # each (B, L, d)
        # (B, L, d) x (B, d, L) -> (B, L, L)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dim)
        if mask is not None:
            scores = scores + mask
        attn = torch.softmax(scores, dim=-1)
        h = z + drop[0](attn @ v)
        hidden = drop[1](self.ffn[1](self.ffn[0](self.ln_ffn(h))))  # Linear -> GELU -> dropout
        out = h + drop[2](self.ffn[3](hidden))
        return out, attn


class SyntheticSequenceClassifier(nn.Module):
    """Rows [Phi(t - t_m), x_m] for m = 1..M and the target row [Phi(0), 0] -> one logit.

    Full attention reads out the mean over the M+1 rows; causal attention reads out the last row.
    The model width is d_T + 1 (no input projection), as in the authors' code.
    """

    def __init__(
        self,
        *,
        encoder: str,
        d_time: int,
        layers: int,
        attention: str,
        dropout: float = 0.1,
        time_mean: float = 0.0,
        time_std: float = 1.0,
    ):
        super().__init__()
        if attention not in ("full", "causal"):
            raise ValueError(f"attention must be 'full' or 'causal', got {attention!r}")
        self.attention = attention
        self.encoder = make_encoder(encoder, d_time, mean=time_mean, std=time_std)
        dim = d_time + 1
        self.layers = nn.ModuleList([TransformerLayer(dim, dropout=dropout) for _ in range(layers)])
        self.head = nn.Linear(dim, 1)

    def dropout_shapes(self, batch: int, n_events: int) -> list[tuple[int, ...]]:
        """Shapes of every dropout site, layer by layer, for a batch of sequences of n_events."""
        return [s for layer in self.layers for s in layer.dropout_shapes(batch, n_events + 1)]

    def forward(self, dt: torch.Tensor, x: torch.Tensor,
                drops: list[torch.Tensor] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """dt, x: (B, M) -> logits (B,) and the last layer's attention (B, M+1, M+1).

        `drops`: the scaled keep-masks of every dropout site (`dropout_shapes` order), or None.
        """
        batch = dt.shape[0]
        zero = dt.new_zeros(batch, 1)
        dt_all = torch.cat([dt, zero], dim=1)  # (B, M+1): the target row has Phi(0)
        x_all = torch.cat([x, zero], dim=1)  # (B, M+1): and mark 0
        z = torch.cat([self.encoder(dt_all), x_all.unsqueeze(-1)], dim=-1)  # (B, M+1, d_T+1)
        mask = causal_mask(z.shape[1], z.device) if self.attention == "causal" else None
        attn = None
        for i, layer in enumerate(self.layers):
            z, attn = layer(z, mask, None if drops is None else tuple(drops[3 * i : 3 * i + 3]))
        pooled = z[:, -1] if self.attention == "causal" else z.mean(dim=1)  # (B, d_T+1)
        return self.head(pooled).squeeze(-1), attn
