"""The undecimated Haar-type graph framelet transform and SWINIT's framelet convolution (UFGConv).

No maintained package provides the undecimated framelet system of Zheng et al. (2021, "How framelets
enhance graph neural networks"), which SWINIT uses; it is written here on torch.sparse and numpy's
Chebyshev tools, following the construction of the authors' `ufg_global.py` (read, not copied):

* filters: Haar type, low-pass a(x) = cos(x/2) and high-pass b(x) = sin(x/2) on [0, pi]
  (a^2 + b^2 = 1: the partition of unity that makes the frame tight);
* scales: with the normalized Laplacian L (spectrum in [0, lambda_max]), level l = 1..H filters at
  x_l = 2^(l-H) pi / lambda_max * L (the authors' s^(-J+l-1) with J = log2(lambda_max / pi) + H - 1,
  dilation s = 2), so the finest level H spans [0, pi];
* decomposition (a tree, coarsest level first): low_0 = X; band (j, l) = p_j(x_l) low_(l-1);
  low_l = band (0, l). The frame keeps low_H and the high-pass bands (1, l) of every level: 1 + H bands;
* reconstruction: X = sum over kept bands of W band, with W = p_0(x_1) ... p_0(x_(l-1)) p_j(x_l)
  (polynomials of one L commute; evaluated by Horner's scheme over the levels), which gives X back exactly
  with the exact filters; W = W^T for a symmetric L, and for the authors' directed Laplacian (not symmetric)
  this is what their code applies (`spmm` with the same operator d_k in decomposition and reconstruction);
* p_j: the Chebyshev series of the filter truncated at degree m (the authors: 2 terms, degree 1),
  evaluated on the sparse operator by the three-term recurrence, never forming a dense matrix.

`UFGConv` (swinit 5.2): theta * X = sum_k W_k^T diag(theta_k) W_k (X W), one diagonal filter per band,
whose entries are rows of a global store Theta indexed by node id (Algorithm 1's inheritance).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
from numpy.polynomial import chebyshev
from torch import nn

Filter = Callable[[np.ndarray], np.ndarray]
HAAR: tuple[Filter, Filter] = (lambda x: np.cos(x / 2), lambda x: np.sin(x / 2))
DOMAIN = math.pi  # the filters live on [0, pi]
SERIES_DEGREE = 63  # degree of the interpolant whose leading coefficients are the Chebyshev series


def chebyshev_coefficients(f: Filter, degree: int) -> np.ndarray:
    """The Chebyshev series of f on [0, pi] truncated at `degree`: c_0..c_m with f(x) ~ sum c_k T_k(2x/pi - 1).
    The series coefficients are read off a high-degree interpolant at Chebyshev points (numpy), i.e. the
    projection the authors' `ChebyshevApprox` integrates by the trapezoid rule."""
    g = lambda y: f((y + 1) * DOMAIN / 2)  # [-1, 1] -> [0, pi]
    return chebyshev.chebinterpolate(g, max(SERIES_DEGREE, degree))[: degree + 1]


def normalized_laplacian(edges: np.ndarray, weights: np.ndarray, n: int) -> torch.Tensor:
    """L = I - D^(-1/2) A D^(-1/2) of the undirected weighted graph `edges` (2, E) (each edge listed once,
    symmetrized here), as a coalesced sparse (n, n) float32 tensor; an isolated node has L_ii = 1."""
    edges = np.asarray(edges, dtype=np.int64).reshape(2, -1)
    w = np.asarray(weights, dtype=np.float64)
    row, col = np.concatenate([edges[0], edges[1]]), np.concatenate([edges[1], edges[0]])
    w2 = np.concatenate([w, w])
    deg = np.bincount(row, weights=w2, minlength=n)
    inv = np.where(deg > 0, 1.0 / np.sqrt(np.where(deg > 0, deg, 1.0)), 0.0)
    vals = np.concatenate([np.ones(n), -w2 * inv[row] * inv[col]])
    idx = np.stack([np.concatenate([np.arange(n), row]), np.concatenate([np.arange(n), col])])
    return torch.sparse_coo_tensor(torch.from_numpy(idx), torch.from_numpy(vals).float(), (n, n),
                                   check_invariants=False).coalesce()


def directed_laplacian(edges: np.ndarray, weights: np.ndarray, n: int) -> torch.Tensor:
    """PyG's `get_laplacian(edge_index, normalization='sym')` on the edges as listed, as the authors call it
    (`ufg_global.py` get_d_list): self loops dropped, deg_i = sum of the weights of the edges whose source (row)
    is i, L = I - D^(-1/2) A D^(-1/2) with A[row, col] = weight (not symmetrised; repeated edges add up), a
    degree-0 node's edges weighted 0 (PyG sets inf to 0); coalesced sparse (n, n) float32."""
    edges = np.asarray(edges, dtype=np.int64).reshape(2, -1)
    keep = edges[0] != edges[1]
    row, col = edges[0][keep], edges[1][keep]
    w = np.asarray(weights, dtype=np.float64)[keep]
    deg = np.bincount(row, weights=w, minlength=n)
    inv = np.where(deg > 0, 1.0 / np.sqrt(np.where(deg > 0, deg, 1.0)), 0.0)
    vals = np.concatenate([np.ones(n), -w * inv[row] * inv[col]])
    idx = np.stack([np.concatenate([np.arange(n), row]), np.concatenate([np.arange(n), col])])
    return torch.sparse_coo_tensor(torch.from_numpy(idx), torch.from_numpy(vals).float(), (n, n),
                                   check_invariants=False).coalesce()


def graph_laplacian(edges: np.ndarray, weights: np.ndarray, n: int, symmetric: bool) -> torch.Tensor:
    """The symmetric normalized Laplacian of undirected edges, or PyG's of directed ones (`directed_laplacian`)."""
    return (normalized_laplacian if symmetric else directed_laplacian)(edges, weights, n)


class Framelet:
    """The undecimated framelet system of one graph (its sparse normalized Laplacian)."""

    def __init__(self, laplacian: torch.Tensor, *, levels: int = 2, degree: int = 1, lambda_max: float = 4.0,
                 dilation: float = 2.0, filters: tuple[Filter, ...] = HAAR):
        if levels < 1 or degree < 1:
            raise ValueError("levels and degree must be >= 1")
        self.laplacian, self.levels, self.degree = laplacian, levels, degree
        self.coeffs = [chebyshev_coefficients(f, degree).tolist() for f in filters]  # python floats: any dtype
        # x_l = scale_l * L, l = 1..H (index 0 = level 1, the coarsest)
        self.scales = [dilation ** (level - levels) * DOMAIN / lambda_max for level in range(1, levels + 1)]

    @property
    def n_bands(self) -> int:
        return 1 + (len(self.coeffs) - 1) * self.levels

    def basis(self, level: int, x: torch.Tensor) -> list[torch.Tensor]:
        """T_0(y) x .. T_m(y) x with y = (2 / pi) x_level - I, by the three-term recurrence (m sparse products)."""
        alpha = 2.0 * self.scales[level - 1] / DOMAIN
        y = lambda z: alpha * torch.sparse.mm(self.laplacian, z) - z  # (n, F)
        out = [x, y(x)]
        for _ in range(2, self.degree + 1):
            out.append(2 * y(out[-1]) - out[-2])
        return out

    def apply(self, j: int, level: int, x: torch.Tensor) -> torch.Tensor:
        """p_j(x_level) x for level 1..H."""
        return self._combine(j, self.basis(level, x))

    def _combine(self, j: int, basis: list[torch.Tensor]) -> torch.Tensor:
        c = self.coeffs[j]
        out = c[0] * basis[0]
        for k in range(1, len(basis)):
            out = out + c[k] * basis[k]
        return out

    def decompose(self, x: torch.Tensor) -> list[torch.Tensor]:
        """x (n, F) -> the kept bands, each (n, F): [low at level H, high-pass j=1.. at level 1, ..., at level H].
        One Chebyshev basis per level serves every filter."""
        low, highs = x, []
        for level in range(1, self.levels + 1):
            basis = self.basis(level, low)
            highs += [self._combine(j, basis) for j in range(1, len(self.coeffs))]
            low = self._combine(0, basis)
        return [low] + highs

    def reconstruct(self, bands: list[torch.Tensor]) -> torch.Tensor:
        """sum over kept bands of W band (the adjoint of `decompose` when L is symmetric), (n, F), by Horner's
        scheme from the finest level down: z_H = p_0(x_H) low + sum_j p_j(x_H) high_(j,H); z_l = p_0(x_l) z_(l+1) +
        sum_j p_j(x_l) high_(j,l); the result is z_1. Per level one Chebyshev basis of the stacked inputs."""
        r, width = len(self.coeffs) - 1, bands[0].shape[1]
        z = bands[0]
        for level in range(self.levels, 0, -1):
            stacked = torch.cat([z] + bands[1 + (level - 1) * r: 1 + level * r], dim=1)  # (n, (1 + r) F)
            basis = self.basis(level, stacked)
            z = sum(self._combine(j, [b[:, j * width:(j + 1) * width] for b in basis]) for j in range(r + 1))
        return z


def exact_operators(laplacian_dense: torch.Tensor, *, levels: int = 2, lambda_max: float = 4.0,
                    dilation: float = 2.0, filters: tuple[Filter, ...] = HAAR) -> list[torch.Tensor]:
    """The kept framelet operators W (n, n) computed from the eigendecomposition of a dense symmetric L with
    the exact filters, in the band order of `Framelet.decompose`: the definition the transform is tested on."""
    lam, u = torch.linalg.eigh(laplacian_dense.double())
    scales = [dilation ** (level - levels) * DOMAIN / lambda_max for level in range(1, levels + 1)]
    g = lambda f, s: torch.from_numpy(f((s * lam).numpy()))  # (n,) filter values on the spectrum
    low, highs = torch.ones_like(lam), []
    for s in scales:
        highs += [g(f, s) * low for f in filters[1:]]
        low = g(filters[0], s) * low
    return [u @ torch.diag(d) @ u.T for d in [low] + highs]


class UFGConv(nn.Module):
    """One framelet convolution: X W, decomposed, each band scaled per node by its row of the global store
    Theta (n_bands, num_nodes), reconstructed. Theta is a parameter of the module: batch i reads the entries
    of its nodes as the previous batch's optimizer step left them, and its own step writes them back."""

    def __init__(self, in_dim: int, out_dim: int, num_nodes: int, n_bands: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_dim, out_dim))
        self.theta = nn.Parameter(torch.empty(n_bands, num_nodes))
        nn.init.xavier_uniform_(self.weight)
        nn.init.uniform_(self.theta, 0.9, 1.1)  # authors' initialisation

    def theta_for(self, node_ids: torch.Tensor) -> torch.Tensor:
        """The filter entries of the batch graph's nodes, read from the global store: (n_bands, n)."""
        return self.theta[:, node_ids]

    def forward(self, x: torch.Tensor, framelet: Framelet, node_ids: torch.Tensor) -> torch.Tensor:
        """x (n, in_dim), node_ids (n,) global ids of the graph's nodes -> (n, out_dim)."""
        theta = self.theta_for(node_ids)  # (n_bands, n)
        bands = framelet.decompose(x @ self.weight)  # n_bands x (n, out_dim)
        return framelet.reconstruct([b * theta[k].unsqueeze(-1) for k, b in enumerate(bands)])
