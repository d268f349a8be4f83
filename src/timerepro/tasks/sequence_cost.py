"""Time and memory of one training step against the history length (dyg_mamba Figure 3; the benchmark
benchmarks/dyg_mamba_scaling.py prints the same measurement).

A synthetic batch where every query node has at least L past interactions (so the model reads exactly L
positions): `batch_size` pairs (u_i, v_i), each node with L interactions at times 1..L with random partners,
queried at time L + 1, with 172-wide node and edge features (DyGLib's padding). One training step is the
link-prediction task's: scores of the positives and of one random negative per positive, BCE, backward,
Adam step. The model is the registry's (`tasks.link_prediction.MODELS`) built from the run config, with
`sequence_length` on its history knob (DyGFormer: max_input_sequence_length = L, patch_size from the config:
1 = no patching, as in Figure 3).

Measured: the median seconds of `repeats` steps after `warmup` steps; the peak memory of the step (CUDA: peak
allocated; CPU: the peak resident set of a fresh process above its resident set before the model was built,
so every measurement runs in its own spawned process); and the bytes autograd saved for backward (exact,
machine-independent: the activation memory that grows with L).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from timerepro.tasks.effective import effective_config  # noqa: F401 (this task's config resolver: tasks/registry.py)

FEAT = 172


def synthetic_graph(length: int, batch: int, seed: int = 0):
    """(data, split, train_graph, src, dst, neg_dst, t): 2 * batch query nodes with `length` interactions each."""
    from timerepro.data.ctdg import CTDGData, LinkSplit
    from timerepro.graphs.neighbors import TemporalNeighbors

    rng = np.random.default_rng(seed)
    n_query, n_partner = 2 * batch, max(8, length)
    owners = np.repeat(np.arange(1, n_query + 1), length)  # (2 B L,)
    partners = n_query + 1 + rng.integers(0, n_partner, size=owners.size)
    ts = np.tile(np.arange(1, length + 1, dtype=np.float64), n_query)
    order = np.argsort(ts, kind="stable")
    src, dst, ts = owners[order], partners[order], ts[order]
    n_edges = len(src)
    data = CTDGData(name="synthetic_long_histories", src=src, dst=dst, ts=ts, edge_ids=np.arange(1, n_edges + 1),
                    labels=np.zeros(n_edges), edge_feat=rng.normal(size=(n_edges + 1, FEAT)).astype(np.float32),
                    node_feat=np.zeros((n_query + n_partner + 1, FEAT), dtype=np.float32), manifest={})
    # a split whose training part is the first few edges: builders compute statistics of the training
    # split, which must not cost more than the step being measured
    first = np.arange(n_edges) < min(n_edges, 4 * batch)
    none = np.zeros(n_edges, dtype=bool)
    split = LinkSplit(float(ts[0]), float(ts[-1]), first, ~first, none, none, none, frozenset(), frozenset())
    graph = TemporalNeighbors.from_data(data)
    u = np.arange(1, batch + 1)
    v = np.arange(batch + 1, 2 * batch + 1)
    neg = np.roll(v, 1) if batch > 1 else u
    return data, split, graph, u, v, neg, np.full(batch, length + 1.0)


def measure(config: dict, device: str = "cpu") -> dict:
    """One model at one length, in this process: time per training step, peak memory, saved activations.
    `config`: an effective config (`effective_config`: `sequence_length` on the model's knob)."""
    from timerepro.tasks import link_prediction as lp

    length, batch = int(config["sequence_length"]), int(config["batch_size"])
    torch.manual_seed(int(config.get("seed", 0)))
    data, split, graph, u, v, neg, t = synthetic_graph(length, batch, int(config.get("seed", 0)))
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
        base = torch.cuda.memory_allocated(dev)
    else:
        base = _rss_mb()
    model = lp.build_model(config, data, split, graph).to(dev)
    model.backbone.set_graph(graph, np.random.RandomState(0))
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=float(config["lr"]))
    labels = torch.cat([torch.ones(batch), torch.zeros(batch)]).to(dev)
    saved = [0]

    def pack(x):
        saved[0] += x.numel() * x.element_size()
        return x

    def step(count_saved: bool = False) -> float:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        if count_saved:
            saved[0] = 0
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
                logits = torch.cat([model(u, v, t), model(u, neg, t)])
        else:
            logits = torch.cat([model(u, v, t), model(u, neg, t)])
        loss = F.binary_cross_entropy_with_logits(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        return time.perf_counter() - t0

    step(count_saved=True)
    for _ in range(int(config["warmup"]) - 1):
        step()
    times = [step() for _ in range(int(config["repeats"]))]
    if dev.type == "cuda":
        peak = (torch.cuda.max_memory_allocated(dev) - base) / 2**20
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0 - base
    return {"time_per_step_s": statistics.median(times), "peak_memory_mb": round(peak, 1),
            "saved_activation_mb": round(saved[0] / 2**20, 2), "n_parameters": lp.count_parameters(model),
            "sequence_length": length, "batch_size": batch, "device": str(dev)}


def _rss_mb() -> float:
    """The resident set of this process now (Linux /proc), in MB."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def measure_isolated(config: dict, device: str = "cpu", threads: int | None = None) -> dict:
    """`measure` in a fresh Python process (CPU peak memory is per process), or in place on CUDA."""
    if device.startswith("cuda"):
        return measure(config, device)
    env = {**os.environ, "TIMEREPRO_THREADS": str(threads or torch.get_num_threads())}
    proc = subprocess.run([sys.executable, "-m", "timerepro.tasks.sequence_cost"], input=json.dumps(config),
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"cost measurement of {config['model']} at L={config.get('sequence_length')} failed "
                           f"(exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(config: dict, ctx) -> dict:
    """The pipeline's Figure 3 run: one model at one sequence length."""
    metrics = measure_isolated(config, ctx.device)
    return {"metrics": metrics, "data": {"source": "generated", "standin": False,
                                         "label": "synthetic batch with full histories (timing needs no real data)"}}


if __name__ == "__main__":  # the child of measure_isolated: config as JSON on stdin, metrics as JSON on stdout
    torch.set_num_threads(int(os.environ.get("TIMEREPRO_THREADS", "1")))
    print(json.dumps(measure(json.loads(sys.stdin.read()), "cpu")))
