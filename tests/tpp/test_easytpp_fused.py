"""easytpp_fused's replacements against EasyTPP's own modules: values and gradients equal within float rounding."""

import copy
import math
import pickle

import pytest
import torch

pytest.importorskip("easy_tpp")

from easy_tpp.model.baselayer import ScaledSoftplus  # noqa: E402
from easy_tpp.model.nhp import ContTimeLSTMCell  # noqa: E402

from timerepro.models.tpp import easytpp as E  # noqa: E402
from timerepro.models.tpp import easytpp_fused  # noqa: E402
from timerepro.models.tpp.easytpp_fused import FUSED, FusedScaledSoftplus, ct_lstm_decay, decayed_hidden  # noqa: E402
from timerepro.tpp.likelihood import log_likelihood  # noqa: E402

from .conftest import resolved  # noqa: E402
from .test_easytpp import K, batch, records  # noqa: E402,F401  (the fixtures)

TOL = {torch.float64: dict(rtol=1e-12, atol=1e-14), torch.float32: dict(rtol=1e-5, atol=1e-6)}


def _grads(fn, tensors):
    """Values of fn() and the gradients of a fixed random projection of them with respect to `tensors`."""
    for t in tensors:
        t.grad = None
    outs = fn()
    outs = outs if isinstance(outs, tuple) else (outs,)
    gen = torch.Generator().manual_seed(7)
    loss = sum((o * torch.randn(o.shape, generator=gen, dtype=o.dtype)).sum() for o in outs)
    loss.backward()
    return [o.detach() for o in outs], [t.grad.clone() for t in tensors]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("scale", [1.0, 30.0])  # 30: beta x crosses log(1e5) (EasyTPP's clamp) and the threshold 20
def test_scaled_softplus_equals_easytpp(dtype, scale):
    torch.manual_seed(0)
    ref = ScaledSoftplus(K).to(dtype)
    with torch.no_grad():
        ref.log_beta.copy_(torch.linspace(-1.0, 0.7, K, dtype=dtype))
    fused = FusedScaledSoftplus.replacing(ref)
    x = (torch.randn(6, 5, 4, K, dtype=dtype) * scale).requires_grad_()
    bx = x.detach() * ref.log_beta.detach().exp()
    if scale > 1:  # every region of EasyTPP's formula is exercised
        assert (bx <= math.log(1e5)).any() and ((bx > math.log(1e5)) & (bx <= 20)).any() and (bx > 20).any()
    else:
        assert bx.max() <= math.log(1e5)  # the fast path
    y_ref, g_ref = _grads(lambda: ref(x), [x, ref.log_beta])
    y_ours, g_ours = _grads(lambda: fused(x), [x, fused.log_beta])
    assert torch.equal(y_ours[0], y_ref[0])  # the same forward operations, in EasyTPP's order
    for a, b in zip(g_ours, g_ref):
        assert torch.allclose(a, b, **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
# the sample grid [B, L, 1, H] x [B, L, S, 1]; the loop's [B, H] x [B, 1]
@pytest.mark.parametrize("grid", [True, False])
def test_ct_lstm_decay_equals_easytpp(dtype, grid):
    torch.manual_seed(0)
    cell = ContTimeLSTMCell(8)
    shape, dt_shape = ((3, 5, 1, 8), (3, 5, 4, 1)) if grid else ((3, 8), (3, 1))
    c, c_bar, o = (torch.randn(shape, dtype=dtype).requires_grad_() for _ in range(3))
    delta = torch.rand(shape, dtype=dtype).add_(0.1).requires_grad_()
    dt = torch.rand(dt_shape, dtype=dtype).mul_(3.0).requires_grad_()
    inputs = [c, c_bar, delta, o, dt]
    (ct_ref, h_ref), g_ref = _grads(lambda: cell.decay(*inputs), inputs)
    (ct_ours, h_ours), g_ours = _grads(lambda: ct_lstm_decay(*inputs), inputs)
    assert torch.allclose(ct_ours, ct_ref, **TOL[dtype]) and torch.allclose(h_ours, h_ref, **TOL[dtype])
    for a, b in zip(g_ours, g_ref):
        assert a.shape == b.shape and torch.allclose(a, b, **TOL[dtype])
    # only h used (NHP's get_states): c(t)'s gradient arrives as None
    _, g_h_only = _grads(lambda: ct_lstm_decay(*inputs)[1], inputs)
    _, g_h_only_ref = _grads(lambda: cell.decay(*inputs)[1], inputs)
    for a, b in zip(g_h_only, g_h_only_ref):
        assert torch.allclose(a, b, **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_decayed_hidden_equals_easytpp_in_slices(dtype, monkeypatch):
    """NHP's h(t) on the grid, slice by slice (slices of 2 rows of dim 0, the last one shorter) and recomputed in
    the backward, against EasyTPP's decay: values and the gradients of every input, the offsets included."""
    for name in ("CHUNK_FLOATS", "THREADED_CHUNK_FLOATS"):
        monkeypatch.setattr(easytpp_fused, name, 2 * 5 * 4 * 8)
    torch.manual_seed(0)
    cell = ContTimeLSTMCell(8)
    shape = (5, 5, 1, 8)
    c, c_bar, o = (torch.randn(shape, dtype=dtype).requires_grad_() for _ in range(3))
    delta = torch.rand(shape, dtype=dtype).add_(0.1).requires_grad_()
    dt = torch.rand(5, 5, 4, 1, dtype=dtype).mul_(3.0).requires_grad_()
    inputs = [c, c_bar, delta, o, dt]
    (h_ref,), g_ref = _grads(lambda: cell.decay(*inputs)[1], inputs)
    (h_ours,), g_ours = _grads(lambda: decayed_hidden(*inputs), inputs)
    assert torch.allclose(h_ours, h_ref, **TOL[dtype])
    for a, b in zip(g_ours, g_ref):
        assert a.shape == b.shape and torch.allclose(a, b, **TOL[dtype])


def _nhp_pair(dtype, fused_cell: bool):
    """NHP built fused (its loop by `_NHPRecurrence`) and the same weights with EasyTPP's own loop: over the fused
    decay cell (round 12's project, `fused_cell`) or over EasyTPP's unchanged classes."""
    from easy_tpp.model.nhp import NHP

    cfg = resolved("nhp", d_model=64, time_emb_size=4)  # H = 64 (params/): every pass vectorized on both sides
    models = []
    for fused in (True, fused_cell):
        torch.manual_seed(0)
        models.append(E.build("NHP", cfg, K, fused=fused).model.to(dtype))
    ours, ref = models
    if fused_cell:
        ref.forward = NHP.forward.__get__(ref)  # EasyTPP's loop, per event through the fused cell
    return ours, ref


def _nhp_inputs(dtype, B=5, L=7, pad_from=(7, 6, 4, 1, 7)):
    """Times, deltas (0 first and at padding, as `time_deltas`) and types (padding = K after pad_from[b] events)."""
    gen = torch.Generator().manual_seed(3)
    types = torch.randint(0, K, (B, L), generator=gen)
    for b, n in enumerate(pad_from):
        types[b, n:] = K
    dt = torch.rand(B, L, generator=gen, dtype=dtype).mul_(3.0).masked_fill_(types == K, 0.0)
    dt[:, 0] = 0.0
    return dt.cumsum(1), dt, types


@pytest.fixture
def one_thread():
    """torch at one intra-op thread meanwhile: `_NHPRecurrence` runs its loop so, and MKL's products of a few rows
    (B = 5 here) can round otherwise at two threads (measured), where EasyTPP's loop would run."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("used", ["both", "left", "right"])
def test_nhp_recurrence_equals_easytpp(dtype, used, one_thread):
    """NHP's event loop in one node (`_NHPRecurrence`) against EasyTPP's `NHP.forward`: left and right limits bitwise
    equal to EasyTPP's loop over the fused decay cell (the same operations per event) and within float rounding of
    EasyTPP's unchanged classes; the gradients of the type embeddings (padding row: none), the cell's weight and bias
    within float rounding of both, whichever outputs the loss reads."""
    t, dt, types = _nhp_inputs(dtype)
    for fused_cell in (True, False):
        ours, ref = _nhp_pair(dtype, fused_cell)
        assert type(ours).forward is easytpp_fused._nhp_forward and ours.layer_type_emb.padding_idx == K
        results = []
        for m in (ours, ref):
            params = [m.layer_type_emb.weight, m.rnn_cell.linear_layer.weight, m.rnn_cell.linear_layer.bias]
            pick = {"both": lambda out: out, "left": lambda out: out[0], "right": lambda out: out[1]}[used]
            results.append(_grads(lambda: pick(m.forward((t, dt, types, None, None))), params))
        (v_ours, g_ours), (v_ref, g_ref) = results
        for a, b in zip(v_ours, v_ref):
            assert a.shape == b.shape
            assert torch.equal(a, b) if fused_cell else torch.allclose(a, b, **TOL[dtype])
        assert not g_ours[0][K].any() and g_ref[0][K].abs().sum() == 0
        for a, b in zip(g_ours, g_ref):
            assert a.shape == b.shape and torch.allclose(a, b, **TOL[dtype])


def test_nhp_recurrence_falls_back_to_easytpp():
    """Time deltas that need a gradient (nothing in the project asks for it) run EasyTPP's own loop, which gives one."""
    ours, _ = _nhp_pair(torch.float64, True)
    t, dt, types = _nhp_inputs(torch.float64)
    dt.requires_grad_()
    left, right = ours.forward((t, dt, types, None, None))
    (left.sum() + right.sum()).backward()
    assert dt.grad is not None and dt.grad.abs().sum() > 0


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("o_zero", [False, True])  # some o = 0: tanh(c(t)) recomputed, not h / o
def test_nhp_intensities_at_offsets_equal_easytpp(dtype, o_zero, monkeypatch, one_thread):
    """NHP's intensity on the grid with the Linear's product inside the sliced node (`_DecayedLinear`: slices of 2
    rows, the last one shorter) against EasyTPP's `layer_intensity(get_states(...))`: values bitwise the fused
    get_states' path (the same operations per row) and within float rounding of EasyTPP's unchanged classes, also
    under no_grad (h never kept whole); the gradients of the right limits, the Linear and the softplus' beta within
    float rounding of both."""
    for name in ("CHUNK_FLOATS", "THREADED_CHUNK_FLOATS"):
        monkeypatch.setattr(easytpp_fused, name, 2 * 4 * 6 * 64)
    ours, ref = _nhp_pair(dtype, False)
    gen = torch.Generator().manual_seed(5)
    c, c_bar = (torch.randn(5, 4, 64, generator=gen, dtype=dtype) for _ in range(2))
    delta = torch.rand(5, 4, 64, generator=gen, dtype=dtype).add_(0.1)
    o = torch.rand(5, 4, 64, generator=gen, dtype=dtype)
    if o_zero:
        o[1, 2, :3] = 0.0
    right = torch.cat([c, c_bar, delta, o], dim=-1).requires_grad_()
    s = torch.rand(5, 4, 6, generator=gen, dtype=dtype).mul_(3.0)
    paths = {"ours": (ours, lambda: ours.intensities_at_offsets(right, s)),
             "fused get_states": (ours, lambda: ours.layer_intensity(ours.get_states(right, s))),
             "easytpp": (ref, lambda: ref.layer_intensity(ref.get_states(right, s)))}
    results = {k: _grads(fn, [right, *m.layer_intensity.parameters()]) for k, (m, fn) in paths.items()}
    (v_ours,), g_ours = results["ours"]
    assert v_ours.shape == (5, 4, 6, K) and torch.equal(v_ours, results["fused get_states"][0][0])
    assert torch.allclose(v_ours, results["easytpp"][0][0], **TOL[dtype])
    for other in ("fused get_states", "easytpp"):
        for a, b in zip(g_ours, results[other][1]):
            assert a.shape == b.shape and torch.allclose(a, b, **TOL[dtype])
    with torch.no_grad():
        assert torch.equal(ours.intensities_at_offsets(right, s), v_ours)


@pytest.mark.parametrize("name", ["nhp", "thp", "sahp", "attnhp", "fullynn", "odetpp"])
def test_fused_models_equal_easytpp_likelihood_and_gradients(name, batch):
    """The fused model against EasyTPP's unchanged class built from the same seed: the same parameters (names and
    values), the project's log-likelihood and EasyTPP's loglike_loss equal within float32 rounding, and their
    gradients (relative norm per parameter)."""
    class_name = E.EASYTPP_MODELS[name]
    cfg = resolved(name, d_model=32, time_emb_size=16, num_layers=2, num_heads=2)
    models = []
    for fused in (True, False):
        torch.manual_seed(0)
        models.append(E.build(class_name, cfg, K, fused=fused).train())
    ours, ref = models
    assert FUSED[class_name]
    sd_ours, sd_ref = ours.state_dict(), ref.state_dict()
    assert sd_ours.keys() == sd_ref.keys() and all(torch.equal(sd_ours[k], sd_ref[k]) for k in sd_ref)
    assert isinstance(ours.model, type(ref.model)) and any(type(m).__name__.startswith("Fused") for m in ours.modules())
    for loss in (lambda m: -log_likelihood(m, batch).total, lambda m: m.model.loglike_loss(**batch.as_dict())[0]):
        values, grads = [], []
        for m in (ours, ref):
            m.zero_grad()
            value = loss(m)
            value.backward()
            values.append(float(value.detach()))
            grads.append({n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None})
        assert values[0] == pytest.approx(values[1], rel=1e-6)
        assert grads[0].keys() == grads[1].keys() and len(grads[0]) > 3
        for n in grads[1]:
            assert float((grads[0][n] - grads[1][n]).norm()) <= 1e-5 * float(grads[1][n].norm()) + 1e-7, n


@pytest.mark.parametrize("name,fused", [("nhp", "FusedContTimeLSTMCell"), ("sahp", "FusedSAHP")])
def test_fused_models_copy_and_pickle(name, fused, batch):
    """Deep copies and pickles (checkpoints, best-epoch copies) of a fused model keep its fused classes and values."""
    torch.manual_seed(0)
    model = E.build(E.EASYTPP_MODELS[name], resolved(name, d_model=16, num_heads=2), K).eval()
    with torch.no_grad():
        want = log_likelihood(model, batch).total
        for other in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
            assert fused in {type(m).__name__ for m in other.modules()}
            assert torch.equal(log_likelihood(other, batch).total, want)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_sahp_state_decay_equals_easytpp(dtype):
    """SAHP's `state_decay` (mu, eta, gamma read out of the states, then Eq. 15) fused against EasyTPP's, on the grid
    [B, L, 1, D] x [B, L, S, 1], with the time offsets requiring grad too."""
    torch.manual_seed(0)
    cfg = resolved("sahp", d_model=16, time_emb_size=8, num_layers=1, num_heads=2)
    models = []
    for fused in (True, False):
        torch.manual_seed(0)
        models.append(E.build("SAHP", cfg, K, fused=fused).model.to(dtype))
    h = torch.randn(3, 5, 1, 16, dtype=dtype).requires_grad_()
    dt = torch.rand(3, 5, 4, 1, dtype=dtype).mul_(3.0).requires_grad_()
    results = []
    for m in models:
        params = [p for layer in (m.mu, m.eta, m.gamma) for p in layer.parameters()]
        results.append(_grads(lambda: m.state_decay(h, dt), [h, dt, *params]))
    (y_ours,), g_ours = results[0]
    (y_ref,), g_ref = results[1]
    assert torch.allclose(y_ours, y_ref, **TOL[dtype])
    for a, b in zip(g_ours, g_ref):
        assert a.shape == b.shape and torch.allclose(a, b, **TOL[dtype])


def test_decayed_hidden_of_an_empty_batch():
    """No sequence (thinning's slice of sequences with an undecided draw can be empty): empty h(t) and gradients."""
    c = torch.zeros(0, 3, 1, 4, requires_grad=True)
    h = decayed_hidden(c, c, c, c, torch.zeros(0, 3, 5, 1))
    h.sum().backward()
    assert h.shape == (0, 3, 5, 4) and c.grad.shape == c.shape


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("proper", [True, False])
@pytest.mark.parametrize("mlp_layers", [1, 3])
def test_cumul_hazard_equals_easytpp(dtype, proper, mlp_layers):
    """FullyNN's cumulative hazard network fused (the derivative by forward mode) against EasyTPP's (one
    double-backward graph per mark): Lambda, d Lambda / d dt, and the gradients of both with respect to the hidden
    states and every parameter (the second derivatives the loss's backward takes), some rows above softplus' threshold."""
    cfg = resolved("fullynn", d_model=8, num_mlp_layers=mlp_layers, proper_marked_intensities=proper)
    nets = []
    for fused in (True, False):
        torch.manual_seed(0)
        nets.append(E.build("FullyNN", cfg, K, fused=fused).model.layer_intensity.to(dtype))
    assert type(nets[0]).__name__ == "FusedCumulHazardFunctionNetwork"
    with torch.no_grad():
        nets[0].layer_dense_3[0].bias[0] = nets[1].layer_dense_3[0].bias[0] = 22.0  # mark 0 linear: softplus' x > 20
    h = torch.randn(4, 6, 8, dtype=dtype).requires_grad_()
    dt = torch.rand(4, 6, dtype=dtype).mul_(3.0)
    results = [_grads(lambda: net(h, dt.clone()), [h, *net.parameters()]) for net in nets]
    (lam_ours, d_ours), g_ours = results[0]
    (lam_ref, d_ref), g_ref = results[1]
    assert torch.equal(lam_ours, lam_ref)  # EasyTPP's own operations for Lambda
    assert (lam_ref[..., 0] > 20).all() and (lam_ref[..., 1:] < 20).all()  # both of softplus' branches
    assert torch.allclose(d_ours, d_ref, **TOL[dtype])
    for a, b in zip(g_ours, g_ref):
        assert a.shape == b.shape and torch.allclose(a, b, **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("steps", [1, 3])
def test_neural_ode_adjoint_equals_easytpp(dtype, steps):
    """ODETPP's multi-step ODE (RK4 forward, adjoint RK4 backward) fused against EasyTPP's `NeuralODE`: the state
    and the gradients of the initial state and of the MLP's parameters (EasyTPP's adjoint, quirks included)."""
    cfg = resolved("odetpp", d_model=8, ode_num_sample_per_step=steps)
    odes = []
    for fused in (True, False):
        torch.manual_seed(0)
        model = E.build("ODETPP", cfg, K, fused=fused).model.to(dtype)
        with torch.no_grad():  # EasyTPP's init_std 1e-4 leaves the MLP near zero: weights of order 1 instead
            for p in model.event_model.parameters():
                p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel()), dtype=dtype))
        odes.append(model.layer_neural_ode)
    assert type(odes[0]).__name__ == "FusedNeuralODE" and type(odes[1]).__name__ == "NeuralODE"
    z0 = torch.randn(5, 8, dtype=dtype).requires_grad_()
    dt = torch.rand(5, 1, dtype=dtype).mul_(0.5)
    results = [_grads(lambda: ode(z0, dt), [z0, *ode.params]) for ode in odes]
    (z_ours,), g_ours = results[0]
    (z_ref,), g_ref = results[1]
    assert torch.equal(z_ours, z_ref)  # EasyTPP's own forward solve
    for a, b in zip(g_ours, g_ref):
        assert a.shape == b.shape and torch.allclose(a, b, **TOL[dtype])


def _odetpp_pair_member(cfg, dtype, fused: bool):
    """ODETPP built from seed 0, fused or EasyTPP's, with its ODE MLP's weights of order 1 (EasyTPP's init_std 1e-4
    leaves the MLP near zero): the two members of a comparison get the same weights."""
    torch.manual_seed(0)
    model = E.build("ODETPP", cfg, K, fused=fused).model.to(dtype)
    with torch.no_grad():
        for p in model.event_model.parameters():
            p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel()), dtype=dtype))
    return model



@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_ode_states_at_sample_times_equal_easytpp(dtype, monkeypatch):
    """ODETPP's one RK4 step on the grid [B, L, 1, H] x [B, L, S, 1], fused (k2 by linearity) and in slices of 3
    intervals (the last one shorter), against EasyTPP's `compute_states_at_sample_times`: states, gradients of the
    states and the MLP; float32 within rounding of each tensor's scale (other operations, other rounding)."""
    monkeypatch.setattr(easytpp_fused, "RK4_CHUNK_FLOATS", 3 * 6 * 8)
    cfg = resolved("odetpp", d_model=8)
    models = [_odetpp_pair_member(cfg, dtype, fused) for fused in (True, False)]
    assert type(models[0]).__name__ == "FusedODETPP"
    h = torch.randn(5, 4, 8, dtype=dtype).requires_grad_()
    dt = torch.rand(5, 4, 6, dtype=dtype).mul_(2.0)
    results = [_grads(lambda: m.compute_states_at_sample_times(h, dt), [h, *m.event_model.parameters()])
               for m in models]
    (s_ours,), g_ours = results[0]
    (s_ref,), g_ref = results[1]
    for a, b in zip([s_ours, *g_ours], [s_ref, *g_ref]):
        assert a.shape == b.shape
        if dtype == torch.float64:
            assert torch.allclose(a, b, **TOL[dtype])
        else:  # measured: under 4e-7 of the scale
            assert (a - b).abs().max() <= 2e-6 * b.abs().max()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("steps", [1, 2])
def test_odetpp_forward_equals_easytpp(dtype, steps):
    """ODETPP's `forward`, every event's ODE solve in one node (`_ODETPPSolves`), against EasyTPP's (one NeuralODE
    node per event): left and right limits bitwise equal (EasyTPP's RK4 operations in its order), gradients of every
    parameter (the type embedding, the ODE's MLP) within rounding, with padded events (dt 0) and a first dt of 0."""
    cfg = resolved("odetpp", d_model=8, ode_num_sample_per_step=steps)
    models = [_odetpp_pair_member(cfg, dtype, fused) for fused in (True, False)]
    gen = torch.Generator().manual_seed(3)
    dts = torch.rand(5, 7, generator=gen, dtype=dtype).mul_(0.5)
    types = torch.randint(0, K, (5, 7), generator=gen)
    dts[:, 0], dts[3, 5:], types[3, 5:] = 0.0, 0.0, K  # EasyTPP's first dt; a padded tail
    assert type(models[0].forward(dts, types)[1].grad_fn).__name__ == "_ODETPPSolvesBackward"  # one node
    results = [_grads(lambda: m.forward(dts, types), [m.layer_type_emb.weight, *m.event_model.parameters()])
               for m in models]
    (outs, g_ours), (outs_ref, g_ref) = results
    assert all(torch.equal(a, b) for a, b in zip(outs, outs_ref))
    with_grad = models[0].forward(dts.clone().requires_grad_(), types)  # time deltas with a gradient: EasyTPP's
    assert type(with_grad[1].grad_fn).__name__ != "_ODETPPSolvesBackward"
    assert all(torch.equal(a, b) for a, b in zip(with_grad, outs))
    for a, b in zip(g_ours, g_ref):
        assert a.shape == b.shape
        if dtype == torch.float64:
            assert torch.allclose(a, b, **TOL[dtype])
        else:  # summed in another order: within rounding of the tensor's scale
            assert (a - b).abs().max() <= 2e-6 * b.abs().max()
