"""The report modules whose aggregators, figure renderers and claim rules params/ may name, and what their source
says, read without importing them: the names they mark and the artifact ids they use as literals.

It sits below `registry` (it imports only `catalog`), so validation of params/ never imports the report:
`registry` checks that every name params/ uses is marked here, and `problems` checks the other direction for
`timerepro validate` (every marked name is used by params/, every artifact id a paper's report code spells
exists in that paper's params/). `report.families` imports the modules and fills the catalogs.
"""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
import re
from pathlib import Path

from timerepro.catalog import DuplicateName, decorated_names

FAMILY_MODULES: tuple[str, ...] = (
    "timerepro.report.dataset_statistics",
    "timerepro.report.linear_time",
    "timerepro.report.hawkes_attention",
    "timerepro.report.swinit",
    "timerepro.report.time2vec",
    "timerepro.report.dyg_mamba",
)

# decorator name -> what it registers (the catalogs' kinds)
DECORATORS = {"aggregator": "aggregator", "renderer": "figure renderer", "rule": "claim rule"}
# params/ field of a paper file -> the kind of name it holds
USES = {"aggregate": "aggregator", "render": "figure renderer", "rule": "claim rule"}
# a string literal that names artifacts: "table2", "fig8", "fig8, fig9"
ARTIFACT_LITERAL = re.compile(r"^(table|fig)\d+[a-z]?(\s*,\s*(table|fig)\d+[a-z]?)*$")


def modules(names: tuple[str, ...] | None = None) -> list[str]:
    """The listed modules, a package expanded into its modules (sorted), found without importing them."""
    out = []
    for name in FAMILY_MODULES if names is None else names:
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise ModuleNotFoundError(f"timerepro.report_catalog lists {name!r}, which does not exist")
        out.append(name)
        if spec.submodule_search_locations:
            out += sorted(f"{name}.{m.name}" for m in pkgutil.iter_modules(spec.submodule_search_locations))
    return out


def declared(names: tuple[str, ...] | None = None) -> dict[str, dict[str, str]]:
    """kind -> {name: module} of every function the listed modules mark, read from their source.
    DuplicateName when two functions mark the same name."""
    out: dict[str, dict[str, str]] = {kind: {} for kind in DECORATORS.values()}
    for module in modules(names):
        for kind, found in decorated_names(module, DECORATORS).items():
            for name in found:
                if name in out[kind]:
                    raise DuplicateName(f"{kind} {name!r} is registered twice: in {out[kind][name]} and in {module}")
                out[kind][name] = module
    return out


def parsed(module: str) -> ast.Module | None:
    """The syntax tree of a module's source (found on sys.path, not executed); None when it cannot be found.
    (Here, not in `catalog`: every run's fingerprint holds catalog.py, none holds this module.)"""
    spec = importlib.util.find_spec(module)
    if spec is None or not (spec.origin or "").endswith(".py"):
        return None
    return ast.parse(Path(spec.origin).read_text(encoding="utf-8"), filename=spec.origin)


def artifact_literals(module: str) -> list[tuple[int, str]]:
    """(line, artifact id) of every artifact id a module's source spells as a string literal ("fig8, fig9": two)."""
    tree = parsed(module)
    if tree is None:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ARTIFACT_LITERAL.match(node.value):
            out += [(node.lineno, a.strip()) for a in node.value.split(",")]
    return sorted(out)


def paper_of(module: str, papers) -> str | None:
    """The paper a report module belongs to (timerepro.report.<paper>[.<module>]), None for shared modules."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in papers else None


def problems(papers: dict[str, dict]) -> list[str]:
    """What report code says that params/ (`papers`: paper -> its validated file) does not: a marked aggregator,
    renderer or rule that no paper names, and an artifact id spelled in a paper's report code that the paper's
    params/ file does not define. Empty when both agree."""
    out = []
    found = declared()
    used: dict[str, set] = {kind: set() for kind in DECORATORS.values()}
    for doc in papers.values():
        for entry in doc["artifacts"] + doc["claims"]:
            for key, kind in USES.items():
                if entry.get(key):
                    used[kind].add(entry[key])
    for kind, names in found.items():
        for name in sorted(set(names) - used[kind]):
            out.append(f"{names[name]}: {kind} {name!r} is registered but no params/ file names it")
    for module in modules():
        paper = paper_of(module, papers)
        if paper is None:
            continue
        ids = {art["id"] for art in papers[paper]["artifacts"]}
        for line, art in artifact_literals(module):
            if art not in ids:
                out.append(f"{module}, line {line}: artifact {art!r} is not in params/{paper}.yaml; known: {sorted(ids)}")
    return out
