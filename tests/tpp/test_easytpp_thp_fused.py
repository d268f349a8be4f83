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


def test_attention_mask_is_exact_at_scores_an_added_mask_would_round():
    """Scores far above 32 (where s - 1e9 rounds to another float32 than -1e9) and of either sign, with a query
    that sees no key (its softmax is over the fill values alone: uniform only if each is -1e9 exactly): the fused
    attention gives EasyTPP's masked_fill values, outputs and gradients bitwise (an added -1e9 mask, a tempting cut,
    fails here)."""
    ours, ref = _attention_pair(torch.float32)
    x = (torch.randn(3, 7, 8) * 40).requires_grad_()
    mask = _mask() | torch.eye(7, dtype=torch.bool)[None]
    results = [_grads(lambda: m.train(True)(x, x, x, mask), [x, *m.parameters()]) for m in (ours, ref)]
    (y_ours,), g_ours = results[0]
    (y_ref,), g_ref = results[1]
    scores = ref.linears[0](x) @ ref.linears[1](x).transpose(1, 2)
    assert scores.abs().max() > 64 * 8  # beyond 32 after the scale by sqrt(d_k)
    assert torch.equal(y_ours, y_ref) and all(torch.equal(a, b) for a, b in zip(g_ours, g_ref))


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


def _thp_pair(dtype, **sizes):
    """A fused THP adapter and EasyTPP's unfused class (same weights), Table 6 sizes unless given."""
    cfg = resolved("thp", **{"d_model": 8, "time_emb_size": 4, "num_layers": 2, "num_heads": 2, **sizes})
    models = []
    for fused in (True, False):
        torch.manual_seed(0)
        models.append(E.build("THP", cfg, K, fused=fused).to(dtype))
    return models


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("chunk", [None, 3 * 6 * K])  # one slice; slices of 3 intervals
@pytest.mark.parametrize("large", [False, True])  # True: beta x past log 1e5 and past the threshold in some slices
def test_thp_integral_equals_easytpp(dtype, chunk, large, monkeypatch):
    """`thp_integral` (`_THPIntegral`) against EasyTPP's softplus(compute_states_at_sample_times) summed over the
    marks and averaged over the samples (thp.py lines 146-172, baselayer.py lines 28-38): values bitwise, the
    gradients of the hidden states, decay, base, log_beta and the intensity layer within float rounding."""
    if chunk:
        monkeypatch.setattr(easytpp_fused, "THP_CHUNK_FLOATS", chunk)
    ours, ref = _thp_pair(dtype)
    with torch.no_grad():
        ours.model.softplus.log_beta.copy_(torch.linspace(-0.5, 0.5, K))
        ref.model.softplus.log_beta.copy_(torch.linspace(-0.5, 0.5, K))
    h = (torch.randn(5, 4, 8, dtype=dtype) * (20.0 if large else 1.0)).requires_grad_()
    s = torch.rand(5, 4, 6, dtype=dtype) * 3.0
    head = ("factor_intensity", "layer_intensity_hidden", "softplus")
    results = [_grads(lambda: easytpp_fused.thp_integral(ours, h, s),
                      [h, *(p for n, p in ours.model.named_parameters() if n.startswith(head))]),
               _grads(lambda: ref.model.softplus(ref.model.compute_states_at_sample_times(h, s)).sum(-1).mean(-1),
                      [h, *(p for n, p in ref.model.named_parameters() if n.startswith(head))])]
    (y_ours,), g_ours = results[0]
    (y_ref,), g_ref = results[1]
    assert easytpp_fused.thp_integral(ours, h, s).grad_fn.name() == "_THPIntegralBackward"
    assert y_ours.shape == (5, 4) and torch.equal(y_ours, y_ref) and len(g_ours) == len(g_ref) == 6
    if large:
        bx = (ref.model.compute_states_at_sample_times(h, s) * ref.model.softplus.log_beta.exp()).detach()
        assert (bx > 20.0).any() and ((bx > easytpp_fused.LOG_1E5) & (bx <= 20.0)).any() and (bx < 0).any()
    for a, b in zip(g_ours, g_ref):
        assert torch.isfinite(a).all() and torch.allclose(a, b, **TOL[dtype])
    with torch.no_grad():  # evaluation: the values alone
        assert torch.equal(easytpp_fused.thp_integral(ours, h, s), y_ref)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_fused_thp_loss_and_gradients_equal_easytpp_loglike_loss(dtype):
    """The project's THP training loss (the protocol's likelihood with `THPModel.sampled_total_intensity`: the fused
    encoder, `thp_integral`) against EasyTPP's unfused class: -LL per event equal to `loglike_loss` / num_events
    (relative 2e-5: EasyTPP adds eps to the sampled intensities) and every parameter's gradient within float rounding
    of `loglike_loss`'s; the unfused class through the protocol gives the same loss bitwise."""
    records = easytpp_records(hawkes_sequences(np.random.default_rng(3), K, 6, 2, 12), K)
    batch = collate(records, K)
    batch = type(batch)(**{k: v.to(dtype) if v.is_floating_point() else v for k, v in batch.as_dict().items()})
    ours, ref = _thp_pair(dtype, d_model=16, num_heads=2)
    ll = log_likelihood(ours, batch)
    loss = -ll.total / ll.n_events
    loss.backward()
    ll_ref = log_likelihood(ref, batch)
    assert torch.equal(loss, -ll_ref.total / ll_ref.n_events)
    ref_loss, n = ref.model.loglike_loss(**batch.as_dict())
    (ref_loss / n).backward()
    assert n == ll.n_events
    assert float(loss.detach()) == pytest.approx(float(ref_loss.detach() / n), rel=2e-5)
    g_ours = dict(ours.model.named_parameters())
    checked = 0
    for name, p in ref.model.named_parameters():
        if p.grad is None or name.endswith("linears.1.bias"):  # the keys' bias: gradient 0 up to rounding
            continue
        assert torch.allclose(g_ours[name].grad, p.grad, **TOL[dtype]), name
        checked += 1
    assert checked > 15
