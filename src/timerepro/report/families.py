"""The modules whose aggregators, figure renderers and claim rules params/ may name.

A module marks its functions with the decorators `aggregate.aggregator`, `figures.renderer` and
`claims.rule`; listing it (or its package: every module in it) here is all it takes for params/ to
use its names. `load()` adds the marked functions to the three catalogs, explicitly and once per
name (a name marked twice is refused); `declared()` reads the same names from the modules' source
without importing them, so `timerepro validate` checks every name params/ uses before anything runs.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil

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


def modules(names: tuple[str, ...] | None = None) -> list[str]:
    """The listed modules, a package expanded into its modules (sorted), found without importing them."""
    out = []
    for name in FAMILY_MODULES if names is None else names:
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise ModuleNotFoundError(f"timerepro.report.families lists {name!r}, which does not exist")
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


def load() -> None:
    """Import every listed module and add its marked functions to the aggregator, renderer and rule catalogs."""
    from . import aggregate, claims, figures

    for module in modules():
        imported = importlib.import_module(module)
        for catalog in (aggregate.AGGREGATORS, figures.RENDERERS, claims.RULES):
            catalog.add_marked(imported)


ENGINE = ("timerepro.report", "timerepro.report.aggregate", "timerepro.report.render", "timerepro.report.claims",
          "timerepro.report.html")


def report_fingerprint(source=None) -> str:
    """Digest of the code that turns run records into aggregates, tables and figures: the report engine and every
    module listed here, with what they import (`source`: a `fingerprint.Source`, the installed package by default).
    Its change makes every paper's aggregation due again without touching a run (records.code_stamp). It lives
    here, not in fingerprint.py, which runs import: a run's fingerprint must not follow it into the report."""
    from timerepro.fingerprint import code_fingerprint

    return code_fingerprint(list(ENGINE) + modules(), source=source).digest
