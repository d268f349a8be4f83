"""linear_time Figures 2 and 3: the synthetic event-sequence classification task (section 3.2), its claims c17, c18."""

from __future__ import annotations

from collections import defaultdict

import matplotlib
import numpy as np
import pandas as pd

from timerepro.names import ENCODER_LABELS

from ..aggregate import aggregator, mean_std
from ..claims import FAILS, HOLDS, PENDING, rule
from ..figures import ENCODER_COLORS, plt, renderer, stamp, style

PANELS = ["1-layer full attention", "1-layer autoregressive", "2-layer full attention", "2-layer autoregressive"]
COLORS = {**ENCODER_COLORS, "Learned (linear)": ENCODER_COLORS["Linear"], "True": "#000000"}


def panel_label(layers: int, attention: str) -> str:
    return f"{layers}-layer {'full attention' if attention == 'full' else 'autoregressive'}"


@aggregator("seqcls_accuracy")
def seqcls_accuracy(records: list[dict]) -> list[dict]:
    """Figure 2: test accuracy per panel x encoder x d_T, mean and std over seeds."""
    groups = defaultdict(list)
    for r in records:
        c = r["config"]
        groups[(panel_label(c["layers"], c["attention"]), ENCODER_LABELS[c["encoder"]], str(c["d_T"]))].append(r)
    rows = []
    for (panel, enc, dim), rs in sorted(groups.items()):
        mean, std = mean_std([r["metrics"]["test_accuracy"] for r in rs])
        rows.append({"row_group": panel, "row": enc, "column": dim, "metric": "test_accuracy",
                     "mean": mean, "std": std, "n_runs": len(rs), "_records": rs})
    return rows


@aggregator("seqcls_attention")
def seqcls_attention(records: list[dict]) -> list[dict]:
    """Figure 3: average read-out attention per event index, learned vs true."""
    groups = defaultdict(list)
    for r in records:
        groups[r["config"]["d_T"]].append(r)
    rows = []
    for dim, rs in sorted(groups.items()):
        for label, key in (("Learned (linear)", "learned"), ("True", "true")):
            curves = np.array([r["attention"][key] for r in rs])  # (runs, M)
            for m in range(curves.shape[1]):
                rows.append({"row_group": f"d_T={dim}", "row": label, "column": str(m + 1), "metric": "attention_score",
                             "mean": float(curves[:, m].mean()), "std": float(curves[:, m].std()),
                             "n_runs": len(rs), "_records": rs})
    return rows


@rule("linear_not_worse_at_min_dim")
def linear_not_worse_at_min_dim(df: pd.DataFrame):
    """c17: at the smallest d_T, linear >= both sinusoidal variants in every one of the four panels."""
    fig = df[(df["artifact"] == "fig2") & (df["metric"] == "test_accuracy")].dropna(subset=["mean"])
    if fig.empty:
        return PENDING, "fig2 has no reproduced runs at this scale"
    absent = [p for p in PANELS if p not in set(fig["row_group"])]
    if absent:
        return PENDING, f"fig2 lacks the panel(s) {', '.join(absent)}", fig
    details, ok = [], True
    for panel, g in fig.groupby("row_group"):
        dmin = min(g["column"].astype(int))
        at = g[g["column"].astype(int) == dmin].set_index("row")["mean"]
        if "Linear" not in at or len(at) < 3:
            return PENDING, f"{panel}: not every encoder was run at d_T={dmin}", fig
        others = at.drop("Linear")
        good = bool((at["Linear"] >= others).all())
        ok &= good
        details.append(f"{panel} d_T={dmin}: linear {at['Linear']:.3f} vs " + ", ".join(f"{k.lower()} {v:.3f}" for k, v in others.items()) + (" ok" if good else " NOT >="))
    return (HOLDS if ok else FAILS), "; ".join(details), fig


@rule("attention_closer_at_larger_dim")
def attention_closer_at_larger_dim(df: pd.DataFrame):
    """c18: L1(learned, true) smaller at d_T=8 than d_T=2, and learned rises with m."""
    fig = df[(df["artifact"] == "fig3") & (df["metric"] == "attention_score")].dropna(subset=["mean"])
    groups = {g: sub for g, sub in fig.groupby("row_group")}
    if not {"d_T=2", "d_T=8"} <= set(groups):
        return PENDING, "fig3 needs both d_T=2 and d_T=8 runs", fig

    def curve(g, row):
        sub = groups[g][groups[g]["row"] == row]
        return sub.assign(m=sub["column"].astype(int)).sort_values("m")["mean"].to_numpy()

    l1 = {g: float(np.abs(curve(g, "Learned (linear)") - curve(g, "True")).sum()) for g in ("d_T=2", "d_T=8")}
    rising = {g: bool(np.all(np.diff(curve(g, "Learned (linear)")) > 0)) for g in ("d_T=2", "d_T=8")}
    ok = l1["d_T=8"] < l1["d_T=2"] and all(rising.values())
    detail = (f"L1 to true: d_T=2 {l1['d_T=2']:.4f}, d_T=8 {l1['d_T=8']:.4f}; "
              f"learned increasing in m: d_T=2 {rising['d_T=2']}, d_T=8 {rising['d_T=8']}")
    return (HOLDS if ok else FAILS), detail, fig


@renderer("accuracy_vs_dim")
def accuracy_vs_dim(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 2: test accuracy vs d_T, one line per encoder, band = ±1 std over seeds."""
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.3), sharey=True, constrained_layout=True)
    for ax, panel in zip(axes, PANELS):
        style(ax)
        ax.set_title(panel, fontsize=10)
        ax.set_xscale("log", base=2)
        ax.set_xlabel(r"time-encoding dimension $d_T$")
        sub = df[df["row_group"] == panel]
        if sub.empty:
            ax.text(0.5, 0.5, "not run at this scale", transform=ax.transAxes, ha="center", color="#888888")
            ax.set_xticks([2, 4, 8, 16])
            ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
            continue
        for enc, g in sub.groupby("row", sort=False):
            g = g.assign(d=g["column"].astype(int)).sort_values("d")
            c = COLORS.get(enc)
            ax.plot(g["d"], g["mean"], marker="o", ms=4, lw=1.8, color=c, label=f"{enc} (n={int(g['n_runs'].min())})")
            ax.fill_between(g["d"], g["mean"] - g["std"], g["mean"] + g["std"], color=c, alpha=0.15, lw=0)
        ax.set_xticks(sorted(sub["column"].astype(int).unique()))
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.legend(fontsize=7, frameon=False, loc="lower right")
    axes[0].set_ylabel("test accuracy")
    fig.suptitle("Synthetic event-sequence classification: test accuracy vs $d_T$ (mean ± 1 std over seeds)", fontsize=11)
    stamp(fig, meta)
    return fig


@renderer("attention_by_index")
def attention_by_index(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 3: learned (bars, ±1 std over seeds) vs true (line) attention per event m."""
    groups = sorted(df["row_group"].unique(), key=lambda g: int(g.split("=")[1]))
    fig, axes = plt.subplots(1, max(1, len(groups)), figsize=(4.6 * max(1, len(groups)), 3.4), sharey=True,
                             constrained_layout=True, squeeze=False)
    for ax, grp in zip(axes[0], groups):
        style(ax)
        sub = df[df["row_group"] == grp]
        learned = sub[sub["row"] == "Learned (linear)"].assign(m=lambda d: d["column"].astype(int)).sort_values("m")
        true = sub[sub["row"] == "True"].assign(m=lambda d: d["column"].astype(int)).sort_values("m")
        n = int(learned["n_runs"].min()) if not learned.empty else 0
        ax.bar(learned["m"], learned["mean"], yerr=learned["std"], color=COLORS["Learned (linear)"], alpha=0.75,
               capsize=2, label=f"learned, linear encoder (n={n})")
        ax.plot(true["m"], true["mean"], color=COLORS["True"], marker="D", ms=4, lw=1.5,
                label=r"true: $e^{-\alpha(t-t_m)}$ normalized")
        ax.set_title(f"1-layer autoregressive, ${grp.replace('d_T', 'd_T')}$".replace("$d_T=", "$d_T="), fontsize=10)
        ax.set_xlabel("event index m")
        ax.set_xticks(learned["m"].tolist() or true["m"].tolist())
        ax.legend(fontsize=7, frameon=False, loc="upper left")
    axes[0][0].set_ylabel("average attention score")
    fig.suptitle("Attention of the read-out position over the M events (test sequences)", fontsize=11)
    stamp(fig, meta)
    return fig
