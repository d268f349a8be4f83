"""Statistics of the time differences a graph model's encoder reads on the training split (linear_time
App. D.2), for the standardizing encoders (linear, cosine_scale): the paper's pooled mean and std, or the
authors' per-query means (`time_diff_statistic`; docs/fidelity.md item 5). Builders of params/models.yaml
call them; CAWN's walk statistic lives with CAWN."""

from __future__ import annotations

import numpy as np

from timerepro.data.ctdg import CTDGData, LinkSplit
from timerepro.encoders import STATISTICS, mean_and_std, standardization_values
from timerepro.graphs.neighbors import TemporalNeighbors


CHUNK = 1 << 16  # queries per (chunk, k) block


def time_difference_stats(graph: TemporalNeighbors, nodes, times, k: int, statistic: str = "pooled",
                          rng: np.random.RandomState | None = None, chunk: int = CHUNK) -> tuple[float, float]:
    """Mean and (population) standard deviation of t - t_k over the queries (nodes, times) and their
    k most recent interactions before t in `graph` (k uniform draws with replacement when `rng` is
    given, as the authors' code does for uniform-sampling runs); padding left out.
    `statistic`: `encoders.standardization_stats` ("pooled": every difference, the paper;
    "per_query_mean": the spread of per-query means, the authors' code). (0, 1) without any
    history; std 1 when all values are equal (the linear encoder needs std > 0).
    Gathered `chunk` queries at a time: the (Q, k) arrays of a large graph at a long history (LastFM, 1.8 M
    queries x 512 for DyG-Mamba: ~7 GB each) are never built. Each chunk gives its values (valid differences or
    row means) in query order, and uniform draws take the same numbers from `rng` in the same order (row by row,
    rows without history draw none), so the statistics are those of the whole to the last bit."""
    if statistic not in STATISTICS:
        raise ValueError(f"unknown standardization statistic {statistic!r}; known: {STATISTICS}")
    nodes, times = np.asarray(nodes), np.asarray(times, dtype=np.float64)
    parts = []
    for i in range(0, len(nodes), chunk):
        n, t = nodes[i:i + chunk], times[i:i + chunk]
        hood = graph.most_recent(n, t, k) if rng is None else graph.uniform(n, t, k, rng)  # (c, k)
        dt = t[:, None] - hood.times.astype(np.float64)  # (c, k)
        parts.append(standardization_values(dt, hood.neighbor_ids != 0, statistic))  # (values of the chunk,)
    return mean_and_std(np.concatenate(parts) if parts else np.zeros(0))


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
