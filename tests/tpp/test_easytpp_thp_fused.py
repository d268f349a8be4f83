"""THP's replacements in easytpp_fused (the attention, the Eq. 6 states on the grid) and NHP's h(t) backward through
h / o, against EasyTPP's own modules: THP's values bitwise, NHP's within float rounding."""

import copy
import pickle

import numpy as np
import pytest
import torch

pytest.importorskip("easy_tpp")

from easy_tpp.model.baselayer import MultiHeadAttention  # noqa: E402
from easy_tpp.model.nhp import ContTimeLSTMCell  # noqa: E402

from timerepro.data.standins import easytpp_records, hawkes_sequences  # noqa: E402
from timerepro.models.tpp import easytpp as E  # noqa: E402
from timerepro.models.tpp import easytpp_fused  # noqa: E402
from timerepro.models.tpp.easytpp_fused import decayed_hidden  # noqa: E402
from timerepro.tpp import collate  # noqa: E402
from timerepro.tpp.likelihood import log_likelihood  # noqa: E402

from .conftest import resolved  # noqa: E402
from .test_easytpp_fused import TOL, _grads  # noqa: E402

K = 4
ENCODER = ("layer_type_emb", "stack_layers", "feed_forward")  # THP's parameters before the intensity head


def _attention_pair(dtype, dropout=0.0):
    torch.manual_seed(0)
    ref = MultiHeadAttention(2, 8, 8, dropout, output_linear=False).to(dtype)
    ours = MultiHeadAttention(2, 8, 8, dropout, output_linear=False).to(dtype)
    ours.load_state_dict(ref.state_dict())
    assert easytpp_fused.fuse_attention(ours) == 1 and type(ours).__name__ == "FusedMultiHeadAttention"
    return ours, ref


def _mask(B=3, L=7, pad_from=(7, 5, 2)):
    """EasyTPP's THP mask (True = masked): later keys and padding keys; sequence b has pad_from[b] events."""
    types = torch.zeros(B, L, dtype=torch.long)
    for b, n in enumerate(pad_from):
        types[b, n:] = K
    return E.easytpp_attention_mask(types, K)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_attention_equals_easytpp_bitwise(dtype, dropout):
    """The fused attention against EasyTPP's (matmul on transposed views, masked_fill -1e9, softmax, dropout):
    outputs and the gradients of the input and of the three projections bitwise equal, in training and evaluation,
    with padded sequences and a query that sees no key (row 0 under the second mask: EasyTPP's uniform softmax over
    -1e9); active dropout and asked-for weights run EasyTPP's own forward (the same draws from torch's RNG)."""
    ours, ref = _attention_pair(dtype, dropout)
    x = torch.randn(3, 7, 8, dtype=dtype).requires_grad_()
    for mask in (_mask(), _mask() | torch.eye(7, dtype=torch.bool)[None]):
        for train in (True, False):
            results = []
            for m in (ours, ref):
                torch.manual_seed(1)
                results.append(_grads(lambda: m.train(train)(x, x, x, mask), [x, *m.parameters()]))
            (y_ours,), g_ours = results[0]
            (y_ref,), g_ref = results[1]
            assert torch.equal(y_ours, y_ref)
            for a, b in zip(g_ours, g_ref):
                assert torch.equal(a, b)
        y_ours, w_ours = ours(x, x, x, mask, output_weight=True)
        y_ref, w_ref = ref(x, x, x, mask, output_weight=True)
        assert torch.equal(y_ours, y_ref) and torch.equal(w_ours, w_ref)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_fused_thp_encoder_equals_easytpp_bitwise(dtype):
    """THP's encoder (`forward`, two layers sharing the feed-forward block) fused against EasyTPP's: hidden states
    and the gradients of every encoder parameter bitwise equal."""
    cfg = resolved("thp", d_model=8, time_emb_size=4, num_layers=2, num_heads=2)
    models = []
    for fused in (True, False):
        torch.manual_seed(0)
        models.append(E.build("THP", cfg, K, fused=fused).model.to(dtype).train())
    ours, ref = models
    assert "FusedMultiHeadAttention" in {type(m).__name__ for m in ours.modules()}
    types = torch.tensor([[0, 1, 2, 3, 1, 0, 2], [2, 2, 1, 0, K, K, K]])
    times = torch.cumsum(torch.rand(2, 7, dtype=dtype), dim=1)
    mask = E.easytpp_attention_mask(types, K)
    results = [_grads(lambda: m.forward(times, types, mask),
                      [p for n, p in m.named_parameters() if n.startswith(ENCODER)]) for m in (ours, ref)]
    (y_ours,), g_ours = results[0]
    (y_ref,), g_ref = results[1]
    assert torch.equal(y_ours, y_ref) and len(g_ours) == len(g_ref) > 5
    for a, b in zip(g_ours, g_ref):
        assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("o_zero", [False, True])  # True: an o of 0 (sigmoid's underflow): tanh recomputed instead
def test_decayed_hidden_tanh_from_output(dtype, o_zero):
    """NHP's h(t) on the grid, whose backward takes tanh(c(t)) as h / o, against EasyTPP's `ContTimeLSTMCell.decay`:
    h and every gradient within float rounding (round 11: addcmul) and finite, also where some o is 0."""
    torch.manual_seed(0)
    cell = ContTimeLSTMCell(8)
    shape, dt_shape = (3, 5, 1, 8), (3, 5, 4, 1)
    c, c_bar = (torch.randn(shape, dtype=dtype).requires_grad_() for _ in range(2))
    delta = torch.rand(shape, dtype=dtype).add_(0.1).requires_grad_()
    o = torch.sigmoid(torch.randn(shape, dtype=dtype) * 3)
    if o_zero:
        o[1, 2, 0, 3] = 0.0
    o.requires_grad_()
    dt = torch.rand(dt_shape, dtype=dtype).mul_(3.0)
    inputs = [c, c_bar, delta, o]
    (h_ref,), g_ref = _grads(lambda: cell.decay(*inputs, dt)[1], inputs)
    (h_ours,), g_ours = _grads(lambda: decayed_hidden(*inputs, dt), inputs)
    assert torch.allclose(h_ours, h_ref, **TOL[dtype])
    for a, b in zip(g_ours, g_ref):
        assert torch.isfinite(a).all() and torch.allclose(a, b, **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("S", [6, 1])  # the integral's grid and the events' intensities
def test_thp_states_at_sample_times_equal_easytpp(dtype, S):
    """THP's Eq. (6) states fused (`fuse_thp_states`) against EasyTPP's `compute_states_at_sample_times`: values
    and the gradients of the hidden states, decay, base and the intensity layer bitwise; offsets
    that need a gradient take EasyTPP's expression."""
    cfg = resolved("thp", d_model=8, time_emb_size=4, num_layers=1, num_heads=2)
    models = []
    for fused in (True, False):
        torch.manual_seed(0)
        models.append(E.build("THP", cfg, K, fused=fused).model.to(dtype))
    assert type(models[0]).__name__ == "FusedTHP"
    h = torch.randn(5, 4, 8, dtype=dtype).requires_grad_()
    s = torch.rand(5, 4, S, dtype=dtype) * 3.0
    head = ("factor_intensity", "layer_intensity_hidden")
    results = [_grads(lambda: m.compute_states_at_sample_times(h, s),
                      [h, *(p for n, p in m.named_parameters() if n.startswith(head))]) for m in models]
    (x_ours,), g_ours = results[0]
    (x_ref,), g_ref = results[1]
    assert x_ours.shape == (5, 4, S, K) and torch.equal(x_ours, x_ref) and len(g_ours) == 5
    for a, b in zip(g_ours, g_ref):
        assert torch.equal(a, b)
    s.requires_grad_()
    y = models[0].compute_states_at_sample_times(h, s)
    assert torch.equal(y, x_ref) and y.grad_fn.name() == "AddBackward0"


def test_fused_thp_copies_and_pickles():
    """Deep copies and pickles (checkpoints, best-epoch copies) of a fused THP keep its fused classes and values."""
    batch = collate(easytpp_records(hawkes_sequences(np.random.default_rng(5), K, 5, 2, 9), K), K)
    torch.manual_seed(0)
    model = E.build("THP", resolved("thp", d_model=8, num_heads=2), K).eval()
    with torch.no_grad():
        want = log_likelihood(model, batch).total
        for other in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
            assert {"FusedTHP", "FusedMultiHeadAttention"} <= {type(m).__name__ for m in other.modules()}
            assert torch.equal(log_likelihood(other, batch).total, want)
