"""Hawkes Attention (paper sections 2.1-2.5): modulation per Eqs. 9-11, causality, padding, intensities."""

import math

import pytest
import torch
import torch.nn.functional as F

from timerepro.models.tpp.hawkes_attention import (HawkesAttention, HawkesMultiHeadAttention, TypeKernels,
                                                   causal_pad_mask)

K = 4


def _inputs(B=3, L=7, seed=0, K=K):
    g = torch.Generator().manual_seed(seed)
    times = torch.cumsum(torch.rand(B, L, generator=g) * 2, dim=1)
    types = torch.randint(0, K, (B, L), generator=g)
    types[1, L - 2:] = K  # padding
    types[B - 1, 3:] = K
    times[types == K] = float(K)  # EasyTPP pads time fields with the pad id
    return times, types


def _phi_reference(kernels: TypeKernels, c: int, h: int, dt: float) -> float:
    """The MLP of type c, head h written out layer by layer."""
    x = torch.tensor([dt / kernels.time_scale])
    z = F.gelu(x * kernels.w0[c, h] + kernels.b0[c, h])  # [W]
    for i in range(kernels.wh.size(0)):
        z = F.gelu(z @ kernels.wh[i, c, h] + kernels.bh[i, c, h])
    return float((z @ kernels.wo[c, h] + kernels.bo[c, h]).detach())


def test_phi_one_gives_unmodulated_masked_attention(monkeypatch):
    torch.manual_seed(0)
    mha = HawkesMultiHeadAttention(K, 12, 3, 5, 6, phi_width=4, phi_depth=2, dropout=0.0).eval()
    times, types = _inputs()
    x = torch.randn(3, 7, 12)
    mask = causal_pad_mask(types, K)
    monkeypatch.setattr(mha.phi, "rowwise", lambda dt, ty: torch.ones(*dt.shape, 3))
    out, _ = mha.attend(x, x, times, types, mask)
    B, L = types.shape
    q = mha.w_q(x).view(B, L, 3, 5).transpose(1, 2)
    k = mha.w_k(x).view(B, L, 3, 5).transpose(1, 2)
    v = mha.w_v(x).view(B, L, 3, 6).transpose(1, 2)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask[:, None])  # torch's own masked attention
    torch.testing.assert_close(out, ref.transpose(1, 2).reshape(B, L, 18))
    # and the kernel="constant" variant (THP's phi == 1) is the same computation
    const = HawkesMultiHeadAttention(K, 12, 3, 5, 6, phi_width=4, phi_depth=2, dropout=0.0, kernel="constant").eval()
    const.load_state_dict({k_: v_ for k_, v_ in mha.state_dict().items() if not k_.startswith("phi.")})
    torch.testing.assert_close(const.attend(x, x, times, types, mask)[0], out)


@pytest.mark.parametrize("shared", [False, True])
@torch.no_grad()
def test_modulation_follows_equations_9_to_11(shared):
    """Q_{j,k} = W_Q x_j phi_{c_j}(t_j - t_k), K_{k,j} = W_K x_k phi_{c_k}(...), V_{k,j} = W_V x_k phi_{c_k}(...),
    written with explicit loops and the kernels evaluated one scalar at a time."""
    torch.manual_seed(1)
    H, dk, dv = 2, 3, 4
    mha = HawkesMultiHeadAttention(K, 8, H, dk, dv, phi_width=5, phi_depth=3, dropout=0.0, shared_phi=shared,
                                   time_scale=2.0).eval()
    times, types = _inputs(B=2, L=5, seed=3)
    x = torch.randn(2, 5, 8)
    mask = causal_pad_mask(types, K)
    out, _ = mha.attend(x, x, times, types, mask)
    Wq, Wk, Wv = mha.w_q.weight, mha.w_k.weight, mha.w_v.weight
    for b in range(2):
        for j in range(5):
            if types[b, j] == K:
                continue
            heads = []
            for h in range(H):
                scores, values = [], []
                for k in range(j + 1):
                    if types[b, k] == K:
                        continue
                    dt = float(times[b, j] - times[b, k])
                    cq, ck = (0, 0) if shared else (int(types[b, j]), int(types[b, k]))
                    Q = (Wq[h * dk:(h + 1) * dk] @ x[b, j]) * _phi_reference(mha.phi, cq, h, dt)
                    Kv = (Wk[h * dk:(h + 1) * dk] @ x[b, k]) * _phi_reference(mha.phi, ck, h, dt)
                    V = (Wv[h * dv:(h + 1) * dv] @ x[b, k]) * _phi_reference(mha.phi, ck, h, dt)
                    scores.append(Q @ Kv / math.sqrt(dk))
                    values.append(V)
                a = torch.softmax(torch.stack(scores), 0)
                heads.append((a[:, None] * torch.stack(values)).sum(0))
            torch.testing.assert_close(out[b, j], torch.cat(heads), rtol=1e-4, atol=1e-5)


VARIANTS = [dict(), dict(shared_phi=True), dict(positional_encoding=True), dict(d_rnn=8),
            dict(kernel="constant", positional_encoding=True)]


@pytest.mark.parametrize("kw", VARIANTS)
def test_no_event_attends_to_a_later_one(kw):
    torch.manual_seed(2)
    model = HawkesAttention(K, d_model=8, d_inner=16, d_k=4, d_v=4, phi_width=4, dropout=0.0, **kw).eval()
    times, types = _inputs(B=2, L=9, seed=4, K=K)
    types[:] = types.clamp(max=K - 1)
    times = torch.cumsum(torch.rand(2, 9) + 0.1, 1)
    h = model.encode(times, types)
    t2, c2 = times.clone(), types.clone()
    t2[:, 5:] += torch.rand(2, 4) * 3  # move and retype events 5..8
    c2[:, 5:] = (c2[:, 5:] + 1) % K
    h2 = model.encode(t2, c2)
    torch.testing.assert_close(h[:, :5], h2[:, :5])
    assert not torch.allclose(h[:, 5:], h2[:, 5:])


@pytest.mark.parametrize("kw", VARIANTS)
def test_padding_changes_nothing(kw):
    """A sequence encoded alone equals the same sequence padded in a batch beside a longer one."""
    torch.manual_seed(3)
    model = HawkesAttention(K, d_model=8, d_inner=16, d_k=4, d_v=4, phi_width=4, dropout=0.0, **kw).eval()
    t_short, c_short = torch.tensor([[0.0, 0.4, 1.1, 1.5]]), torch.tensor([[1, 0, 3, 1]])
    t_pad = torch.cat([t_short, torch.full((1, 3), float(K))], 1)
    c_pad = torch.cat([c_short, torch.full((1, 3), K)], 1)
    batch_t = torch.cat([t_pad, torch.cumsum(torch.rand(1, 7), 1)])
    batch_c = torch.cat([c_pad, torch.randint(0, K, (1, 7))])
    torch.testing.assert_close(model.encode(batch_t, batch_c)[0, :4], model.encode(t_short, c_short)[0])


def test_intensities_positive_and_shaped():
    """softplus > 0 (in float32 down to pre-activations of about -100; the log-likelihood adds EASYTPP's eps)."""
    torch.manual_seed(4)
    for seed in range(3):
        model = HawkesAttention(K, d_model=8, d_inner=16, d_k=4, d_v=4, phi_width=4, d_rnn=8)
        times, types = _inputs(B=3, L=6, seed=seed)
        h = model.encode(times, types)
        s = torch.rand(3, 6, 11) * 20
        lam = model.intensities_at(s, h)
        assert lam.shape == (3, 6, 11, K)
        assert torch.isfinite(lam).all() and (lam > 0).all()


def test_scaled_softplus_matches_formula():
    model = HawkesAttention(K, d_model=8, d_inner=8, d_k=4, d_v=4)
    with torch.no_grad():
        model.log_beta.copy_(torch.tensor([0.0, 1.0, -1.0, 0.5]))
    x = torch.linspace(-5, 5, 11)[:, None].expand(-1, K)
    beta = model.log_beta.exp()
    torch.testing.assert_close(model.scaled_softplus(x), torch.log1p(torch.exp(beta * x)) / beta)


def test_per_type_kernels_and_shared_ablation():
    per = HawkesAttention(K, d_model=8, d_inner=8, d_k=4, d_v=4, phi_width=6, phi_depth=2, num_heads=2)
    shared = HawkesAttention(K, d_model=8, d_inner=8, d_k=4, d_v=4, phi_width=6, phi_depth=2, num_heads=2,
                             shared_phi=True)
    grid = torch.linspace(0, 3, 13)
    curves = per.kernel_curves(grid)
    assert curves.shape == (2, K, 2, 13)  # layers, types, heads, grid
    assert not torch.allclose(curves[:, 0], curves[:, 1])  # distinct kernels per type
    assert shared.kernel_curves(grid).shape == (2, 1, 2, 13)
    n_phi = lambda m: sum(p.numel() for n, p in m.named_parameters() if ".phi." in n)
    assert n_phi(per) == K * n_phi(shared)
    kern = per.layers[0].attn.phi
    assert curves[0, 2, 1, 5].item() == pytest.approx(_phi_reference(kern, 2, 1, float(grid[5])), rel=1e-5, abs=1e-6)


def test_optimizer_groups_decay_only_the_kernels():
    model = HawkesAttention(K, d_model=8, d_inner=8, d_k=4, d_v=4, d_rnn=4)
    phi, rest = model.optimizer_param_groups(0.01)
    assert phi["weight_decay"] == 0.01 and rest["weight_decay"] == 0.0
    names = {id(p): n for n, p in model.named_parameters()}
    assert phi["params"] and all(".phi." in names[id(p)] for p in phi["params"])
    assert len(phi["params"]) + len(rest["params"]) == len(list(model.parameters()))
    torch.optim.Adam(model.optimizer_param_groups(0.001), lr=1e-3)  # accepted as is
