"""Loopback HTTP server serving upstream-format fixtures under upstream-shaped paths, with faults.

Faults per path, consumed in order: "corrupt" (flip bytes), "truncate" (promise the full length,
send half, close), "500" (one server error). HEAD answers carry X-Repo-Commit for HF-style paths.
"""

from __future__ import annotations

import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from timerepro.paths import params_dir


class FixtureServer:
    def __init__(self):
        self.routes: dict[str, bytes] = {}
        self.headers: dict[str, dict] = {}
        self.faults: dict[str, list[str]] = {}
        self.log: list[tuple[str, str, str | None]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _route(self):
                return self.path.split("?", 1)[0]

            def do_HEAD(self):
                self._serve(head=True)

            def do_GET(self):
                self._serve(head=False)

            def _serve(self, head: bool):
                path = self._route()
                rng = self.headers.get("Range")
                with server.lock:
                    server.log.append((self.command, path, rng))
                    fault = server.faults[path].pop(0) if server.faults.get(path) and not head else None
                if path not in server.routes:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if fault == "500":
                    self.send_response(500)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = server.routes[path]
                if fault == "corrupt":
                    body = bytes(b ^ 0xFF for b in body[:16]) + body[16:]
                start = 0
                if rng and rng.startswith("bytes=") and fault != "corrupt":
                    start = int(rng[6:].split("-")[0])
                    if start >= len(body):
                        self.send_response(416)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                part = body[start:]
                self.send_header("Content-Length", str(len(part)))
                self.send_header("Accept-Ranges", "bytes")
                for k, v in server.headers.get(path, {}).items():
                    self.send_header(k, v)
                if fault == "truncate":
                    self.send_header("Connection", "close")
                self.end_headers()
                if head:
                    return
                if fault == "truncate":
                    self.wfile.write(part[: len(part) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(part)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def add(self, path: str, body: bytes, headers: dict | None = None, faults: list[str] | None = None):
        self.routes[path] = body
        if headers:
            self.headers[path] = headers
        if faults:
            self.faults[path] = list(faults)

    def gets(self, path: str) -> list:
        return [e for e in self.log if e[0] == "GET" and e[1] == path]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = FixtureServer()
    yield s
    s.close()


@pytest.fixture
def mirror(server, monkeypatch):
    """Every upstream URL goes to the loopback server (scheme+host replaced, path kept)."""
    monkeypatch.setenv("TIMEREPRO_MIRROR", server.url)
    return server


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    root = tmp_path / "data"
    monkeypatch.setenv("TIMEREPRO_DATA", str(root))
    return root


@pytest.fixture
def lock_copy(tmp_path, monkeypatch):
    """A writable copy of the project's lock (pin writes into it, never into params/)."""
    path = tmp_path / "datasets.lock.yaml"
    shutil.copyfile(params_dir() / "datasets.lock.yaml", path)
    monkeypatch.setenv("TIMEREPRO_LOCK", str(path))
    return path


def cache_listing(root: Path) -> list[str]:
    """Every file under a folder, relative, sorted (lock files of the downloader excluded)."""
    return sorted(str(p.relative_to(root)) for p in Path(root).rglob("*") if p.is_file() and not p.name.endswith(".lock"))


def set_file_fields(lock_path: Path, dataset: str, per_file: dict | None = None, **fields) -> None:
    """Edit a test lock: set fields on every file of `dataset` (or per file name via per_file)."""
    import yaml

    doc = yaml.safe_load(lock_path.read_text())
    for f in doc["datasets"][dataset]["files"]:
        f.update(fields)
        f.update((per_file or {}).get(f["name"], {}))
    lock_path.write_text(yaml.safe_dump(doc, sort_keys=False))
