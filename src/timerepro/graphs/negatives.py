"""Negative edge samplers for link prediction: random, historical and inductive (Poursafaei et al. 2022),
with the semantics of DyGLib's `NegativeEdgeSampler` (`utils/utils.py`) and of its evaluation loop.

A sampler is built on the edges (src, dst, ts) it may draw from; DyGLib builds the evaluation samplers
on the full graph (or on the new-node edges for the inductive setting), see `dyglib_eval_samplers`.

* random: a source among the sampler's distinct sources and a destination among its distinct
  destinations, independently and uniformly. In evaluation and training DyGLib keeps the positive
  source and uses only the drawn destination (`sample_for_batch`). With the same seed this module
  draws exactly DyGLib's numbers (`RandomState.randint` for the sources, then for the destinations).
* historical: distinct pairs (u, v) seen at a time in [earliest, batch start] minus the pairs seen in
  the batch's time window [batch start, batch end] (both ends inclusive, as DyGLib): pairs seen before
  the batch that do not reappear in it.
* inductive: the historical pairs minus those already observed by `last_observed_time` (the end of
  training for validation, the end of validation for test): pairs first seen after that time.

Historical and inductive draw `size` candidates without replacement; when there are fewer candidates
than `size` they take all of them plus random pairs (sources x destinations of the sampler) that are
not in the batch, drawn without replacement unless there are too few (DyGLib's collision check).

Evaluation is deterministic: a seeded sampler restarts its stream at `reset()` (DyGLib resets at the
start of every evaluation), so every evaluation of a split sees the same negatives.

Deviation (documented in docs/graphs.md): DyGLib indexes its candidates through Python sets, whose
iteration order is an implementation detail; here candidates are sorted pair codes. Historical and
inductive negatives therefore follow the same distribution as DyGLib's but are not the same draws.
Random negatives are the same draws.
"""

from __future__ import annotations

import numpy as np

STRATEGIES = ("random", "historical", "inductive")


class NegativeEdgeSampler:
    """src, dst, ts: (E,) edges the sampler knows; ts is required for historical and inductive."""

    def __init__(self, src, dst, ts=None, *, strategy: str = "random", last_observed_time: float | None = None,
                 seed: int | None = None):
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown negative sampling strategy {strategy!r}; known: {STRATEGIES}")
        self.strategy = strategy
        self.seed = seed
        self.src = np.asarray(src, dtype=np.int64)
        self.dst = np.asarray(dst, dtype=np.int64)
        if self.src.shape != self.dst.shape or self.src.ndim != 1 or len(self.src) == 0:
            raise ValueError("src and dst must be non-empty 1-D arrays of equal length")
        self.unique_src = np.unique(self.src)
        self.unique_dst = np.unique(self.dst)
        # pair code = src * M + dst
        self._m = np.int64(max(self.src.max(), self.dst.max()) + 1)
        if strategy != "random":
            if seed is None:
                raise ValueError(f"the {strategy} strategy is for evaluation and needs a seed (as in DyGLib)")
            if ts is None:
                raise ValueError(f"the {strategy} strategy needs interaction times")
            self.ts = np.asarray(ts, dtype=np.float64)
            if self.ts.shape != self.src.shape:
                raise ValueError("ts must have the shape of src")
            codes = self.src * self._m + self.dst
            # edges in time order: the pairs inside any time window are one contiguous slice
            by_time = np.argsort(self.ts, kind="stable")
            self._sorted_ts = self.ts[by_time]
            self._codes_by_time = codes[by_time]
            # each distinct pair with the time it was first seen, ordered by that time
            pair_order = np.lexsort((self.ts, codes))
            pairs, first = np.unique(codes[pair_order], return_index=True)
            first_time = self.ts[pair_order][first]
            by_first = np.argsort(first_time, kind="stable")
            self._pairs_by_first = pairs[by_first]
            self._first_times = first_time[by_first]
        if strategy == "inductive":
            if last_observed_time is None:
                raise ValueError("the inductive strategy needs last_observed_time")
        self.last_observed_time = None if last_observed_time is None else float(last_observed_time)
        self.reset()

    def reset(self) -> None:
        """Restart the random stream from the seed (unseeded samplers draw fresh entropy)."""
        self.random_state = np.random.RandomState(self.seed)

    # ------------------------------------------------------------------ candidates

    def _window_codes(self, start: float, end: float) -> np.ndarray:
        lo = np.searchsorted(self._sorted_ts, start, side="left")
        hi = np.searchsorted(self._sorted_ts, end, side="right")
        return self._codes_by_time[lo:hi]

    def candidate_codes(self, batch_start: float, batch_end: float) -> np.ndarray:
        """Sorted codes (src * M + dst) of the historical or inductive candidates for a batch window."""
        if self.strategy == "random":
            raise ValueError("random sampling has no candidate set")
        upto = np.searchsorted(self._first_times, batch_start, side="right")  # first seen <= batch start
        lo = 0
        if self.strategy == "inductive":
            lo = min(np.searchsorted(self._first_times, self.last_observed_time, side="right"), upto)
        return np.setdiff1d(self._pairs_by_first[lo:upto], self._window_codes(batch_start, batch_end))

    def candidates(self, batch_start: float, batch_end: float) -> tuple[np.ndarray, np.ndarray]:
        codes = self.candidate_codes(batch_start, batch_end)
        return codes // self._m, codes % self._m

    # ------------------------------------------------------------------ sampling

    def sample(self, size: int, batch_src=None, batch_dst=None, batch_start: float = 0.0,
               batch_end: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """(negative sources, negative destinations), each (size,) int64."""
        if self.strategy == "random":
            i = self.random_state.randint(0, len(self.unique_src), size)
            j = self.random_state.randint(0, len(self.unique_dst), size)
            return self.unique_src[i], self.unique_dst[j]
        if batch_src is None or batch_dst is None:
            raise ValueError(f"{self.strategy} sampling needs the batch's sources and destinations")
        codes = self.candidate_codes(batch_start, batch_end)
        if size > len(codes):
            # all candidates, preceded by random pairs outside the batch (DyGLib's order)
            r_src, r_dst = self._random_outside_batch(size - len(codes), batch_src, batch_dst)
            return (np.concatenate([r_src, codes // self._m]).astype(np.int64),
                    np.concatenate([r_dst, codes % self._m]).astype(np.int64))
        pick = self.random_state.choice(len(codes), size=size, replace=False)
        return codes[pick] // self._m, codes[pick] % self._m

    def _random_outside_batch(self, size: int, batch_src, batch_dst) -> tuple[np.ndarray, np.ndarray]:
        """Pairs from sources x destinations minus the batch's pairs; with replacement only when
        fewer such pairs exist than `size` (DyGLib's `random_sample_with_collision_check`)."""
        batch_src = np.asarray(batch_src, dtype=np.int64)
        batch_dst = np.asarray(batch_dst, dtype=np.int64)
        n_dst = len(self.unique_dst)
        total = len(self.unique_src) * n_dst
        inside = np.isin(batch_src, self.unique_src) & np.isin(batch_dst, self.unique_dst)
        # sorted flat indices (row = source rank, column = destination rank) of the batch's pairs
        excluded = np.unique(np.searchsorted(self.unique_src, batch_src[inside]) * n_dst
                             + np.searchsorted(self.unique_dst, batch_dst[inside]))
        available = total - len(excluded)
        if available <= 0:
            raise ValueError("every source-destination pair is in the batch: no negative can be drawn")
        if available < size:
            ranks = self.random_state.randint(0, available, size)
        else:
            ranks = _distinct(self.random_state, available, size)
        # r-th allowed index = r + number of excluded indices at or below it
        flat = ranks + np.searchsorted(excluded - np.arange(len(excluded)), ranks, side="right")
        return self.unique_src[flat // n_dst], self.unique_dst[flat % n_dst]

    def sample_for_batch(self, batch_src, batch_dst, batch_times) -> tuple[np.ndarray, np.ndarray]:
        """DyGLib's evaluation (and training) call: random keeps the positive sources and replaces the
        destinations; historical and inductive replace both, over the window [times[0], times[-1]]."""
        batch_src = np.asarray(batch_src, dtype=np.int64)
        batch_times = np.asarray(batch_times, dtype=np.float64)
        if self.strategy == "random":
            _, neg_dst = self.sample(len(batch_src))
            return batch_src.copy(), neg_dst
        return self.sample(len(batch_src), batch_src, batch_dst, float(batch_times[0]), float(batch_times[-1]))


def _distinct(rs: np.random.RandomState, n: int, size: int) -> np.ndarray:
    """`size` distinct integers from [0, n), uniformly, without materializing range(n) when n is large."""
    if n <= 4 * size or n <= 4096:
        return rs.permutation(n)[:size]
    picked = np.empty(0, dtype=np.int64)
    while len(picked) < size:
        draws = np.concatenate([picked, rs.randint(0, n, size)])
        _, first = np.unique(draws, return_index=True)
        picked = draws[np.sort(first)]
    return picked[:size]


def train_sampler(data, split, seed: int | None = None) -> NegativeEdgeSampler:
    """DyGLib's training sampler: random, over the training edges' sources and destinations."""
    return NegativeEdgeSampler(data.src[split.train], data.dst[split.train], seed=seed)


def dyglib_eval_samplers(data, split, strategy: str = "random") -> dict[str, NegativeEdgeSampler]:
    """The four evaluation samplers of DyGLib's `evaluate_link_prediction.py`: seeds 0-3; val and
    test on the full graph, the new-node ones on the new-node edges only; inductive
    `last_observed_time` = last training time for validation, last validation time for test.
    A new-node sampler is left out when its split has no new-node edge."""
    last_train = float(data.ts[split.train][-1])
    last_val = float(data.ts[split.val][-1])
    parts = {"val": (None, last_train, 0), "new_node_val": (split.new_node_val, last_train, 1),
             "test": (None, last_val, 2), "new_node_test": (split.new_node_test, last_val, 3)}
    out = {}
    for name, (mask, last, seed) in parts.items():
        sel = slice(None) if mask is None else mask
        if mask is not None and not mask.any():
            continue  # no new-node edges in this split (tiny graphs): no sampler
        if strategy == "random":
            out[name] = NegativeEdgeSampler(data.src[sel], data.dst[sel], seed=seed)
        else:
            out[name] = NegativeEdgeSampler(data.src[sel], data.dst[sel], data.ts[sel], strategy=strategy,
                                            last_observed_time=last, seed=seed)
    return out
