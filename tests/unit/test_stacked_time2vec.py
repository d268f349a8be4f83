"""time2vec's synthetic classifier: the stacked forward equals vmap over members bitwise, values and gradients."""

import pytest
import torch
from torch.func import functional_call, vmap

from timerepro.models.seq.time_lstm import Time2VecClassifier


@pytest.mark.parametrize("config", [{}, {"activation": "cos", "linear_term": False},
                                    {"frequencies": "equally_spaced"}, {"t2v_init": "normal", "activation": "triangle"}])
def test_stacked_equals_vmap(config):
    models = []
    for seed in range(4):
        torch.manual_seed(seed)
        models.append(Time2VecClassifier(8, config))
    base = models[0]
    tau = torch.arange(1.0, 4 * 30 + 1).view(4, 30) * 1.5  # (S, N)
    outs, grads = [], []
    for forward in (vmap(lambda p, x: functional_call(base, p, (x,))), base.stacked):
        params = {k: torch.stack([dict(m.named_parameters())[k].detach() for m in models]).requires_grad_(True)
                  for k, _ in base.named_parameters()}
        out = forward(params, tau)
        (out.sin().sum()).backward()
        outs.append(out.detach())
        grads.append({k: v.grad for k, v in params.items()})
    assert outs[0].shape == (4, 30) and torch.equal(outs[0], outs[1])
    assert grads[0].keys() == grads[1].keys() and all(torch.equal(grads[0][k], grads[1][k]) for k in grads[0])
    # not a vacuous comparison: members differ
    assert not torch.equal(outs[0][0], outs[0][1])
