"""Run records: metrics.json last and atomic; a killed run resumes to the same result."""

import json

import pytest

from timerepro import ensemble, registry, runs


@pytest.fixture
def config():
    reg = registry.load()
    run = reg.runs("smoke", artifact="fig2")[0]
    cfg = dict(run.config)
    cfg.update(max_epochs=6, patience=6)  # long enough to be killed midway
    cfg["run_id"] = registry.run_id({k: v for k, v in cfg.items() if k != "run_id"})
    return cfg


def test_record_layout_and_provenance(config, tmp_path):
    d = runs.execute(config, results=tmp_path, show_progress=False)
    assert d == tmp_path / "runs" / "linear_time" / config["run_id"]
    assert json.loads((d / "config.json").read_text()) == config
    assert json.loads((d / "effective_config.json").read_text()) == config  # a task without tables to resolve
    metrics = json.loads((d / "metrics.json").read_text())
    assert 0.0 <= metrics["test_accuracy"] <= 1.0 and metrics["run_id"] == config["run_id"]
    history = json.loads((d / "history.json").read_text())
    assert len(history) == metrics["epochs_run"] == 6
    prov = json.loads((d / "provenance.json").read_text())
    for key in ("git", "packages", "torch_threads", "device", "seed", "data", "wall_time_s", "peak_memory_mb"):
        assert key in prov
    assert prov["data"]["sha256"] and prov["seed"] == config["seed"] and prov["device"] == "cpu"
    assert not (d / "checkpoint.pt").exists()  # removed once complete
    assert not list(d.glob(".*.tmp"))  # no half-written files


def test_complete_run_is_not_redone(config, tmp_path):
    d = runs.execute(config, results=tmp_path, show_progress=False)
    stamp = (d / "metrics.json").stat().st_mtime_ns
    runs.execute(config, results=tmp_path, show_progress=False)
    assert (d / "metrics.json").stat().st_mtime_ns == stamp


def test_killed_run_resumes_to_the_same_metrics(config, tmp_path, kill_then_resume, monkeypatch):
    monkeypatch.setattr(ensemble, "CHECKPOINT_EVERY_S", 0.0)  # a checkpoint every epoch
    reference = runs.execute(config, results=tmp_path / "a", show_progress=False)
    expected = json.loads((reference / "metrics.json").read_text())
    d = kill_then_resume(config, tmp_path / "b", after=3)
    got = json.loads((d / "metrics.json").read_text())
    assert json.loads((d / "provenance.json").read_text())["resumed_from_epoch"] == 2
    for key in ("test_accuracy", "val_accuracy", "test_loss", "best_epoch", "epochs_run", "attention_l1_to_true"):
        assert got[key] == expected[key], key


def test_edited_run_folder_is_refused(config, tmp_path):
    d = tmp_path / "runs" / "linear_time" / config["run_id"]
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({**config, "lr": 0.5}))
    with pytest.raises(RuntimeError, match="different config"):
        runs.execute(config, results=tmp_path, show_progress=False)
