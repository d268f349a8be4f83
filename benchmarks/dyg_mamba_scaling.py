"""dyg_mamba Figure 3 as a benchmark: seconds per training step and peak memory of DyG-Mamba and DyGFormer
(patching disabled) at sequence lengths 32, 64, ..., 2048, with the fitted growth exponent of each.

The measurement is the pipeline's (`timerepro.tasks.sequence_cost.measure_isolated`: the registry's models
built from params/models.yaml, one training step of the link-prediction task on a synthetic batch with full
histories, each length in a fresh process). Prints a table; nothing is asserted. Timing is only meaningful
on an otherwise idle machine.

    python benchmarks/dyg_mamba_scaling.py                       # CPU, 1 thread, batch 4, L = 32..2048
    python benchmarks/dyg_mamba_scaling.py --max-length 512 --batch 2 --threads 2
"""

from __future__ import annotations

import argparse
import time

from timerepro import registry
from timerepro.report.dyg_mamba.efficiency import growth_exponent
from timerepro.tasks.sequence_cost import measure_isolated

MODELS = ("dyg_mamba", "dygformer")


def config_for(reg, model: str, length: int, batch: int, repeats: int) -> dict:
    """The resolved config the pipeline's cost_<model> experiment would run at this length."""
    return {**reg.tasks["sequence_cost"]["defaults"], **reg.models[model]["defaults"], "model": model,
            "dataset": "synthetic_long_histories", "sequence_length": length, "patch_size": 1, "batch_size": batch,
            "repeats": repeats, "seed": 0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--min-length", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=4, help="pairs per step (Figure 3's batch is not stated)")
    ap.add_argument("--repeats", type=int, default=3, help="timed steps after one warm-up (median reported)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    reg = registry.load()
    lengths = []
    length = args.min_length
    while length <= args.max_length:
        lengths.append(length)
        length *= 2
    results: dict[str, dict[int, dict]] = {m: {} for m in MODELS}
    print(f"{'model':10s} {'L':>5s} {'s/step':>9s} {'peak MB':>9s} {'saved MB':>9s} {'wall s':>7s}", flush=True)
    for model in MODELS:
        for L in lengths:
            t0 = time.perf_counter()
            try:
                m = measure_isolated(config_for(reg, model, L, args.batch, args.repeats), args.device, args.threads)
            except RuntimeError as err:  # e.g. out of memory at the longest lengths
                print(f"{model:10s} {L:5d} failed: {str(err)[-120:]}", flush=True)
                continue
            results[model][L] = m
            print(f"{model:10s} {L:5d} {m['time_per_step_s']:9.3f} {m['peak_memory_mb']:9.1f} "
                  f"{m['saved_activation_mb']:9.1f} {time.perf_counter() - t0:7.1f}", flush=True)
    print("\ngrowth exponents (log-log slope over the upper half of the lengths):")
    print(f"{'model':10s} {'time':>6s} {'peak':>6s} {'saved':>6s}")
    for model, pts in results.items():
        ls = sorted(pts)
        ex = [growth_exponent(ls, [pts[x][k] for x in ls]) for k in ("time_per_step_s", "peak_memory_mb", "saved_activation_mb")]
        print(f"{model:10s} " + " ".join(f"{e:6.2f}" for e in ex))
    common = sorted(set(results["dyg_mamba"]) & set(results["dygformer"]))
    if common:
        top = common[-1]
        a, b = results["dyg_mamba"][top], results["dygformer"][top]
        print(f"\nat L = {top}: DyGFormer / DyG-Mamba time {b['time_per_step_s'] / a['time_per_step_s']:.2f}x, "
              f"DyG-Mamba saves {100 * (1 - a['peak_memory_mb'] / b['peak_memory_mb']):.1f}% peak memory "
              f"({100 * (1 - a['saved_activation_mb'] / b['saved_activation_mb']):.1f}% saved activations)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
