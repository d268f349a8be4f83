"""Which downloaded datasets a run config reads (the data part of its fingerprint, and what pinning must cover)."""

from __future__ import annotations


def run_datasets(config: dict) -> list[str]:
    """The downloaded datasets a run reads (configs of tasks that use downloads carry `standin`):
    `dataset` or `series` when the config names one, else every name of `datasets`."""
    if "standin" not in config:
        return []
    for key in ("dataset", "series"):
        if isinstance(config.get(key), str):
            return [config[key]]
    return list(config.get("datasets") or [])
