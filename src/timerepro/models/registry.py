"""Models by name: params/models.yaml's `module: package.module:function` is the only map from a model
name to its code, a builder. A task looks its models up in `TaskModels(<task family>)`; a builder is
imported only when looked up. Each task family calls its builders with one signature:

| task family | builder signature |
|---|---|
| sequence_classification | `build(config, time_mean, time_std) -> nn.Module` |
| link_prediction, node_classification | `build(config, data: CTDGData, split: LinkSplit, train_graph: TemporalNeighbors) -> nn.Module` with `pair_embeddings(src, dst, times)`, `set_graph(neighbors, rng)`, `out_dim` (tasks/link_prediction/) |
| temporal_point_process | `build(config, num_event_types) -> nn.Module` with `encode`, `intensities_at` (timerepro.tpp.likelihood) |
| forecasting | `build(config, n_vars) -> nn.Module`, [B, seq_len, V] -> [B, pred_len, V] |
| event_classification, next_item | `build(config, n_types, n_out) -> nn.Module` with `states(types, tau, lengths)` (models/seq/time_lstm.py) |

`config` is the resolved run config: the model's `defaults` in params/models.yaml are already merged in.
A new model is its builder plus one entry in params/models.yaml (task, module, defaults).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, Mapping

from timerepro.catalog import UnknownName, resolve
from timerepro.paths import params_dir
from timerepro.schema import load_yaml

SIGNATURES = {
    "sequence_classification": "build(config, time_mean, time_std)",
    "link_prediction": "build(config, data, split, train_graph)",
    "node_classification": "build(config, data, split, train_graph)",
    "temporal_point_process": "build(config, num_event_types)",
    "forecasting": "build(config, n_vars)",
    "event_classification": "build(config, n_types, n_out)",
    "next_item": "build(config, n_types, n_out)",
}


def serves(spec: dict) -> list[str]:
    """The task families a model serves (`task:` in params/models.yaml, one name or a list)."""
    return [spec["task"]] if isinstance(spec["task"], str) else list(spec["task"])


@lru_cache(maxsize=8)
def _models(path: str, mtime: float) -> dict[str, dict]:
    return load_yaml(Path(path)) or {}


def model_specs() -> dict[str, dict]:
    """params/models.yaml (of TIMEREPRO_ROOT) as read, re-read when the file changes."""
    path = params_dir() / "models.yaml"
    return _models(str(path), path.stat().st_mtime if path.is_file() else 0.0)


class TaskModels(Mapping[str, Callable]):
    """The models of one task family: name -> builder (imported on lookup)."""

    def __init__(self, task: str):
        self.task = task

    def _names(self) -> list[str]:
        return [name for name, spec in model_specs().items() if self.task in serves(spec)]

    def target(self, name: str) -> str:
        """'package.module:function' of the builder of `name`."""
        spec = model_specs().get(name)
        if spec is None or self.task not in serves(spec):
            raise UnknownName(f"unknown {self.task} model {name!r}; known: {sorted(self._names())} "
                              "(params/models.yaml)")
        return spec["module"]

    def __getitem__(self, name: str) -> Callable:
        return resolve(self.target(name))

    def __contains__(self, name) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


def build(task: str, name: str, *args):
    """Build model `name` of task family `task` with that family's builder arguments."""
    return TaskModels(task)[name](*args)
