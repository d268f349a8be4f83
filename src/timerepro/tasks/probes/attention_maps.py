"""Probe `attention_maps`: last-layer attention of DyGFormer-separate and DyGDecoder for linear_time Figures 7-12.

For K sampled test edges (u, v, t), each side's sequence goes through the transformer alone (the
two variants never mix the sides), and the last layer's attention, averaged over heads as
`nn.MultiheadAttention` returns it (what the authors' analysis reads), is kept with the time
differences it connects: t - t_q of the query patch and t - t_k of the key patch. A patch's time is
the latest time among its real entries (the authors' `max` over the patch); padding patches and the
decoder's BOS have no time (NaN).

`record_attention` returns plain numpy arrays per side; `attention_records` flattens them into
columns (one row per query/key pair of real patches); `average_by_time_pair` averages the scores
per distinct (t - t_q, t - t_k) pair, as the paper does for US Legis. The probe (`record_attention: k`) writes
the columns of k sampled test edges as attention_records.npz.
"""

from __future__ import annotations

import io

import numpy as np
import torch

from timerepro.io import atomic_write_bytes

SIDES = ("src", "dst")
RECORDABLE = ("dygformer_separate", "dygdecoder")


def sample_edges(indices, k: int, seed: int = 0) -> np.ndarray:
    """K edge indices drawn without replacement from `indices` (e.g. the test edges), in time order."""
    indices = np.asarray(indices)
    k = min(int(k), len(indices))
    return np.sort(np.random.default_rng(seed).choice(indices, size=k, replace=False))


def patch_times(ids: np.ndarray, times: np.ndarray, patch_size: int) -> np.ndarray:
    """(B, L) ids and times -> (B, L/P) latest real time per patch; NaN for an all-padding patch."""
    batch, length = ids.shape
    t = np.where(ids != 0, times.astype(np.float64), -np.inf)  # padding cannot be the max
    # (B, L) -> (B, L/P, P) -> max over the patch -> (B, L/P)
    latest = t.reshape(batch, length // patch_size, patch_size).max(axis=-1)
    return np.where(np.isfinite(latest), latest, np.nan)


@torch.no_grad()
def record_attention(model, src, dst, times) -> dict[str, dict[str, np.ndarray]]:
    """Last-layer attention of each side of the edges (src, dst, times) of a DyGFormer `model`, in eval mode.

    Returns {"src": side, "dst": side}, each side a dict of arrays (K edges, Lq = Lk positions,
    the decoder's first position being its BOS):
      attention (K, Lq, Lk) head-averaged weights, rows sum to 1 (causal rows are zero after the query);
      dt        (K, Lq) t - (time of the patch), NaN for padding patches and the BOS;
      real      (K, Lq) bool, the patch holds at least one real entry (not padding, not BOS);
      t         (K,) the edges' times.
    """
    if model.variant not in RECORDABLE:
        raise ValueError(f"attention recording needs a separate-sequence variant {RECORDABLE}, got {model.variant!r}")
    was_training = model.training
    model.eval()
    times = np.asarray(times, dtype=np.float64)
    try:
        encoded = model.encode_inputs(np.asarray(src), np.asarray(dst), times)
        out = {}
        for side, enc in zip(SIDES, encoded):
            _, weights = model.side_outputs(enc, need_weights=True)  # (K, Lq, Lk)
            ptimes = patch_times(enc.seq.neighbor_ids, enc.seq.times, model.patch_size)  # (K, Lp)
            if model.causal:  # the BOS comes first and has no time
                ptimes = np.concatenate([np.full((len(times), 1), np.nan), ptimes], axis=1)
            out[side] = {"attention": weights.cpu().numpy().astype(np.float64), "dt": times[:, None] - ptimes,
                         "real": ~np.isnan(ptimes), "t": times.copy()}
        return out
    finally:
        model.train(was_training)


def attention_records(recorded: dict[str, dict[str, np.ndarray]], causal: bool) -> dict[str, np.ndarray]:
    """Columns (one row per query/key pair of real patches, keys after the query left out when
    `causal`): edge, side (0 src, 1 dst), query, key (positions), dt_query (t - t_q), dt_key (t - t_k), score."""
    cols: dict[str, list] = {k: [] for k in ("edge", "side", "query", "key", "dt_query", "dt_key", "score")}
    for s, side in enumerate(SIDES):
        rec = recorded[side]
        attn, dt, real = rec["attention"], rec["dt"], rec["real"]
        # (K, Lq, Lk) pairs of real patches; under the causal mask only keys at or before the query
        keep = real[:, :, None] & real[:, None, :]
        if causal:
            keep &= np.tril(np.ones(attn.shape[1:], dtype=bool))[None]
        e, q, k = np.nonzero(keep)
        cols["edge"].append(e)
        cols["side"].append(np.full(len(e), s))
        cols["query"].append(q)
        cols["key"].append(k)
        cols["dt_query"].append(dt[e, q])
        cols["dt_key"].append(dt[e, k])
        cols["score"].append(attn[e, q, k])
    return {k: np.concatenate(v) for k, v in cols.items()}


def average_by_time_pair(records: dict[str, np.ndarray], side: int | None = None) -> dict[str, np.ndarray]:
    """Mean score per distinct (dt_query, dt_key) pair (US Legis: 12 congresses, so few pairs):
    columns dt_query, dt_key, score (mean), count; optionally one side only (0 src, 1 dst)."""
    keep = np.ones(len(records["score"]), dtype=bool) if side is None else records["side"] == side
    pairs = np.stack([records["dt_query"][keep], records["dt_key"][keep]], axis=1)  # (R, 2)
    if len(pairs) == 0:
        return {"dt_query": np.zeros(0), "dt_key": np.zeros(0), "score": np.zeros(0), "count": np.zeros(0, int)}
    unique, inverse, counts = np.unique(pairs, axis=0, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse.ravel(), weights=records["score"][keep], minlength=len(unique))
    return {"dt_query": unique[:, 0], "dt_key": unique[:, 1], "score": sums / counts, "count": counts}


def wants(config: dict) -> bool:
    """`record_attention: k` with k > 0 (0: not a task default, so no run id changed) on a recordable variant."""
    return int(config.get("record_attention", 0)) > 0 and config["model"] in RECORDABLE


def probe(trained, config: dict, ctx) -> dict:
    """linear_time Figures 7-12: last-layer attention of k sampled test edges, one row per (query, key) pair of
    real patches, written as attention_records.npz (columns of `attention_records`); no metric."""
    data, backbone = trained.data, trained.model.backbone
    idx = sample_edges(np.flatnonzero(trained.split.test), int(config["record_attention"]), seed=int(config["seed"]))
    trained.start_pass()
    recorded = record_attention(backbone, data.src[idx], data.dst[idx], data.ts[idx])
    columns = attention_records(recorded, causal=backbone.causal)
    buf = io.BytesIO()
    np.savez_compressed(buf, **columns)
    atomic_write_bytes(ctx.dir / "attention_records.npz", buf.getvalue())
    return {}
