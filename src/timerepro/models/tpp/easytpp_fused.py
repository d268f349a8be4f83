"""EasyTPP's elementwise pieces with hand-written backward passes: the same equations in fewer passes over the
sample grid (issue 27, item 2). Each replaces one EasyTPP module in place (`fuse`), sharing its parameters.

| replacement | EasyTPP's original (easy-tpp 0.3.0) | forward passes / backward passes over the grid |
|---|---|---|
| `FusedScaledSoftplus` | `baselayer.ScaledSoftplus.forward` (lines 28-38) | 6 / 4 instead of 7 / about 12 |
| `FusedContTimeLSTMCell.decay` | `nhp.ContTimeLSTMCell.decay` (lines 67-83) | 5 / 9 instead of 6 / 11 |
| `FusedNHP.get_states` (h(t) alone) | `nhp.NHP.get_states` (lines 155-169) | 1 / 1 on the grid, the rest in slices (a) |
| `FusedNHP.forward` (`_NHPRecurrence`) | `nhp.NHP.forward`, `ContTimeLSTMCell` (lines 32-83, 113-153) | (f) |
| `FusedNHP.intensities_at_offsets` (`_DecayedLinear`) | `nhp.NHP.get_states`, then `layer_intensity`'s Linear (lines 102-105, 155-169) | (a), the product in the slices |
| `FusedSAHP.state_decay` | `sahp.SAHP.state_decay` (lines 72-86) | 3 / 5 instead of 4 / 8 |
| `FusedCumulHazardFunctionNetwork.forward` | `fullynn.CumulHazardFunctionNetwork.forward` (lines 45-78) | (b) |
| `FusedNeuralODE.forward` (`_NeuralODEAdjoint`) | `ode_tpp.NeuralODEAdjoint` (lines 18-109) | (c) |
| `FusedODETPP.forward` (`_ODETPPSolves`) | `ode_tpp.ODETPP.forward` (lines 175-205) | (c), every event's solve in one node |
| `FusedODETPP.compute_states_at_sample_times` | `ode_tpp.ODETPP.compute_states_at_sample_times` (lines 254-272) | one node in slices (a), (d) |
| `FusedMultiHeadAttention.forward` (`_MaskedAttention`) | `baselayer.MultiHeadAttention.forward`, `attention` (lines 7-17, 58-79) | (e) |
| `FusedTHP.compute_states_at_sample_times` (`_AffineInTime`) | `thp.THP.compute_states_at_sample_times` (lines 146-172) | 3 / 4 instead of 3 / 5, bitwise |
| `thp_integral` (`_THPIntegral`, THP's training likelihood) | `thp.THP.compute_states_at_sample_times`, `ScaledSoftplus`, the sum over marks and mean over samples | (g) |

(a) `_DecayedHidden`: only h(t) and its gradient cross the whole grid; the decay runs slice by slice in the cache,
recomputed in the backward (also ODETPP's RK4 step on the grid, `_RK4ReluGrid`). NHP's tanh(c(t)) comes back in
the backward as h / o (h is kept anyway) instead of a second tanh on the grid.
(b) Lambda_k(dt) by EasyTPP's operations; d Lambda_k / d dt of all K marks by forward mode (each layer's tangent
beside its value): one graph instead of K double-backward graphs (`grad(..., create_graph=True)` per mark).
(c) EasyTPP's RK4 forward solve bitwise; its adjoint RK4 solve with the ReLU MLP's vector-Jacobian products written
out (no `autograd.grad` per stage).
(d) the RK4 stages' pre-activations by linearity (p1 + c W k): two products per sample offset instead of three.
(e) THP's attention as one bmm per head on strided views of the projections (no per-head copies), its backward
written out: bitwise EasyTPP's values and gradients (tests/tpp/test_easytpp_thp_fused.py); EasyTPP's own forward
under active dropout.
(g) the integral's grid in slices that stay in the cache, EasyTPP's operations (bitwise the values); the forward
also sums over the samples what the backward needs, so the backward is [B, L, K]-sized (gradients at rounding).

(f) every event's decay and cell in one node, EasyTPP's forward operations per event without autograd's graph
(bitwise round 12's loop over `FusedContTimeLSTMCell` at H = 64), on one thread; the backward written out per
event, the weight's and the embeddings' gradients as products over all events (the embeddings' summed per type).

Equal to the originals within float rounding (tests/tpp/test_easytpp_fused.py: values and gradients against
EasyTPP's modules); not bitwise (other summation orders in the gradients' reductions).
"""

from __future__ import annotations

import contextlib
import math
from typing import Callable

import torch
from torch import nn

LOG_1E5 = math.log(1e5)  # ScaledSoftplus clamps beta * x here before exp (EasyTPP's line 36)


class _ScaledSoftplus(torch.autograd.Function):
    """y = log1p(exp(min(b x, log 1e5))) / b where b x <= threshold, else x; b = exp(log_beta) per mark (last dim).

    dy/dx = d: sigmoid(b x) below log 1e5, 0 on the clamp's plateau, 1 above the threshold (EasyTPP's autograd
    through clamp and where gives the same); dy/dlog_beta = d x - y in every region (0 above the threshold)."""

    @staticmethod
    def forward(ctx, x, log_beta, threshold):
        beta = log_beta.exp()  # [K]
        bx = x * beta  # [..., K]
        if bool(bx.max() <= LOG_1E5) if bx.numel() else True:  # no clamp, no linear branch: one formula
            y = torch.exp(bx).log1p_().div_(beta)
            d = bx.sigmoid_()
        else:
            y = torch.where(bx <= threshold, torch.log1p(bx.clamp(max=LOG_1E5).exp()) / beta, x)
            d = torch.sigmoid(bx).masked_fill_(bx > LOG_1E5, 0.0).masked_fill_(bx > threshold, 1.0)
        ctx.save_for_backward(x, y, d)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y, d = ctx.saved_tensors
        gx = g * d
        g_log_beta = None
        if ctx.needs_input_grad[1]:
            t = gx * x
            t.addcmul_(g, y, value=-1.0)  # d x - y, times g
            g_log_beta = t.reshape(-1, t.size(-1)).sum(0)  # [K]
        return gx, g_log_beta, None


class FusedScaledSoftplus(nn.Module):
    """EasyTPP's ScaledSoftplus (mark-specific beta, linear above `threshold`) as one autograd node; shares log_beta."""

    def __init__(self, log_beta: nn.Parameter, threshold: float):
        super().__init__()
        self.log_beta, self.threshold = log_beta, float(threshold)

    @classmethod
    def replacing(cls, module: nn.Module) -> FusedScaledSoftplus:
        return cls(module.log_beta, module.threshold)

    def forward(self, x):
        return _ScaledSoftplus.apply(x, self.log_beta, self.threshold)



def decay_grads(g_e, amp, rate, dt, shape, need_rate: bool, need_dt: bool):
    """Gradients of amp * exp(-rate * dt) given g_e = upstream gradient * exp(-rate * dt): amp's, rate's (None unless
    need_rate) and dt's (None unless need_dt); amp and rate are constant along the summed (broadcast) dims, so amp
    multiplies rate's gradient after the sum."""
    g_amp = g_e.sum_to_size(shape)
    g_rate = (g_e * dt).sum_to_size(shape).mul_(amp).neg_() if need_rate else None
    g_dt = -(g_e * (amp * rate)).sum_to_size(dt.shape) if need_dt else None
    return g_amp, g_rate, g_dt

class _CTLSTMDecay(torch.autograd.Function):
    """NHP's Eq. (7): c(t) = c_bar + (c - c_bar) exp(-delta dt), h(t) = o tanh(c(t)); c, c_bar, delta, o of one
    shape [..., 1 or S, H], dt broadcasting against them ([..., S, 1]). Returns (c(t), h(t))."""

    @staticmethod
    def forward(ctx, c, c_bar, delta, o, dt):
        e = torch.exp(-delta * dt)  # [..., S, H]: EasyTPP's operands in its order
        dc = c - c_bar
        c_t = torch.addcmul(c_bar, dc, e)
        tanh_c = torch.tanh(c_t)
        ctx.save_for_backward(e, tanh_c, dc, delta, o, dt)
        ctx.set_materialize_grads(False)  # c(t) unused (NHP's get_states): its gradient stays None, not a zero grid
        return c_t, o * tanh_c

    @staticmethod
    def backward(ctx, g_c, g_h):
        e, tanh_c, dc, delta, o, dt = ctx.saved_tensors
        shape = o.shape
        g = None if g_h is None else torch.ops.aten.tanh_backward(g_h * o, tanh_c)  # dL/dc(t) through h(t)
        if g_c is not None:
            g = g_c.expand_as(e).clone() if g is None else g.add_(g_c)
        g_dc, g_delta, g_dt = decay_grads(g * e, dc, delta, dt, shape, ctx.needs_input_grad[2], ctx.needs_input_grad[4])
        g_o = None if g_h is None else (g_h * tanh_c).sum_to_size(shape)
        return g_dc, g.sum_to_size(shape) - g_dc, g_delta, g_o, g_dt


CHUNK_FLOATS = 1 << 15  # a slice of the grid per step of `_DecayedHidden`: its temporaries stay in the CPU's cache
# the same at more than one intra-op thread: each pass over a slice is a parallel region whose hand-offs cost more
# than the cache saves (NHP's training step at 2 threads, loaded machine: 1 << 15 0.60, 1 << 17 0.51, 1 << 19 0.50
# CPU s; at one thread 1 << 15 0.29 against 0.31 and 0.31; bitwise the same values: the slices are whole rows)
THREADED_CHUNK_FLOATS = 1 << 17
O_FLOOR = 1e-20  # `_DecayedHidden`: tanh(c(t)) as h / o where every |o| is at least this (NHP: o = sigmoid, above 0)


# a slice of ODETPP's RK4 grid (`_RK4ReluGrid`): its elementwise passes split over two threads (torch's grain is
# 32768), few enough slices that each pass's dispatch is small beside its work (measured: 1 << 16 to 1 << 19 alike)
RK4_CHUNK_FLOATS = 1 << 17


def _rows(n: int, row_floats: int, chunk: int | None = None) -> list[slice]:
    if chunk is None:
        chunk = CHUNK_FLOATS if torch.get_num_threads() == 1 else THREADED_CHUNK_FLOATS
    step = max(1, chunk // max(1, row_floats))
    return [slice(i, min(n, i + step)) for i in range(0, n, step)]


class _DecayedHidden(torch.autograd.Function):
    """h(t) = o tanh(c_bar + (c - c_bar) exp(-delta dt)) alone (NHP's `get_states`), slice by slice of dim 0 and
    recomputed in the backward: only h(t) and its gradient cross the whole grid, the rest stays in the cache.
    tanh(c(t)) comes back in the backward as h / o (h is kept anyway: the intensity layer's input) instead of a
    second tanh on the grid, unless some o is below O_FLOOR (h / o would lose its digits there).
    c, c_bar, delta, o [N, ..., 1, H], dt [N, ..., S, 1]."""

    @staticmethod
    def forward(ctx, c, c_bar, delta, o, dt):
        shape = torch.broadcast_shapes(o.shape, dt.shape)
        h = o.new_empty(shape)
        dc = c - c_bar
        neg_delta = -delta
        for r in _rows(shape[0], math.prod(shape[1:])):
            c_t = torch.addcmul(c_bar[r], dc[r], torch.exp(neg_delta[r] * dt[r]))
            torch.mul(o[r], c_t.tanh_(), out=h[r])
        ctx.save_for_backward(c_bar, dc, delta, o, dt, h)
        return h

    @staticmethod
    def backward(ctx, g_h):
        c_bar, dc, delta, o, dt, h = ctx.saved_tensors
        g_dc, g_cbar, g_delta, g_o = (torch.empty_like(o) for _ in range(4))
        g_dt = torch.empty_like(dt) if ctx.needs_input_grad[4] else None
        neg_delta = -delta
        from_output = o.numel() and bool(o.abs().min() >= O_FLOOR)
        for r in _rows(g_h.size(0), math.prod(g_h.shape[1:])):
            e = torch.exp(neg_delta[r] * dt[r])  # [n, ..., S, H]: the forward's, recomputed
            tanh_c = h[r] / o[r] if from_output else torch.addcmul(c_bar[r], dc[r], e).tanh_()
            _decay_rows_backward(r, g_h[r], False, tanh_c, e, o, dc, delta, dt, (g_o, g_cbar, g_dc, g_delta, g_dt))
        return g_dc, g_cbar - g_dc, g_delta, g_o, g_dt


def _decay_rows_backward(r, g_h, consume: bool, tanh_c, e, o, dc, delta, dt, grads) -> None:
    """h(t) = o tanh(c_bar + dc e), e = exp(-delta dt): the gradients of o, c_bar, dc, delta, dt for the rows r, from
    dL/dh of those rows (`consume`: g_h is a fresh tensor and may be overwritten), written into `grads`' rows."""
    g_o, g_cbar, g_dc, g_delta, g_dt = grads
    shape = o[r].shape
    torch.sum(g_h * tanh_c, dim=-2, keepdim=True, out=g_o[r]) if shape[-2] == 1 else g_o[r].copy_(
        (g_h * tanh_c).sum_to_size(shape))
    g = torch.ops.aten.tanh_backward(g_h.mul_(o[r]) if consume else g_h * o[r], tanh_c)  # dL/dc(t)
    g_cbar[r] = g.sum_to_size(shape)
    g_e = g.mul_(e)
    g_dc[r] = g_e.sum_to_size(shape)
    g_delta[r] = (g_e * dt[r]).sum_to_size(shape).mul_(dc[r]).neg_()  # dc constant along the summed dims
    if g_dt is not None:
        g_dt[r] = -(g_e * (dc[r] * delta[r])).sum_to_size(dt[r].shape)


class _DecayedLinear(torch.autograd.Function):
    """The intensity layer's pre-activation W h(t) + b on NHP's grid (`get_states`, then `layer_intensity`'s
    Linear), slice by slice of dim 0: h(t) is made and read by the product in the cache, and in the backward its
    gradient g_x W ([rows, K] x [K, H]) meets the decay's backward there, so no h-sized gradient crosses the grid.
    h (the weight's gradient, and tanh(c(t)) as h / o: `_DecayedHidden`'s backward) and exp(-delta dt) are kept one
    tensor per slice, only where a gradient is asked for: the allocator reuses slice-sized blocks, where one
    grid-sized block is mapped afresh (page faults) every step. c, c_bar, delta, o [N, ..., 1, H], dt [N, ..., S, 1], weight [K, H],
    bias [K] -> [N, ..., S, K]."""

    @staticmethod
    def forward(ctx, c, c_bar, delta, o, dt, weight, bias):
        shape = torch.broadcast_shapes(o.shape, dt.shape)
        H, K = shape[-1], weight.size(0)
        keep = any(ctx.needs_input_grad)
        x = o.new_empty(*shape[:-1], K)
        dc = c - c_bar
        neg_delta = -delta
        w_t = weight.t()
        ctx.slices, kept = _rows(shape[0], math.prod(shape[1:])), []
        for r in ctx.slices:
            e = torch.exp(neg_delta[r] * dt[r])  # [n, ..., S, H]
            c_t = torch.addcmul(c_bar[r], dc[r], e)
            h_r = torch.mul(o[r], c_t.tanh_()) if keep else c_t.mul_(o[r])  # [n, ..., S, H]
            kept += (h_r, e) if keep else ()
            torch.addmm(bias, h_r.view(-1, H), w_t, out=x[r].view(-1, K))  # nn.Linear's addmm, on these rows
        if keep:
            ctx.save_for_backward(c_bar, dc, delta, o, dt, weight, *kept)
        return x

    @staticmethod
    def backward(ctx, g_x):
        c_bar, dc, delta, o, dt, weight, *kept = ctx.saved_tensors  # kept: h, e of each slice
        H, K = o.size(-1), weight.size(0)
        g_x = g_x.contiguous()
        g_dc, g_cbar, g_delta, g_o = (torch.empty_like(o) for _ in range(4))
        g_dt = torch.empty_like(dt) if ctx.needs_input_grad[4] else None
        g_w = weight.new_zeros(K, H) if ctx.needs_input_grad[5] else None
        from_output = o.numel() and bool(o.abs().min() >= O_FLOOR)
        for r, h, e in zip(ctx.slices, kept[0::2], kept[1::2]):
            g_xr = g_x[r].view(-1, K)  # [rows, K]
            g_h = torch.mm(g_xr, weight).view(h.shape)  # nn.Linear's input gradient, these rows
            if g_w is not None:
                g_w.addmm_(g_xr.t(), h.view(-1, H))  # [K, H]: the weight's, summed slice by slice
            tanh_c = h / o[r] if from_output else torch.addcmul(c_bar[r], dc[r], e).tanh_()
            _decay_rows_backward(r, g_h, True, tanh_c, e, o, dc, delta, dt, (g_o, g_cbar, g_dc, g_delta, g_dt))
        g_b = g_x.view(-1, K).sum(0) if ctx.needs_input_grad[6] else None
        return g_dc, g_cbar - g_dc, g_delta, g_o, g_dt, g_w, g_b


def decayed_hidden(c, c_bar, delta, o, dt):
    """h(t) of `ContTimeLSTMCell.decay` in one chunked node where c, c_bar, delta, o share a shape whose dim 0
    dt shares, else through `ct_lstm_decay`."""
    if c.shape == c_bar.shape == delta.shape == o.shape and c.dim() == dt.dim() and c.size(0) == dt.size(0):
        return _DecayedHidden.apply(c, c_bar, delta, o, dt)
    return ct_lstm_decay(c, c_bar, delta, o, dt)[1]


def ct_lstm_decay(c, c_bar, delta, o, dt):
    """`ContTimeLSTMCell.decay` in one node where c, c_bar, delta, o share a shape, else EasyTPP's expression."""
    if not (c.shape == c_bar.shape == delta.shape == o.shape):
        c_t = c_bar + (c - c_bar) * torch.exp(-delta * dt)
        return c_t, o * torch.tanh(c_t)
    return _CTLSTMDecay.apply(c, c_bar, delta, o, dt)


class _ExpDecay(torch.autograd.Function):
    """SAHP's Eq. (15): mu + (eta - mu) exp(-gamma dt); mu, eta, gamma of one shape [..., 1, K], dt [..., S, 1]."""

    @staticmethod
    def forward(ctx, mu, eta, gamma, dt):
        e = torch.exp(-gamma * dt)  # [..., S, K]: EasyTPP's operands in its order
        d = eta - mu
        ctx.save_for_backward(e, d, gamma, dt)
        return torch.addcmul(mu, d, e)

    @staticmethod
    def backward(ctx, g):
        e, d, gamma, dt = ctx.saved_tensors
        shape = d.shape
        g_d, g_gamma, g_dt = decay_grads(g * e, d, gamma, dt, shape, ctx.needs_input_grad[2], ctx.needs_input_grad[3])
        return g.sum_to_size(shape) - g_d, g_d, g_gamma, g_dt


def exp_decay(mu, eta, gamma, dt):
    """mu + (eta - mu) exp(-gamma dt) in one node where mu, eta, gamma share a shape, else EasyTPP's expression."""
    if not (mu.shape == eta.shape == gamma.shape):
        return mu + (eta - mu) * torch.exp(-gamma * dt)
    return _ExpDecay.apply(mu, eta, gamma, dt)


def _fused_class(module: str, name: str, methods: dict) -> type:
    """EasyTPP's `module.name` subclassed with `methods` (name -> function) replaced (made once, on first use: easy_tpp
    is imported lazily; kept in this module's namespace as Fused<name>, so instances pickle)."""
    import importlib

    key = f"Fused{name}"
    if key not in globals():
        base = getattr(importlib.import_module(module), name)
        doc = f"{name} with {', '.join(f'`{m}`' for m in methods)} fused."
        globals()[key] = type(key, (base,), {**methods, "__module__": __name__, "__doc__": doc})
    return globals()[key]


def _sahp_state_decay(self, encode_state, duration_t):
    """EasyTPP SAHP's `state_decay` (sahp.py lines 72-86) with the decay in one node."""
    return exp_decay(self.mu(encode_state), self.eta(encode_state), self.gamma(encode_state), duration_t)


def _nhp_get_states(self, right_hiddens, sample_dts):
    """EasyTPP NHP's `get_states` (nhp.py lines 155-169): h(t) at the sample offsets, by `decayed_hidden`."""
    c_t, c_bar_t, delta_t, o_t = torch.chunk(right_hiddens, 4, dim=-1)  # [B, L, H] each
    return decayed_hidden(c_t[:, :, None, :], c_bar_t[:, :, None, :], delta_t[:, :, None, :], o_t[:, :, None, :],
                          sample_dts[..., None])  # [B, L, S, H]


def _nhp_intensities_at_offsets(self, right_hiddens, sample_dts):
    """EasyTPP NHP's `layer_intensity(get_states(right_hiddens, sample_dts))` (nhp.py lines 102-105, 155-169, 199),
    the Linear's product on h(t) by `_DecayedLinear` (slice by slice, h's gradient never whole) where the layer is
    EasyTPP's (a biased Linear, then the softplus) and the offsets need no gradient; [B, L, S] -> [B, L, S, K]."""
    linear, softplus = self.layer_intensity
    if not isinstance(linear, nn.Linear) or linear.bias is None or sample_dts.requires_grad \
            or sample_dts.dim() != 3 or right_hiddens.dim() != 3 or sample_dts.shape[:2] != right_hiddens.shape[:2]:
        return self.layer_intensity(self.get_states(right_hiddens, sample_dts))
    c_t, c_bar_t, delta_t, o_t = torch.chunk(right_hiddens, 4, dim=-1)  # [B, L, H] each
    x = _DecayedLinear.apply(c_t[:, :, None, :], c_bar_t[:, :, None, :], delta_t[:, :, None, :], o_t[:, :, None, :],
                             sample_dts[..., None], linear.weight, linear.bias)  # [B, L, S, K]
    return softplus(x)


def _ct_lstm_cell_decay(self, c_i, c_bar_i, delta_i, o_i, dtime):
    return ct_lstm_decay(c_i, c_bar_i, delta_i, o_i, dtime)


class _NHPRecurrence(torch.autograd.Function):
    """EasyTPP NHP's `forward` loop (nhp.py lines 113-153: `ContTimeLSTMCell.decay`, then the cell, lines 32-83) for
    every event in one node: per event EasyTPP's operations in its order (`_CTLSTMDecay`'s decay, cat + addmm, the
    gates' activations) into preallocated buffers, without autograd's graph, on one intra-op thread (products of
    [B, 2H] rows too small to split). Backward: the cell's and the decay's derivatives written out event by event;
    the gradients of the weight and of the type embeddings as products over all events at the end, the embedding
    side summed per type first (the embedding's rows are what the cell reads: [V, 7H] instead of [B L, 7H] rows).
    types [B, L] (long), table [V, H] (the embedding's weight), ndt [B, L] (minus the time deltas), weight
    [7H, 2H], bias [7H] -> left limits h(t_j-) [B, L-1, H] (j >= 1), right limits (c, c_bar, delta, o) [B, L, 4H]."""

    @staticmethod
    def forward(ctx, types, table, padding_idx, ndt, weight, bias):
        (B, L), H = types.shape, table.size(1)
        rows = types.t().reshape(-1)  # [L B]: event-major
        x = table.new_empty(L, B, 2 * H)  # per event the linear layer's input cat(x_j, h(t_j-))
        x[:, :, :H].copy_(table.index_select(0, rows).view(L, B, H))
        pre = table.new_empty(L, B, 7 * H)  # [i, i_bar, f, f_bar] sigmoid, z tanh in place; o, delta pre-activations
        e, tanh_c, dc = (table.new_empty(L, B, H) for _ in range(3))
        cs = table.new_empty(L, B, 2, H)  # (c(t_j-), c_bar_{j-1}): what f, f_bar multiply
        right = table.new_empty(B, L, 4 * H)
        prev = table.new_zeros(B, 4 * H)  # EasyTPP's get_init_state
        w_t = weight.t()
        # per event views, made once: [B, 2H], [B, 7H], [B, H] x 3, [B, 2, H], [B, 4H], [B, 1]
        steps = zip(x.unbind(0), pre.unbind(0), e.unbind(0), tanh_c.unbind(0), dc.unbind(0), cs.unbind(0),
                    right.unbind(1), ndt.t()[:, :, None].unbind(0))
        with _one_thread():
            for x_j, p_j, e_j, tc_j, dc_j, cs_j, out, ndt_j in steps:
                c, c_bar, delta, o = prev.split(H, dim=1)  # [B, H] each
                torch.exp(torch.mul(delta, ndt_j), out=e_j)  # exp(-delta dt): the sign folded into dt
                c_t = cs_j[:, 0]
                torch.addcmul(c_bar, torch.sub(c, c_bar, out=dc_j), e_j, out=c_t)  # c(t_j-)
                torch.tanh(c_t, out=tc_j)
                torch.mul(o, tc_j, out=x_j[:, H:])  # h(t_j-)
                cs_j[:, 1].copy_(c_bar)
                torch.addmm(bias, x_j, w_t, out=p_j)  # [B, 7H]: i, i_bar, f, f_bar, z, o, delta
                gates, z, p_o, p_delta = p_j.split((4 * H, H, H, H), dim=1)
                gates.sigmoid_()
                z.tanh_()
                c_cbar, delta_o = out.split(2 * H, dim=1)  # out [B, 4H]: c, c_bar, delta, o
                torch.sigmoid(p_o, out=delta_o[:, H:])
                torch._C._nn.softplus(p_delta, 1, 20, out=delta_o[:, :H])
                gates = gates.view(B, 2, 2, H)  # [:, 0] = (i, i_bar), [:, 1] = (f, f_bar)
                torch.add(gates[:, 1] * cs_j, gates[:, 0] * z[:, None, :], out=c_cbar.view(B, 2, H))
                prev = out
        ctx.padding_idx = padding_idx
        ctx.save_for_backward(rows, table, x, pre, e, tanh_c, dc, cs, right, ndt, weight)
        ctx.set_materialize_grads(False)
        return x[1:, :, H:].transpose(0, 1).contiguous(), right

    @staticmethod
    def backward(ctx, g_left, g_right):
        rows, table, x, pre, e, tanh_c, dc, cs, right, ndt, weight = ctx.saved_tensors
        L, B, H2 = x.shape
        H = H2 // 2
        w_h = weight[:, H:].contiguous()  # [7H, H]
        g_pre = torch.empty_like(pre)  # [L, B, 7H]
        if g_right is None:  # only the left limits are used
            g_right = right.new_zeros(right.shape)
        carry = None  # dL/d(right limit j - 1) through event j's decay and cell
        tmp = pre.new_empty(B, 2, 2, H)
        with _one_thread():
            for j in range(L - 1, -1, -1):
                g_r = g_right[:, j] if carry is None else carry.add_(g_right[:, j])
                gates, z = pre[j, :, :4 * H].view(B, 2, 2, H), pre[j, :, 4 * H:5 * H]
                g_cc = g_r[:, :2 * H].view(B, 2, H)  # dL/d(c_j, c_bar_j)
                torch.mul(g_cc, z[:, None, :], out=tmp[:, 0])  # d/d(i, i_bar)
                torch.mul(g_cc, cs[j], out=tmp[:, 1])  # d/d(f, f_bar)
                gp = g_pre[j]
                torch.ops.aten.sigmoid_backward.grad_input(tmp.view(B, 4 * H), pre[j, :, :4 * H],
                                                           grad_input=gp[:, :4 * H])
                g_z = torch.mul(g_cc[:, 0], gates[:, 0, 0]).addcmul_(g_cc[:, 1], gates[:, 0, 1])
                torch.ops.aten.tanh_backward.grad_input(g_z, z, grad_input=gp[:, 4 * H:5 * H])
                torch.ops.aten.sigmoid_backward.grad_input(g_r[:, 3 * H:], right[:, j, 3 * H:],
                                                           grad_input=gp[:, 5 * H:6 * H])
                torch.ops.aten.softplus_backward.grad_input(g_r[:, 2 * H:3 * H], pre[j, :, 6 * H:], 1, 20,
                                                            grad_input=gp[:, 6 * H:])
                if j == 0:  # event 0 decays from EasyTPP's zero initial state: no parameter behind it
                    break
                # dL/dh(t_j-) [B, H]: through the cell's input, plus the left limit's own gradient
                g_h = torch.mm(gp, w_h) if g_left is None else torch.addmm(g_left[:, j - 1], gp, w_h)
                o = right[:, j - 1, 3 * H:]
                carry = torch.empty_like(g_r)  # [B, 4H]: dL/d(c, c_bar, delta, o) of event j - 1
                g_c, g_cbar, g_delta, g_o = carry.split(H, dim=1)
                torch.mul(g_h, tanh_c[j], out=g_o)
                g = torch.ops.aten.tanh_backward(g_h.mul_(o), tanh_c[j])  # dL/dc(t_j-) through h(t_j-)
                g.addcmul_(g_cc[:, 0], gates[:, 1, 0])  # and through c_j = f c(t_j-) + i z
                torch.mul(g, e[j], out=g_c)
                torch.sub(g, g_c, out=g_cbar).addcmul_(g_cc[:, 1], gates[:, 1, 1])  # and c_bar_j = f_bar c_bar + ...
                torch.mul(g_c, ndt[:, j, None], out=g_delta).mul_(dc[j])
        g2 = g_pre.view(L * B, -1)  # [L B, 7H]
        per_type = g2.new_zeros(table.size(0), g2.size(1)).index_add_(0, rows, g2)  # [V, 7H]
        g_w = torch.cat([per_type.t() @ table, g2.t() @ x.view(L * B, H2)[:, H:]], dim=1)  # [7H, 2H]
        g_table = per_type @ weight[:, :H]  # [V, H]
        if ctx.padding_idx is not None:
            g_table[ctx.padding_idx] = 0.0  # nn.Embedding's padding row gets no gradient
        return None, g_table, None, None, g_w, g2.sum(0)


def _nhp_forward(self, batch):
    """EasyTPP NHP's `forward` (nhp.py lines 113-153) by `_NHPRecurrence` where its cell is EasyTPP's (biased linear
    layer, default softplus), its type embedding a plain lookup and the time deltas need no gradient, else EasyTPP's
    loop."""
    t_BN, dt_BN, marks_BN, _, _ = batch
    cell, emb = self.rnn_cell, self.layer_type_emb
    lin, sp = cell.linear_layer, cell.softplus
    if dt_BN.requires_grad or dt_BN.dtype != emb.weight.dtype or lin.bias is None or sp.beta != 1 \
            or sp.threshold != 20 or dt_BN.dim() != 2 or dt_BN.size(1) == 0 or emb.max_norm is not None \
            or emb.scale_grad_by_freq or emb.sparse or marks_BN.shape != dt_BN.shape:
        return super(type(self), self).forward(batch)
    return _NHPRecurrence.apply(marks_BN, emb.weight, emb.padding_idx, -dt_BN, lin.weight, lin.bias)


def _cumul_hazard_forward(self, hidden_states, time_delta_seqs):
    """EasyTPP FullyNN's `CumulHazardFunctionNetwork.forward` (fullynn.py lines 45-78): Lambda_k(dt) by its own
    operations, and d Lambda_k / d dt for every mark k at once by forward mode (the tangent of each layer carried
    beside its value) instead of one double-backward graph per mark; the same derivative, other summation order."""
    for p in self.parameters():  # EasyTPP's positivity clamp, as its forward does
        p.data = torch.clamp(p.data, min=self.params_eps)
    H = hidden_states.size(-1)
    t = self.layer_dense_1(time_delta_seqs.unsqueeze(dim=-1))  # [..., H]
    out = torch.tanh(self.layer_dense_2(torch.cat([hidden_states, t], dim=-1)))  # [..., H]
    # d t / d dt = w1 [H]; d(pre-activation of dense_2) / d dt = W2[:, H:] w1 [H]: one vector for every row
    d_pre = self.layer_dense_2.weight[:, H:] @ self.layer_dense_1.weight[:, 0]
    d_out = torch.ops.aten.tanh_backward(d_pre, out)  # (1 - out^2) d_pre: [..., H]
    for layer in self.module_list:
        out = torch.tanh(layer(out))
        d_out = torch.ops.aten.tanh_backward(nn.functional.linear(d_out, layer.weight), out)
    linear, softplus = self.layer_dense_3
    z = linear(out)  # [..., K]
    integral_lambda = softplus(z)
    # d softplus(z) / d dt = softplus'(z) (W3 d_out), with nn.Softplus's own beta and threshold
    derivative = torch.ops.aten.softplus_backward(nn.functional.linear(d_out, linear.weight), z,
                                                  softplus.beta, softplus.threshold)
    if not self.proper_marked_intensities:  # EasyTPP: d/d dt of the summed hazard, shared equally by the marks
        total = derivative.sum(-1, keepdim=True)
        derivative = total.expand(*total.shape[:-1], self.num_event_types) / self.num_event_types
    return integral_lambda, derivative


def relu_mlp(model: nn.Module) -> list[nn.Linear] | None:
    """The Linear layers of EasyTPP's `DNN` when it is Linear + ReLU layers without batch norm or active dropout
    (ODETPP's ODE function), else None (EasyTPP's own adjoint runs)."""
    if type(model).__name__ != "DNN" or model.use_bn or (model.dropout_rate and model.training):
        return None
    if not all(isinstance(a, nn.ReLU) for a in model.activation_layers):
        return None
    return list(model.linears)


def _mlp_vjp(linears, z, neg_a):
    """f(z) = relu(... relu(z W_1^T + b_1) ...) and, for the cotangent neg_a, neg_a df/dz and neg_a df/d(W_i, b_i)
    in the order of the parameters (EasyTPP's `aug_dynamics` by autograd.grad, written out). z [..., H]."""
    acts = [z]
    for lin in linears:
        acts.append(torch.relu(nn.functional.linear(acts[-1], lin.weight, lin.bias)))
    g, grads = neg_a, []
    for i in range(len(linears) - 1, -1, -1):
        g = torch.ops.aten.threshold_backward(g, acts[i + 1], 0)  # ReLU's backward, as autograd's
        x = acts[i]
        grads[:0] = [g.reshape(-1, g.size(-1)).T @ x.reshape(-1, x.size(-1)), g.reshape(-1, g.size(-1)).sum(0)]
        g = g @ linears[i].weight
    return acts[-1], g, grads


class _NeuralODEAdjoint(torch.autograd.Function):
    """EasyTPP's `NeuralODEAdjoint` (ode_tpp.py lines 18-109) for a ReLU MLP as the ODE function: the same RK4
    solve forward, the same adjoint RK4 solve backward with the MLP's vector-Jacobian products written out (no
    autograd.grad per stage). The parameters' adjoint, which EasyTPP's dynamics never read, is summed as one vector
    per parameter and scaled by mean(-dt) / 6 once (EasyTPP: [B, P] states scaled per row, then averaged over B)."""

    @staticmethod
    def forward(ctx, z_init, delta_t, ode_fn, solver, num_sample_times, linears, *params):
        ctx.linears, ctx.solver, ctx.num_sample_times = linears, solver, num_sample_times
        delta_t = delta_t * (1.0 / num_sample_times)
        with torch.no_grad():
            state = z_init
            for _ in range(num_sample_times):
                state = solver(diff_func=ode_fn, dt=delta_t, z0=state)
        ctx.save_for_backward(state, delta_t)
        return state

    @staticmethod
    def backward(ctx, grad_z):
        z, delta_t = ctx.saved_tensors
        linears, h = ctx.linears, -delta_t  # [B, 1]: the backward solve's step

        def aug(z, a):  # EasyTPP's aug_dynamics: f(z), -a df/dz, -a df/dtheta
            return _mlp_vjp(linears, z, -a)

        a = grad_z
        theta = None
        with torch.no_grad():
            for _ in range(ctx.num_sample_times):  # EasyTPP's rk4_step_method on [z, a], its operations in its order
                k1z, k1a, k1t = aug(z, a)
                k2z, k2a, k2t = aug(z + h / 2.0 * k1z, a + h / 2.0 * k1a)
                k3z, k3a, k3t = aug(z + h / 2.0 * k2z, a + h / 2.0 * k2a)
                k4z, k4a, k4t = aug(z + h * k3z, a + h * k3a)
                z = z + (k1z + 2.0 * k2z + 2.0 * k3z + k4z) * h / 6.0
                a = a + (k1a + 2.0 * k2a + 2.0 * k3a + k4a) * h / 6.0
                step = [t1 + 2.0 * t2 + 2.0 * t3 + t4 for t1, t2, t3, t4 in zip(k1t, k2t, k3t, k4t)]
                theta = step if theta is None else [t + s for t, s in zip(theta, step)]
            scale = h.mean() / 6.0  # EasyTPP: mean over the batch of theta's [B, P] state
            grad_theta = [t * scale for t in theta]
        return (a, None, None, None, None, None, *grad_theta)


def _neural_ode_forward(self, input_state, delta_time):
    """EasyTPP's `NeuralODE.forward` (ode_tpp.py lines 121-139) through `_NeuralODEAdjoint` where the ODE function
    is a ReLU MLP whose parameters are `self.params`, else through EasyTPP's own adjoint."""
    linears = relu_mlp(self.model)
    ours = [p for lin in (linears or ()) for p in (lin.weight, lin.bias)]
    if linears is None or len(ours) != len(self.params) or any(p is not q for p, q in zip(ours, self.params)):
        from easy_tpp.model.ode_tpp import NeuralODEAdjoint

        return NeuralODEAdjoint.apply(input_state, delta_time, self.model, self.solver, self.num_sample_times,
                                      *self.params)
    return _NeuralODEAdjoint.apply(input_state, delta_time, self.model, self.solver, self.num_sample_times,
                                   linears, *self.params)


class _RK4ReluGrid(torch.autograd.Function):
    """ODETPP's one RK4 step on the sample grid (`compute_states_at_sample_times`, EasyTPP's `rk4_step_method`) for
    f(z) = relu(z W^T + b), from z0 to z0 + d (k1 + 2 k2 + 2 k3 + k4) / 6 at every offset d of its interval.
    Every stage input is z0 plus a multiple of a slope, so by linearity its pre-activation is p1 + c_i W k_(i-1)
    with p1 = W z0 + b (c = d/2, d/2, d): k1, p1 and q1 = W k1 once per interval, then two products per offset
    (W k2, W k3) instead of three, and no bias or stage input on the grid; the same RK4 step, other rounding.
    Slices of intervals, recomputed in the backward (only the state and its gradient cross the whole grid).
    z0 [N, 1, H], d [N, S, 1]; the offsets get no gradient (the integral's grid needs none)."""

    @staticmethod
    def forward(ctx, z0, d, weight, bias):
        N, S, H = z0.size(0), d.size(1), z0.size(-1)
        p1, k1, q1 = _rk4_first_stage(z0, weight, bias)
        half, sixth = d * 0.5, d * (1.0 / 6.0)  # [N, S, 1]
        out = z0.new_empty(N, S, H)
        for r in _rows(N, S * H, RK4_CHUNK_FLOATS):
            k2, k3, k4 = _rk4_grid_slopes(half[r], d[r], p1[r], q1[r], weight)
            k4.add_(k2.add_(k3), alpha=2.0).add_(k1[r])  # k1 + 2 (k2 + k3) + k4
            torch.addcmul(z0[r], sixth[r], k4, out=out[r])
        ctx.save_for_backward(z0, d, half, sixth, p1, k1, q1, weight, bias)
        return out

    @staticmethod
    def backward(ctx, g):
        z0, d, half, sixth, p1, k1, q1, weight, bias = ctx.saved_tensors
        N, S, H = g.shape
        g_w = torch.zeros_like(weight)
        # per interval [N, 1, H]: sums over the offsets, combined after the slices
        sum_g, sum_c, s_pre, t2 = (torch.zeros_like(z0) for _ in range(4))
        for r in _rows(N, S * H, RK4_CHUNK_FLOATS):
            k2, k3, k4 = _rk4_grid_slopes(half[r], d[r], p1[r], q1[r], weight)
            torch.sum(g[r], 1, keepdim=True, out=sum_g[r])  # z0's own term in the output
            c = g[r] * sixth[r]  # dL/dk4 = dL/dk1; dL/dk2 = dL/dk3 = 2 c directly
            torch.sum(c, 1, keepdim=True, out=sum_c[r])
            ga = torch.ops.aten.threshold_backward(c, k4, 0)  # dL/dpre4, pre4 = p1 + d (k3 W^T)
            for k, scale in ((k3, d[r]), (k2, half[r])):  # back through stage 4, then stage 3
                s_pre[r] += ga.sum(1, keepdim=True)
                dm = ga.mul_(scale).view(-1, H)  # dL/d(k W^T)
                g_w.addmm_(dm.T, k.view(-1, H))
                ga = torch.ops.aten.threshold_backward(torch.mm(dm, weight).view_as(k).add_(c, alpha=2.0), k, 0)
            # ga: dL/dpre2, pre2 = p1 + d/2 q1
            s_pre[r] += ga.sum(1, keepdim=True)
            torch.bmm(half[r].transpose(1, 2), ga, out=t2[r])  # dL/dq1
        # per interval: q1 = k1 W^T, k1 = relu(p1), p1 = z0 W^T + b
        z, k1, t2 = z0.view(-1, H), k1.view(-1, H), t2.view(-1, H)
        g_w.addmm_(t2.T, k1)
        g_k1 = torch.addmm(sum_c.view(-1, H), t2, weight)
        g_p1 = torch.ops.aten.threshold_backward(g_k1, k1, 0).add_(s_pre.view(-1, H))
        g_w.addmm_(g_p1.T, z)
        g_z0 = torch.addmm(sum_g.view(-1, H), g_p1, weight).view_as(z0)
        return g_z0, None, g_w, g_p1.sum(0)


def _rk4_first_stage(z0, weight, bias):
    """p1 = z0 W^T + b, k1 = relu(p1), q1 = k1 W^T: [N, 1, H] each."""
    H = z0.size(-1)
    p1 = torch.addmm(bias, z0.view(-1, H), weight.T)
    k1 = torch.relu(p1)
    return p1.view_as(z0), k1.view_as(z0), torch.mm(k1, weight.T).view_as(z0)


def _rk4_grid_slopes(half, d, p1, q1, weight):
    """k2, k3, k4 of one RK4 step on a slice of intervals: k_i = relu(p1 + c_i (k_(i-1) W^T)), c = d/2, d/2, d."""
    H = p1.size(-1)
    k2 = torch.addcmul(p1, half, q1).relu_()
    m = torch.mm(k2.view(-1, H), weight.T).view_as(k2)
    k3 = torch.addcmul(p1, half, m, out=m).relu_()
    m = torch.mm(k3.view(-1, H), weight.T).view_as(k3)
    return k2, k3, torch.addcmul(p1, d, m, out=m).relu_()


def _relu_layer(y, weight, bias):
    """relu(y W^T + b) for y [B, H]: F.linear's addmm and an in-place relu (EasyTPP's DNN layer, bitwise)."""
    return torch.addmm(bias, y, weight.T).relu_()


def _rk4_relu_step(z, h, h2, weight, bias):
    """EasyTPP's `rk4_step_method` on f(z) = relu(z W^T + b), bitwise (its operations in its order, fewer passes):
    z + h (k1 + 2 k2 + 2 k3 + k4) / 6, stage inputs z + h/2 k1, z + h/2 k2, z + h k3. z [B, H], h = dt, h2 = dt / 2
    [B, 1]. (addcmul would round differently here: its product and sum are one fused operation.)"""
    k1 = _relu_layer(z, weight, bias)
    k2 = _relu_layer(torch.mul(k1, h2).add_(z), weight, bias)
    k3 = _relu_layer(torch.mul(k2, h2).add_(z), weight, bias)
    k4 = _relu_layer(torch.mul(k3, h).add_(z), weight, bias)
    # ((k1 + 2 k2) + 2 k3) + k4: alpha 2 is exact, so each add rounds once, as EasyTPP's
    return k1.add_(k2, alpha=2.0).add_(k3, alpha=2.0).add_(k4).mul_(h).div_(6.0).add_(z)


@contextlib.contextmanager
def _one_thread():
    """torch's intra-op threads at 1 meanwhile (restored after): ODETPP's event-by-event solves are hundreds of
    [B, H] products too small to split, where a second thread's hand-offs cost more than it does."""
    n = torch.get_num_threads()
    if n > 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if n > 1:
            torch.set_num_threads(n)


class _ODETPPSolves(torch.autograd.Function):
    """EasyTPP ODETPP's `forward` (ode_tpp.py lines 175-205) for a one-layer ReLU MLP as the ODE function, every
    event's `NeuralODE` solve in one node: left limit j = the solve from right limit j-1 over dt_j (`num_steps` RK4
    steps of dt_j / num_steps, bitwise EasyTPP's), right limit j = left limit j + type embedding j, from zeros.
    Backward: EasyTPP's adjoint RK4 solve per event (`NeuralODEAdjoint.backward`: z recomputed backward from the
    event's left limit, the adjoint a with it), the parameters' adjoint, which the dynamics never read, kept as every
    stage's vector-Jacobian factors and contracted in one product at the end, each event's scaled by mean(-dt) / 6
    (EasyTPP's [B, P] state averaged over B). emb [B, L, H], dts [B, L] -> left limits [B, L-1, H], right [B, L, H]."""

    @staticmethod
    def forward(ctx, emb, dts, num_steps, weight, bias):
        B, L, H = emb.shape
        h = dts[..., None] * (1.0 / num_steps)  # [B, L, 1]: NeuralODEAdjoint's delta_t * dt_ratio
        h2 = h / 2.0
        lefts, rights = emb.new_empty(B, L, H), emb.new_empty(B, L, H)
        right = emb.new_zeros(B, H)
        with _one_thread():
            for j in range(L):
                z = right
                for _ in range(num_steps):
                    z = _rk4_relu_step(z, h[:, j], h2[:, j], weight, bias)
                lefts[:, j] = z
                right = torch.add(z, emb[:, j], out=rights[:, j])
        ctx.num_steps = num_steps
        ctx.save_for_backward(lefts, h, weight, bias)
        return lefts[:, 1:].contiguous(), rights

    @staticmethod
    def backward(ctx, g_left, g_right):
        lefts, h, weight, bias = ctx.saved_tensors
        B, L, H = lefts.shape
        n = ctx.num_steps
        hb = -h  # [B, L, 1]: the backward solve's step
        hb2, hb6, h2, h6 = hb / 2.0, hb / 6.0, h / 2.0, h / 6.0
        # every stage's input y and factor g (the adjoint through the ReLU): dL/dW = sum scale g^T y, dL/db = sum scale g
        ys, gs = (lefts.new_empty(L, n, 4, B, H) for _ in range(2))
        g_emb = torch.empty_like(lefts)
        carry = None  # dL/d(right limit j) from the solve of event j + 1
        with _one_thread():
            for j in range(L - 1, -1, -1):
                g_r = g_right[:, j] if carry is None else g_right[:, j] + carry
                g_emb[:, j] = g_r
                a = g_r + g_left[:, j - 1] if j >= 1 else g_r  # dL/d(left limit j)
                ys[j, 0, 0] = lefts[:, j]
                for t in range(n):
                    a = _adjoint_rk4_step(ys[j, t], gs[j, t], a, hb[:, j], hb2[:, j], hb6[:, j], h[:, j], h2[:, j],
                                          h6[:, j], weight, bias, ys[j, t + 1, 0] if t + 1 < n else None)
                carry = a
        # [L, 1, 4]: mean(-dt) / 6 of the event (EasyTPP's scale; here with the sign of the negated adjoint folded
        # in) times RK4's stage weights 1, 2, 2, 1
        scale = h.mean(0)[:, 0].div(6.0)[:, None, None] * h.new_tensor([1.0, 2.0, 2.0, 1.0])
        gs.mul_(scale[..., None, None])
        g2, y2 = gs.view(-1, H), ys.view(-1, H)
        return g_emb, None, None, g2.T @ y2, g2.sum(0)


def _adjoint_rk4_step(y, g, a, hb, hb2, hb6, h, h2, h6, weight, bias, z_out):
    """One RK4 step of EasyTPP's augmented adjoint dynamics (z' = f(z), a' = -a df/dz) with step hb = -h, for
    f(z) = relu(z W^T + b): -a df/dz = -(a masked where f > 0) W, so the negated slopes are carried and h used for
    a. y [4, B, H] holds the stage inputs (y[0] = z, written by the caller), g [4, B, H] receives each stage's a
    masked where f > 0; z at the step's end goes to z_out (None: not needed). Returns a at the step's end."""
    ks, qs = [], []
    for s, (zs, as_) in enumerate(((hb2, h2), (hb2, h2), (hb, h), (None, None))):
        k = _relu_layer(y[s], weight, bias)
        torch.ops.aten.threshold_backward.grad_input(a if s == 0 else a_s, k, 0, grad_input=g[s])
        q = torch.mm(g[s], weight)  # -dL/d(stage slope of a)
        ks.append(k)
        qs.append(q)
        if zs is not None:
            torch.addcmul(y[0], zs, k, out=y[s + 1])
            a_s = torch.addcmul(a, as_, q)
    if z_out is not None:
        torch.addcmul(y[0], hb6, ks[0].add_(ks[1], alpha=2.0).add_(ks[2], alpha=2.0).add_(ks[3]), out=z_out)
    return torch.addcmul(a, h6, qs[0].add_(qs[1], alpha=2.0).add_(qs[2], alpha=2.0).add_(qs[3]))


def _odetpp_forward(self, time_delta_seqs, type_seqs):
    """EasyTPP ODETPP's `forward` (ode_tpp.py lines 175-205) by `_ODETPPSolves` where its NeuralODE is RK4 on a
    one-layer ReLU MLP whose parameters are its `params` and the time deltas need no gradient, else EasyTPP's."""
    ode = self.layer_neural_ode
    linears = relu_mlp(ode.model)
    ours = [] if linears is None else [linears[0].weight, linears[0].bias]
    emb = self.layer_type_emb(type_seqs)  # [B, L, H]
    if linears is None or len(linears) != 1 or ode.solver.__name__ != "rk4_step_method" \
            or time_delta_seqs.requires_grad or time_delta_seqs.dtype != emb.dtype \
            or len(ode.params) != 2 or any(p is not q for p, q in zip(ode.params, ours)):
        return super(type(self), self).forward(time_delta_seqs, type_seqs)
    return _ODETPPSolves.apply(emb, time_delta_seqs, ode.num_sample_times, *ours)


def _ode_states_at_sample_times(self, state_ti_plus, sample_dtimes):
    """EasyTPP ODETPP's `compute_states_at_sample_times` (ode_tpp.py lines 254-272): one RK4 step from the right
    limits, by `_RK4ReluGrid` where the ODE function is one Linear + ReLU layer, else by EasyTPP's solver."""
    linears = relu_mlp(self.event_model)
    z0, dt = state_ti_plus[..., None, :], sample_dtimes[..., None]  # [B, L, 1, H], [B, L, S, 1]
    if linears is None or len(linears) != 1 or self.solver.__name__ != "rk4_step_method" or dt.requires_grad \
            or state_ti_plus.shape[:-1] != sample_dtimes.shape[:-1]:
        return self.solver(diff_func=self.event_model, dt=dt, z0=z0)
    H, S = z0.size(-1), dt.size(-2)
    out = _RK4ReluGrid.apply(z0.reshape(-1, 1, H), dt.reshape(-1, S, 1), linears[0].weight, linears[0].bias)
    return out.view(*sample_dtimes.shape, H)  # [B, L, S, H]


def _replace_modules(model: nn.Module, cls_name: str, make) -> int:
    """Every submodule whose class is named `cls_name` replaced by make(module) in its parent (one replacement
    per module, so a module shared by two parents stays shared); how many."""
    made = {}
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child).__name__ == cls_name:
                if id(child) not in made:
                    made[id(child)] = make(child)
                setattr(parent, name, made[id(child)])
    return len(made)


def fuse_scaled_softplus(model: nn.Module) -> int:
    return _replace_modules(model, "ScaledSoftplus", FusedScaledSoftplus.replacing)


def _swap_class(model: nn.Module, name: str, make) -> int:
    """Every submodule of class `name` given the class make() (a subclass: same parameters); how many."""
    found = [m for m in model.modules() if type(m).__name__ == name]
    for m in found:
        m.__class__ = make()
    return len(found)


def _method_swap(name: str, module: str, cls: str, **methods) -> Callable[[nn.Module], int]:
    """A replacement `name`: every `cls` (EasyTPP's `module`) in a model becomes a subclass with `methods` replaced."""
    def swap(model: nn.Module) -> int:
        return _swap_class(model, cls, lambda: _fused_class(module, cls, methods))
    swap.__name__ = swap.__qualname__ = name
    return swap


fuse_ct_lstm_decay = _method_swap("fuse_ct_lstm_decay", "easy_tpp.model.nhp", "ContTimeLSTMCell",
                                  decay=_ct_lstm_cell_decay)
fuse_nhp = _method_swap("fuse_nhp", "easy_tpp.model.nhp", "NHP", forward=_nhp_forward, get_states=_nhp_get_states,
                    intensities_at_offsets=_nhp_intensities_at_offsets)
fuse_sahp_decay = _method_swap("fuse_sahp_decay", "easy_tpp.model.sahp", "SAHP", state_decay=_sahp_state_decay)
fuse_cumul_hazard = _method_swap("fuse_cumul_hazard", "easy_tpp.model.fullynn", "CumulHazardFunctionNetwork",
                                 forward=_cumul_hazard_forward)
fuse_neural_ode = _method_swap("fuse_neural_ode", "easy_tpp.model.ode_tpp", "NeuralODE", forward=_neural_ode_forward)
fuse_odetpp = _method_swap("fuse_odetpp", "easy_tpp.model.ode_tpp", "ODETPP", forward=_odetpp_forward,
                           compute_states_at_sample_times=_ode_states_at_sample_times)


# ------------------------------------------------------------------ THP (issue 27, item 2: THP's own replacements)

def _head(t, h: int, n_head: int):
    """Head h of [B, L, n_head * d_k] as a [B, L, d_k] view (row stride n_head * d_k: bmm reads it without a copy)."""
    d_k = t.size(-1) // n_head
    return t[..., h * d_k:(h + 1) * d_k]


def _merge(parts):
    """n_head tensors [B, L, d_k] -> [B, L, n_head * d_k], contiguous (EasyTPP's transpose + contiguous)."""
    return torch.stack(parts, dim=2).flatten(2)


class _MaskedAttention(torch.autograd.Function):
    """EasyTPP's `attention` (baselayer.py lines 7-17) without dropout, one bmm per head on strided views of the
    projections: softmax(masked_fill(q k^T / sqrt(d_k), mask, -1e9)) v, its backward written out with autograd's
    formulas (bmm's, softmax's, masked_fill's, the division's) in EasyTPP's order: bitwise its values and gradients
    (each batch item's products are the same GEMMs), and neither q, k, v nor their gradients are gathered per head
    (EasyTPP's view + transpose copies them, in both directions). q, k, v [B, L, n_head * d_k] (the projections),
    masked [B, 1, Lq, Lk] bool -> [B, Lq, n_head * d_k]."""

    @staticmethod
    def forward(ctx, q, k, v, masked, n_head):
        B, Lq, Lk = q.size(0), q.size(1), k.size(1)
        scale = math.sqrt(q.size(-1) // n_head)
        scores = q.new_empty(n_head, B, Lq, Lk)  # head-major: each head's block contiguous for bmm's out
        for h in range(n_head):
            torch.bmm(_head(q, h, n_head), _head(k, h, n_head).transpose(1, 2), out=scores[h])
        p = torch.softmax(scores.div_(scale).masked_fill_(masked.flatten(0, 1), -1e9), dim=-1)  # [n_head, B, Lq, Lk]
        ctx.save_for_backward(q, k, v, p, masked)
        ctx.n_head = n_head
        return _merge([torch.bmm(p[h], _head(v, h, n_head)) for h in range(n_head)])

    @staticmethod
    def backward(ctx, g):
        q, k, v, p, masked = ctx.saved_tensors
        n = ctx.n_head
        B, Lq, Lk = p.size(1), p.size(2), p.size(3)
        g_p = torch.empty_like(p)
        for h in range(n):
            torch.bmm(_head(g, h, n), _head(v, h, n).transpose(1, 2), out=g_p[h])
        g_v = _merge([torch.bmm(p[h].transpose(1, 2), _head(g, h, n)) for h in range(n)])
        g_s = torch._softmax_backward_data(g_p, p, -1, p.dtype).masked_fill_(masked.flatten(0, 1), 0.0)
        g_s = g_s.div_(math.sqrt(q.size(-1) // n))  # [n_head, B, Lq, Lk]
        g_q = _merge([torch.bmm(g_s[h], _head(k, h, n)) for h in range(n)])
        g_k = _merge([torch.bmm(_head(q, h, n).transpose(1, 2), g_s[h]).transpose(1, 2) for h in range(n)])  # (q^T g_s)^T
        return g_q, g_k, g_v, None, None


def _mha_forward(self, query, key, value, mask, output_weight=False):
    """EasyTPP's `MultiHeadAttention.forward` (baselayer.py lines 58-79) with its `attention` by `_MaskedAttention`
    where dropout is inactive and no weights are asked for, else EasyTPP's own forward (its dropout draws)."""
    from easy_tpp.model.baselayer import MultiHeadAttention

    if output_weight or mask is None or (self.training and self.dropout.p > 0):
        return MultiHeadAttention.forward(self, query, key, value, mask, output_weight)
    q, k, v = [lin(x) for lin, x in zip(self.linears, (query, key, value))]  # [B, L, D] each
    masked = mask.unsqueeze(1) if mask.dtype == torch.bool else mask.unsqueeze(1) > 0  # [B, 1, Lq, Lk]
    x = _MaskedAttention.apply(q, k, v, masked, self.n_head)
    return self.linears[-1](x) if self.output_linear else x


class _AffineInTime(torch.autograd.Function):
    """THP's Eq. (6) states on the sample grid, decay * s + c + base (EasyTPP's operations in its order: bitwise its
    values), in one node: its backward reduces the gradient once per operand with autograd's own reductions (bitwise
    its gradients) without autograd's chain of broadcast adds and products.
    decay, base [1, 1, 1, K], s [B, L, S, 1] (no gradient), c [B, L, 1, K] -> [B, L, S, K]."""

    @staticmethod
    def forward(ctx, decay, s, c, base):
        ctx.save_for_backward(s)
        return (decay * s + c).add_(base)

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        K = g.size(-1)
        g_c = g.sum(dim=2, keepdim=True)  # [B, L, 1, K]
        g_decay = (g * s).sum_to_size(1, 1, 1, K)  # (one mm over the 10^5 terms lost digits)
        return g_decay, None, g_c, g.sum_to_size(1, 1, 1, K)


def _thp_states_at_sample_times(self, event_states, sample_dtimes):
    """EasyTPP THP's `compute_states_at_sample_times` (thp.py lines 146-172) by `_AffineInTime` where the offsets
    need no gradient, else EasyTPP's expression."""
    decay, base = self.factor_intensity_decay[None, None, ...], self.factor_intensity_base[None, None, ...]
    s = sample_dtimes[..., None]  # [B, L, S, 1]
    c = self.layer_intensity_hidden(event_states[:, :, None, :])  # [B, L, 1, K]
    if s.requires_grad or s.dim() != 4 or s.shape[:2] != c.shape[:2]:
        return decay * s + c + base
    return _AffineInTime.apply(decay, s, c, base)


THP_CHUNK_FLOATS = 1 << 18  # grid floats per slice of `_THPIntegral`: its temporaries stay in the cache


def _softplus_slice(x, log_beta, threshold):
    """`_ScaledSoftplus.forward`'s operations on one slice of the grid (bitwise its values): y and dy/dx."""
    beta = log_beta.exp()
    bx = x * beta
    if bool(bx.max() <= LOG_1E5):
        return torch.exp(bx).log1p_().div_(beta), bx.sigmoid_()
    y = torch.where(bx <= threshold, torch.log1p(bx.clamp(max=LOG_1E5).exp()) / beta, x)
    return y, torch.sigmoid(bx).masked_fill_(bx > LOG_1E5, 0.0).masked_fill_(bx > threshold, 1.0)


class _THPIntegral(torch.autograd.Function):
    """THP's sampled integral per interval, mean_s sum_k softplus_k(decay_k s + c_k + base_k) (thp.py lines 146-172
    with baselayer.py lines 28-38 and the project's `lam.sum(-1).mean(-1)`: the same operations, bitwise their
    values), slice by slice of the intervals so the [B, L, S, K] grid never leaves the cache. The upstream gradient
    is one number per interval, so the forward also sums over s what the backward needs (dy/dx, dy/dx s,
    dy/dlog_beta = x dy/dx - y): the backward is [B, L, K]-sized (gradients at float rounding: other summation
    orders). c [B, L, K], s [B, L, S] (no gradient), decay, base, log_beta [K] -> [B, L]."""

    @staticmethod
    def forward(ctx, c, s, decay, base, log_beta, threshold, grad_mode):
        B, L, S = s.shape
        K = c.size(-1)
        c2, s2 = c.reshape(B * L, 1, K), s.reshape(B * L, S, 1)
        out = c.new_empty(B * L)
        grad = grad_mode and any(ctx.needs_input_grad[i] for i in (0, 2, 3, 4))  # (True under no_grad too)
        d_sum, ds_sum, lb_sum = (c.new_empty(B * L, K) for _ in range(3)) if grad else (None,) * 3
        decay4, base4 = decay.view(1, 1, K), base.view(1, 1, K)
        for r in _rows(B * L, S * K, THP_CHUNK_FLOATS):
            x = (decay4 * s2[r] + c2[r]).add_(base4)  # [n, S, K]: `_AffineInTime`'s operations
            y, d = _softplus_slice(x, log_beta, threshold)
            torch.mean(y.sum(-1), -1, out=out[r])
            if grad:
                torch.sum(d, 1, out=d_sum[r])
                torch.sum(d.mul_(s2[r]), 1, out=ds_sum[r])
                torch.sum(y, 1, out=lb_sum[r])
        if grad:  # sum_s (x d - y) = decay sum_s d s + (c + base) sum_s d - sum_s y: [B L, K], not the grid
            lb_sum = torch.addcmul(ds_sum * decay, c.reshape(-1, K) + base, d_sum).sub_(lb_sum)
        ctx.save_for_backward(d_sum, ds_sum, lb_sum)
        ctx.S = S
        return out.view(B, L)

    @staticmethod
    def backward(ctx, g):
        d_sum, ds_sum, lb_sum = ctx.saved_tensors
        B, L = g.shape
        w = (g / ctx.S).reshape(B * L, 1)  # the mean's gradient, equal at every sample and mark
        g_c = (d_sum * w).view(B, L, -1)
        return g_c, None, (ds_sum * w).sum(0), g_c.sum((0, 1)), (lb_sum * w).sum(0), None, None


def thp_integral(model, hidden, sample_dtimes):
    """mean_s sum_k lambda_k(t_j + s) per interval: `_THPIntegral` on a fused THP where nothing needs the offsets'
    gradient, else EasyTPP's operations. hidden [B, L, D], sample_dtimes [B, L, S] -> [B, L]."""
    from easy_tpp.model.thp import THP

    m = model.model
    if sample_dtimes.requires_grad or not (isinstance(m, THP) and isinstance(m.softplus, FusedScaledSoftplus)):
        return m.softplus(m.compute_states_at_sample_times(hidden, sample_dtimes)).sum(-1).mean(-1)
    c = m.layer_intensity_hidden(hidden)  # [B, L, K]
    return _THPIntegral.apply(c, sample_dtimes, m.factor_intensity_decay.view(-1), m.factor_intensity_base.view(-1),
                              m.softplus.log_beta, m.softplus.threshold, torch.is_grad_enabled())


fuse_attention = _method_swap("fuse_attention", "easy_tpp.model.baselayer", "MultiHeadAttention",
                              forward=_mha_forward)
fuse_thp_states = _method_swap("fuse_thp_states", "easy_tpp.model.thp", "THP",
                               compute_states_at_sample_times=_thp_states_at_sample_times)


# EasyTPP class -> the replacements applied to it (classes absent here run EasyTPP's modules unchanged)
FUSED = {"NHP": (fuse_scaled_softplus, fuse_ct_lstm_decay, fuse_nhp),
         "THP": (fuse_scaled_softplus, fuse_attention, fuse_thp_states),
         "SAHP": (fuse_scaled_softplus, fuse_sahp_decay), "AttNHP": (fuse_scaled_softplus,),
         "FullyNN": (fuse_cumul_hazard,), "ODETPP": (fuse_neural_ode, fuse_odetpp)}


def fuse(class_name: str, model: nn.Module) -> nn.Module:
    """EasyTPP's `class_name` instance with FUSED's replacements, in place; the parameters stay the same objects."""
    for replace in FUSED.get(class_name, ()):
        if not replace(model):
            raise RuntimeError(f"{replace.__name__} found nothing to replace in EasyTPP's {class_name}")
    return model
