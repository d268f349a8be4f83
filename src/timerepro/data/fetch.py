"""Download one locked file into the cache: stream, hash, resume, retry, verify, then rename.

Standard library HTTP only (urllib). Every URL can be redirected to a mirror (TIMEREPRO_MIRROR or
the lock's `mirrors:`), which is how the tests point all sources at a loopback server.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import http.client
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping

from tqdm import tqdm

from timerepro.data.lock import FileEntry
from timerepro.paths import data_dir

MIRROR_ENV = "TIMEREPRO_MIRROR"
CHUNK = 1 << 16
USER_AGENT = "timerepro-data/1 (+https://github.com; reproduction pipeline)"


class DownloadError(RuntimeError):
    """No URL of a file could be downloaded; the message says where to put the file by hand."""


class ChecksumError(DownloadError):
    """Downloaded bytes do not match the lock; the file has been deleted."""


class ManualDownloadError(DownloadError):
    """The file has no direct URL: a person must fetch it and place it in the cache."""


class _Retryable(Exception):
    pass


@dataclass
class FetchResult:
    path: Path
    sha256: str
    md5: str
    size: int
    url: str | None = None
    headers: dict = field(default_factory=dict)
    downloaded: bool = False
    origin: str | None = None  # set when the bytes come from a second source (a package copy), not the URL


def raw_dir(dataset: str, data_root: str | os.PathLike | None = None) -> Path:
    return Path(data_root or data_dir()) / "raw" / dataset


def cache_path(entry: FileEntry, data_root: str | os.PathLike | None = None) -> Path:
    """Where the verified file lives: <data>/raw/<dataset>/<file name>."""
    return raw_dir(entry.dataset, data_root) / entry.name


def mirror_url(url: str, mirrors: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None) -> str:
    """Map a URL's scheme+host to a mirror base, keeping path and query.

    TIMEREPRO_MIRROR (one base for every host) wins over the `mirrors` mapping
    ({"https://data.example.org": "http://127.0.0.1:8000/example", ...}).
    """
    env = os.environ if env is None else env
    parts = urllib.parse.urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    rest = url[len(origin):]
    base = env.get(MIRROR_ENV) or (mirrors or {}).get(origin) or (mirrors or {}).get(parts.netloc)
    if not base:
        return url
    return base.rstrip("/") + rest


def hash_file(path: str | os.PathLike) -> tuple[str, str, int]:
    """(sha256, md5, size) of a file, read in chunks."""
    sha, md5, n = hashlib.sha256(), hashlib.md5(), 0
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            sha.update(chunk)
            md5.update(chunk)
            n += len(chunk)
    return sha.hexdigest(), md5.hexdigest(), n


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock (flock) so two processes never download the same file at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _manual_message(entry: FileEntry, target: Path, bundles: Mapping[str, dict] | None) -> str:
    where = ""
    if entry.bundle:
        b = (bundles or {}).get(entry.bundle, {})
        where = f" It is member {entry.member!r} of bundle {entry.bundle!r} ({b.get('note', '')}; {', '.join(b.get('urls', []))})."
    elif entry.urls:
        where = f" Upstream address (not reachable automatically): {', '.join(entry.urls)}."
    pin = f" Its sha256 must be {entry.sha256}." if entry.sha256 else " Then run `timerepro data pin " + entry.dataset + "`."
    return (f"{entry.dataset}/{entry.name} cannot be downloaded automatically.{where} "
            f"Download it by hand and put it at {target}.{pin}")


def verify(entry: FileEntry, sha256: str, md5: str, size: int) -> list[str]:
    """Differences between observed hashes/size and the lock (empty when the file matches)."""
    problems = []
    if entry.size is not None and size != entry.size:
        problems.append(f"size expected {entry.size} got {size}")
    if entry.sha256 and sha256 != entry.sha256:
        problems.append(f"sha256 expected {entry.sha256} got {sha256}")
    if entry.md5 and md5 != entry.md5:
        problems.append(f"md5 expected {entry.md5} got {md5}")
    return problems


def fetch_file(
    entry: FileEntry,
    *,
    data_root: str | os.PathLike | None = None,
    mirrors: Mapping[str, str] | None = None,
    bundles: Mapping[str, dict] | None = None,
    retries: int = 4,
    backoff: float = 0.5,
    timeout: float = 30.0,
    progress: bool | None = None,
) -> FetchResult:
    """Return the verified cached file of `entry`, downloading it first if needed.

    Existing cache files are re-verified; a mismatching one is deleted and fetched again.
    Nothing unverified is ever renamed to the cache path: the partial file is `.<name>.part`.
    """
    target = cache_path(entry, data_root)
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.parent / f".{entry.name}.lock"):
        if target.exists():
            sha, md5, size = hash_file(target)
            if not verify(entry, sha, md5, size):
                return FetchResult(target, sha, md5, size)
            target.unlink()  # a corrupted cache entry: fetch again
        if entry.manual or not entry.urls:
            raise ManualDownloadError(_manual_message(entry, target, bundles))
        part = target.parent / f".{entry.name}.part"
        errors: list[str] = []
        for url in entry.resolved_urls():
            real = mirror_url(url, mirrors)
            try:
                headers = _download_with_retries(real, part, retries, backoff, timeout, progress, entry.name)
            except DownloadError as exc:
                errors.append(f"{real}: {exc}")
                continue
            sha, md5, size = hash_file(part)
            problems = verify(entry, sha, md5, size)
            if problems:
                part.unlink()
                raise ChecksumError(
                    f"{entry.dataset}/{entry.name} from {real} does not match the lock ({'; '.join(problems)}); "
                    f"the download was deleted. If the upstream file changed on purpose, re-pin with "
                    f"`timerepro data pin {entry.dataset}` after checking it."
                )
            os.replace(part, target)
            return FetchResult(target, sha, md5, size, url=real, headers=headers, downloaded=True)
        with contextlib.suppress(FileNotFoundError):
            if part.stat().st_size == 0:
                part.unlink()
        raise DownloadError(
            f"could not download {entry.dataset}/{entry.name}:\n  " + "\n  ".join(errors)
            + f"\nWithout network: put the file at {target}"
            + (f" (sha256 {entry.sha256})" if entry.sha256 else "")
            + f", or set {MIRROR_ENV}=<base URL of a mirror that serves the same paths>."
        )


def _download_with_retries(url: str, part: Path, retries: int, backoff: float, timeout: float,
                           progress: bool | None, label: str) -> dict:
    last: Exception | None = None
    for attempt in range(retries + 1):
        try:
            return _download_once(url, part, timeout, progress, label)
        except _Retryable as exc:
            last = exc
            if attempt < retries:
                time.sleep(backoff * (2 ** attempt))
    raise DownloadError(f"gave up after {retries + 1} attempts: {last}")


def _download_once(url: str, part: Path, timeout: float, progress: bool | None, label: str) -> dict:
    """One HTTP GET, resuming from the bytes already in `part` with a Range request."""
    have = part.stat().st_size if part.exists() else 0
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if have:
        req.add_header("Range", f"bytes={have}-")
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # our partial file is already complete or invalid: restart
            part.unlink()
            raise _Retryable("416 on resume; restarting") from exc
        if exc.code >= 500 or exc.code == 429:
            raise _Retryable(f"HTTP {exc.code}") from exc
        raise DownloadError(f"HTTP {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise _Retryable(f"connection error: {getattr(exc, 'reason', exc)}") from exc
    with resp:
        headers = {k.lower(): v for k, v in resp.headers.items()}
        if have and resp.status == 206:
            mode = "ab"
            total = _content_range_total(headers.get("content-range"))
        else:
            mode, have = "wb", 0
            total = int(headers["content-length"]) if "content-length" in headers else None
        got = have
        try:
            with open(part, mode) as out, tqdm(total=total, initial=have, unit="B", unit_scale=True, desc=label,
                                             disable=None if progress is None else not progress, leave=False) as bar:
                while True:
                    chunk = resp.read(CHUNK)
                    if not chunk:
                        break
                    out.write(chunk)
                    got += len(chunk)
                    bar.update(len(chunk))
        except (http.client.IncompleteRead, OSError, socket.timeout, http.client.HTTPException) as exc:
            raise _Retryable(f"transfer interrupted after {got} bytes: {exc}") from exc
        if total is not None and got < total:
            raise _Retryable(f"transfer truncated at {got} of {total} bytes")
    return headers


def _content_range_total(value: str | None) -> int | None:
    # "bytes 100-199/200" -> 200
    if not value or "/" not in value:
        return None
    tail = value.rsplit("/", 1)[1]
    return int(tail) if tail.isdigit() else None


def fetch_json(url: str, mirrors: Mapping[str, str] | None = None, timeout: float = 30.0):
    """GET a small JSON document (e.g. Zenodo's record API) through the same mirror mapping."""
    import json

    req = urllib.request.Request(mirror_url(url, mirrors), headers={"User-Agent": USER_AGENT, "Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read().decode("utf-8"))


def head_headers(url: str, mirrors: Mapping[str, str] | None = None, timeout: float = 30.0) -> dict:
    """Response headers of a HEAD request (HF sends X-Repo-Commit: the commit that `main` resolves to)."""
    req = urllib.request.Request(mirror_url(url, mirrors), method="HEAD", headers={"User-Agent": USER_AGENT})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return {k.lower(): v for k, v in resp.headers.items()}
