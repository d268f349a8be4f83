"""Tables 2, 4, 9, 10, 11: test AP / AUC x 100 of link prediction per negative-sampler block, with average ranks
(EdgeBank: the memory with the best validation AP; not in the inductive tables)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from timerepro import metric_keys as mk
from timerepro.names import MODEL_LABELS

from ..aggregate import aggregator
from ..floors import edgebank_choice
from ..rows import cell_row, over_runs
from .common import AVG_RANK, NSS, OURS, average_ranks, dataset_of, variant_of


def _main_groups(records: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """(model label, dataset label) -> runs; DyG-Mamba's named variants are not the full model."""
    groups = defaultdict(list)
    for r in records:
        c = r["config"]
        if c["model"] in MODEL_LABELS and variant_of(c) == "dyg_mamba":
            groups[(MODEL_LABELS[c["model"]], dataset_of(c))].append(r)
    return groups


def lp_rows(records: list[dict], setting: str, kind: str, blocks=("rnd", "hist", "ind")) -> list[dict]:
    """Cells, Avg. Rank rows and (all three blocks) the mean of the three Avg. Rank rows of one table."""
    groups = _main_groups(records)
    rows: list[dict] = []
    ranks_by_block = {}
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
        for model, (avg, n) in sorted(ranks.items()):
            rs = [r for (m, _), g in groups.items() if m == model for r in g]
            rows.append({"row_group": short, "row": AVG_RANK, "column": model, "metric": f"avg_rank_{metric}",
                         "mean": avg, "std": 0.0, "n_runs": len(rs), "_records": rs,
                         "note": f"over the {n} reproduced datasets with at least two ranked models"})
    if len(blocks) == 3:
        common = set.intersection(*(set(r) for r in ranks_by_block.values())) if ranks_by_block else set()
        for model in sorted(common):
            rs = [r for (m, _), g in groups.items() if m == model for r in g]
            rows.append({"row_group": f"{setting}_all_NSS", "row": "mean of 3 Avg. Rank rows", "column": model,
                         "metric": f"mean_avg_rank_{kind.upper()}_{setting}",
                         "mean": float(np.mean([ranks_by_block[b][model][0] for b in blocks])), "std": 0.0,
                         "n_runs": len(rs), "_records": rs})
    return rows


@aggregator("dm_table2")
def dm_table2(records: list[dict]) -> list[dict]:
    """Table 2: inductive AP, random negatives, with average ranks and DyG-Mamba's count of best datasets."""
    rows = lp_rows(records, "inductive", "ap", blocks=("rnd",))
    cells = [r for r in rows if r["row"] != AVG_RANK]
    best: dict[str, tuple[float, str]] = {}
    for r in cells:
        if r["row"] not in best or r["mean"] > best[r["row"]][0]:
            best[r["row"]] = (r["mean"], r["column"])
    if cells:
        rs = [x for r in cells if r["column"] == OURS for x in r["_records"]]
        if rs:
            rows.append({"row_group": "rnd", "row": "count over 12 datasets", "column": OURS, "metric": "n_datasets_best",
                         "mean": float(sum(1 for _, m in best.values() if m == OURS)), "std": 0.0, "n_runs": len(rs),
                         "_records": rs, "note": f"of {len(best)} reproduced datasets"})
    return rows


# Tables 4, 9, 10, 11: (setting, metric) of each table's three negative-sampler blocks
LP_TABLES = {"dm_table4": ("transductive", "ap"), "dm_table9": ("transductive", "auc"),
             "dm_table10": ("inductive", "ap"), "dm_table11": ("inductive", "auc")}


@aggregator("dm_table4")
def dm_table4(records: list[dict]) -> list[dict]:
    """Table 4: transductive AP."""
    return lp_rows(records, *LP_TABLES["dm_table4"])


@aggregator("dm_table9")
def dm_table9(records: list[dict]) -> list[dict]:
    """Table 9: transductive AUC-ROC."""
    return lp_rows(records, *LP_TABLES["dm_table9"])


@aggregator("dm_table10")
def dm_table10(records: list[dict]) -> list[dict]:
    """Table 10: inductive AP."""
    return lp_rows(records, *LP_TABLES["dm_table10"])


@aggregator("dm_table11")
def dm_table11(records: list[dict]) -> list[dict]:
    """Table 11: inductive AUC-ROC."""
    return lp_rows(records, *LP_TABLES["dm_table11"])
