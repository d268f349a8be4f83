"""dyg_mamba Figures 8 and 9: the selected model, evaluated again on the test edges (transductive, random
negatives) with noisy neighbours inserted at each ratio of `noise_ratios` (graphs/noise.py; A16).
The model is trained on clean data; only the evaluation's neighbour retrieval is perturbed."""

from __future__ import annotations

import numpy as np

from timerepro.graphs.negatives import dyglib_eval_samplers
from timerepro.graphs.noise import NoisyNeighbors
from timerepro.models.graph.memory import stream_state

NOISE_SEED = 7  # the noise stream of every ratio starts here (same noise for every model at a ratio)


def metric_name(ratio: float, key: str) -> str:
    return f"test_transductive_random_noise{ratio:g}_{key}"


def evaluate_under_noise(model, data, split, graph, config: dict) -> dict:
    """{test_transductive_random_noise<r>_{ap,auc}: value} for every ratio r (r = 0 is the clean evaluation)."""
    from timerepro.tasks import link_prediction as lp

    samplers = dyglib_eval_samplers(data, split, "random")
    idx = np.flatnonzero(split.test)
    out = {}
    for ratio in config["noise_ratios"]:
        stream_state(model.backbone).restore_state("val_end")  # a memory model starts every pass from the end of validation
        noisy = NoisyNeighbors(graph, float(ratio), seed=NOISE_SEED)
        m = lp.evaluate(model, data, idx, samplers["test"], noisy, int(config["batch_size"]), config.get("amp", "none"))
        out[metric_name(ratio, "ap")], out[metric_name(ratio, "auc")] = m["ap"], m["auc"]
    return out
