"""Node and edge feature tables of the graph models: kept on the device at their stored width (float32) and read
zero-padded to the width the model is built for (DyGLib's 172), so a 1-wide edge table never becomes E x 172.
The rows read are exactly those of the padded table (the same float32 values, zeros after them)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from timerepro.data.ctdg import PaddedFeatures


class FeatureTable(nn.Module):
    """A (rows, width) table read by row: `table[ids]` -> (*ids.shape, width); `shape` and `device` as a tensor's."""

    def __init__(self, table: PaddedFeatures | np.ndarray):
        super().__init__()
        values, width = (table.values, table.width) if isinstance(table, PaddedFeatures) else \
            (np.asarray(table), np.asarray(table).shape[1])
        # not in checkpoints: the data, not the model (as the padded buffers were)
        self.register_buffer("values", torch.as_tensor(values, dtype=torch.float32), persistent=False)
        self.width = int(width)
        self.all_zero = not bool(np.asarray(values).any())

    @property
    def shape(self) -> torch.Size:
        return torch.Size((self.values.shape[0], self.width))

    @property
    def device(self) -> torch.device:
        return self.values.device

    def __getitem__(self, index) -> torch.Tensor:
        rows = self.values[index]  # (*index.shape, d)
        pad = self.width - rows.shape[-1]
        return rows if pad == 0 else F.pad(rows, (0, pad))  # (*index.shape, width): zeros after the stored columns
