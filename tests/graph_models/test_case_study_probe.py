"""The case-study probe (dyg_mamba Figure 6 B-D): u's positions, the node ids each holds (what C24 needs to find
the target) and v's pooled state, read from DyG-Mamba (both layouts) and DyGFormer (patched)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from timerepro.graphs.neighbors import TemporalNeighbors
from timerepro.tasks.probes.case_study import hidden_states

from . import test_dyg_mamba as tdm
from . import test_dygformer as tdf


@pytest.mark.parametrize("patch_size", [1, 3])
def test_dygformer_positions_are_its_patches_with_their_ids(patch_size):
    model = tdf.make("dygformer", patch_size=patch_size, time_channel_dim=2)
    model.set_graph(tdf.graph())
    layers, mask, target, ids = hidden_states("dygformer", model, tdf.SRC, tdf.DST, tdf.T)
    seq = model.sequences(tdf.SRC, tdf.T).neighbor_ids  # (B, L)
    n = seq.shape[1] // patch_size
    assert ids.shape == (4, n, patch_size) and tuple(mask.shape) == (4, n)
    assert all(tuple(h.shape[:2]) == (4, n) for h in layers)  # a mask entry per state (P > 1 broke it)
    np.testing.assert_array_equal(ids.reshape(4, -1), seq)
    np.testing.assert_array_equal(mask.numpy(), (ids != 0).any(axis=-1))
    assert ids[:, 0, 0].tolist() == tdf.SRC.tolist()  # the node itself first
    # v's state as the model pools it: the model's own embedding of v through its output layer
    torch.testing.assert_close(model.output(target), model.pair_embeddings(tdf.SRC, tdf.DST, tdf.T)[1],
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("layout", ["node_first", "node_last"])
def test_dyg_mamba_positions_are_its_sequence_with_the_node_itself(layout):
    src, dst, ts, eids, node, edge = tdm.toy()
    model = tdm.make(node, edge, layout=layout)
    model.set_graph(TemporalNeighbors(src, dst, ts, eids, num_nodes=tdm.N_NODES + 1))
    u, v, t = np.array([1, 2, 3]), np.array([4, 5, 6]), np.array([20.0, 30.0, 39.0])
    layers, mask, target, ids = hidden_states("dyg_mamba", model, u, v, t)
    seq = model.sequences(u, t)
    assert ids.shape == (*seq.neighbor_ids.shape, 1) and tuple(mask.shape) == seq.neighbor_ids.shape
    np.testing.assert_array_equal(mask.numpy(), seq.valid)
    node_col = 0 if layout == "node_first" else -1
    assert ids[:, node_col, 0].tolist() == u.tolist()
    for b in range(3):  # u's other positions: its L - 1 latest interactions before t, oldest first
        entries = sorted((ts[i], 2 * i + k, nb) for i in range(len(src)) if ts[i] < t[b]
                         for k, (own, nb) in enumerate(((src[i], dst[i]), (dst[i], src[i]))) if own == u[b])
        partners = [nb for *_, nb in entries][-(model.max_input_sequence_length - 1):]
        held = ids[b, :, 0][mask[b].numpy()]
        rest = held[1:] if layout == "node_first" else held[:-1]
        assert partners and rest.tolist() == [int(x) for x in partners]
