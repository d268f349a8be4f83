"""dyg_mamba's figure renderers (Figures 1, 3-11): one colour per model in every figure."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from ..aggregate import TIME_PER_EPOCH
from ..figures import plt, renderer, stamp, style
from .common import ABLATION_VARIANTS, OURS, PEAK_MEM, RIVAL, TIME_STEP, VARIANT_LABELS


COLORS = {"DyG-Mamba": "#D55E00", "DyGFormer": "#0072B2", "GraphMixer": "#009E73", "TGN": "#CC79A7", "TCL": "#E69F00",
          "TGAT": "#56B4E9", "CAWN": "#F0E442", "vMamba": "#882255", "JODIE": "#999999", "DyRep": "#000000", "EdgeBank": "#777777"}


def _empty(ax, text="not run at this scale") -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", color="#888888")


def _panels(n: int, width: float = 4.2, height: float = 3.3):
    fig, axes = plt.subplots(1, max(1, n), figsize=(width * max(1, n), height), squeeze=False, constrained_layout=True)
    for ax in axes[0]:
        style(ax)
    return fig, axes[0]


def _finish(fig, title: str, meta: dict) -> plt.Figure:
    """The figure's title and the caption (scale, data) under it."""
    fig.suptitle(title, fontsize=10)
    stamp(fig, meta)
    return fig


def _figure(keys: list, draw: Callable, title: str, meta: dict, width: float = 4.2) -> plt.Figure:
    """One panel per key, drawn by `draw(ax, key)`; "not run at this scale" in one panel when there is no key."""
    fig, axes = _panels(len(keys), width)
    for ax, key in zip(axes, keys):
        draw(ax, key)
    if not keys:
        _empty(axes[0])
    return _finish(fig, title, meta)


def _bars(ax, sub: pd.DataFrame, groups: list[str], series: list[str]) -> None:
    width = 0.8 / max(1, len(series))
    for k, s in enumerate(series):
        g = sub[sub["row"] == s].set_index("column").reindex(groups)
        ax.bar(np.arange(len(groups)) + k * width, g["mean"], width, yerr=g["std"].fillna(0), capsize=2,
               color=COLORS.get(s.split(" ")[0]), alpha=1.0 - 0.18 * (k % 4), label=s)
    ax.set_xticks(np.arange(len(groups)) + 0.4 - width / 2)
    ax.set_xticklabels(groups, fontsize=8)


def _lines(ax, sub: pd.DataFrame, x: type) -> None:
    """One line per model (row) over the columns read as numbers of type `x`, with the std as error bars."""
    for model, g in sub.groupby("row"):
        g = g.assign(x=g["column"].astype(x)).sort_values("x")
        ax.errorbar(g["x"], g["mean"], yerr=g["std"], marker="o", capsize=2, color=COLORS.get(model), label=model)


def _settings(values) -> list[str]:
    return [s for s in ("transductive", "inductive") if s in set(values)]


@renderer("dm_fig1_bars")
def dm_fig1_bars(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 1: AP with and without time information per dataset (bars), one panel per setting; p-values noted."""
    ap = df[df["metric"] == "AP_random"]

    def draw(ax, setting):
        sub = ap[ap["row_group"] == setting]
        _bars(ax, sub, sorted(sub["column"].unique()), sorted(sub["row"].unique()))
        p = df[(df["metric"] == "p_value_ttest") & (df["row_group"] == setting) & df["row"].str.endswith("w/o time")]
        ax.set_title(f"{setting}; p(with vs w/o time): " + ", ".join(f"{r.row.split(' vs ')[0]} {r.column} {r.mean:.2g}"
                                                                         for r in p.itertuples())[:110], fontsize=7)
        ax.set_ylabel("test AP x 100 (random NS)")
        ax.legend(fontsize=6, frameon=False, ncol=2)

    title = "Figure 1: with vs without time information (mean ± std over runs)"
    return _figure(_settings(ap["row_group"]), draw, title, meta, 6.0)


@renderer("dm_fig3_cost")
def dm_fig3_cost(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 3: time per step and peak memory vs L (log-log), fitted exponents in the legend."""
    def draw(ax, panel):
        metric, label = panel
        sub = df[(df["metric"] == metric) & (df["column"] != "growth exponent")]
        for model, g in sub.groupby("row"):
            g = g.assign(L=g["column"].astype(int)).sort_values("L")
            slope = df[(df["row"] == model) & (df["metric"] == f"growth_exponent_{metric}")]["mean"]
            ax.plot(g["L"], g["mean"], marker="o", color=COLORS.get(model),
                    label=f"{model} (slope {slope.iloc[0]:.2f})" if len(slope) else model)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length L")
        ax.set_ylabel(label)
        ax.legend(fontsize=7, frameon=False)

    return _figure([(TIME_STEP, "seconds per training step"), (PEAK_MEM, "peak memory (MB)")], draw,
                   "Figure 3: cost vs sequence length, no patching (this machine)", meta)


@renderer("dm_bubbles")
def dm_bubbles_render(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figures 4 and 10: x = seconds per epoch, y = AP, bubble area = parameter size, one panel per dataset."""
    def draw(ax, ds):
        sub = df[df["row_group"] == ds].pivot_table(index="row", columns="metric", values="mean")
        for model, row in sub.iterrows():
            if pd.isna(row.get(TIME_PER_EPOCH)) or pd.isna(row.get("AP_transductive_random")):
                continue
            size = 40 + 400 * row.get("param_size_MB", 0) / max(sub.get("param_size_MB", pd.Series([1])).max(), 1e-9)
            ax.scatter(row[TIME_PER_EPOCH], row["AP_transductive_random"], s=size, alpha=0.6, color=COLORS.get(model))
            ax.annotate(f"{model}\n{row.get('param_size_MB', 0):.2f} MB", (row[TIME_PER_EPOCH], row["AP_transductive_random"]),
                        fontsize=6, ha="center")
        ax.set_xscale("log")
        ax.set_title(f"{ds} ({df[df['row_group'] == ds]['column'].iloc[0]})", fontsize=9)
        ax.set_xlabel("training seconds per epoch (this machine)")
        ax.set_ylabel("test AP x 100")

    return _figure(sorted(df["row_group"].unique()), draw,
                   "AP vs training time per epoch; bubble area = trainable parameters (MB)", meta)


@renderer("dm_ablation_bars")
def dm_ablation_bars(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figures 5 and 11: AP of DyG-Mamba and its three ablations, per dataset, transductive and inductive."""
    order = [VARIANT_LABELS[v] for v in ABLATION_VARIANTS]

    def draw(ax, setting):
        sub = df[df["row_group"] == setting]
        _bars(ax, sub, sorted(sub["column"].unique()), [o for o in order if o in set(sub["row"])])
        ax.set_title(setting, fontsize=9)
        ax.set_ylabel("test AP x 100 (random NS)")
        ax.legend(fontsize=7, frameon=False)

    return _figure(_settings(df["row_group"]), draw, "Ablations: time-span, selective mechanism, cross-attention",
                   meta, 5.0)


@renderer("dm_fig6")
def dm_fig6_render(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 6: (A) average AUC bars, (B) normalised cosine similarity to the target over u's positions, (C-D)
    last vs second-last hidden-state similarity heatmaps."""
    fig, axes = _panels(4, 3.6)
    a = df[(df["row_group"] == "A") & (df["metric"] == "avg_AUC")]
    if a.empty:
        _empty(axes[0])
    else:
        for k, model in enumerate((RIVAL, OURS)):
            g = a[a["column"] == model].set_index("row")
            tasks = sorted(a["row"].unique())
            axes[0].bar(np.arange(len(tasks)) + 0.4 * k, g.reindex(tasks)["mean"], 0.4, color=COLORS[model], label=model)
        axes[0].set_xticks(np.arange(len(tasks)) + 0.2)
        axes[0].set_xticklabels([t.replace("dynamic_", "").replace("_", " ") for t in tasks], fontsize=7)
        axes[0].legend(fontsize=7, frameon=False)
        axes[0].set_title("(A) average AUC x 100", fontsize=9)
    b = df[(df["row_group"] == "B") & (df["metric"] == "cosine_similarity_to_target_normalised")]
    for model, g in b.groupby("row"):
        g = g.assign(i=g["column"].astype(int)).sort_values("i")
        axes[1].plot(g["i"], g["mean"], marker="o", color=COLORS.get(model), label=model)
    axes[1].set_title("(B) similarity to the target (normalised)", fontsize=9)
    axes[1].set_xlabel("position in u's sequence: u, then its history oldest first (DyGFormer: in patches)", fontsize=7)
    if b.empty:
        _empty(axes[1])
    else:
        axes[1].legend(fontsize=7, frameon=False)
    for ax, model in zip(axes[2:], (OURS, RIVAL)):
        c = df[df["row_group"] == f"C-D {model}"]
        if c.empty:
            _empty(ax)
            continue
        n = int(c["row"].astype(int).max())
        mat = np.full((n, n), np.nan)
        for r in c.itertuples():
            mat[int(r.row) - 1, int(r.column) - 1] = r.mean
        ax.grid(False)
        im = ax.imshow(mat, cmap="viridis", vmin=-1, vmax=1)
        ax.set_title(f"({'C' if model == OURS else 'D'}) {model}: last vs second-last", fontsize=9)
        fig.colorbar(im, ax=ax, shrink=0.7)
    return _finish(fig, "Figure 6: average AUC and the case study", meta)


@renderer("dm_fig7_lines")
def dm_fig7_lines(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 7: AP vs sequence length (log2 axis), one line per model."""
    def draw(ax, ds):
        _lines(ax, df[df["row_group"] == ds], int)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length")
        ax.set_ylabel("test AP x 100")
        ax.set_title(ds, fontsize=9)
        ax.legend(fontsize=7, frameon=False)

    return _figure(sorted(df["row_group"].unique()), draw, "Figure 7: sensitivity to the sequence length", meta)


@renderer("dm_noise_lines")
def dm_noise_lines(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figures 8 and 9: AP vs the ratio of noisy neighbours (the authors' replacement by default, docs/dyg_mamba.md M08),
    one panel per dataset."""
    def draw(ax, ds):
        _lines(ax, df[df["row_group"] == ds], float)
        ax.set_xlabel("noise ratio")
        ax.set_ylabel("test AP x 100")
        ax.set_title(ds, fontsize=9)
        ax.legend(fontsize=7, frameon=False)

    return _figure(sorted(df["row_group"].unique()), draw, "Robustness to noisy neighbours (evaluation only)", meta)
