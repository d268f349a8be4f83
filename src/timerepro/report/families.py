"""Fills the aggregator, renderer and rule catalogs from the modules whose names params/ may use.

A module marks its functions with the decorators `aggregate.aggregator`, `figures.renderer` and
`claims.rule`; listing it (or its package: every module in it) in `timerepro.report_catalog.FAMILY_MODULES`
is all it takes for params/ to use its names. `fill(catalog)` adds the marked functions to a catalog,
explicitly and once per name (a name marked twice is refused); `report_catalog.declared()` reads the same
names from the modules' source without importing them, so `timerepro validate` checks every name params/
uses before anything runs (and `registry`, below the report, never imports it).
"""

from __future__ import annotations

import importlib

from timerepro.report_catalog import modules


def fill(*catalogs) -> None:
    """Import every listed module and add its functions marked for each of `catalogs` (each catalog's `fill`
    passes itself: this module imports none of aggregate, claims, figures, so no import circle)."""
    for module in modules():
        imported = importlib.import_module(module)
        for catalog in catalogs:
            catalog.add_marked(imported)


ENGINE = ("timerepro.report", "timerepro.report.aggregate", "timerepro.report.render", "timerepro.report.claims",
          "timerepro.report.html")


def report_fingerprint(source=None) -> str:
    """Digest of the code that turns run records into aggregates, tables and figures: the report engine and every
    module of report_catalog.FAMILY_MODULES, with what they import (`source`: a `fingerprint.Source`, the installed
    package by default).
    Its change makes every paper's aggregation due again without touching a run (records.code_stamp). It lives
    here, not in fingerprint.py, which runs import: a run's fingerprint must not follow it into the report."""
    from timerepro.fingerprint import code_fingerprint

    return code_fingerprint(list(ENGINE) + modules(), source=source).digest
