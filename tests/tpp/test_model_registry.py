"""The TPP models of the model registry (params/models.yaml `module:`): builders that meet the protocol of tpp/likelihood.py."""

import pytest
import torch

from timerepro import registry
from timerepro.models.tpp.builders import HAWKES_VARIANTS
from timerepro.models.registry import TaskModels, build
from timerepro.tasks.temporal_point_process import param_groups
from timerepro.tpp.batch import collate
from timerepro.tpp.likelihood import log_likelihood

from .conftest import resolved

K = 4
MODELS = TaskModels("temporal_point_process")
SMALL = resolved("hawkes_attention", d_model=8, d_inner=16, d_k=4, d_v=4, num_layers=1, num_heads=2, phi_width=3,
                 phi_depth=1, dropout=0.0, d_rnn=None)


def build_model(name: str, config: dict, k: int):
    return build("temporal_point_process", name, config, k)


def _batch():
    seqs = [{"time_since_start": [0.0, 0.5, 1.5], "time_since_last_event": [0.0, 0.5, 1.0], "type_event": [0, 3, 1]},
            {"time_since_start": [0.0, 0.2], "time_since_last_event": [0.0, 0.2], "type_event": [2, 2]}]
    return collate(seqs, K)


def test_every_entry_resolves_to_a_builder():
    assert "hawkes_attention" in MODELS
    for name in MODELS:
        assert callable(MODELS[name])
    with pytest.raises(KeyError, match="unknown temporal_point_process model"):
        MODELS["no_such_model"]


@pytest.mark.parametrize("variant", sorted(HAWKES_VARIANTS))
def test_hawkes_builder_meets_the_protocol(variant):
    torch.manual_seed(0)
    model = build_model("hawkes_attention", {**SMALL, "variant": variant}, K)
    b = _batch()
    assert model.pad_token_id == K
    h = model.encode(b.time_seqs, b.type_seqs)
    assert h.shape == (2, 3, SMALL["d_model"])
    lam = model.intensities_at(torch.rand(2, 3, 5), h)
    assert lam.shape == (2, 3, 5, K) and bool((lam > 0).all())
    assert torch.isfinite(log_likelihood(model, b).total)
    kernels = model.layers[0].attn.phi
    assert (kernels is None) == (variant == "thp_view")
    if variant == "shared_phi":
        assert model.kernel_curves(torch.linspace(0, 1, 3)).shape == (1, 1, 2, 3)  # one kernel per head
    assert model.positional_encoding == (variant in ("positional_encoding", "thp_view"))


def test_builder_reads_table8_values_and_decay_groups():
    model = build_model("hawkes_attention", {**SMALL, "phi_width": 5, "d_rnn": 6}, K)
    assert model.rnn is not None and model.rnn.hidden_size == 6
    assert model.kernel_curves(torch.zeros(1)).shape == (1, K, 2, 1)
    groups = param_groups(model, {"phi_weight_decay": 0.01})
    assert [g["weight_decay"] for g in groups] == [0.01, 0.0] and len(groups[0]["params"]) > 0
    plain = param_groups(torch.nn.Linear(2, 2), {"weight_decay": 0.1})  # a model without its own groups
    assert len(plain) == 1 and plain[0]["weight_decay"] == 0.1


def test_every_tpp_model_in_params_is_registered():
    reg = registry.load()
    tpp_models = {n for n, m in reg.models.items() if m["task"] == "temporal_point_process"}
    assert "hawkes_attention" in tpp_models and tpp_models <= set(MODELS)
