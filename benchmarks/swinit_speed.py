"""swinit Table 2 side by side: seconds per training epoch of SWINIT-mlp, SWINIT-GRU and every baseline of Table 1
that is registered, on the same data, machine and threads, as ratios baseline / SWINIT.

The models and their configurations come from the registry: the experiments of params/swinit.yaml's table1 at
paper scale (batch 1000, AdamW, the models' defaults), so a baseline added there later (JODIE, DyRep) is timed
without touching this script. An epoch is the link-prediction task's training epoch: the training edges in time
order, each batch's positives and one random negative per positive scored, BCE, backward, the memory fed the
batch (`observe`), the optimizer step. Models run round-robin `--repeats` times (the machine's load drifts alike
for all); the median epoch is kept, in wall seconds and in CPU seconds of this process.

Data: a processed dataset (`--dataset`, default the JODIE Wikipedia stand-in of `--standin offline`; pass
`--standin none` for prepared real data). Prints figures; asserts nothing.

Run: nice -n 19 python benchmarks/swinit_speed.py [--dataset jodie_wikipedia] [--standin offline] [--repeats 3]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F

from timerepro import registry
from timerepro.data.ctdg import link_prediction_split, load_processed
from timerepro.data.prepare import prepare
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.report import published
from timerepro.names import dataset_label
from timerepro.report.swinit import PAPER, PRINTED_MODELS
from timerepro.tasks import link_prediction as lp

OURS = ("swinit_mlp", "swinit_gru")


def table1_configs(reg, dataset: str, standin: str | None) -> dict[str, dict]:
    """model -> its paper-scale effective config of swinit's table1 (first run of each experiment), on `dataset`."""
    out = {}
    for exp in reg.artifact("swinit", "table1")["experiments"]:
        run = reg.experiment_runs("swinit", exp, "paper")[0]
        if run.config["model"] in lp.MODELS:
            out[run.config["model"]] = lp.effective_config({**run.config, "dataset": dataset, "standin": standin})
    return out


def epoch(model: lp.LinkPredictionModel, opt, data, idx: np.ndarray, batch: int, graph, seed: int) -> tuple[float, float]:
    """One training epoch as the task runs it; (wall seconds, CPU seconds)."""
    model.train()
    model.backbone.set_graph(graph, np.random.RandomState(0))
    if hasattr(model.backbone, "reset_state"):
        model.backbone.reset_state()
    rng = np.random.default_rng(seed)
    dst_pool = np.unique(data.dst[idx])
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(idx), batch):
        b = idx[start:start + batch]
        src, dst, ts = data.src[b], data.dst[b], data.ts[b]
        neg = rng.choice(dst_pool, len(b))
        logits = torch.cat([model(src, dst, ts), model(src, neg, ts)])  # (2B,)
        loss = F.binary_cross_entropy_with_logits(logits, torch.cat([torch.ones(len(b)), torch.zeros(len(b))]))
        opt.zero_grad()
        loss.backward()
        if hasattr(model.backbone, "observe"):
            model.backbone.observe(src, dst, ts, data.edge_ids[b])
        opt.step()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="jodie_wikipedia")
    ap.add_argument("--standin", default="offline", help="smoke, offline or none (prepared real data)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    standin = None if args.standin == "none" else args.standin
    torch.set_num_threads(args.threads)

    data = load_processed(prepare(args.dataset, standin=standin, progress=False))
    split = link_prediction_split(data)
    graph = TemporalNeighbors.from_data(data, split.train)
    idx = np.flatnonzero(split.train)
    configs = table1_configs(registry.load(), args.dataset, standin)
    models, opts, build_s = {}, {}, {}
    for name, cfg in configs.items():
        torch.manual_seed(0)
        t0 = time.perf_counter()
        models[name] = lp.LinkPredictionModel(lp.MODELS[name](cfg, data, split, graph))
        build_s[name] = time.perf_counter() - t0
        opts[name] = lp.make_optimizer(cfg, models[name].parameters())
    batch = int(next(iter(configs.values()))["batch_size"])
    times: dict[str, list[tuple[float, float]]] = {n: [] for n in configs}
    for rep in range(args.repeats):
        for name in configs:  # round-robin: load drifts alike for every model
            times[name].append(epoch(models[name], opts[name], data, idx, batch, graph, rep))

    label = dataset_label(args.dataset, PAPER)
    pub = published.load("swinit", "table2")
    pub = pub[pub["column"] == label].set_index("row")["mean"]
    print(f"swinit Table 2 side by side: {args.dataset} ({'stand-in ' + standin if standin else 'real data'}), "
          f"{len(idx)} training edges, batch {batch}, {args.repeats} epochs each, {args.threads} thread(s), "
          f"{platform.processor() or platform.machine()}, torch {torch.__version__}")
    print("ratios: this model's seconds per epoch / SWINIT-mlp's and / SWINIT-GRU's (wall; cpu)")
    print(f"{'model':12s} {'params':>9s} {'build s':>8s} {'wall s/epoch':>13s} {'cpu s/epoch':>12s} "
          f"{'wall ratios':>13s} {'cpu ratios':>13s}   published (V100, {label}): s/epoch, ratios")
    med = {n: (statistics.median(w for w, _ in ts), statistics.median(c for _, c in ts)) for n, ts in times.items()}
    for name in configs:
        wall, cpu = med[name]
        ratio = lambda k: " / ".join(f"{med[name][k] / med[o][k]:5.2f}" for o in OURS if o in med)
        lab = PRINTED_MODELS.get(name, name)
        p = pub.get(lab)
        pr = " / ".join(f"{p / pub[PRINTED_MODELS[o]]:.2f}" for o in OURS) if p is not None else "-"
        print(f"{lab:12s} {lp.count_parameters(models[name]):9d} {build_s[name]:8.2f} {wall:13.2f} {cpu:12.2f} "
              f"{ratio(0):>13s} {ratio(1):>13s}   {f'{p:.2f}, {pr}' if p is not None else '-'}")
    missing = [PRINTED_MODELS[m] for m in PRINTED_MODELS if m not in configs]
    if missing:
        print("not timed (not registered yet): " + ", ".join(missing))


if __name__ == "__main__":
    main()
