"""Time2Vec datasets: Event-MNIST (IDX gzip), N-TIDIGITS18 (HDF5), SOF (Gatech pickles), Last.fm 1K
(TimeLSTM preprocessing); CiteULike is unobtainable. All end in the sequence format of tpp.py.
"""

from __future__ import annotations

import gzip
import hashlib
import struct
from pathlib import Path

import numpy as np
import pandas as pd

from timerepro.data import tpp

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
    df = pd.read_csv(tsv, sep="\t", header=None, on_bad_lines="skip", quoting=3, dtype=str,
                     names=["userid", "timestamp", "artid", "artname", "traid", "tranname"])
    df = df[df["tranname"].notna() & df["timestamp"].notna()]
    counts = df.groupby("tranname").size().reset_index(name="n").sort_values(["n", "tranname"], ascending=[False, True])
    index2item = counts["tranname"].tolist()
    item2index = {v: i for i, v in enumerate(index2item)}
    df = df.assign(t=pd.to_datetime(df["timestamp"], utc=True, format="ISO8601"))
    sizes = df.groupby("userid").size().reset_index(name="n").sort_values(["n", "userid"], kind="stable")
    groups = dict(tuple(df.groupby("userid", sort=False)))
    seqs = []
    for uid in sizes["userid"]:
        g = groups[uid].sort_values("t", kind="stable")
        t = (g["t"] - g["t"].iloc[0]).dt.total_seconds().to_numpy()
        delta = np.append(np.diff(t), 0.0)  # seconds to the NEXT play, last = 0 (TimeLSTM)
        acc = np.concatenate([[0.0], np.cumsum(delta[:-1])])
        seqs.append({"seq_idx": len(seqs), "user": uid, "time_since_start": acc.tolist(),
                     "time_since_last_event": np.diff(acc, prepend=0.0).tolist(), "delta_next": delta.tolist(),
                     "type_event": [item2index[x] for x in g["tranname"]]})
    if len(seqs) < n_train + n_test:  # stand-ins: keep upstream's 800:192 proportion, disjoint
        n_train = round(len(seqs) * n_train / (n_train + n_test))
        n_test = len(seqs) - n_train
    return {"train": seqs[:n_train], "test": seqs[len(seqs) - n_test:] if n_test else []}, index2item


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
    if kind == "timelstm_lastfm":
        (folder,) = inputs.values()
        tsv = next(Path(folder).rglob("userid-timestamp-artid-artname-traid-traname.tsv"))
        splits, index2item = timelstm_lastfm(tsv, int(options.get("n_train_users", 800)), int(options.get("n_test_users", 192)))
        vocab = len(index2item)
        for seqs in splits.values():
            for s in seqs:
                s.pop("user", None), s.pop("delta_next", None)
        item_hash = hashlib.sha256("\n".join(index2item).encode()).hexdigest()
        return tpp.write_split_folder(splits=splits, dim_process=max(vocab, 1),
                                      extra={"n_items": vocab, "vocab_used_by_paper": options.get("vocab"),
                                             "index2item_sha256": item_hash, "max_seq_len": options.get("max_seq_len")},
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
