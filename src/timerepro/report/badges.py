"""The data-kind badge of an artifact: what its numbers were computed on, read from the `data_kind` field
(`timerepro.datakind`) of its rows and provenance, never from the words of the `data` label."""

from __future__ import annotations

import html

from timerepro.datakind import SEPARATOR, DataKind, parse

WORDS = {DataKind.REAL: "real data", DataKind.PACKAGE_COPY: "package copy of the real data",
         DataKind.STANDIN: "synthetic stand-in (proves the pipeline, not the paper)",
         DataKind.SYNTHETIC_TASK: "the paper's own synthetic task"}
CSS = (".kind-real{background:#d8f3dc;color:#1b5e20}.kind-package_copy{background:#d0f0ef;color:#0b5c59}"
       ".kind-standin{background:#fff3cd;color:#7a5a00}.kind-synthetic_task{background:#e3f2fd;color:#0d47a1}")


def data_kind_badges(cell: str) -> str:
    """One badge per kind named by a `data_kind` cell ('' -> no badge: no runs)."""
    kinds = [k for k in DataKind if k in parse(cell)]
    return "".join(f"<span class='badge kind-{k.value}' title='{html.escape(WORDS[k])}'>data: {k.value}</span>"
                   for k in kinds)


def merged(cells) -> str:
    """One `data_kind` cell naming every kind of several cells (the rows of a table), in the enum's order.
    (Here rather than in timerepro.datakind: that module is part of every run's code fingerprint.)"""
    kinds = set().union(*(parse(c) for c in cells))
    return SEPARATOR.join(k.value for k in DataKind if k in kinds)
