"""Task families by name: params/tasks.yaml's `module: package.module:function` is the only map from a
task name to its code. A task is imported only when used, so listing runs or validating params never
imports a model library.

A task function is `run(config: dict, ctx: runs.RunContext) -> dict` with "metrics" (written to
metrics.json), "data" (what the run read, with its `kind`: `timerepro.datakind`) and optional
"resumed_from_epoch". A task that trains the seeds of one configuration together also defines
`run_group(configs, ctxs, finish)` in the same module. A task whose configs carry params/ tables to
resolve (per-dataset defaults, variants: `tasks/effective.py`) exposes `effective_config(config)`; the run
resolves its config with it once, before the task runs, and records the result.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, Mapping

from timerepro.catalog import UnknownName, resolve, split_target
from timerepro.paths import params_dir
from timerepro.schema import load_yaml

SHARED = "shared_parameters"  # the block of params/tasks.yaml that is not a task


@lru_cache(maxsize=8)
def _targets(path: str, mtime: float) -> dict[str, str]:
    doc = load_yaml(Path(path)) or {}
    return {name: spec["module"] for name, spec in doc.items() if name != SHARED}


class _TaskTargets(Mapping[str, str]):
    """task name -> 'package.module:function', read from params/tasks.yaml (of TIMEREPRO_ROOT)."""

    def _table(self) -> dict[str, str]:
        path = params_dir() / "tasks.yaml"
        return _targets(str(path), path.stat().st_mtime if path.is_file() else 0.0)

    def __getitem__(self, name: str) -> str:
        table = self._table()
        if name not in table:
            raise UnknownName(f"unknown task {name!r}; known: {sorted(table)} (params/tasks.yaml)")
        return table[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


TASKS: Mapping[str, str] = _TaskTargets()


def get_task(name: str) -> Callable[[dict, object], dict]:
    return resolve(TASKS[name])


def get_group_runner(name: str) -> Callable | None:
    """The task's `run_group(configs, ctxs, finish)` if it trains several seeds at once, else None."""
    module, _ = split_target(TASKS[name])
    return getattr(importlib.import_module(module), "run_group", None)



def effective_config(config: dict) -> dict:
    """THE effective config of a run, what its task runs with (runs.py resolves it once and records it): the
    task module's `effective_config(config)` (tasks/effective.py) where its configs carry tables to resolve,
    else the declared config itself."""
    module, _ = split_target(TASKS[config["task"]])
    resolver = getattr(importlib.import_module(module), "effective_config", None)
    return config if resolver is None else resolver(config)
