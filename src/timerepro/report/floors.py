"""EdgeBank as the floor of link prediction: a reproduced AP below EdgeBank's on the same data is suspect.

EdgeBank (Poursafaei et al. 2022) predicts "seen before" and learns nothing; a trained temporal model that scores
below it on the same graph, split and negative sampler is more likely broken than beaten (issue 15). Both frames
are aggregated rows (`aggregate.COLUMNS`): the link-prediction cells, and EdgeBank's rows of the same tables.
"Same data" is the same dataset column and metric (the metric names the sampler and split) and, where both frames
carry them, the same scale and data label (a stand-in is never held against a real graph).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd

MATCH = ("column", "metric")  # always matched
MATCH_IF_PRESENT = ("scale", "data")  # matched when both frames have the column
AP_METRICS = ("AP_random_NS_test", "AP_historical_NS_test")


def below_edgebank(rows: pd.DataFrame, edgebank: pd.DataFrame, metrics=AP_METRICS) -> pd.DataFrame:
    """The cells of `rows` (metric in `metrics`) whose mean is below EdgeBank's mean on the same data.

    Returns those rows with `edgebank_mean` and `margin` (= mean - edgebank_mean, negative) added, largest shortfall
    first. Where EdgeBank has several rows for one key (variants), the best of them is the floor. Cells with no
    EdgeBank row for their data are not judged."""
    keys = list(MATCH) + [k for k in MATCH_IF_PRESENT if k in rows.columns and k in edgebank.columns]
    cells = rows[rows["metric"].isin(metrics)]
    floor = (edgebank[edgebank["metric"].isin(metrics)].groupby(keys, as_index=False)["mean"].max()
             .rename(columns={"mean": "edgebank_mean"}))
    judged = cells.merge(floor, on=keys, how="inner")
    judged["margin"] = judged["mean"] - judged["edgebank_mean"]
    return judged[judged["margin"] < 0].sort_values("margin", kind="stable").reset_index(drop=True)


def edgebank_choice(records: list[dict], key: str) -> list[dict]:
    """EdgeBank's run records of the memory with the best mean `key` (a validation metric; ties: the first memory
    listed): "the best of its 4 variants", chosen per cell as DyGLib's tables and dyg_mamba's do."""
    by_mem = defaultdict(list)
    for r in records:
        by_mem[r["config"].get("edgebank_memory")].append(r)
    scored = {m: np.mean([r["metrics"][key] for r in g]) for m, g in by_mem.items() if all(key in r["metrics"] for r in g)}
    if not scored:
        return []
    return by_mem[max(scored, key=lambda m: scored[m])]
