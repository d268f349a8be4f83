"""SWINIT's graph of a batch (docs/swinit.md, "Graph of a batch"), built from each queried node's most recent
interactions before the batch: two constructions, named by `GRAPHS`.

* `glued` (the authors' code, the tables' default): one graph over the batch's queried nodes (sources, positive
  and negative destinations) and their neighbours, global ids, one edge neighbour -> centre per stored
  interaction (`cus_tgn.py` LastNeighborLoader.__call__, whose relabelling is commented out at ~327-330), and
  PyG's `get_laplacian(normalization='sym')` on those directed edges as listed (`ufg_global.py` get_d_list ~80):
  no symmetrisation, degrees summed over the source row. A queried node that is nobody's neighbour has degree 0,
  so its incoming edges get weight 0 (PyG sets inf^-1/2 to 0).
* `stars` (the project's leak-free option): one star per queried node over its distinct neighbours, weighted by
  multiplicity, the stars of a call disjoint and symmetrised, so an embedding never depends on what else is
  queried. In the glued graph a source that is a recent neighbour of its true destination reads that
  destination's memory, and the destination is in the graph because it is the batch's positive: the batch's
  true destinations shape the positives' embeddings.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

GRAPHS = ("glued", "stars")


class BatchGraph(NamedTuple):
    """node_ids (n,) global ids, the queried nodes first; edges (2, E) local ids; weights (E,); `symmetric`: the
    edges are undirected (listed once, the Laplacian symmetrises them) or directed as listed (PyG's Laplacian)."""

    node_ids: np.ndarray
    edges: np.ndarray
    weights: np.ndarray
    symmetric: bool


def star_graphs(centers: np.ndarray, neighbor_ids: np.ndarray) -> BatchGraph:
    """Disjoint stars: centre q (local id q) joined to one copy of each distinct neighbour of its row of
    `neighbor_ids` (Q, k) (0 = padding), weighted by how often it occurs there."""
    q, _ = neighbor_ids.shape
    rows, _ = np.nonzero(neighbor_ids)
    nbr = neighbor_ids[neighbor_ids != 0]  # row-major, aligned with rows
    stride = np.int64(neighbor_ids.max(initial=0) + 1)
    pairs, counts = np.unique(rows * stride + nbr, return_counts=True)  # (P,) distinct (centre, neighbour)
    leaf_ids = pairs % stride
    edges = np.stack([pairs // stride, q + np.arange(len(pairs))])
    return BatchGraph(np.concatenate([np.asarray(centers, dtype=np.int64), leaf_ids]), edges,
                      counts.astype(np.float64), True)


def glued_graph(centers: np.ndarray, neighbor_ids: np.ndarray) -> BatchGraph:
    """The authors' graph: distinct `centers` (Q,) and their neighbours as one node set (global ids, centres
    first), one directed edge (neighbour -> centre) per non-padding entry of `neighbor_ids` (Q, k), self loops
    dropped (get_laplacian removes them); repeated interactions stay separate unit edges (their sum is the count)."""
    centers = np.asarray(centers, dtype=np.int64)
    rows, cols = np.nonzero(neighbor_ids)
    nbr = neighbor_ids[rows, cols].astype(np.int64)  # (E,) global ids of the neighbours
    keep = nbr != centers[rows]
    rows, nbr = rows[keep], nbr[keep]
    others = np.setdiff1d(nbr, centers)  # neighbours that are not queried themselves
    node_ids = np.concatenate([centers, others])
    # global -> local: centres keep their place, the others follow in id order
    order = np.argsort(node_ids, kind="stable")
    local = order[np.searchsorted(node_ids[order], nbr)]  # (E,)
    edges = np.stack([local, rows]).astype(np.int64)  # (2, E): row = neighbour, col = centre
    return BatchGraph(node_ids, edges, np.ones(edges.shape[1]), False)


BUILDERS = {"glued": glued_graph, "stars": star_graphs}


def build_batch_graph(kind: str, centers: np.ndarray, neighbor_ids: np.ndarray) -> BatchGraph:
    """The batch graph of `kind` (one of GRAPHS) over distinct `centers` and their neighbour rows (Q, k)."""
    if kind not in BUILDERS:
        raise ValueError(f"unknown batch_graph {kind!r}; known: {GRAPHS}")
    return BUILDERS[kind](centers, neighbor_ids)
