"""Numbers made by other code or data: the report's stale marks (issue 16).

`timerepro.freshness` finds, per artifact, the runs whose records were made by code or pinned data other than
the current checkout's; this module turns them into the words the report and the Markdown tables show: which
modules changed, and the commands that redo exactly those runs.
"""

from __future__ import annotations

import html
from pathlib import Path

from timerepro.freshness import RunState, changed_modules, stale_by_artifact

SHOWN_MODULES = 6  # the most frequent changed modules named in a mark; the rest are counted


def refresh_commands(paper: str, scale: str) -> list[str]:
    """What lists the stale runs of `paper`, then what redoes exactly the stale runs of the scale."""
    return [f"timerepro status --scale {scale} --paper {paper}",
            f"snakemake --profile local --config scale={scale}",  # or --profile slurm on a cluster
            f"timerepro run-all --scale {scale}"]


def stale_marks(reg, paper: str, scale: str, results: Path | None = None, fingerprints=None) -> dict[str, list[RunState]]:
    """{artifact id: its stale (or unreadable) runs}, only artifacts with at least one."""
    return {aid: states for aid, states in stale_by_artifact(reg, paper, scale, results, fingerprints).items() if states}


def summary(states: list[RunState]) -> str:
    """'3 run(s) made by other code or data; changed: timerepro.models.seq.transformer, ...'."""
    mods = changed_modules(states)
    named = ", ".join(mods[:SHOWN_MODULES]) + (f" and {len(mods) - SHOWN_MODULES} more" if len(mods) > SHOWN_MODULES else "")
    return f"{len(states)} run(s) made by other code or data; changed: {named or 'unknown'}"


def markdown_note(states: list[RunState], paper: str, scale: str) -> str:
    """The note under a Markdown table whose numbers are stale."""
    cmds = refresh_commands(paper, scale)
    return (f"STALE: every reproduced number of this table: {summary(states)}. Refresh: `{cmds[0]}` lists them; "
            f"`{cmds[1]}` (or `{cmds[2]}`) redoes exactly those.")


def html_note(states: list[RunState], paper: str, scale: str) -> str:
    """The stale badge and note of an artifact in the HTML report."""
    cmds = refresh_commands(paper, scale)
    return (f"<div class='stalenote'><span class='badge stale'>stale</span>every reproduced number below was made by "
            f"other code or data than this checkout's: {html.escape(summary(states))}. Refresh: "
            f"<code>{html.escape(cmds[0])}</code> lists them; <code>{html.escape(cmds[1])}</code> (or "
            f"<code>{html.escape(cmds[2])}</code>) redoes exactly those."
            f"<details><summary>stale runs</summary><code>"
            f"{' '.join(html.escape(s.run_id) for s in states)}</code></details></div>")
