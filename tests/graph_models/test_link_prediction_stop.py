"""Link prediction stopped by SIGTERM mid-epoch, through `runs.execute` as `timerepro run-job` runs it (TGAT, then every
trainable model of the registry):
a checkpoint at the next batch, `JobStopped`, and a resumed run with the metrics of an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal

import pytest
import torch

from timerepro import runs, stopping
from timerepro.tasks import link_prediction

from .test_link_prediction import make_config

COST = {"epoch_time_s", "peak_rss_mb", "peak_gpu_memory_mb"}  # measurements, not results


@pytest.fixture
def task(standin_root, monkeypatch):
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root("uci")))


def counting_scores(monkeypatch, kill_at: int | None = None) -> dict:
    """Count training batches (calls of `score` in training mode); SIGTERM this process in batch `kill_at`."""
    score = link_prediction.LinkPredictionModel.score
    calls = {"n": 0}

    def scoring(self, *args, **kw):
        if self.training:
            calls["n"] += 1
            if calls["n"] == kill_at:
                os.kill(os.getpid(), signal.SIGTERM)  # noted by the handler; the batch finishes
        return score(self, *args, **kw)

    monkeypatch.setattr(link_prediction.LinkPredictionModel, "score", scoring)
    return calls


def test_stopped_mid_epoch_by_sigterm_resumes_at_that_batch_to_the_same_metrics(task, tmp_path, monkeypatch):
    cfg = make_config(max_epochs=3, batch_size=50)  # TGN-free TGAT: neighbour sampling, negatives, dropout
    calls = counting_scores(monkeypatch)
    expected = json.loads((runs.execute(cfg, results=tmp_path / "a", show_progress=False) / "metrics.json").read_text())
    per_epoch = calls["n"] // 3
    assert per_epoch >= 4

    counting_scores(monkeypatch, kill_at=per_epoch + 3)  # the third batch of the second epoch
    with pytest.raises(stopping.JobStopped) as stopped:
        runs.execute(cfg, results=tmp_path / "b", show_progress=False)
    assert stopped.value.code == stopping.EXIT_STOPPED
    d = tmp_path / "b" / "runs" / cfg["paper"] / cfg["run_id"]
    ckpt = torch.load(d / "checkpoint.pt", weights_only=False)
    assert (ckpt["epoch"], ckpt["batch"]) == (0, 3) and not (d / "metrics.json").exists()

    counting_scores(monkeypatch)
    got = json.loads((runs.execute(cfg, results=tmp_path / "b", show_progress=False) / "metrics.json").read_text())
    assert json.loads((d / "provenance.json").read_text())["resumed_from_epoch"] == 0
    assert {k: v for k, v in got.items() if k not in COST} == {k: v for k, v in expected.items() if k not in COST}


def _first_smoke_runs() -> dict:
    """model -> its first smoke link-prediction config (every trainable model of the registry's link prediction)."""
    from timerepro import registry

    out = {}
    for run in registry.load().runs("smoke"):
        c = run.config
        if c["task"] == "link_prediction" and c.get("model") != "edgebank":  # EdgeBank trains nothing
            out.setdefault(c["model"], c)
    return out


SMOKE_RUNS = _first_smoke_runs()


@pytest.mark.parametrize("model", sorted(SMOKE_RUNS))
def test_every_model_stopped_mid_epoch_resumes_to_the_same_record(model, standin_root, tmp_path, monkeypatch,
                                                                  stop_then_resume):
    """Each model's own state (memories, samplers' streams, SWINIT's pre-pass place, which once was not in the
    checkpoint) survives a stop in the second epoch's third batch: the retry ends with the whole run's record."""
    from timerepro import registry

    base = SMOKE_RUNS[model]
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root(base["dataset"])))
    cfg = {k: v for k, v in base.items() if k != "run_id"} | {"max_epochs": 2, "patience": 2,
                                                                "batch_size": min(int(base["batch_size"]), 50)}
    stop_then_resume(cfg | {"run_id": registry.run_id(cfg)}, tmp_path)
