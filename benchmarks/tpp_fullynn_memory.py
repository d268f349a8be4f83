"""Where FullyNN's thinning memory goes, and the peak resident memory of its offline test evaluation.

1. Floats kept per query by one no-grad `intensities_at` call on N queries (RSS growth, sampled every 2 ms):
   the hazard network without autograd, with its forward graph, and EasyTPP's derivative (K `grad` calls with
   create_graph=True, whose double-backward graphs stay alive until the call returns) - the last is ~K times
   the second, which is what `FULLYNN_FLOATS_PER_QUERY_MARK` (models/tpp/easytpp.py) budgets.
2. Peak RSS of the offline scale's FullyNN test evaluation (the thinning of the first `test_sequences` test
   sequences, batch `batch_size`, untrained weights: memory does not depend on them) on each stand-in, in a
   fresh process each, sliced (as the code runs) and, with --unsliced, as one call (FULLYNN_GRAPH_FLOATS set
   huge: the pre-fix behaviour; needs ~13 GB free for StackOverflow).

Run: nice -n 19 python benchmarks/tpp_fullynn_memory.py [--datasets taxi amazon stackoverflow] [--unsliced]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


class PeakSampler:
    """Largest VmRSS seen while the block runs (a thread reading /proc every 2 ms)."""

    def __enter__(self):
        self.start, self.peak, self._stop = rss_mb(), rss_mb(), False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop:
            self.peak = max(self.peak, rss_mb())
            time.sleep(0.002)

    def __exit__(self, *exc):
        time.sleep(0.02)
        self._stop = True
        self._thread.join()


def component(mode: str, K: int, H: int, N: int) -> dict:
    """Floats per query kept by one call of `mode` on N queries."""
    import torch

    from timerepro.models.tpp import easytpp

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = easytpp.fullynn({"d_model": H, "num_mlp_layers": 3}, K)
    net = model.model.layer_intensity
    hidden, s = torch.randn(1, 1, N, H), torch.rand(1, 1, N)
    with torch.no_grad(), PeakSampler() as p:
        if mode == "easytpp_derivative":  # one unsliced call, as before the fix
            easytpp.FULLYNN_GRAPH_FLOATS = 1 << 62
            model.intensities_at(s, hidden[:, :, 0, :])
        else:
            with torch.set_grad_enabled(mode == "forward_with_graph"):
                x = s.clone().requires_grad_(mode == "forward_with_graph")
                out = torch.tanh(net.layer_dense_2(torch.cat([hidden, net.layer_dense_1(x.unsqueeze(-1))], -1)))
                for layer in net.module_list:
                    out = torch.tanh(layer(out))
                net.layer_dense_3(out)
    return {"mode": mode, "K": K, "H": H, "N": N, "floats_per_query": round((p.peak - p.start) * 2**20 / 4 / N)}


def evaluation(dataset: str, unsliced: bool) -> dict:
    """Peak RSS of FullyNN's offline test evaluation on the stand-in of `dataset`."""
    import torch

    from timerepro.data.prepare import prepare
    from timerepro.data.tpp import load_processed
    from timerepro.models.tpp import easytpp
    from timerepro.models.tpp.registry import build_model
    from timerepro.registry import load
    from timerepro.tasks.temporal_point_process import THINNING_KEYS, builder_config, head
    from timerepro.tpp import ThinningConfig, evaluate

    torch.set_num_threads(1)
    if unsliced:
        easytpp.FULLYNN_GRAPH_FLOATS = 1 << 62
    run = next(r for r in load().runs("offline", paper="hawkes_attention")
               if r.config.get("model") == "fullynn" and r.config["dataset"] == dataset)
    c = run.config
    data = load_processed(prepare(dataset, standin=c["standin"], require_pinned=False, progress=False))
    test = head(data.splits["test"], c.get("test_sequences"))
    torch.manual_seed(0)
    model = build_model("fullynn", builder_config(c, head(data.splits["train"], c.get("train_sequences"))),
                        data.dim_process)
    t0 = time.process_time()
    with PeakSampler() as p:
        m = evaluate(model, test, batch_size=int(c["batch_size"]), thinning=ThinningConfig(**{k: c[k] for k in THINNING_KEYS}),
                     seed=0, num_samples=int(c["loss_integral_num_sample_per_step"]))
    return {"dataset": dataset, "K": data.dim_process, "sliced": not unsliced, "peak_rss_mb": round(p.peak),
            "before_mb": round(p.start), "cpu_s": round(time.process_time() - t0, 1),
            "rmse": m["rmse"], "acc": m["acc"], "loglike_per_event": m["loglike_per_event"]}


def _child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["taxi", "amazon", "stackoverflow"])
    ap.add_argument("--unsliced", action="store_true", help="also measure one unsliced call (the pre-fix peak)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, *rest = args.child
        res = component(rest[0], *map(int, rest[1:])) if kind == "component" else evaluation(rest[0], rest[1] == "1")
        print(json.dumps(res))
        return
    os.environ.setdefault("TIMEREPRO_DATA", tempfile.mkdtemp(prefix="fullynn-bench-"))
    print("floats kept per query by one no-grad call (K = 22 marks, H = 32, N = 20,000 queries):")
    for mode in ("forward_no_autograd", "forward_with_graph", "easytpp_derivative"):
        r = _child(["component", mode, "22", "32", "20000"])
        print(f"  {mode:22s} {r['floats_per_query']:6d}")
    print("offline FullyNN test evaluation (thinning), peak resident memory:")
    for ds in args.datasets:
        for unsliced in ([False, True] if args.unsliced else [False]):
            r = _child(["eval", ds, "1" if unsliced else "0"])
            print(f"  {ds:14s} K={r['K']:2d} {'one call' if unsliced else 'sliced  '} peak {r['peak_rss_mb']:6d} MB "
                  f"(process before {r['before_mb']} MB) cpu {r['cpu_s']:5.1f} s  rmse {r['rmse']:.6f} acc {r['acc']:.6f}")


if __name__ == "__main__":
    main()
