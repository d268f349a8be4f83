"""The project's TPP loader, likelihood and metrics against easy-tpp 0.3.0's own, and the eight EasyTPP baselines.

Fixture: Hawkes-process sequences in EasyTPP's JSON format (timerepro.data.standins), K = 3, lengths 2 to 14.
"""

import json
import math

import numpy as np
import pytest
import torch

easy_tpp = pytest.importorskip("easy_tpp", reason="easy-tpp is not installed (pip install easy-tpp==0.3.0)")

from timerepro.data.standins import easytpp_records, hawkes_sequences  # noqa: E402
from timerepro.data.tpp import read_easytpp_json, read_sequences, write_sequences  # noqa: E402
from timerepro.models.tpp import easytpp as E  # noqa: E402
from timerepro.models.registry import build  # noqa: E402
from timerepro.tpp import METRICS, Predictions, ThinningConfig, collate, evaluate, iterate_batches  # noqa: E402
from timerepro.tpp import log_likelihood, predict_next, train_epoch  # noqa: E402

from .conftest import resolved  # noqa: E402

K = 3
NAMES = list(E.EASYTPP_MODELS)
SMALL = {"d_model": 8, "time_emb_size": 4, "num_layers": 1, "num_heads": 2, "loss_integral_num_sample_per_step": 20,
         "num_mlp_layers": 2}


@pytest.fixture(scope="module")
def records():
    rng = np.random.default_rng(5)
    return easytpp_records(hawkes_sequences(rng, K, 7, 2, 14), K)


@pytest.fixture(scope="module")
def batch(records):
    return collate(records, K)


def build_model(name: str, config: dict, k: int) -> torch.nn.Module:
    """The registered builder of `name` on its resolved config (params/ defaults) with `config` on top."""
    return build("temporal_point_process", name, resolved(name, **config), k)


def _small(name: str, **extra) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model(name, {**SMALL, **extra}, K)


def test_batches_equal_easytpp_tokenizer_and_collator(records, tmp_path, monkeypatch):
    """Compared: every batch of EasyTPP's TPPDataLoader (HF `json` loading, EventTokenizer, TPPDataCollator) on a
    local train.json with the project's batches (read_easytpp_json -> CSR npz -> iterate_batches) of the same file:
    time_seqs, time_delta_seqs, type_seqs, seq_non_pad_mask and attention_mask, exactly, batch size 3 (uneven)."""
    import datasets
    from easy_tpp.config_factory import DataConfig
    from easy_tpp.preprocess import TPPDataLoader

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf"))
    path = tmp_path / "train.json"
    path.write_text(json.dumps(records))
    specs = {"num_event_types": K, "pad_token_id": K, "padding_side": "right", "truncation_side": "right"}
    dc = DataConfig.parse_from_yaml_config({"train_dir": str(path), "valid_dir": str(path), "test_dir": str(path),
                                            "data_format": "json", "data_specs": specs})
    theirs = list(TPPDataLoader(dc, backend="torch", batch_size=3, shuffle=False).get_loader("train"))

    write_sequences(tmp_path / "train.npz", read_easytpp_json(path))
    ours = list(iterate_batches(read_sequences(tmp_path / "train.npz"), K, 3))
    assert len(ours) == len(theirs) == 3
    for a, b in zip(ours, theirs):
        for key in ("time_seqs", "time_delta_seqs", "type_seqs", "seq_non_pad_mask", "attention_mask"):
            mine, ref = getattr(a, key), b[key]
            assert mine.shape == ref.shape, key
            assert torch.equal(mine, ref.to(mine.dtype)), key


@pytest.mark.parametrize("name", NAMES)
def test_project_loglikelihood_equals_easytpp_loglike_loss(name, batch, records):
    """Compared: the project's log_likelihood (EasyTPP's 20-point grid; the protocol path for RMTPP, NHP, SAHP,
    THP, AttNHP, the model's batch_log_likelihood for ODETPP, FullyNN, IntensityFree) with -loss of EasyTPP's own
    `loglike_loss(**batch)` on the same batch and weights, Table 6 sizes, in eval mode; and the event counts."""
    torch.manual_seed(0)
    model = build_model(name, {"d_model": 32, "time_emb_size": 16, "num_layers": 2, "num_heads": 2}, K).eval()
    ours = log_likelihood(model, batch, num_samples=20, sampling="grid")
    loss, n = model.model.loglike_loss(**batch.as_dict())
    assert ours.n_events == n == sum(len(r["type_event"]) - 1 for r in records)
    total = float(ours.total.detach())
    assert math.isfinite(total)
    assert total == pytest.approx(-float(loss.detach()), rel=2e-5)
    if name in ("rmtpp", "nhp", "sahp", "attnhp", "thp"):  # the generic path: no model-specific likelihood
        assert not hasattr(model, "batch_log_likelihood")


def test_protocol_intensities_equal_easytpp_compute_intensities(batch):
    """Compared: for THP, NHP, AttNHP and FullyNN, intensities_at(encode(...)) with EasyTPP's
    compute_intensities_at_sample_times (what its thinning calls) at the same sample offsets; AttNHP's EasyTPP call
    gets absolute times t_j + s, as its loglike_loss passes them."""
    t, dt, ty = batch.time_seqs, batch.time_delta_seqs, batch.type_seqs
    s = torch.rand(*t.shape, 4, generator=torch.Generator().manual_seed(0))  # [B, L, 4]
    real = batch.seq_non_pad_mask
    for name in ("thp", "nhp", "attnhp", "fullynn"):
        model = _small(name).eval()
        with torch.no_grad():
            ours = model.intensities_at(s, model.encode(t, ty))
            with torch.enable_grad():
                arg = t[..., None] + s if name == "attnhp" else s
                kw = {"attention_mask": E.easytpp_attention_mask(ty, K)} if name == "attnhp" else {}
                ref = model.model.compute_intensities_at_sample_times(t, dt, ty, arg.clone(), **kw).detach()
        assert ours.shape == ref.shape == (*t.shape, 4, K)
        assert torch.allclose(ours[real], ref[real], rtol=1e-5, atol=1e-7), name


def test_metrics_equal_easytpp_metric_functions(batch):
    """Compared: the project's rmse, acc and error_rate with EasyTPP's registered `rmse` and `acc`
    (MetricsHelper.get_metrics_callback_from_names) on the same THP thinning predictions of two batches,
    concatenated by EasyTPP's concat_element, masked by seq_non_pad_mask[:, 1:]."""
    import easy_tpp.default_registers.register_metrics  # noqa: F401  (registers rmse and acc)
    from easy_tpp.utils import MetricsHelper, concat_element

    model = _small("thp").eval()
    cfg = ThinningConfig(num_exp=50)
    gen = torch.Generator().manual_seed(3)
    halves = [collate(r, K) for r in _split(batch)]
    preds, labels, masks = [], [], []
    for b in halves:
        dt, ty = predict_next(model, b, cfg, gen)
        preds.append((dt.numpy(), ty.numpy()))
        labels.append((b.time_delta_seqs[:, 1:].numpy(), b.type_seqs[:, 1:].numpy()))
        masks.append((b.seq_non_pad_mask[:, 1:].numpy(),))
    P, Lb = concat_element(preds, K), concat_element(labels, K)
    M = concat_element(masks, False)[0].astype(bool)
    theirs = MetricsHelper.get_metrics_callback_from_names(["rmse", "acc"])(P, Lb, seq_mask=M)
    ours = Predictions(P[0], P[1], Lb[0], Lb[1], M)
    assert METRICS["rmse"].fn(ours) == pytest.approx(float(theirs["rmse"]), rel=1e-6)
    assert METRICS["acc"].fn(ours) == pytest.approx(float(theirs["acc"]), rel=1e-12)
    assert METRICS["error_rate"].fn(ours) == pytest.approx(1 - float(theirs["acc"]), rel=1e-12)
    assert M.sum() == int(batch.seq_non_pad_mask[:, 1:].sum()) and 0 < theirs["acc"] < 1


def _split(batch):
    """The fixture's records in two halves of different padded lengths."""
    n = batch.type_seqs.size(0)
    lens = batch.seq_non_pad_mask.sum(1).tolist()
    recs = [{"time_since_start": batch.time_seqs[i, :l].double().numpy(),
             "time_since_last_event": batch.time_delta_seqs[i, :l].double().numpy(),
             "type_event": batch.type_seqs[i, :l].numpy()} for i, l in enumerate(lens)]
    return recs[: n // 2], recs[n // 2:]


class _Split:
    """A tiny EventSequences stand-in over records, for train_epoch/evaluate."""

    def __init__(self, recs):
        self.recs = recs

    def __len__(self):
        return len(self.recs)

    def sequence(self, n):
        return self.recs[n]


@pytest.mark.parametrize("name", NAMES)
def test_every_baseline_trains_one_step_on_cpu(name, records):
    """Each baseline builds from the registry with Table 6 sizes (params/models.yaml defaults), does one Adam step
    of the project's train_epoch (one batch) with a finite loss, and the step changes its weights."""
    import yaml
    from timerepro.paths import project_root

    defaults = yaml.safe_load((project_root() / "params" / "models.yaml").read_text())[name]["defaults"]
    torch.manual_seed(0)
    model = build_model(name, {**defaults, "loss_integral_num_sample_per_step": 20}, K).to("cpu")
    before = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    out = train_epoch(model, opt, _Split(records), batch_size=len(records))
    assert math.isfinite(out["train_nll_per_event"])
    assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters()))
    assert model.model.device == torch.device("cpu")


def test_fullynn_thinning_runs_under_no_grad_only_with_the_fix(batch, records):
    """EasyTPP's own one-step prediction for FullyNN fails under no_grad (its intensity is an autograd derivative);
    the project's evaluate (no_grad) runs thinning through the wrapper's enable_grad and gives finite metrics."""
    model = _small("fullynn").eval()
    torch.manual_seed(0)
    easytpp = E.build("FullyNN", resolved("fullynn", **SMALL), K, fused=False).eval()  # EasyTPP's own network
    with torch.no_grad(), pytest.raises(RuntimeError):
        easytpp.model.predict_one_step_at_every_event(**batch.as_dict())
    m = evaluate(model, _Split(records), batch_size=4, thinning=ThinningConfig(num_exp=30))
    assert all(math.isfinite(m[k]) for k in ("loglike_per_event", "rmse", "acc"))
    assert m["n_events"] == int(batch.seq_non_pad_mask[:, 1:].sum())


def test_intensity_free_predicts_with_its_own_sampler_seeded(batch):
    """IntensityFree predicts by EasyTPP's mixture sampler (no thinning): same generator seed, same predictions."""
    model = _small("intensity_free").eval()
    a = predict_next(model, batch, ThinningConfig(num_sample=3), torch.Generator().manual_seed(1))
    b = predict_next(model, batch, ThinningConfig(num_sample=3), torch.Generator().manual_seed(1))
    assert a[0].shape == batch.type_seqs[:, 1:].shape and (a[0] > 0).all()
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_to_device_updates_easytpp_device_attributes():
    """`.to(device)` also moves EasyTPP's cached `device` attributes (model, EventSampler, NeuralODE). Only CPU
    is available here: a meta-device move stands in for CUDA and checks the attributes follow."""
    model = _small("odetpp")
    model.to("meta")
    devices = {m.device for m in model.modules() if isinstance(getattr(m, "device", None), torch.device)}
    assert devices == {torch.device("meta")}
    assert model.model.event_sampler.device == torch.device("meta")


def test_inter_time_stats_match_easytpp_dataset(records):
    """IntensityFree's normalization: the project's inter_time_stats equals EasyTPP's TPPDataset.get_dt_stats."""
    from easy_tpp.preprocess.dataset import TPPDataset

    ds = TPPDataset({"time_seqs": [r["time_since_start"] for r in records],
                     "time_delta_seqs": [r["time_since_last_event"] for r in records],
                     "type_seqs": [r["type_event"] for r in records]})
    mean, std, _, _ = ds.get_dt_stats()
    ours = E.inter_time_stats(_Split([{k: np.asarray(v) for k, v in r.items()} for r in records]))
    assert ours == pytest.approx((mean, std), rel=1e-12)


def test_fullynn_thinning_in_slices_equals_one_call_and_bounds_the_graph(monkeypatch):
    """FullyNN's no-grad intensities are computed in slices along the sample axis so that one slice's autograd graphs
    (EasyTPP keeps a double-backward graph per query and mark) stay within FULLYNN_GRAPH_FLOATS; the values and the
    thinning predictions are those of one call over the whole grid (slices of >= 600 queries here)."""
    torch.manual_seed(0)
    model = build_model("fullynn", {"d_model": 32, "num_mlp_layers": 3}, 5).eval()
    hidden, s = torch.randn(4, 30, 32), torch.rand(4, 30, 50) * 3  # [B, L, H], [B, L, S]
    calls = []
    original = model._intensities
    monkeypatch.setattr(model, "_intensities", lambda t, h: calls.append(t.shape[-1]) or original(t, h))
    monkeypatch.setattr(E, "FULLYNN_GRAPH_FLOATS", 1 << 40)
    with torch.no_grad():
        whole = model.intensities_at(s, hidden)
    assert calls == [50]
    per_slice = E.FULLYNN_FLOATS_PER_QUERY_MARK * 32 * 5 * 4 * 30 * 5  # 5 of the 50 samples per slice
    monkeypatch.setattr(E, "FULLYNN_GRAPH_FLOATS", per_slice)
    calls.clear()
    with torch.no_grad():
        sliced = model.intensities_at(s, hidden)
    # equal within float32 rounding: the fused derivative's products differ in rounding with their row count
    assert calls == [5] * 10 and torch.allclose(sliced, whole, rtol=1e-6, atol=0.0)
    # the whole thinning prediction, sliced vs not (same generator seed)
    records = easytpp_records(hawkes_sequences(np.random.default_rng(2), 5, 4, 25, 30), 5)
    batch = collate(records, 5)
    cfg = ThinningConfig(num_exp=50)
    a = predict_next(model, batch, cfg, torch.Generator().manual_seed(3))
    monkeypatch.setattr(E, "FULLYNN_GRAPH_FLOATS", 1 << 40)
    b = predict_next(model, batch, cfg, torch.Generator().manual_seed(3))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_fullynn_intensities_keep_their_graph_when_training():
    """With grad enabled (the training likelihood) the intensities are one call and keep their graph to the weights."""
    model = _small("fullynn")
    lam = model.intensities_at(torch.rand(2, 3, 4), torch.randn(2, 3, SMALL["d_model"]))
    assert lam.shape == (2, 3, 4, K) and lam.requires_grad


@pytest.mark.parametrize("name", [n for n in NAMES if n != "intensity_free"] + ["hawkes_attention"])
def test_lazy_proposals_give_the_draws_of_every_proposal(name, batch, monkeypatch):
    """Thinning evaluates the intensity at the proposals slice by slice, only for sequences with an undecided draw,
    up to each draw's first acceptance: the predictions equal (exactly) those from all num_exp proposals at every
    position, for every model with an intensity, with shared and with own proposals; and it evaluates fewer."""
    model = _small(name).eval()
    entries = []
    real = model.intensities_at

    def counted(s, hidden):
        entries.append(s.numel())
        return real(s, hidden)

    monkeypatch.setattr(model, "intensities_at", counted)
    for cfg in (ThinningConfig(num_exp=200), ThinningConfig(num_exp=200, num_sample=3, share_proposals=False)):
        entries.clear()
        lazy = predict_next(model, batch, cfg, torch.Generator().manual_seed(4))
        lazy_entries = sum(entries)
        entries.clear()
        whole = predict_next(model, batch, ThinningConfig(**{**cfg.__dict__, "lazy_proposals": False}),
                             torch.Generator().manual_seed(4))
        assert torch.equal(lazy[0], whole[0]) and torch.equal(lazy[1], whole[1])
        if name != "fullynn":  # this untrained FullyNN accepts no proposal anywhere: every slice is evaluated
            assert lazy_entries < sum(entries) / 2


def test_attnhp_states_and_gradients_equal_easytpp(batch):
    """Compared: `attnhp_states` (the events' half of AttNHP's encoder once) with EasyTPP's
    compute_states_at_sample_times at the same times, in training mode (no dropout), and the gradients of the
    project's log-likelihood with those of EasyTPP's loglike_loss, Table 6 sizes."""
    torch.manual_seed(0)
    model = build_model("attnhp", {"d_model": 32, "time_emb_size": 16, "num_layers": 2, "num_heads": 2}, K).train()
    t, ty = batch.time_seqs, batch.type_seqs
    s = t[..., None] + torch.rand(*t.shape, 5, generator=torch.Generator().manual_seed(0))  # [B, L, 5]
    ours = E.attnhp_states(model.model, t, ty, s)
    ref = model.model.compute_states_at_sample_times(t, ty, E.easytpp_attention_mask(ty, K), s)
    assert ours.shape == ref.shape and torch.allclose(ours, ref, rtol=1e-5, atol=1e-6)
    grads = []
    for loss in (lambda: -log_likelihood(model, batch).total, lambda: model.model.loglike_loss(**batch.as_dict())[0]):
        model.zero_grad()
        loss().backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys() and len(grads[0]) > 5
    for n in grads[0]:  # per tensor: the difference's norm against the gradient's (event times differ by rounding)
        assert float((grads[0][n] - grads[1][n]).norm()) <= 1e-4 * float(grads[1][n].norm()) + 1e-6, n
