"""`timerepro data pin --all` / `--paper P` against the loopback server: every obtainable dataset pinned in
one command, the checksums the hosts publish checked, failures reported without stopping the others."""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml

from timerepro.data.commands import main
from timerepro.data.lock import UnpinnedError, load_lock
from timerepro.data.pinning import git_blob_sha1, unpinned_report

from .test_ctdg import expected_tables, ml_members, raw_csv, serve_zip
from .test_tpp import COMMIT, seqs


@pytest.fixture
def small_lock(lock_copy):
    """The lock cut down to two obtainable datasets (mooc on Zenodo, taxi on HuggingFace), one manual
    (ecl) and one unobtainable (citeulike)."""
    doc = yaml.safe_load(lock_copy.read_text())
    doc["datasets"] = {k: v for k, v in doc["datasets"].items() if k in ("mooc", "taxi", "ecl", "citeulike")}
    lock_copy.write_text(yaml.safe_dump(doc, sort_keys=False))
    return lock_copy


def serve_mooc(mirror, tmp_path, published_md5: str | None = None) -> bytes:
    df, edge, node = expected_tables(bipartite=True)
    serve_zip(mirror, tmp_path, "mooc", {"mooc/mooc.csv": raw_csv(), **ml_members("mooc", df, edge, node)})
    body = mirror.routes["/records/7213796/files/mooc.zip"]
    md5 = published_md5 or hashlib.md5(body).hexdigest()
    mirror.add("/api/records/7213796", json.dumps({"files": [{"key": "mooc.zip", "checksum": f"md5:{md5}"}]}).encode())
    return body


def serve_taxi_published(mirror, tmp_path, lie_about: str | None = None) -> dict:
    """Taxi's three JSON files, each HEAD answer carrying what HuggingFace publishes: train.json as an LFS
    file (X-Linked-Etag = sha256), dev/test as plain git files (ETag = git blob sha1)."""
    bodies = {}
    for split, n in (("train", 3), ("dev", 2), ("test", 2)):
        body = json.dumps(seqs(n)).encode()
        bodies[split] = body
        path = tmp_path / f"{split}.json"
        path.write_bytes(body)
        if split == "train":
            headers = {"X-Repo-Commit": COMMIT, "X-Linked-Etag": f'"{hashlib.sha256(body).hexdigest()}"'}
        else:
            headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{git_blob_sha1(path)}"'}
        if split == lie_about:
            headers = {"X-Repo-Commit": COMMIT, "X-Linked-Etag": '"' + "0" * 64 + '"'}
        for rev in ("main", COMMIT):
            mirror.add(f"/datasets/easytpp/taxi/resolve/{rev}/{split}.json", body, headers=headers)
    return bodies


def test_pin_all_pins_every_obtainable_dataset_in_one_command(mirror, data_root, small_lock, tmp_path, capsys):
    mooc = serve_mooc(mirror, tmp_path)
    taxi = serve_taxi_published(mirror, tmp_path)
    assert main(["data", "pin", "--all"]) == 0
    out = capsys.readouterr()
    assert "pinned 2 datasets" in out.err and "ecl: not downloadable" in out.out and "citeulike" in out.out
    doc = yaml.safe_load(small_lock.read_text())["datasets"]
    assert doc["mooc"]["files"][0]["sha256"] == hashlib.sha256(mooc).hexdigest()
    assert {f["name"]: f["sha256"] for f in doc["taxi"]["files"]} == \
        {f"{s}.json": hashlib.sha256(b).hexdigest() for s, b in taxi.items()}
    assert {f["revision"]["commit"] for f in doc["taxi"]["files"]} == {COMMIT}
    load_lock().files("taxi", require_pinned=True)  # paper scale accepts them now
    assert main(["data", "pin", "--all"]) == 0  # nothing left to pin: no download
    assert "pinned 0 datasets, 2 were pinned already" in capsys.readouterr().err


def test_pin_paper_pins_only_that_papers_datasets(mirror, data_root, small_lock, tmp_path):
    serve_taxi_published(mirror, tmp_path)  # mooc is not served: pinning it would fail
    assert main(["data", "pin", "--paper", "hawkes_attention"]) == 0
    doc = yaml.safe_load(small_lock.read_text())["datasets"]
    assert all(f["sha256"] for f in doc["taxi"]["files"]) and doc["mooc"]["files"][0]["sha256"] is None


def test_a_checksum_the_host_publishes_is_checked(mirror, data_root, small_lock, tmp_path, capsys):
    serve_mooc(mirror, tmp_path, published_md5="0" * 32)  # Zenodo's md5 disagrees with the bytes
    serve_taxi_published(mirror, tmp_path, lie_about="train")  # HuggingFace's sha256 disagrees
    assert main(["data", "pin", "--all"]) == 1
    err = capsys.readouterr().err
    assert "2 failed: mooc, taxi" in err
    doc = yaml.safe_load(small_lock.read_text())["datasets"]
    assert doc["mooc"]["files"][0]["sha256"] is None and all(f["sha256"] is None for f in doc["taxi"]["files"])


def test_one_failure_does_not_stop_the_others(mirror, data_root, small_lock, tmp_path, capsys):
    serve_taxi_published(mirror, tmp_path)  # mooc 404s
    assert main(["data", "pin", "--all"]) == 1
    assert "pinned 1 datasets" in capsys.readouterr().err
    assert all(f["sha256"] for f in yaml.safe_load(small_lock.read_text())["datasets"]["taxi"]["files"])


def test_paper_scale_refusal_names_the_command_and_the_unpinned_datasets(small_lock):
    with pytest.raises(UnpinnedError) as exc:
        load_lock().files("taxi", require_pinned=True)
    assert "timerepro data pin --all" in str(exc.value) and "mooc, taxi" in str(exc.value)


def test_unpinned_report_before_a_paper_scale_run(small_lock):
    from timerepro import registry

    report = unpinned_report(registry.load(), "paper", lock=load_lock())
    assert "timerepro data pin --all" in report and "taxi" in report and "mooc" in report
    assert "not downloadable by the pipeline" in report and "ecl" in report
    assert unpinned_report(registry.load(), "smoke", lock=load_lock()) is None  # stand-ins only
