"""swinit's tables (1: link prediction and parameters, 2: seconds per epoch, 3: node classification, 4: the
input x memory-cell ablation) and the claim rules c01-c08.

Row keys follow params/published/published_values.csv exactly, so each published number sits beside the
reproduced one. Model selection follows the paper (6.1): per model, dataset and setting the learning rate with
the best mean validation AP of that setting is kept; its test AP ("precision", x 100; docs/swinit.md) and
ROC-AUC fill the cell, mean and std over seeds. A paper model without runs (the memory-family baselines until
they are registered) gets placeholder cells that the tables print as not yet reproduced. Claim rules read only
reproduced cells; a claim that a model beats every baseline fails as soon as the reproduced baselines refute it
and cannot be evaluated yet while a baseline it names is missing.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd

from . import published
from timerepro import metric_keys as mk
from timerepro.names import MODEL_LABELS, dataset_label

from .aggregate import TIME_PER_EPOCH, aggregator
from .claims import FAILS, HOLDS, PENDING, rule
from .floors import edgebank_choice
from .rows import values_row
from .tables import NOT_YET

PAPER = "swinit"
# model registry name -> row label as printed: names.MODEL_LABELS, with JODIE's and TGN's memory cell named
PRINTED_MODELS = {**{m: MODEL_LABELS[m] for m in ("dyrep", "jodie", "jodie_gru", "tgn", "swinit_mlp", "swinit_gru")},
                  "jodie": "JODIE-rnn", "tgn": "TGN-gru"}
MODELS = list(PRINTED_MODELS.values())
BASELINES = ["DyRep", "JODIE-rnn", "JODIE-gru", "TGN-gru"]
OURS = ["SWINIT-mlp", "SWINIT-GRU"]
DATASETS = [dataset_label(d, PAPER) for d in ("jodie_wikipedia", "jodie_reddit", "jodie_mooc")]
SETTINGS = ("transductive", "inductive")
AP, AUC, PARAMS, NC_AUC = ("precision_link_prediction", "ROC_AUC_link_prediction", "n_parameters",
                           "ROC_AUC_node_classification")
PARAMS_COLUMN, SPEED, NC_GROUP, ABLATION = "# parameters", "training speed", "node classification", "ablation (Wikipedia)"
INPUT_LABELS = {"raw": "raw", "raw_trsvd": "raw+trSVD", "trsvd": "trSVD"}  # Table 4's row prefixes
TEST_AUC = mk.node_classification("test", "auc")  # Tables 3, 4: the frozen encoder's node-classification AUC
NOT_RUN = f"{NOT_YET}: no completed run of this model at this scale"
# EdgeBank is not in the paper: its row in Table 1 is the floor of every link-prediction cell (issue 15)
EDGEBANK = "EdgeBank (floor)"


def _model(config: dict) -> str:
    return PRINTED_MODELS.get(config["model"], config["model"])


def _dataset(config: dict) -> str:
    return dataset_label(config["dataset"], PAPER)


def _input(config: dict) -> str:
    return config.get("spectral_input", "trsvd")


def _setting(config: dict) -> str:
    return config.get("monitor_setting", "transductive")


def select_lr(records: list[dict], key) -> dict[tuple, list[dict]]:
    """key(record) -> cell; per cell the seeds of the lr with the best mean validation AP of the run's setting."""
    cells: dict[tuple, dict[float, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        cells[key(r)][float(r["config"]["lr"])].append(r)
    val = lambda r: r["metrics"][mk.link_prediction("val", _setting(r["config"]), "random", "ap")]
    return {cell: by_lr[max(sorted(by_lr), key=lambda lr: np.mean([val(r) for r in by_lr[lr]]))]
            for cell, by_lr in cells.items()}


def _placeholders(rows: list[dict], groups, labels, cells: list[tuple[str, str]]) -> list[dict]:
    """A NaN cell (printed as not yet reproduced) for every (group, row label, (column, metric)) without a row."""
    have = {(r["row_group"], r["row"], r["column"], r["metric"]) for r in rows}
    return [{"row_group": g, "row": m, "column": c, "metric": metric, "mean": float("nan"), "std": float("nan"),
             "n_runs": 0, "_records": [], "note": NOT_RUN}
            for g in groups for m in labels for c, metric in cells if (g, m, c, metric) not in have]


def _grid(metrics: list[str]) -> list[tuple[str, str]]:
    """(column, metric) of every dataset x metric pair."""
    return [(d, m) for d in DATASETS for m in metrics]


def _lp_cells(records: list[dict]) -> dict[tuple, list[dict]]:
    """(setting, model, dataset) -> selected seeds, TRSVD input only (Table 1's models; EdgeBank apart)."""
    main = [r for r in records if _input(r["config"]) == "trsvd" and r["config"]["model"] != "edgebank"]
    return select_lr(main, lambda r: (_setting(r["config"]), _model(r["config"]), _dataset(r["config"])))


@aggregator("swinit_table1")
def swinit_table1(records: list[dict]) -> list[dict]:
    """Table 1: test AP ("precision") and ROC-AUC x 100 per setting, model and dataset (lr selected on the setting's
    validation AP), and the parameter count of the built model (Wikipedia's; every dataset's in the note: the
    framelet filter store Theta has one entry per node and band)."""
    rows, params = [], defaultdict(dict)
    for (setting, model, dataset), rs in sorted(_lp_cells(records).items()):
        lr = rs[0]["config"]["lr"]
        for metric, key in ((AP, "ap"), (AUC, "auc")):
            values = [100 * r["metrics"][mk.link_prediction("test", setting, "random", key)] for r in rs]
            rows.append(values_row(setting, model, dataset, metric, values, rs, f"selected lr={lr}"))
        params[(setting, model)][dataset] = (rs[0]["metrics"]["n_parameters"], rs)
    for (setting, model), by_ds in sorted(params.items()):
        ds = "Wikipedia" if "Wikipedia" in by_ds else sorted(by_ds)[0]
        note = "built on " + ds + "; " + ", ".join(f"{d} {n}" for d, (n, _) in sorted(by_ds.items()))
        rows.append(values_row(setting, model, PARAMS_COLUMN, PARAMS, [float(by_ds[ds][0])], by_ds[ds][1], note))
    return rows + _placeholders(rows, SETTINGS, MODELS, _grid([AP, AUC]) + [(PARAMS_COLUMN, PARAMS)]) + _floor_rows(records)


def _floor_rows(records: list[dict]) -> list[dict]:
    """EdgeBank's transductive cells on each dataset (its memory with the best validation AP; it learns nothing and
    has no notion of unseen nodes, so no inductive cell): the floor a trained model should clear."""
    by_ds = defaultdict(list)
    for r in records:
        if r["config"]["model"] == "edgebank":
            by_ds[_dataset(r["config"])].append(r)
    rows = []
    for dataset, rs in sorted(by_ds.items()):
        rs = edgebank_choice(rs, mk.link_prediction("val", "transductive", "random", "ap"))
        note = f"not in the paper: the floor; memory {rs[0]['config'].get('edgebank_memory')} (best validation AP)"
        for metric, key in ((AP, "ap"), (AUC, "auc")):
            rows.append(values_row("transductive", EDGEBANK, dataset, metric,
                             [100 * r["metrics"][mk.link_prediction("test", "transductive", "random", key)] for r in rs], rs, note))
    return rows


@aggregator("swinit_table2")
def swinit_table2(records: list[dict]) -> list[dict]:
    """Table 2: training seconds per epoch (mean and std over seeds) of the transductive Table 1 cells, measured on
    the device the runs had (the paper: a V100)."""
    rows = []
    for (setting, model, dataset), rs in sorted(_lp_cells(records).items()):
        times = [r["metrics"]["epoch_time_s"] for r in rs if r["metrics"].get("epoch_time_s") is not None]
        if setting == "transductive" and times:
            devices = sorted({str(r.get("provenance", {}).get("device", "?")) for r in rs})
            rows.append(values_row(SPEED, model, dataset, TIME_PER_EPOCH, times, rs, "device " + ", ".join(devices)))
    return rows + _placeholders(rows, [SPEED], MODELS, _grid([TIME_PER_EPOCH]))


@aggregator("swinit_table3")
def swinit_table3(records: list[dict]) -> list[dict]:
    """Table 3: node-classification test ROC-AUC x 100 on the frozen link-prediction encoder (TRSVD input)."""
    groups = defaultdict(list)
    for r in records:
        if _input(r["config"]) == "trsvd":
            groups[(_model(r["config"]), _dataset(r["config"]))].append(r)
    rows = [values_row(NC_GROUP, model, dataset, NC_AUC, [100 * r["metrics"][TEST_AUC] for r in rs], rs)
            for (model, dataset), rs in sorted(groups.items())]
    return rows + _placeholders(rows, [NC_GROUP], MODELS, _grid([NC_AUC]))


@aggregator("swinit_table4")
def swinit_table4(records: list[dict]) -> list[dict]:
    """Table 4: SWINIT on Wikipedia with RAW, RAW+TRSVD and TRSVD inputs x MLP and GRU memory: transductive link
    prediction (lr selected on validation AP; the TRSVD rows are Table 1's cells) and node classification."""
    label = lambda c: f"{INPUT_LABELS[_input(c)]}+{c['memory_cell']}"
    lp = [r for r in records if r["config"]["task"] == "link_prediction" and _setting(r["config"]) == "transductive"]
    rows = []
    for (variant,), rs in sorted(select_lr(lp, lambda r: (label(r["config"]),)).items()):
        for metric, key in ((AP, "ap"), (AUC, "auc")):
            rows.append(values_row(ABLATION, variant, "Wikipedia", metric,
                             [100 * r["metrics"][mk.link_prediction("test", "transductive", "random", key)] for r in rs], rs,
                             f"selected lr={rs[0]['config']['lr']}"))
    nc = defaultdict(list)
    for r in records:
        if r["config"]["task"] == "node_classification":
            nc[label(r["config"])].append(r)
    for variant, rs in sorted(nc.items()):
        rows.append(values_row(ABLATION, variant, "Wikipedia", NC_AUC, [100 * r["metrics"][TEST_AUC] for r in rs], rs))
    variants = [f"{i}+{c}" for c in ("mlp", "gru") for i in INPUT_LABELS.values()]
    return rows + _placeholders(rows, [ABLATION], variants, [("Wikipedia", m) for m in (AP, AUC, NC_AUC)])


# ------------------------------------------------------------------ claims on reproduced cells

def _table(df: pd.DataFrame, artifact: str, metrics: list[str]) -> pd.DataFrame:
    """(row_group, column, metric) rows x model columns of the reproduced means (placeholders dropped)."""
    t = df[(df["artifact"] == artifact) & df["metric"].isin(metrics)].dropna(subset=["mean"])
    if t.empty:
        return pd.DataFrame()
    return t.pivot_table(index=["row_group", "column", "metric"], columns="row", values="mean")


def _pub(artifact: str, row_group: str, row: str, column: str, metric: str) -> float:
    p = published.load(PAPER, artifact)
    sel = p[(p["row_group"] == row_group) & (p["row"] == row) & (p["column"] == column) & (p["metric"] == metric)]
    return float(sel["mean"].iloc[0]) if len(sel) else float("nan")


def _label(idx) -> str:
    return " ".join(str(i) for i in (idx if isinstance(idx, tuple) else (idx,)) if str(i))


def _against(cells: pd.DataFrame, ours, comparators: dict, expected: int, what: str) -> tuple[str, str]:
    """Check `comparators[b](ours(row), row[b])` for every baseline b in every row (a reproduced cell). Fails as
    soon as one reproduced pair refutes; holds only when all `expected` rows have every baseline; else pending."""
    refuted, complete = [], 0
    for idx, row in cells.iterrows():
        mine = ours(row)
        if pd.isna(mine):
            continue
        present = [b for b in comparators if b in row.index and pd.notna(row[b])]
        refuted += [f"{_label(idx)}: {mine:.4g} vs {b} {row[b]:.4g}" for b in present if not comparators[b](mine, row[b])]
        complete += len(present) == len(comparators)
    missing = [b for b in comparators if b not in cells.columns or cells[b].isna().all()]
    detail = f"{what}; {complete} of {expected} cells have every model"
    if refuted:
        return FAILS, f"{detail}; refuted by {'; '.join(refuted)}"
    if complete < expected:
        return PENDING, detail + (f"; needs {', '.join(missing)} (not reproduced yet)" if missing else "")
    return HOLDS, detail


def _best_of(names: list[str]):
    """row -> the best of `names` (NaN unless all of them have a cell)."""
    return lambda row: row[names].max() if all(n in row.index and pd.notna(row[n]) for n in names) else float("nan")


N_TABLE1 = len(SETTINGS) * len(DATASETS) * 2  # (setting, dataset, metric) cells


@rule("swinit_beats_jodie_dyrep_matches_tgn")
def swinit_beats_jodie_dyrep_matches_tgn(df: pd.DataFrame) -> tuple[str, str]:
    """c01: in every (setting, dataset, metric) cell max(SWINIT) > max(DyRep, JODIE-rnn, JODIE-gru) and
    max(SWINIT) >= TGN-gru - 0.5."""
    cells = _table(df, "table1", [AP, AUC])
    if cells.empty:
        return PENDING, "table1 has no reproduced cells"
    comparators = {b: (lambda m, x: m >= x - 0.5) if b == "TGN-gru" else (lambda m, x: m > x) for b in BASELINES}
    return _against(cells, _best_of(OURS), comparators, N_TABLE1,
                    "max(SWINIT) above DyRep and JODIE, within 0.5 of TGN-gru")


@rule("swinit_gru_beats_all_baselines")
def swinit_gru_beats_all_baselines(df: pd.DataFrame) -> tuple[str, str]:
    """c02: SWINIT-GRU above every baseline in every (setting, dataset, metric) cell."""
    cells = _table(df, "table1", [AP, AUC])
    if cells.empty:
        return PENDING, "table1 has no reproduced cells"
    pub = _table(published.load(PAPER, "table1").assign(artifact="table1"), "table1", [AP, AUC])
    n_pub = int((pub["SWINIT-GRU"] > pub[BASELINES].max(axis=1)).sum())
    return _against(cells, _best_of(["SWINIT-GRU"]), {b: lambda m, x: m > x for b in BASELINES}, N_TABLE1,
                    f"SWINIT-GRU above every baseline (published: {n_pub} of {len(pub)})")


@rule("swinit_seven_times_fewer_parameters")
def swinit_seven_times_fewer_parameters(df: pd.DataFrame) -> tuple[str, str]:
    """c03: n_parameters(TGN-gru) / n_parameters(SWINIT-mlp) >= 7 (the built models' counts)."""
    t = df[(df["artifact"] == "table1") & (df["metric"] == PARAMS) & (df["row_group"] == "transductive")]
    n = t.dropna(subset=["mean"]).set_index("row")["mean"]
    if not {"TGN-gru", "SWINIT-mlp"} <= set(n.index):
        return PENDING, "table1 needs the parameter counts of TGN-gru and SWINIT-mlp"
    ratio = n["TGN-gru"] / n["SWINIT-mlp"]
    gru = f"; SWINIT-GRU {n['TGN-gru'] / n['SWINIT-GRU']:.2f}" if "SWINIT-GRU" in n.index else ""
    pub = _pub("table1", "transductive", "TGN-gru", PARAMS_COLUMN, PARAMS) / _pub("table1", "transductive", "SWINIT-mlp", PARAMS_COLUMN, PARAMS)
    return (HOLDS if ratio >= 7 else FAILS), (f"TGN-gru {n['TGN-gru']:.0f} / SWINIT-mlp {n['SWINIT-mlp']:.0f} = {ratio:.2f}"
                                              f"{gru} (published {pub:.2f}); holds at >= 7")


def _times(df: pd.DataFrame) -> pd.DataFrame:
    t = _table(df, "table2", [TIME_PER_EPOCH])
    return t.droplevel(["row_group", "metric"]) if not t.empty else t


@rule("swinit_faster_than_every_baseline")
def swinit_faster_than_every_baseline(df: pd.DataFrame) -> tuple[str, str]:
    """c04: on every dataset the slower SWINIT variant is faster per epoch than every baseline."""
    t = _times(df)
    if t.empty:
        return PENDING, "table2 has no reproduced cells"
    ratios = ", ".join(f"{d} TGN-gru / slower SWINIT {t.loc[d, 'TGN-gru'] / t.loc[d, OURS].max():.2f}"
                       for d in t.index if {"TGN-gru", *OURS} <= set(t.columns) and t.loc[d, ["TGN-gru", *OURS]].notna().all())
    return _against(t, _best_of(OURS), {b: lambda m, x: m < x for b in BASELINES}, len(DATASETS),
                    f"slower SWINIT faster than every baseline ({ratios or 'no ratio yet'}; measured on this machine)")


@rule("swinit_faster_on_reddit")
def swinit_faster_on_reddit(df: pd.DataFrame) -> tuple[str, str]:
    """c05: on Reddit every baseline needs >= 1.5 x the epoch time of SWINIT-mlp."""
    t = _times(df)
    if t.empty or "Reddit" not in t.index:
        return PENDING, "table2 has no reproduced Reddit cell"
    pub = min(_pub("table2", SPEED, b, "Reddit", TIME_PER_EPOCH) for b in BASELINES) / _pub(
        "table2", SPEED, "SWINIT-mlp", "Reddit", TIME_PER_EPOCH)
    return _against(t.loc[["Reddit"]], _best_of(["SWINIT-mlp"]), {b: lambda m, x: x / m >= 1.5 for b in BASELINES}, 1,
                    f"baseline / SWINIT-mlp seconds per epoch on Reddit >= 1.5 (published fastest baseline: {pub:.2f})")


@rule("swinit_gru_best_node_classification")
def swinit_gru_best_node_classification(df: pd.DataFrame) -> tuple[str, str]:
    """c06: SWINIT-GRU has the highest node-classification ROC-AUC on every dataset."""
    cells = _table(df, "table3", [NC_AUC])
    if cells.empty:
        return PENDING, "table3 has no reproduced cells"
    others = [m for m in MODELS if m != "SWINIT-GRU"]
    return _against(cells, _best_of(["SWINIT-GRU"]), {m: lambda g, x: g >= x for m in others}, len(DATASETS),
                    "SWINIT-GRU highest ROC-AUC")


def _margin(v: pd.Series, cell: str) -> float:
    """TRSVD's mean lead over the better of RAW and RAW+TRSVD for one memory cell, over Table 4's three metrics."""
    return float(np.mean([v[(f"trSVD+{cell}", m)] - max(v[(f"raw+{cell}", m)], v[(f"raw+trSVD+{cell}", m)])
                          for m in (AP, AUC, NC_AUC)]))


@rule("trsvd_input_beats_raw")
def trsvd_input_beats_raw(df: pd.DataFrame):
    """c07: for both memory cells, link-prediction AP and ROC-AUC: TRSVD > RAW+TRSVD and TRSVD > RAW (8 comparisons);
    and the margin is larger with GRU: TRSVD's mean lead over the better other input, over the three metrics
    (link-prediction AP and ROC-AUC, node-classification ROC-AUC), is larger for GRU than for MLP."""
    t = df[(df["artifact"] == "table4") & df["metric"].isin([AP, AUC, NC_AUC])].dropna(subset=["mean"])
    v = t.set_index(["row", "metric"])["mean"]
    need = [(f"{i}+{c}", m) for c in ("mlp", "gru") for i in INPUT_LABELS.values() for m in (AP, AUC, NC_AUC)]
    missing = [f"{r} {m}" for r, m in need if (r, m) not in v.index]
    if missing:
        return PENDING, f"table4 needs every input x memory-cell cell; lacks {', '.join(missing[:4])}", t
    checks = {f"{c} {m.split('_')[0]}: trSVD {v[(f'trSVD+{c}', m)]:.2f} vs {other} {v[(f'{other}+{c}', m)]:.2f}":
              v[(f"trSVD+{c}", m)] > v[(f"{other}+{c}", m)]
              for c in ("mlp", "gru") for m in (AP, AUC) for other in ("raw+trSVD", "raw")}
    margin = {c: _margin(v, c) for c in ("mlp", "gru")}
    pub = published.load(PAPER, "table4").set_index(["row", "metric"])["mean"]
    ok = sum(checks.values())
    return (HOLDS if ok == len(checks) and margin["gru"] > margin["mlp"] else FAILS), (
        f"TRSVD ahead in {ok} of {len(checks)}: " + "; ".join(k + ("" if w else " (NOT)") for k, w in checks.items())
        + f"; margin over the better other input: GRU {margin['gru']:+.2f}, MLP {margin['mlp']:+.2f}"
        + ("" if margin["gru"] > margin["mlp"] else " (NOT larger with GRU)")
        + f" (published GRU {_margin(pub, 'gru'):+.2f}, MLP {_margin(pub, 'mlp'):+.2f})"), t


@rule("self_attention_encoder_much_slower")
def self_attention_encoder_much_slower(df: pd.DataFrame) -> tuple[str, str]:
    """c08: a text-only timing claim about a vanilla self-attention encoder that no table reports."""
    return PENDING, ("no run times a vanilla self-attention encoder over the event features: the paper neither "
                     "specifies it nor reports a cell; benchmarks/swinit_speed.py times SWINIT against the baselines")
