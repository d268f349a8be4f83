"""Task families by name. Each entry is 'module:function' and is imported only when used, so
listing runs or validating params never imports a model library."""

from __future__ import annotations

import importlib
from typing import Callable

TASKS: dict[str, str] = {
    "sequence_classification": "timerepro.tasks.sequence_classification:run",
    "dataset_statistics": "timerepro.tasks.dataset_statistics:run",
    "link_prediction": "timerepro.tasks.link_prediction:run",
    "temporal_point_process": "timerepro.tasks.temporal_point_process:run",
    "forecasting": "timerepro.tasks.forecasting:run",
    "node_classification": "timerepro.tasks.node_classification:run",
    "sequence_cost": "timerepro.tasks.sequence_cost:run",  # dyg_mamba Figure 3
}


def get_task(name: str) -> Callable[[dict, object], dict]:
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; known: {sorted(TASKS)}")
    module, func = TASKS[name].split(":")
    return getattr(importlib.import_module(module), func)


def get_group_runner(name: str) -> Callable | None:
    """The task's `run_group(configs, ctxs, finish)` if it trains several seeds at once, else None."""
    get_task(name)
    module = TASKS[name].split(":")[0]
    return getattr(importlib.import_module(module), "run_group", None)
