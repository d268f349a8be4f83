"""DyGLib's per-dataset best configurations, kept under `dataset_defaults` in params/models.yaml."""

from __future__ import annotations


def with_dataset_defaults(config: dict) -> dict:
    """The config with `dataset_defaults[<dataset>]`, then `dataset_defaults["default"]`, filling the keys
    it does not set (a value set in the config always wins)."""
    per_dataset = config.get("dataset_defaults", {})
    return {**per_dataset.get("default", {}), **per_dataset.get(str(config.get("dataset")), {}), **config}
