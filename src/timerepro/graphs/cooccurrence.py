"""DyGFormer's inputs: its sequence layout, neighbour co-occurrence counts and patching.

Neighbour co-occurrence (DyGFormer paper, section 4.1; linear_time Appendix A.2): for a pair (u, v)
with sequences S_u and S_v, every entry w of S_u gets [count of w in S_u, count of w in S_v] and every
entry of S_v gets [count in S_u, count in S_v] (the first column always counts in u's sequence).
Padding (id 0) gets [0, 0]. DyGLib computes this with one `np.unique` and a dictionary per row
(`NeighborCooccurrenceEncoder.count_nodes_appearances`); here it is vectorised over the batch.

Sequence layout (DyGLib `DyGFormer.pad_sequences`): row b is [u_b itself (edge 0, time t_b), then its
`max_input_sequence_length - 1` most recent interactions strictly before t_b, oldest first, then 0s],
the width rounded up to a multiple of the patch size. Padding is on the RIGHT.

Patching (DyGLib `DyGFormer.get_patches`): (B, L, d) -> (B, L / P, P * d), patch j holding
positions jP .. jP + P - 1 concatenated.
"""

from __future__ import annotations

import numpy as np

from timerepro.graphs.neighbors import History, TemporalNeighbors


def cooccurrence_counts(src_ids, dst_ids) -> tuple[np.ndarray, np.ndarray]:
    """src_ids (B, Ls), dst_ids (B, Ld) padded with 0 -> (B, Ls, 2), (B, Ld, 2) float32 counts
    [appearances in the source row, appearances in the destination row]."""
    src = np.asarray(src_ids, dtype=np.int64)
    dst = np.asarray(dst_ids, dtype=np.int64)
    if src.ndim != 2 or dst.ndim != 2 or src.shape[0] != dst.shape[0]:
        raise ValueError(f"expected (B, Ls) and (B, Ld) arrays, got {src.shape} and {dst.shape}")
    batch = src.shape[0]
    width = np.int64(max(src.max(initial=0), dst.max(initial=0)) + 1)
    rows = np.arange(batch, dtype=np.int64)[:, None]
    # (B, L) codes row * width + id: one id space per row
    src_codes = rows * width + src
    dst_codes = rows * width + dst

    def count_in(codes: np.ndarray, keys: np.ndarray, counts: np.ndarray) -> np.ndarray:
        if len(keys) == 0:
            return np.zeros(codes.shape, dtype=np.int64)
        pos = np.searchsorted(keys, codes)
        pos = np.minimum(pos, len(keys) - 1)
        return np.where(keys[pos] == codes, counts[pos], 0)

    src_keys, src_counts = np.unique(src_codes, return_counts=True)
    dst_keys, dst_counts = np.unique(dst_codes, return_counts=True)
    # (B, L, 2): [count in source row, count in destination row]
    src_out = np.stack([count_in(src_codes, src_keys, src_counts), count_in(src_codes, dst_keys, dst_counts)], axis=-1)
    dst_out = np.stack([count_in(dst_codes, src_keys, src_counts), count_in(dst_codes, dst_keys, dst_counts)], axis=-1)
    src_out[src == 0] = 0
    dst_out[dst == 0] = 0
    return src_out.astype(np.float32), dst_out.astype(np.float32)


def dygformer_sequences(neighbors: TemporalNeighbors, nodes, times, max_input_sequence_length: int,
                        patch_size: int = 1) -> History:
    """DyGLib's padded DyGFormer input: (B, L) ids, edge ids, times with the node itself first.

    L = (longest kept history + 1) rounded up to a multiple of `patch_size`; `lengths` counts the
    node itself plus its kept history."""
    if max_input_sequence_length < 2:
        raise ValueError("max_input_sequence_length must be at least 2 (the node itself plus one neighbour)")
    if patch_size <= 0:
        raise ValueError("patch_size must be positive")
    nodes = np.asarray(nodes, dtype=np.int64)
    times = np.asarray(times, dtype=np.float64)
    hist = neighbors.history(nodes, times, max_input_sequence_length - 1)
    width = hist.neighbor_ids.shape[1] + 1
    width += (-width) % patch_size
    batch = len(nodes)
    ids = np.zeros((batch, width), dtype=np.int64)
    eids = np.zeros((batch, width), dtype=np.int64)
    ts = np.zeros((batch, width), dtype=hist.times.dtype)
    ids[:, 0], ts[:, 0] = nodes, times
    kept = hist.neighbor_ids.shape[1]
    ids[:, 1:kept + 1] = hist.neighbor_ids
    eids[:, 1:kept + 1] = hist.edge_ids
    ts[:, 1:kept + 1] = hist.times
    return History(ids, eids, ts, hist.lengths + 1)


def patch(seq_features, patch_size: int, side: str = "right"):
    """(B, L, d) -> (B, ceil(L / P), P * d): consecutive positions concatenated into patches.

    When L is not a multiple of P, zero rows are added on `side` first ("right" is DyGLib's layout,
    whose sequences are right-padded; "left" keeps the most recent positions in full patches at the
    end). Works on numpy arrays and torch tensors alike."""
    if patch_size <= 0:
        raise ValueError("patch_size must be positive")
    if side not in ("right", "left"):
        raise ValueError("side must be 'right' or 'left'")
    if seq_features.ndim != 3:
        raise ValueError(f"expected (B, L, d), got shape {tuple(seq_features.shape)}")
    batch, length, dim = seq_features.shape
    extra = (-length) % patch_size
    if extra:
        widths = (extra, 0) if side == "left" else (0, extra)
        if isinstance(seq_features, np.ndarray):
            seq_features = np.pad(seq_features, ((0, 0), widths, (0, 0)))
        else:  # torch.Tensor: F.pad lists the last dimension first
            import torch.nn.functional as F

            seq_features = F.pad(seq_features, (0, 0, *widths))
    # (B, L', d) -> (B, L' / P, P * d); row-major, so patch j = positions jP .. jP + P - 1
    return seq_features.reshape(batch, (length + extra) // patch_size, patch_size * dim)
