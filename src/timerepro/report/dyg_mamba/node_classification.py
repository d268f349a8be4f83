"""Table 3: dynamic node classification, test ROC-AUC x 100 with average ranks."""

from __future__ import annotations

from collections import defaultdict

from timerepro import metric_keys as mk
from timerepro.names import MODEL_LABELS

from ..aggregate import aggregator
from ..rows import cell_row, over_runs
from .common import AVG_RANK, average_ranks, dataset_of
from .lp_tables import paper_sets, rank_note, ranked_sets


@aggregator("dm_table3")
def dm_table3(records: list[dict]) -> list[dict]:
    """Table 3: test ROC-AUC x 100 of dynamic node classification, with average ranks (EdgeBank N/A)."""
    groups = defaultdict(list)
    for r in records:
        groups[(MODEL_LABELS[r["config"]["model"]], dataset_of(r["config"]))].append(r)
    rows, means = [], {}
    for (model, ds), rs in sorted(groups.items()):
        cell = over_runs(rs, mk.node_classification("test", "auc"))
        if cell:
            rows.append(cell_row("node_classification", ds, model, "AUC_node_classification", cell))
            means[(ds, model)] = cell[0]
    note = rank_note("average rank", ranked_sets(means), paper_sets("table3", "node_classification"))
    for model, (avg, n) in sorted(average_ranks(means).items()):
        rs = [r for (m, _), g in groups.items() if m == model for r in g]
        rows.append({"row_group": "node_classification", "row": AVG_RANK, "column": model,
                     "metric": "avg_rank_AUC_node_classification", "mean": avg, "std": 0.0, "n_runs": len(rs),
                     "_records": rs, "note": note})
    return rows
