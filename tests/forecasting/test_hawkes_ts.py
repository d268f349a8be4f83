"""The time-series variant of Eq. 21: kernel modulation checked against explicit loops, kernels fixed to 1
give plain attention, and the two token layouts forecast the right shapes."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from timerepro.models.forecast.hawkes_ts import HawkesTS, HawkesTSAttention


def phi_by_hand(kernel, h: int, dt: float) -> float:
    """The kernel MLP of head h evaluated with plain Python arithmetic on its weights."""
    w = {n: getattr(kernel.mlp, n).detach() for n in ("w0", "b0", "wh", "bh", "wo", "bo")}
    x = dt / kernel.mlp.time_scale
    gelu = lambda a: 0.5 * a * (1 + math.erf(a / math.sqrt(2)))
    z = [gelu(x * float(w["w0"][0, h, i]) + float(w["b0"][0, h, i])) for i in range(w["w0"].size(-1))]
    for layer in range(w["wh"].size(0)):
        z = [gelu(sum(z[a] * float(w["wh"][layer, 0, h, a, b]) for a in range(len(z))) + float(w["bh"][layer, 0, h, b]))
             for b in range(len(z))]
    return sum(z[a] * float(w["wo"][0, h, a]) for a in range(len(z))) + float(w["bo"][0, h])


def attention_by_hand(att: HawkesTSAttention, x: torch.Tensor, dt: torch.Tensor, kernels: bool) -> torch.Tensor:
    """Eq. 21 with explicit loops over heads j and k: Q_{j,k}, K_{k,j}, V_{k,j} built one by one."""
    N, D = x.shape
    H, d = att.h, att.d
    q, k, v = att.w_q(x).detach(), att.w_k(x).detach(), att.w_v(x).detach()  # [N, D]
    out = torch.zeros(N, D, dtype=torch.float64)
    for h in range(H):
        sl = slice(h * d, (h + 1) * d)
        for j in range(N):
            scores, values = [], []
            for kk in range(N):
                t = float(dt[j, kk])
                pq, pk, pv = ((phi_by_hand(att.kernels[n], h, t) for n in "qkv") if kernels else (1.0, 1.0, 1.0))
                Q = q[j, sl].double() * pq  # Q_{j,k} = W_Q v_j phi_Q(t_j - t_k)
                K = k[kk, sl].double() * pk  # K_{k,j} = W_K v_k phi_K(t_j - t_k)
                V = v[kk, sl].double() * pv  # V_{k,j} = W_V v_k phi_V(t_j - t_k)
                scores.append(float(Q @ K) / math.sqrt(d))
                values.append(V)
            a = torch.softmax(torch.tensor(scores, dtype=torch.float64), 0)
            out[j, sl] = sum(a[i] * values[i] for i in range(N))
    return out


def test_kernel_modulation_follows_eq21_by_hand():
    torch.manual_seed(0)
    att = HawkesTSAttention(4, 2, phi_width=3, phi_depth=2, dropout=0.0).eval()
    x = torch.randn(1, 3, 4)
    times = torch.tensor([0.0, 1.0, 3.0])
    dt = times[:, None] - times[None, :]  # [3, 3], signed: the encoder attends both ways
    got, weights = att(x, dt)
    want = attention_by_hand(att, x[0], dt, kernels=True)
    assert torch.allclose(got[0].double(), want, atol=1e-5)
    assert torch.allclose(weights.sum(-1), torch.ones(1, 2, 3))
    # the kernels matter: the same weights without them give something else
    plain = attention_by_hand(att, x[0], dt, kernels=False)
    assert (got[0].double() - plain).abs().max() > 1e-3


def test_kernels_fixed_to_one_give_plain_attention():
    torch.manual_seed(1)
    att = HawkesTSAttention(6, 3, phi_width=4, phi_depth=2, dropout=0.0).eval()
    with torch.no_grad():
        for kern in att.kernels.values():  # read-out weight 0, bias 1: phi == 1 for every dt
            kern.mlp.wo.zero_()
            kern.mlp.bo.fill_(1.0)
    x = torch.randn(2, 5, 6)
    dt = torch.arange(5.0)[:, None] - torch.arange(5.0)[None, :]
    got, _ = att(x, dt)
    # plain scaled dot-product attention with the same projections: [B, H, N, d]
    q, k, v = (lin(x).view(2, 5, 3, 2).transpose(1, 2) for lin in (att.w_q, att.w_k, att.w_v))
    want = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(2, 5, 6)
    assert torch.allclose(got, want, atol=1e-6)
    const = HawkesTSAttention(6, 3, phi_width=4, phi_depth=2, dropout=0.0, kernel="constant").eval()
    const.load_state_dict({n: p for n, p in att.state_dict().items() if not n.startswith("kernels")})
    assert torch.allclose(const(x, dt)[0], want, atol=1e-6)


@pytest.mark.parametrize("tokens", ["temporal", "inverted"])
def test_forecast_shapes_and_window_normalization(tokens):
    torch.manual_seed(2)
    model = HawkesTS(3, 16, 8, d_model=8, n_heads=2, e_layers=1, d_ff=16, phi_width=4, tokens=tokens).eval()
    x = torch.randn(4, 16, 3)
    y = model(x)
    assert y.shape == (4, 8, 3)
    # iTransformer's per-window normalization: shifting a variate's history shifts its forecast by the same amount
    shift = torch.tensor([5.0, -2.0, 0.5])
    assert torch.allclose(model(x + shift), y + shift, atol=1e-4)
    if tokens == "inverted":  # every variate token has the same time stamps
        assert torch.count_nonzero(model.dt) == 0 and model.dt.shape == (3, 3)
    else:
        assert model.dt[5, 2] == 3 and model.dt[2, 5] == -3 and model.dt.shape == (16, 16)


def test_unknown_token_layout_or_kernel_is_refused():
    with pytest.raises(ValueError, match="tokens"):
        HawkesTS(3, 16, 8, tokens="patches")
    with pytest.raises(ValueError, match="kernel"):
        HawkesTS(3, 16, 8, kernel="gaussian")
