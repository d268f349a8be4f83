"""Where each task family's aggregators, figure renderers and claim rules live.

A family module registers its functions with the decorators `aggregate.aggregator`,
`figures.renderer` and `claims.rule`; listing it here is all it takes for params/ to use them.
"""

from __future__ import annotations

import importlib

FAMILY_MODULES: tuple[str, ...] = (
    "timerepro.report.aggregate",
    "timerepro.report.figures",
    "timerepro.report.claims",
    "timerepro.report.link_prediction",
    "timerepro.report.forecasting",
    "timerepro.report.tpp",
    "timerepro.report.dyg_mamba",
)


def load() -> None:
    """Import every family module once, filling the three registries."""
    for name in FAMILY_MODULES:
        importlib.import_module(name)
