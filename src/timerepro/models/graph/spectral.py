"""SWINIT's spectral message encoder (swinit section 5): a randomized truncated SVD of the event-feature
matrix X (E x d) with power iterations, and the rank rule "the smallest rank between 50 and 100 whose
spectral-norm error is below 0.1".

* `randomized_svd`: torch.svd_lowrank (Halko, Martinsson, Tropp: Q = orth(X (X^T X)^q Omega), the
  paper's power scheme), seeded, truncated to `rank` after `oversample` extra columns (fbpca's l = k + 2,
  which the authors' `findMode` calls);
* `spectral_norm_error`: ||X - U S V^T||_2 / ||X||_2, exactly, from the d x d Gram matrix of the residual
  accumulated in chunks (the authors divide X by its largest singular value before fbpca's `diffsnorm`,
  so their 0.1 is relative to sigma_1);
* `fit_projection`: the rank rule over the candidate ranks, smallest first, and the right singular vectors
  V (d x r) of the chosen rank: the encoder maps an event's features x to x V. The errors of all candidate
  ranks come from one randomized SVD of the largest candidate rank, truncated (`truncation_errors`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

RANKS = tuple(range(50, 101))  # swinit section 6.1: "the smallest number between 50 and 100"
TOLERANCE = 0.1


@dataclass
class SpectralFit:
    """The chosen rank, its relative spectral-norm error, the errors of every rank tried, and V (d, rank)."""

    rank: int
    error: float
    projection: torch.Tensor
    errors: dict[int, float] = field(default_factory=dict)


def randomized_svd(x: torch.Tensor, rank: int, *, power_iterations: int = 2, oversample: int = 2,
                   seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rank-`rank` randomized SVD of x (m, n): U (m, rank), S (rank,), V (n, rank) with x ~ U diag(S) V^T.
    The random test matrix comes from a generator seeded with `seed` (the caller's RNG is untouched)."""
    q = min(rank + oversample, *x.shape)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        u, s, v = torch.svd_lowrank(x, q=q, niter=power_iterations)
    return u[:, :rank], s[:rank], v[:, :rank]


def _gram(x: torch.Tensor, chunk: int) -> torch.Tensor:
    """X^T X in float64, accumulated over row chunks: (n, n)."""
    g = torch.zeros(x.shape[1], x.shape[1], dtype=torch.float64)
    for i in range(0, x.shape[0], chunk):
        c = x[i:i + chunk].double()
        g += c.T @ c
    return g


def spectral_norm(x: torch.Tensor, chunk: int = 1 << 16) -> float:
    """||x||_2, the largest singular value, from the eigenvalues of the Gram matrix."""
    return float(torch.linalg.eigvalsh(_gram(x, chunk))[-1].clamp_min(0).sqrt())


def spectral_norm_error(x: torch.Tensor, u: torch.Tensor, s: torch.Tensor, v: torch.Tensor, *,
                        norm: float | None = None, chunk: int = 1 << 16) -> float:
    """||x - U diag(S) V^T||_2 / ||x||_2 (0 for a zero matrix); the residual is never held whole."""
    norm = spectral_norm(x, chunk) if norm is None else norm
    if norm == 0:
        return 0.0
    g = torch.zeros(x.shape[1], x.shape[1], dtype=torch.float64)
    us, vt = (u * s).double(), v.double().T  # (m, r), (r, n)
    for i in range(0, x.shape[0], chunk):
        r = x[i:i + chunk].double() - us[i:i + chunk] @ vt  # (c, n) residual rows
        g += r.T @ r
    return float(torch.linalg.eigvalsh(g)[-1].clamp_min(0).sqrt()) / norm


def truncation_errors(x: torch.Tensor, u: torch.Tensor, s: torch.Tensor, v: torch.Tensor, ranks, *,
                      norm: float | None = None, chunk: int = 1 << 16) -> dict[int, float]:
    """{r: ||x - U_r diag(S_r) V_r^T||_2 / ||x||_2} for every r of `ranks` (<= len(S)), from two passes over x:
    with G = x^T x and M = U^T x, the residual's Gram matrix is G - V_r S_r M_r - M_r^T S_r V_r^T + V_r S_r^2 V_r^T
    (U orthonormal), a d x d matrix per rank."""
    norm = spectral_norm(x, chunk) if norm is None else norm
    if norm == 0:
        return {int(r): 0.0 for r in ranks}
    g = _gram(x, chunk)  # (d, d)
    m = torch.zeros(u.shape[1], x.shape[1], dtype=torch.float64)  # (q, d) = U^T x
    for i in range(0, x.shape[0], chunk):
        m += u[i:i + chunk].double().T @ x[i:i + chunk].double()
    s64, v64 = s.double(), v.double()
    out = {}
    for r in ranks:
        vs = v64[:, :r] * s64[:r]  # (d, r) = V_r S_r
        cross = vs @ m[:r]  # (d, d)
        resid = g - cross - cross.T + vs @ vs.T
        out[int(r)] = float(torch.linalg.eigvalsh(resid)[-1].clamp_min(0).sqrt()) / norm
    return out


def fit_projection(x, ranks=RANKS, tol: float = TOLERANCE, *, power_iterations: int = 2, oversample: int = 2,
                   seed: int = 0) -> SpectralFit:
    """The rank rule: the smallest rank of `ranks` whose truncated SVD has relative spectral-norm error below
    `tol` (the largest rank when none does), and its V (d, rank). One randomized SVD of the largest admissible
    rank serves every candidate: its leading r triplets are the rank-r truncation, whose error is computed
    exactly (`truncation_errors`). Ranks above min(x.shape) are not admissible; when none is (fewer features
    than the smallest rank), the full rank min(x.shape) is used, whose error is 0 up to rounding (~1e-3)."""
    # float32 as the model reads features (Reddit's training matrix: 325 MB); the errors accumulate in float64 and
    # are exact to ~1e-3 (the Gram form cancels below that), far finer than the 0.1 the rule compares with
    x = torch.as_tensor(np.asarray(x), dtype=torch.float32)
    limit = min(x.shape)
    admissible = [r for r in sorted(ranks) if r <= limit] or [limit]
    u, s, v = randomized_svd(x, admissible[-1], power_iterations=power_iterations, oversample=oversample, seed=seed)
    errors = truncation_errors(x, u, s, v, admissible)
    rank = next((r for r in admissible if errors[r] < tol), admissible[-1])
    return SpectralFit(rank=rank, error=errors[rank], projection=v[:, :rank].contiguous(), errors=errors)
