"""Tables 2, 4, 9, 10, 11: test AP / AUC x 100 of link prediction per negative-sampler block, with average ranks
(EdgeBank: the memory with the best validation AP; not in the inductive tables)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from timerepro import metric_keys as mk
from timerepro.names import MODEL_LABELS

from .. import published
from ..aggregate import aggregator
from ..floors import edgebank_choice
from ..rows import cell_row, over_runs
from ..tables import NOT_COMPARABLE
from . import PAPER
from .common import AVG_RANK, NSS, OURS, average_ranks, dataset_of, variant_of

COUNT_ROW = "count over 12 datasets"
EXCLUDED = ("FreeDyG",)  # left out of every printed Avg. Rank (common.average_ranks)


def paper_sets(artifact: str, block: str) -> tuple[set, set]:
    """The datasets and models the paper's Avg. Rank rows of one block rank over (its printed cells)."""
    pub = published.load(PAPER, artifact)
    pub = pub[(pub["row_group"] == block) & ~pub["row"].isin([AVG_RANK, COUNT_ROW]) & pub["mean"].notna()]
    return set(pub["row"]), set(pub["column"]) - set(EXCLUDED)


def ranked_sets(means: dict[tuple[str, str], float]) -> tuple[set, set]:
    """The datasets and models `average_ranks(means)` ranks over (a dataset counts with at least two models)."""
    by_dataset = defaultdict(set)
    for (ds, model), v in means.items():
        if model not in EXCLUDED and v is not None and not np.isnan(v):
            by_dataset[ds].add(model)
    kept = {ds: ms for ds, ms in by_dataset.items() if len(ms) >= 2}
    return set(kept), set().union(*kept.values()) if kept else set()


def rank_note(what: str, ranked: tuple[set, set], paper: tuple[set, set]) -> str:
    """The note of a row computed over the reproduced cells: NOT_COMPARABLE (no delta beside it, report/tables.py)
    unless it ranks exactly the paper's datasets and models."""
    (ds, models), (pds, pmodels) = ranked, paper
    if ds == pds and models == pmodels:
        return f"{what} over the paper's {len(ds)} datasets and {len(models)} models"
    return (f"{NOT_COMPARABLE}: {what} over {len(ds)} reproduced datasets and {len(models)} models, the paper's over "
            f"{len(pds)} datasets and {len(pmodels)} models")


def _main_groups(records: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """(model label, dataset label) -> runs; DyG-Mamba's named variants are not the full model."""
    groups = defaultdict(list)
    for r in records:
        c = r["config"]
        if c["model"] in MODEL_LABELS and variant_of(c) == "dyg_mamba":
            groups[(MODEL_LABELS[c["model"]], dataset_of(c))].append(r)
    return groups


def lp_rows(records: list[dict], setting: str, kind: str, artifact: str, blocks=("rnd", "hist", "ind")) -> list[dict]:
    """Cells, Avg. Rank rows and (all three blocks) the mean of the three Avg. Rank rows of one table; a rank row
    over other datasets or models than the paper's says so (NOT_COMPARABLE)."""
    groups = _main_groups(records)
    rows: list[dict] = []
    ranks_by_block, notes = {}, {}
    for short in blocks:
        strategy = NSS[short]
        metric = f"{kind.upper()}_{setting}_{strategy}"
        means: dict[tuple[str, str], float] = {}
        for (model, ds), rs in sorted(groups.items()):
            if model == "EdgeBank":
                if setting == "inductive":
                    continue  # N/A in the paper: EdgeBank has no notion of unseen nodes
                rs = edgebank_choice(rs, mk.link_prediction("val", "transductive", strategy, "ap"))
            cell = over_runs(rs, mk.link_prediction("test", setting, strategy, kind))
            if cell is None:
                continue
            note = f"memory: {rs[0]['config'].get('edgebank_memory')} (best validation AP)" if model == "EdgeBank" else ""
            rows.append(cell_row(short, ds, model, metric, cell, note))
            means[(ds, model)] = cell[0]
        ranks = average_ranks(means)
        ranks_by_block[short] = ranks
        notes[short] = rank_note("average rank", ranked_sets(means), paper_sets(artifact, short))
        for model, (avg, n) in sorted(ranks.items()):
            rs = [r for (m, _), g in groups.items() if m == model for r in g]
            rows.append({"row_group": short, "row": AVG_RANK, "column": model, "metric": f"avg_rank_{metric}",
                         "mean": avg, "std": 0.0, "n_runs": len(rs), "_records": rs, "note": notes[short]})
    if len(blocks) == 3:
        common = set.intersection(*(set(r) for r in ranks_by_block.values())) if ranks_by_block else set()
        for model in sorted(common):
            rs = [r for (m, _), g in groups.items() if m == model for r in g]
            rows.append({"row_group": f"{setting}_all_NSS", "row": "mean of 3 Avg. Rank rows", "column": model,
                         "metric": f"mean_avg_rank_{kind.upper()}_{setting}",
                         "mean": float(np.mean([ranks_by_block[b][model][0] for b in blocks])), "std": 0.0,
                         "n_runs": len(rs), "_records": rs, "note": _mean_note(notes)})
    return rows


def _mean_note(notes: dict[str, str]) -> str:
    """The mean of three Avg. Rank rows is comparable only when each of them is."""
    off = [f"{b}: {n.split(': ', 1)[1]}" for b, n in notes.items() if n.startswith(NOT_COMPARABLE)]
    return f"{NOT_COMPARABLE}: " + "; ".join(off) if off else "mean of the paper's three Avg. Rank rows"


@aggregator("dm_table2")
def dm_table2(records: list[dict]) -> list[dict]:
    """Table 2: inductive AP, random negatives, with average ranks and DyG-Mamba's count of best datasets."""
    rows = lp_rows(records, "inductive", "ap", "table2", blocks=("rnd",))
    cells = [r for r in rows if r["row"] != AVG_RANK]
    best: dict[str, tuple[float, str]] = {}
    for r in cells:
        if r["row"] not in best or r["mean"] > best[r["row"]][0]:
            best[r["row"]] = (r["mean"], r["column"])
    if cells:
        rs = [x for r in cells if r["column"] == OURS for x in r["_records"]]
        if rs:
            means = {(r["row"], r["column"]): r["mean"] for r in cells}
            rows.append({"row_group": "rnd", "row": COUNT_ROW, "column": OURS, "metric": "n_datasets_best",
                         "mean": float(sum(1 for _, m in best.values() if m == OURS)), "std": 0.0, "n_runs": len(rs),
                         "_records": rs, "note": rank_note("count of datasets where DyG-Mamba is best",
                                                           ranked_sets(means), paper_sets("table2", "rnd"))})
    return rows


@aggregator("dm_table4")
def dm_table4(records: list[dict]) -> list[dict]:
    """Table 4: transductive AP."""
    return lp_rows(records, "transductive", "ap", "table4")


@aggregator("dm_table9")
def dm_table9(records: list[dict]) -> list[dict]:
    """Table 9: transductive AUC-ROC."""
    return lp_rows(records, "transductive", "auc", "table9")


@aggregator("dm_table10")
def dm_table10(records: list[dict]) -> list[dict]:
    """Table 10: inductive AP."""
    return lp_rows(records, "inductive", "ap", "table10")


@aggregator("dm_table11")
def dm_table11(records: list[dict]) -> list[dict]:
    """Table 11: inductive AUC-ROC."""
    return lp_rows(records, "inductive", "auc", "table11")
