"""The data-kind badge of an artifact: what its numbers were computed on, read from the `data_kind` field
(`timerepro.datakind`) of its rows and provenance, never from the words of the `data` label."""

from __future__ import annotations

import html

from timerepro.datakind import SEPARATOR, DataKind, parse

FULL_SCALES = ("paper", "published")  # scales at which a real dataset's number is the paper's protocol, not a cut
NO_CELLS = "no cells yet"
WORD_ORDER = ("real", "real cut", "synthetic task", "synthetic task cut", "stand-in")

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


def data_word(kind_cell: str, scale: str) -> str:
    """What one cell was computed on, in a reader's words: real, real cut (real data below paper scale), synthetic
    task (the paper's own generator; `cut` below paper scale) or stand-in; NO_CELLS for an empty cell."""
    kinds = parse(kind_cell)
    if not kinds:
        return NO_CELLS
    if DataKind.STANDIN in kinds:
        return "stand-in"
    base = "synthetic task" if kinds == {DataKind.SYNTHETIC_TASK} else "real"
    return base if str(scale) in FULL_SCALES else f"{base} cut"


def data_words(cells) -> str:
    """The words of every cell of a frame (`data_kind`, `scale`), joined: "real cut + stand-in"; NO_CELLS if none."""
    if cells is None or len(cells) == 0 or "data_kind" not in cells.columns:
        return NO_CELLS
    scales = cells["scale"] if "scale" in cells.columns else [""] * len(cells)
    words = {data_word(k, s) for k, s in zip(cells["data_kind"], scales)} - {NO_CELLS}
    return " + ".join(w for w in WORD_ORDER if w in words) or NO_CELLS
