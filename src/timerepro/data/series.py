"""Multivariate time series (ETT, ECL, Exchange, Traffic, Weather) with iTransformer's splits.

Processed folder: `series.npz` (values [T, V] float64 in iTransformer column order = date dropped,
others then target 'OT'; dates as int64 ns; column names) + manifest.json. Split borders and the
train-only StandardScaler are computed at load time because they depend on seq_len.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from timerepro.data.manifest import build_manifest, read_manifest, staged_dir, write_manifest

if TYPE_CHECKING:
    import pandas as pd

HOUR_MONTH = 30 * 24  # iTransformer's "month" for ETT: 30 days of hourly rows


def read_csv(path: str | Path, target: str = "OT") -> pd.DataFrame:
    """A TSLib/iTransformer CSV: a `date` column then variables; reordered to date + others + target."""
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    df = pd.read_csv(path)
    if "date" not in df.columns:
        raise ValueError(f"{path}: no 'date' column (columns start {list(df.columns)[:4]})")
    if target not in df.columns:
        raise ValueError(f"{path}: no target column {target!r}")
    cols = [c for c in df.columns if c not in ("date", target)]
    return df[["date", *cols, target]]


def borders(n_rows: int, loader: str, seq_len: int) -> tuple[list[int], list[int]]:
    """(border1s, border2s) for train/val/test exactly as iTransformer's Dataset_ETT_* / Dataset_Custom."""
    if loader in ("ETT_hour", "ETT_minute"):
        m = HOUR_MONTH * (4 if loader == "ETT_minute" else 1)
        b1 = [0, 12 * m - seq_len, 12 * m + 4 * m - seq_len]
        b2 = [12 * m, 12 * m + 4 * m, 12 * m + 8 * m]
        if n_rows < b2[2]:
            raise ValueError(f"{loader} needs at least {b2[2]} rows, got {n_rows}")
        return b1, b2
    if loader != "custom":
        raise ValueError(f"unknown loader {loader!r}")
    num_train = int(n_rows * 0.7)
    num_test = int(n_rows * 0.2)
    num_val = n_rows - num_train - num_test
    return [0, num_train - seq_len, n_rows - num_test - seq_len], [num_train, num_train + num_val, n_rows]


def prepare(*, dataset: str, options: dict, inputs: dict[str, Path], out_dir: Path, sources: list[dict],
            standin: bool, label: str) -> Path:
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    (path,) = inputs.values()
    df = read_csv(path, options.get("target", "OT"))
    values = df.iloc[:, 1:].to_numpy(dtype=np.float64)
    dates = pd.to_datetime(df["date"]).to_numpy().astype("datetime64[ns]").astype(np.int64)
    n_vars = options.get("n_vars")
    if n_vars and values.shape[1] != n_vars:
        raise ValueError(f"{dataset}: expected {n_vars} variables, got {values.shape[1]}")
    with staged_dir(Path(out_dir)) as tmp:
        np.savez(tmp / "series.npz", values=values, dates=dates, columns=np.array(df.columns[1:], dtype=str))
        rows = {"rows": int(values.shape[0]), "variables": int(values.shape[1])}
        write_manifest(tmp, build_manifest(dataset=dataset, family="series", sources=sources, rows=rows,
                                           standin=standin, label=label, files=["series.npz"],
                                           extra={"loader": options["loader"], "target": options.get("target", "OT"),
                                                  "freq": options.get("freq")}))
    return Path(out_dir)


@dataclass
class SeriesData:
    name: str
    values: np.ndarray  # [T, V], target last
    dates: np.ndarray  # [T] datetime64[ns]
    columns: list[str]
    loader: str
    manifest: dict


def load_processed(folder: str | Path) -> SeriesData:
    folder = Path(folder)
    m = read_manifest(folder)
    with np.load(folder / "series.npz") as z:
        return SeriesData(m["dataset"], z["values"], z["dates"].astype("datetime64[ns]"), z["columns"].tolist(),
                          m["loader"], m)


@dataclass
class SeriesSplit:
    """Scaled arrays per split (windows of val/test start seq_len earlier) and the train-only scaler."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    border1s: list[int]
    border2s: list[int]

    def n_windows(self, split: str, seq_len: int, pred_len: int) -> int:
        """iTransformer's __len__: len - seq_len - pred_len + 1 (0 if negative)."""
        return max(0, len(getattr(self, split)) - seq_len - pred_len + 1)


def split(data: SeriesData, seq_len: int = 96, scale: bool = True) -> SeriesSplit:
    """iTransformer borders + StandardScaler fitted on train rows only (population std, as sklearn)."""
    b1, b2 = borders(len(data.values), data.loader, seq_len)
    train_rows = data.values[b1[0]:b2[0]]
    mean = train_rows.mean(axis=0)
    std = train_rows.std(axis=0)
    std = np.where(std == 0, 1.0, std)  # sklearn leaves constant columns unscaled
    vals = (data.values - mean) / std if scale else data.values
    return SeriesSplit(vals[b1[0]:b2[0]], vals[b1[1]:b2[1]], vals[b1[2]:b2[2]], mean, std, b1, b2)
