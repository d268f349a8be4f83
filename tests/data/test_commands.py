"""`python -m timerepro.data.commands data ...` end to end: list, prepare a stand-in, pin/fetch/verify via loopback."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml

from timerepro.data.commands import main

from .test_ctdg import expected_tables, ml_members, raw_csv, serve_zip


def test_list_shows_every_dataset(capsys, data_root):
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert "citeulike" in out and "unobtainable" in out and "wikipedia" in out


def test_prepare_standin_via_module_entry(tmp_path):
    data = tmp_path / "d"
    res = subprocess.run([sys.executable, "-m", "timerepro.data.commands", "data", "--data-dir", str(data),
                          "prepare", "taxi", "--standin", "smoke"], capture_output=True, text=True, check=True)
    manifest = data / "standin" / "smoke" / "processed" / "taxi" / "manifest.json"
    assert res.stdout.strip() == str(manifest) and json.loads(manifest.read_text())["standin"] is True


def test_pin_fetch_verify_cycle(mirror, data_root, lock_copy, tmp_path, capsys):
    df, edge, node = expected_tables(bipartite=True)
    serve_zip(mirror, tmp_path, "mooc", {"mooc/mooc.csv": raw_csv(), **ml_members("mooc", df, edge, node)})
    body = mirror.routes["/records/7213796/files/mooc.zip"]
    import hashlib

    md5 = hashlib.md5(body).hexdigest()
    mirror.add("/api/records/7213796", json.dumps({"files": [{"key": "mooc.zip", "size": len(body),
                                                                "checksum": f"md5:{md5}"}]}).encode())
    assert main(["data", "verify", "mooc"]) == 1  # not cached yet
    assert main(["data", "pin", "mooc"]) == 0
    f = yaml.safe_load(lock_copy.read_text())["datasets"]["mooc"]["files"][0]
    assert f["sha256"] == hashlib.sha256(body).hexdigest() and f["md5"] == md5 and f["size"] == len(body)
    assert main(["data", "fetch", "mooc", "--require-pinned"]) == 0
    assert main(["data", "verify", "mooc"]) == 0
    assert main(["data", "prepare", "mooc", "--require-pinned"]) == 0
    (data_root / "raw" / "mooc" / "mooc.zip").write_bytes(b"tampered")
    assert main(["data", "verify", "mooc"]) == 1
    assert "sha256 expected" in capsys.readouterr().out


def test_pin_refuses_a_file_that_differs_from_the_published_md5(mirror, data_root, lock_copy, tmp_path):
    serve_zip(mirror, tmp_path, "mooc", {"mooc/mooc.csv": raw_csv()})
    mirror.add("/api/records/7213796", json.dumps({"files": [{"key": "mooc.zip", "checksum": "md5:" + "0" * 32}]}).encode())
    assert main(["data", "pin", "mooc"]) == 2
    assert yaml.safe_load(lock_copy.read_text())["datasets"]["mooc"]["files"][0]["sha256"] is None
