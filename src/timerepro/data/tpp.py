"""Event sequences (EasyTPP JSON; Gatech pickles read without executing code) in one CSR format.

Processed folder: `<split>.npz` per split with seq_ptr [S+1], time_since_start, time_since_last_event,
type_event (0-based) [N], seq_idx [S], label [S] (optional), plus manifest.json (dim_process, counts).
"""

from __future__ import annotations

import io
import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from timerepro.data.manifest import build_manifest, read_manifest, staged_dir, write_manifest

SPLITS = ("train", "dev", "test")  # EasyTPP file names; dev = validation
_JSON_KEYS = ("dim_process", "time_since_start", "time_since_last_event", "type_event")


def read_easytpp_json(path: str | Path) -> list[dict]:
    """An EasyTPP HF JSON file: an array of {dim_process, seq_idx, seq_len, time_since_start, ...}."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if isinstance(data, dict):  # some revisions may wrap the list; accept {"data": [...]}
        data = data.get("data", data.get("train", data))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON array of sequences")
    for n, seq in enumerate(data):
        missing = [k for k in _JSON_KEYS if k not in seq]
        if missing:
            raise ValueError(f"{path}: sequence {n} lacks {missing}")
        L = len(seq["type_event"])
        if not (len(seq["time_since_start"]) == len(seq["time_since_last_event"]) == L):
            raise ValueError(f"{path}: sequence {n} has fields of different lengths")
        if "seq_len" in seq and int(seq["seq_len"]) != L:
            raise ValueError(f"{path}: sequence {n} seq_len {seq['seq_len']} != {L} events")
    return data


class _NoGlobals(pickle.Unpickler):
    """Refuses every class/function reference except numpy scalars: no code can run while loading."""

    ALLOWED = {("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"), ("numpy", "dtype")}

    def find_class(self, module, name):  # noqa: D401
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a data pickle")


def read_gatech_pkl(path: str | Path, split: str) -> tuple[int, list[dict]]:
    """A Gatech-format pickle ({'dim_process': K, split: [[{time_since_start, ..., type_event}, ...]]})."""
    raw = Path(path).read_bytes()
    obj = _NoGlobals(io.BytesIO(raw), encoding="latin1").load()
    key = split if split in obj else {"dev": "dev", "valid": "dev"}.get(split, split)
    seqs = []
    for n, events in enumerate(obj[key]):
        seqs.append({
            "seq_idx": n,
            "time_since_start": [float(e["time_since_start"]) for e in events],
            "time_since_last_event": [float(e["time_since_last_event"]) for e in events],
            "type_event": [int(e["type_event"]) for e in events],
        })
    return int(obj["dim_process"]), seqs


def write_sequences(path: Path, seqs: list[dict]) -> dict:
    """Write sequences to one CSR npz; returns counts. Each seq: time_since_start, type_event, ..."""
    lens = np.array([len(s["type_event"]) for s in seqs], dtype=np.int64)
    ptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    cat = lambda key, dt: np.concatenate([np.asarray(s[key], dtype=dt) for s in seqs]) if seqs else np.zeros(0, dt)
    arrays = {
        "seq_ptr": ptr,
        "time_since_start": cat("time_since_start", np.float64),
        "time_since_last_event": cat("time_since_last_event", np.float64),
        "type_event": cat("type_event", np.int64),
        "seq_idx": np.array([s.get("seq_idx", n) for n, s in enumerate(seqs)], dtype=np.int64),
    }
    if seqs and "label" in seqs[0]:
        arrays["label"] = np.array([s["label"] for s in seqs], dtype=np.int64)
    np.savez(path, **arrays)
    return {"sequences": int(len(seqs)), "events": int(lens.sum()),
            "min_len": int(lens.min()) if len(lens) else 0, "max_len": int(lens.max()) if len(lens) else 0}


@dataclass
class EventSequences:
    """One split in CSR form; `sequence(n)` gives one sequence as a dict of arrays."""

    seq_ptr: np.ndarray
    time_since_start: np.ndarray
    time_since_last_event: np.ndarray
    type_event: np.ndarray
    seq_idx: np.ndarray
    label: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.seq_ptr) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.seq_ptr)

    def sequence(self, n: int) -> dict:
        a, b = self.seq_ptr[n], self.seq_ptr[n + 1]
        return {"time_since_start": self.time_since_start[a:b], "time_since_last_event": self.time_since_last_event[a:b],
                "type_event": self.type_event[a:b]}


def read_sequences(path: str | Path) -> EventSequences:
    with np.load(path) as z:
        return EventSequences(z["seq_ptr"], z["time_since_start"], z["time_since_last_event"], z["type_event"],
                              z["seq_idx"], z["label"] if "label" in z.files else None)


@dataclass
class TPPData:
    name: str
    dim_process: int
    splits: dict[str, EventSequences]
    manifest: dict


def load_processed(folder: str | Path) -> TPPData:
    """Load data/processed/<dataset>/ of the tpp family (or a time2vec sequence dataset)."""
    folder = Path(folder)
    m = read_manifest(folder)
    splits = {s: read_sequences(folder / f"{s}.npz") for s in m["splits"]}
    return TPPData(m["dataset"], int(m["dim_process"]), splits, m)


def write_split_folder(*, dataset: str, family: str, splits: dict[str, list[dict]], dim_process: int, out_dir: Path,
                       sources: list[dict], standin: bool, label: str, extra: dict | None = None) -> Path:
    """Common writer for every sequence dataset: one npz per split + manifest."""
    with staged_dir(Path(out_dir)) as tmp:
        rows = {split: write_sequences(tmp / f"{split}.npz", seqs) for split, seqs in splits.items()}
        for split, seqs in splits.items():
            bad = [t for s in seqs for t in s["type_event"] if not 0 <= t < dim_process]
            if bad:
                raise ValueError(f"{dataset}/{split}: event types outside 0..{dim_process - 1}: {sorted(set(bad))[:5]}")
        manifest = build_manifest(dataset=dataset, family=family, sources=sources, rows=rows, standin=standin,
                                  label=label, files=[f"{s}.npz" for s in splits],
                                  extra={"dim_process": int(dim_process), "splits": list(splits), **(extra or {})})
        write_manifest(tmp, manifest)
    return Path(out_dir)


def prepare(*, dataset: str, options: dict, inputs: dict[str, Path], out_dir: Path, sources: list[dict],
            standin: bool, label: str) -> Path:
    """EasyTPP train/dev/test.json -> CSR npz per split. dim_process must equal the configured K."""
    K = int(options["num_event_types"])
    splits = {}
    for split in SPLITS:
        seqs = read_easytpp_json(inputs[f"{split}.json"])
        dims = {int(s["dim_process"]) for s in seqs}
        if dims and dims != {K}:
            raise ValueError(f"{dataset}/{split}.json: dim_process {sorted(dims)} != num_event_types {K} (EasyTPP asserts this)")
        splits[split] = seqs
    return write_split_folder(dataset=dataset, family="tpp", splits=splits, dim_process=K, out_dir=out_dir,
                              sources=sources, standin=standin, label=label,
                              extra={"time_origin": "rebased (EasyTPP HF JSON: first dt = 0)", "pad_token_id": K,
                                     "source_format": "easytpp_json"})


def to_easytpp_json(seqs: EventSequences, dim_process: int) -> list[dict]:
    """Back to EasyTPP's JSON records (for easy-tpp's runner, which reads local .json files)."""
    out = []
    for n in range(len(seqs)):
        s = seqs.sequence(n)
        out.append({"dim_process": int(dim_process), "seq_idx": int(seqs.seq_idx[n]), "seq_len": int(len(s["type_event"])),
                    "time_since_start": s["time_since_start"].tolist(),
                    "time_since_last_event": s["time_since_last_event"].tolist(),
                    "type_event": s["type_event"].tolist()})
    return out


def sequences_from_times(times: Iterable[Iterable[float]], types: Iterable[Iterable[int]], rebase: bool = True) -> list[dict]:
    """Build records with time_since_last_event (first = 0) from absolute times, as EasyTPP's HF JSON does."""
    out = []
    for n, (t, k) in enumerate(zip(times, types)):
        t = np.asarray(list(t), dtype=np.float64)
        dt = np.diff(t, prepend=t[0]) if len(t) else t
        out.append({"seq_idx": n, "time_since_start": (t - t[0] if rebase and len(t) else t).tolist(),
                    "time_since_last_event": dt.tolist(), "type_event": [int(x) for x in k]})
    return out
