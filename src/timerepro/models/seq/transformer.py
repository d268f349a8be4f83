"""DyGFormer's transformer layer (linear_time, Appendix A.2) and the synthetic-task classifier.

Pre-LN layer, single head as the equations are written:
    Q, K, V = LN(Z) W_Q, LN(Z) W_K, LN(Z) W_V
    O = softmax(Q K^T / sqrt(d_h) + mask) V;  H = O + Z
    Y = GELU(LN(H) W_1 + b_1) W_2 + b_2;      Z' = H + Y      (FFN width 4 d)
With `causal=True` position i attends only to positions <= i (the autoregressive variant).

`SyntheticSequenceClassifier.stacked` is the same forward written over S stacked members (seeds), bitwise
equal to `torch.func.vmap` of `forward` (tested) at a fraction of vmap's per-operator cost.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from timerepro.encoders import CosineEncoder, CosineScaleEncoder, LinearEncoder, SineCosineEncoder, make_encoder


def causal_mask(length: int, device: torch.device | None = None) -> torch.Tensor:
    """Additive mask (length, length): 0 where key j <= query i, -inf above the diagonal."""
    upper = torch.triu(torch.ones(length, length, dtype=torch.bool, device=device), diagonal=1)
    return torch.zeros(length, length, device=device).masked_fill(upper, float("-inf"))


@functools.lru_cache(maxsize=8)
def _shared_causal_mask(length: int, device: torch.device) -> torch.Tensor:
    """`causal_mask` built once per length and device: the stacked forward reads it every step, never writes it."""
    return causal_mask(length, device)


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

    def stacked(self, params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], dt: torch.Tensor,
                x: torch.Tensor, drops: list[torch.Tensor] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """`forward` of S members at once: params/buffers name -> (S, ...), dt, x (S, B, M), drops (S, *site) ->
        logits (S, B) and attention (S, B, M+1, M+1); no dropout without `drops`.

        Why: vmap pays a batching rule per operator and these models are tiny, so every op is written batched over
        S by hand (bmm, broadcasting), in the forms whose values and gradients equal vmap's bit for bit (tested).
        """
        S, batch = dt.shape[:2]
        zero = dt.new_zeros(S, batch, 1)
        dt_all = torch.cat([dt, zero], dim=2)  # (S, B, M+1)
        x_all = torch.cat([x, zero], dim=2)
        encode = STACKED_ENCODERS.get(type(self.encoder))
        if encode is None:
            raise ValueError(f"no stacked form of the {type(self.encoder).__name__} encoder: "
                             f"stacked encoders are {sorted(c.__name__ for c in STACKED_ENCODERS)}")
        phi = encode(self.encoder, _member_dict(params, buffers, "encoder"), dt_all)
        z = torch.cat([phi, x_all.unsqueeze(-1)], dim=-1)  # (S, B, M+1, d_T+1)
        mask = _shared_causal_mask(z.shape[2], z.device) if self.attention == "causal" else None
        attn = None
        for i in range(len(self.layers)):
            p = _member_dict(params, {}, f"layers.{i}")
            z, attn = _stacked_layer(p, z, mask, None if drops is None else drops[3 * i : 3 * i + 3])
        pooled = z[:, :, -1] if self.attention == "causal" else z.mean(dim=2)  # (S, B, d_T+1)
        return stacked_linear(pooled, params["head.weight"], params["head.bias"]).squeeze(-1), attn


def _member_dict(params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], prefix: str) -> dict:
    """The entries of params and buffers under `prefix.`, with the prefix cut."""
    return {k[len(prefix) + 1:]: v for k, v in (params | buffers).items() if k.startswith(prefix + ".")}


def _per_member(t: torch.Tensor, ndim: int) -> torch.Tensor:
    """(S, *rest) -> (S, 1, .., 1, *rest) with `ndim` dimensions: one member's tensor broadcast over its batch."""
    return t.view(t.shape[0], *(1,) * (ndim - t.dim()), *t.shape[1:])


def stacked_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """F.linear per member: x (S, ..., in), weight (S, out, in), bias (S, out) -> (S, ..., out)."""
    S, out = weight.shape[:2]
    # (S, n, in) x (S, in, out) -> (S, n, out)
    y = torch.bmm(x.reshape(S, -1, x.shape[-1]), weight.transpose(1, 2)).view(*x.shape[:-1], out)
    return y if bias is None else y + _per_member(bias, y.dim())


def stacked_layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """nn.LayerNorm per member over the last axis: x (S, ..., d), weight and bias (S, d)."""
    return F.layer_norm(x, x.shape[-1:]) * _per_member(weight, x.dim()) + _per_member(bias, x.dim())


def _stacked_layer(p: dict[str, torch.Tensor], z: torch.Tensor, mask: torch.Tensor | None,
                   drops: list[torch.Tensor] | None) -> tuple[torch.Tensor, torch.Tensor]:
    """`TransformerLayer.forward` of S members: z (S, B, L, d) -> (S, B, L, d), attention (S, B, L, L)."""
    S, B, L, d = z.shape
    drop = [(lambda t, m=m: t * m) for m in drops] if drops is not None else [lambda t: t] * 3
    qkv = stacked_linear(stacked_layer_norm(z, p["ln_attn.weight"], p["ln_attn.bias"]), p["qkv.weight"], None)
    q, k, v = (t.reshape(S * B, L, d) for t in qkv.chunk(3, dim=-1))  # each (S B, L, d)
    # (S B, L, d) x (S B, d, L) -> (S B, L, L); `bmm`, the kernel `@` ends in, without matmul's expand/reshape nodes
    scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d)
    if mask is not None:
        scores = scores + mask
    attn = torch.softmax(scores, dim=-1)
    h = z + drop[0](torch.bmm(attn, v).view(S, B, L, d))
    hidden = stacked_linear(stacked_layer_norm(h, p["ln_ffn.weight"], p["ln_ffn.bias"]), p["ffn.0.weight"],
                            p["ffn.0.bias"])
    hidden = drop[1](F.gelu(hidden))
    out = h + drop[2](stacked_linear(hidden, p["ffn.3.weight"], p["ffn.3.bias"]))
    return out, attn.view(S, B, L, L)


def _standardized(p: dict[str, torch.Tensor], dt: torch.Tensor) -> torch.Tensor:
    """_Standardize per member: dt (S, ...), mean and std (S,)."""
    return (dt - _per_member(p["standardize.mean"], dt.dim())) / _per_member(p["standardize.std"], dt.dim())


def _stacked_linear_encoder(enc: LinearEncoder, p: dict, dt: torch.Tensor) -> torch.Tensor:
    z = _standardized(p, dt).unsqueeze(-1)  # (S, ..., 1)
    return stacked_linear(z, p["proj.weight"], p["proj.bias"]) if enc.affine else z


def _stacked_cosine_encoder(enc: CosineEncoder, p: dict, dt: torch.Tensor) -> torch.Tensor:
    t = (_standardized(p, dt) if isinstance(enc, CosineScaleEncoder) else dt).unsqueeze(-1)  # (S, ..., 1)
    return torch.cos(t * _per_member(p["w"], t.dim()) + _per_member(p["phi"], t.dim()))


def _stacked_sine_cosine_encoder(enc: SineCosineEncoder, p: dict, dt: torch.Tensor) -> torch.Tensor:
    angle = dt.unsqueeze(-1) * _per_member(p["w"], dt.dim() + 1)  # (S, ..., k)
    if enc.phi is not None:
        angle = angle + _per_member(p["phi"], angle.dim())
    out = torch.cat([torch.cos(angle), torch.sin(angle)], dim=-1)  # (S, ..., 2k)
    return math.sqrt(1.0 / enc.k) * out if enc.scale else out


# encoder class -> its forward over S stacked members: f(encoder, its params and buffers (S, ...), dt (S, ...))
STACKED_ENCODERS = {LinearEncoder: _stacked_linear_encoder, CosineEncoder: _stacked_cosine_encoder,
                    CosineScaleEncoder: _stacked_cosine_encoder, SineCosineEncoder: _stacked_sine_cosine_encoder}
