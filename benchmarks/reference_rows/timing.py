"""Per-step timing of the reference table's processes, and floors replayed outside the profiler (issue 27).

A process's figure is the median of its timed steps (wall and CPU seconds, `time.process_time`: every thread of
the process), so that one slow step (a page-faulting allocation, a neighbour on the core) does not move it; the
steps themselves are kept, with the minor page faults each took, so a spread can be traced. A floor's matrix
products are recorded by torch.profiler (their shapes) and timed again outside it: under the profiler each
kernel's self time carries the profiler's own cost, so a profiled floor can exceed an unprofiled step.
"""

from __future__ import annotations

import resource
import time
from statistics import median

# the matrix-product kernels a floor replays (torch.profiler names): operand shapes -> the call at those shapes
REPLAY = {
    "aten::mm": lambda t, s: (t(s[0]), t(s[1])),
    "aten::bmm": lambda t, s: (t(s[0]), t(s[1])),
    "aten::addmm": lambda t, s: (t(s[0]), t(s[1]), t(s[2])),
    "aten::_addmm_activation": lambda t, s: (t(s[0]), t(s[1]), t(s[2])),
    "aten::baddbmm": lambda t, s: (t(s[0]), t(s[1]), t(s[2])),
    "aten::addbmm": lambda t, s: (t(s[0]), t(s[1]), t(s[2])),
    "aten::mv": lambda t, s: (t(s[0]), t(s[1])),
    "aten::addmv": lambda t, s: (t(s[0]), t(s[1]), t(s[2])),
    "aten::dot": lambda t, s: (t(s[0]), t(s[1])),
}
ALIAS = {"aten::_addmm_activation": "addmm"}  # replayed as the product alone (its activation is not one)


def timed_iter(items, record: dict, sync=None):
    """The items, recording into `record` (lists wall, cpu, sys, minflt) each item's fetch and the consumer's work on it
    (the time from asking for the item to asking for the next): a loop's steps, timed from outside the loop. `sync`
    (e.g. torch.cuda.synchronize) runs before every clock read, so that a step's queued GPU work counts in it."""
    it = iter(items)
    while True:
        if sync is not None:
            sync()
        r, w, c = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter(), time.process_time()
        try:
            item = next(it)
        except StopIteration:
            return
        yield item
        if sync is not None:
            sync()
        record["wall"].append(time.perf_counter() - w)
        record["cpu"].append(time.process_time() - c)
        after = resource.getrusage(resource.RUSAGE_SELF)
        record["sys"].append(after.ru_stime - r.ru_stime)  # the kernel's share of cpu: page faults, unmapping
        record["minflt"].append(after.ru_minflt - r.ru_minflt)


def new_record() -> dict:
    return {"wall": [], "cpu": [], "sys": [], "minflt": []}


def timed(step, items, sync=None) -> tuple[list, dict]:
    """`step(item)` for each item; the results and, per call, its wall, CPU and system seconds and minor page faults
    (`sync`: as `timed_iter`'s)."""
    record = new_record()
    return [step(item) for item in timed_iter(items, record, sync)], record


def summary(prefix: str, warm: dict, steps: dict) -> dict:
    """A phase's figures: `<prefix>_bps` (1 / the median wall step), `<prefix>_step_s`, `<prefix>_cpu_s` (medians),
    and the steps themselves (`<prefix>_steps`: wall, cpu, minflt, the warm-up's first)."""
    wall, cpu = median(steps["wall"]), median(steps["cpu"])
    return {f"{prefix}_bps": 1.0 / wall, f"{prefix}_step_s": wall, f"{prefix}_cpu_s": cpu,
            f"{prefix}_steps": {k: [round(x, 5) for x in warm[k] + steps[k]] for k in steps}}


def recorded_products(prof, names) -> list[tuple[str, list]]:
    """(kernel, operand shapes) of every call of the kernels `names` a torch.profiler (record_shapes=True) saw."""
    return [(e.name, [list(s) for s in e.input_shapes]) for e in prof.events() if e.name in names]


def replay_seconds(calls: list[tuple[str, list]], repeats: int = 3) -> tuple[float, float]:
    """(wall, CPU) seconds of the recorded product calls run again at their shapes, outside the profiler (operands
    drawn before the clock starts, one per shape; the median of `repeats` passes); a kernel without a replay
    (`REPLAY`) raises. CPU seconds are the figure to read on a loaded machine (a replay shares its cores too)."""
    import torch

    g = torch.Generator().manual_seed(0)
    cache: dict = {}

    def tensor(shape):  # one operand per shape: the products' cost, not the drawing's
        key = tuple(shape)
        if key not in cache:
            cache[key] = torch.randn(*key, generator=g) if key else torch.tensor(1.0)
        return cache[key]

    ops = [(getattr(torch.ops.aten, ALIAS.get(name, name.split("::")[1])), REPLAY[name](tensor, shapes))
           for name, shapes in calls]
    return clocked(lambda: [fn(*args) for fn, args in ops], repeats)


def clocked(fn, repeats: int) -> tuple[float, float]:
    """(wall, CPU) seconds of `fn()`: one untimed call (first-call costs), then the medians of `repeats` calls."""
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return float(median(wall)), float(median(cpu))


# ------------------------------------------------------------------ a row's figures with their spread

def pair_ratios(runs: dict, key: str) -> list[float]:
    """Reference step / project step (`key`: a seconds figure) of each alternated pair of processes."""
    pairs = [(_seconds(r, key), _seconds(p, key)) for p, r in zip(runs["project"], runs["reference"])]
    return [r / p for r, p in pairs if r is not None and p is not None]


def _seconds(result: dict, key: str) -> float | None:
    """A process's `key`; a family that times its steps as one block (SWINIT) has no `<phase>_step_s`: 1 / its rate."""
    rate = key.replace("_step_s", "_bps")
    if key in result:
        return result[key]
    return 1.0 / result[rate] if key.endswith("_step_s") and rate in result else None


def spread(values) -> str:
    """median [min-max] of the values ('-' for none)."""
    v = [x for x in values if x is not None]
    if not v:
        return "-"
    return f"{median(v):.2f}" + (f" [{min(v):.2f}-{max(v):.2f}]" if len(v) > 1 else "")


def verdict(values, target: float) -> str:
    """'yes' when every value reaches the target, 'no' when none does, else 'undecided' (the spread straddles it)."""
    v = [x for x in values if x is not None]
    if not v:
        return "-"
    return "yes" if min(v) >= target else "no" if max(v) < target else "undecided"


def describe(res: dict) -> str:
    """One process's result on one line: its scalars, then each phase's steps (wall / CPU / system seconds, minor
    faults; the warm-up's first)."""
    scalars = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in res.items()
                        if not isinstance(v, dict))
    steps = "; ".join(f"{k}: " + " | ".join(f"{clock} " + " ".join(f"{x:.3f}" if isinstance(x, float) else str(x)
                                                                  for x in v[clock]) for clock in v)
                      for k, v in res.items() if isinstance(v, dict))
    return scalars + (f"; {steps}" if steps else "")


def ratio_note(name: str, runs: dict) -> str:
    """The line under a row: each phase's x on wall and on CPU seconds over the alternated pairs, each with its verdict
    at 2x ('undecided' when the pairs straddle it)."""
    parts = []
    for phase, key in (("training", "train"), ("evaluation", "eval")):
        wall, cpu = pair_ratios(runs, f"{key}_step_s"), pair_ratios(runs, f"{key}_cpu_s")
        if wall:
            parts.append(f"{phase} wall {spread(wall)} (>= 2x {verdict(wall, 2.0)}), CPU seconds {spread(cpu)} "
                         f"(>= 2x {verdict(cpu, 2.0)})")
    pairs = max(len(pair_ratios(runs, f"{k}_step_s")) for k in ("train", "eval"))
    return f"  x {name} over {pairs} pairs: " + "; ".join(parts) if parts else ""


def floor_text(runs: dict, floors: dict) -> str:
    """Where a row stands against its floor, per phase (`floors`: phase -> (wall, CPU) seconds of its products per
    step), on wall and on CPU seconds: the reference's step (median over processes) over the floor is what an exact
    float32 implementation reaches at most; the floor over each project process's median (unprofiled) step is the
    fraction of it the project reaches: median [min-max] over processes, with the verdict at 0.8."""
    parts = []
    for phase, key in (("training", "train"), ("evaluation", "eval")):
        if phase_floor := floors.get(key):
            text = []
            for clock, floor, step in (("wall", phase_floor[0], f"{key}_step_s"), ("CPU", phase_floor[1], f"{key}_cpu_s")):
                ref = [r[step] for r in runs["reference"] if step in r]
                at = [floor / p[step] for p in runs["project"] if step in p]
                bound = f" against the reference's {median(ref):.3f} s: at most {median(ref) / floor:.2f}x" if ref else ""
                text.append(f"{clock} {floor:.4f} s{bound}; the project at {spread(at)} of it (>= 0.8: "
                            f"{verdict(at, 0.8)})")
            parts.append(f"{phase}: " + ", ".join(text))
    return "; ".join(parts)
