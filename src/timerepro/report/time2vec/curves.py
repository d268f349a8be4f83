"""Figures 1, 2, 5-14: metric curves against the training epoch (mean and std over runs, from each run's
history), the best Time2Vec size per model, and Figure 5's ablation panels."""

from __future__ import annotations

import numpy as np

from timerepro import metric_keys as mk
from timerepro.names import dataset_label
from timerepro.records import read_history

from ..aggregate import aggregator
from ..rows import group_by
from . import PAPER


METRIC_NAMES = {"test_accuracy": "accuracy", "recall_at_10": "Recall@10", "mrr_at_10": "MRR@10",
                "recall_at_3": "Recall@3", "mrr_at_all": "MRR"}
PRIMARY = ("accuracy", "Recall@10", "Recall@3")
METRIC_KEYS = {name: key for key, name in METRIC_NAMES.items()}  # "Recall@10" -> "recall_at_10"


def dataset_row(config: dict) -> str:
    """A run's row group: its dataset as the paper prints it (params/datasets.lock.yaml), and how its input was
    made where that differs from the paper's."""
    name = dataset_label(config["dataset"], PAPER)
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



def curves(records: list[dict], group: str, row: str) -> list[dict]:
    """Per epoch and metric: mean and std over the runs (runs of different lengths: the epochs all have)."""
    hs = [read_history(r["dir"]) for r in records]
    n = min(len(h) for h in hs)
    rows = []
    for key, metric in METRIC_NAMES.items():
        if mk.validation(key) not in hs[0][0]:
            continue
        values = np.array([[h[e][mk.validation(key)] for e in range(n)] for h in hs])  # (runs, epochs)
        for e in range(n):
            rows.append({"row_group": group, "row": row, "column": f"epoch {e + 1}", "metric": metric,
                         "mean": float(values[:, e].mean()), "std": float(values[:, e].std()),
                         "n_runs": len(records), "_records": records})
        rows.append({"row_group": group, "row": row, "column": "final", "metric": metric,
                     "mean": float(values[:, -1].mean()), "std": float(values[:, -1].std()),
                     "n_runs": len(records), "note": f"after epoch {n}", "_records": records})
    return rows



@aggregator("t2v_curves")
def t2v_curves(records: list[dict]) -> list[dict]:
    """Appendix figures: every model and Time2Vec size, metric against epoch (mean, std over runs)."""
    rows = []
    for (group, row), rs in sorted(group_by(records, lambda c: (dataset_row(c), model_label(c))).items()):
        rows += curves(rs, group, row)
    return rows


def _final(rows: list[dict], metric: str) -> float:
    return next((r["mean"] for r in rows if r["column"] == "final" and r["metric"] == metric), float("-inf"))


def best_size(options: dict, metric: str) -> tuple:
    """The best of `options` (key -> (records, curve rows)) on the primary `metric`, and how it was chosen: the mean
    over runs of the held-out `selection_<key>` (tasks/next_item.py `selection`) where every run has it, else the
    final test curve (Event-MNIST, N-TIDIGITS18: no validation part; the note says so)."""
    key = "selection_" + METRIC_KEYS[metric]
    if all(r["metrics"].get(key) is not None for recs, _ in options.values() for r in recs):
        score = {o: float(np.mean([r["metrics"][key] for r in recs])) for o, (recs, _) in options.items()}
        how = f"selected on validation ({key})"
    else:
        score = {o: _final(rows, metric) for o, (_, rows) in options.items()}
        how = "selected on the test curve"
    return max(sorted(score), key=score.get), how


def _annotate(rows: list[dict], text: str) -> None:
    for r in rows:
        r["note"] = (r.get("note", "") + "; " + text).lstrip("; ")


@aggregator("t2v_curves_best")
def t2v_curves_best(records: list[dict]) -> list[dict]:
    """Main-text figures: per dataset and model, the Time2Vec size with the best primary metric (`best_size`:
    on validation where the runs hold one)."""
    rows = []
    for (group, family), rs in sorted(group_by(records, lambda c: (dataset_row(c), model_label(c, False))).items()):
        options = {label: (sub, curves(sub, group, label)) for label, sub in group_by(rs, model_label).items()}
        metric = next(m for m in PRIMARY if any(r["metric"] == m for r in next(iter(options.values()))[1]))
        label, how = best_size(options, metric)
        best = options[label][1]
        if label != family:  # Time2Vec: the family's row, the chosen size and how it was chosen in the note
            sizes = "/".join(sorted({str(r["config"]["k_sines"]) for r in rs}, key=int))
            for r in best:
                r["row"] = family
            _annotate(best, f"best of sizes {sizes}: {label}, {how}")
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
    exp = group_by(records, lambda c: c["experiment"])
    k = lambda c: c.get("k_sines")
    rows = []
    sine64 = [r for r in exp.get("mnist_t2v", []) if k(r["config"]) == 64]
    for label, rs in [("sin", sine64)] + sorted(group_by(exp.get("mnist_activation", []), lambda c: c["activation"]).items()):
        if rs:
            rows += curves(rs, FIG5_PANELS["a"], label)
    learned16 = [r for r in exp.get("mnist_t2v", []) if k(r["config"]) == 16]
    for label, rs in [("learned", learned16)] + sorted(group_by(exp.get("mnist_frequencies", []),
                                                             lambda c: c["frequencies"].replace("_", " ")).items()):
        if rs:
            rows += curves(rs, FIG5_PANELS["b"], label)
    if sine64:
        rows += _hist_rows(sine64, FIG5_PANELS["c"])
    for label, rs in (("with linear term", [r for r in exp.get("cite_tlstm_t2v", []) if r["config"]["variant"] == 3]),
                      ("without linear term", exp.get("cite_tlstm3_no_linear", []))):
        if rs:
            options = {size: (sub, curves(sub, FIG5_PANELS["d"], label)) for size, sub in group_by(rs, k).items()}
            size, how = best_size(options, "Recall@10")
            _annotate(options[size][1], f"best of sizes {'/'.join(str(o) for o in sorted(options))}: {size}, {how}")
            rows += options[size][1]
    for label, rs in (("with linear term", sine64), ("without linear term", exp.get("mnist_no_linear", []))):
        if rs:
            rows += curves(rs, FIG5_PANELS["e"], label)
    return rows
