"""Distinct (node, time) queries of a call, so that a model computes what repeats once (TGAT, TGN, TCL, GraphMixer:
docs/graph_speed.md); a module of its own so that a run's code fingerprint counts it without any one model."""

from __future__ import annotations

import numpy as np


def distinct_queries(nodes: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n,) queries -> the distinct (node, time) pairs in order of first appearance, and (n,) the position
    of each query among them (so a prefix of distinct queries keeps its positions)."""
    pairs = np.stack([nodes.astype(np.int64), np.ascontiguousarray(times, dtype=np.float64).view(np.int64)], axis=1)
    _, first, inverse = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    keep = first[order]
    return nodes[keep], times[keep], rank[inverse.reshape(-1)]
