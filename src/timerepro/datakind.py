"""What kind of data a number was computed on: a field of every run record and aggregated row.

A run records it in provenance.json as `data.kind`; an aggregated row carries the kinds of its runs
in the `data_kind` column; claims, badges and the report read that field (never the words of the
human-readable `data` label beside it).

| kind | meaning | proves |
|---|---|---|
| `real` | the upstream dataset, fetched and checked against its pinned sha256 | the paper |
| `package_copy` | real data as a package or mirror ships it rather than the paper's own host (a manifest says so with `kind: package_copy`) | the paper, if the copy is faithful |
| `standin` | a labelled synthetic stand-in in the upstream format (smoke and offline scales) | the pipeline only |
| `synthetic_task` | data the paper itself generates (linear_time's Eq. 2 sequences): the experiment as published | the paper |
"""

from __future__ import annotations

from enum import Enum
from typing import Iterable


class DataKind(str, Enum):
    REAL = "real"
    PACKAGE_COPY = "package_copy"
    STANDIN = "standin"
    SYNTHETIC_TASK = "synthetic_task"


SEPARATOR = "+"  # an aggregated row over runs of several kinds: "real+standin"


def of_data(data: dict) -> DataKind:
    """The kind of a run's `data` provenance block. Records written before `kind` existed carry
    `standin` (bool) and `source` ("real", "standin" or "generated"), which say the same."""
    if data.get("kind"):
        return DataKind(data["kind"])
    if data.get("standin"):
        return DataKind.STANDIN
    return DataKind.SYNTHETIC_TASK if data.get("source") == "generated" else DataKind.REAL


def of_records(records: Iterable[dict]) -> str:
    """The `data_kind` cell of rows aggregated from `records`: their kinds, in the enum's order."""
    kinds = {of_data(r.get("provenance", {}).get("data", {})) for r in records}
    return SEPARATOR.join(k.value for k in DataKind if k in kinds)


def parse(cell: str) -> set[DataKind]:
    """The kinds named by a `data_kind` cell ('' -> none)."""
    return {DataKind(part) for part in str(cell).split(SEPARATOR) if part}


def proves_pipeline_only(cell: str) -> bool:
    """True when any run behind a row used a synthetic stand-in: the row proves the pipeline, not the paper."""
    return DataKind.STANDIN in parse(cell)
