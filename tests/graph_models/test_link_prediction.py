"""The link-prediction task end to end on the smoke stand-in of UCI, through `runs.execute`: a run
record with AP/AUC under random and historical negatives, and a killed run that resumes to the
same metrics. Tiny model (d_T 4, 3 neighbours) so that the whole file stays within seconds."""

from __future__ import annotations

import json

import pytest

from timerepro import registry, runs
from timerepro.tasks import link_prediction

from .conftest import resolved

BASE = dict(paper="linear_time", experiment="lp_test", task="link_prediction", dataset="uci", standin="smoke",
            model="tgat", encoder="linear", d_T=4, dropout=0.1, lr=1e-3, batch_size=200, max_epochs=2, patience=5,
            num_neighbors=3, num_layers=2, num_heads=2, eval_negatives=["random", "historical"], seed=0)


def make_config(**over) -> dict:
    cfg = resolved("link_prediction", BASE["model"], {**BASE, **over})
    cfg["run_id"] = registry.run_id(cfg)
    return cfg


@pytest.fixture(scope="module")
def data_root(standin_root):
    """The session's data folder, holding the smoke uci stand-in."""
    return standin_root("uci")


@pytest.fixture
def task(data_root, monkeypatch):
    """The task reads the stand-in from the prepared data folder."""
    monkeypatch.setenv("TIMEREPRO_DATA", str(data_root))


def test_runs_end_to_end_and_records_metrics(task, tmp_path):
    cfg = make_config()
    d = runs.execute(cfg, results=tmp_path, show_progress=False)
    metrics = json.loads((d / "metrics.json").read_text())
    history = json.loads((d / "history.json").read_text())
    assert metrics["epochs_run"] == len(history) == 2
    for setting in ("transductive", "inductive"):
        for neg in ("random", "historical"):
            for key in ("ap", "auc", "ap_whole", "auc_whole"):
                value = metrics[f"test_{setting}_{neg}_{key}"]
                assert 0.0 <= value <= 1.0, (setting, neg, key)
                assert 0.0 <= metrics[f"val_{setting}_{neg}_{key}"] <= 1.0
    assert not any("inductive_inductive" in k for k in metrics)  # only the configured samplers
    assert metrics["epoch_time_s"] > 0 and metrics["peak_rss_mb"] > 0 and metrics["peak_gpu_memory_mb"] is None
    assert metrics["n_parameters"] > 0 and metrics["time_diff_std"] > 0
    assert {"train_loss", "val_ap", "val_auc", "val_ap_whole", "val_loss", "epoch_time_s"} <= set(history[0])
    prov = json.loads((d / "provenance.json").read_text())
    assert prov["data"]["standin"] is True and prov["data"]["sha256"]
    assert not (d / "checkpoint.pt").exists()


def test_the_record_holds_the_effective_config_beside_the_declared_one(task, tmp_path):
    """Per-dataset values and the history length reach the task through effective_config.json; the run id and
    config.json stay the declared config's."""
    from timerepro.records import load_record, read_effective_config

    cfg = make_config(max_epochs=1, eval_negatives=["random"], sequence_length=2, per_dataset={"uci": {"dropout": 0.0}})
    d = runs.execute(cfg, results=tmp_path, show_progress=False)
    assert json.loads((d / "config.json").read_text()) == cfg and cfg["run_id"] == registry.run_id(
        {k: v for k, v in cfg.items() if k != "run_id"})
    eff = read_effective_config(d)
    assert (eff["num_neighbors"], eff["dropout"]) == (2, 0.0) and (cfg["num_neighbors"], cfg["dropout"]) == (3, 0.1)
    assert {k: v for k, v in eff.items() if k not in ("num_neighbors", "dropout")} == \
        {k: v for k, v in cfg.items() if k not in ("num_neighbors", "dropout")}
    assert load_record(d)["effective_config"] == eff


def test_killed_run_resumes_to_the_same_metrics(task, tmp_path, kill_then_resume):
    # model selection on historical validation AP: exercises the monitor_negatives path as well
    cfg = make_config(max_epochs=3, monitor_negatives="historical", eval_negatives=["random"])
    expected = json.loads((runs.execute(cfg, results=tmp_path / "a", show_progress=False) / "metrics.json").read_text())

    d = kill_then_resume(cfg, tmp_path / "b", after=2)
    got = json.loads((d / "metrics.json").read_text())
    assert json.loads((d / "provenance.json").read_text())["resumed_from_epoch"] == 1
    cost = {"epoch_time_s", "peak_rss_mb", "peak_gpu_memory_mb"}  # measurements, not results
    assert {k: v for k, v in got.items() if k not in cost} == {k: v for k, v in expected.items() if k not in cost}


def test_unknown_model_or_sampler_is_refused_before_any_work():
    with pytest.raises(KeyError, match="unknown link_prediction model"):
        link_prediction.run(make_config(model="nope"), ctx=None)
    with pytest.raises(ValueError, match="negative sampling strategy"):
        link_prediction.run(make_config(eval_negatives=["random", "hard"]), ctx=None)
    assert "tgat" in link_prediction.MODELS


def test_dyglib_early_stopping_selects_on_ap_and_auc_with_ties(task, tmp_path, monkeypatch):
    """`early_stopping: dyglib` reaches train.fit as DyGLib's rule (AP and AUC both >= their bests, DyG-Mamba's
    train_link_prediction.py:431-434): the recorded best epoch is the last epoch the rule accepts; absent key: the
    project's strict rule on `monitor_metric`; an unknown name is refused before any work."""
    from timerepro.tasks.link_prediction import loop

    seen = []

    def spy(*args, **kw):
        seen.append({k: kw[k] for k in ("monitor", "mode", "ties")})
        return fit(*args, **kw)

    fit = loop.fit
    monkeypatch.setattr(loop, "fit", spy)
    d = runs.execute(make_config(max_epochs=4, patience=4, eval_negatives=["random"], early_stopping="dyglib"),
                     results=tmp_path, show_progress=False)
    assert seen == [{"monitor": ("ap", "auc"), "mode": "max", "ties": True}]
    history = json.loads((d / "history.json").read_text())
    best, expected = None, -1
    for row in history:  # DyGLib's EarlyStopping.step by hand
        if best is None or (row["val_ap"] >= best[0] and row["val_auc"] >= best[1]):
            best, expected = (row["val_ap"], row["val_auc"]), row["epoch"]
    assert json.loads((d / "metrics.json").read_text())["best_epoch"] == expected

    seen.clear()
    runs.execute(make_config(max_epochs=1, eval_negatives=["random"]), results=tmp_path / "p", show_progress=False)
    assert seen == [{"monitor": "ap", "mode": "max", "ties": False}]
    with pytest.raises(ValueError, match="unknown early_stopping"):
        link_prediction.run(make_config(early_stopping="patient"), ctx=None)


def test_only_dyg_mamba_link_prediction_runs_use_dyglib_early_stopping():
    """Every dyg_mamba link-prediction run carries `early_stopping: dyglib`; linear_time's and swinit's carry no key
    (their run ids are those of before the key existed)."""
    reg = registry.load()
    for paper in ("dyg_mamba", "linear_time", "swinit"):
        lp = [r for r in reg.runs("smoke", paper) if r.config["task"] == "link_prediction"]
        assert lp, paper
        assert {r.config.get("early_stopping") for r in lp} == ({"dyglib"} if paper == "dyg_mamba" else {None}), paper
