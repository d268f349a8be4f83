"""Time-series CSVs: ETT at the pinned ETDataset commit via loopback; iTransformer borders and train-only scaling."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from timerepro.data import series
from timerepro.data.fetch import ChecksumError
from timerepro.data.prepare import prepare

from .conftest import set_file_fields

ETT_PATH = "/zhouhaoyi/ETDataset/1d16c8f4f943005d613b5bc962e9eeb06058cf07/ETT-small/ETTm2.csv"


def ett_csv(n_rows: int, freq: str) -> bytes:
    dates = pd.date_range("2016-07-01", periods=n_rows, freq=freq)
    k = np.arange(n_rows, dtype=float)
    df = pd.DataFrame({"date": dates.strftime("%Y-%m-%d %H:%M:%S")})
    for j, c in enumerate(["HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT"]):
        df[c] = np.round(np.sin(k / 24 + j) + j, 3)
    return df.to_csv(index=False).encode()


def test_ettm_borders_and_train_only_scaler(mirror, data_root, lock_copy):
    set_file_fields(lock_copy, "ettm2", md5=None)  # the fixture is not the real file
    body = ett_csv(57600 + 40, "15min")
    mirror.add(ETT_PATH, body)
    d = series.load_processed(prepare("ettm2"))
    assert d.values.shape == (57640, 7) and d.columns[-1] == "OT"
    s = series.split(d, seq_len=96)
    # 12/4/4 months of 30 days x 24 h x 4 quarter-hours
    assert s.border1s == [0, 34560 - 96, 46080 - 96] and s.border2s == [34560, 46080, 57600]
    raw = d.values
    assert np.allclose(s.mean, raw[:34560].mean(0)) and np.allclose(s.scale, raw[:34560].std(0))
    assert np.allclose(s.test[-1], (raw[57599] - s.mean) / s.scale)  # rows after 57,600 unused
    assert s.n_windows("test", 96, 96) == (11520 + 96) - 96 - 96 + 1


def test_published_sha256_rejects_a_different_etth1(mirror, data_root):
    mirror.add(ETT_PATH.replace("ETTm2", "ETTh1"), ett_csv(14400, "h"))
    with pytest.raises(ChecksumError, match="f18de3ad269cef59bb07b5438d79bb3042d3be49bdeecf01c1cd6d29695ee066"):
        prepare("etth1")
    assert not any((data_root / "raw" / "etth1").glob("ETTh1*"))


def test_custom_loader_reorders_target_last_and_uses_ratio_borders(tmp_path):
    n = 1000
    df = pd.DataFrame({"date": pd.date_range("2020-01-01", periods=n, freq="D").strftime("%Y-%m-%d"),
                       "OT": np.arange(n, dtype=float), "a": np.ones(n), "b": np.arange(n) % 7})
    p = tmp_path / "exchange_rate.csv"
    df.to_csv(p, index=False)
    out = series.prepare(dataset="exchange", options={"loader": "custom", "target": "OT"}, inputs={"x": p},
                         out_dir=tmp_path / "out", sources=[], standin=False, label="t")
    d = series.load_processed(out)
    assert d.columns == ["a", "b", "OT"]
    s = series.split(d, seq_len=96)
    assert s.border1s == [0, 700 - 96, 1000 - 200 - 96] and s.border2s == [700, 800, 1000]
    assert s.scale[0] == 1.0  # constant column left unscaled, like sklearn
    assert np.allclose(s.mean[2], np.arange(700).mean())


def test_too_short_ett_is_refused():
    with pytest.raises(ValueError, match="14400"):
        series.borders(1000, "ETT_hour", 96)
