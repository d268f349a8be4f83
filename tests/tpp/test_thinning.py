"""Thinning (EasyTPP's EventSampler) on processes whose next-event distribution is known."""

import numpy as np
import pytest
import torch

from timerepro.data.standins import simulate_hawkes
from timerepro.tpp import ThinningConfig, collate, draw_next_dtimes, predict_next
from timerepro.tpp.reference import ExpHawkesProcess, PoissonProcess


def _batch(times, types, K):
    t = np.asarray(times, dtype=np.float64)
    return collate([{"time_since_start": t - t[0], "time_since_last_event": np.diff(t, prepend=t[0]),
                     "type_event": types}], pad_token_id=K)


def test_exponential_hawkes_expected_next_time():
    """Univariate Hawkes (mu 0.5, alpha 0.6, beta 1.5) with a simulated history of 20 events. With EasyTPP's
    evaluation setting (one draw per position), 3000 independent draws per position (the history replicated
    across the batch) have a mean that matches E[dt | history] = int_0^inf S(s) ds (quadrature) within
    4 standard errors at every position, and within 1 % pooled over positions. The intensity decays between
    events, so the grid bound at s = 0 is a true bound and thinning is exact."""
    model = ExpHawkesProcess([0.5], [[0.6]], 1.5)
    times, types = simulate_hawkes(np.random.default_rng(3), np.array([0.5]), np.array([[0.6]]), 1.5, 20)
    batch = _batch(times, types, 1)
    R = 3000
    hidden = model.encode(batch.time_seqs, batch.type_seqs).detach()  # [1, 20, 1]
    cfg = ThinningConfig(num_sample=1, num_exp=300, over_sample_rate=2.0, dtime_max=100.0)
    with torch.no_grad():
        draws = draw_next_dtimes(lambda s: model.intensities_at(s, hidden.expand(R, -1, -1)),
                                 batch.time_delta_seqs.expand(R, -1), cfg, torch.Generator().manual_seed(0))
    draws = draws[..., 0].double().numpy().T  # [20 positions, R draws]
    expected = np.array([model.expected_next_dtime(h) for h in hidden[0].numpy()])
    assert (draws < cfg.dtime_max).all()  # every draw accepted a proposal: no truncation
    se = draws.std(1, ddof=1) / np.sqrt(R)
    assert np.all(np.abs(draws.mean(1) - expected) < 4 * se), (draws.mean(1), expected)
    assert draws.mean() == pytest.approx(expected.mean(), rel=0.01)
    assert expected.min() < 1.0 < 2.0 > expected.max()  # excitation shortens the wait below 1/mu = 2


def test_shared_proposals_make_dependent_draws():
    """EasyTPP's num_sample draws share one proposal sequence: many draws coincide. Independent proposals fix it."""
    model = PoissonProcess([1.0])
    batch = _batch([0.0, 1.0, 2.0], [0, 0, 0], 1)
    hidden = model.encode(batch.time_seqs, batch.type_seqs)
    fn = lambda s: model.intensities_at(s, hidden)
    shared = draw_next_dtimes(fn, batch.time_delta_seqs, ThinningConfig(num_sample=500),
                              torch.Generator().manual_seed(0))
    own = draw_next_dtimes(fn, batch.time_delta_seqs, ThinningConfig(num_sample=500, share_proposals=False),
                           torch.Generator().manual_seed(0))
    assert len(torch.unique(shared[0, 0])) < 100 < len(torch.unique(own[0, 0]))


def test_poisson_prediction_time_and_type():
    """Constant rates (0.5, 1.5), independent draws: the predicted time (mean of 4000 draws) is 1/2 within
    4 standard errors; the type is the argmax of the normalized intensities, type 1 everywhere."""
    model = PoissonProcess([0.5, 1.5])
    batch = collate([{"time_since_start": [0.0, 1.0, 1.5, 4.0], "time_since_last_event": [0.0, 1.0, 0.5, 2.5],
                      "type_event": [0, 1, 1, 0]},
                     {"time_since_start": [0.0, 2.0], "time_since_last_event": [0.0, 2.0], "type_event": [1, 1]}], 2)
    cfg = ThinningConfig(num_sample=4000, num_exp=100, dtime_max=50.0, share_proposals=False)
    dt, ty = predict_next(model, batch, cfg, torch.Generator().manual_seed(1))
    assert dt.shape == ty.shape == (2, 3)
    assert (ty == 1).all()
    real = batch.seq_non_pad_mask[:, 1:]
    assert dt[real].numpy() == pytest.approx(np.full(4, 0.5), abs=4 * 0.5 / np.sqrt(4000))


def test_seeded_and_easytpp_defaults():
    model = PoissonProcess([1.0, 2.0])
    batch = _batch([0.0, 0.3, 1.0, 1.2], [0, 1, 1, 0], 2)
    a = predict_next(model, batch, ThinningConfig(), torch.Generator().manual_seed(7))
    b = predict_next(model, batch, ThinningConfig(), torch.Generator().manual_seed(7))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    cfg = ThinningConfig()
    assert (cfg.num_sample, cfg.num_exp, cfg.over_sample_rate, cfg.num_samples_boundary, cfg.dtime_max) == (1, 500, 5.0, 5, 5.0)
    with pytest.raises(ValueError):
        ThinningConfig(bound_window="everywhere")


def test_no_acceptance_falls_back_to_dtime_max():
    """A draw that accepts none of its num_exp proposals returns dtime_max (accepted draws are not capped)."""
    fn = lambda s: (s == 0).float()[..., None]  # intensity 1 at s = 0 (sets the bound), 0 afterwards
    draws = draw_next_dtimes(fn, torch.ones(2, 3), ThinningConfig(num_sample=7, dtime_max=7.0),
                             torch.Generator().manual_seed(0))
    assert draws.shape == (2, 3, 7) and (draws == 7.0).all()


def test_lazy_proposals_stop_at_the_first_acceptance_and_skip_decided_sequences():
    """Slices of 16, 32, 64, ... proposals; a slice is evaluated only for the sequences whose draws have not all
    accepted (rows_fn), and none after every draw has: here sequence 0 accepts at once (intensity = bound) and
    sequence 1 never does (intensity 0 after s = 0), so it alone is evaluated on every slice and ends at dtime_max."""
    from timerepro.tpp.thinning import proposal_slices

    assert proposal_slices(100, True) == [(0, 16), (16, 48), (48, 100)] and proposal_slices(100, False) == [(0, 100)]
    rates = torch.tensor([1.0, 1.0])

    def lam(s, rows):  # [R, L, S] -> [R, L, S, 1]: sequence 0 constant, sequence 1 zero after s = 0
        r = rates[rows][:, None, None]
        return torch.where((rows[:, None, None] == 0) | (s == 0), r, torch.zeros_like(s))[..., None]

    calls = []

    def rows_fn(s, rows):
        calls.append((rows.tolist(), s.size(-1)))
        return lam(s, rows)

    cfg = ThinningConfig(num_exp=100, over_sample_rate=1.0, dtime_max=9.0)
    draws = draw_next_dtimes(lambda s: lam(s, torch.arange(2)), torch.ones(2, 3), cfg, torch.Generator().manual_seed(0),
                             rows_fn)
    whole = draw_next_dtimes(lambda s: lam(s, torch.arange(2)), torch.ones(2, 3),
                             ThinningConfig(num_exp=100, over_sample_rate=1.0, dtime_max=9.0, lazy_proposals=False),
                             torch.Generator().manual_seed(0))
    assert torch.equal(draws, whole)
    assert (draws[1] == 9.0).all() and (draws[0] < 9.0).all()
    assert calls == [([1], 32), ([1], 52)]  # the first slice (both sequences) went through fn, the others through rows_fn
