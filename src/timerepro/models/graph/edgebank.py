"""EdgeBank (Poursafaei et al. 2022) as DyGLib evaluates it (`models/EdgeBank.py`,
`evaluate_models_utils.evaluate_edge_bank_link_prediction`; read, not copied). No parameters, no training.

A candidate edge (u, v) scores 1 if the directed pair is in the memory, else 0. The memory is built
from the history: for validation the training edges, for test the training and validation edges,
plus every edge of the evaluated split before the current batch (the task's `observe` hook).
Four memories (DyGLib's `edge_bank_memory_mode` / `time_window_mode`):

* `unlimited`: every pair seen in the history;
* `time_window_fixed` (tw-ts): pairs seen at times >= the (1 - test_ratio) quantile of the history's times;
* `time_window_repeat` (tw-re): pairs seen in the last W time units, W = sum over pairs seen more than
  once of the mean gap between their consecutive occurrences, divided by the number of distinct pairs;
* `repeat_threshold`: pairs seen at least as often as the mean count of a distinct pair.

Here the history is kept as per-pair counts, first and last times (dense ids over the dataset's
pairs), so a batch costs O(number of pairs) numpy work, not a Python set rebuilt from every edge.
The task turns the 0/1 scores into logits -inf/+inf (sigmoid gives exactly 0/1, DyGLib's probabilities).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

MODES = ("unlimited", "time_window_fixed", "time_window_repeat", "repeat_threshold")


class EdgeBank(nn.Module):
    """The memory of seen pairs; `score(src, dst, times)` -> (B,) logits in {-inf, +inf}.

    src, dst, ts: the dataset's edges (chronological); `bases` maps the state names the task restores
    ("train_end": before validation, "val_end": before test) to boolean masks of the edges that form
    that history. `test_ratio` sets the fixed time window (DyGLib: its `test_ratio`, 0.15)."""

    trainable = False  # the link-prediction task skips training for a backbone without parameters

    def __init__(self, src, dst, ts, bases: dict[str, np.ndarray], *, mode: str = "unlimited",
                 test_ratio: float = 0.15, num_nodes: int | None = None):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"unknown EdgeBank memory {mode!r}; known: {MODES}")
        if not 0 < test_ratio < 1:
            raise ValueError(f"test_ratio must lie in (0, 1), got {test_ratio}")
        self.mode, self.test_ratio = mode, float(test_ratio)
        self.src = np.asarray(src, dtype=np.int64)
        self.dst = np.asarray(dst, dtype=np.int64)
        self.ts = np.asarray(ts, dtype=np.float64)
        self.stride = np.int64(num_nodes if num_nodes is not None else int(max(self.src.max(initial=0), self.dst.max(initial=0))) + 1)
        # dense ids of the dataset's directed pairs: (E,) pair id of every edge
        self.pairs, self.edge_pair = np.unique(self.src * self.stride + self.dst, return_inverse=True)
        self.bases = {name: np.asarray(mask, dtype=bool) for name, mask in bases.items()}
        self.out_dim = 1
        self.reset_state()

    # ---- state (the history)
    def reset_state(self) -> None:
        """An empty history."""
        n = len(self.pairs)
        self.count = np.zeros(n, dtype=np.int64)
        self.first_time = np.full(n, np.inf)
        self.last_time = np.full(n, -np.inf)
        self.history_times: list[np.ndarray] = []
        self._sorted_times: np.ndarray | None = np.zeros(0)

    def _add(self, pair_ids: np.ndarray, times: np.ndarray) -> None:
        np.add.at(self.count, pair_ids, 1)
        np.minimum.at(self.first_time, pair_ids, times)
        np.maximum.at(self.last_time, pair_ids, times)
        self.history_times.append(times)
        self._sorted_times = None

    def restore_state(self, name: str) -> None:
        """The history `name` ("train_end", "val_end"): the edges of its mask."""
        if name not in self.bases:
            raise KeyError(f"EdgeBank has no history {name!r}; known: {sorted(self.bases)}")
        self.reset_state()
        mask = self.bases[name]
        self._add(self.edge_pair[mask], self.ts[mask])

    def backup_state(self, name: str) -> None:
        """Histories are rebuilt from the data by `restore_state`: nothing to keep."""

    def detach_state(self) -> None:
        """No gradient flows through a history of counts. Needed all the same: without it EdgeBank is not a
        `StreamState`, the task treats it as stateless and every pair scores 0 (AP 0.5 everywhere)."""

    def observe(self, src, dst, times, edge_ids) -> None:
        """Add a scored batch of positive edges to the history (DyGLib: the split's edges before the batch)."""
        keys = np.asarray(src, dtype=np.int64) * self.stride + np.asarray(dst, dtype=np.int64)
        self._add(self._pair_ids(keys, strict=True), np.asarray(times, dtype=np.float64))

    def set_graph(self, neighbors, rng=None) -> None:
        """EdgeBank reads no neighbourhoods."""

    # ---- the memory
    def _pair_ids(self, keys: np.ndarray, strict: bool = False) -> np.ndarray:
        """Dense id of each key, -1 for a pair that never occurs in the dataset."""
        pos = np.minimum(np.searchsorted(self.pairs, keys), max(len(self.pairs) - 1, 0))
        found = self.pairs[pos] == keys if len(self.pairs) else np.zeros(len(keys), bool)
        if strict and not found.all():
            raise ValueError("observed edges must be edges of the dataset EdgeBank was built on")
        return np.where(found, pos, -1)

    def _times(self) -> np.ndarray:
        if self._sorted_times is None:
            self._sorted_times = np.sort(np.concatenate(self.history_times)) if self.history_times else np.zeros(0)
        return self._sorted_times

    def in_memory(self) -> np.ndarray:
        """(P,) bool: which of the dataset's pairs the memory holds now."""
        seen = self.count > 0
        if not seen.any():
            return seen
        if self.mode == "unlimited":
            return seen
        if self.mode == "repeat_threshold":
            return seen & (self.count >= self.count[seen].mean())
        end = self.last_time[seen].max()
        if self.mode == "time_window_fixed":
            start = float(np.quantile(self._times(), 1 - self.test_ratio))
        else:  # time_window_repeat
            rep = self.count > 1
            gaps = (self.last_time[rep] - self.first_time[rep]) / (self.count[rep] - 1)  # mean gap per repeated pair
            start = end - gaps.sum() / seen.sum()
        return seen & (self.last_time >= start)

    def score(self, src, dst, times) -> torch.Tensor:
        """(B,) logits: +inf for a pair in memory, -inf otherwise."""
        keys = np.asarray(src, dtype=np.int64) * self.stride + np.asarray(dst, dtype=np.int64)
        ids = self._pair_ids(keys)
        hit = np.zeros(len(keys), dtype=bool)
        known = ids >= 0
        hit[known] = self.in_memory()[ids[known]]
        return torch.from_numpy(np.where(hit, np.inf, -np.inf).astype(np.float32))


def build(config: dict, data, split, train_graph) -> EdgeBank:
    """EdgeBank on the dataset's edges; validation starts from the training edges, test from training +
    validation (DyGLib's train_val_data)."""
    bases = {"train_end": split.train, "val_end": split.train | split.val}
    return EdgeBank(data.src, data.dst, data.ts, bases, mode=config["edgebank_memory"],
                    test_ratio=float(config["edgebank_test_ratio"]), num_nodes=data.node_feat.shape[0])
