"""The project's TGAT, DyGFormer and TGN against DyGLib's own, side by side in one run.

DyGLib (github.com/yule-BUAA/DyGLib) is read from a local checkout given by `--dyglib PATH` (or the
DYGLIB environment variable); it is never vendored. Every measurement runs in its own process (so
that its peak resident memory is its own), DyGLib's and the project's alternately, with the same
torch thread count, on the same graph and the same batches:

* graph: `neighbors_bench.synthetic_uci` (1,899 nodes, 59,835 edges over 196 days, Zipf-like
  activity) with zero node and edge features of width 172, as DyGLib gives UCI;
* configurations: DyGLib's best for UCI (`utils/load_configs.py`): TGAT 2 layers, 2 heads, 20 most
  recent neighbours, dropout 0.1; DyGFormer 2 layers, 2 heads, channels 50, max length 32, patch 1,
  dropout 0.1; TGN 1 layer, 2 heads, 10 most recent neighbours, dropout 0.1; time encoding width 100;
* speed: batches of 200 edges from edge 30,000 on (late-training history lengths), each with 200
  random negatives (the positive sources with uniformly drawn destinations, the same draws for both
  implementations); a training step is DyGLib's (positive and negative scores, BCE, backward, Adam
  step), an evaluation step scores the same without gradients; one untimed warm-up step of each.
  Edges per second count positive edges, as DyGLib's epoch times do. The ratio is project / DyGLib;
* floor (DyGFormer): the time of its matrix products alone at DyGLib's shapes (the attention's q k^T and
  weighted values included), float32 and bfloat16, and what it bounds (`measure_floor`);
* AP (unless --quick or --no-ap): one training epoch on the first 70% of the edges, then the test
  AP (DyGLib's mean of per-batch AP) on the last 15%, each edge against one random negative (same
  draws), for both implementations from the SAME initial weights (DyGLib's initialisation with
  torch seed 0, loaded into the project's model by name) and the same seed for dropout.

The project runs as the task runs it (`LinkPredictionModel.score`, `link_prediction.adam`, the
`StreamState` calls), at its defaults (float32, exact), and again with `amp: bfloat16` (project-bf16).

Run: python benchmarks/graph_dyglib_bench.py --dyglib /path/to/DyGLib [--quick] [--repeats 3]
     [--models tgat dygformer tgn] [--batches 5] [--threads 2] [--no-bf16] [--no-ap] [--ap-seeds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dyglib_harness import LR, N_FEAT, Reference  # the DyGLib side, shared with reference_table.py

HERE = Path(__file__).resolve().parent
BATCH, START, SEED = 200, 30000, 0
IMPLS = ("dyglib", "project", "project-bf16")  # project-bf16: the project's with `amp: bfloat16`
MODELS = ("tgat", "dygformer", "tgn")
# the project's side at DyGLib's best UCI configurations (utils/load_configs.py, load_link_prediction_best_configs;
# the DyGLib side reads the same values from dyglib_harness.REFERENCE)
CONFIG = {
    "tgat": dict(num_layers=2, num_heads=2, num_neighbors=20, dropout=0.1, time_dim=100),
    "dygformer": dict(num_layers=2, num_heads=2, channel_dim=50, max_input_sequence_length=32, patch_size=1,
                      dropout=0.1, time_dim=100),
    "tgn": dict(num_layers=1, num_heads=2, num_neighbors=10, dropout=0.1, time_dim=100),
}
MISSING = ("DyGLib checkout not found at {path!r}. This benchmark reads DyGLib from a local clone that is never "
           "vendored: `git clone https://github.com/yule-BUAA/DyGLib /some/where` and pass "
           "`--dyglib /some/where` (or set DYGLIB).")


# ------------------------------------------------------------------ the shared graph and batches

def graph():
    """(src, dst, ts, edge_ids) of the synthetic UCI-sized graph and the zero feature tables."""
    sys.path.insert(0, str(HERE))
    from neighbors_bench import synthetic_uci

    src, dst, ts, eids = synthetic_uci(SEED)
    n_nodes = int(max(src.max(), dst.max())) + 1
    return src, dst, ts, eids, np.zeros((n_nodes, N_FEAT), np.float32), np.zeros((len(src) + 1, N_FEAT), np.float32)


def speed_batches(src, dst, ts, n: int, offset: int):
    """n batches of 200 edges from edge START + offset * 200 on, each with random negative destinations."""
    rng = np.random.RandomState(SEED + offset)
    out = []
    for i in range(offset, offset + n):
        sl = slice(START + i * BATCH, START + (i + 1) * BATCH)
        out.append((src[sl], dst[sl], ts[sl], np.arange(sl.start, sl.stop) + 1, rng.randint(1, int(dst.max()) + 1, BATCH)))
    return out


# ------------------------------------------------------------------ the project's side (DyGLib's: dyglib_harness.Reference)

class ProjectModel:
    """The project's backbone in `LinkPredictionModel`, driven as tasks/link_prediction/loop.py drives it (the same
    calls as `dyglib_harness.Reference`)."""

    def __init__(self, name: str, node_feat, edge_feat, train_graph, full_graph, amp: str = "none"):
        import torch
        import torch.nn.functional as F

        from timerepro.models.graph.memory import stream_state
        from timerepro.tasks import link_prediction as lp

        cfg = CONFIG[name]
        common = dict(encoder="cosine", time_dim=cfg["time_dim"], num_heads=cfg["num_heads"], dropout=cfg["dropout"],
                      num_layers=cfg["num_layers"])
        if name == "tgat":
            from timerepro.models.graph.tgat import TGAT

            backbone = TGAT(node_feat, edge_feat, num_neighbors=cfg["num_neighbors"], **common)
        elif name == "dygformer":
            from timerepro.models.graph.dygformer import DyGFormer

            backbone = DyGFormer(node_feat, edge_feat, variant="dygformer", channel_dim=cfg["channel_dim"],
                                 patch_size=cfg["patch_size"], max_input_sequence_length=cfg["max_input_sequence_length"],
                                 **common)
        else:
            from timerepro.models.graph.tgn import TGN

            backbone = TGN(node_feat, edge_feat, num_neighbors=cfg["num_neighbors"], **common)
        self.name, self.lp, self.torch, self.F = name, lp, torch, F
        self.model = lp.LinkPredictionModel(backbone)
        self.train_graph, self.full_graph = train_graph, full_graph
        self.state = stream_state(backbone)
        self.autocast = lambda: lp.autocast(amp, torch.device("cpu"))  # noqa: E731

    def start(self, training: bool) -> None:
        """Train or evaluation mode with that phase's neighbours; a training pass starts from empty memories."""
        self.model.train(training)
        graph, seed = (self.train_graph, 0) if training else (self.full_graph, 1)
        self.model.backbone.set_graph(graph, np.random.RandomState(seed))
        if training:
            self.state.reset_state()

    def optimizer(self):
        return self.lp.adam(self.model, LR)  # what the task uses

    def train_step(self, opt, batch) -> float:
        src, dst, ts, eids, neg_dst = batch
        with self.autocast():
            pos, neg = self.model.score(src, dst, src, neg_dst, ts)
        logits = self.torch.cat([pos, neg]).float()
        labels = self.torch.cat([self.torch.ones_like(logits[:len(pos)]), self.torch.zeros_like(logits[len(pos):])])
        loss = self.F.binary_cross_entropy_with_logits(logits, labels)
        opt.zero_grad()
        loss.backward()
        self.state.observe(src, dst, ts, eids)
        opt.step()
        self.state.detach_state()
        return float(loss.item())

    def eval_step(self, batch):
        src, dst, ts, eids, neg_dst = batch
        with self.torch.no_grad(), self.autocast():
            pos, neg = self.model.score(src, dst, src, neg_dst, ts)
            self.state.observe(src, dst, ts, eids)
        return self.torch.sigmoid(pos.float()), self.torch.sigmoid(neg.float())


# ------------------------------------------------------------------ weights shared for the AP run

def _dyglib_key_map(name: str, num_layers: int) -> dict[str, str]:
    """DyGLib state_dict key -> the project's key, for the parameters of TGAT and DyGFormer."""
    m = {"0.time_encoder.w.weight": "backbone.time_encoder.w", "0.time_encoder.w.bias": "backbone.time_encoder.phi",
         "1.fc1.weight": "predictor.merge.fc0.weight", "1.fc1.bias": "predictor.merge.fc0.bias",
         "1.fc2.weight": "predictor.merge.fc1.weight", "1.fc2.bias": "predictor.merge.fc1.bias"}
    wb = ("weight", "bias")
    if name == "tgat":
        for i in range(num_layers):
            for ours, theirs in (("w_q", "query_projection"), ("w_k", "key_projection"), ("w_v", "value_projection")):
                m[f"0.temporal_conv_layers.{i}.{theirs}.weight"] = f"backbone.attention.{i}.{ours}.weight"
            for ours, theirs in (("w_o", "residual_fc"), ("norm", "layer_norm")):
                m.update({f"0.temporal_conv_layers.{i}.{theirs}.{p}": f"backbone.attention.{i}.{ours}.{p}" for p in wb})
            for ours, theirs in (("fc0", "fc1"), ("fc1", "fc2")):
                m.update({f"0.merge_layers.{i}.{theirs}.{p}": f"backbone.merge.{i}.{ours}.{p}" for p in wb})
    elif name == "dygformer":
        for j in (0, 2):
            m.update({f"0.neighbor_co_occurrence_encoder.neighbor_co_occurrence_encode_layer.{j}.{p}":
                      f"backbone.cooccurrence.encode.{j}.{p}" for p in wb})
        for ours, theirs in (("node", "node"), ("edge", "edge"), ("time", "time"), ("cooccurrence", "neighbor_co_occurrence")):
            m.update({f"0.projection_layer.{theirs}.{p}": f"backbone.projection.{ours}.{p}" for p in wb})
        m.update({f"0.output_layer.{p}": f"backbone.output.{p}" for p in wb})
        for i in range(num_layers):
            m.update({f"0.transformers.{i}.multi_head_attention.{k}": f"backbone.layers.{i}.attention.{k}"
                      for k in ("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias")})
            for ours, theirs in (("ffn_in", "linear_layers.0"), ("ffn_out", "linear_layers.1"),
                                 ("norm_attn", "norm_layers.0"), ("norm_ffn", "norm_layers.1")):
                m.update({f"0.transformers.{i}.{theirs}.{p}": f"backbone.layers.{i}.{ours}.{p}" for p in wb})
    return m


def load_dyglib_weights(model, name: str, path: str) -> None:
    """Load DyGLib's saved state_dict into the project's LinkPredictionModel by the key map (exact names)."""
    import torch

    theirs = torch.load(path, map_location="cpu")
    key_map = _dyglib_key_map(name, CONFIG[name]["num_layers"])
    ours = model.state_dict()
    missing = [k for k in key_map if k not in theirs]
    if missing:
        raise KeyError(f"DyGLib's {name} has no parameters {missing[:3]}: this benchmark's key map needs updating")
    for src_key, dst_key in key_map.items():
        ours[dst_key] = theirs[src_key].reshape(ours[dst_key].shape).clone()
    model.load_state_dict(ours)


# ------------------------------------------------------------------ one process, one measurement

def build(impl: str, name: str, dyglib: str, seed: int, train_mask=None):
    """One implementation on the shared graph, its training neighbours from `train_mask` (default: every edge)."""
    src, dst, ts, eids, node_feat, edge_feat = graph()
    mask = np.ones(len(src), bool) if train_mask is None else train_mask
    if impl == "dyglib":
        return Reference(name, {"dyglib": dyglib}, seed, (src, dst, ts, eids, node_feat, edge_feat, mask))
    from timerepro.graphs.neighbors import TemporalNeighbors

    train_graph = TemporalNeighbors(src[mask], dst[mask], ts[mask], eids[mask], num_nodes=node_feat.shape[0])
    full_graph = TemporalNeighbors(src, dst, ts, eids, num_nodes=node_feat.shape[0])
    return ProjectModel(name, node_feat, edge_feat, train_graph, full_graph, "bfloat16" if impl == "project-bf16" else "none")


def measure_speed(impl: str, name: str, dyglib: str, n: int, threads: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(SEED)
    src, dst, ts, *_ = graph()
    m = build(impl, name, dyglib, SEED)
    opt = m.optimizer()
    train, evaluate = speed_batches(src, dst, ts, n + 1, 0), speed_batches(src, dst, ts, n + 1, n + 1)
    m.start(True)
    m.train_step(opt, train[0])  # warm-up
    t0 = time.perf_counter()
    for b in train[1:]:
        m.train_step(opt, b)
    train_s = time.perf_counter() - t0
    m.start(False)
    m.eval_step(evaluate[0])
    t0 = time.perf_counter()
    for b in evaluate[1:]:
        m.eval_step(b)
    eval_s = time.perf_counter() - t0
    return {"train_edges_per_s": n * BATCH / train_s, "eval_edges_per_s": n * BATCH / eval_s,
            "train_s_per_batch": train_s / n, "eval_s_per_batch": eval_s / n,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
            "n_parameters": int(sum(p.numel() for p in m.model.parameters()))}


def measure_ap(impl: str, name: str, dyglib: str, threads: int, weights: str, seed: int = SEED) -> dict:
    """One epoch on the first 70% of the edges, then the mean per-batch test AP on the last 15%; `seed` fixes
    DyGLib's initial weights, the dropout stream and both negative draws (the graph stays the same)."""
    import torch

    from timerepro.graphs.evaluate import batched_metrics

    torch.set_num_threads(threads)
    src, dst, ts, eids, *_ = graph()
    n = len(src)
    train_end, test_start = int(0.70 * n), int(0.85 * n)
    train_mask = np.zeros(n, bool)
    train_mask[:train_end] = True
    torch.manual_seed(seed)
    m = build(impl, name, dyglib, seed, train_mask)
    if impl == "dyglib":
        torch.save(m.model.state_dict(), weights)  # the initial weights both implementations start from
    else:
        load_dyglib_weights(m.model, name, weights)
    torch.manual_seed(seed)  # the same seed for dropout
    opt = m.optimizer()
    dst_pool = np.unique(dst[:train_end])
    rng = np.random.RandomState(seed)
    m.start(True)
    t0 = time.perf_counter()
    for s in range(0, train_end, BATCH):
        sl = slice(s, min(s + BATCH, train_end))
        m.train_step(opt, (src[sl], dst[sl], ts[sl], eids[sl], dst_pool[rng.randint(0, len(dst_pool), sl.stop - s)]))
    train_s = time.perf_counter() - t0
    m.start(False)
    rng = np.random.RandomState(seed + 2)
    pos, neg = [], []
    t0 = time.perf_counter()
    # the edges between training and test go through the model too (memory models must see them)
    for s in range(train_end, n, BATCH):
        sl = slice(s, min(s + BATCH, n))
        p, q = m.eval_step((src[sl], dst[sl], ts[sl], eids[sl], rng.randint(1, int(dst.max()) + 1, sl.stop - s)))
        if s >= test_start:
            pos.append(p.float().numpy())
            neg.append(q.float().numpy())
    eval_s = time.perf_counter() - t0
    metrics = batched_metrics(np.concatenate(pos), np.concatenate(neg), batch_size=BATCH)
    return {"test_ap": metrics["average_precision"], "epoch_s": train_s, "eval_s": eval_s}


def measure_floor(name: str, threads: int, repeats: int = 5) -> dict:
    """DyGFormer: seconds of the matrix products alone of one training step at DyGLib's shapes, in float32 and
    bfloat16, and of the forward alone (an evaluation batch). A step is the positive and the negative pairs, each
    200 sequences of 64 tokens of width 4 d_ch through every layer: the QKV, output, FFN-in and FFN-out products and
    the attention's own per head (scores q k^T, (L, L), and the weighted values, (L, d_h)); backward: the gradients
    of the inputs and the weights. Every token goes through every layer and the output averages all of them, so no
    exact change removes these products: DyGLib's step time over the float32 figure bounds what an exact float32
    implementation can gain. Only products are timed: the inputs, weights and output gradients are drawn (and cast
    to bfloat16) before the clock starts, gradients are returned rather than accumulated, and the attention products
    run on inputs of their own (the softmax between them is not a product). `<key>_cpu_s`: the same in CPU seconds of
    the process (every thread), the figure to compare on a loaded machine."""
    import torch

    assert name == "dygformer", "the floor is stated for DyGFormer only"
    torch.set_num_threads(threads)
    cfg = CONFIG[name]
    d, length, heads = 4 * cfg["channel_dim"], 2 * cfg["max_input_sequence_length"] // cfg["patch_size"], cfg["num_heads"]
    rows = BATCH * length
    shapes = [(3 * d, d), (d, d), (4 * d, d), (d, 4 * d)]  # (out, in) of QKV, output, FFN in, FFN out

    def draw(dtype) -> dict:
        leaf = lambda *shape: torch.randn(*shape).to(dtype).requires_grad_()  # noqa: E731
        return {"weights": [leaf(*s) for s in shapes],
                "x": [leaf(rows, d) for _ in range(2)],  # positive pairs, negative pairs
                "grad": torch.randn(rows, d).to(dtype),
                # one head's q, k, v (B, L, d_h) and the gradient of its output
                "head": [leaf(BATCH, length, d // heads) for _ in range(3)],
                "head_grad": torch.randn(BATCH, length, d // heads).to(dtype)}

    def step(t: dict, backward: bool = True) -> None:
        w = t["weights"]
        q, k, v = t["head"]
        for x in t["x"]:
            h = x
            with torch.set_grad_enabled(backward):
                for _ in range(cfg["num_layers"]):
                    qkv = h @ w[0].t()
                    h = ((qkv[:, :d] @ w[1].t()) @ w[2].t()) @ w[3].t()
                    for _ in range(heads):  # (B, L, d_h) @ (B, d_h, L) -> (B, L, L) scores, @ v -> (B, L, d_h)
                        out = torch.bmm(torch.bmm(q, k.transpose(1, 2)), v)
                        if backward:
                            torch.autograd.grad(out, (q, k, v), t["head_grad"])
            if backward:
                torch.autograd.grad(h, [x, *w], t["grad"])

    out = {}
    for dtype, backward, key in ((torch.float32, True, "float32_s"), (torch.bfloat16, True, "bfloat16_s"),
                                 (torch.float32, False, "float32_eval_s")):
        tensors = draw(dtype)
        step(tensors, backward)
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(repeats):
            step(tensors, backward)
        out[key] = (time.perf_counter() - t0) / repeats
        out[key.replace("_s", "_cpu_s")] = (time.process_time() - c0) / repeats  # every thread: a loaded machine's figure
    return out


# ------------------------------------------------------------------ the parent

def child(args, impl: str, name: str, mode: str, weights: str | None = None, seed: int = SEED) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads),
           "PYTHONHASHSEED": "0"}
    cmd = [sys.executable, __file__, "--one", impl, name, mode, "--dyglib", args.dyglib, "--batches", str(args.batches),
           "--threads", str(args.threads), "--seed", str(seed)] + (["--weights", weights] if weights else [])
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode:
        raise RuntimeError(f"{impl} {name} {mode} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def spread(values) -> str:
    v = np.asarray(values, dtype=float)
    return f"{np.median(v):.2f}" + (f" ({v.min():.2f}-{v.max():.2f})" if len(v) > 1 else "")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="Figures are ratios measured side by side; rerun on a quiet machine to quote "
                                            "absolute throughput.")
    parser.add_argument("--dyglib", default=os.environ.get("DYGLIB", ""), help="path of a DyGLib checkout (or DYGLIB)")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--batches", type=int, default=5, help="timed training and evaluation batches per process")
    parser.add_argument("--repeats", type=int, default=2, help="process pairs per model (the spread is reported)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads of every process")
    parser.add_argument("--quick", action="store_true", help="2 batches, 1 repeat, no AP run")
    parser.add_argument("--no-ap", action="store_true", help="skip the one-epoch AP comparison")
    parser.add_argument("--no-speed", action="store_true", help="only the AP part (no speed rows, no floor)")
    parser.add_argument("--no-bf16", action="store_true", help="leave out the project's `amp: bfloat16` rows")
    parser.add_argument("--ap-seeds", type=int, default=1, metavar="K",
                        help="AP part: seeds 0..K-1 (initial weights, dropout, negatives); K > 1 prints the mean, the "
                             "spread and the paired difference to DyGLib")
    parser.add_argument("--seed", type=int, default=SEED, help=argparse.SUPPRESS)
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)  # internal: impl model mode
    parser.add_argument("--weights", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.dyglib or not (Path(args.dyglib) / "models" / "TGAT.py").is_file():
        parser.exit(2, MISSING.format(path=args.dyglib) + "\n")
    args.dyglib = str(Path(args.dyglib).resolve())
    if args.one:
        impl, name, mode = args.one
        if mode == "speed":
            result = measure_speed(impl, name, args.dyglib, args.batches, args.threads)
        elif mode == "floor":
            result = measure_floor(name, args.threads)
        else:
            result = measure_ap(impl, name, args.dyglib, args.threads, args.weights, args.seed)
        print(json.dumps(result))
        return
    if args.quick:
        args.batches, args.repeats, args.no_ap = 2, 1, True
    impls = IMPLS[:2] if args.no_bf16 else IMPLS
    ours = impls[1:]

    import torch

    print(f"machine: {platform.machine()} | {os.cpu_count()} CPUs | python {platform.python_version()} | "
          f"torch {torch.__version__} | {args.threads} threads per process | "
          f"load average at start {os.getloadavg()[0]:.2f}")
    print(f"graph: synthetic UCI size (1,899 nodes, 59,835 edges), zero features of width {N_FEAT}; "
          f"batches of {BATCH} from edge {START}; {args.batches} timed train + {args.batches} eval batches per process, "
          f"{args.repeats} repeat(s); DyGLib at {args.dyglib}")
    if not args.no_speed:
        print(f"{'model':<10}{'impl':<14}{'train e/s':>10}{'eval e/s':>10}{'train s/b':>10}{'eval s/b':>10}"
              f"{'peak MB':>9}{'params':>9}")
    summary, dyglib_runs = [], {}
    for name in ([] if args.no_speed else args.models):
        runs = {impl: [] for impl in impls}
        for r in range(args.repeats):
            for impl in (impls if r % 2 == 0 else impls[::-1]):  # alternate the order against drift
                res = child(args, impl, name, "speed")
                runs[impl].append(res)
                print(f"{name:<10}{impl:<14}{res['train_edges_per_s']:>10.1f}{res['eval_edges_per_s']:>10.1f}"
                      f"{res['train_s_per_batch']:>10.3f}{res['eval_s_per_batch']:>10.3f}{res['peak_rss_mb']:>9.0f}"
                      f"{res['n_parameters']:>9}", flush=True)
        dyglib_runs[name] = runs["dyglib"]
        for impl in ours:
            ratio = {key: [p[key] / d[key] for p, d in zip(runs[impl], runs["dyglib"])]
                     for key in ("train_edges_per_s", "eval_edges_per_s", "peak_rss_mb")}
            summary.append((name, impl, ratio))
    if not args.no_speed:
        print("\nratio to DyGLib, median (min-max over repeats):")
        print(f"{'model':<10}{'impl':<14}{'train speed':>20}{'eval speed':>20}{'peak memory':>20}")
        for name, impl, ratio in summary:
            print(f"{name:<10}{impl:<14}{spread(ratio['train_edges_per_s']):>20}{spread(ratio['eval_edges_per_s']):>20}"
                  f"{spread(ratio['peak_rss_mb']):>20}")
        if "dygformer" in args.models:
            floor = child(args, "project", "dygformer", "floor")
            dyglib_step, dyglib_eval = (np.median([d[key] for d in dyglib_runs["dygformer"]])
                                        for key in ("train_s_per_batch", "eval_s_per_batch"))
            print(f"\nDyGFormer's matrix products alone (one training step at DyGLib's shapes, the attention's own "
                  f"included, forward and backward): "
                  f"{floor['float32_s']:.3f} s in float32, {floor['bfloat16_s']:.3f} s in bfloat16 against DyGLib's "
                  f"{dyglib_step:.3f} s step: an exact float32 implementation trains at most "
                  f"{dyglib_step / floor['float32_s']:.2f}x DyGLib's speed; bfloat16 products allow "
                  f"{dyglib_step / floor['bfloat16_s']:.2f}x")
            print(f"their forward alone (an evaluation batch): {floor['float32_eval_s']:.3f} s in float32 against "
                  f"DyGLib's {dyglib_eval:.3f} s: an exact float32 implementation evaluates at most "
                  f"{dyglib_eval / floor['float32_eval_s']:.2f}x DyGLib's speed")
    if args.no_ap:
        return
    seeds = list(range(args.ap_seeds))
    print(f"\none epoch on the first 70% of the edges from the same initial weights and seed; test AP (mean of "
          f"per-batch AP) on the last 15%; seed(s) {seeds}:")
    print(f"{'model':<10}{'impl':<14}{'seed':>5}{'test AP':>9}{'diff to DyGLib (pts)':>22}{'epoch s':>9}")
    for name in [m for m in args.models if m != "tgn"]:  # TGN's weights are not mapped (speed only)
        aps = {impl: [] for impl in impls}
        for seed in seeds:
            with tempfile.TemporaryDirectory() as tmp:
                weights = str(Path(tmp) / "init.pt")
                for impl in impls:  # DyGLib first: it writes the initial weights
                    p = child(args, impl, name, "ap", weights, seed)
                    aps[impl].append(p["test_ap"])
                    diff = "" if impl == "dyglib" else f"{100 * (p['test_ap'] - aps['dyglib'][-1]):.2f}"
                    print(f"{name:<10}{impl:<14}{seed:>5}{p['test_ap']:>9.4f}{diff:>22}{p['epoch_s']:>9.0f}", flush=True)
        if len(seeds) > 1:
            print(ap_summary(name, aps))


def ap_summary(name: str, aps: dict) -> str:
    """Mean and standard deviation over seeds of each implementation's test AP, and of its paired difference to
    DyGLib's (same seed: same initial weights and negatives), in points."""
    ref = 100 * np.asarray(aps["dyglib"])
    lines = [f"{name}: test AP over {len(ref)} seeds, mean +- sd (points); paired difference to DyGLib, mean +- sd"]
    for impl, values in aps.items():
        v = 100 * np.asarray(values)
        line = f"  {impl:<14}{v.mean():7.2f} +- {v.std(ddof=1):.2f}"
        if impl != "dyglib":
            d = v - ref
            line += f"   diff {d.mean():+.2f} +- {d.std(ddof=1):.2f} (min {d.min():+.2f}, max {d.max():+.2f})"
        lines.append(line)
    return "\n".join(lines)

if __name__ == "__main__":
    main()
