"""Noisy neighbours for dyg_mamba's robustness study (Figures 8 and 9; protocol decided in docs/dyg_mamba.md, A16).

`NoisyNeighbors(graph, ratio, seed)` answers every neighbour query of `TemporalNeighbors` with noise inserted
after the retrieval: a query whose retrieved row holds n real interactions gets m = round(ratio * n) noise
interactions, each with a node id drawn uniformly from the graph's nodes, a time drawn uniformly between the
row's oldest retrieved time and the query time (so the noise sits chronologically inside the history) and the
edge id (features) of an edge drawn uniformly among the edges strictly before the query time. The row is then
re-sorted by time and cut back to the requested width, keeping the most recent entries, so noise displaces the
oldest real interactions of a full window. Nothing at or after the query time is ever returned.
"""

from __future__ import annotations

import numpy as np

from timerepro.graphs.neighbors import History, Neighborhood, TemporalNeighbors


class NoisyNeighbors:
    """A `TemporalNeighbors` whose answers carry inserted noise (see the module docstring)."""

    def __init__(self, graph: TemporalNeighbors, ratio: float, seed: int = 0):
        if not 0 <= ratio <= 1:
            raise ValueError(f"noise ratio must lie in [0, 1], got {ratio}")
        self.graph, self.ratio = graph, float(ratio)
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
        return n + self._noise_count(n)

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

    def most_recent(self, nodes, times, k: int) -> Neighborhood:
        hood = self.graph.most_recent(nodes, times, k)
        return self._insert(hood.neighbor_ids, hood.edge_ids, hood.times, hood.neighbor_ids != 0, times, k)

    def uniform(self, nodes, times, k: int, rng) -> Neighborhood:
        hood = self.graph.uniform(nodes, times, k, rng)
        return self._insert(hood.neighbor_ids, hood.edge_ids, hood.times, hood.neighbor_ids != 0, times, k)

    def time_interval_aware(self, nodes, times, k: int, rng, scale: float) -> Neighborhood:
        hood = self.graph.time_interval_aware(nodes, times, k, rng, scale)
        return self._insert(hood.neighbor_ids, hood.edge_ids, hood.times, hood.neighbor_ids != 0, times, k)

    def history(self, nodes, times, max_len: int | None = None) -> History:
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
