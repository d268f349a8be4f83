"""time2vec's claim rules: c06, c07 on the synthetic task's sines (Figures 3, 4), c01-c05, c08-c11 on the final
values of the reproduced curves."""

from __future__ import annotations

import pandas as pd

from ..claims import FAILS, HOLDS, PENDING, rule
from .curves import FIG5_PANELS, PRIMARY
from .sines import SYNTHETIC_GROUPS


def _summary(df: pd.DataFrame, group: str, metric: str) -> pd.Series | None:
    sel = df[(df["artifact"] == "fig3") & (df["row_group"] == group) & (df["metric"] == metric)]
    return None if sel.empty else sel.iloc[0]


@rule("t2v_main_sine_2pi_over_7")
def t2v_main_sine_2pi_over_7(df: pd.DataFrame) -> tuple:
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
def t2v_only_2pi_over_7_and_zero(df: pd.DataFrame) -> tuple:
    """c07: in the runs whose main sine is 2 pi / 7, the second-largest |weight| sits at a frequency < 0.05 (the
    claim describes one run; the rule asks it of a majority of those runs)."""
    share = _summary(df, SYNTHETIC_GROUPS[1.0], "share_of_runs_second_sine_near_zero")
    at = _summary(df, SYNTHETIC_GROUPS[1.0], "share_of_runs_at_fundamental")
    if share is None or at is None:
        return PENDING, "fig3/fig4 have no run whose main sine is 2pi/7 at this scale"
    ok = share["mean"] > 0.5
    return (HOLDS if ok else FAILS), (f"{share['mean']:.2f} of the {int(share['n_runs'])} runs whose main sine is "
                                      f"2pi/7 (share of all runs {at['mean']:.2f}) have their second sine below 0.05")



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


FIG1_DATASETS = ("Event-MNIST", "N-TIDIGITS18", "Stack Overflow (SOF)", "Last.FM", "CiteULike")  # the lock's names
UNOBTAINABLE = ("CiteULike",)  # params/datasets.lock.yaml citeulike: no copy can be had (c03, c09 never here)


@rule("t2v_improves_lstm")
def t2v_improves_lstm(df: pd.DataFrame):
    """c01: on every dataset the final metric of LSTM+Time2Vec (best size) >= LSTM+T, strictly on most. The paper
    states it on five datasets; CiteULike cannot be had, so the verdict is on the four others (never on a CiteULike
    stand-in), needs all four, and says so."""
    finals = _finals(df, "fig1")
    judged = [d for d in FIG1_DATASETS if d not in UNOBTAINABLE]
    read = finals[finals["row_group"].isin(judged) & finals["row"].isin(["LSTM+T", "LSTM+Time2Vec"])]
    details, oks = _t2v_vs_t(read, "fig1", "LSTM", strict=False)
    have = set(read.groupby("row_group")["row"].nunique().loc[lambda n: n == 2].index)
    missing = [d for d in judged if d not in have]
    if missing:
        return PENDING, f"fig1 lacks LSTM+T or LSTM+Time2Vec on {', '.join(missing)} at this scale", read
    strict = sum(d.count("T2V") and float(d.split("T2V ")[1].split()[0]) > float(d.split(" vs ")[1].split()[0])
                 for d in details)
    ok = all(oks) and strict > len(oks) / 2
    return (HOLDS if ok else FAILS), ("; ".join(details) + f"; strictly better on {strict} of {len(oks)}; judged on "
                                      f"{len(judged)} of the paper's {len(FIG1_DATASETS)} datasets "
                                      f"({', '.join(UNOBTAINABLE)} cannot be had)"), read


@rule("t2v_tidigits_mean_and_variance")
def t2v_tidigits_mean_and_variance(df: pd.DataFrame) -> tuple:
    """c02: N-TIDIGITS18: mean accuracy of LSTM+Time2Vec > LSTM+T and its std over runs smaller."""
    read = _finals(df, "fig1", "accuracy")
    read = read[(read["row_group"] == "N-TIDIGITS18") & read["row"].isin(["LSTM+T", "LSTM+Time2Vec"])]
    g = read.set_index("row")
    if not {"LSTM+T", "LSTM+Time2Vec"} <= set(g.index):
        return PENDING, "fig1 has no N-TIDIGITS18 runs of both models at this scale", read
    a, b = g.loc["LSTM+Time2Vec"], g.loc["LSTM+T"]
    ok = a["mean"] > b["mean"] and a["std"] < b["std"]
    return (HOLDS if ok else FAILS), (f"LSTM+Time2Vec {a['mean']:.4f} ± {a['std']:.4f} vs LSTM+T {b['mean']:.4f} ± "
                                      f"{b['std']:.4f} (n={int(a['n_runs'])}, {int(b['n_runs'])})"), read


@rule("t2v_improves_tlstm")
def t2v_improves_tlstm(df: pd.DataFrame) -> tuple:
    """c03: Recall@10 of TLSTMx+Time2Vec > TLSTMx for x in {1, 3} on Last.FM and CiteULike (4/4)."""
    details, oks = [], []
    for x in (1, 3):
        d, o = _t2v_vs_t(df, "fig2", f"TLSTM{x}", strict=True)
        details += [f"TLSTM{x} {s}" for s in d]
        oks += o
    if len(oks) < 4:
        return PENDING, f"fig2 has {len(oks)} of the 4 comparisons at this scale", _finals(df, "fig2")
    return (HOLDS if all(oks) else FAILS), "; ".join(details), _finals(df, "fig2")


def _panel_rows(df: pd.DataFrame, key: str) -> pd.DataFrame:
    """The final values of one Figure 5 panel: the cells a rule on that panel reads (never another panel's dataset,
    e.g. panel (d)'s CiteULike stand-in)."""
    g = _finals(df, "fig5")
    return g[g["row_group"] == FIG5_PANELS[key]]


def _panel_finals(df: pd.DataFrame, key: str, metric: str) -> dict[str, float]:
    g = _panel_rows(df, key)
    g = g[g["metric"] == metric]
    return dict(zip(g["row"], g["mean"]))


@rule("t2v_periodic_activations_best")
def t2v_periodic_activations_best(df: pd.DataFrame):
    """c04: Event-MNIST final accuracy: min over sine, mod, triangle > max over sigmoid, tanh, ReLU; sine best."""
    v, read = _panel_finals(df, "a", "accuracy"), _panel_rows(df, "a")
    periodic, other = ("sin", "mod", "triangle"), ("sigmoid", "tanh", "relu")
    if not set(periodic + other) <= set(v):
        return PENDING, f"fig5a has {sorted(v)} of the six activations at this scale", read
    ok = min(v[a] for a in periodic) > max(v[a] for a in other) and max(v, key=v.get) == "sin"
    return (HOLDS if ok else FAILS), ", ".join(f"{a} {v[a]:.4f}" for a in periodic + other), read


@rule("t2v_learned_frequencies_best")
def t2v_learned_frequencies_best(df: pd.DataFrame):
    """c05: Event-MNIST accuracy with learned frequencies > equally spaced and > positional encoding."""
    v, read = _panel_finals(df, "b", "accuracy"), _panel_rows(df, "b")
    if not {"learned", "equally spaced", "positional"} <= set(v):
        return PENDING, f"fig5b has {sorted(v)} of the three schemes at this scale", read
    ok = v["learned"] > v["equally spaced"] and v["learned"] > v["positional"]
    return (HOLDS if ok else FAILS), ", ".join(f"{k} {x:.4f}" for k, x in v.items()), read


@rule("t2v_mnist_frequency_histogram")
def t2v_mnist_frequency_histogram(df: pd.DataFrame):
    """c08: every learned |w| in (0, 1); the two most populated bins centred 0.35 and 0.85 (min w ~ 0.029: reported)."""
    read = df[(df["artifact"] == "fig5") & ((df["column"] == "panel c histogram") | (df["row_group"] == FIG5_PANELS["c"]))]
    sel = read[read["column"] == "panel c histogram"].set_index("metric")
    if "two_most_populated_bins" not in sel.index:
        return PENDING, "fig5c has no Event-MNIST LSTM+Time2Vec (64+1) run at this scale", read
    inside = sel.loc["share_of_frequencies_in_(0,1)", "mean"]
    top = sel.loc["two_most_populated_bins", "note"]
    ok = inside == 1.0 and top.replace("centres: ", "").split(", ") in (["0.35", "0.85"], ["0.85", "0.35"])
    return (HOLDS if ok else FAILS), (f"share of |w| in (0, 1): {inside:.3f}; most populated bins {top}; smallest |w| "
                                      f"{sel.loc['min_learned_frequency', 'mean']:.3f} (mean over runs)"), read


@rule("t2v_linear_term")
def t2v_linear_term(df: pd.DataFrame) -> tuple:
    """c09: CiteULike Recall@10 with the linear term > without; Event-MNIST |accuracy difference| < 1 point."""
    d, e = _panel_finals(df, "d", "Recall@10"), _panel_finals(df, "e", "accuracy")
    read = pd.concat([_panel_rows(df, "d"), _panel_rows(df, "e")])
    if len(d) < 2 or len(e) < 2:
        return PENDING, "fig5 needs both linear-term variants on CiteULike and on Event-MNIST at this scale", read
    gap = abs(e["with linear term"] - e["without linear term"])
    ok = d["with linear term"] > d["without linear term"] and gap < 0.01
    return (HOLDS if ok else FAILS), (f"CiteULike Recall@10 {d['with linear term']:.4f} vs {d['without linear term']:.4f}; "
                                      f"Event-MNIST accuracy gap {100 * gap:.2f} points"), read


APPENDIX = ("fig7", "fig8", "fig9", "fig10", "fig11", "fig12", "fig13", "fig14")  # Time2Vec sizes per dataset


@rule("t2v_best_size")
def t2v_best_size(df: pd.DataFrame) -> tuple:
    """c10: in the appendix figures the best Time2Vec size is 64 (or within 1 std of the best) for LSTM and
    TLSTM1, and 16 for TLSTM3; CiteULike's panels (Figures 10, 12, 14) cannot be had, so the others decide it."""
    details, oks = [], []
    finals = df[(df["artifact"].isin(APPENDIX)) & (df["column"] == "final") & df["metric"].isin(PRIMARY)]
    read = finals[~finals["row_group"].str.startswith(UNOBTAINABLE)]
    for art in APPENDIX:
        for group, g in _finals(read, art).groupby("row_group"):
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
        return PENDING, "no appendix figure has all three Time2Vec sizes at this scale", read
    ok = sum(oks) > len(oks) / 2 and all(o for o, d in zip(oks, details) if "TLSTM3" in d)
    return (HOLDS if ok else FAILS), "; ".join(details) + f" ({', '.join(UNOBTAINABLE)} panels left out: cannot be had)", read


@rule("t2v_binned_times_only")
def t2v_binned_times_only(df: pd.DataFrame) -> tuple:
    """c11: on the event-binned, times-only N-TIDIGITS18, final accuracy of LSTM+Time2Vec > LSTM+T."""
    g = _finals(df, "fig6", "accuracy")
    vals = {("T2V" if "Time2Vec" in r else "T"): m for r, m in zip(g["row"], g["mean"])}
    if len(vals) < 2:
        return PENDING, "fig6 has no runs of both models at this scale", g
    return (HOLDS if vals["T2V"] > vals["T"] else FAILS), f"LSTM+Time2Vec {vals['T2V']:.4f} vs LSTM+T {vals['T']:.4f}", g
