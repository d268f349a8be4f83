"""Next-event prediction by thinning, as EasyTPP's EventSampler (the version the authors ship) does it.

For the history up to event j (intensity lambda(t_j + s), s >= 0):
  1. upper bound B_j = over_sample_rate * max_s sum_c lambda_c(t_j + s) over num_samples_boundary grid points
     s in linspace(0, 1) * w_j, where w_j is the interval that ended at event j (t_j - t_{j-1}; EasyTPP's
     choice, "last_interval") or dtime_max ("dtime_max");
  2. proposals: cumulative sums of num_exp Exp(B_j) draws (a homogeneous Poisson process of rate B_j);
  3. num_sample independent uniforms per proposal; a draw accepts the first proposal with u B_j < lambda(s);
     a draw that accepts none returns dtime_max; every draw is clamped at 1e5. EasyTPP shares one proposal
     sequence among the num_sample draws ("fast approximation"): each draw is a valid sample but the draws are
     dependent, so their mean does not converge to E[dt] as num_sample grows. share_proposals=False gives every
     draw its own proposals (independent draws; num_sample times the intensity evaluations);
  4. predicted time = mean of the draws (the minimum-Bayes-risk estimate under squared error); predicted type
     = argmax_c of the mean over draws of lambda_c / sum lambda at the drawn times.
This is exact Ogata thinning whenever B_j bounds the intensity over the proposals and num_exp proposals reach
far enough; the last-interval bound does not guarantee that (docs/hawkes_attention.md).

Defaults are the authors' evaluation configs (and EasyTPP's examples): num_sample 1, num_exp 500,
over_sample_rate 5, num_samples_boundary 5, dtime_max 5. All randomness comes from the given generator.

Only the proposals up to a draw's first acceptance decide it, so the intensity is evaluated on the proposals slice by
slice (the first FIRST_PROPOSALS, then doubling), only for the sequences with a draw still undecided, until every draw
has accepted or the num_exp proposals are spent: the same draws as evaluating all num_exp at every position (the
random numbers are drawn whole first; a slice's intensities are those of the whole, `lazy_proposals=False` checks it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from timerepro.tpp.batch import Batch

BOUND_WINDOWS = ("last_interval", "dtime_max")
MAX_DTIME = 1e5  # EasyTPP's final clamp
THINNING_KEYS = ("num_sample", "num_exp", "over_sample_rate", "num_samples_boundary", "dtime_max")  # a run config sets


@dataclass(frozen=True)
class ThinningConfig:
    num_sample: int = 1
    num_exp: int = 500
    over_sample_rate: float = 5.0
    num_samples_boundary: int = 5
    dtime_max: float = 5.0
    bound_window: str = "last_interval"
    share_proposals: bool = True
    chunk_elements: int = 1 << 20  # evaluate intensities in chunks of at most this many B*L*num_exp entries
    lazy_proposals: bool = True  # proposals evaluated up to each draw's first acceptance (False: all num_exp at once)

    def __post_init__(self):
        if self.bound_window not in BOUND_WINDOWS:
            raise ValueError(f"bound_window must be one of {BOUND_WINDOWS}, got {self.bound_window!r}")


IntensityFn = Callable[[torch.Tensor], torch.Tensor]  # s [B, L, S] -> lambda [B, L, S, K]
RowsIntensityFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (s [R, L, S], rows [R]) -> [R, L, S, K]
FIRST_PROPOSALS = 16  # the first slice of proposals evaluated; each further slice doubles


def in_chunks(fn: Callable[[torch.Tensor], torch.Tensor], s: torch.Tensor, max_entries: int) -> torch.Tensor:
    """fn(s) for s [B, L, S] -> [B, L, S, ...], evaluated on slices of s along S of at most `max_entries`
    B*L*S entries each (at least one S column) and concatenated: what is alive at once is one slice's."""
    B, L, S = s.shape
    step = max(1, max_entries // max(1, B * L))
    if step >= S:
        return fn(s)
    return torch.cat([fn(s[:, :, i:i + step]) for i in range(0, S, step)], dim=2)


def _total_intensity(fn: IntensityFn, s: torch.Tensor, chunk_elements: int) -> torch.Tensor:
    """sum_c lambda_c at s [B, L, S] -> [B, L, S], evaluated in chunks along S."""
    return in_chunks(lambda x: fn(x).sum(-1), s, chunk_elements)


def proposal_slices(num_exp: int, lazy: bool) -> list[tuple[int, int]]:
    """[lo, hi) slices of the proposal axis in evaluation order: FIRST_PROPOSALS, then doubling (one slice if not lazy)."""
    if not lazy:
        return [(0, num_exp)]
    out, lo, width = [], 0, FIRST_PROPOSALS
    while lo < num_exp:
        out.append((lo, min(num_exp, lo + width)))
        lo, width = lo + width, 2 * width
    return out


def first_acceptance(fn: IntensityFn, proposals: torch.Tensor, threshold: torch.Tensor, cfg: ThinningConfig,
                     rows_fn: RowsIntensityFn | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Index of each draw's first proposal with threshold < sum_c lambda_c, and whether it has one: proposals
    [B, L, P, E], threshold [B, L, N, E] (u * bound) -> ([B, L, N] int64, [B, L, N] bool). Slices of the proposal axis
    (`proposal_slices`) are evaluated until every draw has accepted; with `rows_fn`, a slice only for the sequences
    (rows of B) that still have an undecided draw."""
    B, L, P, E = proposals.shape
    N = threshold.size(2)
    first = torch.zeros(B, L, N, dtype=torch.long, device=proposals.device)
    found = torch.zeros(B, L, N, dtype=torch.bool, device=proposals.device)
    for lo, hi in proposal_slices(E, cfg.lazy_proposals):
        pending = ~found.flatten(1).all(1)  # [B]: sequences with a draw not yet accepted
        if not pending.any():
            break
        rows = pending.nonzero()[:, 0] if rows_fn is not None and not pending.all() else None
        s = proposals[..., lo:hi] if rows is None else proposals[rows, ..., lo:hi]  # [R, L, P, w]
        R, w = s.size(0), hi - lo
        f = fn if rows is None else (lambda x, rows=rows: rows_fn(x, rows))
        total = _total_intensity(f, s.reshape(R, L, P * w), cfg.chunk_elements).reshape(R, L, P, w)
        t = threshold[..., lo:hi] if rows is None else threshold[rows, ..., lo:hi]
        accepted = t < total  # [R, L, N, w]
        hit = accepted.any(-1)  # [R, L, N]
        index = lo + accepted.int().argmax(-1)  # [R, L, N]: the first True of the slice
        if rows is None:
            first = torch.where(hit & ~found, index, first)
            found = found | hit
        else:
            first[rows] = torch.where(hit & ~found[rows], index, first[rows])
            found[rows] = found[rows] | hit
    return first, found


@torch.no_grad()
def draw_next_dtimes(fn: IntensityFn, last_interval: torch.Tensor, cfg: ThinningConfig,
                     generator: torch.Generator | None = None, rows_fn: RowsIntensityFn | None = None) -> torch.Tensor:
    """Thinning draws of the time to the next event after each position: last_interval [B, L] -> [B, L, num_sample].
    `rows_fn(s, rows)`: fn on the sequences `rows` only (optional; lets a slice of proposals skip decided sequences)."""
    B, L = last_interval.shape
    device = last_interval.device
    window = last_interval if cfg.bound_window == "last_interval" else torch.full_like(last_interval, cfg.dtime_max)
    # 1. [B, L]: upper bound from a grid over the window
    grid = window[..., None] * torch.linspace(0.0, 1.0, cfg.num_samples_boundary, device=device)  # [B, L, G]
    bound = _total_intensity(fn, grid, cfg.chunk_elements).max(-1).values * cfg.over_sample_rate
    # 2. [B, L, P, E]: proposal times, a Poisson process of rate `bound`; P = 1 (shared) or num_sample
    P, N, E = (1 if cfg.share_proposals else cfg.num_sample), cfg.num_sample, cfg.num_exp
    exp = torch.empty(B, L, P, E).exponential_(1.0, generator=generator).to(device)
    proposals = torch.cumsum(exp / bound[..., None, None], dim=-1)
    # 3. [B, L, N, E]: accept where u * bound < lambda(s); first accepted proposal per draw (the uniforms are drawn
    # whole before any intensity at a proposal: fn draws no random number, so the stream is EasyTPP's order)
    u = torch.rand(B, L, N, E, generator=generator).to(device)
    first, found = first_acceptance(fn, proposals, u * bound[..., None, None], cfg, rows_fn)
    draws = torch.gather(proposals.expand(B, L, N, E), -1, first[..., None])[..., 0]
    draws = torch.where(found, draws, torch.full_like(draws, cfg.dtime_max))
    return draws.clamp(max=MAX_DTIME)


@torch.no_grad()
def predict_next(model, batch: Batch, cfg: ThinningConfig = ThinningConfig(),
                 generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One-step prediction after every event but the last: (dtime [B, L-1], type [B, L-1]); labels are
    batch.time_delta_seqs[:, 1:], batch.type_seqs[:, 1:], masked by batch.seq_non_pad_mask[:, 1:]."""
    if hasattr(model, "predict_next"):  # a model with its own predictor (EasyTPP's IntensityFree: no intensity)
        return model.predict_next(batch, cfg, generator)
    hidden = model.encode(batch.time_seqs[:, :-1], batch.type_seqs[:, :-1])  # [B, L-1, D]
    last = batch.time_delta_seqs[:, :-1] * batch.seq_non_pad_mask[:, :-1]  # [B, L-1], padding (= K) zeroed

    def fn(s):
        return model.intensities_at(s, hidden)

    def rows_fn(s, rows):  # the intensities of sequences `rows` (a model's hidden holds one row per sequence)
        return model.intensities_at(s, hidden[rows])

    draws = draw_next_dtimes(fn, last, cfg, generator, rows_fn)  # [B, L-1, N]
    lam = fn(draws)  # [B, L-1, N, K]
    probs = (lam / lam.sum(-1, keepdim=True)).mean(-2)  # [B, L-1, K]
    return draws.mean(-1), probs.argmax(-1)
