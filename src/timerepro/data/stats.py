"""Dataset-statistics artifacts computed from processed data, in published_values.csv's long format.

linear_time table3 (graph statistics) and table5 (UCI waiting times), dyg_mamba table6 (graph
statistics), hawkes_attention table1 (MTPP statistics). Pure functions: data in, DataFrame out.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from timerepro.data.ctdg import CTDGData, link_prediction_split, split_times
from timerepro.data.lock import Lock, load_lock
from timerepro.data.tpp import TPPData
from timerepro.datakind import DataKind

COLUMNS = ["paper", "artifact", "row_group", "row", "column", "metric", "mean", "std", "note"]
UNIT_SECONDS = {"day": 86400.0, "month": 30 * 86400.0, "year": 365 * 86400.0}
UNIT_PLURAL = {"day": "days", "month": "months", "year": "years", "congress": "congresses"}


def _frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=COLUMNS)
    df["mean"] = pd.to_numeric(df["mean"], errors="coerce")
    df["std"] = pd.to_numeric(df["std"], errors="coerce")
    df["note"] = df["note"].fillna("")
    return df


def graph_counts(g: CTDGData) -> dict:
    """Distinct nodes, all edges, distinct directed (u, i) pairs, distinct timestamps, bipartiteness."""
    pairs = np.unique(np.stack([g.src, g.dst], 1), axis=0) if len(g.src) else np.zeros((0, 2))
    return {
        "n_nodes": int(len(np.union1d(g.src, g.dst))),
        "n_edges_total": int(len(g.src)),
        "n_edges_unique": int(len(pairs)),
        "n_unique_timestamps": int(len(np.unique(g.ts))),
        "bipartite": bool(len(np.intersect1d(g.src, g.dst)) == 0),
    }


def duration(g: CTDGData, options: Mapping) -> tuple[float, str]:
    """Time span in the dataset's unit: seconds / unit for Unix clocks; last - first + 1 for integer-step clocks."""
    unit = options.get("duration_unit", "day")
    if len(g.ts) == 0:
        return 0.0, UNIT_PLURAL.get(unit, unit)
    if options.get("clock", "unix") == "steps":  # integer steps 0..n-1 (years, congresses): n steps
        return float(g.ts.max() - g.ts.min() + 1), UNIT_PLURAL.get(unit, unit)
    return float((g.ts.max() - g.ts.min()) / UNIT_SECONDS[unit]), UNIT_PLURAL.get(unit, unit)


def _row(paper, artifact, group, row, column, metric, mean=None, note=""):
    return {"paper": paper, "artifact": artifact, "row_group": group, "row": row, "column": column, "metric": metric,
            "mean": mean, "std": None, "note": note}


def data_note(g: CTDGData) -> str:
    """What a row's data are when they are not the paper's bytes (a package copy: its label), else ''."""
    m = g.manifest or {}
    return f"data: {m.get('label')}" if m.get("kind") == "package_copy" else ""


def _with_note(rows: list[dict], note: str) -> list[dict]:
    return [r | {"note": "; ".join(x for x in (r["note"], note) if x)} for r in rows] if note else rows


def linear_time_table3(graphs: Mapping[str, CTDGData], lock: Lock | None = None) -> pd.DataFrame:
    """Nodes, total/unique edges, unique timestamps, duration; keys of `graphs` are lock dataset names."""
    lock = lock or load_lock()
    rows = []
    cols = [("# Nodes", "n_nodes"), ("Total # Edges", "n_edges_total"), ("Unique # Edges", "n_edges_unique"),
            ("Unique # Steps", "n_unique_timestamps")]
    for name, g in graphs.items():
        ds = lock.get(name)
        row = ds.display_name("linear_time")
        c = graph_counts(g)
        mine = [_row("linear_time", "table3", "dataset_stats", row, col, metric, c[metric]) for col, metric in cols]
        value, unit = duration(g, ds.options)
        mine.append(_row("linear_time", "table3", "dataset_stats", row, "Duration", "duration", value,
                         f"duration {value:.4g} {unit}; time granularity {ds.options.get('time_granularity')}"))
        rows += _with_note(mine, data_note(g))
    return _frame(rows)


def _previous_strictly_earlier(n_sorted: np.ndarray, t_sorted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per position of the (node, time)-sorted interactions: whether the node has one at an earlier time, and that
    latest earlier time (DyGLib's NeighborSampler: `searchsorted(..., side='left')`, simultaneous ones skipped)."""
    pos = np.arange(len(n_sorted))
    new = np.r_[True, (n_sorted[1:] != n_sorted[:-1]) | (t_sorted[1:] != t_sorted[:-1])]
    before = np.maximum.accumulate(np.where(new, pos, 0)) - 1  # last position of the previous (node, time) group
    has = (before >= 0) & (n_sorted[np.maximum(before, 0)] == n_sorted)
    return has, t_sorted[np.maximum(before, 0)]


def _previous_in_edge_order(n_sorted: np.ndarray, t_sorted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The node's previous interaction in edge order: simultaneous ones give 0."""
    has = np.r_[False, n_sorted[1:] == n_sorted[:-1]]
    return has, np.r_[t_sorted[:1], t_sorted[:-1]]


# what "a node's previous interaction" is (linear_time Table 5; docs/data.md "Table 5 waiting times")
PREVIOUS = {"strictly_earlier": _previous_strictly_earlier, "edge_order": _previous_in_edge_order}


def waiting_times(g: CTDGData, previous: str = "strictly_earlier") -> tuple[np.ndarray, np.ndarray]:
    """Per edge: time since the source's / destination's previous interaction (any role, the whole history), NaN
    where it has none. `previous` names what counts as previous (PREVIOUS)."""
    E = len(g.src)
    nodes = np.concatenate([g.src, g.dst])
    k = np.concatenate([np.arange(E), np.arange(E)])
    role = np.concatenate([np.zeros(E, int), np.ones(E, int)])
    order = np.lexsort((role, k, nodes))  # by node, then edge order (= time order)
    n_sorted, t_sorted = nodes[order], g.ts[k[order]]
    has, prev_t = PREVIOUS[previous](n_sorted, t_sorted)
    wait = np.full(2 * E, np.nan)
    wait[order[has]] = t_sorted[has] - prev_t[has]
    return wait[:E], wait[E:]


def _split_by_dyglib_sizes(g: CTDGData, val_ratio: float, test_ratio: float) -> dict[str, np.ndarray]:
    """The edges in time order cut at the sizes of DyGLib's transductive train set (edges up to the 70% time quantile
    less those touching the held-out new test nodes) and validation set; Test is the rest. What made Table 5's
    printed numbers (docs/data.md "Table 5 waiting times"): "Validation" then holds late training-period edges."""
    split = link_prediction_split(g, val_ratio, test_ratio)
    n_train, n_val = int(split.train.sum()), int(split.val.sum())
    i = np.arange(len(g.ts))
    return {"Train": i < n_train, "Validation": (i >= n_train) & (i < n_train + n_val), "Test": i >= n_train + n_val}


def _split_by_time(g: CTDGData, val_ratio: float, test_ratio: float) -> dict[str, np.ndarray]:
    """Each edge in the split its time falls in (DyGLib's time quantiles): the paper's description of Table 5."""
    val_time, test_time = split_times(g.ts, val_ratio, test_ratio)
    return {"Train": g.ts <= val_time, "Validation": (g.ts > val_time) & (g.ts <= test_time), "Test": g.ts > test_time}


TABLE5_SPLITS = {"dyglib_sizes": _split_by_dyglib_sizes, "time": _split_by_time}


def table5_previous(g: CTDGData) -> str:
    """`strictly_earlier` (what made Table 5), except on a package copy: its clock is cut to the minute but its rows
    keep SNAP's order to the second, so the previous edge is the earlier event (docs/data.md "Table 5 waiting times")."""
    return "edge_order" if (g.manifest or {}).get("kind") == DataKind.PACKAGE_COPY.value else "strictly_earlier"


def linear_time_table5(g: CTDGData, val_ratio: float = 0.15, test_ratio: float = 0.15, dataset_label: str = "UCI",
                       split: str = "dyglib_sizes", previous: str | None = None) -> pd.DataFrame:
    """UCI waiting times in minutes (mean, median) per split and node role. Defaults: the definition that gives the
    printed numbers (split `dyglib_sizes`, previous `table5_previous(g)`); split="time" is the paper's description."""
    previous = previous or table5_previous(g)
    src_wait, dst_wait = waiting_times(g, previous)
    masks = TABLE5_SPLITS[split](g, val_ratio, test_ratio)
    how = f"waiting times: splits {split}, previous {previous}"
    rows = []
    for group, wait in (("Source node", src_wait), ("Destination node", dst_wait)):
        for name, mask in masks.items():
            w = wait[mask]
            w = w[~np.isnan(w)] / 60.0
            mean = float(w.mean()) if len(w) else None
            median = float(np.median(w)) if len(w) else None
            note = f"{dataset_label}; {how}"
            rows.append(_row("linear_time", "table5", group, name, "Average", "waiting_time_minutes_mean", mean, note))
            rows.append(_row("linear_time", "table5", group, name, "Median", "waiting_time_minutes_median", median, note))
    return _frame(_with_note(rows, data_note(g)))


def dyg_mamba_table6(graphs: Mapping[str, CTDGData], lock: Lock | None = None) -> pd.DataFrame:
    """Domain, #nodes, #edges, bipartite, duration, unique steps, time granularity (text values in `note`)."""
    lock = lock or load_lock()
    rows = []
    for name, g in graphs.items():
        ds = lock.get(name)
        row = ds.display_name("dyg_mamba")
        c = graph_counts(g)
        value, unit = duration(g, ds.options)
        extra = data_note(g)
        r = lambda metric, mean=None, note="": rows.append(_row("dyg_mamba", "table6", "dataset_stats", row, "stat", metric, mean,
                                                               "; ".join(x for x in (note, extra) if x)))
        r("domain", note=f"value: {ds.options.get('domain')} (from the lock, not computed)")
        r("num_nodes", c["n_nodes"])
        r("total_edges", c["n_edges_total"])
        r("bipartite", note=f"value: {c['bipartite']}")
        r("duration", value, f"value: {value:.3g} {unit}")
        r("unique_steps", c["n_unique_timestamps"])
        r("time_granularity", note=f"value: {ds.options.get('time_granularity')} (from the lock, not computed)")
    return _frame(rows)


def hawkes_attention_table1(datasets: Mapping[str, TPPData], lock: Lock | None = None) -> pd.DataFrame:
    """K, event tokens per split, min/mean/max sequence length over all splits."""
    lock = lock or load_lock()
    rows = []
    split_names = {"train": ("event tokens Train", "event_tokens_train"), "dev": ("event tokens Valid", "event_tokens_valid"),
                   "test": ("event tokens Test", "event_tokens_test")}
    for name, d in datasets.items():
        row = lock.get(name).display_name("hawkes_attention")
        r = lambda col, metric, mean: rows.append(_row("hawkes_attention", "table1", "dataset_stats", row, col, metric, mean))
        r("K", "n_event_types", d.dim_process)
        for split, (col, metric) in split_names.items():
            r(col, metric, int(d.splits[split].lengths.sum()) if split in d.splits else None)
        lengths = np.concatenate([s.lengths for s in d.splits.values()])
        r("seq length Min", "seq_length_min", int(lengths.min()))
        r("seq length Mean", "seq_length_mean", float(lengths.mean()))
        r("seq length Max", "seq_length_max", int(lengths.max()))
    return _frame(rows)
