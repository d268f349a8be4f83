"""The synthetic classifier's hand-stacked forward equals the vmapped one bit for bit: values and every gradient."""

import itertools

import pytest
import torch
import torch.nn.functional as F

from timerepro import ensemble
from timerepro.models.seq.transformer import SyntheticSequenceClassifier

M, P = 7, 0.1  # the offline task: 7 events, dropout 0.1


def _members(S: int, encoder: str, d_time: int, layers: int, attention: str) -> tuple:
    """S models of one configuration, each with its own weights and standardization statistics."""
    models = []
    for s in range(S):
        torch.manual_seed(s)
        models.append(SyntheticSequenceClassifier(encoder=encoder, d_time=d_time, layers=layers, attention=attention,
                                                  dropout=P, time_mean=0.5 + s, time_std=1.5 + s))
        with torch.no_grad():  # away from the initial values (zero phases, unit norms) so every parameter matters
            for p in models[-1].parameters():
                p.add_(0.1 * torch.randn_like(p))
    params = {k: torch.stack([dict(m.named_parameters())[k].detach() for m in models]) for k, _ in
              models[0].named_parameters()}
    buffers = {k: torch.stack([dict(m.named_buffers())[k] for m in models]) for k, _ in models[0].named_buffers()}
    return models[0], params, buffers


def _step_outputs(forward, model, params0, buffers, S: int, B: int, steps: int) -> list[torch.Tensor]:
    """Logits, attention and every parameter's gradient over a few steps of plain SGD, dropout masks drawn seeded."""
    params = {k: v.clone().requires_grad_(True) for k, v in params0.items()}
    gen = torch.Generator().manual_seed(0)
    out = []
    for _ in range(steps):
        dt, x = torch.rand(S, B, M, generator=gen) * 3, torch.randn(S, B, M, generator=gen)
        y = (torch.rand(S, B, generator=gen) > 0.5).float()
        drops = [(torch.rand(S, *shape, generator=gen) >= P).float() / (1 - P)
                 for shape in model.dropout_shapes(B, M)]
        logits, attn = forward(params, buffers, dt, x, drops)
        F.binary_cross_entropy_with_logits(logits, y, reduction="none").mean(1).sum().backward()
        out += [logits.detach(), attn.detach()] + [params[k].grad for k in params]
        with torch.no_grad():
            for p in params.values():
                p -= 0.1 * p.grad
                p.grad = None
    return out


GRID = list(itertools.product(["linear", "cosine", "sine_cosine", "cosine_scale"], [1, 2], ["full", "causal"], [2, 16]))


@pytest.mark.parametrize("S,B", [(3, 5)])
@pytest.mark.parametrize("encoder,layers,attention,d_time", GRID)
def test_stacked_forward_equals_vmapped_bitwise(encoder, layers, attention, d_time, S, B):
    _check(S, B, encoder, layers, attention, d_time)


@pytest.mark.parametrize("encoder,layers,attention,d_time", [("linear", 2, "full", 16), ("sine_cosine", 1, "causal", 8)])
def test_stacked_forward_equals_vmapped_bitwise_at_the_task_sizes(encoder, layers, attention, d_time):
    """10 seeds, batches of 32 and the last one of 24 (1400 training sequences): the shapes the pipeline runs."""
    for B in (32, 24):
        _check(10, B, encoder, layers, attention, d_time, steps=1)


def _check(S, B, encoder, layers, attention, d_time, steps=3):
    model, params, buffers = _members(S, encoder, d_time, layers, attention)
    vmapped = ensemble.vmapped(model)
    vmapped.base.train()
    ref = _step_outputs(vmapped, model, params, buffers, S, B, steps)
    got = _step_outputs(model.stacked, model, params, buffers, S, B, steps)
    assert len(ref) == len(got) == steps * (2 + len(params))
    for i, (a, b) in enumerate(zip(ref, got)):
        assert a.shape == b.shape and torch.equal(a, b), f"output {i}: {int((a != b).sum())} elements differ"
    vmapped.base.eval()  # validation: no dropout, the whole split at once
    with torch.no_grad():
        dt, x = torch.rand(S, 300, M) * 3, torch.randn(S, 300, M)
        for a, b in zip(vmapped(params, buffers, dt, x), model.stacked(params, buffers, dt, x)):
            assert torch.equal(a, b)


def test_stacked_forward_refuses_an_encoder_without_a_stacked_form():
    model = SyntheticSequenceClassifier(encoder="time2vec", d_time=4, layers=1, attention="full")
    params = {k: v.detach().unsqueeze(0) for k, v in model.named_parameters()}
    with pytest.raises(ValueError, match="time2vec|Time2Vec"):
        model.stacked(params, {}, torch.rand(1, 2, M), torch.rand(1, 2, M))
