"""Which run records were made by the current code and data: `timerepro status`, and the data the
report needs to mark a number whose records were made by other code."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from timerepro import records
from timerepro.fingerprint import Fingerprinter


@dataclass(frozen=True)
class RunState:
    paper: str
    experiment: str
    run_id: str
    state: str  # records.COMPLETE | STALE | MISSING | PARTIAL | CORRUPT
    changes: tuple[str, ...]  # STALE: modules (or data:<dataset>) whose fingerprint differs; CORRUPT: why
    directory: Path


def run_states(reg, scale: str, *, paper: str | None = None, artifact: str | None = None,
               results: Path | None = None, fingerprints: Fingerprinter | None = None) -> list[RunState]:
    """The state of every run `scale` needs (optionally of one paper or artifact)."""
    fingerprints = fingerprints or Fingerprinter(models=reg.models)
    out = []
    for run in reg.runs(scale, paper=paper, artifact=artifact):
        st = records.state_of(records.run_dir(run.config, results), fingerprints.run(run.config))
        out.append(RunState(run.paper, run.experiment, run.run_id, st.state, tuple(st.changes), st.directory))
    return out


def stale_by_artifact(reg, paper: str, scale: str, results: Path | None = None,
                      fingerprints: Fingerprinter | None = None) -> dict[str, list[RunState]]:
    """Per implemented artifact of `paper`: its runs whose records were made by other code or data
    (or are unreadable), each with what changed. Empty lists for artifacts whose numbers are current.
    The report marks every number of an artifact with a non-empty list."""
    fingerprints = fingerprints or Fingerprinter(models=reg.models)
    out = {}
    for art in reg.implemented(paper):
        states = run_states(reg, scale, paper=paper, artifact=art["id"], results=results, fingerprints=fingerprints)
        out[art["id"]] = [s for s in states if s.state in (records.STALE, records.CORRUPT)]
    return out


def changed_modules(states: list[RunState]) -> list[str]:
    """The modules (and data) that changed, over several stale runs, most frequent first."""
    counts: dict[str, int] = {}
    for s in states:
        for c in s.changes:
            counts[c] = counts.get(c, 0) + 1
    return sorted(counts, key=lambda c: (-counts[c], c))
