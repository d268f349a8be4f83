"""Batches of event sequences padded as EasyTPP's EventTokenizer pads them.

Right padding to the longest sequence of the batch; time_seqs, time_delta_seqs and type_seqs are all
padded with pad_token_id = K (EasyTPP pads the float time fields with the same id); seq_non_pad_mask
[B, L] is True on real events; attention_mask [B, L, L] is True where query j may NOT see key k
(k > j, or k is padding).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Iterator, Sequence

import numpy as np
import torch

from timerepro.data.tpp import EventSequences


@dataclass
class Batch:
    time_seqs: torch.Tensor  # [B, L] float32, time since start
    time_delta_seqs: torch.Tensor  # [B, L] float32, time since the previous event (first = 0)
    type_seqs: torch.Tensor  # [B, L] int64, pad = K
    seq_non_pad_mask: torch.Tensor  # [B, L] bool
    attention_mask: torch.Tensor  # [B, L, L] bool, True = masked

    def to(self, device) -> "Batch":
        return Batch(**{f.name: getattr(self, f.name).to(device) for f in fields(self)})

    def as_dict(self) -> dict[str, torch.Tensor]:
        """EasyTPP's batch keys, e.g. for `model.loglike_loss(**batch.as_dict())` of an EasyTPP model."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def make_attention_mask(type_seqs: np.ndarray, pad_token_id: int) -> np.ndarray:
    """EasyTPP's make_attn_mask_for_pad_sequence: subsequent (k > j) | key is padding. [B, L] -> [B, L, L]."""
    B, L = type_seqs.shape
    key_pad = (type_seqs == pad_token_id)[:, None, :]  # [B, 1, L]
    subsequent = np.triu(np.ones((L, L), dtype=bool), k=1)[None]  # [1, L, L]
    return subsequent | key_pad


def collate(seqs: Sequence[dict], pad_token_id: int) -> Batch:
    """Pad sequences (dicts with time_since_start, time_since_last_event, type_event) into one Batch."""
    if not seqs:
        raise ValueError("cannot collate an empty list of sequences")
    lens = np.array([len(s["type_event"]) for s in seqs])
    B, L = len(seqs), int(lens.max())
    times = np.full((B, L), float(pad_token_id), dtype=np.float32)
    dts = np.full((B, L), float(pad_token_id), dtype=np.float32)
    types = np.full((B, L), pad_token_id, dtype=np.int64)
    for i, s in enumerate(seqs):
        n = lens[i]
        times[i, :n] = s["time_since_start"]
        dts[i, :n] = s["time_since_last_event"]
        types[i, :n] = s["type_event"]
    non_pad = np.arange(L)[None, :] < lens[:, None]  # EasyTPP: from the lengths, not from the types
    return Batch(torch.from_numpy(times), torch.from_numpy(dts), torch.from_numpy(types),
                 torch.from_numpy(non_pad), torch.from_numpy(make_attention_mask(types, pad_token_id)))


def batch_order(n: int, shuffle: bool = False, generator: torch.Generator | None = None) -> list[int]:
    """The sequence indices of one pass: stored order, or a random order drawn from `generator`."""
    return torch.randperm(n, generator=generator).tolist() if shuffle else list(range(n))


def batch_of(seqs: EventSequences, indices: Sequence[int], pad_token_id: int) -> Batch:
    """The sequences `indices` of a split, padded into one Batch."""
    return collate([seqs.sequence(j) for j in indices], pad_token_id)


def iterate_batches(seqs: EventSequences, pad_token_id: int, batch_size: int, *, shuffle: bool = False,
                    generator: torch.Generator | None = None) -> Iterator[Batch]:
    """Batches over one split in stored order, or in a random order drawn from `generator`."""
    order = batch_order(len(seqs), shuffle, generator)
    for i in range(0, len(order), batch_size):
        yield batch_of(seqs, order[i:i + batch_size], pad_token_id)
