"""The import graph of src/timerepro keeps its layers (docs/map.md, section Layers): no import runs up a layer,
and no import circle exists. Imports are read with the fingerprint's parser (nested imports count)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from timerepro import fingerprint
from timerepro.fingerprint import PACKAGE, Source

ROOT = Path(__file__).parents[2]
PACKAGE_DIR = Path(fingerprint.__file__).resolve().parent

# Imports that break the layers today, each to be removed by the change that fixes it (the test fails while an
# entry here no longer exists, so the set only shrinks). All are issue 22's report half (report/ packages,
# the catalogs that move out of report/ so that `registry` does not import it):
KNOWN_VIOLATIONS: set[tuple[str, str]] = set()  # none left: add an edge here only with the issue that removes it


def layers() -> list[list[str]]:
    """The rows of docs/map.md's Layers table, top (imported by every layer below) first."""
    text = (ROOT / "docs" / "map.md").read_text()
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| layer")]
    return [re.findall(r"`([^`]+)`", row.split("|")[2]) for row in rows]


def relative(module: str) -> str:
    return module[len(PACKAGE) + 1:] if module != PACKAGE else PACKAGE


def modules() -> list[str]:
    out = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE_DIR).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append(".".join([PACKAGE, *parts]))
    return out


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (relative names; `from m import name` counts as m)."""
    source = Source(PACKAGE_DIR)
    graph = {}
    for module in modules():
        targets = {imp.module for imp in source.get(module).imports if source.is_module(imp.module)}
        graph[relative(module)] = {relative(t) for t in targets if t != module}
    return graph


def layer_of(module: str, table: list[list[str]]) -> int | None:
    """Index of the row whose longest name covers `module` (the name itself or a package above it)."""
    best = None
    for i, names in enumerate(table):
        for name in names:
            if module == name or module.startswith(name + "."):
                if best is None or len(name) > len(best[1]):
                    best = (i, name)
    return None if best is None else best[0]


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_the_layer_table_places_every_module_once(graph):
    table = layers()
    names = [n for row in table for n in row]
    assert len(table) >= 8 and len(names) == len(set(names))
    assert not [m for m in graph if layer_of(m, table) is None]


def test_no_import_runs_up_a_layer(graph):
    table = layers()
    up = {(m, t) for m, targets in graph.items() for t in targets if layer_of(t, table) > layer_of(m, table)}
    assert not up - KNOWN_VIOLATIONS, sorted(up - KNOWN_VIOLATIONS)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle(graph):
    kept = {m: {t for t in targets if (m, t) not in KNOWN_VIOLATIONS} for m, targets in graph.items()}
    assert not circles(kept)


def test_the_known_violations_still_exist(graph):
    """An entry fixed is an entry removed: the set lists only what is still to do."""
    assert not [edge for edge in KNOWN_VIOLATIONS if edge[1] not in graph.get(edge[0], set())]


def test_the_checks_find_what_they_look_for():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    table = [["io"], ["data"], ["models"]]
    assert layer_of("models.graph.tgat", table) == 2 and layer_of("io", table) == 0 and layer_of("other", table) is None
