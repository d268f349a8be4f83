"""docs/map.md stays true: every file, folder and module it names exists."""

import re
from pathlib import Path

from timerepro.catalog import defined_names, split_target

ROOT = Path(__file__).parents[2]
MAP = ROOT / "docs" / "map.md"
LOCAL = ("src/", "params/", "workflow/", "tests/", "docs/", "profiles/", "benchmarks/")


def _named() -> tuple[list[str], list[str]]:
    """(repository paths, python modules or module:function targets) in backticks."""
    tokens = re.findall(r"`([^`]+)`", MAP.read_text())
    paths = [t for t in tokens if t.startswith(LOCAL) or t == "Snakefile"]
    modules = [t for t in tokens if re.fullmatch(r"timerepro(\.\w+)+(:\w+)?", t)]
    return paths, modules


def test_every_path_and_module_the_map_names_exists():
    paths, modules = _named()
    assert len(paths) > 20 and modules  # the map names what it maps
    assert not [p for p in paths if not (ROOT / p).exists()]
    missing = []
    for target in modules:
        module, attr = split_target(target) if ":" in target else (target, None)
        names = defined_names(module)
        if names is None or (attr is not None and attr not in names):
            missing.append(target)
    assert not missing, missing


def test_the_map_names_every_registered_paper_package():
    from timerepro import report_catalog

    text = MAP.read_text()
    packages = [m for m in report_catalog.FAMILY_MODULES if (ROOT / "src" / (m.replace(".", "/"))).is_dir()]
    assert packages and all(f"src/{p.replace('.', '/')}/__init__.py" in text for p in packages)
