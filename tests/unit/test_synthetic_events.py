"""The data-generating process of linear_time Eq. 2, checked against what the equation implies."""

import numpy as np

from timerepro.data.synthetic_events import generate, split, true_attention


def test_statistics_match_eq2():
    rate, decay, m = 0.01, 0.003, 7
    s = generate(20000, n_events=m, rate=rate, decay=decay, noise_var=0.01, seed=1)
    gaps = np.diff(np.concatenate([np.zeros((len(s), 1)), s.times], axis=1), axis=1)
    assert abs(gaps.mean() - 1 / rate) < 0.02 / rate  # Exp(lambda) mean 1/lambda
    assert abs(gaps.std() - 1 / rate) < 0.03 / rate  # and std 1/lambda
    last_gap = s.target_time - s.times[:, -1]
    assert abs(last_gap.mean() - 1 / rate) < 0.03 / rate
    # t - t_m is a sum of (M - m + 1) exponential gaps
    np.testing.assert_allclose(s.dt.mean(0), (m - np.arange(m)) / rate, rtol=0.03)
    assert set(np.unique(s.x)) == {-1.0, 1.0} and abs(s.x.mean()) < 0.02
    assert abs(s.y.mean() - 0.5) < 0.02  # symmetric signal and noise: balanced labels


def test_label_is_the_sign_of_the_decayed_sum_up_to_noise():
    s = generate(5000, noise_var=0.0, seed=3)
    signal = (np.exp(-0.003 * s.dt) * s.x).sum(1)
    np.testing.assert_array_equal(s.y, (signal > 0).astype(int))
    noisy = generate(5000, noise_var=0.01, seed=3)
    flips = (noisy.y != s.y).mean()
    assert 0 < flips < 0.2  # noise std 0.1 flips only labels near the boundary


def test_seeded_and_distinct():
    a, b, c = generate(50, seed=0), generate(50, seed=0), generate(50, seed=1)
    assert a.sha256() == b.sha256() != c.sha256()


def test_split_sizes_and_disjoint():
    parts = split(2000, (0.7, 0.15, 0.15), seed=0)
    assert [len(parts[k]) for k in ("train", "val", "test")] == [1400, 300, 300]
    assert len(set(np.concatenate(list(parts.values())))) == 2000


def test_true_attention_normalized_and_increasing_in_m():
    s = generate(100, seed=0)
    w = true_attention(s.dt, 0.003)
    np.testing.assert_allclose(w.sum(1), 1.0)
    assert (np.diff(w, axis=1) > 0).all()  # later events are closer to the target time
