"""Each time encoder against its paper's formula."""

import math

import numpy as np
import pytest
import torch

from timerepro.encoders import ENCODERS, make_encoder
from timerepro.names import ENCODER_LABELS

DT = torch.tensor([[0.0, 1.5, 10.0, 250.0, 1e4]])


def test_every_named_encoder_is_registered():
    assert set(ENCODERS) == set(ENCODER_LABELS)


def test_linear_is_affine_in_standardized_time():
    enc = make_encoder("linear", 4, mean=100.0, std=50.0)
    w, b = enc.proj.weight[:, 0], enc.proj.bias
    z = (DT - 100.0) / 50.0
    expected = z.unsqueeze(-1) * w + b
    torch.testing.assert_close(enc(DT), expected)
    # one-to-one: distinct times map to distinct encodings when a weight is non-zero
    out = enc(DT)[0]
    assert torch.cdist(out, out).fill_diagonal_(1.0).min() > 0


def test_cosine_uses_dyglib_initialisation_and_formula():
    d = 6
    enc = make_encoder("cosine", d)
    w0 = 1.0 / 10 ** np.linspace(0, 9, d)
    np.testing.assert_allclose(enc.w.detach().numpy(), w0, rtol=1e-6)
    expected = torch.cos(DT.unsqueeze(-1) * torch.tensor(w0, dtype=torch.float32))
    torch.testing.assert_close(enc(DT), expected)
    assert enc.w.requires_grad and enc.phi.requires_grad


def test_cosine_scale_applies_cosine_to_standardized_time():
    enc = make_encoder("cosine_scale", 5, mean=20.0, std=4.0)
    plain = make_encoder("cosine", 5)
    torch.testing.assert_close(enc(DT), plain((DT - 20.0) / 4.0))


def test_sine_cosine_inner_product_is_mean_cosine_of_difference():
    d = 8
    enc = make_encoder("sine_cosine", d)
    a, b = torch.tensor([3.0]), torch.tensor([17.0])
    inner = (enc(a) * enc(b)).sum()
    w = enc.w.detach()
    expected = torch.cos(w * (a - b)).mean()  # (1/k) sum_i cos(w_i (a - b)), k = d/2
    torch.testing.assert_close(inner, expected)
    assert enc(DT).shape == (1, 5, d)
    torch.testing.assert_close(enc(torch.zeros(1)).norm(), torch.tensor(1.0))


def test_sine_cosine_refuses_odd_dimension():
    with pytest.raises(ValueError, match="even"):
        make_encoder("sine_cosine", 3)


def test_time2vec_first_term_linear_rest_periodic():
    enc = make_encoder("time2vec", 4, activation="sin")
    tau = torch.tensor([0.3, 2.0])
    out = enc(tau)
    torch.testing.assert_close(out[:, 0], enc.w0 * tau + enc.phi0)
    torch.testing.assert_close(out[:, 1:], torch.sin(tau.unsqueeze(-1) * enc.w + enc.phi))
    fixed = make_encoder("time2vec", 4, fixed_frequencies=True)
    assert not fixed.w.requires_grad and fixed.w0.requires_grad


def test_unknown_encoder_is_refused_with_the_known_names():
    with pytest.raises(KeyError, match="known"):
        make_encoder("fourier", 4)


def test_standardizing_encoder_refuses_zero_std():
    with pytest.raises(ValueError, match="> 0"):
        make_encoder("linear", 2, mean=0.0, std=0.0)


# ------------------------------------------------------------------ dyg_mamba: GraphMixer's fixed encoder, time spans

def test_fixed_cosine_is_graphmixers_formula_and_is_not_trained():
    d, alpha, beta = 7, 3.0, 2.5
    enc = make_encoder("fixed_cosine", d, alpha=alpha, beta=beta)
    omega = np.array([alpha ** (-(i - 1) / beta) for i in range(1, d + 1)])  # omega_i = alpha^-(i-1)/beta
    dt = DT[:, :4]  # float32 cos of 1e4 * omega has no 5 digits left
    expected = np.cos(dt.numpy()[..., None] * omega)
    np.testing.assert_allclose(enc(dt).numpy(), expected, rtol=1e-5, atol=1e-5)
    assert not list(enc.parameters())  # a buffer: no optimizer ever sees it
    # defaults: alpha = 10, beta = (d - 1) / 9 = DyGLib's frozen 1 / 10^linspace(0, 9, d)
    np.testing.assert_allclose(make_encoder("fixed_cosine", 100).w.numpy(), 1 / 10 ** np.linspace(0, 9, 100), rtol=1e-5)


def test_no_time_encoder_carries_nothing():
    out = make_encoder("none", 3)(DT)
    assert out.shape == (1, 5, 3) and not out.any()


def test_time_spans_by_hand():
    from timerepro.encoders import time_spans

    # row 0: padding, t = 2, 5, then the node itself at tau = 10; row 1: the node alone at tau = 4
    times = np.array([[0.0, 2.0, 5.0, 10.0], [0.0, 0.0, 0.0, 4.0]])
    valid = np.array([[False, True, True, True], [False, False, False, True]])
    r = time_spans(times, np.array([10.0, 4.0]), valid)
    np.testing.assert_allclose(r[0], [0.0, 1 / 8, 3 / 8, 5 / 8])  # r_1 = 1/(tau - t_1), r_k = (t_k - t_(k-1))/(tau - t_1)
    np.testing.assert_allclose(r[1], [0.0, 0.0, 0.0, 1.0])  # tau - t_1 = 0: span 1 over a normaliser of 1


def test_time_span_control_is_silu_of_linear_of_fixed_cosine():
    from timerepro.encoders import TimeSpanControl

    torch.manual_seed(0)
    ctl = TimeSpanControl(4, 3)
    r = torch.tensor([[0.1, 0.5, 2.0]])
    omega = 1 / 10 ** np.linspace(0, 9, 4)
    cosr = torch.cos(r.unsqueeze(-1) * torch.tensor(omega, dtype=torch.float32))
    torch.testing.assert_close(ctl(r), torch.nn.functional.silu(cosr @ ctl.proj.weight.T + ctl.proj.bias))
