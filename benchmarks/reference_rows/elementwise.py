"""The element-wise work no exact implementation of a step can skip, replayed like a floor's products (issue 27).

A products-only floor leaves out work every implementation that gives the reference's values (at float32 rounding
level, with the project's dropout stream) must also do: a LayerNorm, a softmax, an activation and a dropout mask's
application are each one pass over their tensor forward and one backward, and PyTorch on CPU has no kernel that fuses
any of them with a product or with each other. `UNAVOIDABLE` lists those kernels, each with why; the calls a profiled
step made of them are replayed at their recorded shapes and scalars outside the profiler (as `timing.replay_seconds`
replays products), and the dropout masks the step drew (`recording_masks`) are drawn again at their shapes
(`mask_draws_seconds`: the project's stream, which fixes the records). "Products + these" is a floor that says how
much of a step is work an exact implementation cannot cut. Left out, so the floor stays a lower bound of that work:
the bias-gradient sums (a ones column in the weight gradient's product gives them at rounding level), a residual
sum no dropout rides on (TCL at dropout 0: a plain `add`, not told apart from autograd's), the residual stream's
gradient additions, the optimizer's update, the inputs' gathers and the readout's means. The TPP rows (reference_rows
/tpp.py) add the intensities' softplus and its derivative and the likelihood's log; left out there: the exp before
the softplus's log1p (aten::softplus does both in one pass), the affine decay * s + c + base that builds the grid and
the beta scalings (foldable into the grid's one write at rounding level), the attention's mask fill and scale
(foldable into the softmax's input), the reductions over the grid's samples and marks (products with a ones or
1 / beta vector), the thinning's exponential draws and their cumulative sums (a sequential sampler draws fewer).
"""

from __future__ import annotations

import ast
import contextlib

from reference_rows.timing import clocked


def _scalar(concrete: list, i: int, default):
    """The recorded scalar argument i (torch.profiler's concrete inputs, as text), or `default` where none was."""
    try:
        value = ast.literal_eval(str(concrete[i]))
    except (IndexError, ValueError, SyntaxError):
        return default
    return default if value is None else value


def _optional(t, s: list, i: int):
    """Operand i, or None where the call had none (a LayerNorm without affine weights: no shape recorded)."""
    return t(s[i]) if i < len(s) and s[i] else None


# kernel -> (replay: (tensor, shapes, concrete) -> (args, kwargs), why an exact implementation runs it)
UNAVOIDABLE = {
    "aten::native_layer_norm": (
        lambda t, s, c: ((t(s[0]), _scalar(c, 1, [s[0][-1]]), _optional(t, s, 2), _optional(t, s, 3),
                          _scalar(c, 4, 1e-5)), {}),
        "LayerNorm forward: mean, variance and the normalised output of every token, one pass"),
    "aten::native_layer_norm_backward": (
        lambda t, s, c: ((t(s[0]), t(s[1]), _scalar(c, 2, [s[1][-1]]), t(s[3]), t(s[4]), _optional(t, s, 5),
                          _optional(t, s, 6), _scalar(c, 7, [True, True, True])), {}),
        "LayerNorm backward: the input's gradient and the affine weights' sums over tokens"),
    "aten::_softmax": (
        lambda t, s, c: ((t(s[0]), _scalar(c, 1, -1), bool(_scalar(c, 2, False))), {}),
        "the attention weights' softmax (the values the dropout mask and the weighted sum read)"),
    "aten::_softmax_backward_data": (
        lambda t, s, c: ((t(s[0]), t(s[1]), _scalar(c, 2, -1), _float32()), {}),
        "the softmax's backward"),
    "aten::gelu": (lambda t, s, c: ((t(s[0]),), {}), "the FFN's GELU (exact, erf)"),
    "aten::gelu_backward": (lambda t, s, c: ((t(s[0]), t(s[1])), {}), "its backward"),
    "aten::relu": (lambda t, s, c: ((t(s[0]),), {}), "the FFN's / MLP's ReLU"),
    "aten::clamp_min_": (lambda t, s, c: ((t(s[0]), _scalar(c, 1, 0)), {}), "an in-place ReLU (TCL's FFN)"),
    "aten::threshold_backward": (lambda t, s, c: ((t(s[0]), t(s[1]), _scalar(c, 2, 0)), {}), "its backward"),
    "aten::addcmul": (
        lambda t, s, c: ((t(s[0]), t(s[1]), t(s[2])), {"value": _scalar(c, 3, 1.0)}),
        "a dropout mask applied (with its residual sum where there is one), forward and backward: one pass each"),
    "aten::cos": (lambda t, s, c: ((t(s[0]),), {}),
                  "the time encoding cos(w t + b) (graph rows); THP's Eq. (2), the odd half of its dimensions"),
    "aten::sin": (lambda t, s, c: ((t(s[0]),), {}),
                  "cos's derivative (the graph rows' time encoder's weights train); THP's Eq. (2), the even half"),
    "aten::log1p_": (lambda t, s, c: ((t(s[0]).abs_(),), {}),  # (a positive operand: log1p_ runs on it in place)
                     "the intensities' softplus log1p(exp(beta x)) on the integral's grid, at the events and at the "
                     "thinning's proposals: one transcendental pass per point (counted as the log1p alone)"),
    "aten::sigmoid_": (lambda t, s, c: ((t(s[0]),), {}),
                       "the softplus's derivative sigmoid(beta x) at every grid point: the hidden states' and "
                       "the decay's gradients sum it over the samples (training only: GRADIENT_ONLY)"),
    "aten::log": (lambda t, s, c: ((t(s[0]),), {}),
                  "log lambda at each event's own mark (the likelihood's event term)"),
}
# kernels that count in a training step only: where the project also runs them without a gradient to compute, an
# exact evaluation skips them (`easytpp_fused._ScaledSoftplus` writes the softplus's derivative in its forward)
GRADIENT_ONLY = ("aten::sigmoid_",)
# kernels that count only in a step that drew dropout masks: addcmul counts as a mask's application, and a step
# without masks runs it for other work (THP's integral: a [B L, K] gradient term)
MASK_ONLY = ("aten::addcmul",)


def phase_kernels(train: bool, masks: bool = True) -> tuple[str, ...]:
    """The UNAVOIDABLE kernels a training (`train`) or evaluation step's recording counts (`masks`: whether the step
    drew dropout masks)."""
    return tuple(k for k in UNAVOIDABLE if (train or k not in GRADIENT_ONLY) and (masks or k not in MASK_ONLY))


def _float32():
    import torch

    return torch.float32


def recorded_calls(prof, names=tuple(UNAVOIDABLE)) -> list[tuple[str, list, list]]:
    """(kernel, operand shapes, scalar arguments as text) of every call of the kernels `names` a torch.profiler
    (record_shapes=True) saw."""
    return [(e.name, [list(s) for s in e.input_shapes], [str(x) for x in (e.concrete_inputs or [])])
            for e in prof.events() if e.name in names]


def softmax_calls(attention_shapes: list, train: bool) -> list[tuple[str, list, list]]:
    """The softmax (and in training its backward) of fused attention calls of (q, k) shapes (B, H, Lq, d_h),
    (B, H, Lk, d_h), as calls at (B H, Lq, Lk): the fused kernel's element-wise part, not separable in a profile."""
    calls = []
    for (b, h, lq, _), (_, _, lk, _) in attention_shapes:
        shape = [b * h, lq, lk]
        calls.append(("aten::_softmax", [shape, [], []], ["None", "-1", "False"]))
        if train:
            calls.append(("aten::_softmax_backward_data", [shape, shape, [], []], ["None", "None", "-1", "6"]))
    return calls


def replay_seconds(calls: list[tuple[str, list, list]], repeats: int = 3) -> tuple[float, float]:
    """(wall, CPU) seconds of the recorded element-wise calls run again at their shapes and scalars, outside the
    profiler (operands drawn before the clock starts, one per shape; the median of `repeats` passes)."""
    import torch

    g = torch.Generator().manual_seed(0)
    cache: dict = {}

    def tensor(shape):
        key = tuple(shape)
        if key not in cache:
            cache[key] = torch.randn(*key, generator=g) if key else torch.tensor(0.0)
        return cache[key]

    ops = []
    for name, shapes, concrete in calls:
        args, kwargs = UNAVOIDABLE[name][0](tensor, shapes, concrete)
        ops.append((getattr(torch.ops.aten, name.split("::")[1]), args, kwargs))
    return clocked(lambda: [fn(*args, **kwargs) for fn, args, kwargs in ops], repeats)


@contextlib.contextmanager
def recording_masks():
    """Within: every dropout mask `timerepro.models.dropout` draws is listed (shape, p, dtype) in the yielded list."""
    from timerepro.models import dropout

    masks: list = []
    draw = dropout.kept_mask

    def recorded(shape, p, dtype=None):
        masks.append((tuple(shape), p, dtype))
        return draw(shape, p) if dtype is None else draw(shape, p, dtype)

    dropout.kept_mask = recorded
    try:
        yield masks
    finally:
        dropout.kept_mask = draw


def mask_draws_seconds(masks: list, repeats: int = 3) -> tuple[float, float]:
    """(wall, CPU) seconds of drawing the recorded masks again (`models.dropout.kept_mask`: the random bits and the
    comparison writing the 0/1 mask): the project's dropout stream, which a same-records implementation must draw."""
    from timerepro.models.dropout import kept_mask

    return clocked(lambda: [kept_mask(shape, p) if dtype is None else kept_mask(shape, p, dtype)
                            for shape, p, dtype in masks], repeats)


def fused_softmax_seconds(attention_shapes: list, train: bool, kernel_s: float, products: tuple) -> tuple[float, float]:
    """(wall, CPU) seconds of the softmax inside fused attention calls (`softmax_calls`, replayed), each clock at most
    the kernels' profiled time `kernel_s` less their products' seconds `products` (wall, CPU): what a fused kernel
    spends besides its products, so that the replay never counts more than the kernel did."""
    if not attention_shapes:
        return 0.0, 0.0
    replayed = replay_seconds(softmax_calls(attention_shapes, train))
    return tuple(min(r, max(0.0, kernel_s - p)) for r, p in zip(replayed, products))


def floor_keys(prefix: str, calls: list, masks: list, n: int, fused: tuple = (0.0, 0.0)) -> dict:
    """A phase's element-wise figures per step (n steps recorded), on both clocks: `<prefix>_elementwise{,_cpu}_s`
    (the replayed calls plus `fused`, the fused attention's softmax: `fused_softmax_seconds`) and
    `<prefix>_mask_draws{,_cpu}_s` (the dropout masks drawn again)."""
    elementwise = replay_seconds(calls) if calls else (0.0, 0.0)
    draws = mask_draws_seconds(masks) if masks else (0.0, 0.0)
    out = {}
    for i, clock in enumerate(("", "_cpu")):
        out[f"{prefix}_elementwise{clock}_s"] = (elementwise[i] + fused[i]) / n
        out[f"{prefix}_mask_draws{clock}_s"] = draws[i] / n
    return out


def floor_lines(name: str, runs: dict, products: dict, own: dict) -> list[str]:
    """The lines printed under a row's products-only floor: the floor with the unavoidable element-wise work added
    (`products`: phase -> (wall, CPU) seconds of its products per step; `own`: `floor_keys`' figures), then with the
    dropout masks' draws added too (the project's stream: what keeps its records), each against the row's runs
    (`timing.floor_text`)."""
    from reference_rows.timing import floor_text

    phases = [k for k in ("train", "eval") if k in products and f"{k}_elementwise_s" in own]
    if not phases:
        return []
    parts = {k: [own[f"{k}_elementwise{c}_s"] for c in ("", "_cpu")] for k in phases}
    draws = {k: [own[f"{k}_mask_draws{c}_s"] for c in ("", "_cpu")] for k in phases}
    plus = {k: tuple(p + e for p, e in zip(products[k], parts[k])) for k in phases}
    with_draws = {k: tuple(p + d for p, d in zip(plus[k], draws[k])) for k in phases}
    shares = "; ".join(f"{k}: element-wise {parts[k][1]:.3f} s, mask draws {draws[k][1]:.3f} s CPU per step"
                       for k in phases)
    return [f"{name} floor + the unavoidable element-wise ops ({', '.join(sorted(UNAVOIDABLE))}; {shares}): "
            + floor_text(runs, plus),
            f"{name} floor + those + the dropout masks' draws (the project's stream): " + floor_text(runs, with_draws)]
