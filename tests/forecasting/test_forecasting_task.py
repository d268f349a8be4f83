"""The forecasting task end to end on the smoke stand-in of Exchange through `runs.execute`: a run record with
test MSE/MAE, iTransformer's halving learning rate, and a killed run that resumes to the same metrics."""

from __future__ import annotations

import json
import math

import pytest

from timerepro import registry, runs
from timerepro.report.hawkes_attention.forecasting import forecasting_table9
from timerepro.tasks import forecasting

BASE = dict(paper="hawkes_attention", experiment="forecast_test", task="forecasting", model="hawkes_ts",
            datasets=["exchange"], standin="smoke", series="exchange", seq_len=96, pred_len=24, d_model=8, n_heads=2,
            e_layers=1, d_ff=16, phi_width=4, phi_depth=2, dropout=0.1, tokens="temporal", kernel="mlp",
            use_norm=True, lr=1e-3, lradj="type1", batch_size=16, max_epochs=2, patience=3, max_train_windows=32,
            max_eval_windows=None, seed=0)


def make_config(**over) -> dict:
    cfg = {**BASE, **over}
    cfg["run_id"] = registry.run_id(cfg)
    return cfg


@pytest.fixture(scope="module")
def data_root(standin_root):
    """The session's data folder, holding the smoke exchange stand-in."""
    return standin_root("exchange")


@pytest.fixture
def task(data_root, monkeypatch):
    monkeypatch.setenv("TIMEREPRO_DATA", str(data_root))


def test_runs_end_to_end_and_records_metrics(task, tmp_path):
    d = runs.execute(make_config(), results=tmp_path, show_progress=False)
    metrics = json.loads((d / "metrics.json").read_text())
    history = json.loads((d / "history.json").read_text())
    assert metrics["epochs_run"] == len(history) == 2
    for key in ("test_mse", "test_mae", "val_mse", "val_mae"):
        assert math.isfinite(metrics[key]) and metrics[key] > 0
    assert metrics["test_mse"] >= metrics["test_mae"] ** 2 - 1e-9  # E[e^2] >= E[|e|]^2
    # 400 rows: train 280, val 40 + 96, test 80 + 96 rows; windows = rows - 96 - 24 + 1
    assert metrics["n_windows"] == {"train": 161, "val": 17, "test": 57}
    assert metrics["train_windows_per_epoch"] == 32
    assert [h["lr"] for h in history] == [1e-3 * 0.5 ** e for e in range(len(history))]  # lradj type1
    assert history[0]["val_loss"] > 0 and "val_mae" in history[0]
    prov = json.loads((d / "provenance.json").read_text())
    assert prov["data"]["standin"] is True and prov["data"]["sha256"] and prov["data"]["variables"] == 8
    assert prov["data"]["kind"] == "standin"  # the field claims and badges read
    assert not (d / "checkpoint.pt").exists()
    # the Table 9 aggregator turns the record into Ours' MSE/MAE row (no baseline at horizon 24: no rank row)
    record = {"config": json.loads((d / "config.json").read_text()), "metrics": metrics}
    rows = forecasting_table9([record])
    assert [(r["row_group"], r["row"], r["column"], r["metric"]) for r in rows] == [
        ("Exchange", "24", "Ours", "MSE"), ("Exchange", "24", "Ours", "MAE")]
    assert rows[0]["mean"] == metrics["test_mse"] and rows[1]["mean"] == metrics["test_mae"]


def test_killed_run_resumes_to_the_same_metrics(task, tmp_path, kill_then_resume):
    cfg = make_config(patience=5)
    expected = json.loads((runs.execute(cfg, results=tmp_path / "a", show_progress=False) / "metrics.json").read_text())
    d = kill_then_resume(cfg, tmp_path / "b", after=1)
    got = json.loads((d / "metrics.json").read_text())
    assert json.loads((d / "provenance.json").read_text())["resumed_from_epoch"] == 0
    assert got == expected


def test_unknown_model_or_series_outside_the_experiment_is_refused(task):
    with pytest.raises(KeyError, match="unknown forecasting model"):
        forecasting.run(make_config(model="nope"), ctx=None)
    with pytest.raises(ValueError, match="not one of the experiment's datasets"):
        forecasting.run(make_config(series="etth1"), ctx=None)
