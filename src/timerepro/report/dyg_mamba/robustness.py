"""Figures 8 and 9: test AP with a ratio of inserted noisy neighbours (A16)."""

from __future__ import annotations

from collections import defaultdict

from timerepro import metric_keys as mk
from timerepro.names import MODEL_LABELS

from ..aggregate import aggregator
from ..rows import cell_row, over_runs
from .common import dataset_of


@aggregator("dm_noise")
def dm_noise(records: list[dict]) -> list[dict]:
    """Figures 8 and 9: test AP (transductive, random negatives) with a ratio of inserted noisy neighbours (A16)."""
    groups = defaultdict(list)
    for r in records:
        groups[(dataset_of(r["config"]), MODEL_LABELS[r["config"]["model"]])].append(r)
    rows = []
    for (ds, model), rs in sorted(groups.items()):
        for ratio in rs[0]["config"].get("noise_ratios", []):
            cell = over_runs(rs, mk.noise(ratio, "ap"))
            if cell:
                rows.append(cell_row(ds, model, f"{ratio:g}", "AP_random_noise", cell))
    return rows
