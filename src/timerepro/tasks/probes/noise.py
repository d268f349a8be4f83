"""Probe `noise`, dyg_mamba Figures 8 and 9: the selected model, evaluated again on the test edges (transductive, random
negatives) with noisy neighbours inserted at each ratio of `noise_ratios` (graphs/noise.py; A16).
The model is trained on clean data; only the evaluation's neighbour retrieval is perturbed."""

from __future__ import annotations

import numpy as np

from timerepro import metric_keys
from timerepro.graphs.negatives import dyglib_eval_samplers
from timerepro.graphs.noise import NoisyNeighbors

NOISE_SEED = 7  # the noise stream of every ratio starts here (same noise for every model at a ratio)


def wants(config: dict) -> bool:
    return bool(config.get("noise_ratios"))


def probe(trained, config: dict, ctx) -> dict:
    """{test_transductive_random_noise<r>_{ap,auc}: value} for every ratio r (r = 0 is the clean evaluation),
    in the clean test's batches (`eval_batch_size`, absent: `batch_size`), so that ratio 0 is the clean test AP."""
    data, split = trained.data, trained.split
    samplers = dyglib_eval_samplers(data, split, "random")
    idx = np.flatnonzero(split.test)
    batch_size = int(config.get("eval_batch_size") or config["batch_size"])  # as tasks/link_prediction/loop.py
    out = {}
    for ratio in config["noise_ratios"]:
        trained.start_pass()  # a memory model starts every pass from the end of validation
        noisy = NoisyNeighbors(trained.graph, float(ratio), seed=NOISE_SEED)
        m = trained.evaluate(idx, samplers["test"], noisy, batch_size)
        out[metric_keys.noise(ratio, "ap")], out[metric_keys.noise(ratio, "auc")] = m["ap"], m["auc"]
    return out
