"""Every Time2Vec variant of time2vec Figure 5 against its formula, on hand-picked inputs."""

from __future__ import annotations

import math

import pytest
import torch

from timerepro.encoders import Time2Vec, make_encoder

TAU = torch.tensor([0.0, 0.5, 3.0, 7.0, -2.25])


def _periodic_input(enc: Time2Vec) -> torch.Tensor:
    return TAU.unsqueeze(-1) * enc.w + enc.phi  # (5, k)


@pytest.mark.parametrize("activation, formula", [
    ("sin", torch.sin),
    ("cos", torch.cos),
    ("sigmoid", lambda x: 1 / (1 + torch.exp(-x))),
    ("tanh", lambda x: (torch.exp(x) - torch.exp(-x)) / (torch.exp(x) + torch.exp(-x))),
    ("relu", lambda x: torch.where(x > 0, x, torch.zeros_like(x))),
])
def test_activation_variants_follow_their_formula(activation, formula):
    enc = make_encoder("time2vec", 5, activation=activation)
    out = enc(TAU)
    assert out.shape == (5, 5)
    torch.testing.assert_close(out[:, 0], enc.w0 * TAU + enc.phi0)
    torch.testing.assert_close(out[:, 1:], formula(_periodic_input(enc)))


def test_mod_and_triangle_by_hand():
    enc = make_encoder("time2vec", 2, activation="mod")
    with torch.no_grad():
        enc.w.fill_(1.0)
        enc.phi.fill_(0.0)
    x = torch.tensor([0.0, math.pi / 2, math.pi, 3 * math.pi / 2, 2 * math.pi + 0.5, -math.pi / 2])
    # sawtooth: x mod 2 pi scaled to [-1, 1): 0 -> -1, pi -> 0, 3 pi / 2 -> 0.5, -pi/2 = 3 pi / 2 (mod 2 pi)
    torch.testing.assert_close(enc(x)[:, 1], torch.tensor([-1.0, -0.5, 0.0, 0.5, 0.5 / math.pi - 1, 0.5]))
    tri = make_encoder("time2vec", 2, activation="triangle")
    with torch.no_grad():
        tri.w.fill_(1.0)
        tri.phi.fill_(0.0)
    # triangle: 1 at 0, 0 at pi/2, -1 at pi, 0 at 3 pi / 2, period 2 pi; equals cos at multiples of pi / 2
    torch.testing.assert_close(tri(x)[:, 1], torch.tensor([1.0, 0.0, -1.0, 0.0, 1 - 1 / math.pi, 0.0]),
                               atol=1e-6, rtol=0)


def test_periodic_activations_are_periodic_and_bounded():
    x = torch.linspace(-20, 20, 401)
    for name in Time2Vec.PERIODIC:
        f = Time2Vec.ACTIVATIONS[name]
        torch.testing.assert_close(f(x + 2 * math.pi), f(x), atol=1e-4, rtol=0)
        assert f(x).min() >= -1 - 1e-6 and f(x).max() <= 1 + 1e-6


def test_equally_spaced_frequencies_are_fixed_sines_of_2pi_n_over_k():
    enc = make_encoder("time2vec", 17, frequencies="equally_spaced")
    n = torch.arange(1, 17, dtype=torch.float32)
    torch.testing.assert_close(enc.w, 2 * math.pi * n / 16)
    out = enc(TAU)
    torch.testing.assert_close(out[:, 1:], torch.sin(TAU.unsqueeze(-1) * 2 * math.pi * n / 16))
    assert [name for name, _ in enc.named_parameters()] == ["w0", "phi0"]  # only the linear term learns


def test_positional_frequencies_are_vaswani_sin_cos_pairs():
    k = 16
    enc = make_encoder("time2vec", k + 1, frequencies="positional")
    out = enc(TAU)[:, 1:]
    for i in range(k // 2):
        rate = 1.0 / 10000 ** (2 * i / k)
        torch.testing.assert_close(out[:, 2 * i], torch.sin(TAU * rate))
        torch.testing.assert_close(out[:, 2 * i + 1], torch.cos(TAU * rate), atol=1e-6, rtol=0)
    assert not any(p.requires_grad for n, p in enc.named_parameters() if n in ("w", "phi"))


def test_no_linear_term_variant_is_all_periodic():
    enc = make_encoder("time2vec", 8, linear_term=False)
    out = enc(TAU)
    assert out.shape == (5, 8) and not hasattr(enc, "w0")
    torch.testing.assert_close(out, torch.sin(_periodic_input(enc)))


def test_learned_variant_learns_w_and_phi_and_bad_names_are_refused():
    enc = make_encoder("time2vec", 4)
    assert {n for n, p in enc.named_parameters() if p.requires_grad} == {"w0", "phi0", "w", "phi"}
    with pytest.raises(ValueError, match="frequencies"):
        make_encoder("time2vec", 4, frequencies="log_spaced")
    with pytest.raises(ValueError, match="activation"):
        make_encoder("time2vec", 4, activation="square")
    with pytest.raises(ValueError, match="periodic term"):
        make_encoder("time2vec", 1)


def test_learned_parameters_start_uniform_in_minus_one_one_or_normal():
    """Default init U(-1, 1) (torch's nn.Linear(1, k+1)): every |w| in (0, 1), as the paper's learned frequencies
    (Figure 5c); `init="normal"` N(0, 1) puts about a third of them beyond 1. Unknown names are refused."""
    torch.manual_seed(0)
    enc = Time2Vec(2001)
    for p in (enc.w, enc.phi, enc.w0, enc.phi0):
        assert p.abs().max() < 1 and p.requires_grad
    assert enc.w.min() < -0.9 and enc.w.max() > 0.9
    normal = Time2Vec(2001, init="normal")
    assert 0.25 < float((normal.w.abs() > 1).float().mean()) < 0.4
    with pytest.raises(ValueError, match="init"):
        Time2Vec(5, init="zeros")
