"""Link prediction under DyGLib's protocol: the report pieces papers share (linear_time now; dyg_mamba and swinit
run the same protocol). Nothing here is registered: a paper's module registers its aggregators and rules, which
call these functions.

The AP a table reads is the one the run's early stopping monitored (`ap_key`): the whole-split AP (`ap_whole`)
where params/ set `monitor_metric: ap_whole` (linear_time, as its authors' code: docs/fidelity.md item 1), else
DyGLib's mean over batches (`ap`). Model selection follows linear_time section 4.1 (DyGLib): among the searched hyperparameters (dropout, and d_ch
for the DyGFormer variants) the configuration with the best mean validation AP under the table's negative sampler
is kept; its test AP (x 100, mean and std over seeds) fills the cell. Win counts use the paper's rule: per
(model, dataset) the encoders whose printed mean (2 decimals) equals the best printed mean all win.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

import numpy as np
import pandas as pd

from timerepro import metric_keys as mk
from timerepro.names import ENCODER_LABELS, MODEL_LABELS, dataset_label  # noqa: F401 (MODEL_LABELS re-exported)

from . import published
from .tables import NOT_COMPARABLE

SEARCHED = ("dropout", "d_ch")  # the hyperparameters the paper searches (section 4.1)
WINS_COLUMN, WINS_METRIC = "# Wins", "n_dataset_wins"


def searched_values(config: dict) -> tuple:
    """The searched hyperparameters of a run (`SEARCHED`) as ((name, value), ...): what selection compares."""
    return tuple((k, config.get(k)) for k in SEARCHED)


def searched_label(config: dict) -> str:
    """The searched values a run was selected with, for a cell's note (e.g. dropout=0.1, d_ch=50)."""
    return ", ".join(f"{k}={v}" for k, v in searched_values(config) if v is not None)


def ap_key(config: dict) -> str:
    """The AP metric of a run's tables: the one it monitored (`ap_whole`), else DyGLib's batch mean (`ap`)."""
    return "ap_whole" if config.get("monitor_metric") == "ap_whole" else "ap"


def ap(record: dict, split: str, sampler: str) -> float:
    """A run's transductive AP on `split` (val or test) under the `sampler` negatives, as its tables read it."""
    return record["metrics"][mk.link_prediction(split, "transductive", sampler, ap_key(record["config"]))]


def _monitored(record: dict) -> str:
    return record["config"].get("monitor_negatives", "random")


def has_own_runs(records: list[dict], sampler: str) -> bool:
    """Whether some runs stopped early on `sampler`'s validation AP (linear_time Table 2's historical-select runs)."""
    return any(_monitored(r) == sampler for r in records)


def monitored_on(records: list[dict], sampler: str) -> list[dict]:
    """The runs a `sampler` table reads: those monitored on `sampler`'s validation AP; without any (Table 2 below
    paper scale, a labelled cut), the random-monitored runs, which the caller re-selects on `sampler`'s AP."""
    own = sampler if has_own_runs(records, sampler) else "random"
    return [r for r in records if _monitored(r) == own]


def select_by_validation(records: list[dict], sampler: str) -> dict[tuple, list[dict]]:
    """(model, encoder, dataset) -> the seeds of the searched configuration with the best mean validation AP
    under the `sampler` negatives, among the runs `monitored_on` that sampler."""
    cells: dict[tuple, dict[tuple, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in monitored_on(records, sampler):
        c = r["config"]
        cells[(c["model"], c["encoder"], c["dataset"])][searched_values(c)].append(r)
    chosen = {}
    for cell, by_hp in cells.items():
        best = max(sorted(by_hp), key=lambda hp: np.mean([ap(r, "val", sampler) for r in by_hp[hp]]))
        chosen[cell] = by_hp[best]
    return chosen


def winners(means: dict[str, float]) -> set[str]:
    """Encoders whose printed (2-decimal) mean equals the best printed mean: ties win together."""
    printed = {k: round(v, 2) for k, v in means.items()}
    top = max(printed.values())
    return {k for k, v in printed.items() if v == top}


def _paper(paper: str | None, records: list[dict]) -> str:
    """The paper whose dataset names a table prints: given, or the records' own."""
    return paper or records[0]["config"]["paper"]


def ap_table(records: list[dict], sampler: str, metric: str, *, paper: str | None = None,
             labels: dict[str, str] | None = None) -> list[dict]:
    """Cells of test AP x 100 under `sampler`, selected on validation AP under the same sampler, plus wins;
    rows: row_group = model, row = encoder (`labels`, default names.ENCODER_LABELS), column = dataset as the paper
    (`paper`, default the records' own) prints it."""
    labels = labels or ENCODER_LABELS
    chosen = select_by_validation(records, sampler)
    cut = "" if has_own_runs(records, sampler) else f"; cut: runs monitored on random NS, re-selected on {sampler}-NS validation AP"
    rows, by_model_dataset = [], defaultdict(dict)
    for (model, encoder, dataset), rs in sorted(chosen.items()):
        values = 100 * np.array([ap(r, "test", sampler) for r in rs])
        rows.append({"row_group": MODEL_LABELS[model], "row": labels[encoder],
                     "column": dataset_label(dataset, _paper(paper, rs)), "metric": metric,
                     "mean": float(values.mean()), "std": float(values.std()), "n_runs": len(rs), "_records": rs,
                     "note": "selected: " + searched_label(rs[0]["config"]) + cut})
        by_model_dataset[(model, dataset)][encoder] = float(values.mean())
    wins: dict[tuple, int] = defaultdict(int)
    seen: dict[tuple, list[dict]] = defaultdict(list)
    for (model, dataset), means in by_model_dataset.items():
        for enc in means:
            wins[(model, enc)] += enc in winners(means)
            seen[(model, enc)] += chosen[(model, enc, dataset)]
    compared = defaultdict(set)  # model label -> the (encoder, dataset) cells its wins compare
    for (model, encoder, dataset), rs in chosen.items():
        compared[MODEL_LABELS[model]].add((labels[encoder], dataset_label(dataset, _paper(paper, rs))))
    for (model, enc), n in sorted(wins.items()):
        rows.append({"row_group": MODEL_LABELS[model], "row": labels[enc], "column": WINS_COLUMN, "metric": WINS_METRIC,
                     "mean": float(n), "std": 0.0, "n_runs": len(seen[(model, enc)]), "_records": seen[(model, enc)],
                     "note": wins_note(compared[MODEL_LABELS[model]],
                                       printed_cells(_paper(paper, seen[(model, enc)]), MODEL_LABELS[model], metric, labels))})
    return rows


def printed_cells(paper: str, model: str, metric: str, labels: dict[str, str]) -> set[tuple[str, str]]:
    """The (encoder, dataset) cells the paper's printed wins of a model group count: those of its tables that print
    wins, read `metric` and label their rows with `labels` (Table 1's encoders, not Table 4's cosine pair)."""
    pub = published.load(paper)
    cells: set[tuple[str, str]] = set()
    for _, rows in pub[pub["row_group"] == model].groupby("artifact"):
        own = rows[(rows["metric"] == metric) & rows["mean"].notna()]
        if not own.empty and (rows["metric"] == WINS_METRIC).any() and set(own["row"]) <= set(labels.values()):
            cells |= set(zip(own["row"], own["column"]))
    return cells


def wins_note(compared: set[tuple[str, str]], printed: set[tuple[str, str]]) -> str:
    """Wins compare the cells of a model group: NOT_COMPARABLE to the paper's (no delta beside them, tables.py)
    unless they are the cells the paper's wins count."""
    rule = "wins per encoder within model group; ties counted for every tied encoder"
    if compared == printed or not printed:  # (no printed wins: nothing to compare with)
        return rule
    datasets = sorted({d for _, d in compared})
    return (f"{NOT_COMPARABLE}: {rule}; over {len(compared)} reproduced cells ({', '.join(datasets)}), the paper's "
            f"over {len(printed)}")


def cost_rows(records: list[dict], metric: str, value: Callable[[dict], float | None], *,
              paper: str | None = None) -> list[dict]:
    """A measured cost (`value(record)`, None when not measured) of each selected (random NS) configuration,
    mean and std over its seeds."""
    rows = []
    for (model, encoder, dataset), rs in sorted(select_by_validation(records, "random").items()):
        vals = [v for r in rs if (v := value(r)) is not None]
        if vals:
            rows.append({"row_group": MODEL_LABELS[model], "row": ENCODER_LABELS[encoder],
                         "column": dataset_label(dataset, _paper(paper, rs)), "metric": metric, "mean": float(np.mean(vals)),
                         "std": float(np.std(vals)), "n_runs": len(vals), "_records": rs})
    return rows


# ------------------------------------------------------------------ readers of aggregated (or published) rows

def cells(df: pd.DataFrame, artifact: str, metric: str) -> pd.DataFrame:
    """model x dataset rows, encoder columns, of the means of one table (reproduced or published rows)."""
    t = df[(df["artifact"] == artifact) & (df["metric"] == metric)]
    return t.pivot_table(index=["row_group", "column"], columns="row", values="mean")


def cell_winners(table: pd.DataFrame) -> dict[tuple, set[str]]:
    """(model, dataset) -> the encoders that win that cell under the paper's tie rule."""
    return {idx: winners(means.dropna().to_dict()) for idx, means in table.iterrows()}


def win_counts(table: pd.DataFrame) -> dict[str, int]:
    """encoder -> number of (model, dataset) cells it wins."""
    counts = {enc: 0 for enc in table.columns}
    for won in cell_winners(table).values():
        for enc in won:
            counts[enc] += 1
    return counts


def pair(df: pd.DataFrame, artifact: str, metric: str, a: str = "Linear", b: str = "Sinusoidal") -> pd.DataFrame:
    """model x dataset rows where both `a` and `b` have a mean (empty when either was not run)."""
    table = cells(df, artifact, metric)
    return table[[a, b]].dropna() if {a, b} <= set(table.columns) else pd.DataFrame(columns=[a, b])


def better(both: pd.DataFrame, a: str, b: str, lower: bool = False) -> int:
    """Number of cells where `a` beats `b` (a higher mean, or a lower one when `lower`)."""
    return int((both[a] < both[b]).sum() if lower else (both[a] > both[b]).sum())


def count_better(df: pd.DataFrame, artifact: str, metric: str, a: str = "Linear", b: str = "Sinusoidal",
                 lower: bool = False) -> tuple[int, int]:
    """(cells of one table where `a` beats `b`, cells where both have a mean)."""
    both = pair(df, artifact, metric, a, b)
    return better(both, a, b, lower), len(both)
