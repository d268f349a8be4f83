"""The named variants of the time encoders where linear_time's formula and the authors' code differ
(docs/fidelity.md, item 5), each against its own formula."""

import math

import numpy as np
import pytest
import torch

from timerepro.encoders import make_encoder, standardization_stats

DT = torch.tensor([[0.0, 1.5, 10.0, 250.0, 1e4]])


# ------------------------------------------------------------------ sine-cosine: scale factor and phase

def test_sine_cosine_default_is_the_papers_form():
    enc = make_encoder("sine_cosine", 6)
    assert enc.scale and enc.phi is None
    w = enc.w.detach()
    angle = DT.unsqueeze(-1) * w
    expected = math.sqrt(1 / 3) * torch.cat([torch.cos(angle), torch.sin(angle)], dim=-1)
    torch.testing.assert_close(enc(DT), expected)


def test_sine_cosine_code_variant_has_no_scale_and_a_learnable_phase():
    """dg-linear-time SineCosineTimeEncoder: [cos(w t + b), sin(w t + b)], b = Linear(1, k) bias, init 0."""
    enc = make_encoder("sine_cosine", 6, scale=False, phase=True)
    assert enc.phi.requires_grad and torch.equal(enc.phi.detach(), torch.zeros(3))
    with torch.no_grad():
        enc.phi.copy_(torch.tensor([0.3, -1.0, 2.0]))
    w, b = enc.w.detach(), enc.phi.detach()
    angle = DT.unsqueeze(-1) * w + b
    torch.testing.assert_close(enc(DT), torch.cat([torch.cos(angle), torch.sin(angle)], dim=-1))
    # with the phase at 0 the two forms differ by exactly the factor sqrt(1/k)
    paper, code = make_encoder("sine_cosine", 6), make_encoder("sine_cosine", 6, scale=False, phase=True)
    torch.testing.assert_close(code(DT) * math.sqrt(1 / 3), paper(DT))
    # the phase is a parameter (trained), the scale is not
    assert sum(p.numel() for p in code.parameters()) == sum(p.numel() for p in paper.parameters()) + 3


def test_sine_cosine_without_scale_has_unit_norm_pairs():
    enc = make_encoder("sine_cosine", 8, scale=False)
    out = enc(DT)  # each (cos, sin) pair has norm 1, so the whole vector has norm sqrt(k)
    torch.testing.assert_close(out.norm(dim=-1), torch.full((1, 5), 2.0))


# ------------------------------------------------------------------ linear: affine map or not

def test_linear_without_affine_map_is_the_standardized_difference():
    """dg-linear-time NoTimeEncoder (DyGFormer variants, d_T = 1): Phi(dt) = (dt - mu) / sigma."""
    enc = make_encoder("linear", 1, mean=100.0, std=50.0, affine=False)
    torch.testing.assert_close(enc(DT), ((DT - 100.0) / 50.0).unsqueeze(-1))
    assert list(enc.parameters()) == []


def test_linear_affine_with_unit_weight_equals_the_code_variant():
    paper = make_encoder("linear", 1, mean=3.0, std=2.0)
    with torch.no_grad():
        paper.proj.weight.fill_(1.0)
        paper.proj.bias.zero_()
    torch.testing.assert_close(paper(DT), make_encoder("linear", 1, mean=3.0, std=2.0, affine=False)(DT))


def test_linear_without_affine_map_refuses_a_wider_output():
    with pytest.raises(ValueError, match="dim = 1"):
        make_encoder("linear", 4, affine=False)


# ------------------------------------------------------------------ standardization statistic

DIFFS = np.array([[1.0, 2.0, 3.0, 0.0], [10.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
VALID = np.array([[True, True, True, False], [True, False, False, False], [False, False, False, False]])


def test_pooled_statistic_is_mean_and_std_of_every_difference():
    mean, std = standardization_stats(DIFFS, VALID, "pooled")
    values = np.array([1.0, 2.0, 3.0, 10.0])
    assert mean == pytest.approx(values.mean()) and std == pytest.approx(values.std())


def test_per_query_mean_statistic_is_spread_of_row_means():
    """The authors' np.nanmean / np.nanstd over per-query means; the row without history is left out."""
    mean, std = standardization_stats(DIFFS, VALID, "per_query_mean")
    row_means = np.array([2.0, 10.0])
    assert mean == pytest.approx(row_means.mean()) and std == pytest.approx(row_means.std())
    # the same as the authors' NaN-padded computation
    padded = np.where(VALID, DIFFS, np.nan)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        per_row = np.nanmean(padded, axis=1)
    assert mean == pytest.approx(np.nanmean(per_row)) and std == pytest.approx(np.nanstd(per_row))


def test_per_query_mean_spread_is_smaller_than_pooled_on_iid_windows():
    rng = np.random.default_rng(0)
    dt = rng.exponential(100.0, size=(500, 20))
    pooled = standardization_stats(dt, None, "pooled")
    per_query = standardization_stats(dt, None, "per_query_mean")
    assert pooled[0] == pytest.approx(per_query[0])  # equal windows: same mean
    assert per_query[1] < pooled[1] / 3  # std of means of 20 ~ std / sqrt(20)


def test_statistic_degenerate_cases_and_unknown_name():
    assert standardization_stats(np.zeros((2, 3)), np.zeros((2, 3), bool)) == (0.0, 1.0)
    assert standardization_stats(np.full((2, 2), 5.0), None, "per_query_mean") == (5.0, 1.0)
    with pytest.raises(ValueError, match="known"):
        standardization_stats(DIFFS, VALID, "median")
