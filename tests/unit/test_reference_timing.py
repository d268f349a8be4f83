"""benchmarks/reference_rows/timing.py, the reference table's clock (issue 27): each step is timed where the loop
asks for it (fetch and work), a process's figure is its median step, a row's ratio carries its spread over the
alternated pairs and a verdict that says 'undecided' when the spread straddles the target, and a floor's products
are replayed outside the profiler at the shapes it recorded."""

import sys
import time
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from reference_rows import timing  # noqa: E402
from reference_rows.tpp import reference_loop  # noqa: E402


def test_a_step_is_timed_from_asking_for_its_item_to_asking_for_the_next():
    def slow_items():
        yield "a"
        time.sleep(0.05)  # fetching the second item (a loader's collation) belongs to the second step
        yield "b"

    record = timing.new_record()
    seen = []
    for item in timing.timed_iter(slow_items(), record):
        seen.append(item)
        if item == "a":
            time.sleep(0.03)
    assert seen == ["a", "b"] and all(len(record[k]) == 2 for k in ("wall", "cpu", "sys", "minflt"))
    assert record["wall"][0] >= 0.03 and record["wall"][1] >= 0.05
    assert record["cpu"][0] < 0.03 and record["sys"][0] <= record["cpu"][0] + 0.01  # sleeping is wall time only


def test_a_process_figure_is_its_median_step_and_keeps_the_steps_warm_up_first():
    warm = {"wall": [9.0], "cpu": [4.0], "minflt": [100]}
    steps = {"wall": [1.0, 5.0, 2.0], "cpu": [0.5, 0.7, 0.6], "minflt": [10, 20, 30]}
    out = timing.summary("train", warm, steps)
    assert out["train_step_s"] == 2.0 and out["train_bps"] == 0.5 and out["train_cpu_s"] == 0.6
    assert out["train_steps"]["wall"] == [9.0, 1.0, 5.0, 2.0] and out["train_steps"]["minflt"] == [100, 10, 20, 30]


def test_ratios_pair_the_alternated_processes_and_the_verdict_says_when_the_spread_straddles_the_target():
    runs = {"reference": [{"train_step_s": 2.0}, {"train_step_s": 3.0}, {}],
            "project": [{"train_step_s": 1.0}, {"train_step_s": 1.0}, {"train_step_s": 1.0}]}
    ratios = timing.pair_ratios(runs, "train_step_s")
    assert ratios == [2.0, 3.0]  # the third pair's reference failed: no ratio
    block = {"reference": [{"train_bps": 1.0}], "project": [{"train_bps": 4.0}]}  # steps timed as one block
    assert timing.pair_ratios(block, "train_step_s") == [4.0] and timing.pair_ratios(block, "train_cpu_s") == []
    assert timing.spread(ratios) == "2.50 [2.00-3.00]" and timing.spread([1.5]) == "1.50" and timing.spread([]) == "-"
    assert timing.verdict(ratios, 2.0) == "yes"
    assert timing.verdict([1.5, 2.5], 2.0) == "undecided"
    assert timing.verdict([1.5, 1.9], 2.0) == "no"
    note = timing.ratio_note("m", {**runs, "reference": [{"train_step_s": 2.0, "eval_step_s": 1.0}] * 3,
                                   "project": [{"train_step_s": 1.0, "eval_step_s": 0.8}] * 3})
    assert "training wall 2.00 [2.00-2.00] (>= 2x yes), CPU seconds - (>= 2x -)" in note
    assert "evaluation wall 1.25 [1.25-1.25] (>= 2x no)" in note and note.startswith("  x m over 3 pairs")


def test_the_floor_fraction_is_the_floor_over_each_projects_unprofiled_step():
    runs = {"reference": [{"train_step_s": 4.0, "train_cpu_s": 4.0}] * 2,
            "project": [{"train_step_s": 1.0, "train_cpu_s": 1.0}, {"train_step_s": 2.0, "train_cpu_s": 1.0}]}
    text = timing.floor_text(runs, {"train": (1.0, 0.9)})
    # wall: floor 1.0 s over steps 1.0 and 2.0 s; reference 4.0 s over the floor: at most 4x
    assert "wall 1.0000 s against the reference's 4.000 s: at most 4.00x; the project at 0.75 [0.50-1.00]" in text
    assert "(>= 0.8: undecided)" in text and "CPU 0.9000 s" in text and "0.90 [0.90-0.90] of it (>= 0.8: yes)" in text
    assert "evaluation" not in text  # no floor given for it


def test_every_product_a_profiler_records_replays_at_its_shapes():
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    lin, x = torch.nn.Linear(8, 4), torch.randn(5, 8, requires_grad=True)
    a, b = torch.randn(3, 5, 6), torch.randn(3, 6, 2)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        lin(x).sum().backward()
        torch.bmm(a, b)
        torch.mv(torch.randn(4, 3), torch.randn(3))
    calls = timing.recorded_products(prof, tuple(timing.REPLAY))
    names = {name for name, _ in calls}
    assert {"aten::addmm", "aten::mm", "aten::bmm", "aten::mv"} <= names
    assert ("aten::bmm", [[3, 5, 6], [3, 6, 2]]) in calls
    wall, cpu = timing.replay_seconds(calls, repeats=2)
    assert wall > 0 and cpu >= 0
    with pytest.raises(KeyError):  # a kernel without a replay is not silently left out
        timing.replay_seconds([("aten::_convolution", [[1, 1, 3], [1, 1, 2]])])


class _Wrapper:
    """An EasyTPP-style ModelWrapper whose run_batch returns (loglike, events)."""

    def __init__(self, fail_on=None):
        self.calls, self.fail_on = [], fail_on

    def run_batch(self, batch, phase):
        self.calls.append((phase, batch))
        if phase == self.fail_on:
            raise RuntimeError("element 0 of tensors does not require grad\nmore")
        return (2.0 * batch, 4)


def test_the_reference_loop_times_every_batch_after_the_first_and_pools_its_loss():
    wrapper = _Wrapper()
    out = reference_loop(wrapper, [1, 2, 3], [10, 20], "train", "eval")
    assert [b for p, b in wrapper.calls if p == "train"] == [1, 2, 3]
    assert len(out["train_steps"]["wall"]) == 3 and len(out["eval_steps"]["wall"]) == 2  # the warm-up's first
    assert out["loss"] == pytest.approx((4.0 + 6.0) / 8) and out["metric"] == pytest.approx(-40.0 / 4)
    failed = reference_loop(_Wrapper(fail_on="eval"), [1, 2], [10, 20], "train", "eval")
    assert "train_bps" in failed and "eval_bps" not in failed
    assert failed["eval_bps_error"] == "RuntimeError: element 0 of tensors does not require grad"
