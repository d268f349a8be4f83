"""benchmarks/reference_rows/elementwise.py, the floor's unavoidable element-wise work (issue 27, item 2): every
kernel it lists is recorded from a profiled step and replayed at its shapes and scalars, a fused kernel's softmax is
never counted above what the kernel spent besides its products, the masks a step draws are recorded without changing
them, the printed floor adds the parts it names, a phase counts the kernels that belong to it, and the TPP rows
print those lines under their products-only floor."""

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
        # the TPP rows' kernels: softplus's log1p, its derivative, the events' log
        (x.detach().exp().log1p_() + x.detach().sigmoid_() + x.detach().abs().log()).sum()
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


def test_an_evaluation_step_leaves_out_the_derivative_and_a_step_without_masks_leaves_out_addcmul():
    every = set(elementwise.UNAVOIDABLE)
    assert set(elementwise.phase_kernels(True)) == every
    assert set(elementwise.phase_kernels(False)) == every - {"aten::sigmoid_"}
    assert set(elementwise.phase_kernels(True, masks=False)) == every - {"aten::addcmul"}
    calls = elementwise.recorded_calls(_profiled_step(), elementwise.phase_kernels(False, masks=False))
    names = {name for name, _, _ in calls}
    assert "aten::sigmoid_" not in names and "aten::addcmul" not in names and "aten::log1p_" in names


def test_a_tpp_rows_floor_records_its_phases_element_wise_calls_and_prints_them_under_the_products(monkeypatch):
    from reference_rows import tpp

    keys = elementwise.floor_keys
    monkeypatch.setattr(elementwise, "floor_keys",  # the calls recorded beside the figures
                        lambda phase, calls, masks, n: {**keys(phase, calls, masks, n), "calls": calls})
    x = torch.randn(64, 32, requires_grad=True)
    w = torch.randn(32, 32, requires_grad=True)

    def step():  # a product, a softmax, the softplus and its derivative, a non-mask addcmul
        y = torch.softmax(x @ w, -1)
        (y.detach().exp().log1p_() + y.detach().clone().sigmoid_() + torch.addcmul(y, y, y)).sum().backward()

    for phase in ("train", "eval"):
        out = tpp.product_seconds(step, phase)
        names = {name for name, _, _ in out["calls"]}
        assert {"aten::_softmax", "aten::log1p_"} <= names and "aten::addcmul" not in names  # no masks drawn
        assert ("aten::sigmoid_" in names) == (phase == "train") and out["replayed_s"] > 0
        assert out[f"{phase}_elementwise_s"] > 0 and out[f"{phase}_mask_draws_s"] == 0.0
    project = {"train_step_s": 2.0, "train_cpu_s": 2.0, "eval_step_s": 1.0, "eval_cpu_s": 1.0,
               "floor_train_s": 1.0, "floor_train_cpu_s": 1.0, "floor_eval_s": 0.5, "floor_eval_cpu_s": 0.5,
               "floor_train_profiled_s": 1.1, "floor_eval_profiled_s": 0.6,
               "train_elementwise_s": 0.6, "train_elementwise_cpu_s": 0.6, "train_mask_draws_s": 0.0,
               "train_mask_draws_cpu_s": 0.0, "eval_elementwise_s": 0.3, "eval_elementwise_cpu_s": 0.3,
               "eval_mask_draws_s": 0.0, "eval_mask_draws_cpu_s": 0.0}
    runs = {"reference": [{"train_step_s": 4.0, "train_cpu_s": 4.0, "eval_step_s": 3.0, "eval_cpu_s": 3.0}],
            "project": [project]}
    products, plus, draws = tpp.floor_note("m", runs).split("\n")
    assert products.startswith("  floor m (products") and "wall 1.0000 s against the reference's 4.000 s" in products
    # training: 1.0 + 0.6 = 1.6 s, the reference 4.0 s at most 2.50x of it, the project's 2.0 s at 0.80 of it
    assert "training: wall 1.6000 s against the reference's 4.000 s: at most 2.50x; the project at 0.80" in plus
    assert "evaluation: wall 0.8000 s against the reference's 3.000 s: at most 3.75x" in plus
    assert plus.startswith("  floor m floor + the unavoidable") and draws.startswith("  floor m floor + those")
    del project["train_elementwise_s"], project["eval_elementwise_s"]  # a floor from before: the products line alone
    assert tpp.floor_note("m", runs).count("\n") == 0
