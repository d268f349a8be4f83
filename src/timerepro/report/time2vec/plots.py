"""The renderers of the metric-curve figures (Figures 1, 2, 5-14): one panel per dataset and metric, a band of
one standard deviation over runs, and a note where the data is a stand-in."""

from __future__ import annotations

import math
import textwrap

import matplotlib
import pandas as pd

from ..figures import PALETTE, plt, renderer, stamp, style
from .curves import FIG5_PANELS, METRIC_NAMES


UNOBTAINABLE_NOTE = "CiteULike is unobtainable ({reason}): these panels come from its labelled stand-in"


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


def _lock():
    from timerepro.data.lock import load_lock

    return load_lock()


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
