"""Figure 1: test AP with and without time information, and Student's t-tests between the arms."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from timerepro import metric_keys as mk
from timerepro.names import MODEL_LABELS

from ..aggregate import aggregator
from ..rows import cell_row, over_runs
from .common import dataset_of


def _fig1_arm(c: dict) -> str | None:
    model, exp = c["model"], c["experiment"]
    if model == "dyg_mamba":
        return {"vanilla_mamba": "vMamba", "vanilla_mamba_no_time": "vMamba w/o time"}.get(c.get("variant"))
    base = MODEL_LABELS[model]
    if c.get("time_input") == "position":
        return f"{base} + PE"
    return f"{base} w/o time" if c.get("encoder") == "none" else base


def _ttest(a: list[float], b: list[float]) -> float:
    """Student's two-sample t-test p-value (equal variances); nan with fewer than two runs a side or no variance."""
    from scipy import stats

    if len(a) < 2 or len(b) < 2 or (np.var(a) == 0 and np.var(b) == 0):
        return float("nan")
    return float(stats.ttest_ind(a, b, equal_var=True).pvalue)


@aggregator("dm_fig1")
def dm_fig1(records: list[dict]) -> list[dict]:
    """Figure 1: test AP (random negatives) of each arm with and without time information, transductive and
    inductive, and Student's t-test p-values of "with" vs "without" time (and vMamba vs DyGFormer)."""
    groups = defaultdict(list)
    for r in records:
        arm = _fig1_arm(r["config"])
        if arm:
            groups[(arm, dataset_of(r["config"]))].append(r)
    rows = []
    for setting in ("transductive", "inductive"):
        key = mk.link_prediction("test", setting, "random", "ap")
        for (arm, ds), rs in sorted(groups.items()):
            cell = over_runs(rs, key)
            if cell:
                rows.append(cell_row(setting, arm, ds, "AP_random", cell))
        pairs = [(m, f"{m} w/o time") for m in ("DyGFormer", "GraphMixer", "vMamba")] + [("DyGFormer", "DyGFormer + PE"),
                                                                                        ("DyGFormer", "vMamba")]
        for a, b in pairs:
            for ds in sorted({d for _, d in groups}):
                ra, rb = groups.get((a, ds), []), groups.get((b, ds), [])
                va = [100 * r["metrics"][key] for r in ra if key in r["metrics"]]
                vb = [100 * r["metrics"][key] for r in rb if key in r["metrics"]]
                if va and vb:
                    rows.append({"row_group": setting, "row": f"{a} vs {b}", "column": ds, "metric": "p_value_ttest",
                                 "mean": _ttest(va, vb), "std": 0.0, "n_runs": len(va) + len(vb), "_records": ra + rb,
                                 "note": "Student's t-test over runs; nan with fewer than two runs a side"})
    return rows
