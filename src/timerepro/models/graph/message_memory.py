"""Per-node memory fed by messages, shared by the memory family (TGN, JODIE, DyRep): DyGLib's
`models/MemoryModel.py` (MemoryBank, MessageAggregator "last", RNN/GRU MemoryUpdater; read, not copied).

Per node a memory s_i (width d_mem), its last update time and one pending message. For a batch of
positive edges (u, v, e, t), after the batch has been scored (`observe`):

  1. every endpoint with a pending message commits it: s_i <- cell(m_i, s_i), last_i <- t(m_i);
  2. each endpoint gets a new pending message, identity message function on the committed state:
         m_u = [s_u; o_v; Phi(t - last_u); x_e],   m_v = [s_v; o_u; Phi(t - last_v); x_e]
     where o is the other endpoint's memory (TGN, JODIE) or its embedding (DyRep: `_message_other`);
     only the last message per node is kept (DyGLib's list order: source roles, then destination roles).

An embedding reads the memory as it would be after committing the pending messages (`_memory_of`: the
cell applied on the fly, with gradient, the bank untouched), so a batch never sees its own edges.
The live state is persistent buffers (`BufferedState`), so it is in every checkpoint.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from timerepro.models.graph.backbone import to_device
from timerepro.models.graph.memory import BufferedState

STATE = ("memory", "last_update", "pending_message", "pending_time", "has_pending")
CELLS = {"gru": nn.GRUCell, "rnn": nn.RNNCell}  # DyGLib: GRUMemoryUpdater (TGN), RNNMemoryUpdater (JODIE, DyRep)


class MessageMemory(BufferedState):
    """Memory, last update and one pending message per node, mixed into a `TemporalBackbone` (listed
    before it). A subclass calls `_build_memory` where its modules are created (the cell's place in the
    creation order fixes a seed's weights) and `_register_memory` once the module exists."""

    state_names = STATE

    def _build_memory(self, memory_dim: int, cell: str = "gru") -> None:
        if cell not in CELLS:
            raise ValueError(f"unknown memory_updater {cell!r}; known: {sorted(CELLS)}")
        self.memory_dim = memory_dim
        # identity messages: [s_own; o_other; Phi(dt); x_e]
        self.message_dim = 2 * memory_dim + self.time_dim + self.edge_dim
        self.memory_updater = CELLS[cell](self.message_dim, memory_dim)

    def _register_memory(self) -> None:
        n = self.node_feat.shape[0]
        # live state, (N,) or (N, d); times in float64 (exact differences, docs/graphs.md)
        self.register_buffer("memory", torch.zeros(n, self.memory_dim))
        self.register_buffer("last_update", torch.zeros(n, dtype=torch.float64))
        self.register_buffer("pending_message", torch.zeros(n, self.message_dim))
        self.register_buffer("pending_time", torch.zeros(n, dtype=torch.float64))
        self.register_buffer("has_pending", torch.zeros(n, dtype=torch.bool))

    # ------------------------------------------------------------------ the stream state

    @torch.no_grad()
    def observe(self, src, dst, times, edge_ids) -> None:
        """Feed a batch of positive edges to the memory, after the batch has been scored: commit the
        endpoints' pending messages, then store their new messages (DyGLib's update + store)."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        times = np.asarray(times, dtype=np.float64)
        # 2B messages, source roles first (DyGLib's list order); the last one per owner is kept:
        # the first occurrence in the reversed list
        owner, other = np.concatenate([src, dst]), np.concatenate([dst, src])
        t2_host, e2 = np.concatenate([times, times]), np.concatenate([edge_ids, edge_ids])
        _, first_rev = np.unique(owner[::-1], return_index=True)
        last = len(owner) - 1 - first_rev  # (U,) positions of each owner's last message
        nodes, own, oth, e2, last, keep, t2, keep_time = to_device(self.device, np.unique(owner), owner, other, e2, last,
                                                                   owner[last], t2_host, t2_host[last])
        # 1. commit the pending messages of the batch's endpoints (rows without one keep their memory)
        pending = self.has_pending[nodes]  # (U,)
        committed = self.memory_updater(self.pending_message[nodes], self.memory[nodes])  # (U, d_mem)
        self.memory[nodes] = torch.where(pending[:, None], committed, self.memory[nodes])
        self.last_update[nodes] = torch.where(pending, self.pending_time[nodes], self.last_update[nodes])
        self.has_pending[nodes] = False
        # 2. new messages on the committed state
        dt = (t2 - self.last_update[own]).float()  # (2B,)
        # (2B, d_mem) ++ (2B, d_mem) ++ (2B, d_T) ++ (2B, d_edge) -> (2B, message_dim)
        messages = torch.cat([self.memory[own], self._message_other(oth, other, t2_host), self.time_encoder(dt),
                              self.edge_feat[e2]], dim=-1)
        self.pending_message[keep] = messages[last]
        self.pending_time[keep] = keep_time
        self.has_pending[keep] = True

    def _message_other(self, ids: torch.Tensor, nodes: np.ndarray, times: np.ndarray) -> torch.Tensor:
        """(2B,) other endpoints of the messages (device ids, host ids, host times) -> (2B, d_mem): their
        committed memory (TGN, JODIE); DyRep reads an embedding instead."""
        return self.memory[ids]

    def detach_state(self) -> None:
        """Nothing to do: `observe` writes the state without gradient."""

    # ------------------------------------------------------------------ reading the memory

    def current_memory(self, nodes) -> torch.Tensor:
        """(B,) ids -> (B, d_mem): the memory after committing pending messages, without storing it
        (DyGLib's get_updated_memories); differentiable through the cell."""
        return self._memory_of(self._index(np.asarray(nodes, dtype=np.int64)))

    def _memory_of(self, ids: torch.Tensor) -> torch.Tensor:
        mem = self.memory[ids]  # (B, d_mem)
        updated = self.memory_updater(self.pending_message[ids], mem)  # (B, d_mem), out of place: the bank is untouched
        return torch.where(self.has_pending[ids][:, None], updated, mem)

    def _last_update_of(self, ids: torch.Tensor) -> torch.Tensor:
        """(B,) -> (B,) float64: the last update time after committing pending messages."""
        return torch.where(self.has_pending[ids], self.pending_time[ids], self.last_update[ids])

    def _base(self, nodes: np.ndarray, ids: torch.Tensor) -> torch.Tensor:
        # (U, d_node): memory + raw features (DyGLib's graph-attention layer-0 input, and what the layers merge with)
        return self._memory_of(ids) + self.node_feat[ids]
