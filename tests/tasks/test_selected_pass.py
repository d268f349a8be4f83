"""The final evaluation reads the selected epoch's validation figures instead of running that pass again
(issue 27): they are bitwise what the rerun on the restored model gives, for a model without stream state (TGAT)
and one with (TGN's memory, restored to the selected epoch's end of training), and the pass is not run."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from timerepro import registry, runs
from timerepro.graphs.negatives import dyglib_eval_samplers
from timerepro.models.graph.memory import stream_state
from timerepro.tasks.link_prediction import loop

BASE = dict(paper="linear_time", experiment="lp_test", task="link_prediction", dataset="uci", standin="smoke",
            encoder="linear", d_T=4, dropout=0.1, lr=1e-3, batch_size=50, eval_batch_size=200, max_epochs=3,
            patience=5, num_neighbors=3, num_layers=1, num_heads=2, eval_negatives=["random", "historical"], seed=0)


def make_config(model: str) -> dict:
    reg = registry.load()
    cfg = {**reg.tasks["link_prediction"]["defaults"], **reg.models[model]["defaults"], **BASE, "model": model}
    cfg["run_id"] = registry.run_id(cfg)
    return cfg


@pytest.fixture
def task(standin_root, monkeypatch):
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root("uci")))
    torch.set_num_threads(1)


@pytest.mark.parametrize("model", ["tgat", "tgn"])
def test_selected_validation_figures_are_the_rerun_pass(task, tmp_path, monkeypatch, model):
    cfg = make_config(model)
    seen, passes = {}, []
    original = loop.evaluate

    def counting(model_, data, idx, *args, **kwargs):
        passes.append(len(idx))
        return original(model_, data, idx, *args, **kwargs)

    def capture(trained, config, ctx):
        seen["trained"] = trained
        return {}

    monkeypatch.setattr(loop, "evaluate", counting)
    pass_of = loop.evaluate_pass  # the final passes (a part's positives reused under the second sampler)
    monkeypatch.setattr(loop, "evaluate_pass", lambda model_, data, idx, *a, **k: passes.append(len(idx))
                        or pass_of(model_, data, idx, *a, **k))
    monkeypatch.setattr(loop, "run_probes", capture)
    d = runs.execute(cfg, results=tmp_path, show_progress=False)
    metrics = json.loads((d / "metrics.json").read_text())
    history = json.loads((d / "history.json").read_text())
    best = next(h for h in history if h["epoch"] == metrics["best_epoch"])

    trained = seen["trained"]
    split = trained.split
    val_idx = np.flatnonzero(split.val)
    # a validation per epoch, then every part (those the split has) under both samplers, less the selected pass
    parts = len(dyglib_eval_samplers(trained.data, split, "random"))
    assert len(passes) == cfg["max_epochs"] + 2 * parts - 1
    # the pass the old code ran again: the restored model from the selected epoch's end of training
    stream_state(trained.model.backbone).restore_state("train_end")
    rerun = trained.evaluate(val_idx, dyglib_eval_samplers(trained.data, split, "random")["val"], trained.graph,
                             cfg["eval_batch_size"])
    for key in ("ap", "auc", "ap_whole", "auc_whole"):
        assert metrics[f"val_transductive_random_{key}"] == rerun[key] == best[f"val_{key}"], key
    assert json.loads((d / "provenance.json").read_text())["test_time_s"] > 0
