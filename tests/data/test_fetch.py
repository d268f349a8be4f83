"""Downloader against the loopback server: verification, corrupt/truncated/500 faults, resume, mirrors, locking."""

from __future__ import annotations

import hashlib
import os
import threading

import pytest

from timerepro.data.fetch import (ChecksumError, DownloadError, ManualDownloadError, cache_path, fetch_file,
                                  mirror_url)
from timerepro.data.lock import FileEntry

from .conftest import cache_listing

BODY = bytes(range(256)) * 400  # 100 kB: several chunks
SHA = hashlib.sha256(BODY).hexdigest()
MD5 = hashlib.md5(BODY).hexdigest()
URL = "https://zenodo.org/records/7213796/files/uci.zip?download=1"
PATH = "/records/7213796/files/uci.zip"


def entry(**kw) -> FileEntry:
    base = dict(dataset="uci", name="uci.zip", urls=(URL,), revision=None, size=len(BODY), sha256=SHA, md5=MD5,
                archive="zip")
    base.update(kw)
    return FileEntry(**base)


def test_download_is_verified_cached_and_not_refetched(mirror, data_root):
    mirror.add(PATH, BODY)
    r = fetch_file(entry(), progress=False)
    assert r.path == cache_path(entry()) and r.path.read_bytes() == BODY and r.sha256 == SHA and r.downloaded
    assert cache_listing(data_root) == ["raw/uci/uci.zip"]  # no .part left behind
    again = fetch_file(entry(), progress=False)
    assert not again.downloaded and len(mirror.gets(PATH)) == 1


def test_corrupt_download_is_rejected_removed_and_reports_both_hashes(mirror, data_root):
    mirror.add(PATH, BODY, faults=["corrupt"])
    with pytest.raises(ChecksumError) as exc:
        fetch_file(entry(md5=None, size=None), progress=False)
    bad = bytes(b ^ 0xFF for b in BODY[:16]) + BODY[16:]
    msg = str(exc.value)
    assert SHA in msg and hashlib.sha256(bad).hexdigest() in msg
    assert cache_listing(data_root) == []  # nothing corrupt left in the cache


def test_truncated_transfer_is_resumed_with_range(mirror, data_root):
    mirror.add(PATH, BODY, faults=["truncate"])
    r = fetch_file(entry(), progress=False, backoff=0)
    assert r.path.read_bytes() == BODY
    gets = mirror.gets(PATH)
    assert len(gets) == 2 and gets[0][2] is None and gets[1][2] == f"bytes={len(BODY) // 2}-"
    assert cache_listing(data_root) == ["raw/uci/uci.zip"]


def test_server_error_then_success(mirror, data_root):
    mirror.add(PATH, BODY, faults=["500"])
    r = fetch_file(entry(), progress=False, backoff=0)
    assert r.path.read_bytes() == BODY and len(mirror.gets(PATH)) == 2


def test_persistent_server_errors_give_up_with_instructions(mirror, data_root):
    mirror.add(PATH, BODY, faults=["500"] * 10)
    with pytest.raises(DownloadError) as exc:
        fetch_file(entry(), progress=False, retries=2, backoff=0)
    assert "gave up after 3 attempts" in str(exc.value) and len(mirror.gets(PATH)) == 3
    assert cache_listing(data_root) == []


def test_second_url_is_used_when_first_is_missing(mirror, data_root):
    mirror.add("/mirror/uci.zip", BODY)
    e = entry(urls=("https://zenodo.org/records/1/files/missing.zip", "https://example.org/mirror/uci.zip"))
    assert fetch_file(e, progress=False).path.read_bytes() == BODY


def test_unpinned_md5_mismatch_is_rejected(mirror, data_root):
    mirror.add(PATH, BODY)
    with pytest.raises(ChecksumError) as exc:
        fetch_file(entry(sha256=None, md5="0" * 32, size=None), progress=False)
    assert "0" * 32 in str(exc.value) and MD5 in str(exc.value)
    assert cache_listing(data_root) == []


def test_corrupted_cache_file_is_replaced(mirror, data_root):
    mirror.add(PATH, BODY)
    target = cache_path(entry())
    target.parent.mkdir(parents=True)
    target.write_bytes(b"garbage")
    assert fetch_file(entry(), progress=False).path.read_bytes() == BODY


def test_no_network_error_names_url_cache_path_and_mirror(data_root, monkeypatch):
    monkeypatch.setenv("TIMEREPRO_MIRROR", "http://127.0.0.1:9")  # discard port: connection refused
    with pytest.raises(DownloadError) as exc:
        fetch_file(entry(), progress=False, retries=1, backoff=0, timeout=2)
    msg = str(exc.value)
    assert "http://127.0.0.1:9/records/7213796/files/uci.zip?download=1" in msg
    assert str(cache_path(entry())) in msg and "TIMEREPRO_MIRROR" in msg


def test_manual_file_says_where_to_put_it(data_root):
    e = entry(urls=(), manual=True, bundle="itransformer", member="electricity/electricity.csv", sha256=None)
    with pytest.raises(ManualDownloadError) as exc:
        fetch_file(e, bundles={"itransformer": {"note": "bundle", "urls": ["https://cloud.example/x"]}})
    assert str(cache_path(e)) in str(exc.value) and "electricity/electricity.csv" in str(exc.value)


def test_manual_file_placed_by_hand_is_accepted(data_root):
    e = entry(urls=(), manual=True)
    target = cache_path(e)
    target.parent.mkdir(parents=True)
    target.write_bytes(BODY)
    assert fetch_file(e).sha256 == SHA


def test_two_concurrent_fetches_download_once(mirror, data_root):
    mirror.add(PATH, BODY)
    results, errors = [], []

    def run():
        try:
            results.append(fetch_file(entry(), progress=False))
        except Exception as exc:  # pragma: no cover - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 3 and len(mirror.gets(PATH)) == 1


def test_mirror_mapping_keeps_path_and_query():
    url = "https://huggingface.co/datasets/easytpp/taxi/resolve/abc/train.json"
    assert mirror_url(url, env={"TIMEREPRO_MIRROR": "http://127.0.0.1:5/base/"}) == \
        "http://127.0.0.1:5/base/datasets/easytpp/taxi/resolve/abc/train.json"
    assert mirror_url(URL, {"https://zenodo.org": "http://127.0.0.1:6"}, env={}) == \
        "http://127.0.0.1:6/records/7213796/files/uci.zip?download=1"
    assert mirror_url(URL, {}, env={}) == URL


def test_revision_placeholder_uses_commit_then_default():
    tmpl = ("https://huggingface.co/datasets/easytpp/taxi/resolve/{revision}/dev.json",)
    unpinned = entry(urls=tmpl, revision={"host": "huggingface", "commit": None, "default": "main"})
    pinned = entry(urls=tmpl, revision={"host": "huggingface", "commit": "c0ffee", "default": "main"})
    assert unpinned.resolved_urls()[0].endswith("/resolve/main/dev.json")
    assert pinned.resolved_urls()[0].endswith("/resolve/c0ffee/dev.json")


@pytest.mark.network
def test_real_ett_download_matches_published_sha256(tmp_path, monkeypatch):
    """Real network: ETTh2 from the pinned ETDataset commit matches the sha256 in the lock."""
    from timerepro.data.lock import load_lock

    monkeypatch.delenv("TIMEREPRO_MIRROR", raising=False)
    (f,) = load_lock().get("etth2").files
    assert fetch_file(f, data_root=tmp_path).sha256 == f.sha256
    assert os.path.getsize(cache_path(f, tmp_path)) == f.size
