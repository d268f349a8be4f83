"""Dynamic graphs (DyGLib/DGB and JODIE CSVs): DyGLib's preprocessing, on-disk format, splits.

Follows `preprocess_data/preprocess_data.py` and `utils/DataLoader.py` of yule-BUAA/DyGLib:
1-based ids with 0 as padding, bipartite items shifted after users, a zero edge-feature row,
172-dim zero node features, features read zero-padded to 172 (kept at their stored width: `PaddedFeatures`),
0.70/0.85 time quantiles,
and new test nodes drawn as `random.seed(2020); random.sample(test_node_set, k)` did on Python 3.10.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from timerepro.data.manifest import MANIFEST, build_manifest, read_manifest, staged_dir, write_manifest

if TYPE_CHECKING:
    import pandas as pd

FEAT_DIM = 172  # DyGLib pads node and edge features to this width for every dataset
EDGE_COLUMNS = ("u", "i", "ts", "label", "idx")


def parse_raw_csv(path: str | Path) -> tuple[pd.DataFrame, np.ndarray]:
    """DyGLib `preprocess`: skip the header line; rows `u,i,ts,label,f1..fd` -> df[u,i,ts,label,idx], feats (E,d).

    The header is skipped, never parsed: JODIE's has 5 names for 4+d fields.
    Floats use round-trip parsing so values equal Python's float(x) bit for bit.
    """
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    # pandas >= 3 parses floats exactly by default (and deprecates the option); older needs round_trip
    exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    raw = pd.read_csv(path, skiprows=1, header=None, dtype=np.float64, skipinitialspace=True, **exact)
    if raw.shape[1] < 4:
        raise ValueError(f"{path}: expected at least 4 columns (u,i,ts,label), got {raw.shape[1]}")
    ts = raw[2].to_numpy()
    if len(ts) and np.any(np.diff(ts) < 0):
        bad = int(np.argmax(np.diff(ts) < 0)) + 1
        raise ValueError(f"{path}: timestamps must be non-decreasing (row {bad + 1} goes back in time)")
    df = pd.DataFrame({
        "u": _as_int(raw[0], path), "i": _as_int(raw[1], path), "ts": ts,
        "label": raw[3].to_numpy(), "idx": np.arange(len(raw), dtype=np.int64),
    })
    feats = raw.iloc[:, 4:].to_numpy(dtype=np.float64)
    return df, feats


def _as_int(col: pd.Series, path) -> np.ndarray:
    v = col.to_numpy()
    out = v.astype(np.int64)
    if not np.array_equal(out, v):
        raise ValueError(f"{path}: node ids must be integers")
    return out


def reindex(df: pd.DataFrame, bipartite: bool) -> pd.DataFrame:
    """DyGLib `reindex`: bipartite items get ids after all users; then u, i, idx all start at 1."""
    new = df.copy()
    if bipartite:
        for col in ("u", "i"):
            ids = df[col]
            if not (ids.max() - ids.min() + 1 == ids.nunique() and ids.min() == 0):
                raise ValueError(f"bipartite graph: column {col} must hold every id from 0 to its max")
        new["i"] = df["i"] + df["u"].max() + 1
    new["u"] = new["u"] + 1
    new["i"] = new["i"] + 1
    new["idx"] = new["idx"] + 1
    return new


def preprocess(csv_path: str | Path, bipartite: bool, node_feat_dim: int = FEAT_DIM):
    """DyGLib `preprocess_data`: (edge df, edge feats (E+1,d) with zero row 0, node feats (N+1,node_feat_dim))."""
    df, feats = parse_raw_csv(csv_path)
    new = reindex(df, bipartite)
    # [E, d] -> [E+1, d]: row 0 is the padding edge
    edge_feat = np.vstack([np.zeros((1, feats.shape[1])), feats])
    max_id = int(max(new["u"].max(), new["i"].max()))
    node_feat = np.zeros((max_id + 1, node_feat_dim))
    return new, edge_feat, node_feat


def dyglib_names(upstream: str) -> dict[str, str]:
    return {"csv": f"ml_{upstream}.csv", "edge": f"ml_{upstream}.npy", "node": f"ml_{upstream}_node.npy"}


def write_dyglib_files(folder: Path, upstream: str, df: pd.DataFrame, edge_feat: np.ndarray, node_feat: np.ndarray) -> None:
    """ml_<name>.csv (with the pandas index, as DyGLib writes it), ml_<name>.npy, ml_<name>_node.npy."""
    names = dyglib_names(upstream)
    df.loc[:, list(EDGE_COLUMNS)].to_csv(folder / names["csv"])
    np.save(folder / names["edge"], edge_feat)
    np.save(folder / names["node"], node_feat)


def read_dyglib_files(folder: Path, upstream: str):
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    names = dyglib_names(upstream)
    df = pd.read_csv(folder / names["csv"])
    return df, np.load(folder / names["edge"]), np.load(folder / names["node"])


def check_like_dyglib(folder_a: Path, folder_b: Path, upstream: str) -> None:
    """DyGLib `check_data`: frames equal, feature arrays of equal shape, min and max."""
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    df_a, e_a, n_a = read_dyglib_files(folder_a, upstream)
    df_b, e_b, n_b = read_dyglib_files(folder_b, upstream)
    pd.testing.assert_frame_equal(df_a, df_b)
    for name, a, b in (("edge", e_a, e_b), ("node", n_a, n_b)):
        if a.shape != b.shape or a.max() != b.max() or a.min() != b.min():
            raise AssertionError(f"{upstream}: {name} features differ from the shipped ml_* files")


def find_upstream_dir(extracted: Path, upstream: str) -> Path:
    """The folder of the zip that holds <Name>.csv or ml_<Name>.csv (zip layout <Name>/...)."""
    for cand in (extracted / upstream, extracted):
        if (cand / f"{upstream}.csv").exists() or (cand / f"ml_{upstream}.csv").exists():
            return cand
    hits = list(extracted.rglob(f"ml_{upstream}.csv")) + list(extracted.rglob(f"{upstream}.csv"))
    if hits:
        return hits[0].parent
    raise FileNotFoundError(f"no {upstream}.csv or ml_{upstream}.csv under {extracted}")


def prepare(*, dataset: str, upstream: str, options: dict, source_dir: Path, out_dir: Path,
            sources: list[dict], standin: bool, label: str, kind: str | None = None) -> Path:
    """Turn an extracted DyGLib zip (or a JODIE CSV folder) into data/processed/<dataset>/.

    Outputs: edges.npz (u,i,ts,label,idx), the DyGLib ml_* trio, manifest.json.
    Shipped-only sets (enron, SocialEvo, uci) are copied as DyGLib does; others are recomputed from
    <Name>.csv and, when the zip ships ml_* files, checked against them like DyGLib's check_data.
    `kind` (a `DataKind` value) goes into the manifest when the data are not the upstream bytes (a package copy).
    """
    folder = find_upstream_dir(Path(source_dir), upstream)
    names = dyglib_names(upstream)
    extra: dict = {"bipartite": bool(options.get("bipartite")), "upstream_name": upstream, **({"kind": kind} if kind else {})}
    with staged_dir(out_dir) as tmp:
        if options.get("copy_shipped"):
            for key in ("csv", "edge", "node"):
                shutil.copyfile(folder / names[key], tmp / names[key])
            extra["procedure"] = "copied shipped ml_* files (DyGLib: raw data unavailable)"
        else:
            df, edge_feat, node_feat = preprocess(folder / f"{upstream}.csv", bool(options.get("bipartite")),
                                                  int(options.get("node_feat_dim", FEAT_DIM)))
            write_dyglib_files(tmp, upstream, df, edge_feat, node_feat)
            extra["procedure"] = "DyGLib preprocess_data (reindex, zero padding rows)"
            if (folder / names["csv"]).exists():
                check_like_dyglib(tmp, folder, upstream)
                extra["checked_against_shipped_ml_files"] = True
        df, edge_feat, node_feat = read_dyglib_files(tmp, upstream)
        np.savez(tmp / "edges.npz", **{c: df[c].to_numpy() for c in EDGE_COLUMNS})
        rows = {"edges": int(len(df)), "nodes": int(node_feat.shape[0] - 1),
                "edge_feat_dim": int(edge_feat.shape[1]), "node_feat_dim": int(node_feat.shape[1])}
        files = ["edges.npz", *names.values()]
        write_manifest(tmp, build_manifest(dataset=dataset, family="ctdg", sources=sources, rows=rows,
                                           standin=standin, label=label, files=files, extra=extra))
    return Path(out_dir)


@dataclass(frozen=True, eq=False)
class PaddedFeatures:
    """A feature table kept at its stored width and dtype, read as DyGLib's table zero-padded to `width` columns:
    gathered rows are padded, the table never is (Contacts' 1-wide edge table: 19 MB, not 3.3 GB of float64)."""

    values: np.ndarray  # [R, d] as stored, d <= width
    width: int

    def __post_init__(self):
        if self.values.ndim != 2:
            raise ValueError(f"a feature table is (rows, columns), got shape {self.values.shape}")
        if self.values.shape[1] > self.width:
            raise ValueError(f"feature dimension {self.values.shape[1]} is bigger than {self.width}")

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape[0], self.width

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def nbytes(self) -> int:
        return self.values.nbytes

    def __len__(self) -> int:
        return self.values.shape[0]

    def __getitem__(self, index) -> np.ndarray:
        if isinstance(index, tuple):  # [rows, columns]: the padded rows, then their columns
            rows, columns = index
            return self[rows][..., columns]
        got = self.values[index]  # (..., d)
        pad = self.width - got.shape[-1]
        if pad == 0:
            return got
        # (..., d) -> (..., width): zeros appended, as in the padded table
        return np.concatenate([got, np.zeros((*got.shape[:-1], pad), dtype=got.dtype)], axis=-1)

    def any(self) -> bool:
        return bool(self.values.any())

    def padded(self) -> np.ndarray:
        """The whole (R, width) table, materialised (small tables and tests only)."""
        return self[:]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self.padded()
        return out if dtype is None else out.astype(dtype)


@dataclass
class CTDGData:
    """A processed dynamic graph; feature tables read zero-padded to 172 columns as DyGLib's loader pads them."""

    name: str
    src: np.ndarray  # [E] int64, 1-based
    dst: np.ndarray  # [E] int64, 1-based
    ts: np.ndarray  # [E] float64, non-decreasing
    edge_ids: np.ndarray  # [E] int64, 1-based (row of edge_feat)
    labels: np.ndarray  # [E] float64
    edge_feat: PaddedFeatures | np.ndarray  # [E+1, 172] as read (PaddedFeatures: stored at its own width)
    node_feat: PaddedFeatures | np.ndarray  # [N+1, 172]
    manifest: dict


def pad_features(feat: np.ndarray, width: int = FEAT_DIM) -> PaddedFeatures:
    """DyGLib's zero padding of a feature table to `width` columns, done when rows are read (`PaddedFeatures`)."""
    return PaddedFeatures(np.asarray(feat), width)


def load_processed(folder: str | Path, pad_to: int = FEAT_DIM) -> CTDGData:
    """Load data/processed/<dataset>/ (edges.npz + ml_* features), features read with DyGLib's padding."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    upstream = manifest["upstream_name"]
    names = dyglib_names(upstream)
    with np.load(folder / "edges.npz") as z:
        arrays = {k: z[k] for k in EDGE_COLUMNS}
    edge_feat = np.load(folder / names["edge"])
    node_feat = np.load(folder / names["node"])
    return CTDGData(
        name=manifest["dataset"], src=arrays["u"].astype(np.int64), dst=arrays["i"].astype(np.int64),
        ts=arrays["ts"].astype(np.float64), edge_ids=arrays["idx"].astype(np.int64), labels=arrays["label"],
        edge_feat=pad_features(edge_feat, pad_to), node_feat=pad_features(node_feat, pad_to), manifest=manifest,
    )


@dataclass
class LinkSplit:
    """Boolean masks over the edges of a CTDGData, as DyGLib's get_link_prediction_data builds them."""

    val_time: float
    test_time: float
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    new_node_val: np.ndarray
    new_node_test: np.ndarray
    new_test_nodes: frozenset
    new_nodes: frozenset


def split_times(ts: np.ndarray, val_ratio: float = 0.15, test_ratio: float = 0.15) -> tuple[float, float]:
    val_time, test_time = np.quantile(ts, [(1 - val_ratio - test_ratio), (1 - test_ratio)])
    return float(val_time), float(test_time)


def sample_new_test_nodes(test_node_set: set, num_nodes: int, seed: int = 2020) -> set:
    """DyGLib's `random.seed(seed); random.sample(test_node_set, int(0.1*num_nodes))` as on Python <= 3.10.

    Python 3.10 turned the set into tuple(set) inside sample(); 3.11 refuses sets, so we do it here.
    The set must have been built the same way as DyGLib builds it for the tuple order to match.
    """
    rng = random.Random(seed)
    return set(rng.sample(tuple(test_node_set), int(0.1 * num_nodes)))


def link_prediction_split(data: CTDGData, val_ratio: float = 0.15, test_ratio: float = 0.15,
                          seed: int = 2020) -> LinkSplit:
    """Transductive train/val/test masks and inductive (new-node) val/test masks."""
    src, dst, ts = data.src, data.dst, data.ts
    val_time, test_time = split_times(ts, val_ratio, test_ratio)
    num_nodes = len(set(src.tolist()) | set(dst.tolist()))
    after_val = ts > val_time
    # built exactly as DyGLib: set(src[...]).union(set(dst[...])) -> same iteration order
    test_node_set = set(src[after_val].tolist()).union(set(dst[after_val].tolist()))
    new_test = sample_new_test_nodes(test_node_set, num_nodes, seed)
    src_new = np.fromiter((x in new_test for x in src.tolist()), bool, len(src))
    dst_new = np.fromiter((x in new_test for x in dst.tolist()), bool, len(dst))
    train = (ts <= val_time) & ~src_new & ~dst_new
    train_nodes = set(src[train].tolist()) | set(dst[train].tolist())
    assert not (train_nodes & new_test)
    new_nodes = (set(src.tolist()) | set(dst.tolist())) - train_nodes
    val = (ts <= test_time) & (ts > val_time)
    test = ts > test_time
    has_new = np.fromiter((s in new_nodes or d in new_nodes for s, d in zip(src.tolist(), dst.tolist())), bool, len(src))
    return LinkSplit(val_time, test_time, train, val, test, val & has_new, test & has_new,
                     frozenset(new_test), frozenset(new_nodes))


@dataclass
class NodeSplit:
    val_time: float
    test_time: float
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


def node_classification_split(data: CTDGData, val_ratio: float = 0.15, test_ratio: float = 0.15) -> NodeSplit:
    """DyGLib get_node_classification_data: the same time quantiles, no held-out nodes."""
    val_time, test_time = split_times(data.ts, val_ratio, test_ratio)
    ts = data.ts
    return NodeSplit(val_time, test_time, ts <= val_time, (ts <= test_time) & (ts > val_time), ts > test_time)


def is_processed(folder: Path) -> bool:
    return (Path(folder) / MANIFEST).exists()
