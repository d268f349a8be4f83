"""EasyTPP's baselines (easy-tpp 0.3.0: their model classes, their equations) behind the project's TPP protocol.

Each builder constructs EasyTPP's own model with Table 6's hyperparameters and wraps it so the project's
likelihood, thinning and metrics (`timerepro.tpp`) train and score it exactly as they score Hawkes Attention:

    model.pad_token_id                                   K
    model.encode(time_seqs, type_seqs) -> hidden         EasyTPP's states after each event
    model.intensities_at(s [B, L, S], hidden) -> [B, L, S, K]

How each model is split (all calls are EasyTPP's methods):

| model | hidden = | intensities_at = | log-likelihood |
|---|---|---|---|
| RMTPP | RNN states (`forward`) | `evolve_and_get_intentsity` | protocol |
| NHP | c, c_bar, delta, o after each event (`forward`) | `layer_intensity(get_states)` | protocol |
| SAHP, THP | encoder output (`forward`) | `softplus(compute_states_at_sample_times)` | protocol |
| AttNHP | the inputs (t, type) themselves | encoder re-run at t_j + s (`attnhp_states`: EasyTPP's `compute_states_at_sample_times`, events' half once) | protocol |
| ODETPP | right limits (`forward`) | one RK4 step (`compute_states_at_sample_times`) | own: event intensities use the multi-step adjoint ODE left limits |
| FullyNN | RNN states (`forward`) | d/ds of the cumulative hazard, under `enable_grad` | own: the cumulative hazard is the exact integral |
| IntensityFree | GRU context (`forward`) | not defined (no intensity in its likelihood) | own: log-normal mixture density + categorical mark; prediction by its own sampler |

"own" models define `batch_log_likelihood(batch, ...)` (and IntensityFree `predict_next(batch, cfg, generator)`),
which `timerepro.tpp.likelihood.log_likelihood` and `timerepro.tpp.thinning.predict_next` call instead of the
generic path; tests/tpp/test_easytpp.py checks every model's project log-likelihood against EasyTPP's
`loglike_loss`. `encode` sees only times and types: the time since the previous event is recomputed as
t_j - t_{j-1} (0 for the first event, as in EasyTPP's JSON datasets, and at padding).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from timerepro.tpp.batch import Batch
from timerepro.tpp.likelihood import LogLikelihood, empty_likelihood, event_terms, integral_ratios
from timerepro.tpp.thinning import in_chunks

# registry name -> EasyTPP class name
EASYTPP_MODELS = {"rmtpp": "RMTPP", "nhp": "NHP", "sahp": "SAHP", "thp": "THP", "attnhp": "AttNHP",
                  "odetpp": "ODETPP", "fullynn": "FullyNN", "intensity_free": "IntensityFree"}
# options only some classes read (EasyTPP's model_specs, FullyNN's rnn_type): key -> cast; the values come from
# the model's defaults in params/models.yaml (the thinning settings and the integral grid: the task's defaults)
CLASS_OPTIONS = {"ODETPP": {"ode_num_sample_per_step": int},
                 "FullyNN": {"num_mlp_layers": int, "proper_marked_intensities": bool},
                 "IntensityFree": {"num_mix_components": int}}
# FullyNN without grad: one (query, mark) derivative graph holds ~10 H floats (measured 317 at H = 32, torch 2.13 CPU:
# benchmarks/tpp_fullynn_memory.py); a slice of queries holds at most 2**26 floats (256 MB) of them
FULLYNN_FLOATS_PER_QUERY_MARK, FULLYNN_GRAPH_FLOATS = 10, 1 << 26


def time_deltas(time_seqs: torch.Tensor, type_seqs: torch.Tensor, pad_token_id: int) -> torch.Tensor:
    """t_j - t_{j-1} with 0 for the first event and at padding: [B, L] -> [B, L]."""
    dt = torch.diff(time_seqs, dim=1, prepend=time_seqs[:, :1])
    return dt.masked_fill(type_seqs == pad_token_id, 0.0)


def easytpp_attention_mask(type_seqs: torch.Tensor, pad_token_id: int) -> torch.Tensor:
    """EasyTPP's mask (True = masked): key k > j or k is padding. [B, L] -> [B, L, L]."""
    L = type_seqs.size(1)
    causal = torch.ones(L, L, dtype=torch.bool, device=type_seqs.device).triu(1)  # [L, L]
    return causal[None] | (type_seqs == pad_token_id)[:, None, :]


def inter_time_stats(seqs) -> tuple[float, float]:
    """Mean and std of log inter-event times of a training split (EasyTPP's TPPDataset.get_dt_stats), for IntensityFree."""
    dts = np.concatenate([seqs.sequence(n)["time_since_last_event"][1:] for n in range(len(seqs))] or [np.zeros(0)])
    log_dts = np.log(np.clip(dts, 1e-5, None))
    return (float(log_dts.mean()), float(log_dts.std())) if log_dts.size else (0.0, 1.0)


def model_config(class_name: str, config: dict, num_event_types: int):
    """EasyTPP's ModelConfig from a resolved run config (Table 6 values in d_model, time_emb_size, ...)."""
    from easy_tpp.config_factory import ModelConfig

    from timerepro.tpp.thinning import THINNING_KEYS

    specs = {key: cast(config[key]) for key, cast in CLASS_OPTIONS.get(class_name, {}).items()}
    heads = config["num_heads"]
    cfg = ModelConfig(
        model_id=class_name, hidden_size=int(config["d_model"]), time_emb_size=int(config["time_emb_size"]),
        num_layers=int(config["num_layers"]), num_heads=int(heads) if heads else 2,  # NA: unused by the model
        dropout_rate=float(config["dropout"]), use_ln=bool(config["use_ln"]),
        **({"rnn_type": str(config["rnn_type"])} if class_name == "FullyNN" else {}), use_mc_samples=True,
        loss_integral_num_sample_per_step=int(config["loss_integral_num_sample_per_step"]),
        thinning={k: config[k] for k in THINNING_KEYS},
        num_event_types=num_event_types, num_event_types_pad=num_event_types + 1, event_pad_index=num_event_types,
        gpu=-1, model_specs=specs)
    if class_name == "IntensityFree":  # EasyTPP's runner sets these from the training split; null: 0 and 1
        mean, std = config["mean_log_inter_time"], config["std_log_inter_time"]
        cfg.set("mean_log_inter_time", 0.0 if mean is None else float(mean))
        cfg.set("std_log_inter_time", 1.0 if std is None else float(std))
    return cfg


class EasyTPPModel(nn.Module):
    """An EasyTPP model (`self.model`) with the project's protocol; subclasses say how it splits."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.pad_token_id = int(model.pad_token_id)
        self.num_event_types = int(model.num_event_types)

    def _apply(self, fn, recurse=True):
        """.to(device) also moves the `device` attributes EasyTPP caches (BaseModel, EventSampler, NeuralODE)."""
        out = super()._apply(fn, recurse)
        p = next(self.parameters(), None)
        if p is not None:
            for m in self.modules():
                if isinstance(getattr(m, "device", None), (torch.device, str)):
                    m.device = p.device
        return out

    def inputs(self, time_seqs: torch.Tensor, type_seqs: torch.Tensor) -> tuple:
        return time_seqs, time_deltas(time_seqs, type_seqs, self.pad_token_id), type_seqs


class RMTPPModel(EasyTPPModel):
    def encode(self, time_seqs, type_seqs, attention_mask=None):
        _, right = self.model.forward((*self.inputs(time_seqs, type_seqs), None, None))
        return right  # [B, L, H]

    def intensities_at(self, times_since_last, hidden):
        return self.model.evolve_and_get_intentsity(hidden, times_since_last)  # [B, L, S, K]


class NHPModel(EasyTPPModel):
    def encode(self, time_seqs, type_seqs, attention_mask=None):
        _, right = self.model.forward((*self.inputs(time_seqs, type_seqs), None, None))
        return right  # [B, L, 4H]: c, c_bar, delta, o right after each event

    def intensities_at(self, times_since_last, hidden):
        fused = getattr(self.model, "intensities_at_offsets", None)  # easytpp_fused's FusedNHP: the same, sliced
        if fused is not None:
            return fused(hidden, times_since_last)
        return self.model.layer_intensity(self.model.get_states(hidden, times_since_last))


class _AttentionModel(EasyTPPModel):
    """THP's and SAHP's split: the encoder's states, then softplus(compute_states_at_sample_times)."""

    def encode(self, time_seqs, type_seqs, attention_mask=None):
        mask = easytpp_attention_mask(type_seqs, self.pad_token_id) if attention_mask is None else attention_mask
        return self.model.forward(time_seqs, type_seqs, mask)  # [B, L, D]

    def intensities_at(self, times_since_last, hidden):
        return self.model.softplus(self.model.compute_states_at_sample_times(hidden, times_since_last))


class THPModel(_AttentionModel):
    def sampled_total_intensity(self, offsets, hidden):
        """The likelihood's integral term (tpp/likelihood.py's hook) by `easytpp_fused.thp_integral` (issue 27)."""
        from timerepro.models.tpp.easytpp_fused import thp_integral

        return thp_integral(self, hidden, offsets)  # [B, L]


class SAHPModel(_AttentionModel):
    def encode(self, time_seqs, type_seqs, attention_mask=None):
        mask = easytpp_attention_mask(type_seqs, self.pad_token_id) if attention_mask is None else attention_mask
        return self.model.forward(*self.inputs(time_seqs, type_seqs), mask)  # [B, L, D]


class AttNHPModel(EasyTPPModel):
    """AttNHP's intensity at t needs an encoder pass with t's temporal embedding: hidden holds the inputs. The pass
    is `attnhp_states` (EasyTPP's equations with the events' half computed once, not once per sample time) unless
    dropout is active in training, where EasyTPP's own `compute_states_at_sample_times` draws its masks."""

    def encode(self, time_seqs, type_seqs, attention_mask=None):
        return torch.stack([time_seqs, type_seqs.to(time_seqs.dtype)], dim=-1)  # [B, L, 2]

    def _inputs(self, hidden):
        return hidden[..., 0], hidden[..., 1].round().long()  # time_seqs, type_seqs [B, L] each

    def intensities_at(self, times_since_last, hidden):
        time_seqs, type_seqs = self._inputs(hidden)
        sample_times = time_seqs[..., None] + times_since_last  # [B, L, S]: absolute times, as loglike_loss uses
        if self.training and self.model.dropout > 0:
            mask = easytpp_attention_mask(type_seqs, self.pad_token_id)
            states = self.model.compute_states_at_sample_times(time_seqs, type_seqs, mask, sample_times)
        else:
            states = attnhp_states(self.model, time_seqs, type_seqs, sample_times)  # [B, L, S, H*D]
        return self.model.layer_intensity(states)


def _attnhp_event_stream(m, time_seqs, type_seqs):
    """AttNHP's events through its heads and layers: [(layer, keys, values)] per head, keys and values [B, L, D] of
    the events entering the layer, and EasyTPP's attention mask [B, L, L]. The events attend to events only (their
    rows mask every query column in EasyTPP's combined mask), so this is the same for every sample time; the event
    stream runs on from one head to the next, as in EasyTPP's `forward_pass`."""
    event_emb, time_emb, _ = m.seq_encoding(time_seqs, type_seqs)  # [B, L, D+T], [B, L, T]
    mask = easytpp_attention_mask(type_seqs, m.pad_token_id)  # [B, L, L], True = masked
    heads = []
    for head in m.heads:
        layers = []
        for layer in head:
            lq, lk, lv = layer.self_attn.linears
            k, v = lk(event_emb), lv(event_emb)  # [B, L, D]
            layers.append((layer, k, v))
            scores = torch.matmul(lq(event_emb), k.transpose(1, 2)) / math.sqrt(k.size(-1))  # [B, L, L]
            p = torch.softmax(scores.masked_fill(mask, -1e9), dim=-1)
            event_emb = torch.cat([torch.matmul(p, v), time_emb], dim=-1)
        heads.append(layers)
    return heads, mask


def attnhp_states(m, time_seqs, type_seqs, sample_times):
    """EasyTPP AttNHP's `compute_states_at_sample_times(time_seqs, type_seqs, its mask, sample_times)` with the
    events' half of the encoder computed once (EasyTPP re-runs all 2L tokens for every sample time): the query of
    position j at time t attends to the events k <= j (not padding) and to itself, as EasyTPP's combined mask lets it.
    Equal up to float rounding (the masked keys, exact zeros in EasyTPP's softmax, are not summed here); no dropout.
    sample_times [B, L, S] -> [B, L, S, H*D]."""
    B, L = time_seqs.shape
    S = sample_times.size(-1)
    heads, mask = _attnhp_event_stream(m, time_seqs, type_seqs)
    q_mask = mask[:, :, None, :].expand(B, L, S, L).reshape(B, L * S, L)  # [B, L*S, L]: query (j, n) sees k <= j
    emb = m.compute_temporal_embedding(sample_times.reshape(B, L * S))  # [B, L*S, T]
    states = []
    for layers in heads:
        cur = emb.new_zeros(B, L * S, m.d_model)  # EasyTPP's init_cur_layer
        for layer, k, v in layers:
            lq, lk, lv = layer.self_attn.linears
            x = torch.cat([cur, emb], dim=-1)  # [B, L*S, D+T]
            q = lq(x)
            scale = math.sqrt(q.size(-1))
            to_events = (torch.matmul(q, k.transpose(1, 2)) / scale).masked_fill(q_mask, -1e9)  # [B, L*S, L]
            to_self = (q * lk(x)).sum(-1, keepdim=True) / scale  # [B, L*S, 1]
            p = torch.softmax(torch.cat([to_events, to_self], dim=-1), dim=-1)  # [B, L*S, L+1]
            out = torch.matmul(p[..., :L], v) + p[..., L:] * lv(x)  # [B, L*S, D]
            cur = torch.tanh(out) + cur
            if m.use_norm:
                cur = m.norm(cur)
        states.append(cur)
    return torch.cat(states, dim=-1).view(B, L, S, -1)  # [B, L, S, H*D]


class ODETPPModel(EasyTPPModel):
    """Thinning through the protocol (one RK4 step from the right limit, as EasyTPP's own thinning); the likelihood
    through `batch_log_likelihood`, whose event intensities come from the multi-step adjoint ODE, as `loglike_loss`."""

    def encode(self, time_seqs, type_seqs, attention_mask=None):
        _, right = self.model.forward(time_deltas(time_seqs, type_seqs, self.pad_token_id), type_seqs)
        return right  # [B, L, H]

    def intensities_at(self, times_since_last, hidden):
        return self.model.layer_intensity(self.model.compute_states_at_sample_times(hidden, times_since_last))

    def batch_log_likelihood(self, batch: Batch, *, num_samples: int = 20, sampling: str = "grid",
                             generator: torch.Generator | None = None) -> LogLikelihood:
        """EasyTPP's loglike_loss terms per event; the integral on the project's grid or uniform samples."""
        empty = empty_likelihood(batch)
        if empty is not None:
            return empty
        left, right = self.model.forward(batch.time_delta_seqs, batch.type_seqs)  # [B, L-1, H], [B, L, H]
        event_ll, mask = event_terms(self.model.layer_intensity(left), batch)
        dt = batch.time_delta_seqs[:, 1:] * mask  # [B, L-1]
        u = integral_ratios(tuple(dt.shape), num_samples, sampling, device=dt.device, generator=generator)
        lam = self.intensities_at(dt[..., None] * u, right[:, :-1])  # [B, L-1, S, K]
        return LogLikelihood(event_ll, lam.sum(-1).mean(-1) * dt * mask, mask)


class FullyNNModel(EasyTPPModel):
    """FullyNN's intensity is d/ds of a cumulative hazard network (autograd): evaluated under enable_grad even when
    the caller runs under no_grad (EasyTPP's evaluation does not, and fails: easytpp-notes.md); the result is
    detached there. Its likelihood uses the cumulative hazard itself (exact integral), as `loglike_loss`."""

    def encode(self, time_seqs, type_seqs, attention_mask=None):
        return self.model.forward(*self.inputs(time_seqs, type_seqs))  # [B, L, H]

    def intensities_at(self, times_since_last, hidden):
        """[B, L, S] -> [B, L, S, K]. Without grad (thinning) in slices along S: EasyTPP's derivative keeps a
        double-backward graph per query and mark (create_graph=True), FULLYNN_GRAPH_FLOATS bounds one slice's."""
        if torch.is_grad_enabled():
            return self._intensities(times_since_last, hidden)
        per_query = FULLYNN_FLOATS_PER_QUERY_MARK * hidden.size(-1) * self.num_event_types
        return in_chunks(lambda s: self._intensities(s, hidden).detach(), times_since_last,
                         max(1, FULLYNN_GRAPH_FLOATS // per_query))

    def _intensities(self, times_since_last, hidden):
        B, L, S = times_since_last.shape
        with torch.enable_grad():
            h = hidden[:, :, None, :].expand(B, L, S, hidden.size(-1))  # [B, L, S, H]
            _, lam = self.model.layer_intensity(h, times_since_last.detach().clone())  # [B, L, S, K]
        return lam

    def batch_log_likelihood(self, batch: Batch, *, num_samples: int = 20, sampling: str = "grid",
                             generator: torch.Generator | None = None) -> LogLikelihood:
        """EasyTPP's loglike_loss terms per event (num_samples and sampling are unused: no sampled integral)."""
        empty = empty_likelihood(batch)
        if empty is not None:
            return empty
        grad = torch.is_grad_enabled()
        with torch.enable_grad():
            hidden = self.model.forward(batch.time_seqs[:, :-1], batch.time_delta_seqs[:, :-1], batch.type_seqs[:, :-1])
            # [B, L-1, K] each: Lambda_k(dt_i) and its derivative lambda_k(t_i)
            integral, lam = self.model.layer_intensity(hidden, batch.time_delta_seqs[:, 1:].clone())
        event_ll, mask = event_terms(lam, batch)
        non_event_ll = integral.sum(-1) * mask
        if not grad:
            event_ll, non_event_ll = event_ll.detach(), non_event_ll.detach()
        return LogLikelihood(event_ll, non_event_ll, mask)


class IntensityFreeModel(EasyTPPModel):
    """No intensity in its likelihood: log-normal mixture density of the inter-event time plus a categorical mark
    (`batch_log_likelihood`); predictions by its own `predict_one_step_at_every_event` (mixture samples), seeded."""

    def encode(self, time_seqs, type_seqs, attention_mask=None):
        return self.model.forward(time_deltas(time_seqs, type_seqs, self.pad_token_id), type_seqs)  # [B, L, H]

    def set_inter_time_stats(self, train) -> tuple[float, float]:
        """EasyTPP's runner normalizes log inter-event times by the training split's statistics: do the same."""
        mean, std = inter_time_stats(train)
        self.model.mean_log_inter_time, self.model.std_log_inter_time = mean, std
        return mean, std

    def inter_time_distribution(self, context: torch.Tensor):
        """EasyTPP's LogNormalMixtureDistribution from the context [B, L, H] (the lines of its loglike_loss)."""
        from easy_tpp.model.intensity_free import LogNormalMixtureDistribution, clamp_preserve_gradients

        m, M = self.model, self.model.num_mix_components
        raw = m.linear(context)  # [B, L, 3M]: locs, log_scales, log_weights
        return LogNormalMixtureDistribution(
            locs=raw[..., :M], log_scales=clamp_preserve_gradients(raw[..., M:2 * M], -5.0, 3.0),
            log_weights=torch.log_softmax(raw[..., 2 * M:], dim=-1),
            mean_log_inter_time=m.mean_log_inter_time, std_log_inter_time=m.std_log_inter_time)

    def batch_log_likelihood(self, batch: Batch, *, num_samples: int = 20, sampling: str = "grid",
                             generator: torch.Generator | None = None) -> LogLikelihood:
        """log p(dt_i) + log p(k_i) per event (num_samples and sampling are unused: no integral)."""
        empty = empty_likelihood(batch)
        if empty is not None:
            return empty
        context = self.model.forward(batch.time_delta_seqs[:, :-1], batch.type_seqs[:, :-1])  # [B, L-1, H]
        types = batch.type_seqs[:, 1:]
        mask = batch.seq_non_pad_mask[:, 1:] & (types != self.pad_token_id)
        time_ll = self.inter_time_distribution(context).log_prob(batch.time_delta_seqs[:, 1:].clamp(min=1e-5))
        mark_logp = torch.log_softmax(self.model.mark_linear(context), dim=-1)  # [B, L-1, K+1]
        mark_ll = mark_logp.gather(-1, types[..., None])[..., 0]
        event_ll = (time_ll + mark_ll) * mask
        return LogLikelihood(event_ll, torch.zeros_like(event_ll), mask)

    def predict_next(self, batch: Batch, cfg, generator: torch.Generator | None = None):
        """EasyTPP's own prediction: mean of cfg.num_sample mixture draws, argmax mark; torch's RNG seeded from generator."""
        seed = int(torch.randint(0, 2 ** 62, (1,), generator=generator))
        device = next(self.parameters()).device
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed)
            self.model.event_sampler.num_sample = int(cfg.num_sample)
            return self.model.predict_one_step_at_every_event(**batch.as_dict())


ADAPTERS = {"RMTPP": RMTPPModel, "NHP": NHPModel, "SAHP": SAHPModel, "THP": THPModel, "AttNHP": AttNHPModel,
            "ODETPP": ODETPPModel, "FullyNN": FullyNNModel, "IntensityFree": IntensityFreeModel}


def build(class_name: str, config: dict, num_event_types: int, fused: bool = True) -> EasyTPPModel:
    """EasyTPP's `class_name` for K event types, wrapped; built on CPU (the task moves it with .to(device)).
    `fused`: EasyTPP's elementwise modules replaced by easytpp_fused's (the same equations, fewer passes)."""
    import easy_tpp.model as etm

    from timerepro.models.tpp.easytpp_fused import fuse

    model = getattr(etm, class_name)(model_config(class_name, config, num_event_types))
    return ADAPTERS[class_name](fuse(class_name, model) if fused else model)


def build_baseline(config: dict, num_event_types: int) -> EasyTPPModel:
    """The builder params/models.yaml names for every EasyTPP baseline: the class of `config["model"]`."""
    return build(EASYTPP_MODELS[config["model"]], config, num_event_types)
