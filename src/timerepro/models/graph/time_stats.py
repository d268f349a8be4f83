"""Statistics of the time differences a graph model's encoder reads on the training split (linear_time
App. D.2), for the standardizing encoders (linear, cosine_scale): the paper's pooled mean and std, or the
authors' per-query means (`time_diff_statistic`; docs/fidelity.md item 5). Builders of params/models.yaml
call them; CAWN's walk statistic lives with CAWN."""

from __future__ import annotations

import math

import numpy as np

from timerepro.data.ctdg import CTDGData, LinkSplit
from timerepro.encoders import STATISTICS, mean_and_std, standardization_values
from timerepro.graphs.neighbors import TemporalNeighbors


CHUNK_ENTRIES = 1 << 20  # (chunk, k) entries gathered at once: 8 MB per block, ~100 MB with the gather's temporaries
# Values kept for numpy's whole-array mean and std (256 MB of float64; the kept values, their concatenation and
# std's temporary peak at ~0.5 GB). Every offline run sits far below it (the largest, TGAT on real UCI: 68,706
# training endpoints, their per-query means; 1.4 M differences even pooled at k = 20); beyond it (LastFM at
# k = 512: 1.8 M queries x 512 = 0.9 G values, 7.4 GB each copy) the values are folded into running moments.
WHOLE_LIMIT = 1 << 25


class RunningMoments:
    """Count, mean and sum of squared deviations of 1-D blocks of values, folded one block at a time (Chan,
    Golub & LeVeque's pairwise update, float64): the whole array's mean and population std to ~1e-15 relative
    without holding the values."""

    def __init__(self):
        self.count, self.mean, self.m2 = 0, 0.0, 0.0

    def add(self, values: np.ndarray) -> None:
        n = values.size
        if n == 0:
            return
        mean = float(values.mean())
        dev = values - mean  # (n,)
        total = self.count + n
        delta = mean - self.mean
        self.mean += delta * n / total
        self.m2 += float(dev @ dev) + delta * delta * self.count * n / total
        self.count = total

    def mean_and_std(self) -> tuple[float, float]:
        """As `encoders.mean_and_std`: (0, 1) without values, std 1 when it is 0."""
        if self.count == 0:
            return 0.0, 1.0
        std = math.sqrt(self.m2 / self.count)
        return self.mean, std if std > 0 else 1.0


def time_difference_stats(graph: TemporalNeighbors, nodes, times, k: int, statistic: str = "pooled",
                          rng: np.random.RandomState | None = None, chunk: int | None = None,
                          whole_limit: int = WHOLE_LIMIT) -> tuple[float, float]:
    """Mean and (population) standard deviation of t - t_k over the queries (nodes, times) and their
    k most recent interactions before t in `graph` (k uniform draws with replacement when `rng` is
    given, as the authors' code does for uniform-sampling runs); padding left out.
    `statistic`: `encoders.standardization_stats` ("pooled": every difference, the paper;
    "per_query_mean": the spread of per-query means, the authors' code). (0, 1) without any
    history; std 1 when all values are equal (the linear encoder needs std > 0).
    Gathered `chunk` queries at a time (default: CHUNK_ENTRIES // k): the (Q, k) arrays of a large graph at a
    long history (LastFM, 1.8 M queries x 512: ~7 GB each) are never built. Each chunk gives its values (valid
    differences or row means) in query order, and uniform draws take the same numbers from `rng` in the same
    order (row by row, rows without history draw none). Up to `whole_limit` values, they are kept and the
    statistics are numpy's over the whole, to the last bit; past it, every chunk is folded into
    `RunningMoments` (memory bounded by the chunk; ~1e-15 relative from the whole-array figures)."""
    if statistic not in STATISTICS:
        raise ValueError(f"unknown standardization statistic {statistic!r}; known: {STATISTICS}")
    nodes, times = np.asarray(nodes), np.asarray(times, dtype=np.float64)
    rows = chunk or max(1, CHUNK_ENTRIES // k)
    kept, held, moments = [], 0, None
    for i in range(0, len(nodes), rows):
        n, t = nodes[i:i + rows], times[i:i + rows]
        hood = graph.most_recent(n, t, k) if rng is None else graph.uniform(n, t, k, rng)  # (c, k)
        dt = t[:, None] - hood.times.astype(np.float64)  # (c, k)
        values = standardization_values(dt, hood.neighbor_ids != 0, statistic)  # (values of the chunk,)
        if moments is not None:
            moments.add(values)
            continue
        kept.append(values)
        held += values.size
        if held > whole_limit:  # too many to keep: fold the kept chunks, stream the rest
            moments = RunningMoments()
            for block in kept:
                moments.add(block)
            kept = []
    if moments is not None:
        return moments.mean_and_std()
    values = np.concatenate(kept) if kept else np.zeros(0)
    kept.clear()  # the blocks go before std's temporary comes
    return mean_and_std(values)


def train_time_stats(data: CTDGData, split: LinkSplit, train_graph: TemporalNeighbors, k: int,
                     statistic: str = "pooled", rng: np.random.RandomState | None = None) -> tuple[float, float]:
    """linear_time App. D.2 on the training split: both endpoints of every training edge at its
    time, against the k most recent training interactions (what the first layer encodes)."""
    src, dst, ts = data.src[split.train], data.dst[split.train], data.ts[split.train]
    return time_difference_stats(train_graph, np.concatenate([src, dst]), np.concatenate([ts, ts]), k,
                                 statistic, rng)


def time_diff_statistic(config: dict) -> tuple[str, np.random.RandomState | None]:
    """`time_diff_statistic` of a run ("pooled", the paper's; "per_query_mean", the authors' code) and,
    for the authors' statistic under uniform neighbour sampling, the stream of its uniform windows."""
    statistic = config.get("time_diff_statistic", "pooled")
    uniform = statistic == "per_query_mean" and config.get("neighbor_sampling", "recent") == "uniform"
    return statistic, np.random.RandomState(int(config["seed"])) if uniform else None
