"""Throughput of temporal neighbour retrieval on a synthetic graph the size of UCI.

UCI (DyGLib version): 1,899 nodes, 59,835 edges over 196 days. The synthetic graph has that many
nodes and edges, unix-like second timestamps over 196 days and heavy-tailed node activity (a Zipf-like
popularity, as in message networks). Queries replay the edge stream the way DyGLib's training loop
does: batches of 200 edges, one call for the sources and one for the destinations, each at the
batch's edge times, k = 20 neighbours.

Printed: queries per second for `most_recent`, `uniform`, `history` (max 32, DyG-Mamba's UCI
length), and for a per-query Python loop over per-node arrays (DyGLib's algorithm, written here)
as a baseline; plus machine information and thread counts.

Run: nice -n 19 python benchmarks/neighbors_bench.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from timerepro.graphs.neighbors import TemporalNeighbors

N_NODES, N_EDGES, DAYS = 1899, 59835, 196
K, BATCH = 20, 200


def synthetic_uci(seed: int = 0):
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, N_NODES + 1) ** 0.8
    popularity /= popularity.sum()
    src = rng.choice(np.arange(1, N_NODES + 1), N_EDGES, p=popularity)
    dst = rng.choice(np.arange(1, N_NODES + 1), N_EDGES, p=popularity)
    ts = np.sort(rng.uniform(0, DAYS * 86400, N_EDGES)).round()
    return src, dst, ts, np.arange(1, N_EDGES + 1)


class LoopBaseline:
    """DyGLib's approach: per-node sorted arrays, one searchsorted and a slice per query."""

    def __init__(self, src, dst, ts, eids):
        lists = [[] for _ in range(N_NODES + 1)]
        for s, d, e, t in zip(src.tolist(), dst.tolist(), eids.tolist(), ts.tolist()):
            lists[s].append((d, e, t))
            lists[d].append((s, e, t))
        self.ids = [np.array([x[0] for x in lst], dtype=np.int64) for lst in lists]
        self.eids = [np.array([x[1] for x in lst], dtype=np.int64) for lst in lists]
        self.times = [np.array([x[2] for x in lst], dtype=np.float64) for lst in lists]

    def most_recent(self, nodes, times, k):
        ids = np.zeros((len(nodes), k), dtype=np.int64)
        eids = np.zeros((len(nodes), k), dtype=np.int64)
        tms = np.zeros((len(nodes), k), dtype=np.float64)
        for row, (n, t) in enumerate(zip(nodes, times)):
            i = np.searchsorted(self.times[n], t)
            lo = max(0, i - k)
            m = i - lo
            if m:
                ids[row, k - m:] = self.ids[n][lo:i]
                eids[row, k - m:] = self.eids[n][lo:i]
                tms[row, k - m:] = self.times[n][lo:i]
        return ids, eids, tms


def machine_info() -> list[str]:
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as fh:
            names = [line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    try:
        import torch

        torch_threads = f"{torch.get_num_threads()} (torch {torch.__version__})"
    except ImportError:
        torch_threads = "torch not installed"
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    env = {k: os.environ.get(k, "unset") for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    return [
        f"machine: {platform.machine()} | {cpu}",
        f"os: {platform.platform()} | python {platform.python_version()} | numpy {np.__version__}",
        f"cpus: {os.cpu_count()} logical, {affinity} usable by this process | nice {os.nice(0)}",
        f"threads: retrieval is single-threaded numpy; torch threads {torch_threads}; "
        + ", ".join(f"{k}={v}" for k, v in env.items()),
        f"load average (1, 5, 15 min): {', '.join(f'{x:.2f}' if isinstance(x, float) else x for x in load)}",
    ]


def stream_batches(src, dst, ts):
    for i in range(0, len(ts), BATCH):
        sl = slice(i, i + BATCH)
        yield src[sl], ts[sl]
        yield dst[sl], ts[sl]


def throughput(fn, batches, repeats: int) -> tuple[float, float]:
    """(best queries per second over `repeats` passes, seconds per call of 200 queries)."""
    n_queries = sum(len(nodes) for nodes, _ in batches)
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for nodes, times in batches:
            fn(nodes, times)
        best = min(best, time.perf_counter() - start)
    return n_queries / best, best / len(batches)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    src, dst, ts, eids = synthetic_uci(args.seed)
    t0 = time.perf_counter()
    index = TemporalNeighbors(src, dst, ts, eids)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    baseline = LoopBaseline(src, dst, ts, eids)
    baseline_build_s = time.perf_counter() - t0
    batches = list(stream_batches(src, dst, ts))

    # sanity: the vectorised index and the loop agree on every query of the stream
    for nodes, times in batches[:: max(1, len(batches) // 50)]:
        got = index.most_recent(nodes, times, K)
        ref = baseline.most_recent(nodes, times, K)
        assert all(np.array_equal(a, b) for a, b in zip(got, ref)), "vectorised and loop retrieval disagree"

    rs = np.random.RandomState(0)
    rows = [
        ("most_recent k=20", lambda n, t: index.most_recent(n, t, K)),
        ("uniform k=20 (RandomState)", lambda n, t: index.uniform(n, t, K, rs)),
        ("history max_len=32", lambda n, t: index.history(n, t, 32)),
        ("loop baseline most_recent k=20", lambda n, t: baseline.most_recent(n, t, K)),
    ]
    print("temporal neighbour retrieval benchmark (synthetic UCI-size graph)")
    for line in machine_info():
        print("  " + line)
    print(f"  graph: {N_NODES} nodes, {len(src)} edges, {DAYS} days; degree max {np.bincount(np.r_[src, dst]).max()}, "
          f"median {int(np.median(np.bincount(np.r_[src, dst])[1:]))}")
    print(f"  index build: {build_s * 1e3:.1f} ms (loop baseline build {baseline_build_s * 1e3:.1f} ms)")
    print(f"  queries: {len(batches)} calls of {BATCH} (edge stream, sources then destinations), "
          f"best of {args.repeats} passes")
    base_qps = None
    results = []
    for name, fn in rows:
        qps, per_call = throughput(fn, batches, args.repeats)
        results.append((name, qps, per_call))
        if name.startswith("loop"):
            base_qps = qps
    for name, qps, per_call in results:
        speed = f"  x{qps / base_qps:5.1f} vs loop" if base_qps else ""
        print(f"  {name:<32s} {qps:>12,.0f} queries/s   {per_call * 1e6:8.1f} us per batch of {BATCH}{speed}")


if __name__ == "__main__":
    main()
