"""TimeLSTM gates against Zhu et al. (2017) / time2vec Appendix C on a hand-sized example; LSTM+T inputs;
parameter matching of LSTM+Time2Vec; the synthetic classifier."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from timerepro.models.seq.time_lstm import (LSTMTime, TimeLSTM, TimeLSTMCell, Time2VecClassifier, lstm,
                                            matched_hidden_size, n_parameters, time_lstm)


def s(v):
    return 1 / (1 + np.exp(-v))


def _set(cell: TimeLSTMCell, rng: np.random.Generator) -> dict:
    """Give every parameter a distinct hand-checkable value; return them as numpy arrays."""
    vals = {}
    with torch.no_grad():
        for name, p in cell.named_parameters():
            v = np.round(rng.uniform(-1, 1, tuple(p.shape)), 2)
            p.copy_(torch.from_numpy(v).float())
            vals[name] = v
    return vals


X, TAU, H, C = np.array([[1.0, -0.5]]), np.array([[0.7]]), np.array([[0.2, -0.1]]), np.array([[0.5, -0.3]])


def _run(cell):
    out = cell.gates(*(torch.from_numpy(a).float() for a in (X, TAU, H, C)))
    return {k: v.detach().numpy().astype(np.float64) for k, v in out.items()}


def test_tlstm1_gates_follow_the_equations():
    cell = TimeLSTMCell(2, 1, 2, variant=1, time_inner="tanh")
    p = _set(cell, np.random.default_rng(1))
    g = _run(cell)
    W = lambda gate: X @ p[f"W_x.{gate}"] + p[f"b.{gate}"]
    i = s(W("i") + H @ p["W_h.i"] + C * p["W_peep.i"])
    f = s(W("f") + H @ p["W_h.f"] + C * p["W_peep.f"])
    cbar = np.tanh(W("c") + H @ p["W_h.c"])
    t1 = s(W("t1") + np.tanh(TAU @ p["W_t.t1"]))         # T_j = s(W_t x + g(tau u_t) + b_t)
    c = f * C + i * t1 * cbar                            # c_j = f c_{j-1} + i T cbar
    o = s(W("o") + TAU @ p["W_t.o"] + H @ p["W_h.o"] + c * p["W_peep.o"])  # o_j with tau v_t and peephole on c_j
    h = o * np.tanh(c)
    for name, want in dict(i=i, f=f, cbar=cbar, t1=t1, c=c, o=o, h=h).items():
        np.testing.assert_allclose(g[name], want, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("inner, constraint", [("tanh", "code"), ("sigmoid", "paper")])
def test_tlstm3_gates_follow_the_equations(inner, constraint):
    cell = TimeLSTMCell(2, 1, 2, variant=3, time_inner=inner, t1_constraint=constraint)
    p = _set(cell, np.random.default_rng(3))
    p["W_t.t1"] = np.array([[-0.4, 0.3]])  # one entry each side of the constraint
    with torch.no_grad():
        cell.W_t["t1"].copy_(torch.tensor([[-0.4, 0.3]]))
    g = _run(cell)
    gin = np.tanh if inner == "tanh" else s
    w_t1 = np.maximum(p["W_t.t1"], -1e-5) if constraint == "code" else np.minimum(p["W_t.t1"], 0.0)
    W = lambda gate: X @ p[f"W_x.{gate}"] + p[f"b.{gate}"]
    i = s(W("i") + H @ p["W_h.i"] + C * p["W_peep.i"])
    cbar = np.tanh(W("c") + H @ p["W_h.c"])
    t1 = s(W("t1") + gin(TAU @ w_t1))
    t2 = s(W("t2") + gin(TAU @ p["W_t.t2"]))
    ctilde = (1 - i * t1) * C + i * t1 * cbar
    c = (1 - i) * C + i * t2 * cbar
    o = s(W("o") + TAU @ p["W_t.o"] + H @ p["W_h.o"] + ctilde * p["W_peep.o"])
    h = o * np.tanh(ctilde)
    for name, want in dict(i=i, cbar=cbar, t1=t1, t2=t2, ctilde=ctilde, c=c, o=o, h=h).items():
        np.testing.assert_allclose(g[name], want, rtol=1e-5, atol=1e-6, err_msg=name)
    assert "f" not in g  # TLSTM3 couples the forget gate to 1 - i


def test_time2vec_replaces_tau_by_matrices_in_timelstm():
    m = time_lstm({"variant": 3, "hidden": 4, "time_input": "t2v", "k_sines": 5}, n_types=3, n_out=7)
    assert m.cell.W_t["t1"].shape == (6, 4) and m.cell.W_t["o"].shape == (6, 4)  # U_t, V_t: (k+1) x H
    types, tau = torch.tensor([[0, 2, 1], [1, 1, 0]]), torch.tensor([[0.0, 1.5, 2.0], [0.0, 0.5, 0.0]])
    h = m.states(types, tau, torch.tensor([3, 2]))
    assert h.shape == (2, 3, 4)
    torch.testing.assert_close(h[1, 2], h[1, 1])  # a padded step keeps the previous state


def test_lstm_t_feeds_onehot_and_tau_and_matches_parameters():
    base = lstm({"hidden": 32, "time_input": "tau"}, n_types=4, n_out=5)
    x = base.inputs(torch.tensor([[2, 0]]), torch.tensor([[1.5, 3.0]]))
    torch.testing.assert_close(x, torch.tensor([[[0, 0, 1, 0, 1.5], [1, 0, 0, 0, 3.0]]]))
    cfg = {"hidden": 32, "time_input": "t2v", "k_sines": 16, "match_parameters": True}
    t2v = lstm(cfg, n_types=4, n_out=5)
    assert t2v.hidden < 32
    n0, n1 = n_parameters(base), n_parameters(t2v)
    # the closest hidden size: one unit more or less is farther from the LSTM+T count
    for h in (t2v.hidden - 1, t2v.hidden + 1):
        other = n_parameters(LSTMTime(4, 5, h, "t2v", cfg))
        assert abs(other - n0) >= abs(n1 - n0)
    assert abs(n1 - n0) / n0 < 0.05


def test_matched_hidden_size_bisection_by_hand():
    # a "model" with h * 10 parameters: target 95 -> h = 9 or 10 equally far: the larger wins
    make = lambda h: torch.nn.Linear(h, 10, bias=False)
    assert matched_hidden_size(make, 95, 64) == 10
    assert matched_hidden_size(make, 91, 64) == 9
    assert matched_hidden_size(make, 10_000, 64) == 64


def test_synthetic_classifier_is_a_linear_read_out_of_time2vec():
    m = Time2VecClassifier(32, {})
    tau = torch.tensor([1.0, 7.0, 14.0])
    want = m.t2v(tau) @ m.out.weight[0] + m.out.bias
    torch.testing.assert_close(m(tau), want)
    assert n_parameters(m) == 2 * 32 + 32 + 1
    assert math.isclose(float(m.t2v.k), 31)


def _graph_nodes(t: torch.Tensor) -> dict[str, int]:
    """Autograd nodes behind t, by type."""
    seen, stack, counts = set(), [t.grad_fn], {}
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        counts[type(node).__name__] = counts.get(type(node).__name__, 0) + 1
        stack.extend(f for f, _ in node.next_functions)
    return counts


@pytest.mark.parametrize("time_input", ["tau", "t2v"])
def test_lstm_states_are_the_packed_runs(time_input):
    """LSTM+T over the padded batch: states up to each length (and every gradient) as torch's packed LSTM gives
    them, at float rounding."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    torch.manual_seed(0)
    model = LSTMTime(4, 3, 6, time_input, {"k_sines": 5})
    types, tau = torch.randint(0, 4, (5, 40)), torch.rand(5, 40).cumsum(1)
    lengths = torch.tensor([40, 1, 17, 39, 8])

    def states_and_grads(packed: bool):
        model.zero_grad()
        if packed:
            x = model.inputs(types, tau)
            h, _ = model.lstm(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
            h = pad_packed_sequence(h, batch_first=True, total_length=40)[0]
        else:
            h = model.states(types, tau, lengths)
        valid = torch.arange(40) < lengths.unsqueeze(1)  # (B, L): what the tasks read
        loss = model.out(h[torch.arange(5), lengths - 1]).logsumexp(-1).sum() + h[valid].square().sum()
        loss.backward()
        return h[valid].detach(), [p.grad.clone() for p in model.parameters()]

    (want, want_g), (got, got_g) = states_and_grads(True), states_and_grads(False)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    for g, w in zip(got_g, want_g):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-6)


def test_lstm_backward_has_no_per_step_slices_of_the_whole_batch():
    """The packed CPU LSTM slices its input projection per step; each slice's backward fills a zero tensor of the
    whole batch: quadratic in the length (a raw N-TIDIGITS18 batch of ~14 k events: hours). The padded run has
    no per-step slice, at any length."""
    model = LSTMTime(3, 2, 4, "tau", {})
    counts = [_graph_nodes(model.states(torch.zeros(2, L, dtype=torch.long), torch.rand(2, L),
                                        torch.tensor([L, L // 2])).sum()).get("SliceBackward0", 0) for L in (16, 256)]
    assert counts[0] == counts[1] <= 2, counts


def test_event_input_is_the_one_hot_beside_the_time_features():
    """[one_hot(type); tau] built in one float tensor: the values of `torch.cat([F.one_hot(...).float(), t])`."""
    inp = LSTMTime(4, 2, 3, "t2v", {"k_sines": 3}).inputs
    types, tau = torch.tensor([[0, 3, 1], [2, 2, 0]]), torch.rand(2, 3)
    want = torch.cat([torch.nn.functional.one_hot(types, 4).float(), inp.time(tau)], dim=-1)
    assert torch.equal(inp(types, tau), want)
    inp(types, tau).sum().backward()  # the time features' gradient flows through the copy into the one tensor
    assert all(p.grad is not None for p in inp.parameters())
