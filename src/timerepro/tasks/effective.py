"""The effective config of a run: its declared config (what the run id hashes) with the tables of params/
applied, resolved by `effective_config` once, before the task runs, and written into the run record
(`effective_config.json`, read back by `records.read_effective_config`).

Order, as the graph tasks have always applied it: `per_dataset[<dataset>]` over the config and the history
length on the model's knob (`overrides.resolve`), then DyGLib's per-dataset best values fill the keys still
unset (`with_dataset_defaults`), then the named `variant` of a model with `variants` (DyG-Mamba's ablations)
sets its switches over the config's. The tables stay in the result (the builders read the values, not them).
A task opts in by exposing this function as its module's `effective_config` (tasks/registry.py).
"""

from __future__ import annotations

from timerepro.models.graph.defaults import with_dataset_defaults
from timerepro.models.graph.overrides import resolve


def with_variant(config: dict) -> dict:
    """The config with `variants[<variant>]` set over it (unchanged without `variants` or `variant`)."""
    variants, name = config.get("variants"), config.get("variant")
    if not variants or name is None:
        return config
    if name not in variants:
        raise KeyError(f"unknown variant {name!r} of model {config.get('model')!r} (config key 'variant'); "
                       f"known: {sorted(variants)}")
    return {**config, **variants[name]}


def effective_config(config: dict) -> dict:
    """What the task and the model builder run with: overrides and history length, dataset defaults, variant."""
    return with_variant(with_dataset_defaults(resolve(config)))
