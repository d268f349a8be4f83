"""Replace an upstream function once, marked, with the original kept as `__wrapped__`: the Snakefile's patches of
Snakemake and of its SLURM plugin (timerepro.cluster, timerepro.scheduler_timer), each applied at every parse."""

from __future__ import annotations

from collections.abc import Callable

_MARK = "_timerepro_patched"


def replace_once(owner, name: str, make: Callable[[Callable], Callable]) -> bool:
    """Set `owner.name` to `make(upstream)` unless that is done: False where `owner` has no `name` (an upstream
    version without it), True when it is (now) replaced. A second call (a Snakefile parsed again) wraps nothing."""
    upstream = getattr(owner, name, None)
    if upstream is None:
        return False
    if getattr(upstream, _MARK, False):
        return True
    replacement = make(upstream)
    setattr(replacement, _MARK, True)
    replacement.__wrapped__ = upstream  # type: ignore[attr-defined]
    setattr(owner, name, replacement)
    return True
