"""linear_time Tables 7 and 8: training time per epoch and peak memory of the Table 1 configurations on this
machine, and claim c11. Measured costs: two runs of one config differ in them (`aggregate.MEASURED_COSTS`)."""

from __future__ import annotations

import pandas as pd

from .. import published
from ..aggregate import PEAK_GPU, PEAK_RSS, TIME_PER_EPOCH, aggregator
from ..claims import FAILS, HOLDS, PENDING, covered, data_of, incomplete, missing_cells, real_rows, rule
from ..link_prediction import count_better, cost_rows, pair
from . import PAPER


@aggregator("lp_epoch_time")
def lp_epoch_time(records: list[dict]) -> list[dict]:
    """Table 7: training seconds per epoch of the Table 1 configurations (on this machine's device)."""
    return cost_rows(records, TIME_PER_EPOCH, lambda r: r["metrics"].get("epoch_time_s"), paper=PAPER)


@aggregator("lp_peak_memory")
def lp_peak_memory(records: list[dict]) -> list[dict]:
    """Table 8: peak GPU memory in GB when run on a GPU; on CPU the process's peak RSS, under its own name."""
    gpu = cost_rows(records, PEAK_GPU, lambda r: (r["metrics"].get("peak_gpu_memory_mb") or None) and
                    r["metrics"]["peak_gpu_memory_mb"] / 1024, paper=PAPER)
    cpu = cost_rows(records, PEAK_RSS, lambda r: None if r["metrics"].get("peak_gpu_memory_mb")
                    else r["metrics"].get("peak_rss_mb", 0) / 1024, paper=PAPER)
    return gpu + cpu


def _cheaper(df: pd.DataFrame) -> tuple[str, int, int, int, int]:
    """(memory metric, cells where linear is faster, time cells, cells where it peaks lower, memory cells)."""
    memory = PEAK_GPU if not pair(df, "table8", PEAK_GPU).empty else PEAK_RSS
    return (memory, *count_better(df, "table7", TIME_PER_EPOCH, lower=True),
            *count_better(df, "table8", memory, lower=True))


def _real_note(read: pd.DataFrame) -> str:
    """What the real cells of an incomplete table show (a count over the whole tables: they cannot decide it)."""
    real = real_rows(read)
    if real.empty:
        return ""
    shown = [f"{metric} {m} {d}: linear {both.loc[(m, d), 'Linear']:.3g} vs sinusoidal {both.loc[(m, d), 'Sinusoidal']:.3g}"
             for art, metric in (("table7", TIME_PER_EPOCH), ("table8", PEAK_GPU), ("table8", PEAK_RSS))
             for both in [pair(real, art, metric)] for m, d in both.index]
    return (f"; on real data ({data_of(real)}): {'; '.join(shown) or 'no linear/sinusoidal pair'} (a count over the whole "
            "tables: these cells alone cannot decide it)")


@rule("linear_cheaper_mostly")
def linear_cheaper_mostly(df: pd.DataFrame):
    """c11: linear trains faster per epoch and peaks lower in memory than sinusoidal in most (more than half; the
    paper's 23 of 24) of the cells of the whole tables; memory is peak GPU memory where runs had a GPU, else the CPU process's peak RSS."""
    memory = PEAK_GPU if not pair(df, "table8", PEAK_GPU).empty else PEAK_RSS
    time_read, time_missing = covered(df, PAPER, "table7", TIME_PER_EPOCH, rows=("Linear", "Sinusoidal"))
    pair_rows = lambda t: t[t["row"].isin(["Linear", "Sinusoidal"])]
    mem_read = pair_rows(df[(df["artifact"] == "table8") & (df["metric"] == memory)].dropna(subset=["mean"]))
    mem_missing = missing_cells(mem_read, pair_rows(published.load(PAPER, "table8")))
    read = pd.concat([time_read, mem_read])
    if time_missing or mem_missing:  # every cell of both tables (the memory one by its keys: GPU or CPU memory)
        return PENDING, incomplete(time_missing + mem_missing, "table7 and table8") + _real_note(read), read
    memory, nt, n_time, nm, n_mem = _cheaper(read)
    ok = nt > n_time / 2 and nm > n_mem / 2
    pub = _cheaper(published.load(PAPER))
    return (HOLDS if ok else FAILS), (f"linear faster per epoch in {nt} of {n_time} cells, lower {memory} in {nm} of "
                                      f"{n_mem} (published {pub[1]} of {pub[2]} and {pub[3]} of {pub[4]}, {pub[0]}); "
                                      "measured on this machine"), read
