"""The selective scan of a diagonal state space model, in pure PyTorch (CPU or GPU), with `mamba_ssm`'s CUDA
kernel as a fast path where it is importable.

For each channel d and state n, with h_0 = 0:

    h_k = a_k * h_(k-1) + b_k,      a_k = exp(Delta_k A),   y_k = sum_n C_k[n] h_k[n]
    b_k = Delta_k B_k u_k                         ("simplified": Mamba's kernel, DyG-Mamba Algorithm 1)
    b_k = (exp(Delta_k A) - 1) / A * B_k u_k      ("exact": zero-order hold, DyG-Mamba Eq. 8, A diagonal)

`linear_recurrence` solves h_k = a_k h_(k-1) + b_k without a Python loop over k: the odd-even (Blelloch)
reduction of the associative operator (a1, b1) o (a2, b2) = (a1 a2, a2 b1 + b2). Each level halves the
sequence, so the work is O(L) elementwise products and sums (about 2 L of each over all levels), the memory
O(L) per (batch, channel, state) element, and the depth log2(L) levels of vectorised tensor operations.
Everything is products and sums of numbers with |a| <= 1, so it is as accurate as the naive recurrence
(no exp(-cumsum) rescaling as in log-space formulations, which lose digits on long sequences).
Total cost of `selective_scan`: O(B L D N) time and memory.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

ZOH = ("simplified", "exact")
BACKENDS = ("auto", "torch", "mamba_ssm")


def mamba_ssm_available() -> bool:
    """True when mamba_ssm's CUDA selective scan can be imported (a CUDA build on a CUDA machine)."""
    if not torch.cuda.is_available():
        return False
    try:
        from mamba_ssm.ops.selective_scan_interface import selective_scan_fn  # noqa: F401
    except Exception:  # ImportError, or a build for another CUDA/torch
        return False
    return True


def linear_recurrence(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """h_k = a_k * h_(k-1) + b_k along dim 1 with h_(-1) = 0; a, b of equal shape (B, L, ...) -> h (B, L, ...)."""
    length = a.shape[1]
    if length == 1:
        return b
    if length % 2:  # one extra step (a = 0, b = 0) so the pairs close; dropped at the end
        a = torch.cat([a, torch.zeros_like(a[:, :1])], dim=1)
        b = torch.cat([b, torch.zeros_like(b[:, :1])], dim=1)
    a_even, a_odd, b_even, b_odd = a[:, 0::2], a[:, 1::2], b[:, 0::2], b[:, 1::2]
    # a pair (2i, 2i+1) composed into one step: h_(2i+1) = a_odd a_even h_(2i-1) + (a_odd b_even + b_odd)
    h_odd = linear_recurrence(a_odd * a_even, a_odd * b_even + b_odd)  # (B, L/2, ...) states at 1, 3, 5, ...
    # h_(2i) = a_even[i] h_(2i-1) + b_even[i], with h_(-1) = 0
    h_before = torch.cat([torch.zeros_like(h_odd[:, :1]), h_odd[:, :-1]], dim=1)
    h_even = a_even * h_before + b_even
    # interleave: (B, L/2, 2, ...) -> (B, L, ...)
    h = torch.stack([h_even, h_odd], dim=2).flatten(1, 2)
    return h[:, :length]


def naive_recurrence(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The same recurrence as a loop over the steps: the reference the tests hold the scan to."""
    h, out = torch.zeros_like(b[:, 0]), []
    for k in range(a.shape[1]):
        h = a[:, k] * h + b[:, k]
        out.append(h)
    return torch.stack(out, dim=1)


def _expand(m: torch.Tensor, batch: int, length: int) -> torch.Tensor:
    """B or C as (batch, L, 1, N) per position, or (1, 1, D, N) when fixed per channel (not selective)."""
    return m.unsqueeze(2) if m.dim() == 3 else m.unsqueeze(0).unsqueeze(0)


def selective_scan(u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, *,
                   zoh: str = "simplified", backend: str = "auto") -> torch.Tensor:
    """y (batch, L, D) of the SSM: u, delta (batch, L, D); A (D, N) (negative); B, C (batch, L, N) selective
    or (D, N) fixed. `backend`: "torch" (the pure-PyTorch scan), "mamba_ssm" (the CUDA kernel; simplified
    discretisation only) or "auto" (mamba_ssm for CUDA tensors when importable and zoh is simplified)."""
    if zoh not in ZOH:
        raise ValueError(f"unknown discretisation zoh={zoh!r}; known: {ZOH}")
    if backend not in BACKENDS:
        raise ValueError(f"unknown scan backend {backend!r}; known: {BACKENDS}")
    use_kernel = backend == "mamba_ssm" or (backend == "auto" and u.is_cuda and zoh == "simplified" and mamba_ssm_available())
    if use_kernel:
        if zoh != "simplified":
            raise ValueError("mamba_ssm implements only the simplified discretisation (B_bar = Delta B)")
        return _scan_mamba_ssm(u, delta, A, B, C)
    batch, length, _ = u.shape
    dA = delta.unsqueeze(-1) * A  # (batch, L, D, N)
    a = torch.exp(dA)
    Bk, Ck = _expand(B, batch, length), _expand(C, batch, length)
    if zoh == "simplified":
        b = (delta * u).unsqueeze(-1) * Bk  # (batch, L, D, N): Delta_k B_k u_k
    else:
        b = (torch.expm1(dA) / A * u.unsqueeze(-1)) * Bk  # (exp(Delta A) - 1) / A * B u (A diagonal)
    h = linear_recurrence(a, b)  # (batch, L, D, N)
    return (h * Ck).sum(-1)  # (batch, L, D)


def _scan_mamba_ssm(u, delta, A, B, C) -> torch.Tensor:
    from mamba_ssm.ops.selective_scan_interface import selective_scan_fn

    # mamba_ssm's layout: u, delta (batch, D, L); B, C (batch, N, L) or (D, N)
    bc = lambda m: m.transpose(1, 2).contiguous() if m.dim() == 3 else m.contiguous()  # noqa: E731
    y = selective_scan_fn(u.transpose(1, 2).contiguous(), delta.transpose(1, 2).contiguous(), A.contiguous(),
                          bc(B), bc(C), D=None, z=None, delta_bias=None, delta_softplus=False)
    return y.transpose(1, 2)


def causal_conv1d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """Depthwise causal convolution along the sequence: x (batch, L, D), weight (D, 1, K) -> (batch, L, D);
    position k sees x_(k-K+1) .. x_k (zeros before the start), as Mamba's conv1d."""
    kernel = weight.shape[-1]
    out = F.conv1d(F.pad(x.transpose(1, 2), (kernel - 1, 0)), weight, bias, groups=x.shape[-1])  # (batch, D, L)
    return out.transpose(1, 2)
