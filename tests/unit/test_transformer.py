"""The DyGFormer layer of Appendix A.2, its causal mask and the synthetic classifier."""

import torch

from timerepro.models.seq.transformer import SyntheticSequenceClassifier, TransformerLayer, causal_mask


def test_causal_mask_shape_and_pattern():
    m = causal_mask(5)
    assert m.shape == (5, 5)
    assert torch.isinf(m[torch.triu_indices(5, 5, 1).unbind()]).all()
    assert (m[torch.tril_indices(5, 5).unbind()] == 0).all()


def test_no_position_sees_a_later_one():
    torch.manual_seed(0)
    layer = TransformerLayer(6, dropout=0.0).eval()
    z = torch.randn(3, 8, 6)
    out, attn = layer(z, causal_mask(8))
    assert torch.all(attn.triu(1) == 0)
    z2 = z.clone()
    z2[:, 5:] += 10 * torch.randn(3, 3, 6)  # change only positions 5, 6, 7
    out2, _ = layer(z2, causal_mask(8))
    torch.testing.assert_close(out[:, :5], out2[:, :5])
    assert not torch.allclose(out[:, 5:], out2[:, 5:])


def test_layer_matches_pre_ln_equations():
    torch.manual_seed(1)
    layer = TransformerLayer(4, dropout=0.0).eval()
    z = torch.randn(2, 3, 4)
    wq, wk, wv = layer.qkv.weight.chunk(3, dim=0)
    h0 = layer.ln_attn(z)
    q, k, v = h0 @ wq.T, h0 @ wk.T, h0 @ wv.T
    o = torch.softmax(q @ k.transpose(1, 2) / 2.0, dim=-1) @ v  # sqrt(d_h) = 2
    h = o + z
    expected = h + layer.ffn(layer.ln_ffn(h))
    out, _ = layer(z)
    torch.testing.assert_close(out, expected)


def test_classifier_shapes_readouts_and_target_row():
    torch.manual_seed(0)
    dt, x = torch.rand(4, 7) * 300, torch.sign(torch.randn(4, 7))
    for attention in ("full", "causal"):
        model = SyntheticSequenceClassifier(encoder="linear", d_time=2, layers=2, attention=attention, dropout=0.0,
                                            time_mean=300.0, time_std=100.0).eval()
        logits, attn = model(dt, x)
        assert logits.shape == (4,) and attn.shape == (4, 8, 8)
    # causal read-out is the target row: changing nothing before it but its own input changes the output
    model = SyntheticSequenceClassifier(encoder="cosine", d_time=4, layers=1, attention="causal", dropout=0.0).eval()
    a, _ = model(dt, x)
    x2 = x.clone()
    x2[:, 0] *= -1
    b, _ = model(dt, x2)
    assert not torch.allclose(a, b)  # the target row attends to event 1
