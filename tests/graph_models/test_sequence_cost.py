"""dyg_mamba Figure 3's measurement (tasks/sequence_cost.py): one training step of a registry model on a synthetic
batch whose every node has a full history; DyGFormer's saved activations grow faster with L than DyG-Mamba's."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from timerepro.tasks import sequence_cost
from timerepro.tasks.effective import effective_config

torch.set_num_threads(1)
MODELS = yaml.safe_load((Path(__file__).parents[2] / "params" / "models.yaml").read_text())
SMALL = {"dyg_mamba": dict(d_T=8, d_ch=8, d_cooc=8, d_state=4, expand=1, d_out=8, num_blocks=1),
         "dygformer": dict(d_T=8, d_ch=8, num_layers=1)}


def config(model: str, length: int) -> dict:
    """The effective config of one model at one length (the run resolves it before the task)."""
    return effective_config({**MODELS[model]["defaults"], **SMALL[model], "model": model, "dataset": "synthetic_long_histories",
            "sequence_length": length, "patch_size": 1, "batch_size": 2, "warmup": 1, "repeats": 1, "lr": 1e-3, "seed": 0})


def test_synthetic_batch_gives_every_query_node_a_full_history():
    data, split, graph, u, v, neg, t = sequence_cost.synthetic_graph(16, 3)
    assert (graph.count_before(u, t) == 16).all() and (graph.count_before(v, t) == 16).all()
    assert split.train.sum() == 12 and len(u) == len(v) == len(neg) == 3


def test_measure_reports_a_step_and_saved_activations_that_grow_as_stated():
    got = {(m, L): sequence_cost.measure(config(m, L)) for m in SMALL for L in (64, 256)}
    for m in got.values():
        assert m["time_per_step_s"] > 0 and m["saved_activation_mb"] > 0 and m["device"] == "cpu"
    growth = {m: got[(m, 256)]["saved_activation_mb"] / got[(m, 64)]["saved_activation_mb"] for m in SMALL}
    # 4x L: DyG-Mamba linear (ratio <= 4), DyGFormer's attention maps over the joint sequence grow with L^2
    assert growth["dyg_mamba"] < 4.5 and growth["dygformer"] > 1.25 * growth["dyg_mamba"]


def test_isolated_measurement_runs_in_a_fresh_process_and_reports_its_failures():
    m = sequence_cost.measure_isolated(config("dyg_mamba", 8), threads=1)
    assert m["peak_memory_mb"] > 0 and m["sequence_length"] == 8
    with pytest.raises(RuntimeError, match="cost measurement of nope"):
        sequence_cost.measure_isolated({**config("dyg_mamba", 8), "model": "nope"}, threads=1)
