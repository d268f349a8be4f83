"""The published numbers, read only from the project's copy of the reference file.

Everything that comes out of this module is labelled as published; nothing here is ever written
into a reproduced column.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pandas as pd

from timerepro.paths import params_dir

KEY = ["paper", "artifact", "row_group", "row", "column", "metric"]
COLUMNS = KEY + ["mean", "std", "note"]


def published_path() -> Path:
    return params_dir() / "published" / "published_values.csv"


@lru_cache(maxsize=4)
def _load(path: str) -> pd.DataFrame:
    df = pd.read_csv(path, dtype={c: str for c in ["paper", "artifact", "row_group", "row", "column", "metric", "note"]},
                     keep_default_na=False, na_values={"mean": [""], "std": [""]})
    missing = set(COLUMNS) - set(df.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    return df[COLUMNS]


def load(paper: str | None = None, artifact: str | None = None, path: Path | None = None) -> pd.DataFrame:
    df = _load(str(path or published_path()))
    if paper:
        df = df[df["paper"] == paper]
    if artifact:
        df = df[df["artifact"] == artifact]
    return df.copy()
