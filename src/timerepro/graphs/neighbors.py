"""Temporal neighbour retrieval over a continuous-time dynamic graph, with DyGLib's semantics.

DyGLib (`utils/utils.py`, `NeighborSampler`) keeps, per node, its interactions sorted by time and
answers a query (node, t) with the interactions strictly before t (`searchsorted(times, t, 'left')`).
Every edge (u, v, e, t) is stored twice, undirected: (neighbour v, e, t) for u and (u, e, t) for v.

Here the per-node lists are one CSR structure (`indptr`, `neighbor_ids`, `edge_ids`, `times`), and
a whole batch of queries is answered with one `searchsorted` on integer keys
`node * (U + 1) + rank(time)` (U = number of distinct interaction times), so there is no Python loop
over the batch:

* `most_recent(nodes, times, k)`: the k latest interactions before t in time order, left-padded
  with 0 (DyGLib's 'recent' strategy);
* `uniform(nodes, times, k, rng)`: k draws with replacement among the interactions before t,
  returned in time order (DyGLib's 'uniform'); with a `numpy.random.RandomState` the draws are the
  very numbers DyGLib's per-query `random_state.choice` loop would take;
* `time_interval_aware(nodes, times, k, rng, scale)`: k draws with replacement, probability
  proportional to exp(scale * (t_j - t)) (CAWN's sampling), returned in time order;
* `history(nodes, times, max_len)`: the full first-order history (its `max_len` most recent
  interactions), right-padded with 0 to the longest row of the batch, as DyGFormer reads it;
* `multi_hop(...)`: DyGLib's `get_multi_hop_neighbors` (hop h+1 queried at the hop-h neighbours'
  interaction times).

Node id 0 and edge id 0 are DyGLib's padding ids: node 0 never has neighbours.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# DyGLib's seeds of the neighbour samplers' streams (uniform sampling), reset at every set_graph
TRAIN_NEIGHBOR_SEED, EVAL_NEIGHBOR_SEED = 0, 1


def neighbor_rng(seed: int) -> np.random.RandomState:
    """The neighbour sampler's stream of one pass (`set_graph(neighbors, neighbor_rng(EVAL_NEIGHBOR_SEED))`)."""
    return np.random.RandomState(seed)


class Neighborhood(NamedTuple):
    """(B, k) arrays; padded entries have neighbour id 0, edge id 0 and time 0."""

    neighbor_ids: np.ndarray
    edge_ids: np.ndarray
    times: np.ndarray


class History(NamedTuple):
    """Right-padded first-order histories: (B, L) arrays, L = the longest history in the batch."""

    neighbor_ids: np.ndarray
    edge_ids: np.ndarray
    times: np.ndarray
    lengths: np.ndarray  # (B,) number of real (non-padded) entries per row


class TemporalNeighbors:
    """Per-node interaction lists sorted by time (CSR), queried strictly before a time.

    src, dst, edge_ids: (E,) int; ts: (E,) float. `num_nodes` is the number of node ids including
    the padding id 0 (default: largest id + 1); queries for ids >= num_nodes raise IndexError.
    `time_dtype` is the dtype of returned times: float64 (exact) by default; DyGLib returns
    float32, pass np.float32 to match it bit for bit.
    """

    def __init__(self, src, dst, ts, edge_ids, num_nodes: int | None = None, time_dtype=np.float64):
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        ts = np.asarray(ts, dtype=np.float64)
        edge_ids = np.asarray(edge_ids, dtype=np.int64)
        if not (src.shape == dst.shape == ts.shape == edge_ids.shape) or src.ndim != 1:
            raise ValueError("src, dst, ts and edge_ids must be 1-D arrays of equal length")
        if len(src) and min(src.min(), dst.min()) < 0:
            raise ValueError("node ids must be non-negative")
        if np.isnan(ts).any():
            raise ValueError("interaction times must not be NaN")
        max_id = int(max(src.max(), dst.max())) if len(src) else 0
        self.num_nodes = max_id + 1 if num_nodes is None else int(num_nodes)
        if self.num_nodes <= max_id:
            raise ValueError(f"num_nodes={self.num_nodes} but the graph has node id {max_id}")
        self.time_dtype = np.dtype(time_dtype)

        n_edges = len(src)
        # (2E,) one entry per endpoint: owner node, neighbour, edge id, time; src entries first, as
        # DyGLib appends (dst to src's list, src to dst's list) edge by edge
        owner = np.concatenate([src, dst])
        neighbor = np.concatenate([dst, src])
        eids = np.concatenate([edge_ids, edge_ids])
        times = np.concatenate([ts, ts])
        # DyGLib's append order: edge by edge, the src entry before the dst entry
        arrival = np.concatenate([2 * np.arange(n_edges), 2 * np.arange(n_edges) + 1])
        # sort by (owner, time, arrival): DyGLib's stable sort of each node's list by time
        order = np.lexsort((arrival, times, owner))
        self.neighbor_ids = neighbor[order]
        self.edge_ids = eids[order]
        self.times = times[order]
        owner = owner[order]
        # indptr[n]:indptr[n+1] is node n's slice; (num_nodes + 1,)
        self.indptr = np.zeros(self.num_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(owner, minlength=self.num_nodes), out=self.indptr[1:])
        # integer search keys: node * (U + 1) + rank of the time among the U distinct times
        self.unique_times = np.unique(times)
        self._stride = np.int64(len(self.unique_times) + 1)
        self._keys = owner * self._stride + np.searchsorted(self.unique_times, self.times)

    @classmethod
    def from_data(cls, data, mask: np.ndarray | None = None, time_dtype=np.float64) -> "TemporalNeighbors":
        """From a `timerepro.data.ctdg.CTDGData`, optionally only the edges where `mask` is True
        (DyGLib: the training sampler sees the training edges, the evaluation one the full graph).
        Node ids cover every row of `data.node_feat` either way."""
        sel = slice(None) if mask is None else np.asarray(mask, dtype=bool)
        return cls(data.src[sel], data.dst[sel], data.ts[sel], data.edge_ids[sel],
                   num_nodes=data.node_feat.shape[0], time_dtype=time_dtype)

    # ------------------------------------------------------------------ queries

    def _bounds(self, nodes, times) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each query: (start, end, nodes) with interactions [start, end) strictly before its time."""
        nodes = np.asarray(nodes, dtype=np.int64)
        times = np.asarray(times, dtype=np.float64)
        if nodes.ndim != 1 or nodes.shape != times.shape:
            raise ValueError(f"nodes and times must be 1-D of equal length, got {nodes.shape} and {times.shape}")
        if len(nodes) and (nodes.min() < 0 or nodes.max() >= self.num_nodes):
            raise IndexError(f"node ids must lie in [0, {self.num_nodes})")
        if np.isnan(times).any():
            raise ValueError("query times must not be NaN")
        # number of distinct interaction times strictly below each query time
        rank = np.searchsorted(self.unique_times, times, side="left")
        # first entry of the node whose time is >= the query time == DyGLib's searchsorted(..., 'left')
        end = np.searchsorted(self._keys, nodes * self._stride + rank, side="left")
        return self.indptr[nodes], end, nodes

    def count_before(self, nodes, times) -> np.ndarray:
        """(B,) number of interactions of each node strictly before its query time."""
        start, end, _ = self._bounds(nodes, times)
        return end - start

    def _gather(self, idx: np.ndarray, valid: np.ndarray) -> Neighborhood:
        safe = np.where(valid, idx, 0)
        ids = np.where(valid, self.neighbor_ids[safe] if len(self.neighbor_ids) else 0, 0)
        eids = np.where(valid, self.edge_ids[safe] if len(self.edge_ids) else 0, 0)
        times = np.where(valid, self.times[safe] if len(self.times) else 0.0, 0.0)
        return Neighborhood(ids.astype(np.int64), eids.astype(np.int64), times.astype(self.time_dtype))

    def most_recent(self, nodes, times, k: int) -> Neighborhood:
        """The k latest interactions strictly before each query time, oldest first, left-padded with 0."""
        if k <= 0:
            raise ValueError("k must be positive")
        start, end, _ = self._bounds(nodes, times)
        # (B, k) positions end-k .. end-1; those before the node's slice are padding (on the left)
        idx = end[:, None] - k + np.arange(k)[None, :]
        return self._gather(idx, idx >= start[:, None])

    def uniform(self, nodes, times, k: int, rng) -> Neighborhood:
        """k interactions drawn uniformly with replacement among those strictly before each query
        time, sorted by time; rows without history are all padding and consume no random numbers.

        rng: numpy RandomState (the same stream as DyGLib's per-query `random_state.choice(n, k)`)
        or numpy Generator. Ties in time keep the order of the interaction lists (DyGLib's
        unstable argsort may permute equal times; TGAT and CAWN do not depend on that order).
        """
        if k <= 0:
            raise ValueError("k must be positive")
        start, end, _ = self._bounds(nodes, times)
        count = end - start
        rows = np.flatnonzero(count > 0)
        # (B, k) offsets into each node's slice; sampled only for rows with history
        offsets = np.zeros((len(count), k), dtype=np.int64)
        if len(rows):
            high = count[rows][:, None]
            if isinstance(rng, np.random.RandomState):
                draws = rng.randint(0, high, size=(len(rows), k))
            elif isinstance(rng, np.random.Generator):
                draws = rng.integers(0, high, size=(len(rows), k))
            else:
                raise TypeError("rng must be a numpy RandomState or Generator")
            # slices are time-sorted, so sorting offsets sorts by time
            offsets[rows] = np.sort(draws, axis=1)
        valid = np.zeros((len(count), k), dtype=bool)
        valid[rows] = True
        return self._gather(start[:, None] + offsets, valid)

    def time_interval_aware(self, nodes, times, k: int, rng, scale: float) -> Neighborhood:
        """k draws with replacement among the interactions strictly before each query time t, the
        interaction at t_j drawn with probability proportional to exp(scale * (t_j - t)) (CAWN's
        time-interval-aware sampling, Wang et al. 2021, Sec. 4.1), sorted by time; rows without
        history are all padding and consume no random numbers. scale = 0 is uniform sampling.

        rng: numpy RandomState or Generator; one uniform number per draw (inverse CDF)."""
        if k <= 0:
            raise ValueError("k must be positive")
        if not scale >= 0:
            raise ValueError(f"scale must be >= 0, got {scale}")
        start, end, _ = self._bounds(nodes, times)
        count = end - start
        rows = np.flatnonzero(count > 0)
        offsets = np.zeros((len(count), k), dtype=np.int64)
        if len(rows):
            r_start, r_count = start[rows], count[rows]
            # every visible entry of every row with history, flattened: (sum of counts,)
            row_of = np.repeat(np.arange(len(rows)), r_count)
            first = np.cumsum(r_count) - r_count  # (R,) first flat position of each row
            flat = r_start[row_of] + (np.arange(row_of.size) - first[row_of])
            # weights relative to each row's latest visible time: in (0, 1], the latest is 1, no overflow
            latest = self.times[r_start + r_count - 1]
            w = np.exp(scale * (self.times[flat] - latest[row_of]))
            cum = np.cumsum(w)  # (sum of counts,) running total over all rows
            base = np.where(first > 0, cum[first - 1], 0.0)  # (R,) total before each row
            total = cum[first + r_count - 1] - base  # (R,) >= 1
            if isinstance(rng, np.random.RandomState):
                u = rng.random_sample((len(rows), k))
            elif isinstance(rng, np.random.Generator):
                u = rng.random((len(rows), k))
            else:
                raise TypeError("rng must be a numpy RandomState or Generator")
            # inverse CDF within each row: first flat position whose running total exceeds the target
            pos = np.searchsorted(cum, base[:, None] + u * total[:, None], side="right")
            pos = np.clip(pos, first[:, None], (first + r_count - 1)[:, None])  # float rounding at the ends
            # slices are time-sorted, so sorting offsets sorts by time
            offsets[rows] = np.sort(pos - first[:, None], axis=1)
        valid = np.zeros((len(count), k), dtype=bool)
        valid[rows] = True
        return self._gather(start[:, None] + offsets, valid)

    def history(self, nodes, times, max_len: int | None = None) -> History:
        """Each node's interactions strictly before its time (the `max_len` most recent if given),
        oldest first, right-padded with 0 to the longest row of the batch (DyGFormer's layout)."""
        if max_len is not None and max_len <= 0:
            raise ValueError("max_len must be positive")
        start, end, _ = self._bounds(nodes, times)
        length = end - start if max_len is None else np.minimum(end - start, max_len)
        width = int(length.max()) if len(length) else 0
        # (B, width) positions end-length .. end-1, then padding on the right
        col = np.arange(width)[None, :]
        idx = (end - length)[:, None] + col
        ids, eids, ts = self._gather(idx, col < length[:, None])
        return History(ids, eids, ts, length.astype(np.int64))

    def multi_hop(self, nodes, times, k: int, num_hops: int, strategy: str = "recent", rng=None,
                  time_scaling_factor: float = 0.0):
        """DyGLib's get_multi_hop_neighbors: hop 1 as `most_recent`/`uniform`/`time_interval_aware`
        (with `time_scaling_factor`); hop h+1 queries every hop-h neighbour at its interaction time.
        Returns three lists (ids, edge ids, times) of num_hops arrays of shape (B, k ** hop)."""
        if num_hops <= 0:
            raise ValueError("num_hops must be positive")
        nodes = np.asarray(nodes, dtype=np.int64)
        batch = len(nodes)

        def one_hop(n, t):
            if strategy == "recent":
                return self.most_recent(n, t, k)
            if strategy == "uniform":
                return self.uniform(n, t, k, rng)
            if strategy == "time_interval_aware":
                return self.time_interval_aware(n, t, k, rng, time_scaling_factor)
            raise ValueError(f"unknown strategy {strategy!r}; use 'recent', 'uniform' or 'time_interval_aware'")

        out_ids, out_eids, out_times = [], [], []
        q_nodes, q_times = nodes, np.asarray(times, dtype=np.float64)
        for _ in range(num_hops):
            hop = one_hop(q_nodes, q_times)
            out_ids.append(hop.neighbor_ids.reshape(batch, -1))
            out_eids.append(hop.edge_ids.reshape(batch, -1))
            out_times.append(hop.times.reshape(batch, -1))
            q_nodes, q_times = hop.neighbor_ids.ravel(), hop.times.ravel().astype(np.float64)
        return out_ids, out_eids, out_times
