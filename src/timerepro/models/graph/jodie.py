"""JODIE (Kumar et al. 2019) as DyGLib's `MemoryModel` writes it (`models/MemoryModel.py`, read, not copied);
the memory and its messages are `message_memory` (shared with TGN and DyRep).

An RNN cell updates the memory (`memory_updater: gru` gives swinit's JODIE-gru); messages
[s_own; s_other; Phi(t - last_own); x_e]; the embedding is the time projection
    h_i(t) = Dropout((1 + w * dt_i) * s_i),   dt_i = (t - last_i - mu_role) / sigma_role,
w = Linear(1, d_mem) (weight and bias), last_i and s_i after committing pending messages, mu/sigma the
mean and std of the time shifts of the node's role (source or destination) over the training edges
(DyGLib's `compute_src_dst_node_time_shifts`: t minus the node's previous time in that role, 0 at first).
docs/dyg_mamba.md ("JODIE and DyRep") lists the decisions.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from timerepro.data.ctdg import CTDGData, LinkSplit
from timerepro.encoders import standardization_stats
from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.models.dropout import Dropout
from timerepro.models.graph.backbone import TemporalBackbone, to_device
from timerepro.models.graph.message_memory import MessageMemory


class JODIE(MessageMemory, TemporalBackbone):
    """JODIE backbone (a `memory.StreamState`): memory per node, time-projection embedding."""

    samplings = ("recent",)  # no neighbours are read: the task's graph is accepted and ignored

    def __init__(self, node_feat: np.ndarray, edge_feat: np.ndarray, *, encoder: str = "cosine", time_dim: int = 100,
                 time_mean: float = 0.0, time_std: float = 1.0, memory_updater: str = "rnn", dropout: float = 0.1,
                 shift_stats: tuple[float, float, float, float] = (0.0, 1.0, 0.0, 1.0),
                 encoder_options: dict | None = None):
        super().__init__(node_feat, edge_feat, encoder=encoder, time_dim=time_dim, time_mean=time_mean,
                         time_std=time_std, encoder_options=encoder_options)
        # DyGLib's creation order (time encoder, memory updater, embedding module): a seed's weights as there
        self._build_memory(self.node_dim, memory_updater)  # DyGLib: memory as wide as the node features
        self.projection = nn.Linear(1, self.memory_dim)  # w of (1 + w dt)
        self.dropout = Dropout(dropout)
        src_mean, src_std, dst_mean, dst_std = (float(x) for x in shift_stats)
        self.shift_stats = (src_mean, src_std, dst_mean, dst_std)
        self._register_memory()

    @property
    def pairs_independent(self) -> bool:
        """A pair's embeddings are memory reads (no neighbours, no random draws): the task may score a batch's
        positives and negatives in one call (`LinkPredictionModel.score`)."""
        return True

    def project(self, memory: torch.Tensor, dt: torch.Tensor) -> torch.Tensor:
        """(B, d_mem) memories, (B,) standardized time shifts -> (B, d_mem) Dropout((1 + w dt) * s)."""
        return self.dropout(memory * (1 + self.projection(dt.unsqueeze(-1))))

    def pair_embeddings(self, src, dst, times) -> tuple[torch.Tensor, torch.Tensor]:
        """Both endpoints of B candidate edges at their times: two (B, d_mem); reads the memory, never changes it.
        Each distinct node's pending message is committed once (the memory does not depend on the query time)."""
        src = np.asarray(src, dtype=np.int64)
        n = len(src)
        nodes, rows = np.unique(np.concatenate([src, np.asarray(dst, dtype=np.int64)]), return_inverse=True)
        ids, rows, t = to_device(self.device, nodes, rows.reshape(-1), np.tile(np.asarray(times, dtype=np.float64), 2))
        # (2B, 2) mean and std of each row's role (sources first); (2B,) shifts in float64, float32 after standardizing
        stats = torch.tensor(self.shift_stats, dtype=torch.float64, device=self.device).view(2, 2).repeat_interleave(n, 0)
        dt = t - self._last_update_of(ids).index_select(0, rows)
        memory = self._memory_of(ids).index_select(0, rows)  # (U, d_mem) -> (2B, d_mem)
        h = self.project(memory, ((dt - stats[:, 0]) / stats[:, 1]).float())  # (2B, d_mem)
        return h[:n], h[n:]


# ------------------------------------------------------------------ builder (params/models.yaml `module:`)

def role_time_shifts(nodes: np.ndarray, times: np.ndarray) -> np.ndarray:
    """(E,) chronological nodes of one role and times -> (E,) t minus the node's previous time in that
    role (0 before its first: the shift is t itself), as DyGLib's compute_src_dst_node_time_shifts."""
    nodes, times = np.asarray(nodes), np.asarray(times, dtype=np.float64)
    order = np.argsort(nodes, kind="stable")  # chronological within each node
    n, t = nodes[order], times[order]
    prev = np.concatenate([[0.0], t[:-1]])
    prev[np.concatenate([[True], n[1:] != n[:-1]])] = 0.0  # a node's first time in the role
    shifts = np.empty_like(t)
    shifts[order] = t - prev
    return shifts


def jodie_shift_stats(data: CTDGData, split: LinkSplit) -> tuple[float, float, float, float]:
    """(src mean, src std, dst mean, dst std) of the role time shifts over the training edges (DyGLib:
    train_data); population std, 1 where it is 0 (the standardization would divide by it)."""
    out = []
    for nodes in (data.src[split.train], data.dst[split.train]):
        shifts = role_time_shifts(nodes, data.ts[split.train])
        std = float(shifts.std()) if len(shifts) else 1.0
        out += [float(shifts.mean()) if len(shifts) else 0.0, std if std > 0 else 1.0]
    return tuple(out)


def build(config: dict, data: CTDGData, split: LinkSplit, train_graph: TemporalNeighbors) -> JODIE:
    """JODIE: the time-projection statistics of the training edges; the message encoder standardized
    (linear encoders) by the pooled shifts of both roles (what it reads: t - last update). `config`: an
    effective config (dataset defaults applied)."""
    stats = jodie_shift_stats(data, split)
    src, dst, ts = data.src[split.train], data.dst[split.train], data.ts[split.train]
    shifts = np.concatenate([role_time_shifts(src, ts), role_time_shifts(dst, ts)])
    mean, std = standardization_stats(shifts[None, :])  # pooled
    return JODIE(data.node_feat, data.edge_feat, encoder=config["encoder"], time_dim=int(config["d_T"]),
                 time_mean=mean, time_std=std, memory_updater=config["memory_updater"],
                 dropout=float(config["dropout"]), shift_stats=stats, encoder_options=config.get("encoder_options"))
