"""Figure 7: test AP against the sequence length."""

from __future__ import annotations

from collections import defaultdict

from timerepro import metric_keys as mk
from timerepro.names import MODEL_LABELS

from ..aggregate import aggregator
from ..rows import cell_row, over_runs
from .common import dataset_of


@aggregator("dm_fig7")
def dm_fig7(records: list[dict]) -> list[dict]:
    """Figure 7: test AP (transductive, random negatives) vs the sequence length, per model."""
    groups = defaultdict(list)
    for r in records:
        c = r["config"]
        groups[(dataset_of(c), MODEL_LABELS[c["model"]], int(c["sequence_length"]))].append(r)
    rows = []
    for (ds, model, length), rs in sorted(groups.items()):
        cell = over_runs(rs, mk.link_prediction("test", "transductive", "random", "ap"))
        if cell:
            rows.append(cell_row(ds, model, str(length), "AP_random", cell))
    return rows
