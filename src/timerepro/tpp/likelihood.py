"""Log-likelihood of a batch, EasyTPP's way (`TorchBaseModel.compute_loglikelihood`).

The model protocol (every TPP model of the project meets it):
    model.pad_token_id                                   K
    model.encode(time_seqs, type_seqs) -> hidden         [B, L] -> [B, L, D], h_j from events k <= j
    model.intensities_at(times_since_last, hidden)       [B, L, S], [B, L, D] -> [B, L, S, K]
      = lambda_c(t_j + s), the intensity after event j before event j+1
    model.sampled_total_intensity(offsets, hidden)       optional: [B, L, S], [B, L, D] -> [B, L], the integral's
      mean_s sum_c lambda_c(t_j + s), where a model computes it without the [B, L, S, K] intensities (EasyTPP's THP)
    model.batch_log_likelihood(batch, ...) -> LogLikelihood   optional: replaces the computation below for a
      model whose likelihood is not "log lambda minus a sampled integral" (timerepro.models.tpp.easytpp)

As in EasyTPP, the hidden states of events 0..L-2 score events 1..L-1: the first event of each sequence is
conditioned on, and the integral runs over (t_0, t_last]:

    LL = sum_{i>=1} log lambda_{k_i}(t_i) - sum_{i>=1} (t_i - t_{i-1}) mean_s sum_c lambda_c(t_{i-1} + u_s (t_i - t_{i-1}))

with u_s = linspace(0, 1, S) ("grid", EasyTPP's make_dtime_loss_samples, default) or i.i.d. U(0, 1)
("uniform": an unbiased Monte Carlo estimate).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from timerepro.tpp.batch import Batch

SAMPLING = ("grid", "uniform")
EPS = torch.finfo(torch.float32).eps  # added to lambda inside the log, as EasyTPP does


@dataclass
class LogLikelihood:
    event_ll: torch.Tensor  # [B, L-1] log lambda_{k_i}(t_i), 0 at padding
    non_event_ll: torch.Tensor  # [B, L-1] integral of sum_c lambda_c over (t_{i-1}, t_i], 0 at padding
    mask: torch.Tensor  # [B, L-1] bool, events 1..L-1 that exist

    @property
    def total(self) -> torch.Tensor:
        return (self.event_ll - self.non_event_ll).sum()

    @property
    def n_events(self) -> int:
        return int(self.mask.sum())


def integral_ratios(shape: tuple[int, int], num_samples: int, sampling: str, *, device=None,
                    generator: torch.Generator | None = None) -> torch.Tensor:
    """Fractions u in [0, 1] of each interval where the intensity is sampled: [B, L, S]."""
    if sampling == "grid":
        return torch.linspace(0.0, 1.0, num_samples, device=device).expand(*shape, num_samples)
    if sampling == "uniform":
        return torch.rand(*shape, num_samples, generator=generator).to(device)
    raise ValueError(f"sampling must be one of {SAMPLING}, got {sampling!r}")


def empty_likelihood(batch: Batch) -> LogLikelihood | None:
    """The likelihood of a batch of one-event sequences (nothing is scored), else None."""
    if batch.type_seqs.size(1) >= 2:
        return None
    empty = batch.time_delta_seqs[:, 1:]
    return LogLikelihood(empty, empty, batch.seq_non_pad_mask[:, 1:])


def event_terms(lam_event: torch.Tensor, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """log lambda_{k_i}(t_i) at events 1..L-1, 0 at padding: lam_event [B, L-1, K] -> ([B, L-1], mask [B, L-1])."""
    mask = batch.seq_non_pad_mask[:, 1:]
    target = batch.type_seqs[:, 1:].clamp(max=lam_event.size(-1) - 1)  # padding id K -> any valid index, masked
    return torch.log(lam_event.gather(-1, target[..., None])[..., 0] + EPS) * mask, mask


def log_likelihood(model, batch: Batch, *, num_samples: int = 20, sampling: str = "grid",
                   generator: torch.Generator | None = None) -> LogLikelihood:
    empty = empty_likelihood(batch)
    if empty is not None:
        return empty
    if hasattr(model, "batch_log_likelihood"):  # a likelihood not of this form (EasyTPP's ODETPP, FullyNN, IntensityFree)
        return model.batch_log_likelihood(batch, num_samples=num_samples, sampling=sampling, generator=generator)
    hidden = model.encode(batch.time_seqs[:, :-1], batch.type_seqs[:, :-1])  # [B, L-1, D]
    mask = batch.seq_non_pad_mask[:, 1:]  # [B, L-1]
    dt = batch.time_delta_seqs[:, 1:] * mask  # [B, L-1]; padding (= K) zeroed
    # [B, L-1, K]: intensities at the next event
    event_ll, _ = event_terms(model.intensities_at(dt[..., None], hidden)[:, :, 0, :], batch)
    # [B, L-1, S]: sample times inside each interval; the mean over them of sum_c lambda_c there, [B, L-1]
    offsets = dt[..., None] * integral_ratios(tuple(dt.shape), num_samples, sampling, device=dt.device,
                                              generator=generator)
    sampled = getattr(model, "sampled_total_intensity", None)
    total = sampled(offsets, hidden) if sampled is not None else model.intensities_at(offsets, hidden).sum(-1).mean(-1)
    return LogLikelihood(event_ll, total * dt * mask, mask)
