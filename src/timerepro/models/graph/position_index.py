"""Table 6's positional input (linear_time): which index an event gets when the sinusoidal encoder reads positions
instead of time differences. Two named variants, `position_index` of TGAT and the DyGFormer family:

    per_event       one index per event, counted back from the query (1 the latest, 2 the one before, ...): the
                    project's reading of the paper's "event position indices"
    distinct_times  the rank among the DISTINCT earlier times (1 the latest time, ties share an index): the authors'
                    code (dg-linear-time src/models/modules/tgat.py:178-193, modules/dygformer.py pad_sequences
                    :632-650), which made the printed Table 6

docs/fidelity.md ("positional encoding (Table 6)") has the sources; `distinct_time_index` computes the authors'
index without copying their code."""

from __future__ import annotations

import numpy as np

POSITION_INDEXES = ("per_event", "distinct_times")


def check_position_index(position_index: str) -> str:
    if position_index not in POSITION_INDEXES:
        raise ValueError(f"position_index must be one of {POSITION_INDEXES}, got {position_index!r}")
    return position_index


def distinct_time_index(times: np.ndarray, query_times: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """(B, L) event times, (B,) query times, (B, L) which entries take part -> (B, L) int: for each entry the
    number of distinct times t' among the row's counted entries with t_entry <= t' < t_query. So the latest earlier
    time gets 1, the one before 2, equal times one index; an entry at the query's own time gets 0, as the query.
    Entries not counted get 0."""
    times = np.asarray(times, dtype=np.float64)
    query_times = np.asarray(query_times, dtype=np.float64)
    counted = np.asarray(counted, dtype=bool)
    batch, width = times.shape
    # (B, L): counted times strictly before the query; the others sort last as +inf and count nothing
    key = np.where(counted & (times < query_times[:, None]), times, np.inf)
    order = np.argsort(key, axis=1, kind="stable")  # ascending
    ordered = np.take_along_axis(key, order, axis=1)  # (B, L)
    first = np.isfinite(ordered)  # (B, L) first entry of each distinct time, in sorted order
    first[:, 1:] &= ordered[:, 1:] != ordered[:, :-1]
    # distinct counted times >= the time at each sorted position: suffix sums of the first-of-group flags
    at_least = np.cumsum(first[:, ::-1], axis=1)[:, ::-1]  # (B, L)
    # a tie reads the count at its group's first position (the largest first-of-group position at or before it)
    start = np.maximum.accumulate(np.where(first, np.arange(width)[None, :], 0), axis=1)  # (B, L)
    ranked = np.where(np.isfinite(ordered), np.take_along_axis(at_least, start, axis=1), 0)  # (B, L), sorted order
    index = np.empty((batch, width), dtype=np.int64)
    # back to the entries' own order; the +inf keys (uncounted, or at the query's own time: the query's index)
    # were ranked 0 above
    np.put_along_axis(index, order, ranked, axis=1)
    return index
