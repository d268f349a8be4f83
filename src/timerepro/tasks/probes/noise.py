"""Probe `noise`, dyg_mamba Figures 8 and 9 (docs/dyg_mamba.md M08, A16): the selected model, trained on clean data,
evaluated again with random negatives at each ratio of `noise_ratios`, its neighbour retrieval answered by
`NoisyNeighbors` (graphs/noise.py) in the config's `noise_mode` (absent: `replace`, the authors' utils.py:155-171;
`insert`: the project's reading of section 5.2). As the authors' evaluate_link_prediction_robustness_test.py:211-235:
the test edges (transductive) and, where the split has them, the new-node test edges (inductive), each pass from the
state at the end of validation, in batches of `noise_batch_size` (the authors': 400, load_configs.py:196-197;
absent: the clean test's batch, so that ratio 0 is the clean test)."""

from __future__ import annotations

import numpy as np

from timerepro import metric_keys
from timerepro.graphs.negatives import dyglib_eval_samplers
from timerepro.graphs.noise import MODES, NoisyNeighbors

NOISE_SEED = 7  # the noise stream of every ratio starts here (same noise for every model at a ratio)
DEFAULT_MODE = MODES[0]  # replace: the authors'
PARTS = (("test", "transductive"), ("new_node_test", "inductive"))  # (split mask and sampler name, setting)


def wants(config: dict) -> bool:
    return bool(config.get("noise_ratios"))


def batch_size(config: dict) -> int:
    """`noise_batch_size`, else the clean test's (`eval_batch_size`, else `batch_size`: tasks/link_prediction/loop.py)."""
    return int(config.get("noise_batch_size") or config.get("eval_batch_size") or config["batch_size"])


def probe(trained, config: dict, ctx) -> dict:
    """{test_<setting>_random_noise<r>_{ap,auc}: value} for every ratio r (r = 0: no noise) and setting (inductive only
    where the split has new-node test edges)."""
    data, split = trained.data, trained.split
    mode = config.get("noise_mode", DEFAULT_MODE)
    size = batch_size(config)
    samplers = dyglib_eval_samplers(data, split, "random")
    out = {}
    for ratio in config["noise_ratios"]:
        for part, setting in PARTS:
            if part not in samplers:
                continue  # no new-node test edge (tiny graphs)
            trained.start_pass()  # a memory model starts every pass from the end of validation
            noisy = NoisyNeighbors(trained.graph, float(ratio), seed=NOISE_SEED, mode=mode)
            m = trained.evaluate(np.flatnonzero(getattr(split, part)), samplers[part], noisy, size)
            for measure in ("ap", "auc"):
                out[metric_keys.noise(ratio, measure, setting)] = m[measure]
    return out
