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
Total cost of `selective_scan`: O(B L D N) time; memory O(B L D N) transient inside one call (forward, or its
backward, which recomputes the states) and O(B L (D + N)) kept for backward between calls; a scan of at most
`KEEP_STATES_MAX` states keeps its decays and states for backward instead (the same numbers, computed once).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

ZOH = ("simplified", "exact")
BACKENDS = ("auto", "torch", "mamba_ssm")
# (batch, L, D, N) elements up to which forward keeps a and h for backward (2 x 64 MiB in float32) rather than
# recomputing them: offline shapes (50 x 17 x 400 x 16 = 5.4 M) keep them, paper-scale ones (UCI: 20 x 1026 x 400 x 16)
# recompute, so their memory stays O(B L (D + N)) between calls
KEEP_STATES_MAX = 1 << 24
# (batch, L, D, N) elements of one piece of a scan: a larger batch is scanned CHUNK_STATES_MAX / (L D N) rows at a
# time (rows are independent), so the transient (batch, L, D, N) tensors of forward and backward stay ~1 GiB each.
# Without it DyG-Mamba at L = 2048 with batches of 200 (Enron, dyg_mamba Figure 7) held 130 GB of a 141 GB H200
# and failed (rehearsal a40a5da8b1d6); every offline and real-UCI scan is one piece (bitwise the unchunked path)
CHUNK_STATES_MAX = 1 << 28


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
        return b.clone()
    half = length // 2
    a_even, a_odd = a[:, 0:2 * half:2], a[:, 1:2 * half:2]  # (B, L/2, ...) views
    b_even, b_odd = b[:, 0:2 * half:2], b[:, 1:2 * half:2]
    # a pair (2i, 2i+1) composed into one step: h_(2i+1) = a_odd a_even h_(2i-1) + (a_odd b_even + b_odd)
    h_odd = linear_recurrence(a_odd * a_even, torch.addcmul(b_odd, a_odd, b_even))  # states at 1, 3, 5, ...
    h = torch.empty_like(b)
    h[:, 1:2 * half:2] = h_odd
    h[:, 0] = b[:, 0]  # h_0 = b_0 (h_(-1) = 0)
    # h_(2i) = a_(2i) h_(2i-1) + b_(2i) for i >= 1, and the last step of an odd length
    torch.addcmul(b[:, 2:length:2], a[:, 2:length:2], h_odd[:, : (length - 1) // 2], out=h[:, 2:length:2])
    return h


def reverse_recurrence(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """h_k = a_k * h_(k+1) + b_k along dim 1 with h_L = 0: flip(linear_recurrence(flip(a), flip(b))) operation for
    operation (the same pairs, the same products and sums per element), read in place instead of flipped copies."""
    length = a.shape[1]
    if length == 1:
        return b.clone()
    half, r = length // 2, length % 2
    # flipped position j <-> k = L-1-j; the flipped pairs (2i, 2i+1) are (k+1, k) for k = r, r+2, .., L-2
    a_hi, a_lo = a[:, r + 1:length:2], a[:, r:length - 1:2]  # (B, L/2, ...) views: k+1 and k
    b_hi, b_lo = b[:, r + 1:length:2], b[:, r:length - 1:2]
    # h_k = a_k a_(k+1) h_(k+2) + (a_k b_(k+1) + b_k)
    h_lo = reverse_recurrence(a_lo * a_hi, torch.addcmul(b_lo, a_lo, b_hi))  # states at r, r+2, .., L-2
    h = torch.empty_like(b)
    h[:, r:length - 1:2] = h_lo
    h[:, length - 1] = b[:, length - 1]  # h_(L-1) = b_(L-1) (h_L = 0)
    # h_k = a_k h_(k+1) + b_k at k = 1-r, 3-r, .., L-3 (k+1 runs over the states just solved, from 2-r on)
    torch.addcmul(b[:, 1 - r:length - 1:2], a[:, 1 - r:length - 1:2], h_lo[:, 1 - r:], out=h[:, 1 - r:length - 1:2])
    return h


def naive_recurrence(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The same recurrence as a loop over the steps: the reference the tests hold the scan to."""
    h, out = torch.zeros_like(b[:, 0]), []
    for k in range(a.shape[1]):
        h = a[:, k] * h + b[:, k]
        out.append(h)
    return torch.stack(out, dim=1)


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
    keep = torch.is_grad_enabled() and any(t.requires_grad for t in (u, delta, A, B, C)) and \
        u.shape[0] * u.shape[1] * A.numel() <= KEEP_STATES_MAX
    return _SelectiveScan.apply(u, delta, A, B, C, zoh == "exact", keep)


def _discretise(u, delta, A, B, exact: bool):
    """a = exp(Delta A) (batch, L, D, N) and b = B_bar u (batch, L, D, N)."""
    dA = delta.unsqueeze(-1) * A  # (batch, L, D, N)
    a = torch.exp(dA)
    Bk = _per_position(B)
    if exact:  # (exp(Delta A) - 1) / A * B u
        return a, torch.expm1(dA) / A * u.unsqueeze(-1) * Bk
    return a, (delta * u).unsqueeze(-1) * Bk  # Delta B u


def _per_position(m: torch.Tensor) -> torch.Tensor:
    return m.unsqueeze(2) if m.dim() == 3 else m  # (batch, L, 1, N) or (D, N)


def _over_states(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """sum_n x[b, l, d, n] m[., n]: m (batch, L, N) per position or (D, N) fixed -> (batch, L, D)."""
    return torch.einsum("bldn,bln->bld", x, m) if m.dim() == 3 else torch.einsum("bldn,dn->bld", x, m)


def _over_channels(x: torch.Tensor, v: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """sum_d x[b, l, d, n] v[b, l, d], shaped as `like`: (batch, L, N), or summed over batch and L too: (D, N)."""
    return torch.einsum("bldn,bld->bln", x, v) if like.dim() == 3 else torch.einsum("bldn,bld->dn", x, v)


class _SelectiveScan(torch.autograd.Function):
    """The scan with its adjoint written out, so that backward keeps only the (batch, L, D) and (batch, L, N)
    inputs and recomputes the (batch, L, D, N) states (as mamba_ssm's kernel does): the memory autograd would
    hold for every state of every scan otherwise dominates the model's. With g = dL/dh = dy C, the adjoint
    lam_k = g_k + a_(k+1) lam_(k+1) is the same recurrence run backwards: dL/db_k = lam_k, dL/da_k = lam_k h_(k-1);
    the sums over states or channels are einsum contractions (no (batch, L, D, N) product is kept)."""

    @staticmethod
    def forward(ctx, u, delta, A, B, C, exact: bool, keep: bool):
        ctx.exact = exact
        rows = _rows_per_piece(u, A)
        if rows < u.shape[0]:  # large scans piece by piece over batch rows; backward recomputes per piece
            ctx.save_for_backward(u, delta, A, B, C)
            return torch.cat([_scan_forward(*_rows(s, u, delta, A, B, C), exact)
                              for s in _pieces(u.shape[0], rows)])
        a, b = _discretise(u, delta, A, B, exact)
        h = linear_recurrence(a, b)
        # keep: the decays and states for backward (small scans); else backward recomputes them, bit for bit
        ctx.save_for_backward(u, delta, A, B, C, *((a, h) if keep else ()))
        return _over_states(h, C)  # y (batch, L, D)

    @staticmethod
    def backward(ctx, dy):
        u, delta, A, B, C, *kept = ctx.saved_tensors
        rows = _rows_per_piece(u, A)
        if not kept and rows < u.shape[0]:
            parts = list(zip(*(_scan_backward(*_rows(s, u, delta, A, B, C), dy[s], ctx.exact, None)
                               for s in _pieces(u.shape[0], rows))))
            # du, ddelta per row: concatenated; dA and a fixed (D, N) B or C: summed over the pieces
            per_row = (True, True, False, B.dim() == 3, C.dim() == 3)
            return (*(torch.cat(p) if rows_ else sum(p) for p, rows_ in zip(parts, per_row)), None, None)
        return (*_scan_backward(u, delta, A, B, C, dy, ctx.exact, kept or None), None, None)


def _rows_per_piece(u: torch.Tensor, A: torch.Tensor) -> int:
    """Batch rows per piece of a scan: as many as keep one (rows, L, D, N) tensor within CHUNK_STATES_MAX."""
    return max(1, CHUNK_STATES_MAX // max(u.shape[1] * A.numel(), 1))


def _pieces(batch: int, rows: int) -> list[slice]:
    return [slice(i, min(i + rows, batch)) for i in range(0, batch, rows)]


def _rows(s: slice, u, delta, A, B, C):
    """The inputs of batch rows `s`: per-position B, C (batch, L, N) sliced, fixed (D, N) ones as they are."""
    return u[s], delta[s], A, (B[s] if B.dim() == 3 else B), (C[s] if C.dim() == 3 else C)


def _scan_forward(u, delta, A, B, C, exact: bool) -> torch.Tensor:
    a, b = _discretise(u, delta, A, B, exact)
    return _over_states(linear_recurrence(a, b), C)  # y (rows, L, D)


def _scan_backward(u, delta, A, B, C, dy, exact: bool, kept):
    """The adjoint of the scan (see _SelectiveScan): du, ddelta, dA, dB, dC; `kept` = (a, h) from forward or None."""
    if kept:
        a, h = kept
    else:
        a, b = _discretise(u, delta, A, B, exact)
        h = linear_recurrence(a, b)  # recomputed states (batch, L, D, N)
        del b
    dC = _over_channels(h, dy, C)
    # lam_k = g_k + a_(k+1) lam_(k+1), g = dy C: the recurrence on the reversed sequence, decays shifted by one
    g = dy.unsqueeze(-1) * _per_position(C)
    a_next = torch.empty_like(a)  # [a_1 .. a_(L-1), 0]: copied by slices (torch.cat along L is far slower here)
    a_next[:, :-1] = a[:, 1:]
    a_next[:, -1] = 0
    lam = reverse_recurrence(a_next, g)  # dL/db
    del g, a_next
    # dL/d(Delta A) through a = exp(Delta A): lam_k h_(k-1) a_k (h_(-1) = 0)
    d_dA = lam * a
    d_dA[:, 1:] *= h[:, :-1]
    d_dA[:, 0] = 0
    del h
    ddelta = _over_states(d_dA, A)
    dA = torch.einsum("bldn,bld->dn", d_dA, delta)
    if exact:  # b = (exp(Delta A) - 1)/A u B: db/dDelta = a u B, db/dA = u B (Delta A a - (a - 1)) / A^2
        Bk, dA_ = _per_position(B), delta.unsqueeze(-1) * A
        lam_u = lam * u.unsqueeze(-1)
        factor = torch.expm1(dA_) / A
        du = _over_states(lam * factor, B)
        dB = _over_channels(lam_u * factor, torch.ones_like(u), B)
        ddelta = ddelta + _over_states(lam_u * a, B)
        dA = dA + (lam_u * Bk * (dA_ * a - (a - 1)) / A**2).sum((0, 1))
    else:  # b = Delta u B
        lam_B = _over_states(lam, B)  # (batch, L, D)
        du = delta * lam_B
        ddelta = ddelta + u * lam_B
        dB = _over_channels(lam, delta * u, B)
    return du, ddelta, dA, dB, dC


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
