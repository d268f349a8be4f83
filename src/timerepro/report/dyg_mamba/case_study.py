"""Figure 6: (A) average AUC of DyG-Mamba and DyGFormer, (B-D) the case study's similarities."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from timerepro import metric_keys as mk
from timerepro.names import MODEL_LABELS

from ..aggregate import aggregator
from .common import NSS, OURS, RIVAL, dataset_of, variant_of


def _avg_auc(records: list[dict], keys) -> dict[str, tuple[float, list[dict]]]:
    """model label -> mean over the (dataset, metric) cells both DyG-Mamba and DyGFormer have, of the cell means."""
    cells = defaultdict(dict)
    runs = defaultdict(list)
    for r in records:
        c = r["config"]
        model = MODEL_LABELS.get(c["model"])
        if model not in (OURS, RIVAL) or variant_of(c) not in ("dyg_mamba", "node_classification"):
            continue
        runs[model].append(r)
        for key in keys:
            if key in r["metrics"]:
                cells[model].setdefault((c["dataset"], key), []).append(r["metrics"][key])
    both = sorted(set(cells[OURS]) & set(cells[RIVAL]))  # sorted: a set's order (string hashes) varied the sum's last bits
    return {m: (100 * float(np.mean([np.mean(cells[m][k]) for k in both])), runs[m]) for m in (OURS, RIVAL) if both}


@aggregator("dm_fig6")
def dm_fig6(records: list[dict]) -> list[dict]:
    """Figure 6: (A) average AUC of DyG-Mamba and DyGFormer over the link-prediction cells of Tables 9 + 11 and
    the node-classification cells of Table 3, and the relative improvement (%); (B-D) the case study of the UCI
    runs with the lowest seed (cosine similarity to the target, and last vs second-last hidden states)."""
    lp_keys = [mk.link_prediction("test", s, n, "auc") for s in ("transductive", "inductive") for n in NSS.values()]
    rows = []
    for row, recs, keys in (("dynamic_link_prediction", [r for r in records if r["config"]["task"] == "link_prediction"], lp_keys),
                            ("dynamic_node_classification", [r for r in records if r["config"]["task"] == "node_classification"], [mk.node_classification("test", "auc")])):
        avg = _avg_auc(recs, keys)
        if len(avg) < 2:
            continue
        for model, (value, rs) in avg.items():
            rows.append({"row_group": "A", "row": row, "column": model, "metric": "avg_AUC", "mean": value, "std": 0.0,
                         "n_runs": len(rs), "_records": rs})
        rs = avg[OURS][1] + avg[RIVAL][1]
        rows.append({"row_group": "A", "row": row, "column": OURS, "metric": "avg_AUC_improvement_vs_DyGFormer_pct",
                     "mean": 100 * (avg[OURS][0] / avg[RIVAL][0] - 1), "std": 0.0, "n_runs": len(rs), "_records": rs,
                     "note": "relative, over the cells both models have (A15)"})
    rows += _case_study_rows(records)
    return rows


def _case_study_rows(records: list[dict]) -> list[dict]:
    rows = []
    for model in ("dyg_mamba", "dygformer"):
        rs = sorted((r for r in records if r["config"]["model"] == model and (r["dir"] / "case_study.npz").is_file()),
                    key=lambda r: (r["config"]["dataset"] != "uci", r["config"]["dataset"], r["config"]["seed"]))
        if not rs:
            continue
        r = rs[0]
        with np.load(r["dir"] / "case_study.npz") as z:
            cos, sim = z["cos_target_0"], z["sim_layers_0"]
            # (n,) 1 where u's position holds the target v (any of its P ids: a DyGFormer patch); C24 reads it
            is_target = None
            if "u_neighbours_0" in z.files:  # (n, P) ids per position; absent in records made before it
                is_target = (z["u_neighbours_0"] == z["dst"][0]).reshape(len(cos), -1).any(axis=1).astype(float)
            edge = f"{int(z['src'][0])}->{int(z['dst'][0])} at t={float(z['ts'][0]):g}, {dataset_of(r['config'])} seed {r['config']['seed']}"
        label = MODEL_LABELS[model]
        span = float(cos.max() - cos.min())
        norm = (cos - cos.min()) / span if span > 0 else np.zeros_like(cos)
        for i, (c, n) in enumerate(zip(cos, norm)):
            rows.append({"row_group": "B", "row": label, "column": str(i + 1), "metric": "cosine_similarity_to_target",
                         "mean": float(c), "std": 0.0, "n_runs": 1, "_records": [r], "note": f"edge {edge}"})
            rows.append({"row_group": "B", "row": label, "column": str(i + 1), "metric": "cosine_similarity_to_target_normalised",
                         "mean": float(n), "std": 0.0, "n_runs": 1, "_records": [r], "note": "min-max over the positions"})
            if is_target is not None:
                rows.append({"row_group": "B", "row": label, "column": str(i + 1), "metric": "neighbour_is_target",
                             "mean": float(is_target[i]), "std": 0.0, "n_runs": 1, "_records": [r],
                             "note": "1: u's neighbour at this position is the target node"})
        for i in range(sim.shape[0]):
            for j in range(sim.shape[1]):
                rows.append({"row_group": f"C-D {label}", "row": str(i + 1), "column": str(j + 1),
                             "metric": "similarity_last_vs_second_last", "mean": float(sim[i, j]), "std": 0.0,
                             "n_runs": 1, "_records": [r], "note": f"edge {edge}"})
    return rows
