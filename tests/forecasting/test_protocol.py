"""iTransformer's protocol pieces the forecasting task relies on: split borders and window counts for known
lengths, the train-only scaler (a leak from val/test would change it), windows, and MSE/MAE by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from timerepro.data import series
from timerepro.tasks.forecasting import evaluate, evenly_spaced, windows


def series_data(values: np.ndarray, loader: str = "custom") -> series.SeriesData:
    dates = np.arange(len(values)).astype("datetime64[h]").astype("datetime64[ns]")
    return series.SeriesData("toy", values, dates, [f"v{i}" for i in range(values.shape[1])], loader, {})


def test_borders_and_window_counts_match_itransformer():
    # ETT hourly: 12/4/4 months of 30 days; val and test start seq_len rows early
    b1, b2 = series.borders(17420, "ETT_hour", 96)
    assert (b1, b2) == ([0, 8640 - 96, 11520 - 96], [8640, 11520, 14400])
    b1, b2 = series.borders(69680, "ETT_minute", 96)
    assert (b1, b2) == ([0, 34560 - 96, 46080 - 96], [34560, 46080, 57600])
    # custom 70/20 split of 1000 rows: train 700, test 200, val 100
    b1, b2 = series.borders(1000, "custom", 96)
    assert (b1, b2) == ([0, 604, 704], [700, 800, 1000])
    # iTransformer's __len__ = rows - seq_len - pred_len + 1, e.g. ETTh1 test at horizon 96: 2880 + 96 - 192 + 1
    values = np.arange(17420 * 2, dtype=float).reshape(17420, 2)
    parts = series.split(series_data(values, "ETT_hour"), seq_len=96)
    x, y = windows(parts.test, 96, 96)
    assert len(x) == parts.n_windows("test", 96, 96) == 2785
    x, y = windows(parts.train, 96, 720)
    assert len(x) == 8640 - 96 - 720 + 1


def test_windows_are_history_then_target_and_test_targets_start_at_the_border():
    values = np.arange(1000, dtype=float)[:, None].repeat(2, 1)  # row r holds r (both variates)
    x, y = windows(values, 96, 24)
    assert x.shape == (1000 - 120 + 1, 96, 2) and y.shape == (881, 24, 2)
    assert x[5, :, 0].tolist() == list(range(5, 101)) and y[5, :, 0].tolist() == list(range(101, 125))
    parts = series.split(series_data(values), seq_len=96, scale=False)
    x, y = windows(parts.test, 96, 24)
    assert y[0, 0, 0] == 800 and x[0, -1, 0] == 799  # the first test target is the first test row
    assert y[-1, -1, 0] == 999  # and the last window ends at the last row


def test_scaler_is_fit_on_train_rows_only():
    rng = np.random.default_rng(0)
    values = rng.normal(0, 1, (1000, 3)) * [1.0, 2.0, 3.0] + [0.0, 10.0, -5.0]
    parts = series.split(series_data(values), seq_len=96)
    train_rows = values[:700]
    assert np.allclose(parts.mean, train_rows.mean(0)) and np.allclose(parts.scale, train_rows.std(0))
    assert np.allclose(parts.train.mean(0), 0, atol=1e-12) and np.allclose(parts.train.std(0), 1)
    # a leak would show: wildly different val/test rows leave the scaler and the train split unchanged
    leaked = values.copy()
    leaked[700:] = leaked[700:] * 50 + 1000
    other = series.split(series_data(leaked), seq_len=96)
    assert np.array_equal(other.mean, parts.mean) and np.array_equal(other.scale, parts.scale)
    assert np.array_equal(other.train, parts.train)
    assert other.test.mean() > 100  # test is scaled with the train statistics, not re-standardized
    # the val split's first seq_len rows are training rows, scaled identically
    assert np.allclose(parts.val[:96], parts.train[-96:])


class Fixed(torch.nn.Module):
    """A 'model' that forecasts the given tensor, whatever the history."""

    def __init__(self, pred: torch.Tensor):
        super().__init__()
        self.pred = pred

    def forward(self, x):
        return self.pred[: len(x)]


def test_mse_and_mae_by_hand():
    pred = torch.tensor([[[1.0, 2.0], [3.0, 4.0]]])
    true = torch.tensor([[[0.0, 2.0], [5.0, 3.0]]])
    # errors 1, 0, -2, 1: squared 1, 0, 4, 1 -> 6/4; absolute 1, 0, 2, 1 -> 4/4
    m = evaluate(Fixed(pred), torch.zeros(1, 3, 2), true)
    assert (m["mse"], m["mae"]) == (1.5, 1.0)


def test_evaluate_averages_over_every_value_of_every_window():
    y = torch.arange(30, dtype=torch.float32).view(5, 3, 2)  # 5 windows, horizon 3, 2 variates
    x = torch.zeros(5, 4, 2)

    # batches of 2, 2, 1: weighted by values, not by batch
    m = evaluate(Fixed(torch.zeros(2, 3, 2)), x, y, batch_size=2)
    assert m["mse"] == pytest.approx(float((y ** 2).mean())) and m["mae"] == pytest.approx(float(y.abs().mean()))
    assert m["n_windows"] == 5


def test_evenly_spaced_keeps_first_and_last_window():
    x, y = torch.arange(10.0)[:, None], torch.arange(10.0)[:, None]
    xs, _ = evenly_spaced(x, y, 4)
    assert xs[:, 0].tolist() == [0.0, 3.0, 6.0, 9.0]
    assert evenly_spaced(x, y, 20)[0] is x
