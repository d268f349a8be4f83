"""Probe `case_study`, dyg_mamba Figure 6 (B-D): for chosen test edges (u, v, t), the cosine similarity between
the target node's encoding (v's pooled state) and each hidden state of u's last layer, and the similarity
matrix between u's last-layer and second-last-layer hidden states, for DyG-Mamba and DyGFormer.

Edges: the paper's pair (1181 -> 1713 in section 5.2, (1181, 1173) in App. D.4; A10) when present in the
test split, else the test edges whose source has the longest history (ties: earliest). Written as
case_study.npz in the run folder: per edge, `cos_target` (L,) and `sim_layers` (L, L) over u's real positions
in time order (oldest first; the node itself is the last position for DyG-Mamba, the first for DyGFormer).
"""

from __future__ import annotations

import io

import numpy as np
import torch
import torch.nn.functional as F

from timerepro.io import atomic_write_bytes
from timerepro.models.graph.dyg_mamba import masked_mean

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
    return enc_u.layers, enc_u.mask, h_v


def _dygformer_states(backbone, src, dst, times):
    eu, ev = backbone.encode_inputs(src, dst, times)
    n_u = eu.patches.shape[1]
    x, layers = torch.cat([eu.patches, ev.patches], dim=1), []
    layers.append(x)
    for layer in backbone.layers:
        x, _ = layer(x)
        layers.append(x)
    mask_u = torch.from_numpy(eu.seq.neighbor_ids != 0)
    mask_v = torch.from_numpy(ev.seq.neighbor_ids != 0)
    return [h[:, :n_u] for h in layers], mask_u, masked_mean(layers[-1][:, n_u:], mask_v)


# model name -> u's hidden states per layer (each (B, L, w)), u's real-position mask (B, L), v's pooled state (B, w);
# read through the backbone's own methods, so this module imports no model class (nor its fingerprint)
HIDDEN_STATES = {"dyg_mamba": _dyg_mamba_states, "dygformer": _dygformer_states}


@torch.no_grad()
def hidden_states(model_name: str, backbone, src, dst, times) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    """u's hidden states per layer (each (B, L, w)), u's real-position mask (B, L) and v's pooled state (B, w)."""
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
        layers, mask, target = hidden_states(config["model"], backbone, data.src[[e]], data.dst[[e]], data.ts[[e]])
        keep = mask[0].cpu().numpy().astype(bool)
        last, prev = layers[-1][0][keep], layers[-2][0][keep]  # (n, w) real positions
        arrays[f"cos_target_{j}"] = F.cosine_similarity(last, target[0].expand_as(last), dim=-1).cpu().numpy()
        arrays[f"sim_layers_{j}"] = F.cosine_similarity(last[:, None, :], prev[None, :, :], dim=-1).cpu().numpy()
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    atomic_write_bytes(ctx.dir / "case_study.npz", buf.getvalue())
    return {}
