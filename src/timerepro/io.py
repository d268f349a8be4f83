"""Atomic writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: str | os.PathLike, data: bytes, *, durable: bool = True) -> Path:
    """Write to a temporary file in the same folder, fsync, then rename over `path`.

    `durable=False` skips the fsync: still all-or-nothing if the process dies, but not across a
    power cut; for files rewritten every epoch (checkpoints, history).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str, *, durable: bool = True) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"), durable=durable)


def atomic_write_json(path: str | os.PathLike, obj: Any, *, durable: bool = True) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_jsonable) + "\n", durable=durable)


def _jsonable(obj: Any) -> Any:
    """numpy scalars and arrays, Paths: the types run records meet."""
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def read_json(path: str | os.PathLike) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)
