"""`models.dropout`: the fast CPU mask has nn.Dropout's distribution, scaling and gradient, and is fixed by
torch's seed; `dygformer.attend` spells out scaled_dot_product_attention's math path (`attend_heads`: per head)."""

import math

import pytest
import torch
import torch.nn.functional as F

from timerepro.models import dropout as drop
from timerepro.models.graph.dygformer import attend, attend_heads


def test_the_mask_drops_each_entry_with_probability_p_independently():
    torch.manual_seed(0)
    p, n = 0.1, 1 << 21
    dropped = drop.dropped_mask(torch.Size([n]), p)
    sigma = math.sqrt(p * (1 - p) / n)
    assert abs(dropped.float().mean().item() - p) < 5 * sigma
    # neighbouring entries share a 64-bit draw: their joint drop rate must still be p^2
    pairs = dropped.view(-1, 2)
    both = (pairs[:, 0] & pairs[:, 1]).float().mean().item()
    assert abs(both - p * p) < 5 * math.sqrt(p * p * (1 - p * p) / (n // 2))


def test_the_kept_mask_is_the_dropped_masks_complement_from_the_same_draws():
    shape = torch.Size([300, 200])
    torch.manual_seed(9)
    dropped = drop.dropped_mask(shape, 0.1)
    torch.manual_seed(9)
    kept = drop.kept_mask(shape, 0.1)
    assert kept.dtype == torch.uint8
    assert torch.equal(kept.bool(), ~dropped)
    assert 0 < int(dropped.sum()) < dropped.numel()


def test_kept_entries_are_scaled_and_the_gradient_is_masked_the_same_way():
    torch.manual_seed(1)
    x = torch.randn(300, 200, requires_grad=True)
    p = 0.3
    y = drop.dropout(x, p, True)
    dropped = y.detach() == 0
    assert 0.25 < dropped.float().mean().item() < 0.35
    torch.testing.assert_close(y[~dropped], x.detach()[~dropped] / (1 - p))
    grad = torch.randn_like(x)
    y.backward(grad)
    torch.testing.assert_close(x.grad, torch.where(dropped, 0.0, grad / (1 - p)))


def test_torchs_seed_fixes_the_mask_and_another_seed_changes_it():
    x = torch.ones(256, 256)
    masks = []
    for seed in (5, 5, 6):
        torch.manual_seed(seed)
        masks.append(drop.dropout(x, 0.5, True) == 0)
    assert torch.equal(masks[0], masks[1])
    assert not torch.equal(masks[0], masks[2])


@pytest.mark.parametrize("case", ["fast", "eval", "small", "disabled"])
def test_add_dropout_is_the_residual_sum_of_dropout_bit_for_bit(case, monkeypatch):
    """One pass (x + the masked, scaled branch) with the mask `dropout` draws from the same seed: the same sum and
    the same gradients, exactly; the other cases are `x + dropout(y)` as well."""
    shape = (4, 8) if case == "small" else (300, 200)
    if case == "disabled":
        monkeypatch.setattr(drop, "ENABLED", False)
    training = case != "eval"
    torch.manual_seed(4)
    x, y, grad = torch.randn(shape), torch.randn(shape), torch.randn(shape)
    results = []
    for fn in (lambda a, b: a + drop.dropout(b, 0.3, training), lambda a, b: drop.add_dropout(a, b, 0.3, training)):
        a, b = x.clone().requires_grad_(), y.clone().requires_grad_()
        torch.manual_seed(11)
        out = fn(a, b)
        out.backward(grad)
        results.append((out.detach(), a.grad, b.grad))
    for expected, got in zip(*results):
        assert torch.equal(got, expected)
    assert training == (results[0][0] != x + y).any().item()  # dropout acted in training only


@pytest.mark.parametrize("case", ["eval", "small", "disabled"])
def test_evaluation_small_tensors_and_the_switch_are_torchs_dropout(case, monkeypatch):
    x = torch.randn(4, 8) if case == "small" else torch.randn(256, 256)
    if case == "disabled":
        monkeypatch.setattr(drop, "ENABLED", False)
    training = case != "eval"
    torch.manual_seed(3)
    expected = F.dropout(x, 0.2, training)
    torch.manual_seed(3)
    torch.testing.assert_close(drop.Dropout(0.2).train(training)(x), expected)


@pytest.mark.parametrize("causal", [False, True])
def test_attend_is_scaled_dot_product_attention_with_the_masks_own_dropout(causal, monkeypatch):
    torch.manual_seed(2)
    q, k, v = (torch.randn(64, 2, 16, 8) for _ in range(3))  # (B, H, L, d_h): 32,768 weights, the fast path
    # with nothing dropped the spelled-out path is the kernel's function, scaled by 1 / (1 - p)
    monkeypatch.setattr(drop, "kept_mask", lambda shape, p, dtype=torch.uint8: torch.ones(shape, dtype=torch.uint8))
    torch.testing.assert_close(attend(q, k, v, None, causal, 0.1, True),
                               F.scaled_dot_product_attention(q, k, v, is_causal=causal) / 0.9)
    monkeypatch.undo()
    # with a mask, the weights are dropped and rescaled before they meet v
    torch.manual_seed(7)
    out = attend(q, k, v, None, causal, 0.1, True)
    torch.manual_seed(7)
    dropped = drop.dropped_mask(torch.Size([64, 2, 16, 16]), 0.1)
    mask = torch.ones(16, 16, dtype=torch.bool).tril() if causal else None
    weights = F.scaled_dot_product_attention(q, k, torch.eye(16).expand(64, 2, 16, 16), attn_mask=mask)
    torch.testing.assert_close(out, weights.masked_fill(dropped, 0) / 0.9 @ v)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("training", [True, False])
def test_attend_heads_is_attend_on_the_projections_views(causal, with_bias, training, monkeypatch):
    """One head at a time on strided views of the QKV projection (training) or the fused kernel (evaluation):
    `attend`'s outputs and gradients with the same masks, the key bias and the causal mask included."""
    torch.manual_seed(4)
    batch, length, heads, d_head = 128, 16, 2, 8  # (B, L, L) per head: 32,768 weights, the fast mask path
    dim = heads * d_head
    qkv = torch.randn(batch, length, 3 * dim, requires_grad=True)
    bias = None
    if with_bias:  # (B, 1, L): log-counts, and keys left out (never the first, so no row is empty)
        bias = torch.log(torch.randint(1, 4, (batch, 1, length)).float())
        bias[:, :, 1:] = bias[:, :, 1:].masked_fill(torch.rand(batch, 1, length - 1) < 0.3, float("-inf"))
    masks = []
    real = drop.kept_mask
    monkeypatch.setattr(drop, "kept_mask", lambda shape, p, *dtype: masks.append(real(shape, p, *dtype)) or masks[-1])
    got = attend_heads(qkv, heads, bias, causal, 0.1, training)
    cotangent = torch.randn_like(got)
    (g_got,) = torch.autograd.grad(got, qkv, cotangent)
    assert len(masks) == (heads if training else 0)
    # the same masks, drawn at once for (B, H, L, L), through `attend` on (B, H, L, d_h) views
    monkeypatch.setattr(drop, "kept_mask", lambda shape, p, *dtype: torch.stack(masks, dim=1))
    q, k, v = qkv.view(batch, length, 3, heads, d_head).permute(2, 0, 3, 1, 4).unbind(0)
    mask = None if bias is None else bias[:, None]
    if causal and mask is not None:
        mask = mask + torch.full((length, length), float("-inf")).triu(1)
    want = attend(q, k, v, mask, causal and mask is None, 0.1, training).transpose(1, 2).reshape(batch, length, dim)
    (g_want,) = torch.autograd.grad(want, qkv, cotangent)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(g_got, g_want, rtol=1e-5, atol=1e-5)



@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("residual", [False, True])
def test_the_float_mask_gives_the_uint8_masks_outputs_gradients_and_rng_state_bit_for_bit(dtype, residual):
    """`dropout` draws its mask straight in x's dtype (no uint8 -> float copy each way): the same bits out and back
    as the uint8 mask through the same kernel, and torch's generator left where that path leaves it."""
    torch.manual_seed(5)
    x, y, grad = (torch.randn(800, 64, 16, dtype=dtype) for _ in range(3))  # DyGFormer's (2B, L, d) at B = 400
    uint8_path = {False: lambda a, b: drop._MaskedScale.apply(b, drop.kept_mask(b.shape, 0.1), 1 / 0.9),
                  True: lambda a, b: drop._AddMaskedScale.apply(a, b, drop.kept_mask(b.shape, 0.1), 1 / 0.9)}
    float_path = {False: lambda a, b: drop.dropout(b, 0.1, True), True: lambda a, b: drop.add_dropout(a, b, 0.1, True)}
    results = []
    for fn in (uint8_path[residual], float_path[residual]):
        a, b = x.clone().requires_grad_(), y.clone().requires_grad_()
        torch.manual_seed(12)
        out = fn(a, b)
        state = torch.get_rng_state()
        out.backward(grad)
        as_bits = torch.int32 if dtype == torch.float32 else torch.int64  # bits, so the signs of zeros count
        results.append([t.view(as_bits) for t in (out.detach(), b.grad, a.grad if residual else b.grad)] + [state])
    for expected, got in zip(*results):
        assert torch.equal(got, expected)
    assert (results[1][1] == 0).any()  # something was dropped (its gradient is +0.0)
