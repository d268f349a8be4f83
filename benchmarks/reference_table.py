"""Every link-prediction model that has a reference implementation against it, in one table (issue 27, item 1).

Rows: TGAT, DyGFormer, TGN, CAWN, TCL, GraphMixer, JODIE, DyRep, EdgeBank against DyGLib
(github.com/yule-BUAA/DyGLib); DyG-Mamba against its authors' code (github.com/Clearloveyuan/DyG-Mamba) whose
Mamba blocks run on mamba_ssm's pure-PyTorch reference functions (`selective_scan_ref`, `rms_norm_ref`, read from
a state-spaces/mamba checkout into stand-in modules by the fixture builder's `_mamba_ssm_shims`; mamba_ssm's CUDA
and Triton kernels and causal_conv1d are absent, so the authors' nn.Conv1d path runs). The other references
(SWINIT, EasyTPP's runner, Hawkes Attention) are measured by the modules of `benchmarks/reference_rows/`
(one per family, one protocol, dispatched through its registry `FAMILIES`); TimeLSTM is printed as a "not measured" row
with the reason.
Reference code is read from local checkouts given on the command line, never vendored.

Protocol, the same for both sides of a row:
* graph: `neighbors_bench.synthetic_uci` (1,899 nodes, 59,835 edges over 196 days), zero node and edge features
  of width 172 (as DyGLib gives UCI); training neighbours from the edges up to the 70% time quantile, evaluation
  neighbours from all edges;
* configuration: DyGLib's best for UCI (`utils/load_configs.py`) on the reference side; on the project side
  params/models.yaml's defaults with `dataset: uci` through the task's effective config (the same values);
  DyG-Mamba: the authors' UCI setting (`load_link_prediction_mamba`: history length 1024, training batch 20);
* one process per (implementation, model, seed), the reference's and the project's alternately, each with
  `--threads` torch threads (OMP/MKL too); peak memory is the process's peak resident set (imports included);
* steps: batches of the training edges from edge 30,000 on, each with as many random negatives (the positive
  sources, uniformly drawn destinations, the same draws on both sides); one untimed warm-up step, then n timed
  training steps (scores, BCE, backward, Adam at lr 1e-4; memory models commit the batch), then n + 1 evaluation
  steps on the following edges (no gradients, first untimed); n is `--batches`, else the family's default (`STEPS`,
  `HEAVY_STEPS`; reference_rows' modules their own `STEPS`);
* clock: every step is timed on its own (`reference_rows.timing`: wall and CPU seconds of the process, every
  thread, and its minor page faults); a process's figure is its median timed step, so that one disturbed step
  does not move it (two timed steps and a median over three processes could not settle 2x: issue 27);
* metric after those steps: the mean training loss of the timed steps and the AP of the evaluation batches
  (positives against their negatives, pooled). The two sides start from their own seeded initialisations (the
  weights are not shared here: `graph_dyglib_bench.py` does that for TGAT and DyGFormer), so the metrics are
  two draws of one process, to be read against their spread over the seeds;
* floor: DyGFormer's is `graph_dyglib_bench.measure_floor`, the matrix products alone of a step at DyGLib's
  shapes (the attention's q k^T and weighted values included); TCL's (and DyGFormer's second: `OWN_FLOOR`,
  `measure_products`) is the project's own matrix products at the shapes torch.profiler recorded over
  `FLOOR_STEPS` steps, replayed outside the profiler (its per-kernel cost made the profiled figure exceed an
  unprofiled step), plus the attention's
  q k^T and weighted values inside the fused attention kernel timed as `bmm` at the shapes it ran, at most the
  kernel's own time (an exact implementation's, about 1.8x fewer multiply-adds than DyGLib's: docs/graph_speed.md);
  the reference's step over a floor bounds what that float32 work allows, and the floor over each project
  process's median step (the table's, unprofiled) is the fraction of the floor it reaches. Beside each, the same
  floor plus the element-wise ops no exact implementation skips (`reference_rows.elementwise`: LayerNorm, softmax,
  activations, dropout masking, the time encoding's cos/sin, replayed at the shapes the profiled project steps ran
  them), then plus the dropout masks' draws (the project's stream).
* device (`--device cuda`, the graph rows only): both sides' models on the GPU, each moving its sampled
  neighbours there as its training loop does (DyGLib: its modules' `device`; the project: `backbone.to_device`), the
  batches' ids given as numpy arrays as both loops give them; `torch.cuda.synchronize()` before every clock read of
  a step (wall: the GPU's work included; CPU: the process's seconds, a synchronize's spin included); "GPU MB":
  `torch.cuda.max_memory_allocated` from the process's start; no floors (they replay CPU products: "n/a on cuda");
  EasyTPP, SWINIT and Hawkes Attention rows stay CPU-only (printed as not measured);
* one-shot runs: a process that fails leaves its traceback on stderr and a '-' in its row; `--timeout` bounds a
  process, `--row-timeout-s` a row's processes together, `--budget-s` the table (rows not started by then are
  printed as not measured); `benchmarks/gpu_reference_table.sh` is the GPU call.
Throughput is batches per second (1 / the median step); a ratio x is project / reference of each alternated pair
of processes, printed as median [min-max] over the pairs, on wall and on CPU seconds (CPU: the figure to read on a
loaded machine), with a verdict at 2x ('undecided' when the pairs straddle it); the floors' fractions likewise at 0.8.

Run (from the repository root, with the project's .venv and PYTHONPATH=src; einops on the path for DyG-Mamba):
    PYTHONPATH=src:/path/to/pylib nice -n 19 python benchmarks/reference_table.py --dyglib DIR \
        --dyg-mamba DIR --mamba-ssm DIR [--seeds 3] [--batches N] [--threads 1] [--models tgat ...] \
        [--device cuda] [--row-timeout-s S] [--budget-s S]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import resource
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import reference_rows
from reference_rows import elementwise
from reference_rows.timing import (clocked, describe, floor_text, pair_ratios, ratio_note, recorded_products,
                                   replay_seconds, spread, summary, timed)
from dyglib_harness import LR, N_FEAT, REFERENCE, Reference  # the reference side, shared with graph_dyglib_bench.py

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
START = 30000

MODELS = tuple(REFERENCE)
OWN_FLOOR = ("tcl", "dygformer")  # floor from the project's own products (`measure_products`), and its element-wise ops
PRODUCTS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")  # the matrix products of a floor
HEAVY = ("cawn", "dyg_mamba")  # minutes per process on one starved core: fewer seeds (--heavy-seeds)
STEPS, HEAVY_STEPS = 6, 2  # timed steps per phase and process unless --batches says (a process's figure: their median)
FLOOR_STEPS = 2  # profiled steps whose product calls a floor replays (`measure_products`)
SOURCE = {"dyg_mamba": "DyG-Mamba authors (selective_scan_ref)"}  # else DyGLib
# references not measured, with the reason (printed as rows of the table)
NOT_MEASURED = {
    "time_lstm": ("TimeLSTM authors", "DarryO/time_lstm (82115a8, the code time2vec ran) is Python 2 "
                  "(utils.py: cPickle) on Theano 0.9 + Lasagne 0.2.dev1 (CUDA 8 / cuDNN 5): no Theano runs on "
                  "Python 3.11 with NumPy 2 beside torch; its authors published no port (third-party ports, "
                  "e.g. JavierPerez21/TimeRNNs, are not the code the paper ran)"),
}


def batch_size(name: str) -> int:
    return REFERENCE[name].get("batch", 200)


def steps(args, name: str) -> int:
    """Timed steps per phase of a graph row's processes: --batches, else the family's default."""
    return args.batches or (HEAVY_STEPS if name in HEAVY else STEPS)


# ------------------------------------------------------------------ shared inputs

def graph():
    """(src, dst, ts, eids), zero node and edge tables, and the training mask (edges up to the 70% quantile)."""
    sys.path.insert(0, str(HERE))
    from neighbors_bench import synthetic_uci

    src, dst, ts, eids = synthetic_uci(0)
    n_nodes = int(max(src.max(), dst.max())) + 1
    train = ts <= np.quantile(ts, 0.70)
    return (src, dst, ts, eids, np.zeros((n_nodes, N_FEAT), np.float32), np.zeros((len(src) + 1, N_FEAT), np.float32),
            train)


def batches(src, dst, ts, eids, n: int, first: int, size: int, seed: int):
    """n batches of `size` edges from edge START + first * size on, each with random negative destinations."""
    rng = np.random.RandomState(seed * 1000 + first)
    out = []
    for i in range(first, first + n):
        sl = slice(START + i * size, START + (i + 1) * size)
        out.append((src[sl], dst[sl], ts[sl], eids[sl], rng.randint(1, int(dst.max()) + 1, size)))
    return out


# ------------------------------------------------------------------ the project's side

def project_config(name: str, seed: int) -> dict:
    """params/models.yaml's defaults for `name` on UCI, through the task's effective config."""
    from timerepro.models.registry import model_specs
    from timerepro.tasks.effective import effective_config

    return effective_config({**model_specs()[name]["defaults"], "model": name, "dataset": "uci", "seed": seed})


class Project:
    """The registry's backbone in `LinkPredictionModel`, driven as tasks/link_prediction/loop.py drives it."""

    def __init__(self, name: str, paths: dict, seed: int, device: str = "cpu"):
        import torch
        import torch.nn.functional as F

        from timerepro.data.ctdg import CTDGData, LinkSplit
        from timerepro.graphs.neighbors import TemporalNeighbors
        from timerepro.models.graph.memory import stream_state
        from timerepro.tasks import link_prediction as lp

        src, dst, ts, eids, node_feat, edge_feat, train = graph()
        n = len(src)
        data = CTDGData("uci", src, dst, ts, eids, np.zeros(n), edge_feat, node_feat, {})
        val = (~train) & (ts <= np.quantile(ts, 0.85))
        split = LinkSplit(float(ts[train].max()), float(np.quantile(ts, 0.85)), train, val, ~train & ~val,
                          np.zeros(n, bool), np.zeros(n, bool), frozenset(), frozenset())
        self.train_graph = TemporalNeighbors(src[train], dst[train], ts[train], eids[train], num_nodes=len(node_feat))
        self.full_graph = TemporalNeighbors(src, dst, ts, eids, num_nodes=len(node_feat))
        torch.manual_seed(seed)
        config = project_config(name, seed)
        self.model = lp.build_model(config, data, split, self.train_graph).to(device)  # as loop.py moves it
        self.name, self.lp, self.torch, self.F, self.seed = name, lp, torch, F, seed
        self.state = stream_state(self.model.backbone)
        self.trainable = lp.trainable(self.model)
        if name == "edgebank":
            self.state.reset_state()
            self.state.observe(src[:START], dst[:START], ts[:START], eids[:START])  # DyGLib: every edge before

    def optimizer(self):
        return self.lp.adam(self.model, LR) if self.trainable else None

    def start(self, training: bool) -> None:
        self.model.train(training)
        graph_, offset = (self.train_graph, 0) if training else (self.full_graph, 1)
        self.model.backbone.set_graph(graph_, np.random.RandomState(self.seed + offset))
        if training:
            self.state.reset_state()

    def train_step(self, opt, batch) -> float:
        src, dst, ts, eids, neg_dst = batch
        pos, neg = self.model.score(src, dst, src, neg_dst, ts)
        logits = self.torch.cat([pos, neg]).float()
        labels = self.torch.cat([self.torch.ones_like(pos), self.torch.zeros_like(neg)]).float()
        loss = self.F.binary_cross_entropy_with_logits(logits, labels)
        opt.zero_grad()
        loss.backward()
        self.state.observe(src, dst, ts, eids)
        opt.step()
        self.state.detach_state()
        return float(loss.item())

    def eval_step(self, batch):
        src, dst, ts, eids, neg_dst = batch
        with self.torch.no_grad():
            pos, neg = self.model.score(src, dst, src, neg_dst, ts)
            self.state.observe(src, dst, ts, eids)
        return self.torch.sigmoid(pos.float()), self.torch.sigmoid(neg.float())

    def n_parameters(self) -> int:
        return int(sum(p.numel() for p in self.model.parameters() if p.requires_grad))


# ------------------------------------------------------------------ one process, one measurement

def measure(impl: str, name: str, paths: dict, n: int, threads: int, seed: int, device: str = "cpu") -> dict:
    """One process's figures. On cuda both sides' models live on the GPU and take the batches' numpy ids as their
    training loops give them (each moves its sampled neighbours there itself); every clock read of a timed step
    waits for the GPU (`sync`), and the GPU's peak allocation (`gpu_peak_mb`, from the process's start) is added."""
    import torch
    from sklearn.metrics import average_precision_score

    torch.set_num_threads(threads)
    np.random.seed(seed)
    cuda = torch.device(device).type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    sync = torch.cuda.synchronize if cuda else None
    src, dst, ts, eids, *_ = graph()
    m = (Reference(name, paths, seed, graph(), device) if impl == "reference" else Project(name, paths, seed, device))
    size = batch_size(name)
    train_b, eval_b = batches(src, dst, ts, eids, n + 1, 0, size, seed), batches(src, dst, ts, eids, n + 1, n + 1, size, seed)
    opt = m.optimizer()
    out = {"n_parameters": m.n_parameters()}
    if opt is not None:
        m.start(True)
        _, warm = timed(lambda b: m.train_step(opt, b), train_b[:1], sync)
        losses, steps = timed(lambda b: m.train_step(opt, b), train_b[1:], sync)
        out.update(summary("train", warm, steps), loss=float(np.mean(losses)))
    elif impl == "project":  # EdgeBank: no training; its history is every edge before the batch on both sides
        for b in train_b:
            m.state.observe(*b[:4])
    m.start(False)
    _, warm = timed(m.eval_step, eval_b[:1], sync)
    scored, steps = timed(m.eval_step, eval_b[1:], sync)
    out.update(summary("eval", warm, steps))
    pos, neg = [p.float().cpu().numpy() for p, _ in scored], [q.float().cpu().numpy() for _, q in scored]
    scores = np.concatenate(pos + neg)
    labels = np.concatenate([np.ones(sum(map(len, pos))), np.zeros(sum(map(len, neg)))])
    out["ap"] = float(average_precision_score(labels, scores))
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    if cuda:
        out["gpu_peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
    return out


def attention_products_s(shapes: list, train: bool, threads: int, repeats: int = 3) -> tuple[float, float]:
    """(wall, CPU) seconds of the products of the fused attention calls whose (q, k) shapes (B, H, Lq, d_h), (B, H, Lk, d_h) are
    given: forward q k^T (Lq, Lk) and the weights times v (Lq, d_h) per batch-head, in training also their four
    backward products (dA = dO v^T, dV = A^T dO, dQ = dS k, dK = dS^T q), as `bmm` at those shapes (the products
    `scaled_dot_product_attention`'s kernel does inside, which the profiler cannot separate); inputs drawn before
    the clock starts; the medians of `repeats` (`clocked`)."""
    import torch

    torch.set_num_threads(threads)
    runs = []
    for (b, h, lq, dh), (_, _, lk, _) in shapes:
        g = torch.Generator().manual_seed(0)
        q, do = (torch.randn(b * h, lq, dh, generator=g) for _ in range(2))
        k, v = (torch.randn(b * h, lk, dh, generator=g) for _ in range(2))
        a = torch.randn(b * h, lq, lk, generator=g)  # the weights, and in training dS
        # (X, Y) operand pairs of torch.bmm: forward, then the backward four
        pairs = [(q, k.transpose(1, 2)), (a, v)]
        if train:
            pairs += [(do, v.transpose(1, 2)), (a.transpose(1, 2), do), (a, k), (a.transpose(1, 2), q)]
        runs.append(pairs)
    return clocked(lambda: [torch.bmm(x, y) for pairs in runs for x, y in pairs], repeats)


ATTENTION_KERNEL = "aten::_scaled_dot_product_flash_attention_for_cpu"  # the fused kernel measure_products opens


def measure_products(name: str, paths: dict, n: int, threads: int, seed: int) -> dict:
    """The seconds per training and per evaluation step of the project's matrix products (`PRODUCTS`) on `measure`'s
    batches, without the profiler's cost: the steps run under torch.profiler only to record each product call's
    shapes, which are then replayed outside it (`replay_seconds`), plus the attention's own products inside the fused
    attention kernel (`attention_products_s` at the shapes the profiler recorded, at most the kernel's profiled time:
    they count in DyGFormer's floor too). `<mode>_profiled_s`: the products' profiled self time, for comparison."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(threads)
    src, dst, ts, eids, *_ = graph()
    m = Project(name, paths, seed)
    size = batch_size(name)
    opt = m.optimizer()
    out = {}
    for mode, first in (("train", 0), ("eval", n + 1)):
        steps = batches(src, dst, ts, eids, n + 1, first, size, seed)
        m.start(mode == "train")
        step = (lambda b: m.train_step(opt, b)) if mode == "train" else m.eval_step
        step(steps[0])  # warm-up
        with (profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof,
              elementwise.recording_masks() as masks):
            for b in steps[1:]:
                step(b)
        out[f"{mode}_profiled_s"] = sum(e.self_cpu_time_total for e in prof.key_averages() if e.key in PRODUCTS) / 1e6 / n
        shapes = [tuple(e.input_shapes[:2]) for e in prof.events() if e.name == ATTENTION_KERNEL]
        # the kernel does those products and more: never count more than its own time (forward and backward)
        kernel_s = sum(e.self_cpu_time_total for e in prof.key_averages() if e.key.startswith(ATTENTION_KERNEL)) / 1e6
        attention = attention_products_s(shapes, mode == "train", threads)
        replayed = replay_seconds(recorded_products(prof, PRODUCTS))
        for i, clock in enumerate(("", "_cpu")):
            out[f"{mode}_attention_products{clock}_s"] = min(attention[i], kernel_s) / n
            out[f"{mode}_products{clock}_s"] = replayed[i] / n + out[f"{mode}_attention_products{clock}_s"]
        fused = elementwise.fused_softmax_seconds(shapes, mode == "train", kernel_s, attention)
        out.update(elementwise.floor_keys(mode, elementwise.recorded_calls(prof), masks, n, fused))
    return out


def child_env(args) -> dict:
    return {**os.environ, "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads),
            "PYTHONHASHSEED": "0"}


def child(args, impl: str, name: str, seed: int, mode: str = "one") -> dict:
    env = child_env(args)
    if mode == "floor":
        cmd = [sys.executable, str(HERE / "graph_dyglib_bench.py"), "--one", "project", "dygformer", "floor",
               "--dyglib", args.dyglib, "--threads", str(args.threads)]
    else:
        n = FLOOR_STEPS if mode == "products" else steps(args, name)
        cmd = [sys.executable, __file__, "--one", impl, name, str(seed), "--batches", str(n),
               "--threads", str(args.threads)] + sum(([f"--{k.replace('_', '-')}", v] for k, v in paths_of(args).items()), [])
        cmd += ["--products"] if mode == "products" else ["--device", args.device]
    return reference_rows.run_json(cmd, env, reference_rows.time_left(args))


def paths_of(args) -> dict:
    return {k: v for k, v in (("dyglib", args.dyglib), ("dyg_mamba", args.dyg_mamba), ("mamba_ssm", args.mamba_ssm)) if v}


# ------------------------------------------------------------------ the table

def median(values) -> float:
    v = [x for x in values if x is not None]
    return float(np.median(v)) if v else float("nan")


def fmt(x: float, spec: str = ".2f") -> str:
    return "-" if x is None or not np.isfinite(x) else format(x, spec)


def mean_sd(values) -> str:
    v = np.asarray([x for x in values if x is not None], float)
    if not len(v):
        return "-"
    return f"{v.mean():.3f}" + (f"+-{v.std(ddof=1):.3f}" if len(v) > 1 else "")


def row(name: str, runs: dict, source: str | None = None, batch: int | None = None, metric: str = "ap",
        gpu: bool = False) -> list[str]:
    """A row: rates (median over processes of 1 / each one's median step), x = project / reference of each
    alternated pair (median [min-max]), on wall seconds and on CPU seconds (every thread), memory (`gpu`: the GPU's
    peak allocation too, `GPU_COLUMNS`), loss, metric."""
    ref, ours = runs["reference"], runs["project"]
    ratio = lambda key: spread(pair_ratios(runs, key))  # noqa: E731
    rate = lambda side, key: fmt(median([x.get(key) for x in side]))  # noqa: E731
    cells = [name, source or SOURCE.get(name, "DyGLib"), str(batch or batch_size(name))]
    for phase in ("train", "eval"):
        cells += [rate(ref, f"{phase}_bps"), rate(ours, f"{phase}_bps"), ratio(f"{phase}_step_s"),
                  ratio(f"{phase}_cpu_s")]
    cells += [fmt(median([r.get("peak_mb") for r in ref]), ".0f"), fmt(median([p.get("peak_mb") for p in ours]), ".0f")]
    if gpu:
        cells += [fmt(median([x.get("gpu_peak_mb") for x in side]), ".0f") for side in (ref, ours)]
    return cells + [mean_sd([r.get("loss") for r in ref]), mean_sd([p.get("loss") for p in ours]),
                    mean_sd([r.get(metric) for r in ref]), mean_sd([p.get(metric) for p in ours])]


HEADER = ["model", "reference", "batch", "ref train b/s", "proj train b/s", "train x [min-max]", "cpu x",
          "ref eval b/s", "proj eval b/s", "eval x [min-max]", "cpu x", "ref MB", "proj MB", "ref loss", "proj loss",
          "ref metric", "proj metric"]


WIDTHS = [16, 34, 5, 13, 14, 17, 17, 12, 13, 17, 17, 6, 7, 12, 12, 12, 12]
GPU_COLUMNS = (["ref GPU MB", "proj GPU MB"], [10, 11])  # on cuda, after "proj MB": torch.cuda.max_memory_allocated


def columns(gpu: bool) -> tuple[list[str], list[int]]:
    """The table's header and widths (`gpu`: with `GPU_COLUMNS` after the resident-memory columns)."""
    at = HEADER.index("proj MB") + 1
    if not gpu:
        return HEADER, WIDTHS
    return HEADER[:at] + GPU_COLUMNS[0] + HEADER[at:], WIDTHS[:at] + GPU_COLUMNS[1] + WIDTHS[at:]


def print_row(cells: list[str], widths: list[int] = WIDTHS) -> None:
    """One line of the table, printed as soon as its row is measured (a long run can be read while it goes)."""
    print("  ".join(c.rjust(w) if i > 1 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))), flush=True)


def device_line(device: str) -> str:
    """The header's device: CPU, or the GPU's name and torch's CUDA version."""
    import torch

    if device == "cpu":
        return "device cpu"
    return f"device cuda ({torch.cuda.get_device_name()}, CUDA {torch.version.cuda})"


def check_device(parser, device: str) -> None:
    """Refuse --device cuda where torch sees no GPU, before any process is started."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device cuda: torch.cuda.is_available() is False here (torch {torch.__version__}, built for "
                     f"CUDA {torch.version.cuda}); run on a machine with a GPU, or pass --device cpu")


def seeds_of(args, name: str) -> int:
    return args.seeds if name not in HEAVY else min(args.seeds, args.heavy_seeds)


def graph_rows(args, table_row, print_line) -> tuple:
    """Measure and print the graph rows, row after row, or with --interleave seed after seed over every row (a budget
    cut then leaves each row some pairs); a row's processes share --row-timeout-s wherever they fall. Returns
    DyGFormer's runs (its floor), TCL's runs with its products, and the rows not measured with the reason."""
    cuda = args.device == "cuda"
    order = [(name, seed) for name in args.models for seed in range(seeds_of(args, name))]
    if args.interleave:
        order.sort(key=lambda pair: pair[1])  # stable: every row's seed 0, then every row's seed 1, ...
    runs = {name: {"reference": [], "project": []} for name in args.models}
    used = dict.fromkeys(args.models, 0.0)  # seconds each row's processes took
    floor_ref, own_floors, not_measured = None, {}, {}
    for name, seed in order:
        try:
            args.row_end = time.monotonic() + (args.row_timeout_s or float("inf")) - used[name]
            for impl in (("reference", "project") if seed % 2 == 0 else ("project", "reference")):
                t0 = time.monotonic()
                res = child(args, impl, name, seed)
                used[name] += time.monotonic() - t0
                runs[name][impl].append(res)
                print(f"  {name} {impl} seed {seed}: {describe(res)}", file=sys.stderr, flush=True)
            if seed < seeds_of(args, name) - 1:
                continue
            if all(str(r.get("error", "")).startswith("not run") for side in runs[name].values() for r in side):
                not_measured[name] = (SOURCE.get(name, "DyGLib"), "not started within --budget-s / --row-timeout-s")
                continue
            print_line(table_row(name, runs[name]))
            print(ratio_note(name, runs[name]) + (f" ({used[name]:.0f} s of processes)" if cuda else ""), flush=True)
            errors = sorted({f"{impl} {r['error']}" for impl, side in runs[name].items() for r in side if "error" in r})
            if errors:  # the one-shot reader's clue; tracebacks are on stderr
                print(f"  {name} processes failed: " + "; ".join(errors), flush=True)
            if name == "dygformer":
                floor_ref = runs[name]
            if name in OWN_FLOOR and not args.no_floor and not cuda:
                reference_rows.start_row(args)
                own_floors[name] = (runs[name], child(args, "project", name, 0, mode="products"))
        except Exception:  # noqa: BLE001 (one row's failure: its traceback, then the next row)
            traceback.print_exc()
            print(f"{name} seed {seed}: failed (traceback on stderr)", flush=True)
    return floor_ref, own_floors, not_measured


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dyglib", default=os.environ.get("DYGLIB", ""), help="DyGLib checkout")
    parser.add_argument("--dyg-mamba", default="", help="Clearloveyuan/DyG-Mamba checkout")
    parser.add_argument("--mamba-ssm", default="", help="state-spaces/mamba checkout (its reference functions)")
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=MODELS)
    reference_rows.add_arguments(parser)
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..K-1 (one process pair each)")
    parser.add_argument("--batches", type=int, default=None, help="timed training and evaluation steps per process "
                        f"(default: the family's: graph rows {STEPS}, {', '.join(HEAVY)} {HEAVY_STEPS}, "
                        "reference_rows' STEPS)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of every process")
    parser.add_argument("--heavy-seeds", type=int, default=2, help=f"at most this many seeds for {', '.join(HEAVY)}")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per process before its row says '-'")
    parser.add_argument("--row-timeout-s", type=float, default=None,
                        help="seconds for all the processes of one row (the rest of the row is not run)")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="seconds for the whole table: the rows not started by then are printed as not measured")
    parser.add_argument("--interleave", action="store_true",
                        help="graph rows seed after seed (every row's seed 0 first) rather than row after row")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where the graph rows' models run (cuda: steps timed with torch.cuda.synchronize, GPU "
                             "peak memory added, no floors, the other families not run)")
    parser.add_argument("--no-floor", action="store_true", help="skip the matrix-product floors (DyGFormer, TCL)")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)  # internal: impl model seed
    parser.add_argument("--products", action="store_true", help=argparse.SUPPRESS)  # internal: measure_products
    args = parser.parse_args(argv)
    check_device(parser, args.device)
    if args.one:
        impl, name, seed = args.one
        run_one = measure_products if args.products else functools.partial(measure, impl, device=args.device)
        print(json.dumps(run_one(name, paths_of(args), args.batches, args.threads, int(seed))))
        return
    missing = [m for m in args.models if (m == "dyg_mamba" and not (args.dyg_mamba and args.mamba_ssm))
               or (m != "dyg_mamba" and not (Path(args.dyglib or ".") / "models" / "TGAT.py").is_file())]
    if missing:
        parser.exit(2, f"reference checkouts missing for {missing}: pass --dyglib (yule-BUAA/DyGLib), --dyg-mamba "
                       "(Clearloveyuan/DyG-Mamba) and --mamba-ssm (state-spaces/mamba); never vendored\n")
    for k in ("dyglib", "dyg_mamba", "mamba_ssm"):
        if getattr(args, k):
            setattr(args, k, str(Path(getattr(args, k)).resolve()))
    import torch

    args.end = time.monotonic() + (args.budget_s or float("inf"))
    cuda = args.device == "cuda"
    header, widths = columns(cuda)
    table_row = functools.partial(row, gpu=cuda)
    print_line = functools.partial(print_row, widths=widths)
    print(f"machine: {platform.machine()} | {os.cpu_count()} CPUs | python {platform.python_version()} | "
          f"torch {torch.__version__} | {device_line(args.device)} | {args.threads} thread(s) per process | load "
          f"average at start {os.getloadavg()[0]:.2f}")
    print(f"graph: synthetic UCI size (1,899 nodes, 59,835 edges), zero features of width {N_FEAT}; from edge {START}: "
          f"1 warm-up + {args.batches or STEPS} timed training steps ({', '.join(HEAVY)}: {args.batches or HEAVY_STEPS}), "
          f"then 1 + as many evaluation steps per process (other families: --batches or their STEPS); a process's "
          f"figure is the median of its timed steps; seeds 0..{args.seeds - 1}; reference and project processes "
          f"alternate" + (" (graph rows interleaved: every row's seed 0, then seed 1, ...)" if args.interleave else ""),
          flush=True)
    print_line(header)
    floor_ref, own_floors, not_measured = graph_rows(args, table_row, print_line)
    not_measured.update(NOT_MEASURED)
    if cuda:  # the other families run on CPU only in this table
        for name in args.rows:
            not_measured[name] = (reference_rows.family(name).SOURCE, "--device cuda runs the graph rows only")
    else:
        for name, reason in reference_rows.run(args, child_env(args), table_row, print_line):
            not_measured[name] = (reference_rows.family(name).SOURCE, reason)
    for name, (source, reason) in not_measured.items():
        print_line([name, source, "-", "not measured"] + ["-"] * (len(header) - 4))
    print("x: project / reference throughput of each alternated pair of processes (one per seed), median [min-max] "
          "over the pairs, on wall seconds, and the same on CPU seconds (time.process_time of the process, every thread:"
          " the figure to read on a loaded machine); b/s: median over processes; MB: peak resident set of the process; "
          + ("GPU MB: torch.cuda.max_memory_allocated of the process; " if cuda else "") + "loss: mean "
          "BCE of the timed training steps (graph rows); metric: the AP of the evaluation batches after them (graph "
          "rows; mean+-sd over seeds; each side from its own seeded initialisation); '-': not measured (EdgeBank "
          "does not train) or the process failed (its error is on stderr)")
    for name, (_, reason) in not_measured.items():
        print(f"not measured: {name}: {reason}")
    for name, (runs, own) in own_floors.items():
        if "error" in own:
            print(f"{name} floor: {own['error']}")
            continue
        attention = f"{own['train_attention_products_s']:.3f} / {own['eval_attention_products_s']:.3f} s"
        print(f"{name} floor (its own matrix products at the shapes of {FLOOR_STEPS} profiled steps, replayed outside the "
              f"profiler, the fused attention's {attention} included; profiled self time {own['train_profiled_s']:.3f}"
              f" / {own['eval_profiled_s']:.3f} s): "
              + floor_text(runs, {k: (own[f"{k}_products_s"], own[f"{k}_products_cpu_s"]) for k in ("train", "eval")}))
        for line in elementwise.floor_lines(name, runs, {k: (own[f"{k}_products_s"], own[f"{k}_products_cpu_s"])
                                                         for k in ("train", "eval")}, own):
            print(line)
    if cuda and not args.no_floor and ({"dygformer", *OWN_FLOOR} & set(args.models)):
        print("floor: n/a on cuda (the replayed matrix-product floors of DyGFormer and TCL are CPU figures)")
    elif floor_ref and not args.no_floor:
        reference_rows.start_row(args)
        floor = child(args, "project", "dygformer", 0, mode="floor")
        if "error" in floor:
            print(f"DyGFormer floor: {floor['error']}")
        else:
            print(f"DyGFormer floor (its matrix products alone at DyGLib's shapes, attention's included, float32, "
                  f"{args.threads} thread(s)): " + floor_text(floor_ref, {
                      "train": (floor["float32_s"], floor["float32_cpu_s"]),
                      "eval": (floor["float32_eval_s"], floor["float32_eval_cpu_s"])}))
            own = own_floors.get("dygformer", (None, {}))[1]  # its element-wise ops as the project ran them
            for line in elementwise.floor_lines("DyGFormer (DyGLib's shapes)", floor_ref, {
                    "train": (floor["float32_s"], floor["float32_cpu_s"]),
                    "eval": (floor["float32_eval_s"], floor["float32_eval_cpu_s"])}, own):
                print(line)

if __name__ == "__main__":
    main()
