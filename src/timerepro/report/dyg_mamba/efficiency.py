"""Figure 3 (time and memory per step against the sequence length) and Figures 4, 10 (AP against seconds per
epoch and parameter size): what the runs cost."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from timerepro import metric_keys as mk
from timerepro.names import MODEL_LABELS

from ..aggregate import TIME_PER_EPOCH, aggregator
from ..rows import cell_row, over_runs
from .common import OURS, PEAK_MEM, RIVAL, SAVED_MEM, TIME_STEP, dataset_of
from .settings import effective_settings


def growth_exponent(lengths, values, upper_half: bool = True) -> float:
    """Least-squares slope of log(value) on log(L), over the upper half of the lengths (the asymptotic regime:
    fixed per-step costs dominate short sequences). nan with fewer than two points."""
    x, y = np.asarray(lengths, float), np.asarray(values, float)
    keep = (y > 0) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if upper_half and len(x) >= 4:
        cut = np.median(x)
        x, y = x[x >= cut], y[x >= cut]
    if len(x) < 2:
        return float("nan")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


@aggregator("dm_fig3")
def dm_fig3(records: list[dict]) -> list[dict]:
    """Figure 3: seconds per training step, peak memory and autograd-saved activations per model and L, the fitted
    growth exponents, and at the longest common L DyGFormer's time over DyG-Mamba's and the memory saved."""
    groups = defaultdict(list)
    for r in records:
        groups[(MODEL_LABELS[r["config"]["model"]], int(r["metrics"]["sequence_length"]))].append(r)
    rows, series = [], defaultdict(dict)
    measures = ((TIME_STEP, "time_per_step_s"), (PEAK_MEM, "peak_memory_mb"), (SAVED_MEM, "saved_activation_mb"))
    for (model, length), rs in sorted(groups.items()):
        for metric, key in measures:
            cell = over_runs(rs, key, scale=1.0)
            if cell:
                rows.append(cell_row("cost", model, str(length), metric, cell, note=f"device {rs[0]['metrics'].get('device')}"))
                series[(model, metric)][length] = cell[0]
    for (model, metric), pts in sorted(series.items()):
        rs = [r for (m, _), g in groups.items() if m == model for r in g]
        rows.append({"row_group": "cost", "row": model, "column": "growth exponent", "metric": f"growth_exponent_{metric}",
                     "mean": growth_exponent(list(pts), list(pts.values())), "std": 0.0, "n_runs": len(rs), "_records": rs,
                     "note": "log-log slope over the upper half of the lengths"})
    common = set(series.get((OURS, TIME_STEP), {})) & set(series.get((RIVAL, TIME_STEP), {}))
    if common:
        top = max(common)
        rs = groups[(OURS, top)] + groups[(RIVAL, top)]
        gpu = all(str(r["metrics"].get("device", "")).startswith("cuda") for r in rs)
        t = series[(RIVAL, TIME_STEP)][top] / series[(OURS, TIME_STEP)][top]
        m = 100 * (1 - series[(OURS, PEAK_MEM)][top] / series[(RIVAL, PEAK_MEM)][top])
        group = f"seq_len={top}"
        rows.append({"row_group": group, "row": "DyG-Mamba vs DyGFormer", "column": OURS, "metric": "speedup_vs_DyGFormer_x",
                     "mean": t, "std": 0.0, "n_runs": len(rs), "_records": rs})
        rows.append({"row_group": group, "row": "DyG-Mamba vs DyGFormer", "column": OURS,
                     "metric": "gpu_memory_saving_vs_DyGFormer_pct" if gpu else "cpu_memory_saving_vs_DyGFormer_pct",
                     "mean": m, "std": 0.0, "n_runs": len(rs), "_records": rs})
    return rows


# ------------------------------------------------------------------ Figures 4 and 10 (bubbles)

@aggregator("dm_bubbles")
def dm_bubbles(records: list[dict]) -> list[dict]:
    """Figures 4 and 10: test AP (transductive, random negatives), training seconds per epoch (this machine) and
    trainable parameter size in MB (float32) per model, with the same history length for every model."""
    groups = defaultdict(list)
    for r in records:
        groups[(dataset_of(r["config"]), MODEL_LABELS[r["config"]["model"]])].append(r)
    rows = []
    for (ds, model), rs in sorted(groups.items()):
        length = effective_settings(rs[0]).get("sequence_length_by_dataset", {}).get(rs[0]["config"]["dataset"])
        col = f"L={length}"
        for metric, key, scale in (("AP_transductive_random", mk.link_prediction("test", "transductive", "random", "ap"), 100.0),
                                   (TIME_PER_EPOCH, "epoch_time_s", 1.0),
                                   ("param_size_MB", lambda m: m.get("n_parameters", 0) * 4 / 2**20, 1.0)):
            cell = over_runs(rs, key, scale)
            if cell:
                rows.append(cell_row(ds, model, col, metric, cell))
    return rows
