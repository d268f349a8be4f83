"""Training and evaluation throughput of TGAT and DyGFormer on a synthetic graph the size of UCI.

The graph is `neighbors_bench.synthetic_uci` (1,899 nodes, 59,835 edges over 196 days, Zipf-like
activity), with DyGLib's zero feature tables of width 172 (UCI has no features). Batches of 200
edges are taken from the middle of the stream (edges 30,000 onwards, so histories are as long as
in late training); each training step scores the 200 positives and 200 random negatives, takes the
BCE loss and an Adam step; an evaluation step scores them without gradients. Edges per second
count positive edges, as DyGLib's epoch times do (edges / seconds per epoch).

Models at their UCI configurations: TGAT (2 layers, 2 heads, 20 recent neighbours, cosine d_T 100)
and DyGFormer (max length 32, patch 1, d_ch 50, cosine d_T 100; `dygformer_linear`: linear d_T 1;
the separate and decoder variants optionally). Each model runs in its own process so that its peak
resident memory (ru_maxrss) is its own.

Absolute figures of the project alone; the ratios to DyGLib are `graph_dyglib_bench.py`'s.

Run: nice -n 19 python benchmarks/graph_models_bench.py [--batches 3] [--models tgat dygformer]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np

N_FEAT, BATCH, START = 172, 200, 30000
CONFIGS = {
    "tgat": dict(encoder="cosine", time_dim=100, num_layers=2, num_heads=2, num_neighbors=20, dropout=0.1),
    "dygformer": dict(variant="dygformer", encoder="cosine", time_dim=100),
    "dygformer_linear": dict(variant="dygformer", encoder="linear", time_dim=1),
    "dygformer_separate": dict(variant="dygformer_separate", encoder="cosine", time_dim=100),
    "dygdecoder": dict(variant="dygdecoder", encoder="cosine", time_dim=100),
}


def run_one(name: str, batches: int, threads: int) -> dict:
    """Time `batches` training and evaluation steps of one model in this process."""
    import torch
    import torch.nn.functional as F

    from neighbors_bench import N_EDGES, synthetic_uci
    from timerepro.graphs.neighbors import TemporalNeighbors
    from timerepro.models.graph.dygformer import DyGFormer
    from timerepro.models.graph.tgat import TGAT
    from timerepro.tasks.link_prediction import LinkPredictionModel, adam, count_parameters

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    src, dst, ts, eids = synthetic_uci()
    graph = TemporalNeighbors(src, dst, ts, eids)
    node_feat, edge_feat = np.zeros((graph.num_nodes, N_FEAT)), np.zeros((N_EDGES + 1, N_FEAT))
    cfg = CONFIGS[name]
    if name == "tgat":
        backbone = TGAT(node_feat, edge_feat, **cfg)
    else:
        backbone = DyGFormer(node_feat, edge_feat, time_mean=0.0, time_std=86400.0, **cfg)
    backbone.set_graph(graph, np.random.RandomState(0))
    model = LinkPredictionModel(backbone)
    opt = adam(model, 1e-4)  # what the task uses
    rng = np.random.default_rng(0)

    def batch(i):
        sl = slice(START + i * BATCH, START + (i + 1) * BATCH)
        return src[sl], dst[sl], ts[sl], rng.integers(1, graph.num_nodes, BATCH)

    model.train()
    t0 = time.perf_counter()
    for i in range(batches):
        s, d, t, neg = batch(i)
        logits = torch.cat(model.score(s, d, s, neg, t))  # (2B,), as the task scores a batch
        loss = F.binary_cross_entropy_with_logits(logits, torch.cat([torch.ones(BATCH), torch.zeros(BATCH)]))
        opt.zero_grad()
        loss.backward()
        opt.step()
    train_s = time.perf_counter() - t0
    model.eval()
    t0 = time.perf_counter()
    with torch.no_grad():
        for i in range(batches):
            s, d, t, neg = batch(batches + i)
            [torch.sigmoid(x) for x in model.score(s, d, s, neg, t)]
    eval_s = time.perf_counter() - t0
    edges = batches * BATCH
    return {"model": name, "batches": batches, "train_edges_per_s": edges / train_s, "eval_edges_per_s": edges / eval_s,
            "train_s_per_batch": train_s / batches, "eval_s_per_batch": eval_s / batches,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
            "n_parameters": count_parameters(model)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=3, help="training and evaluation batches per model")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per model")
    parser.add_argument("--models", nargs="+", default=["tgat", "dygformer", "dygformer_linear"], choices=sorted(CONFIGS))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one model, print JSON
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.batches, args.threads)))
        return
    print(f"machine: {platform.machine()} {platform.processor() or ''} | {os.cpu_count()} CPUs | "
          f"python {platform.python_version()} | torch threads per model: {args.threads} | "
          f"load average {os.getloadavg()[0]:.2f} (numbers under contention when > CPUs)")
    print(f"graph: synthetic UCI size, batches of {BATCH} from edge {START}, {args.batches} train + {args.batches} eval batches")
    print(f"{'model':<20}{'train edges/s':>14}{'eval edges/s':>14}{'train s/batch':>15}{'eval s/batch':>14}"
          f"{'peak RSS MB':>13}{'params':>10}")
    for name in args.models:
        out = subprocess.run([sys.executable, __file__, "--one", name, "--batches", str(args.batches),
                              "--threads", str(args.threads)], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{name:<20}{r['train_edges_per_s']:>14.1f}{r['eval_edges_per_s']:>14.1f}{r['train_s_per_batch']:>15.2f}"
              f"{r['eval_s_per_batch']:>14.2f}{r['peak_rss_mb']:>13.0f}{r['n_parameters']:>10}")


if __name__ == "__main__":
    main()
