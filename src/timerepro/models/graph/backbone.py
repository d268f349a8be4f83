"""What every temporal-graph backbone of the link-prediction task shares (TGAT, TGN, CAWN, DyGFormer).

The backbone contract the tasks rely on: `pair_embeddings(src, dst, times) -> (h_src, h_dst)` (B, d),
`set_graph(neighbors, rng)` and `out_dim`. `TemporalBackbone` holds the padded feature tables of a
`CTDGData` (row 0 = padding) as non-persistent buffers (moved with the model, never in checkpoints),
the time encoder `make_encoder(encoder, time_dim, mean, std)` under `time_encoder`, the neighbour
sampling strategy and the graph the model may look at. Attribute names are those of DyGLib's models
where they exist, so state_dict keys are those of the models before this base existed.

`to_device` moves the host arrays a batch needs (neighbour ids, edge ids, time differences) to the
model's device in one copy per dtype, so a batch's retrieval results cross the host-device boundary once.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import torch
from torch import nn

from timerepro.encoders import make_encoder
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.graph.features import FeatureTable

DETERMINISTIC = "recent"  # the one sampling strategy that draws no random numbers


@runtime_checkable
class NodeEmbedder(Protocol):
    """An optional extension of the backbone contract: embeddings of single (node, time) queries.

    `queries_independent` is True when the embedding of a query does not depend on the other queries
    of the call (no random draws shared between them); the task may then embed a batch's 4B
    endpoints in one call and share what repeats (`LinkPredictionModel.score`)."""

    queries_independent: bool

    def embed(self, nodes, times) -> torch.Tensor: ...


class TemporalBackbone(nn.Module):
    """Feature tables, time encoder, sampling strategy and visible graph of a temporal-graph backbone."""

    samplings: tuple[str, ...] = ("recent", "uniform")

    def __init__(self, node_feat: np.ndarray, edge_feat: np.ndarray, *, encoder: str = "cosine", time_dim: int = 100,
                 time_mean: float = 0.0, time_std: float = 1.0, sampling: str = "recent",
                 encoder_options: dict | None = None):
        super().__init__()
        if sampling not in self.samplings:
            raise ValueError(f"unknown neighbour sampling {sampling!r}; known: {self.samplings}")
        self.node_feat, self.edge_feat = FeatureTable(node_feat), FeatureTable(edge_feat)
        # all-zero tables (most DyGLib datasets: UCI, Wikipedia's nodes, ...) contribute exact zeros: left out
        self.node_feat_zero, self.edge_feat_zero = self.node_feat.all_zero, self.edge_feat.all_zero
        self.node_dim, self.edge_dim = self.node_feat.shape[1], self.edge_feat.shape[1]
        self.time_dim, self.sampling = time_dim, sampling
        self.time_mean, self.time_std = float(time_mean), float(time_std)
        # encoder_options: the encoder's named variants (docs/fidelity.md, item 5)
        self.time_encoder = make_encoder(encoder, time_dim, mean=time_mean, std=time_std, **(encoder_options or {}))
        self.neighbors: TemporalNeighbors | None = None
        self.rng = None

    @property
    def out_dim(self) -> int:
        return self.node_dim

    @property
    def device(self) -> torch.device:
        return self.node_feat.device

    def set_graph(self, neighbors: TemporalNeighbors, rng=None) -> None:
        """Interactions the model may look at, and the random stream of a random sampling strategy
        (DyGLib resets it whenever the sampler is set: seed 0 for training, 1 for evaluation)."""
        if self.sampling != DETERMINISTIC and rng is None:
            raise ValueError(f"{self.sampling} neighbour sampling needs a random stream")
        self.neighbors, self.rng = neighbors, rng

    def graph(self) -> TemporalNeighbors:
        if self.neighbors is None:
            raise RuntimeError("call set_graph(neighbors) before computing embeddings")
        return self.neighbors

    def _index(self, ids) -> torch.Tensor:
        """Host ids -> int64 tensor on the model's device."""
        return torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64)).to(self.device)


def to_device(device: torch.device, *arrays) -> tuple[torch.Tensor, ...]:
    """Host arrays -> tensors on `device` (integers as int64, booleans as bool, floats in their own
    precision), with one host-to-device copy per dtype; on the CPU the tensors share the arrays' memory
    where they can."""
    host = []
    for a in arrays:
        a = np.asarray(a)
        dtype = np.bool_ if a.dtype == np.bool_ else np.int64 if a.dtype.kind in "iu" else a.dtype
        host.append(np.ascontiguousarray(a, dtype=dtype))
    if device.type == "cpu":
        return tuple(torch.from_numpy(a) for a in host)
    out: list[torch.Tensor | None] = [None] * len(host)
    for dtype in {a.dtype for a in host}:
        members = [i for i, a in enumerate(host) if a.dtype == dtype]
        # one flat buffer per dtype, one copy, then views of it on the device
        flat = torch.from_numpy(np.concatenate([host[i].ravel() for i in members])).to(device)
        for i, piece in zip(members, torch.split(flat, [host[i].size for i in members])):
            out[i] = piece.view(host[i].shape)
    return tuple(out)
