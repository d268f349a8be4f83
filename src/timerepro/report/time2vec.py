"""time2vec: aggregators, figure renderers and claim rules of Figures 1-14 (report engine registries).

Figures 3-4 (the synthetic task) summarize every run: the main sine (largest |output weight|) is brought to a
canonical form a sin(w tau + phi) with w folded into [0, pi / scale] (integer inputs times `scale` make w and
w + 2 pi / scale aliases) and a > 0; the figures and claims read that form. Figures 1, 2, 5-14 are metric
curves against the training epoch with a band of one standard deviation over runs.
"""

from __future__ import annotations

import math
import textwrap
from collections import defaultdict

import numpy as np
import pandas as pd

from .aggregate import aggregator, mean_std
from .claims import FAILS, HOLDS, PENDING, rule
from .figures import renderer, stamp, style

import matplotlib  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402  (figures configured the Agg backend)

PAPER = "time2vec"
SYNTHETIC_GROUPS = {1.0: "synthetic (day mod 7)", 2.0: "synthetic, inputs x2"}  # published row groups
FUNDAMENTAL_TOL = 0.02  # a run's main sine "is" the fundamental 2 pi / (7 scale) when within this (c06's +/- 0.02)


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


def _summary(df: pd.DataFrame, group: str, metric: str) -> pd.Series | None:
    sel = df[(df["artifact"] == "fig3") & (df["row_group"] == group) & (df["metric"] == metric)]
    return None if sel.empty else sel.iloc[0]


@rule("t2v_main_sine_2pi_over_7")
def t2v_main_sine_2pi_over_7(df: pd.DataFrame) -> tuple[str, str]:
    """c06: mode of the main-sine frequency within 0.898 +/- 0.02, phase 1.56 +/- 0.1, 100% test accuracy in a
    majority of runs, and with inputs x2 the runs whose main sine is at 2 pi / 14 (the reference's "scale-2 run")
    at 0.448 +/- 0.02 on average."""
    g1, g2 = SYNTHETIC_GROUPS[1.0], SYNTHETIC_GROUPS[2.0]
    mode1, phase, perfect = (_summary(df, g1, m) for m in ("main_sine_frequency_mode", "learned_phase_shift",
                                                           "share_of_runs_perfect_test"))
    mode2, at2, share2 = (_summary(df, g2, m) for m in ("main_sine_frequency_mode", "learned_frequency",
                                                        "share_of_runs_at_fundamental"))
    if mode1 is None or mode2 is None:
        return PENDING, "fig3 needs runs of both panels (inputs x1 and x2) at this scale"
    checks = {
        f"mode of main-sine frequency {mode1['mean']:.3f} within 0.898 +/- 0.02": abs(mode1["mean"] - 0.898) <= 0.02,
        (f"phase {phase['mean']:.3f} within 1.56 +/- 0.1" if phase is not None else "no run at the fundamental"):
            phase is not None and abs(phase["mean"] - 1.56) <= 0.1,
        f"share of runs with 100% test accuracy {perfect['mean']:.2f} > 0.5": perfect["mean"] > 0.5,
        (f"inputs x2: the {share2['mean']:.2f} of runs at 2pi/14 have mean {at2['mean']:.3f} within 0.448 +/- 0.02 "
         f"(mode of all runs {mode2['mean']:.3f})" if at2 is not None else
         f"inputs x2: no run at 2pi/14 (mode {mode2['mean']:.3f})"): at2 is not None and abs(at2["mean"] - 0.448) <= 0.02,
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


# ---------------------------------------------------------------- metric curves (Figures 1, 2, 5-14)

METRIC_NAMES = {"test_accuracy": "accuracy", "recall_at_10": "Recall@10", "mrr_at_10": "MRR@10",
                "recall_at_3": "Recall@3", "mrr_at_all": "MRR"}
PRIMARY = ("accuracy", "Recall@10", "Recall@3")
UNOBTAINABLE_NOTE = "CiteULike is unobtainable ({reason}): these panels come from its labelled stand-in"


def _lock():
    from timerepro.data.lock import load_lock

    return load_lock()


def dataset_label(config: dict) -> str:
    name = _lock().get(config["dataset"]).display_name(PAPER)
    return f"{name} (event-binned, times only)" if config.get("input_mode") == "binned" else name


def model_label(config: dict, with_size: bool = True) -> str:
    """'LSTM+T', 'TLSTM3+Time2Vec (16+1)', 'LSTM+Time2Vec (64+1, mod)', ..."""
    base = "LSTM" if config["model"] == "lstm" else f"TLSTM{config['variant']}"
    if config["time_input"] == "tau":
        return f"{base}+T" if config["model"] == "lstm" else base  # the paper's TLSTM1/3 take tau as they are
    parts = [f"{config['k_sines']}+1" if config.get("linear_term", True) else f"{config['k_sines']}, no linear term"]
    if config.get("activation", "sin") != "sin":
        parts.append(config["activation"])
    if config.get("frequencies", "learned") != "learned":
        parts.append(config["frequencies"].replace("_", " "))
    return f"{base}+Time2Vec" + (f" ({', '.join(parts)})" if with_size else "")


def history(record: dict) -> list[dict]:
    from timerepro.io import read_json

    path = record["dir"] / "history.json"
    return read_json(path) if path.is_file() else []


def curves(records: list[dict], group: str, row: str) -> list[dict]:
    """Per epoch and metric: mean and std over the runs (runs of different lengths: the epochs all have)."""
    hs = [history(r) for r in records]
    n = min(len(h) for h in hs)
    rows = []
    for key, metric in METRIC_NAMES.items():
        if f"val_{key}" not in hs[0][0]:
            continue
        values = np.array([[h[e][f"val_{key}"] for e in range(n)] for h in hs])  # (runs, epochs)
        for e in range(n):
            rows.append({"row_group": group, "row": row, "column": f"epoch {e + 1}", "metric": metric,
                         "mean": float(values[:, e].mean()), "std": float(values[:, e].std()),
                         "n_runs": len(records), "_records": records})
        rows.append({"row_group": group, "row": row, "column": "final", "metric": metric,
                     "mean": float(values[:, -1].mean()), "std": float(values[:, -1].std()),
                     "n_runs": len(records), "note": f"after epoch {n}", "_records": records})
    return rows


def _by(records: list[dict], key) -> dict:
    groups = defaultdict(list)
    for r in records:
        groups[key(r["config"])].append(r)
    return groups


@aggregator("t2v_curves")
def t2v_curves(records: list[dict]) -> list[dict]:
    """Appendix figures: every model and Time2Vec size, metric against epoch (mean, std over runs)."""
    rows = []
    for (group, row), rs in sorted(_by(records, lambda c: (dataset_label(c), model_label(c))).items()):
        rows += curves(rs, group, row)
    return rows


def _final(rows: list[dict], metric: str) -> float:
    return next((r["mean"] for r in rows if r["column"] == "final" and r["metric"] == metric), float("-inf"))


@aggregator("t2v_curves_best")
def t2v_curves_best(records: list[dict]) -> list[dict]:
    """Main-text figures: per dataset and model, the Time2Vec size with the best final primary metric."""
    rows = []
    for (group, family), rs in sorted(_by(records, lambda c: (dataset_label(c), model_label(c, False))).items()):
        options = {label: curves(sub, group, label) for label, sub in _by(rs, model_label).items()}
        metric = next(m for m in PRIMARY if any(r["metric"] == m for r in next(iter(options.values()))))
        label = max(sorted(options), key=lambda lab: _final(options[lab], metric))
        best = options[label]
        if label != family:  # Time2Vec: the family's row, the chosen size in the note
            sizes = "/".join(sorted({str(r["config"]["k_sines"]) for r in rs}, key=int))
            for r in best:
                r["row"] = family
                r["note"] = (r.get("note", "") + f"; best of sizes {sizes}: {label}").lstrip("; ")
        rows += best
    return rows


def _hist_rows(records: list[dict], group: str) -> list[dict]:
    """Figure 5c: counts of |learned frequency| in 0.1-wide bins centred 0.05..0.95 (and >= 1), over runs."""
    freqs = [np.asarray(r.get("time2vec_frequencies", {}).get("learned_abs_frequency") or [], float) for r in records]
    edges = np.round(np.arange(0, 1.01, 0.1), 1)
    counts = np.array([np.append(np.histogram(f[f < 1], bins=edges)[0], (f >= 1).sum()) for f in freqs])  # (runs, 11)
    rows = []
    for b in range(11):
        column = f"{edges[b] + 0.05:.2f}" if b < 10 else ">= 1"
        rows.append({"row_group": group, "row": "LSTM+Time2Vec (64+1)", "column": column, "metric": "frequency_count",
                     "mean": float(counts[:, b].mean()), "std": float(counts[:, b].std()), "n_runs": len(records),
                     "_records": records})
    mins = [float(f.min()) for f in freqs if len(f)]
    inside = [float(((f > 0) & (f < 1)).mean()) for f in freqs if len(f)]
    for metric, values in (("min_learned_frequency", mins), ("share_of_frequencies_in_(0,1)", inside)):
        if values:
            rows.append({"row_group": "Event-MNIST", "row": "LSTM+Time2Vec", "column": "panel c histogram",
                         "metric": metric, "mean": float(np.mean(values)), "std": float(np.std(values)),
                         "n_runs": len(values), "_records": records})
    top = np.argsort(-counts.mean(0)[:10], kind="stable")[:2]
    rows.append({"row_group": "Event-MNIST", "row": "LSTM+Time2Vec", "column": "panel c histogram",
                 "metric": "two_most_populated_bins", "mean": float(np.sort((top + 0.5) / 10)[0]),
                 "std": 0.0, "n_runs": len(records), "note": "centres: " + ", ".join(f"{(t + 0.5) / 10:.2f}" for t in top),
                 "_records": records})
    return rows


FIG5_PANELS = {"a": "Event-MNIST (a) activation, T2V 64+1", "b": "Event-MNIST (b) frequencies, T2V 16+1",
               "c": "Event-MNIST (c) learned frequencies", "d": "CiteULike (d) TLSTM3+Time2Vec, linear term",
               "e": "Event-MNIST linear term, T2V 64"}


@aggregator("t2v_ablations")
def t2v_ablations(records: list[dict]) -> list[dict]:
    """Figure 5: (a) activations, (b) frequency schemes, (c) histogram of learned frequencies, (d) the linear term
    on CiteULike (TLSTM3+Time2Vec, best size of each); and the linear term on Event-MNIST (claim c09)."""
    exp = _by(records, lambda c: c["experiment"])
    k = lambda c: c.get("k_sines")
    rows = []
    sine64 = [r for r in exp.get("mnist_t2v", []) if k(r["config"]) == 64]
    for label, rs in [("sin", sine64)] + sorted(_by(exp.get("mnist_activation", []), lambda c: c["activation"]).items()):
        if rs:
            rows += curves(rs, FIG5_PANELS["a"], label)
    learned16 = [r for r in exp.get("mnist_t2v", []) if k(r["config"]) == 16]
    for label, rs in [("learned", learned16)] + sorted(_by(exp.get("mnist_frequencies", []),
                                                             lambda c: c["frequencies"].replace("_", " ")).items()):
        if rs:
            rows += curves(rs, FIG5_PANELS["b"], label)
    if sine64:
        rows += _hist_rows(sine64, FIG5_PANELS["c"])
    for label, rs in (("with linear term", [r for r in exp.get("cite_tlstm_t2v", []) if r["config"]["variant"] == 3]),
                      ("without linear term", exp.get("cite_tlstm3_no_linear", []))):
        if rs:
            options = [curves(sub, FIG5_PANELS["d"], label) for sub in _by(rs, k).values()]
            best = max(options, key=lambda o: _final(o, "Recall@10"))
            rows += best
    for label, rs in (("with linear term", sine64), ("without linear term", exp.get("mnist_no_linear", []))):
        if rs:
            rows += curves(rs, FIG5_PANELS["e"], label)
    return rows


PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]


def _curve_panel(ax, sub: pd.DataFrame, metric: str) -> None:
    style(ax)
    cur = sub[(sub["metric"] == metric) & sub["column"].str.startswith("epoch ")]
    for i, (row, g) in enumerate(cur.groupby("row", sort=True)):
        g = g.assign(e=g["column"].str.split().str[1].astype(int)).sort_values("e")
        c = PALETTE[i % len(PALETTE)]
        ax.plot(g["e"], g["mean"], color=c, lw=1.5, marker="o" if len(g) < 12 else None, ms=3,
                label=f"{row} (n={int(g['n_runs'].min())})")
        ax.fill_between(g["e"], g["mean"] - g["std"], g["mean"] + g["std"], color=c, alpha=0.15, lw=0)
    ax.set_xlabel("training epoch")
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_ylabel(metric)
    ax.legend(fontsize=6, frameon=False)


def _data_note(sub: pd.DataFrame) -> str:
    data = "; ".join(sorted(set(sub["data"]))) if "data" in sub else ""
    return textwrap.fill(data.replace("synthetic stand-in for ", "stand-in: ").replace(" (not the real data)", ""), 80)


def _unobtainable(group: str) -> str:
    if not group.startswith("CiteULike"):
        return ""
    ds = _lock().get("citeulike")
    return "\n" + textwrap.fill(UNOBTAINABLE_NOTE.format(reason=ds.reason), 80) if ds.status == "unobtainable" else ""


@renderer("t2v_curves")
def t2v_curves_figure(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """One panel per dataset and metric: the metric against the training epoch, band = 1 std over runs."""
    metrics = [m for m in METRIC_NAMES.values() if m in set(df["metric"])]
    panels = [(g, m) for g in dict.fromkeys(df["row_group"]) for m in metrics
              if not df[(df["row_group"] == g) & (df["metric"] == m)].empty]
    cols = min(3, len(panels))
    nrows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, 3.6 * nrows), squeeze=False, constrained_layout=True)
    for ax, (group, metric) in zip(axes.flat, panels):
        sub = df[df["row_group"] == group]
        _curve_panel(ax, sub, metric)
        ax.set_title(f"{group}: {metric}\n{_data_note(sub)}{_unobtainable(group)}", fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    stamp(fig, meta)
    return fig


@renderer("t2v_ablations")
def t2v_ablations_figure(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 5: (a) activations, (b) frequency schemes (accuracy vs epoch), (c) histogram, (d) linear term."""
    fig, axes = plt.subplots(1, 4, figsize=(21, 3.9), constrained_layout=True)
    for ax, key, metric in zip(axes, "abcd", ("accuracy", "accuracy", None, "Recall@10")):
        group = FIG5_PANELS[key]
        sub = df[df["row_group"] == group]
        if sub.empty:
            ax.text(0.5, 0.5, "not run at this scale", transform=ax.transAxes, ha="center", color="#888888")
        elif metric:
            _curve_panel(ax, sub, metric)
        else:
            style(ax)
            h = sub[sub["metric"] == "frequency_count"]
            ax.bar(range(len(h)), h["mean"], yerr=h["std"], color="#0072B2", alpha=0.8, capsize=2)
            ax.set_xticks(range(len(h)), h["column"], rotation=60, fontsize=7)
            ax.set_xlabel("|learned frequency| (bin centre)")
            ax.set_ylabel(f"sines per model (n={int(h['n_runs'].min())} models)")
        ax.set_title(f"{group}\n{_data_note(sub)}{_unobtainable(group)}", fontsize=7)
    stamp(fig, meta)
    return fig


# ---------------------------------------------------------------- claim rules on the reproduced curves

def _finals(df: pd.DataFrame, artifact: str, metric: str | None = None) -> pd.DataFrame:
    sel = df[(df["artifact"] == artifact) & (df["column"] == "final")]
    return sel[sel["metric"].isin(PRIMARY if metric is None else [metric])]


def _t2v_vs_t(df: pd.DataFrame, artifact: str, base: str, strict: bool) -> tuple[list[str], list[bool]]:
    details, oks = [], []
    for group, g in _finals(df, artifact).groupby("row_group", sort=True):
        vals = dict(zip(g["row"], g["mean"]))
        t = vals.get(f"{base}+T") if base == "LSTM" else vals.get(base)
        t2v = vals.get(f"{base}+Time2Vec")
        if t is None or t2v is None:
            continue
        ok = t2v > t if strict else t2v >= t
        oks.append(ok)
        details.append(f"{group} ({g['metric'].iloc[0]}): T2V {t2v:.4f} vs {t:.4f} {'ok' if ok else 'NO'}")
    return details, oks


@rule("t2v_improves_lstm")
def t2v_improves_lstm(df: pd.DataFrame) -> tuple[str, str]:
    """c01: on every dataset the final metric of LSTM+Time2Vec (best size) >= LSTM+T, strictly on most."""
    details, oks = _t2v_vs_t(df, "fig1", "LSTM", strict=False)
    if not oks:
        return PENDING, "fig1 has no dataset with both models at this scale"
    strict = sum(d.count("T2V") and float(d.split("T2V ")[1].split()[0]) > float(d.split(" vs ")[1].split()[0])
                 for d in details)
    ok = all(oks) and strict > len(oks) / 2
    return (HOLDS if ok else FAILS), "; ".join(details) + f"; strictly better on {strict} of {len(oks)}"


@rule("t2v_tidigits_mean_and_variance")
def t2v_tidigits_mean_and_variance(df: pd.DataFrame) -> tuple[str, str]:
    """c02: N-TIDIGITS18: mean accuracy of LSTM+Time2Vec > LSTM+T and its std over runs smaller."""
    g = _finals(df, "fig1", "accuracy")
    g = g[g["row_group"] == "N-TIDIGITS18"].set_index("row")
    if not {"LSTM+T", "LSTM+Time2Vec"} <= set(g.index):
        return PENDING, "fig1 has no N-TIDIGITS18 runs of both models at this scale"
    a, b = g.loc["LSTM+Time2Vec"], g.loc["LSTM+T"]
    ok = a["mean"] > b["mean"] and a["std"] < b["std"]
    return (HOLDS if ok else FAILS), (f"LSTM+Time2Vec {a['mean']:.4f} ± {a['std']:.4f} vs LSTM+T {b['mean']:.4f} ± "
                                      f"{b['std']:.4f} (n={int(a['n_runs'])}, {int(b['n_runs'])})")


@rule("t2v_improves_tlstm")
def t2v_improves_tlstm(df: pd.DataFrame) -> tuple[str, str]:
    """c03: Recall@10 of TLSTMx+Time2Vec > TLSTMx for x in {1, 3} on Last.FM and CiteULike (4/4)."""
    details, oks = [], []
    for x in (1, 3):
        d, o = _t2v_vs_t(df, "fig2", f"TLSTM{x}", strict=True)
        details += [f"TLSTM{x} {s}" for s in d]
        oks += o
    if len(oks) < 4:
        return PENDING, f"fig2 has {len(oks)} of the 4 comparisons at this scale"
    return (HOLDS if all(oks) else FAILS), "; ".join(details)


def _panel_finals(df: pd.DataFrame, key: str, metric: str) -> dict[str, float]:
    g = _finals(df, "fig5", metric)
    return dict(zip(g[g["row_group"] == FIG5_PANELS[key]]["row"], g[g["row_group"] == FIG5_PANELS[key]]["mean"]))


@rule("t2v_periodic_activations_best")
def t2v_periodic_activations_best(df: pd.DataFrame) -> tuple[str, str]:
    """c04: Event-MNIST final accuracy: min over sine, mod, triangle > max over sigmoid, tanh, ReLU; sine best."""
    v = _panel_finals(df, "a", "accuracy")
    periodic, other = ("sin", "mod", "triangle"), ("sigmoid", "tanh", "relu")
    if not set(periodic + other) <= set(v):
        return PENDING, f"fig5a has {sorted(v)} of the six activations at this scale"
    ok = min(v[a] for a in periodic) > max(v[a] for a in other) and max(v, key=v.get) == "sin"
    return (HOLDS if ok else FAILS), ", ".join(f"{a} {v[a]:.4f}" for a in periodic + other)


@rule("t2v_learned_frequencies_best")
def t2v_learned_frequencies_best(df: pd.DataFrame) -> tuple[str, str]:
    """c05: Event-MNIST accuracy with learned frequencies > equally spaced and > positional encoding."""
    v = _panel_finals(df, "b", "accuracy")
    if not {"learned", "equally spaced", "positional"} <= set(v):
        return PENDING, f"fig5b has {sorted(v)} of the three schemes at this scale"
    ok = v["learned"] > v["equally spaced"] and v["learned"] > v["positional"]
    return (HOLDS if ok else FAILS), ", ".join(f"{k} {x:.4f}" for k, x in v.items())


@rule("t2v_mnist_frequency_histogram")
def t2v_mnist_frequency_histogram(df: pd.DataFrame) -> tuple[str, str]:
    """c08: every learned |w| in (0, 1); the two most populated bins centred 0.35 and 0.85 (min w ~ 0.029: reported)."""
    sel = df[(df["artifact"] == "fig5") & (df["column"] == "panel c histogram")].set_index("metric")
    if "two_most_populated_bins" not in sel.index:
        return PENDING, "fig5c has no Event-MNIST LSTM+Time2Vec (64+1) run at this scale"
    inside = sel.loc["share_of_frequencies_in_(0,1)", "mean"]
    top = sel.loc["two_most_populated_bins", "note"]
    ok = inside == 1.0 and top.replace("centres: ", "").split(", ") in (["0.35", "0.85"], ["0.85", "0.35"])
    return (HOLDS if ok else FAILS), (f"share of |w| in (0, 1): {inside:.3f}; most populated bins {top}; smallest |w| "
                                      f"{sel.loc['min_learned_frequency', 'mean']:.3f} (mean over runs)")


@rule("t2v_linear_term")
def t2v_linear_term(df: pd.DataFrame) -> tuple[str, str]:
    """c09: CiteULike Recall@10 with the linear term > without; Event-MNIST |accuracy difference| < 1 point."""
    d, e = _panel_finals(df, "d", "Recall@10"), _panel_finals(df, "e", "accuracy")
    if len(d) < 2 or len(e) < 2:
        return PENDING, "fig5 needs both linear-term variants on CiteULike and on Event-MNIST at this scale"
    gap = abs(e["with linear term"] - e["without linear term"])
    ok = d["with linear term"] > d["without linear term"] and gap < 0.01
    return (HOLDS if ok else FAILS), (f"CiteULike Recall@10 {d['with linear term']:.4f} vs {d['without linear term']:.4f}; "
                                      f"Event-MNIST accuracy gap {100 * gap:.2f} points")


@rule("t2v_best_size")
def t2v_best_size(df: pd.DataFrame) -> tuple[str, str]:
    """c10: in the appendix figures the best Time2Vec size is 64 (or within 1 std of the best) for LSTM and
    TLSTM1, and 16 for TLSTM3."""
    details, oks = [], []
    for art in ("fig7", "fig8", "fig9", "fig10", "fig11", "fig12", "fig13", "fig14"):
        for group, g in _finals(df, art).groupby("row_group"):
            g = g[g["row"].str.contains(r"Time2Vec \(\d+\+1\)", regex=True)]
            if len(g) < 3:
                continue
            size = g["row"].str.extract(r"\((\d+)\+1\)")[0].astype(int)
            g = g.assign(size=size.values).set_index("size")
            best = int(g["mean"].idxmax())
            tlstm3 = g["row"].iloc[0].startswith("TLSTM3")
            ok = best == 16 if tlstm3 else (best == 64 or g.loc[64, "mean"] >= g["mean"].max() - g.loc[best, "std"])
            oks.append(ok)
            details.append(f"{art} {group}: best size {best}{' (TLSTM3: 16 expected)' if tlstm3 else ''} {'ok' if ok else 'NO'}")
    if not oks:
        return PENDING, "no appendix figure has all three Time2Vec sizes at this scale"
    ok = sum(oks) > len(oks) / 2 and all(o for o, d in zip(oks, details) if "TLSTM3" in d)
    return (HOLDS if ok else FAILS), "; ".join(details)


@rule("t2v_binned_times_only")
def t2v_binned_times_only(df: pd.DataFrame) -> tuple[str, str]:
    """c11: on the event-binned, times-only N-TIDIGITS18, final accuracy of LSTM+Time2Vec > LSTM+T."""
    g = _finals(df, "fig6", "accuracy")
    vals = {("T2V" if "Time2Vec" in r else "T"): m for r, m in zip(g["row"], g["mean"])}
    if len(vals) < 2:
        return PENDING, "fig6 has no runs of both models at this scale"
    return (HOLDS if vals["T2V"] > vals["T"] else FAILS), f"LSTM+Time2Vec {vals['T2V']:.4f} vs LSTM+T {vals['T']:.4f}"
