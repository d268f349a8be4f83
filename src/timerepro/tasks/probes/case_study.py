"""Probe `case_study`, dyg_mamba Figure 6 (B-D): for chosen test edges (u, v, t), the cosine similarity between
the target node's encoding (v's pooled state, as the model pools it) and each hidden state of u's last layer, and
the similarity matrix between u's last-layer and second-last-layer hidden states, for DyG-Mamba and DyGFormer.

Edges: the paper's pair (1181 -> 1713 in section 5.2, (1181, 1173) in App. D.4; A10) when present in the
test split, else the test edges whose source has the longest history (ties: earliest). Written as
case_study.npz in the run folder: per edge j, `cos_target_j` (n,), `sim_layers_j` (n, n) and `u_neighbours_j`
(n, P): the node ids each of u's n real positions holds (P per position: DyGFormer's patch size, 1 for
DyG-Mamba), so Figure 6 (B) can mark the positions that hold the target (claim C24). Positions in sequence
order: the node itself, then its history oldest first (DyG-Mamba's `node_last` layout: the node last).
"""

from __future__ import annotations

import io

import numpy as np
import torch
import torch.nn.functional as F

from timerepro.io import atomic_write_bytes

PAPER_PAIRS = ((1181, 1713), (1181, 1173))


def choose_edges(data, split, graph, k: int) -> np.ndarray:
    """Indices of k test edges: the paper's pairs first (when they are test edges), then the longest histories."""
    test = np.flatnonzero(split.test)
    chosen = [i for a, b in PAPER_PAIRS for i in test[(data.src[test] == a) & (data.dst[test] == b)][:1]]
    history = graph.count_before(data.src[test], data.ts[test])
    order = test[np.lexsort((test, -history))]
    for i in order:
        if len(chosen) >= k:
            break
        if i not in chosen:
            chosen.append(int(i))
    return np.asarray(chosen[:k], dtype=np.int64)


def _dyg_mamba_states(backbone, src, dst, times):
    enc_u, enc_v = backbone.encode_pair(src, dst, times)
    _, h_v = backbone.readout(enc_u, enc_v)
    return enc_u.layers, enc_u.mask, h_v, enc_u.seq.neighbor_ids[:, :, None]  # ids (B, L, 1)


def _dygformer_states(backbone, src, dst, times):
    eu, ev = backbone.encode_inputs(src, dst, times)
    n_u = eu.patches.shape[1]
    x, layers = torch.cat([eu.patches, ev.patches], dim=1), []
    layers.append(x)
    for layer in backbone.layers:
        x, _ = layer(x)
        layers.append(x)
    ids_u = eu.seq.neighbor_ids
    # (B, L) -> (B, L/P, P): the ids of each patch (the sequence's width is a multiple of P)
    ids_u = ids_u.reshape(ids_u.shape[0], n_u, -1)
    mask_u = torch.from_numpy((ids_u != 0).any(axis=-1))  # (B, L/P) patches holding a real entry
    # v's pooled state as the model pools it: the mean over v's patches, padding included (DyGLib)
    return [h[:, :n_u] for h in layers], mask_u, layers[-1][:, n_u:].mean(dim=1), ids_u


# model name -> u's hidden states per layer (each (B, L, w)), u's real-position mask (B, L), v's pooled state (B, w)
# and the node ids of u's positions (B, L, P); read through the backbone's own methods, so this module imports no
# model class (nor its fingerprint)
HIDDEN_STATES = {"dyg_mamba": _dyg_mamba_states, "dygformer": _dygformer_states}


@torch.no_grad()
def hidden_states(model_name: str, backbone, src, dst, times) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor,
                                                                          np.ndarray]:
    """u's hidden states per layer (each (B, L, w)), u's real-position mask (B, L), v's pooled state (B, w) and
    the node ids of u's positions (B, L, P)."""
    if model_name not in HIDDEN_STATES:
        raise TypeError(f"no case study for model {model_name!r}; known: {sorted(HIDDEN_STATES)}")
    return HIDDEN_STATES[model_name](backbone, src, dst, times)


def wants(config: dict) -> bool:
    return int(config.get("case_study_edges", 0)) > 0


def probe(trained, config: dict, ctx) -> dict:
    """Write case_study.npz for the `case_study_edges` chosen test edges (see the module docstring); no metric."""
    data, split, graph, backbone = trained.data, trained.split, trained.graph, trained.model.backbone
    trained.start_pass()
    idx = choose_edges(data, split, graph, int(config["case_study_edges"]))
    arrays: dict[str, np.ndarray] = {"edges": idx, "src": data.src[idx], "dst": data.dst[idx], "ts": data.ts[idx]}
    for j, e in enumerate(idx):
        layers, mask, target, ids = hidden_states(config["model"], backbone, data.src[[e]], data.dst[[e]], data.ts[[e]])
        keep = mask[0].cpu().numpy().astype(bool)
        last, prev = layers[-1][0][keep], layers[-2][0][keep]  # (n, w) real positions
        arrays[f"cos_target_{j}"] = F.cosine_similarity(last, target[0].expand_as(last), dim=-1).cpu().numpy()
        arrays[f"sim_layers_{j}"] = F.cosine_similarity(last[:, None, :], prev[None, :, :], dim=-1).cpu().numpy()
        arrays[f"u_neighbours_{j}"] = np.asarray(ids[0][keep], dtype=np.int64)  # (n, P)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    atomic_write_bytes(ctx.dir / "case_study.npz", buf.getvalue())
    return {}
