"""Temporal-point-process models by name. Each entry is 'module:function', imported only when used, so
listing runs or validating params never imports a model.

A builder has the signature `build(config: dict, num_event_types: int) -> nn.Module`: `config` is the model
block of a resolved run config (params/models.yaml defaults merged with the experiment's overrides), and the
module meets the protocol of `timerepro.tpp.likelihood`: `encode(time_seqs, type_seqs[, attention_mask])
-> hidden [B, L, D]` and `intensities_at(times_since_last [B, L, S], hidden [B, L, D]) -> [B, L, S, K]`.
Padding id = num_event_types (EasyTPP). A model may define `optimizer_param_groups(weight_decay)` for its own
Adam groups; otherwise the task uses one group (`timerepro.tasks.temporal_point_process.param_groups`).
"""

from __future__ import annotations

import importlib
from typing import Callable

from torch import nn

MODELS: dict[str, str] = {
    "hawkes_attention": "timerepro.models.tpp.builders:hawkes_attention",
    # EasyTPP's baselines (easy-tpp 0.3.0), Table 6
    **{name: f"timerepro.models.tpp.easytpp:{name}" for name in
       ("rmtpp", "nhp", "sahp", "thp", "attnhp", "odetpp", "fullynn", "intensity_free")},
}


def get_model_builder(name: str) -> Callable[[dict, int], nn.Module]:
    """The builder registered under `name` (imported now)."""
    if name not in MODELS:
        raise KeyError(f"unknown TPP model {name!r}; known: {sorted(MODELS)}")
    module, func = MODELS[name].split(":")
    return getattr(importlib.import_module(module), func)


def build_model(name: str, config: dict, num_event_types: int) -> nn.Module:
    """Build the registered model `name` for `num_event_types` event types."""
    return get_model_builder(name)(config, num_event_types)
