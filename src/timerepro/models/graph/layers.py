"""Layers every graph model's link prediction shares: DyGLib's MergeLayer and the link predictor on top of
it. A module of its own, so that a run's code fingerprint counts them without counting any one model."""

from __future__ import annotations

import torch
from torch import nn


class MergeLayer(nn.Module):
    """[a; b] -> W_1 ReLU(W_0 [a; b] + b_0) + b_1 (DyGLib's MergeLayer; linear_time's merge equation)."""

    def __init__(self, dim_a: int, dim_b: int, hidden: int, out: int):
        super().__init__()
        self.fc0 = nn.Linear(dim_a + dim_b, hidden)
        self.fc1 = nn.Linear(hidden, out)

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        # (..., dim_a) ++ (..., dim_b) -> (..., dim_a + dim_b) -> (..., out)
        return self.fc1(torch.relu(self.fc0(torch.cat([a, b], dim=-1))))


class LinkPredictor(nn.Module):
    """Score of a pair from its endpoint embeddings: MergeLayer(d, d, d, 1) on [h_i; h_j] (DyGLib)."""

    def __init__(self, dim: int):
        super().__init__()
        self.merge = MergeLayer(dim, dim, dim, 1)

    def forward(self, h_src: torch.Tensor, h_dst: torch.Tensor) -> torch.Tensor:
        """(B, d), (B, d) -> (B,) logits."""
        return self.merge(h_src, h_dst).squeeze(-1)
