"""Safe extraction of zip (incl. Deflate64, method 9), tar.gz, .gz and .bz2 into a folder.

Members whose path escapes the folder, and links pointing outside it, are refused before anything
is written; extraction happens in a temporary sibling folder that is renamed into place at the end.
"""

from __future__ import annotations

import bz2
import gzip
import os
import shutil
import stat
import struct
import tarfile
import tempfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

DEFLATE64 = 9
_CHUNK = 1 << 20


class UnsafeArchiveError(ValueError):
    """An archive member would be written (or would point) outside the extraction folder."""


def _safe_relpath(name: str) -> PurePosixPath:
    """The member path relative to the extraction root, or UnsafeArchiveError."""
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchiveError(f"member {name!r} has an absolute path")
    if any(part == ".." for part in p.parts):
        raise UnsafeArchiveError(f"member {name!r} escapes the extraction folder")
    return p


def _check_link(member: str, target: str) -> None:
    """A link at `member` pointing to `target` must stay inside the root."""
    if target.startswith("/") or PurePosixPath(target).is_absolute():
        raise UnsafeArchiveError(f"link {member!r} points outside the folder: {target!r}")
    depth = len(PurePosixPath(member).parent.parts)
    for part in PurePosixPath(target).parts:
        depth = depth - 1 if part == ".." else depth + (part != ".")
        if depth < 0:
            raise UnsafeArchiveError(f"link {member!r} points outside the folder: {target!r}")


def extract(archive: str | os.PathLike, dest: str | os.PathLike, kind: str | None = None) -> Path:
    """Extract `archive` (kind: zip, tar.gz, gz, bz2; guessed from the name) into `dest`, replacing it."""
    archive, dest = Path(archive), Path(dest)
    kind = kind or guess_kind(archive.name)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
    try:
        if kind == "zip":
            _extract_zip(archive, tmp)
        elif kind == "tar.gz":
            _extract_tar(archive, tmp)
        elif kind in ("gz", "bz2"):
            opener = gzip.open if kind == "gz" else bz2.open
            out = tmp / archive.name.rsplit(".", 1)[0]
            with opener(archive, "rb") as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst, _CHUNK)
        else:
            raise ValueError(f"unknown archive kind {kind!r} for {archive}")
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def guess_kind(name: str) -> str:
    for suffix, kind in ((".tar.gz", "tar.gz"), (".tgz", "tar.gz"), (".zip", "zip"), (".gz", "gz"), (".bz2", "bz2")):
        if name.endswith(suffix):
            return kind
    raise ValueError(f"cannot tell the archive kind of {name!r}")


def _extract_zip(archive: Path, root: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        links = {}
        for info in infos:  # check everything before writing anything
            rel = _safe_relpath(info.filename)
            if stat.S_ISLNK(info.external_attr >> 16):
                target = zf.read(info).decode("utf-8") if info.compress_type != DEFLATE64 else _read_deflate64(zf, info).decode()
                _check_link(str(rel), target)
                links[info.filename] = target
            if info.flag_bits & 0x1:
                raise UnsafeArchiveError(f"member {info.filename!r} is encrypted")
        for info in infos:
            out = root / _safe_relpath(info.filename)
            if info.is_dir():
                out.mkdir(parents=True, exist_ok=True)
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            if info.filename in links:
                os.symlink(links[info.filename], out)
                continue
            with open(out, "wb") as dst:
                if info.compress_type == DEFLATE64:
                    for chunk in _iter_deflate64(zf, info):
                        dst.write(chunk)
                else:
                    with zf.open(info) as src:
                        shutil.copyfileobj(src, dst, _CHUNK)


def _read_deflate64(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    return b"".join(_iter_deflate64(zf, info))


def _iter_deflate64(zf: zipfile.ZipFile, info: zipfile.ZipInfo):
    """Inflate a method-9 member from the raw zip bytes (Python's zipfile has no Deflate64)."""
    import inflate64  # PyPI inflate64: the only dependency for Deflate64

    fp = zf.fp
    fp.seek(info.header_offset)
    header = fp.read(30)
    if header[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header for {info.filename!r}")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    fp.seek(info.header_offset + 30 + name_len + extra_len)
    remaining, crc, size = info.compress_size, 0, 0
    inflater = inflate64.Inflater()
    while remaining > 0:
        raw = fp.read(min(_CHUNK, remaining))
        if not raw:
            raise zipfile.BadZipFile(f"{info.filename!r}: truncated Deflate64 data")
        remaining -= len(raw)
        out = inflater.inflate(raw)
        crc, size = zlib.crc32(out, crc), size + len(out)
        yield out
    if size != info.file_size or crc != info.CRC:
        raise zipfile.BadZipFile(f"{info.filename!r}: Deflate64 data fails its CRC/size check")


def _extract_tar(archive: Path, root: Path) -> None:
    with tarfile.open(archive, "r:*") as tf:
        members = tf.getmembers()
        for m in members:
            rel = _safe_relpath(m.name)
            if m.issym():
                _check_link(str(rel), m.linkname)
            elif m.islnk():
                _safe_relpath(m.linkname)
            elif not (m.isfile() or m.isdir()):
                raise UnsafeArchiveError(f"member {m.name!r} is a device or fifo")
        try:
            tf.extractall(root, members=members, filter="data")
        except TypeError:  # pragma: no cover - Python without extraction filters
            tf.extractall(root, members=members)
