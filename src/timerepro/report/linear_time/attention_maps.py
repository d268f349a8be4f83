"""linear_time Figures 7-12: last-layer attention of DyGFormer-separate and DyGDecoder against the query's and the
key's time differences, from the attention records of the selected configurations' runs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from timerepro.names import ENCODER_LABELS, MODEL_LABELS, dataset_label

from ..aggregate import aggregator
from ..figures import plt, renderer, stamp, style
from ..link_prediction import select_by_validation
from . import PAPER

SIDE_NAMES = ("source", "destination")
ATTENTION_BINS = 12
# row_group of an attention cell: "model; encoder; dataset; side" (no "|": the tables are Markdown)


def _bins(values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Quantile bins of log(1 + dt): bin index per value and the bins' centres in time units."""
    logs = np.log1p(np.maximum(values, 0))
    edges = np.unique(np.quantile(logs, np.linspace(0, 1, n + 1)))
    if len(edges) < 2:
        edges = np.array([logs.min(), logs.min() + 1e-9])
    idx = np.clip(np.searchsorted(edges, logs, side="right") - 1, 0, len(edges) - 2)
    centres = np.expm1((edges[:-1] + edges[1:]) / 2)
    return idx, centres


@aggregator("lp_attention_map")
def lp_attention_map(records: list[dict]) -> list[dict]:
    """Figures 7-12: mean last-layer attention per (t - t_q, t - t_k) cell, per model, encoder, dataset and side,
    over the recorded test edges of the selected configuration's seeds. Cells are quantile bins of log(1 + dt),
    shared by both axes; a dataset with few distinct differences (US Legis) gets one cell per difference, i.e. the
    paper's per-pair average."""
    rows = []
    for (model, encoder, dataset), rs in sorted(select_by_validation(records, "random").items()):
        files = [np.load(r["dir"] / "attention_records.npz") for r in rs if (r["dir"] / "attention_records.npz").is_file()]
        if not files:
            continue
        cols = {k: np.concatenate([f[k] for f in files]) for k in ("side", "dt_query", "dt_key", "score")}
        for side, side_name in enumerate(SIDE_NAMES):
            keep = cols["side"] == side
            if not keep.any():
                continue
            q, k, score = cols["dt_query"][keep], cols["dt_key"][keep], cols["score"][keep]
            idx, centres = _bins(np.concatenate([q, k]), ATTENTION_BINS)
            iq, ik = idx[: len(q)], idx[len(q):]
            for a in np.unique(iq):
                for b in np.unique(ik[iq == a]):
                    cell = score[(iq == a) & (ik == b)]
                    rows.append({"row_group": f"{MODEL_LABELS[model]}; {ENCODER_LABELS[encoder]}; "
                                              f"{dataset_label(dataset, PAPER)}; {side_name}",
                                 "row": f"{centres[a]:.6g}", "column": f"{centres[b]:.6g}",
                                 "metric": "attention_score_binned", "mean": float(cell.mean()),
                                 "std": float(cell.std()), "n_runs": len(rs), "_records": rs,
                                 "note": f"{len(cell)} query-key pairs"})
    return rows


def _attention_panels(df: pd.DataFrame, meta: dict, sides: tuple[str, ...], title: str) -> plt.Figure:
    d = df[df["metric"] == "attention_score_binned"]
    parts = d["row_group"].str.split("; ", regex=False, expand=True) if len(d) else pd.DataFrame(columns=range(4))
    d = d.assign(model=parts[0], encoder=parts[1], dataset=parts[2], side=parts[3])
    d = d[d["side"].isin(sides)]
    columns = sorted({(m, e, ds) for m, e, ds in zip(d["model"], d["encoder"], d["dataset"])},
                     key=lambda x: (x[2], x[0], x[1] != "Sinusoidal"))
    fig, axes = plt.subplots(len(sides), max(1, len(columns)), figsize=(3.1 * max(1, len(columns)) + 1, 2.9 * len(sides)),
                             squeeze=False, constrained_layout=True)
    vmax = float(d["mean"].max()) if len(d) else 1.0
    scatter = None
    for j, (model, enc, ds) in enumerate(columns):
        for i, side in enumerate(sides):
            ax = axes[i, j]
            style(ax)
            sub = d[(d["model"] == model) & (d["encoder"] == enc) & (d["dataset"] == ds) & (d["side"] == side)]
            x, y = sub["column"].astype(float) + 1, sub["row"].astype(float) + 1  # +1: dt = 0 on a log axis
            scatter = ax.scatter(x, y, c=sub["mean"], cmap="viridis", vmin=0, vmax=vmax, s=60, marker="s")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{model}, {enc}\n{ds}, {side} nodes", fontsize=9)
            ax.set_xlabel(r"$1 + t - t_k$ (key)", fontsize=8)
            ax.set_ylabel(r"$1 + t - t_q$ (query)", fontsize=8)
    if not columns:
        axes[0, 0].text(0.5, 0.5, "not run at this scale", transform=axes[0, 0].transAxes, ha="center", color="#888888")
    if scatter is not None:
        fig.colorbar(scatter, ax=axes, shrink=0.8, label="mean attention score")
    fig.suptitle(title, fontsize=11)
    stamp(fig, meta)
    return fig


@renderer("attention_map_source")
def attention_map_source(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 7: source-node histories."""
    return _attention_panels(df, meta, ("source",), "Last-layer attention vs query and key time differences (source nodes)")


@renderer("attention_map_destination")
def attention_map_destination(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 8: destination-node histories."""
    return _attention_panels(df, meta, ("destination",),
                             "Last-layer attention vs query and key time differences (destination nodes)")


@renderer("attention_map_both")
def attention_map_both(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figures 9-12: one column per dataset, source nodes on top, destination nodes below."""
    return _attention_panels(df, meta, SIDE_NAMES, "Last-layer attention vs query and key time differences")
