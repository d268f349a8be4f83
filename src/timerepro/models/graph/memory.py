"""The state of a backbone that evolves with the edge stream (memory models), as a typed protocol.

DyGLib drives its memory bank from the training script (`__init_memory_bank__`, `detach_memory_bank`,
`backup_memory_bank`, `reload_memory_bank`); PyG's `TGNMemory` names the same operations
`reset_state`, `update_state`, `detach`. Here a backbone with such a state implements `StreamState`,
and the tasks call it explicitly through `stream_state(backbone)`, which gives `NO_STATE` (every call
a no-op) for a backbone without one. The calls, in the order the link-prediction task makes them:

* `reset_state()`: the state of an empty history; at the start of every training epoch (DyGLib), and
  before a frozen backbone embeds a node-classification stream;
* `observe(src, dst, times, edge_ids)`: after a batch of positive edges has been scored, so a batch
  never sees its own edges. Training: after `backward`, before the optimizer step (the parameters
  that scored the batch write the state); evaluation: after the batch's negatives are scored too.
  `observe` writes the state without gradient; what an embedding needs from the pending updates it
  computes, with gradient, when it is asked (TGN's `current_memory`, DyGLib's `get_updated_memories`);
* `detach_state()`: after each optimizer step (DyGLib's `detach_memory_bank`), so that no gradient
  reaches back past the batch; a no-op when `observe` keeps no autograd graph (TGN here);
* `backup_state(name)` / `restore_state(name)`: named copies kept in the module's `state_dict` (hence
  in checkpoints and in `fit`'s best state): "train_end" after each training epoch, "val_end" after
  model selection; validation parts start from "train_end", test parts from "val_end".

`pair_embeddings` must never change the state.

The memory family (TGN, JODIE, DyRep) shares `message_memory.MessageMemory` (a `BufferedState`: memory,
last update and one pending message per node, `observe`); SWINIT subclasses `BufferedState` itself. A
subclass registers each part of the live state as a persistent buffer, lists the names in `state_names`,
and writes `observe` (DyRep's messages, which read an embedding of the other endpoint, recompute it there
without gradient, with the parameters that scored the batch).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch


@runtime_checkable
class StreamState(Protocol):
    """What the tasks call on a backbone whose state evolves with the edge stream."""

    def reset_state(self) -> None: ...

    def observe(self, src, dst, times, edge_ids) -> None: ...

    def detach_state(self) -> None: ...

    def backup_state(self, name: str) -> None: ...

    def restore_state(self, name: str) -> None: ...


class _NoState:
    """The state of a backbone without one: every call does nothing."""

    def reset_state(self) -> None:
        pass

    def observe(self, src, dst, times, edge_ids) -> None:
        pass

    def detach_state(self) -> None:
        pass

    def backup_state(self, name: str) -> None:
        pass

    def restore_state(self, name: str) -> None:
        pass


NO_STATE = _NoState()


def stream_state(backbone) -> StreamState:
    """The backbone itself when it implements `StreamState`, else `NO_STATE`."""
    return backbone if isinstance(backbone, StreamState) else NO_STATE


class BufferedState:
    """`StreamState` over persistent buffers named in `state_names`, mixed into an `nn.Module` backbone
    (listed before it: `class TGN(BufferedState, NeighborAttentionBackbone)`): reset to zeros, named
    copies kept as the module's extra state (so in `state_dict()`, under the key `_extra_state`).
    Subclasses write `observe`; `detach_state` detaches every buffer (a no-op for buffers written
    without gradient)."""

    state_names: tuple[str, ...] = ()

    @property
    def saved_states(self) -> dict[str, dict[str, torch.Tensor]]:
        return self.__dict__.setdefault("_saved_states", {})

    def reset_state(self) -> None:
        for name in self.state_names:
            getattr(self, name).zero_()

    def observe(self, src, dst, times, edge_ids) -> None:
        raise NotImplementedError

    def detach_state(self) -> None:
        for name in self.state_names:
            setattr(self, name, getattr(self, name).detach())

    def backup_state(self, name: str) -> None:
        """Keep a copy of the live state under `name` (saved with the module's state_dict)."""
        self.saved_states[name] = {k: getattr(self, k).detach().clone() for k in self.state_names}

    def restore_state(self, name: str) -> None:
        """Make the copy saved under `name` the live state (it stays saved)."""
        for k, v in self.saved_states[name].items():
            getattr(self, k).copy_(v)

    def get_extra_state(self) -> dict:
        return {"saved_states": {n: {k: v.clone() for k, v in s.items()} for n, s in self.saved_states.items()}}

    def set_extra_state(self, state: dict) -> None:
        self.__dict__["_saved_states"] = {n: {k: v.clone() for k, v in s.items()}
                                          for n, s in state["saved_states"].items()}
