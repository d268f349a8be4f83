"""Comparison tables: reproduced beside published, with the difference, as Markdown, LaTeX and HTML.

Columns are a two-level header (the paper's column, then `published` / `reproduced` / `delta`),
so a published number can only ever sit under a `published` heading. A cell with no reproduced number says so in
words (NOT_REPRODUCED, NOT_YET), never blank; a delta is printed only beside a reproduced number that measures what
the paper's does: never beside a stand-in number, a configuration echo, or a row whose note starts with
NOT_COMPARABLE (e.g. an average rank over another set of datasets). A table whose reproduced cells were computed on
several kinds of data marks each cell with its kind (KIND_MARKS) and says what the marks mean in its line. Every
rendering carries `provenance_line` where a reader sees it (a line above the Markdown table, the LaTeX caption, a
line above the HTML table).
"""

from __future__ import annotations

import html
import math
import re

import pandas as pd

from timerepro import datakind

from . import badges
from .published import KEY

PUBLISHED, REPRODUCED, DELTA = "published", "reproduced", "delta (repro - pub)"
NOT_YET = "not yet reproduced"
NOT_REPRODUCED = "not reproduced at this scale"  # a cell with no reproduced number (no row, or a row without a mean)
NOT_COMPARABLE = "not comparable to the published value"  # a reproduced row's note prefix: no delta beside it
QUALITATIVE_LINE = "Stated in the paper, not measured: nothing here is reproduced."
# a reproduced cell's data kind (datakind.DataKind values) in a table that mixes kinds, and the words of its legend
KIND_MARKS = {"real": ("r", "real data"), "package_copy": ("p", "a package copy of the real data"),
              "synthetic_task": ("t", "the paper's own synthetic task"),
              "standin": ("s", "a synthetic stand-in (proves the pipeline only)")}


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


def _comparable(reproduced: pd.DataFrame) -> list[bool]:
    """Per reproduced row: may a delta sit beside it (not a stand-in number, not marked NOT_COMPARABLE)."""
    kinds = reproduced["data_kind"] if "data_kind" in reproduced.columns else pd.Series("", index=reproduced.index)
    notes = reproduced["note"] if "note" in reproduced.columns else pd.Series("", index=reproduced.index)
    return [not datakind.proves_pipeline_only(k) and not str(n).startswith(NOT_COMPARABLE)
            for k, n in zip(kinds, notes)]


def _kinds(reproduced: pd.DataFrame) -> list[str]:
    """The distinct `data_kind` cells of the reproduced rows, in first-seen order ('' dropped)."""
    if "data_kind" not in reproduced.columns:
        return []
    return [k for k in dict.fromkeys(str(k) for k in reproduced["data_kind"]) if k and k != "nan"]


def kind_mark(kind_cell: str) -> str:
    """' [p]' for a package copy, ' [p+s]' for a row over runs of two kinds (a rank over both)."""
    kinds = [k.value for k in datakind.DataKind if k in datakind.parse(kind_cell)]
    return f" [{'+'.join(KIND_MARKS[k][0] for k in kinds)}]" if kinds else ""


def mixes_kinds(reproduced: pd.DataFrame) -> bool:
    """True when the reproduced rows were computed on more than one kind of data (each cell then carries its mark)."""
    return len(_kinds(reproduced)) > 1


def kind_legend(reproduced: pd.DataFrame) -> str:
    """'Each reproduced cell is marked with its data: [p] a package copy of the real data; [s] ...' ('' unmixed)."""
    if not mixes_kinds(reproduced):
        return ""
    used = set().union(*(datakind.parse(k) for k in _kinds(reproduced)))
    words = [f"[{m}] {w}" for k, (m, w) in KIND_MARKS.items() if datakind.DataKind(k) in used]
    return "Each reproduced cell is marked with its data: " + "; ".join(words) + "."


def comparison(published: pd.DataFrame, reproduced: pd.DataFrame, delta: bool = True) -> pd.DataFrame:
    """One row per (row_group, row, metric), columns (paper column, source); `delta=False` for an artifact whose
    reproduced rows echo its configuration (no difference to print)."""
    pub = published.assign(source=PUBLISHED, placeholder=False, comparable=True)
    # an aggregator's placeholder: a reproduced row without a mean whose note starts with NOT_YET
    notes = reproduced["note"].astype(str) if "note" in reproduced.columns else pd.Series("", index=reproduced.index)
    rep = reproduced.assign(source=REPRODUCED, placeholder=reproduced["mean"].isna() & notes.str.startswith(NOT_YET),
                            comparable=_comparable(reproduced) if delta else False)
    if "mark" not in rep.columns:  # a flag appended to a reproduced cell (e.g. report/suspects.py), never to a published one
        rep = rep.assign(mark="")
    if mixes_kinds(reproduced):  # each cell says what it was computed on: one column may mix real and stand-in cells
        rep = rep.assign(mark=[(m if isinstance(m, str) else "") + kind_mark(k)
                               for m, k in zip(rep["mark"], rep["data_kind"].astype(str))])
    cols = KEY + ["mean", "std", "source", "placeholder", "comparable"]
    both = pd.concat([pub[cols].assign(mark=""), rep[cols + ["mark"]]], ignore_index=True)
    if both.empty:
        return pd.DataFrame()
    both["cell"] = [NOT_YET if ph else NOT_REPRODUCED if src == REPRODUCED and pd.isna(m)
                    else _fmt(m, s) + (mk if isinstance(mk, str) else "")
                    for m, s, ph, mk, src in zip(both["mean"], both["std"], both["placeholder"], both["mark"],
                                                 both["source"])]
    # the metric joins the row label only where one (row, column) cell carries several metrics
    several = both.groupby(["row_group", "row", "column"])["metric"].nunique().max() > 1
    index = ["row_group", "row", "metric"] if several else ["row_group", "row"]
    cells = both.pivot_table(index=index, columns=["column", "source"], values="cell", aggfunc="first", sort=False)
    # (rows whose means are all missing drop out of this pivot: reindex onto the cells' rows)
    pivot = lambda v: both.pivot_table(index=index, columns=["column", "source"], values=v, aggfunc="first",
                                       sort=False).reindex(cells.index)
    means, comparable = pivot("mean"), both.assign(comparable=both["comparable"].astype(float)).pipe(
        lambda b: b.pivot_table(index=index, columns=["column", "source"], values="comparable", aggfunc="min",
                                sort=False).reindex(cells.index))
    has_rep, has_pub = not reproduced.empty, not published.empty
    any_delta = has_rep and has_pub and bool(rep["comparable"].any())
    if has_rep:  # a cell with no reproduced row says so in words
        for col in _order(both["column"]):
            rep_col = cells[(col, REPRODUCED)] if (col, REPRODUCED) in cells else pd.Series(index=cells.index, dtype=object)
            cells[(col, REPRODUCED)] = rep_col.where(rep_col.notna(), NOT_REPRODUCED)
    cols = []
    for col in _order(both["column"]):
        sources = ([PUBLISHED] if has_pub else []) + ([REPRODUCED] if has_rep else []) + ([DELTA] if any_delta else [])
        for src in sources:
            cols.append((col, src))
            if src == DELTA:
                p, r = means.get((col, PUBLISHED)), means.get((col, REPRODUCED))
                ok = comparable.get((col, REPRODUCED))
                if p is not None and r is not None and ok is not None:
                    cells[(col, DELTA)] = [_fmt(b - a) if pd.notna(a) and pd.notna(b) and c == 1 else ""
                                           for a, b, c in zip(p, r, ok)]
                else:
                    cells[(col, DELTA)] = ""
            elif (col, src) not in cells:
                cells[(col, src)] = ""
    table = cells[cols].fillna("")
    table.columns = pd.MultiIndex.from_tuples(cols, names=["column", "source"])
    return table


LINE_WORDS = {"real": "real data at paper scale", "real cut": "real data below paper scale (a cut)",
              "synthetic task": "the paper's own synthetic task at paper scale",
              "synthetic task cut": "the paper's own synthetic task below paper scale",
              "stand-in": "synthetic stand-ins (they prove the pipeline, not the paper)"}


def provenance_line(scale: str, reproduced: pd.DataFrame, configuration: bool = False) -> str:
    """What the reproduced numbers of a table were computed on, at which scale, in words a reader sees."""
    if reproduced.empty:
        return f"Published values only: nothing reproduced at scale {scale}."
    words = badges.data_words(reproduced).split(" + ")
    kinds = badges.merged(list(reproduced["data_kind"])) if "data_kind" in reproduced.columns else ""
    copy = " (some from a package copy of the real data)" if datakind.DataKind.PACKAGE_COPY in datakind.parse(kinds) else ""
    line = f"Reproduced at scale {scale} on {' and '.join(LINE_WORDS.get(w, w) for w in words)}{copy}."
    if configuration:
        line += " Its reproduced rows echo the runs' settings: no delta."
    elif "stand-in" in words:
        line += " No delta beside a stand-in number."
    if "note" in reproduced.columns and reproduced["note"].astype(str).str.startswith(NOT_COMPARABLE).any():
        line += " No delta beside a row computed over another set than the paper's (e.g. ranks over fewer datasets)."
    legend = kind_legend(reproduced)
    return f"{line} {legend}" if legend else line


def summarise(lines: list[str], what: str, shown: int = 3) -> list[str]:
    """One line for many notes of one kind (e.g. cells below EdgeBank): their count and the first `shown`."""
    if len(lines) <= shown:
        return lines
    return [f"{what}: {len(lines)} cells; the first {shown}: " + " · ".join(lines[:shown])]


def to_markdown(table: pd.DataFrame, line: str = "") -> str:
    """The table, with `line` (`provenance_line`) in italics above it."""
    head = f"_{line}_\n\n" if line else ""
    if table.empty:
        return head + "_no numbers_\n"
    heads = [" / ".join(i for i in table.index.names)] + [f"{c} ({s})" for c, s in table.columns]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for idx, row in table.iterrows():
        label = " / ".join(str(i) for i in (idx if isinstance(idx, tuple) else (idx,)) if str(i))
        lines.append("| " + " | ".join([label] + [str(v) for v in row.to_list()]) + " |")
    return head + "\n".join(lines) + "\n"


def to_latex(table: pd.DataFrame, caption: str, line: str = "") -> str:
    """A booktabs table whose caption carries `line` (`provenance_line`)."""
    caption = f"{caption.rstrip('.')}. {line}" if line else caption
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


def _cell_html(value, links: dict[str, str]) -> str:
    """One cell: its kind mark as a badge that names the kind, a note mark (e.g. suspects.MARK) as a link to its
    note (`links`: mark -> href)."""
    text = html.escape(str(value))
    for kind, (m, words) in KIND_MARKS.items():
        text = text.replace(f"[{m}]", f"<span class='kindmark kind-{kind}' title='{html.escape(words)}'>[{m}]</span>")
    text = re.sub(r"\[([a-z](?:\+[a-z])+)\]", lambda g: f"<span class='kindmark' title='runs of several kinds'>[{g[1]}]</span>", text)
    for mark, href in links.items():
        text = text.replace(mark, f"<a class='notemark' href='{html.escape(href)}'>{mark}</a>")
    return text


def to_html(table: pd.DataFrame, line: str = "", links: dict[str, str] | None = None) -> str:
    """The table, with `line` (`provenance_line`) above it; `links` turns a note mark in a cell into a link."""
    links = links or {}
    head = f"<div class='tableline'>{html.escape(line)}</div>" if line else ""
    if table.empty:
        return head + "<p class='muted'>no numbers</p>"
    head1 = "".join(f"<th colspan='{n}'>{c}</th>" for c, n in _spans([c for c, _ in table.columns]))
    head2 = "".join(f"<th class='src-{s.split()[0]}'>{s}</th>" for _, s in table.columns)
    body = []
    for idx, row in table.iterrows():
        label = " / ".join(str(i) for i in (idx if isinstance(idx, tuple) else (idx,)) if str(i))
        tds = "".join(f"<td class='src-{s.split()[0]}'>{_cell_html(v, links)}</td>"
                      for (_, s), v in zip(table.columns, row.to_list()))
        body.append(f"<tr><th class='rowlabel'>{label}</th>{tds}</tr>")
    return (f"{head}<div class='tablewrap'><table><thead><tr><th rowspan='2'>row</th>{head1}</tr><tr>{head2}</tr></thead>"
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
