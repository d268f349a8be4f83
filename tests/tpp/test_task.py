"""The temporal_point_process task end to end on a smoke stand-in: metrics, kernels for Figure 2, resume."""

import json
import math

import numpy as np
import pytest

from timerepro import registry, runs
from timerepro.data import tpp as dtpp
from timerepro.data.prepare import prepare
from timerepro.registry import run_id


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return tmp_path_factory.mktemp("tpp-data")


@pytest.fixture
def config(data_root, monkeypatch):
    """The smoke config of tpp_stackoverflow (width 16), 2 epochs so that a checkpoint precedes the end."""
    monkeypatch.setenv("TIMEREPRO_DATA", str(data_root))
    run = next(r for r in registry.load().experiment_runs("hawkes_attention", "tpp_stackoverflow", "smoke"))
    cfg = {k: v for k, v in run.config.items() if k != "run_id"}
    cfg.update(max_epochs=2, patience=2)
    return {**cfg, "run_id": run_id(cfg)}


def _read(d, name):
    return json.loads((d / name).read_text())


def test_task_runs_end_to_end_on_a_standin(config, data_root, tmp_path):
    d = runs.execute(config, results=tmp_path, show_progress=False)
    m = _read(d, "metrics.json")
    test = dtpp.load_processed(prepare("stackoverflow", standin="smoke", data_root=data_root)).splits["test"]
    assert m["test_n_events"] == int((test.lengths - 1).sum())  # every event after the first is scored
    assert m["test_rmse"] > 0 and 0.0 <= m["test_error_rate"] <= 1.0
    assert m["test_acc"] + m["test_error_rate"] == pytest.approx(1.0)
    assert math.isfinite(m["test_loglike_per_event"]) and math.isfinite(m["val_loglike_per_event"])
    assert m["epochs_run"] == 2 and m["best_epoch"] in (0, 1)
    prov = _read(d, "provenance.json")
    assert prov["data"]["standin"] is True and "not the real data" in prov["data"]["label"]

    k = _read(d, "kernels.json")
    phi = np.asarray(k["phi"])  # [layers, types, heads, grid]
    assert phi.shape == (config["num_layers"], 22, config["num_heads"], config["kernel_grid_points"])
    initial = np.asarray(k["phi_initial"])  # the same seed's kernels before training: claim c10's control
    assert initial.shape == phi.shape and not np.allclose(initial, phi)
    dt = np.asarray(k["dt"])
    assert dt[0] == 0.0 and np.all(np.diff(dt) > 0) and dt[-1] == pytest.approx(k["dt_max"], rel=1e-6)
    assert sum(k["type_counts_train"]) == int(dtpp.load_processed(
        prepare("stackoverflow", standin="smoke", data_root=data_root)).splits["train"].lengths.sum())
    assert not np.allclose(phi, phi[:, :1])  # per-type kernels differ


def test_killed_run_resumes_to_the_same_metrics(config, tmp_path, kill_then_resume):
    expected = _read(runs.execute(config, results=tmp_path / "a", show_progress=False), "metrics.json")
    d = kill_then_resume(config, tmp_path / "b", after=1)
    assert _read(d, "provenance.json")["resumed_from_epoch"] == 0
    got = _read(d, "metrics.json")
    for key in ("test_loglike_per_event", "test_rmse", "test_error_rate", "val_loglike_per_event", "best_epoch",
                "epochs_run"):
        assert got[key] == expected[key], key
    assert _read(d, "kernels.json")["phi"] == _read(tmp_path / "a" / "runs" / "hawkes_attention" / config["run_id"],
                                                     "kernels.json")["phi"]


def test_train_sequences_cut_and_variants(config, tmp_path):
    """The offline cut keeps the first n training sequences; the shared-phi variant has one kernel per head."""
    cfg = {k: v for k, v in config.items() if k != "run_id"}
    cfg.update(max_epochs=1, patience=1, train_sequences=5, variant="shared_phi")
    cfg["run_id"] = run_id(cfg)
    d = runs.execute(cfg, results=tmp_path, show_progress=False)
    prov = _read(d, "provenance.json")
    assert prov["data"]["n_train"] == 5 and prov["data"]["n_train_available"] > 5
    assert np.asarray(_read(d, "kernels.json")["phi"]).shape[1] == 1


def test_builder_config_adds_training_log_inter_time_stats():
    """What EasyTPP's runner hands IntensityFree: log inter-event times of the training split, first events out."""
    from timerepro.data.tpp import EventSequences
    from timerepro.tasks.temporal_point_process import builder_config, head

    seqs = EventSequences(np.array([0, 3, 5]), np.array([0.0, 1.0, 3.0, 0.0, 0.5]), np.array([0.0, 1.0, 2.0, 0.0, 0.5]),
                          np.zeros(5, dtype=np.int64), np.arange(2))
    logs = np.log([1.0, 2.0, 0.5])
    cfg = builder_config({"lr": 0.1}, seqs)
    assert cfg["mean_log_inter_time"] == pytest.approx(logs.mean()) and cfg["std_log_inter_time"] == pytest.approx(logs.std())
    assert builder_config({"mean_log_inter_time": 7.0}, seqs)["mean_log_inter_time"] == 7.0  # the config wins
    # params/models.yaml resolves both keys to null in every config: a null is filled, not passed on as 0 and 1
    filled = builder_config({"mean_log_inter_time": None, "std_log_inter_time": None}, seqs)
    assert filled["mean_log_inter_time"] == pytest.approx(logs.mean()) and filled["std_log_inter_time"] == pytest.approx(logs.std())
    first = head(seqs, 1)
    assert len(first) == 1 and first.time_since_last_event.tolist() == [0.0, 1.0, 2.0]
