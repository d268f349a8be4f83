"""Comparison tables: reproduced beside published, with the difference, as Markdown and LaTeX.

Columns are a two-level header (the paper's column, then `published` / `reproduced` / `delta`),
so a published number can only ever sit under a `published` heading.
"""

from __future__ import annotations

import math

import pandas as pd

from .published import KEY

PUBLISHED, REPRODUCED, DELTA = "published", "reproduced", "delta (repro - pub)"
NOT_YET = "not yet reproduced"


def _fmt(mean, std=None, digits: int = 4) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return ""
    no_std = std is None or (isinstance(std, float) and math.isnan(std)) or std == 0
    if no_std and float(mean).is_integer() and abs(mean) >= 1:
        return str(int(mean))  # counts: 1899, not 1899.00
    text = f"{mean:.{digits}g}" if abs(mean) < 1 else f"{mean:.2f}"
    if std is not None and not (isinstance(std, float) and math.isnan(std)) and std != 0:
        text += f" ± {std:.2g}" if abs(std) < 1 else f" ± {std:.2f}"
    return text


def _order(values) -> list:
    """Keep first-seen order, but sort numbers numerically (d_T 2, 4, 8, 16; not 16, 2, 4, 8)."""
    seen = list(dict.fromkeys(values))
    try:
        return sorted(seen, key=float)
    except ValueError:
        return seen


def comparison(published: pd.DataFrame, reproduced: pd.DataFrame) -> pd.DataFrame:
    """One row per (row_group, row, metric), columns (paper column, source)."""
    pub = published.assign(source=PUBLISHED, placeholder=False)
    # an aggregator's placeholder: a reproduced row without a mean whose note starts with NOT_YET
    notes = reproduced["note"].astype(str) if "note" in reproduced.columns else pd.Series("", index=reproduced.index)
    rep = reproduced.assign(source=REPRODUCED, placeholder=reproduced["mean"].isna() & notes.str.startswith(NOT_YET))
    if "mark" not in rep.columns:  # a flag appended to a reproduced cell (e.g. report/suspects.py), never to a published one
        rep = rep.assign(mark="")
    cols = KEY + ["mean", "std", "source", "placeholder"]
    both = pd.concat([pub[cols].assign(mark=""), rep[cols + ["mark"]]], ignore_index=True)
    if both.empty:
        return pd.DataFrame()
    both["cell"] = [NOT_YET if ph else _fmt(m, s) + (mk if isinstance(mk, str) else "")
                    for m, s, ph, mk in zip(both["mean"], both["std"], both["placeholder"], both["mark"])]
    # the metric joins the row label only where one (row, column) cell carries several metrics
    several = both.groupby(["row_group", "row", "column"])["metric"].nunique().max() > 1
    index = ["row_group", "row", "metric"] if several else ["row_group", "row"]
    cells = both.pivot_table(index=index, columns=["column", "source"], values="cell", aggfunc="first", sort=False)
    # (rows whose means are all missing drop out of this pivot: reindex onto the cells' rows)
    means = both.pivot_table(index=index, columns=["column", "source"], values="mean", aggfunc="first",
                             sort=False).reindex(cells.index)
    has_rep, has_pub = not reproduced.empty, not published.empty
    cols = []
    for col in _order(both["column"]):
        sources = ([PUBLISHED] if has_pub else []) + ([REPRODUCED] if has_rep else []) + ([DELTA] if has_rep and has_pub else [])
        for src in sources:
            cols.append((col, src))
            if src == DELTA:
                p = means.get((col, PUBLISHED))
                r = means.get((col, REPRODUCED))
                if p is not None and r is not None:
                    cells[(col, DELTA)] = [_fmt(b - a) if pd.notna(a) and pd.notna(b) else "" for a, b in zip(p, r)]
                else:
                    cells[(col, DELTA)] = ""
            elif (col, src) not in cells:
                cells[(col, src)] = ""
    table = cells[cols].fillna("")
    table.columns = pd.MultiIndex.from_tuples(cols, names=["column", "source"])
    return table


def to_markdown(table: pd.DataFrame) -> str:
    if table.empty:
        return "_no numbers_\n"
    heads = [" / ".join(i for i in table.index.names)] + [f"{c} ({s})" for c, s in table.columns]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for idx, row in table.iterrows():
        label = " / ".join(str(i) for i in (idx if isinstance(idx, tuple) else (idx,)) if str(i))
        lines.append("| " + " | ".join([label] + [str(v) for v in row.to_list()]) + " |")
    return "\n".join(lines) + "\n"


def to_latex(table: pd.DataFrame, caption: str) -> str:
    if table.empty:
        return f"% {caption}: no numbers\n"
    esc = lambda s: str(s).replace("_", r"\_").replace("%", r"\%").replace("#", r"\#").replace("±", r"$\pm$").replace("&", r"\&").replace("†", r"\textdagger{}")
    ncol = len(table.columns)
    lines = [r"\begin{table}[t]", r"\centering", rf"\caption{{{esc(caption)}}}", r"\resizebox{\linewidth}{!}{%",
             r"\begin{tabular}{l" + "r" * ncol + "}", r"\toprule",
             " & ".join([""] + [esc(c) for c, _ in table.columns]) + r" \\",
             " & ".join([""] + [esc(s) for _, s in table.columns]) + r" \\", r"\midrule"]
    for idx, row in table.iterrows():
        label = " / ".join(str(i) for i in (idx if isinstance(idx, tuple) else (idx,)) if str(i))
        lines.append(" & ".join([esc(label)] + [esc(v) for v in row.to_list()]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def to_html(table: pd.DataFrame) -> str:
    if table.empty:
        return "<p class='muted'>no numbers</p>"
    head1 = "".join(f"<th colspan='{n}'>{c}</th>" for c, n in _spans([c for c, _ in table.columns]))
    head2 = "".join(f"<th class='src-{s.split()[0]}'>{s}</th>" for _, s in table.columns)
    body = []
    for idx, row in table.iterrows():
        label = " / ".join(str(i) for i in (idx if isinstance(idx, tuple) else (idx,)) if str(i))
        tds = "".join(f"<td class='src-{s.split()[0]}'>{v}</td>" for (_, s), v in zip(table.columns, row.to_list()))
        body.append(f"<tr><th class='rowlabel'>{label}</th>{tds}</tr>")
    return (f"<div class='tablewrap'><table><thead><tr><th rowspan='2'>row</th>{head1}</tr><tr>{head2}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _spans(values: list) -> list[tuple]:
    out = []
    for v in values:
        if out and out[-1][0] == v:
            out[-1] = (v, out[-1][1] + 1)
        else:
            out.append((v, 1))
    return out


def qualitative(spec: dict) -> pd.DataFrame:
    """A qualitative matrix as a paper states it (params/<paper>.yaml `qualitative`: columns, one row of cells per
    method): a table of strings, not numbers, under a `stated in the paper` heading."""
    cols = pd.MultiIndex.from_tuples([(c, "stated in the paper") for c in spec["columns"]], names=["column", "source"])
    return pd.DataFrame([list(v) for v in spec["rows"].values()], index=pd.Index(list(spec["rows"]), name="method"),
                        columns=cols)
