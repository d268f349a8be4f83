"""Every task family that trains through `train.fit` answers a stop request (SLURM's SIGTERM or early warning,
`timerepro.stopping`) at the next batch boundary: a checkpoint there, exit 75, and a retry that resumes at that batch
and ends with the metrics and history of an uninterrupted run, to the bit (`stop_then_resume`, tests/conftest.py).
Link prediction: tests/graph_models/test_link_prediction_stop.py; the stacked seeds: tests/unit/test_ensemble.py and
tests/time2vec/test_synthetic_task.py."""

from __future__ import annotations

import pytest

from timerepro import registry

pytestmark = pytest.mark.usefixtures("one_thread")

# task -> (paper, experiment at smoke scale, the stand-in it reads, overrides: 3 epochs of 3 or more batches)
CASES = {
    # shuffled: the epoch's order, drawn from the run's generator before its loop, travels in the checkpoint
    "temporal_point_process": ("hawkes_attention", "tpp_stackoverflow", "stackoverflow",
                               {"max_epochs": 3, "patience": 3, "batch_size": 4, "shuffle": True}),
    "forecasting": ("hawkes_attention", "forecast_table9", "exchange",
                    {"max_epochs": 3, "patience": 3, "batch_size": 16}),
    "event_classification": ("time2vec", "mnist_t2v", "event_mnist", {"max_epochs": 3, "batch_size": 16}),
    # TimeLSTM's protocol: the second epoch also trains on test prefixes (fixed_epochs 0)
    "next_item": ("time2vec", "lastfm_lstm_t2v", "lastfm_1k", {"max_epochs": 3, "fixed_epochs": 0}),
    "node_classification/best": ("dyg_mamba", "nc_dyg_mamba", "wikipedia",
                                 {"head_epoch": "best", "max_epochs": 3, "patience": 3, "batch_size": 50}),
    # DyG-Mamba's head loop (tasks/node_classification_stopping.py), its own epoch loop
    "node_classification/test_stepped": ("dyg_mamba", "nc_dyg_mamba", "wikipedia",
                                         {"max_epochs": 3, "patience": 3, "batch_size": 50}),
}


def smoke_config(paper: str, experiment: str, over: dict) -> dict:
    run = registry.load().experiment_runs(paper, experiment, "smoke")[0]
    cfg = {k: v for k, v in run.config.items() if k != "run_id"} | over
    return cfg | {"run_id": registry.run_id(cfg)}


@pytest.mark.parametrize("case", list(CASES))
def test_stopped_mid_epoch_resumes_at_that_batch_to_the_same_record(case, standin_root, tmp_path, monkeypatch,
                                                                    stop_then_resume):
    paper, experiment, dataset, over = CASES[case]
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root(dataset)))
    config = smoke_config(paper, experiment, over)
    assert config["task"] == case.split("/")[0]
    stop_then_resume(config, tmp_path)
