"""Training Hawkes Attention through timerepro.train.fit and evaluating it, on a tiny Hawkes stand-in."""

import math

import numpy as np
import pytest
import torch

from timerepro.data import standins
from timerepro.data.tpp import read_sequences, write_sequences
from timerepro.models.tpp.hawkes_attention import HawkesAttention
from timerepro.runs import RunContext
from timerepro.tpp import ThinningConfig, evaluate, train_epoch
from timerepro.tpp.reference import ExpHawkesProcess
from timerepro.train import fit

K = 3


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    rng = np.random.default_rng(0)
    params = standins.hawkes_params(rng, K)
    folder = tmp_path_factory.mktemp("hawkes")
    out = {}
    for split, n in (("train", 48), ("dev", 12), ("test", 12)):
        seqs = standins.hawkes_sequences(rng, K, n, 8, 20, params)
        write_sequences(folder / f"{split}.npz", standins.easytpp_records(seqs, K))
        out[split] = read_sequences(folder / f"{split}.npz")
    return out, params


def test_fit_improves_validation_loglike_and_evaluates(splits, tmp_path):
    data, (mu, alpha, beta) = splits
    torch.manual_seed(0)
    model = HawkesAttention(K, d_model=16, d_inner=32, d_k=8, d_v=8, num_layers=1, num_heads=2, phi_width=4,
                            dropout=0.0, d_rnn=8)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(0)
    before = evaluate(model, data["dev"], batch_size=16, thinning=None)["loglike_per_event"]
    ctx = RunContext({"run_id": "tpp-test"}, tmp_path, device="cpu", show_progress=False)
    result = fit(model, opt,
                 train_epoch=lambda e: train_epoch(model, opt, data["train"], batch_size=16, shuffle=True,
                                                   generator=gen),
                 validate=lambda: evaluate(model, data["dev"], batch_size=16, thinning=None),
                 monitor="loglike_per_event", mode="max", max_epochs=8, patience=8, ctx=ctx, generator=gen)
    after = evaluate(model, data["dev"], batch_size=16, thinning=None)["loglike_per_event"]
    assert after > before + 0.1, (before, after)
    assert result.epochs_run == 8 and all(math.isfinite(r["train_nll_per_event"]) for r in result.history)

    cfg = ThinningConfig(num_sample=1, num_exp=200, dtime_max=20.0)
    test = evaluate(model, data["test"], batch_size=16, thinning=cfg, seed=5)
    assert set(test) == {"loglike_per_event", "rmse", "acc", "error_rate", "n_events"}
    assert test["n_events"] == int((data["test"].lengths - 1).sum())
    assert test["acc"] + test["error_rate"] == pytest.approx(1.0) and test["rmse"] > 0
    assert evaluate(model, data["test"], batch_size=16, thinning=cfg, seed=5) == test  # seeded
    assert evaluate(model, data["test"], batch_size=5, thinning=None)["loglike_per_event"] == pytest.approx(
        test["loglike_per_event"], rel=1e-5)  # batching changes nothing

    # the true process scores higher than an untrained model: the likelihood measures what it should
    oracle = evaluate(ExpHawkesProcess(mu, alpha, beta), data["dev"], batch_size=16, thinning=None)
    assert oracle["loglike_per_event"] > before
