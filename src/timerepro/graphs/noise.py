"""Noisy neighbours for dyg_mamba's robustness study (Figures 8 and 9; docs/dyg_mamba.md A16, M08).

`NoisyNeighbors(graph, ratio, seed, mode)` answers every neighbour query of `TemporalNeighbors` with noise:

* `mode="replace"` (the default; the authors' code, Clearloveyuan/DyG-Mamba `utils/utils.py` find_neighbors_before,
  lines 155-171): of the n interactions of a node strictly before the query time (its whole history, before
  any cut to a window), int(ratio * n) at random positions are replaced by a node id drawn from 1..N, an edge id
  from 1..E-1 and an integer time from 1..T-1 (N, E, T: the largest node id, edge id and time of the graph: the
  time may lie after the query's); the row is re-sorted by time, and the caller's window then keeps the most
  recent entries. The count of a node's history is unchanged. For `uniform` and `time_interval_aware` queries
  the sampled rows are perturbed the same way (DyGLib perturbs the history before sampling: the expected share
  of noise in a sample is the same).
* `mode="insert"` (the project's former reading of section 5.2): a query whose retrieved row holds n real
  interactions gets m = round(ratio * n) noise interactions, each with a node id drawn uniformly from the graph's
  nodes, a time drawn uniformly between the row's oldest retrieved time and the query time and the edge id
  (features) of an edge drawn uniformly among the edges strictly before the query time; the row is re-sorted and
  cut back to the requested width, keeping the most recent entries. Nothing at or after the query time.
"""

from __future__ import annotations

import numpy as np

from timerepro.graphs.neighbors import History, Neighborhood, TemporalNeighbors


MODES = ("replace", "insert")


class NoisyNeighbors:
    """A `TemporalNeighbors` whose answers carry noise (see the module docstring)."""

    def __init__(self, graph: TemporalNeighbors, ratio: float, seed: int = 0, mode: str = "replace"):
        if not 0 <= ratio <= 1:
            raise ValueError(f"noise ratio must lie in [0, 1], got {ratio}")
        if mode not in MODES:
            raise ValueError(f"unknown noise mode {mode!r}; known: {MODES}")
        self.graph, self.ratio, self.mode = graph, float(ratio), mode
        self.rng = np.random.default_rng(seed)
        # every edge once, by time: (time, edge id) pairs to draw "an edge before t" from
        order = np.argsort(graph.times, kind="stable")
        times, eids = graph.times[order], graph.edge_ids[order]
        _, first = np.unique(eids, return_index=True)
        keep = np.sort(first)
        self._edge_times, self._edge_ids = times[keep], eids[keep]

    def __getattr__(self, name):  # num_nodes, unique_times, ... of the real graph
        return getattr(self.graph, name)

    def _noise_count(self, n_real: np.ndarray) -> np.ndarray:
        return np.rint(self.ratio * n_real).astype(np.int64)

    def count_before(self, nodes, times) -> np.ndarray:
        n = self.graph.count_before(nodes, times)
        return n if self.mode == "replace" else n + self._noise_count(n)

    def _replace(self, ids, eids, ts, valid):
        """Right- or left-padded rows (B, W) with `valid` real entries -> the same entries with int(ratio * n) of
        each row replaced and the row re-sorted by time, right-padded (utils.py:155-171). Returns ids, edge ids,
        times (B, W) and the lengths (B,)."""
        batch, width = ids.shape
        n = valid.sum(axis=1)
        m = np.floor(self.ratio * n + 1e-9).astype(np.int64)  # int(robust_rate * num_neighbors)
        # a random permutation per row over its real entries: the m smallest random keys are replaced
        keys = np.where(valid, self.rng.random((batch, width)), np.inf)
        rank = np.argsort(np.argsort(keys, axis=1, kind="stable"), axis=1, kind="stable")
        hit = valid & (rank < m[:, None])  # (B, W)
        max_time = int(np.max(self.graph.times)) if len(self.graph.times) else 1
        max_edge = int(np.max(self.graph.edge_ids)) if len(self.graph.edge_ids) else 1
        ids = np.where(hit, self.rng.integers(1, max(self.graph.num_nodes, 2), size=(batch, width)), ids)
        eids = np.where(hit, self.rng.integers(1, max(max_edge, 2), size=(batch, width)), eids)
        ts = np.where(hit, self.rng.integers(1, max(max_time, 2), size=(batch, width)).astype(np.float64),
                      ts.astype(np.float64))
        order = np.argsort(np.where(valid, ts, np.inf), axis=1, kind="stable")  # real entries first, by time
        take = lambda a: np.take_along_axis(a, order, axis=1)  # noqa: E731
        right = np.arange(width)[None, :] < n[:, None]
        return (np.where(right, take(ids), 0), np.where(right, take(eids), 0), np.where(right, take(ts), 0.0),
                n.astype(np.int64))

    def _replaced_window(self, nodes, times, k: int) -> Neighborhood:
        """The k most recent entries of the perturbed whole history, left-padded (B, k)."""
        hist = self.graph.history(nodes, times)  # (B, longest) right-padded, every interaction before t
        valid = np.arange(hist.neighbor_ids.shape[1])[None, :] < hist.lengths[:, None]
        ids, eids, ts, n = self._replace(hist.neighbor_ids, hist.edge_ids, hist.times, valid)
        width = ids.shape[1]
        keep = np.minimum(n, k)
        # column c of the (B, k) window reads column n - k + c of the row (padding where that is < 0)
        src_col = n[:, None] - k + np.arange(k)[None, :]
        ok = (src_col >= 0) & (np.arange(k)[None, :] >= k - keep[:, None])
        safe = np.clip(src_col, 0, max(width - 1, 0))
        take = (lambda a: np.where(ok, np.take_along_axis(a, safe, axis=1), 0)) if width else \
            (lambda a: np.zeros((len(n), k), a.dtype))
        return Neighborhood(take(ids), take(eids), take(ts).astype(self.graph.time_dtype))

    def _insert(self, ids, eids, ts, valid, query_times, width: int) -> Neighborhood:
        """Rows (B, k) of real entries (`valid`), in any layout -> (B, width) left-padded rows with noise."""
        query_times = np.asarray(query_times, dtype=np.float64)
        n_real = valid.sum(axis=1)
        m = self._noise_count(n_real)  # (B,)
        extra = int(m.max()) if len(m) else 0
        batch = ids.shape[0]
        # (B, extra) noise candidates; only the first m_b of row b are used
        used = np.arange(extra)[None, :] < m[:, None]
        oldest = np.where(valid, ts, np.inf).min(axis=1) if ids.shape[1] else query_times
        oldest = np.where(np.isfinite(oldest), oldest, query_times)
        noise_t = oldest[:, None] + self.rng.random((batch, extra)) * (query_times - oldest)[:, None]
        noise_ids = self.rng.integers(1, max(self.graph.num_nodes, 2), size=(batch, extra))
        n_before = np.searchsorted(self._edge_times, query_times, side="left")  # edges strictly before t
        pick = (self.rng.random((batch, extra)) * np.maximum(n_before, 1)[:, None]).astype(np.int64)
        noise_eids = np.where(n_before[:, None] > 0, self._edge_ids[np.minimum(pick, max(len(self._edge_ids) - 1, 0))]
                              if len(self._edge_ids) else 0, 0)
        # (B, k + extra): real and noise, invalid cells sort first (time -inf) and become padding
        all_ids = np.concatenate([ids, noise_ids], axis=1)
        all_eids = np.concatenate([eids, noise_eids], axis=1)
        all_valid = np.concatenate([valid, used], axis=1)
        all_t = np.where(all_valid, np.concatenate([ts.astype(np.float64), noise_t], axis=1), -np.inf)
        order = np.argsort(all_t, axis=1, kind="stable")[:, -width:] if width else np.zeros((batch, 0), np.int64)
        take = lambda a: np.take_along_axis(a, order, axis=1)  # noqa: E731
        keep = take(all_valid)
        return Neighborhood(np.where(keep, take(all_ids), 0), np.where(keep, take(all_eids), 0),
                            np.where(keep, take(all_t), 0.0).astype(self.graph.time_dtype))

    def _perturbed(self, hood: Neighborhood, query_times, width: int) -> Neighborhood:
        if self.mode == "insert":
            return self._insert(hood.neighbor_ids, hood.edge_ids, hood.times, hood.neighbor_ids != 0, query_times, width)
        # a sampled row (left-padded, any order of draws): its real entries perturbed, re-sorted, left-padded again
        valid = hood.neighbor_ids != 0
        ids, eids, ts, n = self._replace(hood.neighbor_ids, hood.edge_ids, hood.times, valid)
        shift = (np.arange(width)[None, :] - (width - n)[:, None]) % max(width, 1)
        left = np.arange(width)[None, :] >= (width - n)[:, None]
        roll = lambda a: np.where(left, np.take_along_axis(a, shift, axis=1), 0) if width else a  # noqa: E731
        return Neighborhood(roll(ids), roll(eids), roll(ts).astype(self.graph.time_dtype))

    def most_recent(self, nodes, times, k: int) -> Neighborhood:
        if self.mode == "replace":
            return self._replaced_window(nodes, times, k)
        hood = self.graph.most_recent(nodes, times, k)
        return self._insert(hood.neighbor_ids, hood.edge_ids, hood.times, hood.neighbor_ids != 0, times, k)

    def uniform(self, nodes, times, k: int, rng) -> Neighborhood:
        return self._perturbed(self.graph.uniform(nodes, times, k, rng), times, k)

    def time_interval_aware(self, nodes, times, k: int, rng, scale: float) -> Neighborhood:
        return self._perturbed(self.graph.time_interval_aware(nodes, times, k, rng, scale), times, k)

    def history(self, nodes, times, max_len: int | None = None) -> History:
        if self.mode == "replace":  # the whole history perturbed, then the max_len most recent (right-padded)
            full = self.graph.history(nodes, times)
            valid = np.arange(full.neighbor_ids.shape[1])[None, :] < full.lengths[:, None]
            ids, eids, ts, n = self._replace(full.neighbor_ids, full.edge_ids, full.times, valid)
            keep = n if max_len is None else np.minimum(n, max_len)
            width = int(keep.max()) if len(keep) else 0
            col = (n - keep)[:, None] + np.arange(width)[None, :]
            ok = np.arange(width)[None, :] < keep[:, None]
            safe = np.clip(col, 0, max(ids.shape[1] - 1, 0))
            take = lambda a: np.where(ok, np.take_along_axis(a, safe, axis=1), 0) if width else a[:, :0]  # noqa: E731
            return History(take(ids), take(eids), take(ts).astype(self.graph.time_dtype), keep.astype(np.int64))
        hist = self.graph.history(nodes, times, max_len)
        valid = np.arange(hist.neighbor_ids.shape[1])[None, :] < hist.lengths[:, None]
        width = int((hist.lengths + self._noise_count(hist.lengths)).max()) if len(hist.lengths) else 0
        if max_len is not None:
            width = min(width, max_len)
        left = self._insert(hist.neighbor_ids, hist.edge_ids, hist.times, valid, times, width)
        lengths = (left.neighbor_ids != 0).sum(axis=1)
        # left-padded -> right-padded (DyGFormer's layout): roll each row left by its padding
        shift = width - lengths
        cols = (np.arange(width)[None, :] + shift[:, None]) % max(width, 1)
        roll = lambda a: np.take_along_axis(a, cols, axis=1) if width else a  # noqa: E731
        right = np.arange(width)[None, :] < lengths[:, None]
        return History(np.where(right, roll(left.neighbor_ids), 0), np.where(right, roll(left.edge_ids), 0),
                       np.where(right, roll(left.times), 0).astype(self.graph.time_dtype), lengths.astype(np.int64))

    def multi_hop(self, nodes, times, k: int, num_hops: int, strategy: str = "recent", rng=None,
                  time_scaling_factor: float = 0.0):
        """TemporalNeighbors.multi_hop over the noisy answers (every hop perturbed, CAWN's walks)."""
        return TemporalNeighbors.multi_hop(self, nodes, times, k, num_hops, strategy, rng, time_scaling_factor)
