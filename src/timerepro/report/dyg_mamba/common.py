"""What every dyg_mamba module shares: the labels of samplers, variants and the two compared models, a run's
dataset and variant as printed, the paper's average ranks, and published quotes for claim details."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pandas as pd

from timerepro.names import dataset_label

from .. import published
from . import PAPER


NSS = {"rnd": "random", "hist": "historical", "ind": "inductive"}
VARIANT_LABELS = {"dyg_mamba": "DyG-Mamba", "wo_time_span": "w/o Time-span", "wo_selective": "w/o Selective",
                  "wo_cross_attention": "w/o Cross-attn", "wo_time_encoding": "w/o Time-encoding",
                  "wo_both_time": "w/o both Time", "all_time_dependent": "all Time-dependent"}
TABLE5_VARIANTS = ("wo_time_encoding", "wo_time_span", "wo_both_time", "all_time_dependent", "dyg_mamba")
ABLATION_VARIANTS = ("dyg_mamba", "wo_time_span", "wo_selective", "wo_cross_attention")
OURS, RIVAL = "DyG-Mamba", "DyGFormer"
AVG_RANK = "Avg. Rank"
# machine measurements (their rows are not results a rerun must reproduce)
TIME_STEP, PEAK_MEM, SAVED_MEM = "time_per_step_s", "peak_memory_MB", "saved_activation_MB"


def dataset_of(c: dict) -> str:
    """A run's dataset as the paper prints it (params/datasets.lock.yaml)."""
    return dataset_label(c["dataset"], PAPER)


def variant_of(c: dict) -> str:
    """A run's DyG-Mamba variant ("dyg_mamba": the full model, and every other model's runs)."""
    return c.get("variant", "dyg_mamba") if c.get("model") == "dyg_mamba" else "dyg_mamba"


def average_ranks(means: dict[tuple[str, str], float], exclude: tuple[str, ...] = ("FreeDyG",)) -> dict[str, tuple[float, int]]:
    """{(dataset, model): mean} -> {model: (average rank, number of datasets ranked)}; 1 = best, tied means share
    the average of their ranks (this reproduces every printed Avg. Rank row of Tables 2, 4, 9, 10, 11 within 0.01)."""
    by_dataset: dict[str, dict[str, float]] = defaultdict(dict)
    for (ds, model), v in means.items():
        if model not in exclude and v is not None and not math.isnan(v):
            by_dataset[ds][model] = v
    ranks: dict[str, list[float]] = defaultdict(list)
    for ds, vals in by_dataset.items():
        if len(vals) < 2:
            continue
        s = pd.Series(vals).rank(ascending=False, method="average")
        for model, r in s.items():
            ranks[model].append(float(r))
    return {m: (float(np.mean(r)), len(r)) for m, r in ranks.items()}


def _published() -> pd.DataFrame:
    """The paper's own rows (params/published/), which claim details quote through the rules' own functions."""
    return published.load(PAPER)


def published_quote(fn) -> str:
    """`fn(published rows)` as text, or "n/a" where the published tables lack what it reads."""
    try:
        return fn(_published())
    except (KeyError, IndexError, ValueError, TypeError):
        return "n/a"
