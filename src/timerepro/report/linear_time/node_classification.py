"""linear_time Table 10: dynamic node classification (a frozen link-prediction backbone and an MLP head), claim c13."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd

from timerepro import metric_keys as mk
from timerepro.names import ENCODER_LABELS, MODEL_LABELS, dataset_label

from ..aggregate import aggregator
from ..claims import FAILS, HOLDS, PENDING, covered, incomplete, rule
from ..link_prediction import cells
from . import PAPER


@aggregator("nc_auc")
def nc_auc(records: list[dict]) -> list[dict]:
    """Table 10: test ROC-AUC x 100 of the node-classification head, mean and std over seeds."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        c = r["config"]
        groups[(c["model"], c["encoder"], c["dataset"])].append(r)
    rows = []
    for (model, encoder, dataset), rs in sorted(groups.items()):
        auc = 100 * np.array([r["metrics"][mk.node_classification("test", "auc")] for r in rs])
        rows.append({"row_group": MODEL_LABELS[model], "row": ENCODER_LABELS[encoder],
                     "column": dataset_label(dataset, PAPER), "metric": "AUROC_node_classification_test",
                     "mean": float(auc.mean()), "std": float(auc.std()), "n_runs": len(rs), "_records": rs})
    return rows


@rule("node_classification_encoder_preference")
def node_classification_encoder_preference(df: pd.DataFrame):
    """c13: TGAT better with linear, DyGFormer better with sinusoidal, on both datasets (all four cells)."""
    read, missing = covered(df, PAPER, "table10", "AUROC_node_classification_test", rows=("Linear", "Sinusoidal"),
                            row_groups=("TGAT", "DyGFormer"))
    if missing:
        return PENDING, incomplete(missing, "table10"), read
    table = cells(read, "table10", "AUROC_node_classification_test")
    want = {"TGAT": ("Linear", "Sinusoidal"), "DyGFormer": ("Sinusoidal", "Linear")}
    if table.empty or not {"Linear", "Sinusoidal"} <= set(table.columns):
        return PENDING, "table10 needs linear and sinusoidal runs", read
    parts, ok = [], True
    for (model, ds), row in table.iterrows():
        if model not in want or row[["Linear", "Sinusoidal"]].isna().any():
            continue
        better, worse = want[model]
        good = bool(row[better] > row[worse])
        ok &= good
        parts.append(f"{model} {ds}: linear {row['Linear']:.2f} vs sinusoidal {row['Sinusoidal']:.2f}" + ("" if good else " (not as claimed)"))
    if not parts:
        return PENDING, "table10 has no TGAT or DyGFormer cells with both encoders", read
    return (HOLDS if ok else FAILS), "; ".join(parts), read
