"""Figure renderers by name (params/<paper>.yaml `render:`): aggregated rows in, PNG + PDF out."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

RENDERERS: dict[str, Callable[[pd.DataFrame, dict], plt.Figure]] = {}
# Okabe-Ito colours: distinguishable with every common colour-vision deficiency.
COLORS = {"Linear": "#0072B2", "Sinusoidal": "#D55E00", "Sine-cosine": "#009E73", "Sinusoidal-scale": "#CC79A7",
          "Learned (linear)": "#0072B2", "True": "#000000"}
PANELS = ["1-layer full attention", "1-layer autoregressive", "2-layer full attention", "2-layer autoregressive"]


def renderer(name: str):
    def deco(fn):
        RENDERERS[name] = fn
        return fn

    return deco


def _style(ax) -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(True, color="#e5e5e5", linewidth=0.8)
    ax.set_axisbelow(True)


def _stamp(fig, meta: dict) -> None:
    fig.text(0.99, -0.04, f"reproduced · scale={meta['scale']} · {meta['data']}", ha="right", va="bottom",
             fontsize=7, color="#666666")


@renderer("accuracy_vs_dim")
def accuracy_vs_dim(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """linear_time Figure 2: test accuracy vs d_T, one line per encoder, band = ±1 std over seeds."""
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.3), sharey=True, constrained_layout=True)
    for ax, panel in zip(axes, PANELS):
        _style(ax)
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
    _stamp(fig, meta)
    return fig


@renderer("attention_by_index")
def attention_by_index(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """linear_time Figure 3: learned (bars, ±1 std over seeds) vs true (line) attention per event m."""
    groups = sorted(df["row_group"].unique(), key=lambda g: int(g.split("=")[1]))
    fig, axes = plt.subplots(1, max(1, len(groups)), figsize=(4.6 * max(1, len(groups)), 3.4), sharey=True,
                             constrained_layout=True, squeeze=False)
    for ax, grp in zip(axes[0], groups):
        _style(ax)
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
    _stamp(fig, meta)
    return fig


def save(fig: plt.Figure, stem: Path) -> list[Path]:
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for ext in ("png", "pdf"):
        tmp = stem.with_name(f".{stem.name}.tmp.{ext}")
        fig.savefig(tmp, dpi=160 if ext == "png" else None, bbox_inches="tight")
        final = stem.with_suffix(f".{ext}")
        tmp.replace(final)
        out.append(final)
    plt.close(fig)
    return out
