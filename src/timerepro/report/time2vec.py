"""time2vec: aggregators, figure renderers and claim rules of Figures 1-14 (report engine registries).

Figures 3-4 (the synthetic task) summarize every run: the main sine (largest |output weight|) is brought to a
canonical form a sin(w tau + phi) with w folded into [0, pi / scale] (integer inputs times `scale` make w and
w + 2 pi / scale aliases) and a > 0; the figures and claims read that form. Figures 1, 2, 5-14 are metric
curves against the training epoch with a band of one standard deviation over runs.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pandas as pd

from .aggregate import aggregator
from .claims import FAILS, HOLDS, PENDING, rule
from .figures import _stamp, _style, renderer

import matplotlib.pyplot as plt  # noqa: E402  (figures configured the Agg backend)

PAPER = "time2vec"
SYNTHETIC_GROUPS = {1.0: "synthetic (day mod 7)", 2.0: "synthetic, inputs x2"}  # published row groups
FUNDAMENTAL_TOL = 0.05  # a run's main sine "is" the fundamental 2 pi / (7 scale) when within this


# ---------------------------------------------------------------- synthetic task (Figures 3, 4)

def canonical_sines(frequency, phase, weight, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(w, phi, a) of a sin(w tau + phi) rewritten with w in [0, pi / scale] and a >= 0 (same values on tau in scale Z)."""
    period = 2 * math.pi / scale
    w = np.mod(np.asarray(frequency, float) + period / 2, period) - period / 2  # alias into [-P/2, P/2)
    phi, a = np.asarray(phase, float).copy(), np.asarray(weight, float).copy()
    neg = w < 0  # a sin(-|w| tau + phi) = (-a) sin(|w| tau - phi)
    w, phi, a = np.abs(w), np.where(neg, -phi, phi), np.where(neg, -a, a)
    phi = np.where(a < 0, phi + math.pi, phi)  # -|a| sin(x) = |a| sin(x + pi)
    return w, np.mod(phi, 2 * math.pi), np.abs(a)


def _synthetic(record: dict) -> dict:
    art = record.get("time2vec_synthetic") or {}
    return art


def main_sine(record: dict) -> dict:
    """The run's main sine in canonical form, the second one's frequency, and its accuracies."""
    scale = float(record["config"]["input_scale"])
    learned = _synthetic(record)["learned"]
    w, phi, a = canonical_sines(learned["frequency"], learned["phase"], learned["weight"], scale)
    order = np.argsort(-a, kind="stable")
    return {"frequency": float(w[order[0]]), "phase": float(phi[order[0]]), "second": float(w[order[1]]),
            "fundamental": 2 * math.pi / (7 * scale), "test_accuracy": record["metrics"]["test_accuracy"]}


def _stat(values) -> tuple[float, float]:
    arr = np.asarray(values, float)
    return float(arr.mean()), float(arr.std()) if len(arr) > 1 else 0.0


def circular_stat(angles) -> tuple[float, float]:
    """Circular mean in [0, 2 pi) and circular standard deviation sqrt(-2 ln R) of angles (radians)."""
    z = np.exp(1j * np.asarray(angles, float)).mean()
    return float(np.mod(np.angle(z), 2 * math.pi)), float(math.sqrt(max(0.0, -2 * math.log(max(abs(z), 1e-12)))))


def _mode_bin(values: list[float], width: float = 0.02) -> float:
    """Centre of the most populated bin of `width` (ties: the lowest bin)."""
    bins = np.floor(np.asarray(values) / width).astype(int)
    uniq, counts = np.unique(bins, return_counts=True)
    return float((uniq[np.argmax(counts)] + 0.5) * width)


@aggregator("t2v_synthetic")
def t2v_synthetic(records: list[dict]) -> list[dict]:
    """Figure 3: pre-activation over the test days (mean, std over runs) and the main sine over runs."""
    groups = defaultdict(list)
    for r in records:
        groups[float(r["config"]["input_scale"])].append(r)
    rows = []
    for scale, rs in sorted(groups.items()):
        group = SYNTHETIC_GROUPS.get(scale, f"synthetic, inputs x{scale:g}")
        art0 = _synthetic(rs[0])
        days, n_train = art0["day"], art0["n_train"]
        pre = np.array([_synthetic(r)["pre_activation"] for r in rs])  # (runs, days)
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
            ("main sine", "main_sine_frequency_mode", [_mode_bin([m["frequency"] for m in mains])], rs,
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
            mean, std = circular_stat(values) if metric == "learned_phase_shift" else _stat(values)
            rows.append({"row_group": group, "row": "Time2Vec learned", "column": column, "metric": metric,
                         "mean": mean, "std": std, "n_runs": len(recs), "note": note_, "_records": recs})
    return rows


@aggregator("t2v_sine_weights")
def t2v_sine_weights(records: list[dict]) -> list[dict]:
    """Figure 4: every sine's canonical (frequency, output weight) before and after training, every run."""
    rows = []
    for r in sorted(records, key=lambda r: r["config"]["seed"]):
        scale = float(r["config"]["input_scale"])
        art = _synthetic(r)
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
        _style(ax)
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
    _stamp(fig, meta)
    return fig


@renderer("t2v_sine_weights")
def t2v_sine_weights_figure(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 4: output weight against sine frequency, (a) initial, (b) learned, every run overlaid."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), sharex=True, constrained_layout=True)
    runs = sorted(set(df["row"]))
    for ax, stage in zip(axes, ("initial", "learned")):
        _style(ax)
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
    _stamp(fig, meta)
    return fig


def _summary(df: pd.DataFrame, group: str, metric: str) -> pd.Series | None:
    sel = df[(df["artifact"] == "fig3") & (df["row_group"] == group) & (df["metric"] == metric)]
    return None if sel.empty else sel.iloc[0]


@rule("t2v_main_sine_2pi_over_7")
def t2v_main_sine_2pi_over_7(df: pd.DataFrame) -> tuple[str, str]:
    """c06: mode of the main-sine frequency within 0.898 +/- 0.02, phase 1.56 +/- 0.1, 100% test accuracy in a
    majority of runs, and with inputs x2 the main sine within 0.448 +/- 0.02."""
    g1, g2 = SYNTHETIC_GROUPS[1.0], SYNTHETIC_GROUPS[2.0]
    mode1, phase, perfect = (_summary(df, g1, m) for m in ("main_sine_frequency_mode", "learned_phase_shift",
                                                           "share_of_runs_perfect_test"))
    mode2 = _summary(df, g2, "main_sine_frequency_mode")
    if mode1 is None or mode2 is None:
        return PENDING, "fig3 needs runs of both panels (inputs x1 and x2) at this scale"
    checks = {
        f"mode of main-sine frequency {mode1['mean']:.3f} within 0.898 +/- 0.02": abs(mode1["mean"] - 0.898) <= 0.02,
        (f"phase {phase['mean']:.3f} within 1.56 +/- 0.1" if phase is not None else "no run at the fundamental"):
            phase is not None and abs(phase["mean"] - 1.56) <= 0.1,
        f"share of runs with 100% test accuracy {perfect['mean']:.2f} > 0.5": perfect["mean"] > 0.5,
        f"inputs x2: mode {mode2['mean']:.3f} within 0.448 +/- 0.02": abs(mode2["mean"] - 0.448) <= 0.02,
    }
    detail = "; ".join(f"{k}: {'ok' if v else 'NO'}" for k, v in checks.items())
    return (HOLDS if all(checks.values()) else FAILS), detail


@rule("t2v_only_2pi_over_7_and_zero")
def t2v_only_2pi_over_7_and_zero(df: pd.DataFrame) -> tuple[str, str]:
    """c07: in the runs whose main sine is 2 pi / 7, the second-largest |weight| sits at a frequency < 0.05 (the
    claim describes one run; the rule asks it of a majority of those runs)."""
    share = _summary(df, SYNTHETIC_GROUPS[1.0], "share_of_runs_second_sine_near_zero")
    at = _summary(df, SYNTHETIC_GROUPS[1.0], "share_of_runs_at_fundamental")
    if share is None or at is None:
        return PENDING, "fig3/fig4 have no run whose main sine is 2pi/7 at this scale"
    ok = share["mean"] > 0.5
    return (HOLDS if ok else FAILS), (f"{share['mean']:.2f} of the {int(share['n_runs'])} runs whose main sine is "
                                      f"2pi/7 (share of all runs {at['mean']:.2f}) have their second sine below 0.05")
