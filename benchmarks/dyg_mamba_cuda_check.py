"""DyG-Mamba on CUDA against the CPU, and the `mamba_ssm` fast path against the pure-PyTorch scan (a GPU check).

The project's DyG-Mamba (Table 7's sizes, the authors' defaults of params/models.yaml) on a synthetic graph:

1. the same weights and queries on CPU and on CUDA (both the PyTorch scan): max |difference| of the pair
   embeddings and of every parameter's gradient of their sum (a small batch, so that the CPU side is quick);
2. where `mamba_ssm` imports (a CUDA build): on CUDA, `scan_backend: mamba_ssm` against `torch`, same numbers;
3. seconds per training batch (forward + backward, synchronised) on CUDA at the paper's batch size, per backend,
   and on CPU for the small batch.

Torch only (mamba_ssm optional); under 2 minutes on one H100. Run from the repository root:
    PYTHONPATH=src python benchmarks/dyg_mamba_cuda_check.py [--batch 200 --length 256 --out results.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import time

import numpy as np
import torch

from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.dyg_mamba import DyGMamba
from timerepro.models.graph.selective_scan import mamba_ssm_available

TABLE7 = dict(time_encoder="cosine", time_dim=100, channel_dim=50, cooccurrence_dim=50, num_blocks=2, d_state=16,
              expand=2, conv_kernel=4, d_out=172, dropout=0.1)


def synthetic(num_nodes: int = 2000, num_edges: int = 60000, seed: int = 0):
    """A random temporal graph with a few hubs (long histories), 172-d edge features, no node features."""
    rng = np.random.default_rng(seed)
    hubs = rng.integers(1, 21, num_edges)
    src = np.where(rng.random(num_edges) < 0.3, hubs, rng.integers(1, num_nodes + 1, num_edges))
    dst = rng.integers(1, num_nodes + 1, num_edges)
    ts = np.cumsum(rng.integers(1, 50, num_edges)).astype(np.float64)
    node = np.zeros((num_nodes + 1, 172), np.float32)
    edge = np.vstack([np.zeros((1, 172)), rng.standard_normal((num_edges, 172))]).astype(np.float32)
    graph = TemporalNeighbors(src, dst, ts, np.arange(1, num_edges + 1), num_nodes=num_nodes + 1)
    return graph, node, edge, src, dst, ts


def step(model: DyGMamba, q) -> tuple[np.ndarray, dict]:
    """Embeddings (both sides) and the gradient of their sum for every parameter."""
    model.zero_grad(set_to_none=True)
    h_u, h_v = model.pair_embeddings(*q)
    (h_u.sum() + h_v.sum()).backward()
    grads = {n: p.grad.detach().cpu().double().numpy() for n, p in model.named_parameters() if p.grad is not None}
    return torch.cat([h_u, h_v], 1).detach().cpu().double().numpy(), grads


def compare(a, b) -> dict:
    (out_a, g_a), (out_b, g_b) = a, b
    assert set(g_a) == set(g_b)
    grad = max(float(np.max(np.abs(g_a[k] - g_b[k]))) for k in g_a)
    scale = max(float(np.max(np.abs(g_a[k]))) for k in g_a)
    return {"max_abs_embedding": float(np.max(np.abs(out_a - out_b))), "max_abs_grad": grad,
            "max_abs_grad_reference": scale}


def seconds_per_batch(model: DyGMamba, q, repeats: int, cuda: bool) -> float:
    step(model, q)  # warm-up (kernels, allocator)
    if cuda:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(repeats):
        step(model, q)
    if cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / repeats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=200, help="CUDA timing batch (the authors' default 200)")
    ap.add_argument("--length", type=int, default=256, help="max_input_sequence_length for the timing")
    ap.add_argument("--small-batch", type=int, default=16, help="batch of the CPU/CUDA comparison")
    ap.add_argument("--small-length", type=int, default=64, help="sequence length of the CPU/CUDA comparison")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", help="write the figures as JSON here too")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device: this check compares CUDA with the CPU")
    torch.manual_seed(0)
    graph, node, edge, src, dst, ts = synthetic()
    report: dict = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                    "mamba_ssm": mamba_ssm_available()}

    # 1. CPU vs CUDA, the PyTorch scan, identical weights, eval mode (no dropout)
    cpu = DyGMamba(node, edge, **TABLE7, max_input_sequence_length=args.small_length, scan_backend="torch").eval()
    cpu.set_graph(graph)
    gpu = copy.deepcopy(cpu).cuda()
    gpu.set_graph(graph)
    small = (src[-args.small_batch:], dst[-args.small_batch:], ts[-args.small_batch:] + 1)
    ref = step(cpu, small)
    report["cpu_vs_cuda_torch_scan"] = compare(ref, step(gpu, small))
    report["cpu_seconds_per_small_batch"] = seconds_per_batch(cpu, small, 1, cuda=False)

    # 2. mamba_ssm's kernel against the PyTorch scan on CUDA (same weights)
    if report["mamba_ssm"]:
        fast = copy.deepcopy(gpu)
        for block in fast.blocks:
            for d in block.directions:
                d.cfg["scan_backend"] = "mamba_ssm"
        report["cuda_mamba_ssm_vs_torch_scan"] = compare(step(gpu, small), step(fast, small))
        report["cpu_vs_cuda_mamba_ssm"] = compare(ref, step(fast, small))

    # 3. seconds per training batch on CUDA at the paper's batch (train mode: dropout on)
    big = (src[-args.batch:], dst[-args.batch:], ts[-args.batch:] + 1)
    timed = DyGMamba(node, edge, **TABLE7, max_input_sequence_length=args.length, scan_backend="torch").cuda().train()
    timed.set_graph(graph)
    report["seconds_per_batch"] = {"torch_scan": seconds_per_batch(timed, big, args.repeats, cuda=True)}
    if report["mamba_ssm"]:
        for block in timed.blocks:
            for d in block.directions:
                d.cfg["scan_backend"] = "mamba_ssm"
        report["seconds_per_batch"]["mamba_ssm"] = seconds_per_batch(timed, big, args.repeats, cuda=True)
    report["timing_shape"] = {"batch": args.batch, "max_input_sequence_length": args.length,
                              "width": timed.width, "d_state": TABLE7["d_state"]}
    report["peak_cuda_memory_mb"] = torch.cuda.max_memory_allocated() / 2**20
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
