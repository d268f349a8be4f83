"""DyGFormer inputs: the co-occurrence worked example, a per-row reference as DyGLib counts, the padded
sequence layout and patching."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from timerepro.graphs.cooccurrence import cooccurrence_counts, dygformer_sequences, patch
from timerepro.graphs.neighbors import TemporalNeighbors

A, B, C = 1, 2, 3  # node ids of the example


def test_worked_example():
    # u's neighbours {a, b, a}, v's {b, b, a, c}: each entry gets [count in S_u, count in S_v]
    c_u, c_v = cooccurrence_counts(np.array([[A, B, A]]), np.array([[B, B, A, C]]))
    assert c_u[0].tolist() == [[2, 1], [1, 2], [2, 1]]
    assert c_v[0].tolist() == [[1, 2], [1, 2], [2, 1], [0, 1]]
    assert c_u.dtype == np.float32


def test_padding_counts_zero_and_rows_are_independent():
    src = np.array([[A, B, A, 0, 0], [C, C, 0, 0, 0]])
    dst = np.array([[B, 0, 0], [A, C, 0]])
    c_u, c_v = cooccurrence_counts(src, dst)
    assert c_u[0].tolist() == [[2, 0], [1, 1], [2, 0], [0, 0], [0, 0]]
    assert c_u[1].tolist() == [[2, 1], [2, 1], [0, 0], [0, 0], [0, 0]]  # row 0's A does not count here
    assert c_v[1].tolist() == [[0, 1], [2, 1], [0, 0]]


def per_row_reference(src_row, dst_row):
    """DyGLib's counting, row by row: appearances in each sequence; padding id 0 -> [0, 0]."""
    s, d = list(src_row), list(dst_row)
    cu = [[s.count(x), d.count(x)] if x else [0, 0] for x in s]
    cv = [[s.count(x), d.count(x)] if x else [0, 0] for x in d]
    return cu, cv


def test_vectorised_counts_equal_row_by_row_reference():
    rng = np.random.default_rng(0)
    src = rng.integers(0, 7, (50, 9))
    dst = rng.integers(0, 7, (50, 4))
    c_u, c_v = cooccurrence_counts(src, dst)
    for b in range(50):
        cu, cv = per_row_reference(src[b], dst[b])
        assert c_u[b].tolist() == cu and c_v[b].tolist() == cv


def test_dygformer_sequence_layout():
    # node 1's history: e1 (t1), e2 (t2), e4 (t3), e5 (t5); node 4 none
    g = TemporalNeighbors([1, 1, 2, 3, 1], [2, 3, 3, 1, 2], [1.0, 2.0, 2.0, 3.0, 5.0], [1, 2, 3, 4, 5], num_nodes=5)
    seq = dygformer_sequences(g, [1, 4], [5.0, 6.0], max_input_sequence_length=3, patch_size=2)
    # itself first (edge 0, query time), then the 2 most recent before t, right padding to a multiple of 2
    assert seq.neighbor_ids.tolist() == [[1, 3, 3, 0], [4, 0, 0, 0]]
    assert seq.edge_ids.tolist() == [[0, 2, 4, 0], [0, 0, 0, 0]]
    assert seq.times.tolist() == [[5.0, 2.0, 3.0, 0.0], [6.0, 0.0, 0.0, 0.0]]
    assert seq.lengths.tolist() == [3, 1]
    long = dygformer_sequences(g, [1], [9.0], max_input_sequence_length=10, patch_size=1)
    assert long.edge_ids.tolist() == [[0, 1, 2, 4, 5]]
    # co-occurrence on the sequences counts the nodes themselves, as DyGLib does
    src_seq = dygformer_sequences(g, [1], [9.0], 10)
    dst_seq = dygformer_sequences(g, [3], [9.0], 10)  # [3, 1, 2, 1]
    c_u, c_v = cooccurrence_counts(src_seq.neighbor_ids, dst_seq.neighbor_ids)
    assert c_u[0].tolist() == [[1, 2], [2, 1], [2, 1], [2, 1], [2, 1]]  # [1, 2, 3, 3, 2] vs [3, 1, 2, 1]
    assert c_v[0].tolist() == [[2, 1], [1, 2], [2, 1], [1, 2]]


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_patch_shapes_and_content(backend):
    x = np.arange(2 * 6 * 3, dtype=np.float32).reshape(2, 6, 3)
    t = x if backend == "numpy" else torch.from_numpy(x)
    p = patch(t, 2)
    assert tuple(p.shape) == (2, 3, 6)
    p = np.asarray(p)
    # patch j = positions 2j and 2j+1 concatenated
    assert p[1, 2].tolist() == x[1, 4].tolist() + x[1, 5].tolist()
    assert np.asarray(patch(t, 1)).tolist() == x.tolist()
    # L not a multiple of P: zero rows on the right (DyGLib's layout) or on the left
    r = np.asarray(patch(t, 4))
    assert r.shape == (2, 2, 12)
    assert r[0, 1].tolist() == x[0, 4].tolist() + x[0, 5].tolist() + [0.0] * 6
    left = np.asarray(patch(t, 4, side="left"))
    assert left[0, 0].tolist() == [0.0] * 6 + x[0, 0].tolist() + x[0, 1].tolist()
    assert left[0, 1].tolist() == x[0, 2:6].ravel().tolist()
    with pytest.raises(ValueError):
        patch(t, 0)
