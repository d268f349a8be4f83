"""Configs as a run resolves them: tasks and builders read every default from params/ (its one place)."""

from timerepro import registry


def resolved(task: str, model: str, overrides: dict | None = None) -> dict:
    """task defaults < model defaults < overrides, as `Registry.experiment_runs` merges them."""
    reg = registry.load()
    return {**reg.tasks[task]["defaults"], **reg.models[model]["defaults"], **(overrides or {})}
