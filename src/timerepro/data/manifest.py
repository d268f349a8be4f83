"""manifest.json of a processed dataset: sources and their sha256, code version, row counts, stand-in flag.

Written last (after every data file) so that its presence marks a complete processed dataset.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from timerepro import __version__
from timerepro.datakind import DataKind
from timerepro.io import atomic_write_json, read_json

# Bump a family's number whenever its processed output changes for the same input bytes.
PREPROCESS_VERSION = {"ctdg": 1, "tpp": 1, "series": 1, "time2vec": 2}  # time2vec 2: TimeLSTM vocab/length cut
MANIFEST = "manifest.json"


def build_manifest(*, dataset: str, family: str, sources: list[dict], rows: dict, standin: bool,
                   label: str, files: list[str], extra: dict | None = None) -> dict:
    return {
        "dataset": dataset,
        "family": family,
        "standin": bool(standin),
        "label": label,
        "sources": sources,  # [{"name", "sha256", "url"?}]
        "rows": rows,
        "files": sorted(files),
        "code_version": {"timerepro": __version__, "preprocess": PREPROCESS_VERSION[family]},
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **(extra or {}),
    }


@contextmanager
def staged_dir(final: Path) -> Iterator[Path]:
    """Yield a temporary sibling folder; on success it replaces `final` (manifest written by the caller)."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    try:
        yield tmp
        if not (tmp / MANIFEST).exists():
            raise RuntimeError(f"internal error: no {MANIFEST} written in {tmp}")
        old = None
        if final.exists():
            old = final.with_name(f".{final.name}.old-{os.getpid()}")
            os.replace(final, old)
        os.replace(tmp, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_manifest(folder: Path, manifest: dict[str, Any]) -> Path:
    return atomic_write_json(Path(folder) / MANIFEST, manifest)


def read_manifest(folder: str | os.PathLike) -> dict:
    path = Path(folder) / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"{folder} is not a processed dataset (no {MANIFEST}); run `timerepro data prepare`")
    return read_json(path)


def data_identity(name: str, standin: str | None, manifest: dict) -> dict:
    """What a run's provenance records about the data it read: name, its kind (`timerepro.datakind`: real, a
    package copy when the manifest says so, or a labelled stand-in), source hashes."""
    shas = [src.get("sha256") for src in manifest.get("sources", [])]
    kind = DataKind.STANDIN if standin else DataKind(manifest.get("kind", DataKind.REAL.value))
    return {"dataset": name, "kind": kind.value, "source": "standin" if standin else "real", "standin": bool(standin),
            **({"standin_size": standin} if standin else {}),  # smoke and offline stand-ins are different graphs
            "label": manifest.get("label"), "sha256": shas[0] if len(shas) == 1 else ",".join(map(str, shas)),
            "sources": manifest.get("sources")}
