"""Figures 3 and 4 (the synthetic task): the pre-activation over the test days and every run's main sine;
every sine's frequency and output weight before and after training."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pandas as pd

from ..aggregate import aggregator, mean_std
from ..figures import plt, renderer, stamp, style
from .sines import FUNDAMENTAL_TOL, SYNTHETIC_GROUPS, canonical_sines, circular_stat, main_sine, mode_bin, synthetic_of


@aggregator("t2v_synthetic")
def t2vsynthetic_of(records: list[dict]) -> list[dict]:
    """Figure 3: pre-activation over the test days (mean, std over runs) and the main sine over runs."""
    groups = defaultdict(list)
    for r in records:
        groups[float(r["config"]["input_scale"])].append(r)
    rows = []
    for scale, rs in sorted(groups.items()):
        group = SYNTHETIC_GROUPS.get(scale, f"synthetic, inputs x{scale:g}")
        art0 = synthetic_of(rs[0])
        days, n_train = art0["day"], art0["n_train"]
        pre = np.array([synthetic_of(r)["pre_activation"] for r in rs])  # (runs, days)
        for j in range(n_train, len(days)):
            rows.append({"row_group": group, "row": "pre-activation", "column": str(days[j]),
                         "metric": "pre_activation", "mean": float(pre[:, j].mean()), "std": float(pre[:, j].std()),
                         "n_runs": len(rs), "_records": rs})
            rows.append({"row_group": group, "row": "label", "column": str(days[j]), "metric": "label",
                         "mean": float(art0["label"][j]), "std": 0.0, "n_runs": len(rs), "_records": rs})
        mains = [main_sine(r) for r in rs]
        fund = mains[0]["fundamental"]
        at = [m for m, r in zip(mains, rs) if abs(m["frequency"] - fund) <= FUNDAMENTAL_TOL]
        at_records = [r for m, r in zip(mains, rs) if abs(m["frequency"] - fund) <= FUNDAMENTAL_TOL]
        note = (f"main sine (largest |weight|) of the {len(at)} of {len(rs)} runs whose main sine is within "
                f"{FUNDAMENTAL_TOL} of 2pi/{7 * scale:g}; frequency folded into [0, pi/{scale:g}], phase with a > 0")
        summary = [
            ("main sine", "learned_frequency", [m["frequency"] for m in at], at_records, note),
            ("main sine", "learned_phase_shift", [m["phase"] for m in at], at_records, note),
            ("main sine", "main_sine_frequency_mode", [mode_bin([m["frequency"] for m in mains])], rs,
             "centre of the most populated 0.02-wide bin of every run's main-sine frequency"),
            ("main sine", "share_of_runs_at_fundamental", [len(at) / len(rs)], rs, note),
            ("main sine", "share_of_runs_second_sine_near_zero",
             [float(np.mean([m["second"] < 0.05 for m in at])) if at else float("nan")], at_records,
             "among runs whose main sine is the fundamental: second-largest |weight| at a frequency < 0.05"),
            ("test set", "test_accuracy_pct", [100 * m["test_accuracy"] for m in mains], rs, ""),
            ("test set", "share_of_runs_perfect_test", [float(np.mean([m["test_accuracy"] == 1.0 for m in mains]))], rs,
             "runs classifying every test day correctly"),
        ]
        for column, metric, values, recs, note_ in summary:
            if not values or not recs:
                continue
            mean, std = circular_stat(values) if metric == "learned_phase_shift" else mean_std(values)
            rows.append({"row_group": group, "row": "Time2Vec learned", "column": column, "metric": metric,
                         "mean": mean, "std": std, "n_runs": len(recs), "note": note_, "_records": recs})
    return rows


@aggregator("t2v_sine_weights")
def t2v_sine_weights(records: list[dict]) -> list[dict]:
    """Figure 4: every sine's canonical (frequency, output weight) before and after training, every run."""
    rows = []
    for r in sorted(records, key=lambda r: r["config"]["seed"]):
        scale = float(r["config"]["input_scale"])
        art = synthetic_of(r)
        for stage in ("initial", "learned"):
            s = art[stage]
            w, _, _ = canonical_sines(s["frequency"], s["phase"], s["weight"], scale)
            # signed weight: flipped where folding flipped the frequency's sign
            period = 2 * math.pi / scale
            sign = np.where(np.mod(np.asarray(s["frequency"]) + period / 2, period) - period / 2 < 0, -1.0, 1.0)
            a = np.asarray(s["weight"]) * sign
            for i in range(len(w)):
                for metric, value in (("sine_frequency", w[i]), ("output_weight", a[i])):
                    rows.append({"row_group": stage, "row": f"run {r['config']['seed']}", "column": f"sine {i + 1}",
                                 "metric": metric, "mean": float(value), "std": 0.0, "n_runs": 1, "_records": [r]})
    return rows


@renderer("t2v_preactivation")
def t2v_preactivation(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 3: pre-activation (mean and band of 1 std over runs) over the test days; positives in red."""
    groups = [g for g in SYNTHETIC_GROUPS.values() if g in set(df["row_group"])]
    fig, axes = plt.subplots(1, max(1, len(groups)), figsize=(6 * max(1, len(groups)), 3.4), squeeze=False,
                             constrained_layout=True)
    for ax, group in zip(axes[0], groups):
        style(ax)
        sub = df[df["row_group"] == group]
        pre = sub[sub["metric"] == "pre_activation"].assign(d=lambda x: x["column"].astype(int)).sort_values("d")
        lab = sub[sub["metric"] == "label"].assign(d=lambda x: x["column"].astype(int)).sort_values("d")
        n = int(pre["n_runs"].min()) if not pre.empty else 0
        ax.plot(pre["d"], pre["mean"], color="#0072B2", lw=1.2, label=f"mean over runs (n={n})")
        ax.fill_between(pre["d"], pre["mean"] - pre["std"], pre["mean"] + pre["std"], color="#0072B2", alpha=0.15, lw=0)
        pos = pre[pre["d"].isin(lab[lab["mean"] == 1]["d"])]
        ax.scatter(pos["d"], pos["mean"], color="#D55E00", s=14, zorder=3, label="multiples of 7 (class 1)")
        summ = sub[(sub["metric"] == "learned_frequency")]
        title = group
        if not summ.empty:
            title += f": main sine w = {summ['mean'].iloc[0]:.3f} ± {summ['std'].iloc[0]:.3f} (n={int(summ['n_runs'].iloc[0])})"
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("day (test set)")
        ax.legend(fontsize=7, frameon=False, loc="lower left")
    axes[0][0].set_ylabel("pre-activation a . t2v(tau) + b")
    fig.suptitle("Synthetic task: learned function before the sigmoid over the test days", fontsize=11)
    stamp(fig, meta)
    return fig


@renderer("t2v_sine_weights")
def t2v_sine_weights_figure(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 4: output weight against sine frequency, (a) initial, (b) learned, every run overlaid."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), sharex=True, constrained_layout=True)
    runs = sorted(set(df["row"]))
    for ax, stage in zip(axes, ("initial", "learned")):
        style(ax)
        sub = df[df["row_group"] == stage]
        w = sub[sub["metric"] == "sine_frequency"].set_index(["row", "column"])["mean"]
        a = sub[sub["metric"] == "output_weight"].set_index(["row", "column"])["mean"]
        ax.scatter(w.values, a.reindex(w.index).values, s=9, alpha=0.45, color="#0072B2",
                   label=f"{len(runs)} runs x {len(set(sub['column']))} sines")
        ax.axvline(2 * math.pi / 7, color="#D55E00", lw=0.8, ls="--", label="2pi/7 = 0.898")
        ax.set_title(f"({'a' if stage == 'initial' else 'b'}) {stage}", fontsize=10)
        ax.set_xlabel("sine frequency w (folded into [0, pi])")
        ax.legend(fontsize=7, frameon=False)
    axes[0].set_ylabel("output-layer weight")
    fig.suptitle("Synthetic task: sine weights against frequencies before and after training", fontsize=11)
    stamp(fig, meta)
    return fig
