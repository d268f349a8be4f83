"""Parametric point processes that meet the TPP model protocol, with known answers: the homogeneous Poisson
process and the multivariate exponential Hawkes process of `timerepro.data.standins`
(lambda_c(t) = mu_c + sum_{t_k < t} alpha[c, c_k] beta exp(-beta (t - t_k))). They check the likelihood and
thinning code against closed forms and, given a stand-in's true parameters, give an oracle's metrics.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class PoissonProcess(nn.Module):
    """lambda_c(t) = mu_c, whatever the history."""

    def __init__(self, mu):
        super().__init__()
        self.mu = nn.Parameter(torch.as_tensor(mu, dtype=torch.float32).reshape(-1))
        self.num_event_types = self.pad_token_id = self.mu.numel()

    def encode(self, time_seqs, type_seqs, attention_mask=None):
        return torch.zeros(*time_seqs.shape, 1, device=time_seqs.device)  # [B, L, 1]

    def intensities_at(self, times_since_last, hidden):
        return self.mu.expand(*times_since_last.shape, -1)  # [B, L, S, K]


class ExpHawkesProcess(nn.Module):
    """Multivariate Hawkes process with exponential kernels alpha[c, c'] beta exp(-beta dt).

    hidden[b, j, c] = sum_{k <= j} alpha[c, c_k] beta exp(-beta (t_j - t_k)), the excitation right after event j;
    lambda_c(t_j + s) = mu_c + hidden[b, j, c] exp(-beta s).
    """

    def __init__(self, mu, alpha, beta: float):
        super().__init__()
        self.mu = nn.Parameter(torch.as_tensor(mu, dtype=torch.float32).reshape(-1))
        K = self.mu.numel()
        self.alpha = nn.Parameter(torch.as_tensor(alpha, dtype=torch.float32).reshape(K, K))
        self.beta = float(beta)
        self.num_event_types = self.pad_token_id = K

    def encode(self, time_seqs, type_seqs, attention_mask=None):
        K = self.num_event_types
        real = type_seqs != K  # [B, L]
        dt = time_seqs[:, :, None] - time_seqs[:, None, :]  # [B, L(j), L(k)]
        L = time_seqs.size(1)
        seen = torch.ones(L, L, dtype=torch.bool, device=time_seqs.device).tril()[None] & real[:, None, :]
        decay = torch.where(seen, self.beta * torch.exp(-self.beta * dt.clamp(min=0)), torch.zeros_like(dt))
        # [B, L(k), K]: alpha[:, c_k] for each key event
        a_k = self.alpha.T[type_seqs.clamp(max=K - 1)]
        return decay @ a_k  # [B, L, K]

    def intensities_at(self, times_since_last, hidden):
        return self.mu + hidden[:, :, None, :] * torch.exp(-self.beta * times_since_last)[..., None]

    def log_likelihood_closed_form(self, times: np.ndarray, types: np.ndarray) -> float:
        """EasyTPP's convention: events 1..n-1 scored, the first conditioned on, compensator over (t_0, t_{n-1}]."""
        mu, alpha, beta = self.mu.detach().double().numpy(), self.alpha.detach().double().numpy(), self.beta
        times, types = np.asarray(times, dtype=np.float64), np.asarray(types)
        ll = 0.0
        for i in range(1, len(times)):
            d = times[i] - times[:i]
            ll += np.log(mu[types[i]] + np.sum(alpha[types[i], types[:i]] * beta * np.exp(-beta * d)))
        T = times[-1]
        compensator = mu.sum() * (T - times[0]) + np.sum(alpha[:, types[:-1]].sum(0) * (1 - np.exp(-beta * (T - times[:-1]))))
        return float(ll - compensator)

    def expected_next_dtime(self, excitation: np.ndarray, s_max: float | None = None, n_grid: int = 200001) -> float:
        """E[time to next event] given the excitation vector right after the last event (hidden[b, j]):
        integral of the survival exp(-(sum mu) s - sum(excitation) (1 - exp(-beta s)) / beta) over s >= 0."""
        m, a = float(self.mu.detach().sum()), float(np.sum(excitation))
        s_max = s_max or 40.0 / m
        s = np.linspace(0.0, s_max, n_grid)
        surv = np.exp(-m * s - a * (1 - np.exp(-self.beta * s)) / self.beta)
        return float(np.sum((surv[1:] + surv[:-1]) * np.diff(s)) / 2)
