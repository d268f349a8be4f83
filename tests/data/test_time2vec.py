"""Time2Vec datasets: MNIST IDX gzip (md5-checked, mirror fallback), N-TIDIGITS HDF5, Last.fm tar.gz, CiteULike."""

from __future__ import annotations

import hashlib
import io
import tarfile

import numpy as np
import pytest

from timerepro.data import time2vec, tpp
from timerepro.data.fetch import ChecksumError, fetch_file
from timerepro.data.lock import UnobtainableError, load_lock
from timerepro.data.prepare import prepare
from timerepro.data.standins import idx_bytes

from .conftest import set_file_fields


def test_event_mnist_from_idx_files(mirror, data_root, lock_copy):
    img = np.zeros((2, 28, 28), np.uint8)
    img[0, 0, 3] = 255  # flat position 3
    img[0, 1, 0] = 230  # 28 (230/255 = 0.902 > 0.9)
    img[0, 2, 2] = 229  # 58: 229/255 = 0.898, below the threshold
    img[1, 27, 27] = 255  # 783
    labels = np.array([7, 1], np.uint8)
    files = {"train-images-idx3-ubyte.gz": idx_bytes(img), "train-labels-idx1-ubyte.gz": idx_bytes(labels),
             "t10k-images-idx3-ubyte.gz": idx_bytes(img[:1]), "t10k-labels-idx1-ubyte.gz": idx_bytes(labels[:1])}
    for name, body in files.items():
        mirror.add(f"/exdb/mnist/{name}", body)  # only the second URL (LeCun's path) exists
    # the fixture is not real MNIST: put its md5 in the test lock, and take the package copy away (this test is
    # about the download path; tests/data/test_mnist_package.py covers the package copy)
    set_file_fields(lock_copy, "event_mnist", {n: {"md5": hashlib.md5(b).hexdigest()} for n, b in files.items()})
    import yaml

    doc = yaml.safe_load(lock_copy.read_text())
    del doc["datasets"]["event_mnist"]["options"]["package_source"]
    lock_copy.write_text(yaml.safe_dump(doc, sort_keys=False))
    d = tpp.load_processed(prepare("event_mnist"))
    tr = d.splits["train"]
    assert tr.sequence(0)["time_since_start"].tolist() == [3.0, 28.0]
    assert tr.sequence(1)["time_since_start"].tolist() == [783.0] and tr.label.tolist() == [7, 1]
    assert d.splits["test"].label.tolist() == [7]


def test_mnist_published_md5_rejects_other_bytes(mirror, data_root):
    (f, *_) = load_lock().get("event_mnist").files
    mirror.add(f"/mnist/{f.name}", idx_bytes(np.zeros((1, 28, 28), np.uint8)))
    with pytest.raises(ChecksumError, match=f.md5):
        fetch_file(f, progress=False)


def test_ntidigits_single_digits_and_labels(tmp_path):
    import h5py

    p = tmp_path / "n-tidigits.hdf5"
    with h5py.File(p, "w") as h5:
        for sid, t, x in (("train-a-o", [0.2, 0.1], [5, 6]), ("train-b-12", [0.1], [1]), ("train-c-z", [0.3], [63])):
            h5[f"train_addresses/{sid}"] = np.array(x)
            h5[f"train_timestamps/{sid}"] = np.array(t)
        h5["train_labels"] = np.array([b"train-a-o", b"train-b-12", b"train-c-z"])
    s = time2vec.read_ntidigits(p, "train")
    assert [x["label"] for x in s] == [0, 10]  # 'o' -> 0, 'z' -> 10; two-digit sample dropped
    assert s[0]["time_since_start"] == [0.1, 0.2] and s[0]["type_event"] == [6, 5]


def lastfm_tar(rows: list[str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, text in (("userid-timestamp-artid-artname-traid-traname.tsv", "\n".join(rows) + "\n"),
                           ("userid-profile.tsv", "#id\tgender\n")):
            data = text.encode()
            info = tarfile.TarInfo(f"lastfm-dataset-1K/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_lastfm_timelstm_preprocessing(tmp_path):
    rows = ["u2\t2009-01-01T00:10:00Z\ta\tA\tt\tSongB",
            "u2\t2009-01-01T00:00:00Z\ta\tA\tt\tSongA",
            "u1\t2009-01-01T01:00:00Z\ta\tA\tt\tSongA",
            "u1\t2009-01-01T00:30:00Z\ta\tA\tt\tSongA",
            "u1\t2009-01-01T00:00:00Z\ta\tA\tt\tSongC",
            "u3\t2009-01-02T00:00:00Z\ta\tA\tt\t"]
    tsv = tmp_path / "x.tsv"
    tsv.write_text("\n".join(rows) + "\n")
    splits, items = time2vec.timelstm_lastfm(tsv, n_train=1, n_test=1)
    assert items == ["SongA", "SongB", "SongC"]  # by play count, ties by name
    assert [s["user"] for s in splits["train"] + splits["test"]] == ["u2", "u1"]  # shortest first; u3 had no track
    u1 = splits["test"][0]
    assert u1["type_event"] == [2, 0, 0] and u1["delta_next"] == [1800.0, 1800.0, 0.0]
    assert u1["time_since_start"] == [0.0, 1800.0, 3600.0]


def test_lastfm_inner_md5_is_checked(mirror, data_root):
    mirror.add("/static/datasets/last.fm/lastfm-dataset-1K.tar.gz", lastfm_tar(["u1\t2009-01-01T00:00:00Z\ta\tA\tt\tS"]))
    with pytest.raises(ValueError, match="archive member .* md5 expected (64747b21563e|c53608b6b445)"):
        prepare("lastfm_1k")


def test_citeulike_error_names_the_affected_artifacts(data_root):
    with pytest.raises(UnobtainableError) as exc:
        prepare("citeulike")
    for art in ("time2vec:fig2", "time2vec:fig10", "time2vec:fig14"):
        assert art in str(exc.value)
