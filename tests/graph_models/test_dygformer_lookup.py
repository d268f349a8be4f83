"""`dygformer.lookup_rows` (the co-occurrence encoder's table lookup): autograd's values and, at one thread, its
gradient bit for bit; at two threads the same gradient again, from every call (autograd's own `index_put_`
accumulates repeated rows with atomics across threads, in no fixed order)."""

import pytest
import torch

from timerepro.models.graph.dygformer import CooccurrenceEncoder, lookup_rows


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _case():
    torch.manual_seed(0)
    table = torch.randn(7, 50, requires_grad=True)
    index = torch.randint(0, 7, (200, 32, 2))  # DyGFormer's (B, L, 2) counts: every row repeated thousands of times
    return table, index, torch.randn(200, 32, 2, 50)


def test_the_lookup_is_autograds_indexing_bit_for_bit_at_one_thread(two_threads):
    torch.set_num_threads(1)
    table, index, grad = _case()
    want = table[index]
    (g_want,) = torch.autograd.grad(want, table, grad)
    got = lookup_rows(table, index)
    (g_got,) = torch.autograd.grad(got, table, grad)
    assert torch.equal(got, want)
    assert torch.equal(g_got.view(torch.int32), g_want.view(torch.int32))


def test_two_threads_give_the_one_thread_gradient_every_time(two_threads):
    table, index, grad = _case()
    torch.set_num_threads(1)
    (want,) = torch.autograd.grad(lookup_rows(table, index), table, grad)
    torch.set_num_threads(2)
    for _ in range(20):
        (got,) = torch.autograd.grad(lookup_rows(table, index), table, grad)
        assert torch.equal(got.view(torch.int32), want.view(torch.int32))


def test_the_encoders_gradients_at_two_threads_are_the_same_every_time(two_threads):
    """(Its small products may round otherwise at one thread than at two: the same at a given thread count.)"""
    torch.manual_seed(1)
    encoder = CooccurrenceEncoder(50)
    counts = torch.randint(0, 6, (200, 32, 2)).float()
    grad = torch.randn(200, 32, 50)
    torch.set_num_threads(2)
    grads = []
    for _ in range(10):
        encoder.zero_grad(set_to_none=True)
        encoder(counts).backward(grad)
        grads.append([p.grad.clone() for p in encoder.parameters()])
    for other in grads[1:]:
        assert all(torch.equal(a, b) for a, b in zip(grads[0], other))


def test_without_a_gradient_it_is_plain_indexing():
    table, index, _ = _case()
    with torch.no_grad():
        out = lookup_rows(table, index)
    assert out.grad_fn is None and torch.equal(out, table.detach()[index])
