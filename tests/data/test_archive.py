"""Safe extraction: path traversal and outward links refused with nothing written; Deflate64 zips read."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import zipfile

import pytest

from timerepro.data.archive import UnsafeArchiveError, extract
from timerepro.data.standins import write_zip

from .conftest import cache_listing


def _tar(path, members):
    with tarfile.open(path, "w:gz") as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)


def test_zip_member_escaping_the_folder_is_refused(tmp_path):
    arc = tmp_path / "in" / "evil.zip"
    arc.parent.mkdir()
    write_zip(arc, {"good/a.txt": b"fine", "../../escaped.txt": b"pwned"})
    dest = tmp_path / "out" / "x"
    with pytest.raises(UnsafeArchiveError):
        extract(arc, dest)
    assert not dest.exists()
    assert cache_listing(tmp_path) == ["in/evil.zip"]  # nothing written anywhere else


def test_zip_absolute_member_is_refused(tmp_path):
    arc = tmp_path / "abs.zip"
    with zipfile.ZipFile(arc, "w") as zf:
        zf.writestr("/etc/evil", b"x")
    with pytest.raises(UnsafeArchiveError):
        extract(arc, tmp_path / "out")
    assert cache_listing(tmp_path) == ["abs.zip"]


def test_tar_symlink_pointing_out_is_refused(tmp_path):
    arc = tmp_path / "link.tar.gz"
    link = tarfile.TarInfo("d/link")
    link.type, link.linkname = tarfile.SYMTYPE, "../../outside"
    ok = tarfile.TarInfo("d/ok.txt")
    ok.size = 2
    _tar(arc, [(ok, b"ok"), (link, None)])
    with pytest.raises(UnsafeArchiveError):
        extract(arc, tmp_path / "out")
    assert cache_listing(tmp_path) == ["link.tar.gz"]


def test_tar_traversal_is_refused(tmp_path):
    arc = tmp_path / "t.tar.gz"
    bad = tarfile.TarInfo("../x.txt")
    bad.size = 1
    _tar(arc, [(bad, b"x")])
    with pytest.raises(UnsafeArchiveError):
        extract(arc, tmp_path / "out")
    assert cache_listing(tmp_path) == ["t.tar.gz"]


def test_zip_symlink_pointing_out_is_refused(tmp_path):
    arc = tmp_path / "sl.zip"
    with zipfile.ZipFile(arc, "w") as zf:
        info = zipfile.ZipInfo("d/link")
        info.external_attr = (0o120777 << 16)
        zf.writestr(info, "../../etc/passwd")
    with pytest.raises(UnsafeArchiveError):
        extract(arc, tmp_path / "out")
    assert cache_listing(tmp_path) == ["sl.zip"]


def test_tar_gz_extracts(tmp_path):
    arc = tmp_path / "ok.tar.gz"
    info = tarfile.TarInfo("top/file.tsv")
    info.size = 5
    _tar(arc, [(info, b"a\tb\n!")])
    out = extract(arc, tmp_path / "out")
    assert (out / "top" / "file.tsv").read_bytes() == b"a\tb\n!"


def test_deflate64_zip_which_zipfile_cannot_open_is_extracted(tmp_path):
    payload = (b"1,2,3.5,0.0," + b"0.25," * 40 + b"\n") * 2000
    arc = write_zip(tmp_path / "reddit.zip", {"reddit/reddit.csv": payload, "reddit/ml_reddit.csv": b",u,i\n"}, method=9)
    with zipfile.ZipFile(arc) as zf:
        assert zf.getinfo("reddit/reddit.csv").compress_type == 9
        with pytest.raises(NotImplementedError):
            zf.read("reddit/reddit.csv")
    out = extract(arc, tmp_path / "out")
    assert (out / "reddit" / "reddit.csv").read_bytes() == payload


@pytest.mark.skipif(shutil.which("unzip") is None, reason="Info-ZIP unzip not installed")
def test_deflate64_fixture_is_valid_for_an_independent_decoder(tmp_path):
    """Info-ZIP's unzip (its own Deflate64 inflater) accepts the fixture writer's Deflate64 output."""
    payload = b"time encoders " * 5000
    arc = write_zip(tmp_path / "d64.zip", {"x/y.txt": payload}, method=9)
    res = subprocess.run(["unzip", "-p", str(arc), "x/y.txt"], capture_output=True, check=True)
    assert res.stdout == payload


def test_corrupt_deflate64_member_fails_crc(tmp_path):
    arc = write_zip(tmp_path / "c.zip", {"a.txt": b"abc" * 1000}, method=9)
    raw = bytearray(arc.read_bytes())
    raw[40] ^= 0xFF  # inside the compressed data
    arc.write_bytes(bytes(raw))
    with pytest.raises(Exception):
        extract(arc, tmp_path / "out")
    assert not (tmp_path / "out").exists()
