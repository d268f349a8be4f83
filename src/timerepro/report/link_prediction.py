"""Link-prediction tables (linear_time Tables 1, 2, 4, 9; Figure 5) and their claims.

Model selection follows the paper (section 4.1): among the searched hyperparameters (dropout, and
d_ch for the DyGFormer variants) the configuration with the best mean validation AP under the
table's negative sampler is kept; its test AP (x 100, mean and std over seeds) fills the cell.
Win counts use the paper's rule: per (model, dataset) the encoders whose printed mean (2 decimals)
equals the best printed mean all win.
"""

from __future__ import annotations

from collections import defaultdict

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from timerepro.names import ENCODER_LABELS

from .aggregate import PEAK_GPU, PEAK_RSS, TIME_PER_EPOCH, aggregator
from .claims import FAILS, HOLDS, PENDING, rule
from .figures import COLORS, _stamp, _style, renderer

MODEL_LABELS = {"tgat": "TGAT", "dygformer": "DyGFormer", "dygformer_separate": "DyGFormer-separate",
                "dygdecoder": "DyGDecoder", "tgn": "TGN", "cawn": "CAWN"}
DATASET_LABELS = {"uci": "UCI", "wikipedia": "Wikipedia", "enron": "Enron", "reddit": "Reddit", "lastfm": "LastFM",
                  "uslegis": "US Legis"}
SEARCHED = ("dropout", "d_ch")  # the hyperparameters the paper searches (section 4.1)
WINS_COLUMN, WINS_METRIC = "# Wins", "n_dataset_wins"


def _hp(config: dict) -> tuple:
    return tuple((k, config.get(k)) for k in SEARCHED)


def select_by_validation(records: list[dict], val_key: str) -> dict[tuple, list[dict]]:
    """(model, encoder, dataset) -> the seeds of the searched configuration with the best mean `val_key`."""
    cells: dict[tuple, dict[tuple, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        c = r["config"]
        cells[(c["model"], c["encoder"], c["dataset"])][_hp(c)].append(r)
    chosen = {}
    for cell, by_hp in cells.items():
        best = max(sorted(by_hp), key=lambda hp: np.mean([r["metrics"][val_key] for r in by_hp[hp]]))
        chosen[cell] = by_hp[best]
    return chosen


def winners(means: dict[str, float]) -> set[str]:
    """Encoders whose printed (2-decimal) mean equals the best printed mean: ties win together."""
    printed = {k: round(v, 2) for k, v in means.items()}
    top = max(printed.values())
    return {k for k, v in printed.items() if v == top}


def ap_table(records: list[dict], sampler: str, metric: str, labels: dict[str, str] | None = None) -> list[dict]:
    """Cells of test AP x 100 under `sampler`, selected on validation AP under the same sampler, plus wins."""
    labels = labels or ENCODER_LABELS
    chosen = select_by_validation(records, f"val_transductive_{sampler}_ap")
    rows, by_model_dataset = [], defaultdict(dict)
    for (model, encoder, dataset), rs in sorted(chosen.items()):
        values = 100 * np.array([r["metrics"][f"test_transductive_{sampler}_ap"] for r in rs])
        rows.append({"row_group": MODEL_LABELS[model], "row": labels[encoder], "column": DATASET_LABELS.get(dataset, dataset),
                     "metric": metric, "mean": float(values.mean()), "std": float(values.std()),
                     "n_runs": len(rs), "_records": rs,
                     "note": "selected: " + ", ".join(f"{k}={v}" for k, v in _hp(rs[0]["config"]) if v is not None)})
        by_model_dataset[(model, dataset)][encoder] = float(values.mean())
    wins: dict[tuple, int] = defaultdict(int)
    seen: dict[tuple, list[dict]] = defaultdict(list)
    for (model, dataset), means in by_model_dataset.items():
        for enc in means:
            wins[(model, enc)] += enc in winners(means)
            seen[(model, enc)] += chosen[(model, enc, dataset)]
    for (model, enc), n in sorted(wins.items()):
        rows.append({"row_group": MODEL_LABELS[model], "row": labels[enc], "column": WINS_COLUMN, "metric": WINS_METRIC,
                     "mean": float(n), "std": 0.0, "n_runs": len(seen[(model, enc)]), "_records": seen[(model, enc)],
                     "note": "wins per encoder within model group; ties counted for every tied encoder"})
    return rows


@aggregator("lp_ap_random")
def lp_ap_random(records: list[dict]) -> list[dict]:
    """linear_time Tables 1 and 9: test AP under random NS, selected on random-NS validation AP."""
    return ap_table(records, "random", "AP_random_NS_test")


@aggregator("lp_ap_historical")
def lp_ap_historical(records: list[dict]) -> list[dict]:
    """linear_time Table 2: test AP under historical NS, selected on historical-NS validation AP."""
    return ap_table(records, "historical", "AP_historical_NS_test")


@aggregator("lp_ap_cosine_vs_sine_cosine")
def lp_ap_cosine_vs_sine_cosine(records: list[dict]) -> list[dict]:
    """linear_time Table 4: all-cosine ('Cosine') vs sine-cosine pairs, random NS."""
    return ap_table(records, "random", "AP_random_NS_test", labels={"cosine": "Cosine", "sine_cosine": "Sine-cosine"})


# ------------------------------------------------------------------ claims on reproduced cells

def _cells(df: pd.DataFrame, artifact: str, metric: str) -> pd.DataFrame:
    """model x dataset rows, encoder columns, of the reproduced means of one table."""
    t = df[(df["artifact"] == artifact) & (df["metric"] == metric)]
    return t.pivot_table(index=["row_group", "column"], columns="row", values="mean")


def _win_counts(cells: pd.DataFrame) -> dict[str, int]:
    counts = {enc: 0 for enc in cells.columns}
    for _, means in cells.iterrows():
        for enc in winners(means.dropna().to_dict()):
            counts[enc] += 1
    return counts


def _most_wins(df: pd.DataFrame, artifact: str, metric: str, published: str) -> tuple[str, str]:
    cells = _cells(df, artifact, metric)
    if cells.empty or "Linear" not in cells.columns or cells.shape[1] < 2:
        return PENDING, f"{artifact} has no reproduced cells with linear and another encoder at this scale"
    counts = _win_counts(cells)
    ok = all(counts["Linear"] > n for enc, n in counts.items() if enc != "Linear")
    detail = f"wins over {len(cells)} model-dataset cells: " + ", ".join(f"{k} {v}" for k, v in counts.items())
    return (HOLDS if ok else FAILS), f"{detail} (published: {published}); holds when linear wins the most cells"


@rule("linear_most_wins_random")
def linear_most_wins_random(df: pd.DataFrame) -> tuple[str, str]:
    """linear_time c01: under random NS linear is best in more model-dataset cells than either sinusoidal encoder."""
    return _most_wins(df, "table1", "AP_random_NS_test", "Linear 19, Sinusoidal 5, Sinusoidal-scale 2 of 24")


@rule("linear_most_wins_historical")
def linear_most_wins_historical(df: pd.DataFrame) -> tuple[str, str]:
    """linear_time c05: the same under historical NS."""
    return _most_wins(df, "table2", "AP_historical_NS_test", "Linear 18, Sinusoidal 4, Sinusoidal-scale 2 of 24")


@rule("linear_beats_scaled_mostly")
def linear_beats_scaled_mostly(df: pd.DataFrame) -> tuple[str, str]:
    """linear_time c02: linear beats sinusoidal-scale in (nearly) every cell; holds when in more than 3/4 of them."""
    cells = _cells(df, "table1", "AP_random_NS_test")
    if cells.empty or not {"Linear", "Sinusoidal-scale"} <= set(cells.columns):
        return PENDING, "table1 needs linear and sinusoidal-scale runs"
    pair = cells[["Linear", "Sinusoidal-scale"]].dropna()
    n = int((pair["Linear"] > pair["Sinusoidal-scale"]).sum())
    ok = n > 0.75 * len(pair)
    return (HOLDS if ok else FAILS), f"linear > sinusoidal-scale in {n} of {len(pair)} cells (published 22 of 24)"


@rule("scaling_hurts_on_uci")
def scaling_hurts_on_uci(df: pd.DataFrame) -> tuple[str, str]:
    """linear_time c04: on UCI, sinusoidal-scale is below sinusoidal for every model."""
    cells = _cells(df, "table1", "AP_random_NS_test")
    if cells.empty or not {"Sinusoidal", "Sinusoidal-scale"} <= set(cells.columns):
        return PENDING, "table1 needs sinusoidal and sinusoidal-scale runs"
    uci = cells.xs("UCI", level="column", drop_level=True) if "UCI" in cells.index.get_level_values("column") else None
    if uci is None or uci.empty:
        return PENDING, "table1 has no UCI cells"
    below = {m: bool(row["Sinusoidal-scale"] < row["Sinusoidal"]) for m, row in uci.iterrows()}
    detail = "; ".join(f"{m}: {uci.loc[m, 'Sinusoidal-scale']:.2f} vs {uci.loc[m, 'Sinusoidal']:.2f}" for m in below)
    return (HOLDS if all(below.values()) else FAILS), f"UCI sinusoidal-scale vs sinusoidal: {detail}"


# ------------------------------------------------------------------ dimension ablations (Figures 5 and 6)

def _dim_rows(records: list[dict], model_label: str, axis: str, full: int) -> list[dict]:
    """AP x 100 per (encoder, dataset, dimension); the full dimension's cell is Table 1's selected one."""
    by_dim: dict[tuple, list[dict]] = defaultdict(list)
    searched = [r for r in records if r["config"]["experiment"] in ("lp_tgat", "lp_dygformer")]
    for (model, encoder, dataset), rs in select_by_validation(searched, "val_transductive_random_ap").items():
        by_dim[(encoder, dataset, full)] += rs
    for r in records:
        c = r["config"]
        if c["experiment"] not in ("lp_tgat", "lp_dygformer"):
            by_dim[(c["encoder"], c["dataset"], int(c[axis]))].append(r)
    rows = []
    for (encoder, dataset, dim), rs in sorted(by_dim.items()):
        ap = 100 * np.array([r["metrics"]["test_transductive_random_ap"] for r in rs])
        params = np.mean([r["metrics"]["n_parameters"] for r in rs])
        rows.append({"row_group": f"{model_label} {axis}={dim}", "row": ENCODER_LABELS[encoder],
                     "column": DATASET_LABELS.get(dataset, dataset), "metric": "AP_random_NS_test",
                     "mean": float(ap.mean()), "std": float(ap.std()), "n_runs": len(rs), "_records": rs})
        rows.append({"row_group": f"{model_label} {axis}={dim}", "row": ENCODER_LABELS[encoder],
                     "column": DATASET_LABELS.get(dataset, dataset), "metric": "n_parameters",
                     "mean": float(params), "std": 0.0, "n_runs": len(rs), "_records": rs})
    return rows


def _cell(rows: list[dict], group: str, row: str, column: str, metric: str) -> dict | None:
    for r in rows:
        if (r["row_group"], r["row"], r["column"], r["metric"]) == (group, row, column, metric):
            return r
    return None


@aggregator("lp_tgat_dim")
def lp_tgat_dim(records: list[dict]) -> list[dict]:
    """linear_time Figure 5: TGAT AP and parameters at d_T in {100, 50, 2}, plus the figures the text quotes."""
    rows = _dim_rows(records, "TGAT", "d_T", 100)
    derived = []
    datasets = sorted({r["column"] for r in rows})
    for enc in ("Sinusoidal", "Linear"):  # largest AP drop from d_T = 100, over datasets and d_T in {50, 2}
        drops = [(full["mean"] - low["mean"], ds, full["_records"] + low["_records"])
                 for ds in datasets for d in (50, 2)
                 if (full := _cell(rows, "TGAT d_T=100", enc, ds, "AP_random_NS_test"))
                 and (low := _cell(rows, f"TGAT d_T={d}", enc, ds, "AP_random_NS_test"))]
        if drops:
            drop, ds, rs = max(drops, key=lambda x: x[0])
            derived.append({"row_group": "TGAT", "row": enc, "column": ds, "metric": "max_AP_drop_reducing_dT_from_100",
                            "mean": float(drop), "std": 0.0, "n_runs": len(rs), "_records": rs})
    pairs = [(lin, sin) for ds in datasets
             if (lin := _cell(rows, "TGAT d_T=2", "Linear", ds, "AP_random_NS_test"))
             and (sin := _cell(rows, "TGAT d_T=100", "Sinusoidal", ds, "AP_random_NS_test"))]
    if pairs:
        rs = [r for lin, sin in pairs for r in lin["_records"] + sin["_records"]]
        derived.append({"row_group": "TGAT", "row": "Linear d_T=2 vs Sinusoidal d_T=100", "column": "all",
                        "metric": "n_datasets_linear_dT2_higher_AP", "mean": float(sum(l["mean"] > s["mean"] for l, s in pairs)),
                        "std": 0.0, "n_runs": len(rs), "_records": rs, "note": f"of {len(pairs)} datasets"})
        lin_p = np.mean([_cell(rows, "TGAT d_T=2", "Linear", l["column"], "n_parameters")["mean"] for l, _ in pairs])
        sin_p = np.mean([_cell(rows, "TGAT d_T=100", "Sinusoidal", s["column"], "n_parameters")["mean"] for _, s in pairs])
        derived.append({"row_group": "TGAT", "row": "Linear d_T=2", "column": "all", "metric": "param_saving_pct_vs_dT100",
                        "mean": float(100 * (1 - lin_p / sin_p)), "std": 0.0, "n_runs": len(rs), "_records": rs})
    return rows + derived


@aggregator("lp_dygformer_dtc")
def lp_dygformer_dtc(records: list[dict]) -> list[dict]:
    """linear_time Figure 6: DyGFormer AP and parameters at d_tc in {50, 24, 2}; saving of linear d_tc=2 vs sinusoidal 50."""
    rows = _dim_rows(records, "DyGFormer", "d_tc", 50)
    derived = []
    for ds in sorted({r["column"] for r in rows}):
        lin = _cell(rows, "DyGFormer d_tc=2", "Linear", ds, "n_parameters")
        sin = _cell(rows, "DyGFormer d_tc=50", "Sinusoidal", ds, "n_parameters")
        if lin and sin:
            derived.append({"row_group": "DyGFormer", "row": "Linear", "column": ds, "metric": "param_saving_pct",
                            "mean": float(100 * (1 - lin["mean"] / sin["mean"])), "std": 0.0,
                            "n_runs": lin["n_runs"] + sin["n_runs"], "_records": lin["_records"] + sin["_records"],
                            "note": "linear d_tc=2 vs sinusoidal d_tc=50"})
    return rows + derived


# ------------------------------------------------------------------ cost (Tables 7 and 8)

def _cost(records: list[dict], metric: str, value) -> list[dict]:
    rows = []
    for (model, encoder, dataset), rs in sorted(select_by_validation(records, "val_transductive_random_ap").items()):
        vals = [v for r in rs if (v := value(r)) is not None]
        if vals:
            rows.append({"row_group": MODEL_LABELS[model], "row": ENCODER_LABELS[encoder],
                         "column": DATASET_LABELS.get(dataset, dataset), "metric": metric, "mean": float(np.mean(vals)),
                         "std": float(np.std(vals)), "n_runs": len(vals), "_records": rs})
    return rows


@aggregator("lp_epoch_time")
def lp_epoch_time(records: list[dict]) -> list[dict]:
    """linear_time Table 7: training seconds per epoch of the Table 1 configurations (on this machine's device)."""
    return _cost(records, TIME_PER_EPOCH, lambda r: r["metrics"].get("epoch_time_s"))


@aggregator("lp_peak_memory")
def lp_peak_memory(records: list[dict]) -> list[dict]:
    """linear_time Table 8: peak GPU memory in GB when run on a GPU; on CPU the process's peak RSS, under its own name."""
    gpu = _cost(records, PEAK_GPU, lambda r: (r["metrics"].get("peak_gpu_memory_mb") or None) and
                r["metrics"]["peak_gpu_memory_mb"] / 1024)
    cpu = _cost(records, PEAK_RSS, lambda r: None if r["metrics"].get("peak_gpu_memory_mb")
                else r["metrics"].get("peak_rss_mb", 0) / 1024)
    return gpu + cpu


# ------------------------------------------------------------------ figures

@renderer("ap_vs_dimension")
def ap_vs_dimension(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """linear_time Figures 5 and 6: test AP vs the time dimension per dataset (lines per encoder), parameters below."""
    ap = df[df["metric"] == "AP_random_NS_test"]
    params = df[df["metric"] == "n_parameters"]
    parsed = ap["row_group"].str.extract(r"^(?P<model>.+) (?P<axis>d_\w+)=(?P<dim>\d+)$")
    ap = ap.assign(dim=parsed["dim"].astype(int), axis=parsed["axis"], model=parsed["model"])
    datasets = sorted(ap["column"].unique())
    fig, axes = plt.subplots(2, len(datasets), figsize=(3.2 * len(datasets) + 0.5, 5.4), squeeze=False,
                             constrained_layout=True, gridspec_kw={"height_ratios": [3, 1.4]})
    axis_name = ap["axis"].iloc[0] if len(ap) else "d"
    for j, ds in enumerate(datasets):
        top, bottom = axes[0, j], axes[1, j]
        for ax in (top, bottom):
            _style(ax)
            ax.set_xscale("log", base=2)
        top.set_title(ds, fontsize=10)
        for enc, g in ap[ap["column"] == ds].groupby("row", sort=False):
            g = g.sort_values("dim")
            c = COLORS.get(enc)
            top.errorbar(g["dim"], g["mean"], yerr=g["std"], marker="o", ms=4, lw=1.8, capsize=2, color=c,
                         label=f"{enc} (n={int(g['n_runs'].min())})")
            p = params[(params["column"] == ds) & (params["row"] == enc)]
            p = p.assign(dim=p["row_group"].str.extract(r"=(\d+)$")[0].astype(int)).sort_values("dim")
            bottom.plot(p["dim"], p["mean"] / 1e3, marker="s", ms=3, lw=1.2, color=c)
        dims = sorted(ap["dim"].unique())
        for ax in (top, bottom):
            ax.set_xticks(dims)
            ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        bottom.set_xlabel(f"${axis_name.replace('d_', 'd_{')}}}$")
        top.legend(fontsize=7, frameon=False)
    axes[0, 0].set_ylabel("test AP x 100 (random NS)")
    axes[1, 0].set_ylabel("parameters (k)")
    model = ap["model"].iloc[0] if len(ap) else ""
    fig.suptitle(f"{model}: test AP and parameter count as the time dimension shrinks (mean ± 1 std over seeds)",
                 fontsize=11)
    _stamp(fig, meta)
    return fig


# ------------------------------------------------------------------ attention maps (Figures 7-12)

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
    """linear_time Figures 7-12: mean last-layer attention per (t - t_q, t - t_k) cell, per model, encoder,
    dataset and side, over the recorded test edges of the selected configuration's seeds. Cells are quantile
    bins of log(1 + dt), shared by both axes; a dataset with few distinct differences (US Legis) gets one
    cell per difference, i.e. the paper's per-pair average."""
    rows = []
    for (model, encoder, dataset), rs in sorted(select_by_validation(records, "val_transductive_random_ap").items()):
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
                                              f"{DATASET_LABELS.get(dataset, dataset)}; {side_name}",
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
            _style(ax)
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
    _stamp(fig, meta)
    return fig


@renderer("attention_map_source")
def attention_map_source(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """linear_time Figure 7: source-node histories."""
    return _attention_panels(df, meta, ("source",), "Last-layer attention vs query and key time differences (source nodes)")


@renderer("attention_map_destination")
def attention_map_destination(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """linear_time Figure 8: destination-node histories."""
    return _attention_panels(df, meta, ("destination",),
                             "Last-layer attention vs query and key time differences (destination nodes)")


@renderer("attention_map_both")
def attention_map_both(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """linear_time Figures 9-12: one column per dataset, source nodes on top, destination nodes below."""
    return _attention_panels(df, meta, SIDE_NAMES, "Last-layer attention vs query and key time differences")


# ------------------------------------------------------------------ time vs positional encoding (Table 6)

@aggregator("lp_time_vs_position")
def lp_time_vs_position(records: list[dict]) -> list[dict]:
    """linear_time Table 6: sinusoidal time encoding (Table 1's cells) vs a sinusoidal encoding of event
    recency indices, test AP x 100 under random NS, and the change Position - Time."""
    time_recs = [r for r in records if r["config"].get("time_input", "time") == "time"]
    pos_recs = [r for r in records if r["config"].get("time_input") == "position"]
    rows = []
    for label, recs in (("Time", time_recs), ("Position", pos_recs)):
        for row in ap_table(recs, "random", "AP_random_NS_test"):
            if row["metric"] == "AP_random_NS_test":
                rows.append(row | {"row": label})
    time_cells = {(r["row_group"], r["column"]): r for r in rows if r["row"] == "Time"}
    for r in [r for r in rows if r["row"] == "Position"]:
        t = time_cells.get((r["row_group"], r["column"]))
        if t:
            rows.append({"row_group": r["row_group"], "row": "Position", "column": r["column"],
                         "metric": "AP_change_vs_time_encoding", "mean": r["mean"] - t["mean"], "std": 0.0,
                         "n_runs": r["n_runs"] + t["n_runs"], "_records": r["_records"] + t["_records"]})
    return rows


# ------------------------------------------------------------------ node classification (Table 10)

@aggregator("nc_auc")
def nc_auc(records: list[dict]) -> list[dict]:
    """linear_time Table 10: test ROC-AUC x 100 of the node-classification head, mean and std over seeds."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        c = r["config"]
        groups[(c["model"], c["encoder"], c["dataset"])].append(r)
    rows = []
    for (model, encoder, dataset), rs in sorted(groups.items()):
        auc = 100 * np.array([r["metrics"]["test_auc"] for r in rs])
        rows.append({"row_group": MODEL_LABELS[model], "row": ENCODER_LABELS[encoder],
                     "column": DATASET_LABELS.get(dataset, dataset), "metric": "AUROC_node_classification_test",
                     "mean": float(auc.mean()), "std": float(auc.std()), "n_runs": len(rs), "_records": rs})
    return rows


@rule("node_classification_encoder_preference")
def node_classification_encoder_preference(df: pd.DataFrame) -> tuple[str, str]:
    """linear_time c13: TGAT better with linear, DyGFormer better with sinusoidal, on both datasets."""
    cells = _cells(df, "table10", "AUROC_node_classification_test")
    want = {"TGAT": ("Linear", "Sinusoidal"), "DyGFormer": ("Sinusoidal", "Linear")}
    if cells.empty or not {"Linear", "Sinusoidal"} <= set(cells.columns):
        return PENDING, "table10 needs linear and sinusoidal runs"
    parts, ok = [], True
    for (model, ds), row in cells.iterrows():
        if model not in want or row[["Linear", "Sinusoidal"]].isna().any():
            continue
        better, worse = want[model]
        good = bool(row[better] > row[worse])
        ok &= good
        parts.append(f"{model} {ds}: linear {row['Linear']:.2f} vs sinusoidal {row['Sinusoidal']:.2f}" + ("" if good else " (not as claimed)"))
    if not parts:
        return PENDING, "table10 has no TGAT or DyGFormer cells with both encoders"
    return (HOLDS if ok else FAILS), "; ".join(parts)
