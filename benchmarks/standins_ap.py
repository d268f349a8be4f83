"""Can the models learn the graph stand-ins? Test AP of linear_time's link-prediction runs of a scale, per model and
dataset, beside EdgeBank's AP on the same stand-in, the split and the random negatives of DyGLib's evaluation.

Reads the complete run records of `--results` (run them first: `timerepro run-all --paper linear_time --scale
offline`). For each (model, dataset): runs, median / min / max of the transductive test AP under random negatives
(the cells of Table 1) and the median under historical ones, and EdgeBank's AP. EdgeBank here is the tiny
unlimited-memory version computed in this script (a candidate edge scores 1 when its pair was seen before the
batch, else 0; batch-averaged AP like DyGLib), not a registered model. Node-classification runs: test ROC-AUC.
A cell whose median is below EdgeBank is marked `<EB`.

Run: python benchmarks/standins_ap.py [--results results] [--scale offline]
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np


def edgebank_ap(dataset: str, standin: str | None, strategy: str = "random") -> float:
    """AP of unlimited-memory EdgeBank on the transductive test edges of `dataset`'s stand-in."""
    from timerepro.data.ctdg import link_prediction_split, load_processed
    from timerepro.data.prepare import prepare
    from timerepro.graphs.evaluate import batched_metrics
    from timerepro.graphs.negatives import dyglib_eval_samplers

    data = load_processed(prepare(dataset, standin=standin, require_pinned=standin is None, progress=False))
    split = link_prediction_split(data)
    sampler = dyglib_eval_samplers(data, split, strategy)["test"]
    sampler.reset()
    idx = np.flatnonzero(split.test)
    pos, neg = [], []
    for start in range(0, len(idx), 200):
        b = idx[start:start + 200]
        before = data.ts < data.ts[b[0]]  # memory: every edge before the batch
        seen = set(zip(data.src[before].tolist(), data.dst[before].tolist()))
        neg_src, neg_dst = sampler.sample_for_batch(data.src[b], data.dst[b], data.ts[b])
        pos += [float(p in seen) for p in zip(data.src[b].tolist(), data.dst[b].tolist())]
        neg += [float(p in seen) for p in zip(neg_src.tolist(), neg_dst.tolist())]
    return batched_metrics(np.array(pos), np.array(neg), batch_size=200)["average_precision"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, help="results folder (default: the project's)")
    ap.add_argument("--scale", default="offline")
    args = ap.parse_args()
    from timerepro.records import load_record, run_dir
    from timerepro.registry import load

    cells: dict[tuple, list[dict]] = defaultdict(list)
    for run in load().runs(args.scale, paper="linear_time"):
        if run.config["task"] not in ("link_prediction", "node_classification"):
            continue
        rec = load_record(run_dir(run.config, args.results))
        if rec is not None:
            cells[(run.config["task"], run.config["model"], run.config["dataset"], run.config.get("standin"))].append(rec)
    floors = {}
    print(f"{'model':20s} {'dataset':10s} {'runs':>4s} {'AP med':>6s} {'min':>6s} {'max':>6s} {'hist':>6s} {'EdgeBank':>8s}")
    for (task, model, dataset, standin), recs in sorted(cells.items()):
        if task == "node_classification":
            auc = [r["metrics"]["test_auc"] for r in recs]
            print(f"{'NC ' + model:20s} {dataset:10s} {len(recs):4d} {statistics.median(auc):6.3f} {min(auc):6.3f} "
                  f"{max(auc):6.3f}   (test ROC-AUC)")
            continue
        if (dataset, standin) not in floors:
            floors[(dataset, standin)] = edgebank_ap(dataset, standin)
        eb = floors[(dataset, standin)]
        aps = [r["metrics"]["test_transductive_random_ap"] for r in recs]
        hist = [r["metrics"].get("test_transductive_historical_ap", float("nan")) for r in recs]
        med = statistics.median(aps)
        print(f"{model:20s} {dataset:10s} {len(recs):4d} {med:6.3f} {min(aps):6.3f} {max(aps):6.3f} "
              f"{statistics.median(hist):6.3f} {eb:8.3f}{'  <EB' if med < eb else ''}")


if __name__ == "__main__":
    main()
