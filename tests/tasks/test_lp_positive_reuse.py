"""A part's positive scores are computed once and reused by its passes under the other negative samplers (issue 27):
the run's figures are bitwise those of scoring every pass in full, for backbones without stream state or random
draws; memory models (TGN) and random neighbour sampling are not eligible."""

from __future__ import annotations

import json

import pytest
import torch

from timerepro import runs
from timerepro.tasks.link_prediction import loop
from timerepro.tasks.link_prediction.evaluation import reuses_positives
from timerepro.tasks.link_prediction.model import build_model

from tests.tasks.test_selected_pass import make_config


@pytest.fixture
def task(standin_root, monkeypatch):
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root("uci")))
    torch.set_num_threads(1)


def test_eligibility(task):
    from timerepro.data.ctdg import link_prediction_split
    from timerepro.graphs.neighbors import TemporalNeighbors
    from timerepro.tasks.link_prediction import effective_config, load_data

    def model(name, **over):
        cfg = effective_config({**make_config(name), **over})
        data, _ = load_data(cfg)
        split = link_prediction_split(data)
        return build_model(cfg, data, split, TemporalNeighbors.from_data(data, split.train))

    assert reuses_positives(model("tgat"))
    assert not reuses_positives(model("tgat", neighbor_sampling="uniform"))  # draws depend on what else is scored
    assert not reuses_positives(model("tgn"))  # memory evolves with every pass


@pytest.mark.parametrize("name", ["tgat", "graphmixer", "dygformer"])
def test_reused_positives_give_the_full_passes_figures(task, tmp_path, monkeypatch, name):
    cfg = {**make_config(name), "max_epochs": 1}
    reused = json.loads((runs.execute(cfg, results=tmp_path / "reused", show_progress=False)
                         / "metrics.json").read_text())
    calls = []
    original = loop.evaluate_pass
    monkeypatch.setattr(loop, "reuses_positives", lambda model: False)
    monkeypatch.setattr(loop, "evaluate_pass", lambda *a, **k: calls.append(k["positives"]) or original(*a, **k))
    full = json.loads((runs.execute(cfg, results=tmp_path / "full", show_progress=False) / "metrics.json").read_text())
    assert calls and all(p is None for p in calls)  # every pass scored its positives
    measured = {"epoch_time_s", "peak_rss_mb", "peak_gpu_memory_mb"}
    assert {k: v for k, v in reused.items() if k not in measured} == {k: v for k, v in full.items()
                                                                     if k not in measured}
