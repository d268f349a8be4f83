"""benchmarks/reference_rows/elementwise.py, the floor's unavoidable element-wise work (issue 27, item 2): every
kernel it lists is recorded from a profiled step and replayed at its shapes and scalars, a fused kernel's softmax is
never counted above what the kernel spent besides its products, the masks a step draws are recorded without changing
them, and the printed floor adds the parts it names."""

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from reference_rows import elementwise  # noqa: E402
from timerepro.models import dropout  # noqa: E402


def _profiled_step():
    """One forward and backward through every kernel `UNAVOIDABLE` lists, under torch.profiler with shapes."""
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(4, 6, 8, requires_grad=True)
    w, b = torch.ones(8, requires_grad=True), torch.zeros(8, requires_grad=True)
    kept = (torch.rand(4, 6, 8) > 0.1).float()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        h = F.layer_norm(x, (8,), w, b, 1e-5)
        h = torch.addcmul(h.new_zeros(()), F.gelu(h).softmax(-1), kept, value=1.25)
        (torch.relu(h).cos() + h.sin() + torch.relu_(h * 2)).sum().backward()  # relu_: clamp_min_
    return prof


def test_every_listed_kernel_is_recorded_and_replayed_at_its_shapes_and_scalars():
    calls = elementwise.recorded_calls(_profiled_step())
    assert {name for name, _, _ in calls} == set(elementwise.UNAVOIDABLE)  # each entry's replay is exercised below
    by_name = {name: (shapes, concrete) for name, shapes, concrete in calls}
    shapes, concrete = by_name["aten::native_layer_norm"]
    assert shapes[0] == [4, 6, 8] and elementwise._scalar(concrete, 4, None) == 1e-5
    assert elementwise._scalar(by_name["aten::addcmul"][1], 3, None) == 1.25
    wall, cpu = elementwise.replay_seconds(calls, repeats=1)
    assert wall > 0 and cpu >= 0
    # a listed kernel's replay computes what the kernel computes on the same operands
    x, w = torch.randn(4, 6, 8), torch.randn(8)
    operands = {(4, 6, 8): x, (8,): w}  # one operand per shape, as the replay draws them: weight and bias alike
    args, kwargs = elementwise.UNAVOIDABLE["aten::native_layer_norm"][0](
        lambda s: operands[tuple(s)], [[4, 6, 8], [], [8], [8], []], concrete)
    assert torch.equal(torch.ops.aten.native_layer_norm(*args, **kwargs)[0], F.layer_norm(x, (8,), w, w, 1e-5))


def test_a_scalar_not_recorded_takes_its_default_and_a_missing_operand_is_none():
    assert elementwise._scalar(["None", "-1"], 1, 0) == -1 and elementwise._scalar(["None"], 3, 7) == 7
    assert elementwise._scalar(["None", "None"], 1, [8]) == [8]
    assert elementwise._optional(lambda s: s, [[2, 8], [], []], 1) is None


def test_a_fused_kernels_softmax_is_replayed_per_batch_head_and_capped_by_what_the_kernel_spent_beside_its_products():
    shapes = [((3, 2, 5, 4), (3, 2, 7, 4))]
    calls = elementwise.softmax_calls(shapes, train=True)
    assert [(c[0], c[1][0]) for c in calls] == [("aten::_softmax", [6, 5, 7]),
                                                ("aten::_softmax_backward_data", [6, 5, 7])]
    assert len(elementwise.softmax_calls(shapes, train=False)) == 1
    wall, cpu = elementwise.fused_softmax_seconds(shapes, True, kernel_s=1.0, products=(1.5, 1.0 - 1e-9))
    assert wall == 0.0 and 0.0 <= cpu <= 1e-9 * 1.0001  # the kernel spent nothing (wall) or 1 ns (CPU) beside them
    wall, cpu = elementwise.fused_softmax_seconds(shapes, True, kernel_s=100.0, products=(0.0, 0.0))
    assert 0.0 < wall < 100.0  # far below the cap: the replay itself
    assert elementwise.fused_softmax_seconds([], True, 1.0, (0.0, 0.0)) == (0.0, 0.0)


def test_recording_the_masks_lists_their_shapes_and_leaves_the_draws_unchanged():
    x = torch.randn(64, 1024)
    torch.manual_seed(3)
    plain = dropout.dropout(x, 0.1, True)
    torch.manual_seed(3)
    with elementwise.recording_masks() as masks:
        recorded = dropout.add_dropout(torch.zeros_like(x), x, 0.1, True)
    assert torch.equal(plain, recorded) and masks == [((64, 1024), 0.1, torch.float32)]
    assert dropout.kept_mask is not None and dropout.kept_mask.__name__ == "kept_mask"  # restored
    wall, cpu = elementwise.mask_draws_seconds(masks, repeats=1)
    assert wall > 0


def test_the_printed_floor_adds_the_element_wise_work_then_the_mask_draws():
    runs = {"reference": [{"train_step_s": 3.0, "train_cpu_s": 3.0}],
            "project": [{"train_step_s": 1.5, "train_cpu_s": 2.0}]}
    own = {"train_elementwise_s": 0.2, "train_elementwise_cpu_s": 0.3, "train_mask_draws_s": 0.1,
           "train_mask_draws_cpu_s": 0.15}
    plus, draws = elementwise.floor_lines("m", runs, {"train": (1.0, 0.9)}, own)
    # wall: 1.0 + 0.2 = 1.2 s, the project's 1.5 s step at 0.80 of it; CPU 0.9 + 0.3 = 1.2 s over 2.0 s: 0.60
    assert "wall 1.2000 s against the reference's 3.000 s: at most 2.50x; the project at 0.80 of it" in plus
    assert "CPU 1.2000 s" in plus and "at 0.60 of it (>= 0.8: no)" in plus
    assert "element-wise 0.300 s, mask draws 0.150 s CPU" in plus
    assert "wall 1.3000 s" in draws and "the project at 0.87 of it (>= 0.8: yes)" in draws and "CPU 1.3500 s" in draws
    assert elementwise.floor_lines("m", runs, {"train": (1.0, 0.9)}, {"error": "x"}) == []
