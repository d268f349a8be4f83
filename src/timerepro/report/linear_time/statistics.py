"""linear_time Table 5 (UCI waiting times, rows from `report/dataset_statistics.py`): claim c19."""

from __future__ import annotations

import pandas as pd

from .. import published
from ..claims import FAILS, HOLDS, PENDING, rule
from . import PAPER

ROLES = ("Source node", "Destination node")


def _waiting_means(df: pd.DataFrame) -> pd.Series:
    return df[(df["artifact"] == "table5") & (df["metric"] == "waiting_time_minutes_mean")].set_index(["row_group", "row"])["mean"]


def _ratios(t: pd.Series) -> str:
    return ", ".join(f"{g.split()[0].lower()} {t[(g, 'Test')] / t[(g, 'Train')]:.1f}x" for g in ROLES)


@rule("uci_waiting_times_shift")
def uci_waiting_times_shift(df: pd.DataFrame) -> tuple[str, str]:
    """c19: on UCI the test split's mean waiting time is at least twice the train split's, for both source and
    destination nodes."""
    t = _waiting_means(df)
    missing = [f"{g} {s}" for g in ROLES for s in ("Train", "Test") if (g, s) not in t.index or pd.isna(t[(g, s)])]
    if missing:
        return PENDING, f"table5 lacks the mean waiting time of {', '.join(missing)}"
    ratio = {g: t[(g, "Test")] / t[(g, "Train")] for g in ROLES}
    return (HOLDS if min(ratio.values()) >= 2 else FAILS), (
        f"test / train mean waiting time: {_ratios(t)} (published {_ratios(_waiting_means(published.load(PAPER)))})")
