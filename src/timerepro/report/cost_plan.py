"""What rerunning a paper at paper scale costs, per artifact: the report's view of `timerepro estimate --scale
paper` (issue 16), for every artifact not yet at paper scale."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from timerepro.estimate import EXTRAPOLATED, MEASURED, NONE, Plan, artifact_estimates, hours_text, mb_text

TARGET = "paper"
COLUMNS = ["artifact", "runs", MEASURED, EXTRAPOLATED, "unknown", "CPU h", "GPU h", "peak memory", "declared"]


def pending(reg, paper: str, scale: str, provenance: dict) -> list[str]:
    """The implemented artifacts of `paper` not yet at paper scale: all of them below it, else those with runs missing."""
    ids = [a["id"] for a in reg.implemented(paper)]
    if scale != TARGET:
        return ids
    return [a for a in ids if (provenance.get(a) or {}).get("n_runs", 0) < (provenance.get(a) or {}).get("n_expected", 1)]


def _hours(est, hours: float) -> str:
    """'?' when no run's cost is known, a lower bound ('>= ') when some are unknown."""
    unknown = est.count(NONE)
    if unknown == len(est.runs):
        return "?"
    return (">= " if unknown else "") + hours_text(hours)


def table(reg, paper: str, scale: str, provenance: dict, results: Path | None = None) -> tuple[pd.DataFrame, list[str]]:
    """One row per pending artifact and the paper's total (a run shared by artifacts counted once), and the notes
    saying how the figures not measured were obtained."""
    ids = pending(reg, paper, scale, provenance)
    if not ids:
        return pd.DataFrame(columns=COLUMNS), []
    ests = artifact_estimates(reg, paper, TARGET, results)
    chosen = [ests[a] for a in ids if a in ests]
    total = Plan(TARGET, chosen).total()
    total.artifact = "total"
    rows = [[a.artifact, len(a.runs), a.count(MEASURED), a.count(EXTRAPOLATED), a.count(NONE), _hours(a, a.cpu_hours),
             _hours(a, a.gpu_hours), mb_text(a.peak_mb), mb_text(a.declared_mem_mb)] for a in chosen + [total]]
    return pd.DataFrame(rows, columns=COLUMNS), total.notes


def to_html(frame: pd.DataFrame, notes: list[str], paper: str) -> str:
    if frame.empty:
        return ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    how = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    return (f"<details class='estimate'><summary>cost of a paper-scale rerun (<code>timerepro estimate --scale paper "
            f"--paper {html.escape(paper)}</code>)</summary><div class='tablewrap'><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></div><div class='muted'>measured = the run's own record; extrapolated = "
            f"data-size ratio x (max_epochs x the closest record's seconds per epoch + its one-off seconds), an upper "
            f"bound; unknown = no record of that task and model yet. GPU h for runs that request a GPU at paper scale, "
            f"CPU h (x cpus) otherwise.</div>" + (f"<ul class='prov'>{how}</ul>" if how else "") + "</details>")
