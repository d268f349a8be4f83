"""The optimizer and the forward passes' precision of a link-prediction run (and of the heads that reuse them)."""

from __future__ import annotations

import torch
from torch import nn

OPTIMIZERS = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}
AMP = {"none": None, "bfloat16": torch.bfloat16}


def make_optimizer(config: dict, params) -> torch.optim.Optimizer:
    """`optimizer` (adam: DyGLib; adamw: swinit 6.1) with `lr` and `weight_decay` (0 unless set), as one fused
    kernel over all parameters where torch has one (the same update, without a dozen small operations per
    parameter tensor)."""
    name = config.get("optimizer", "adam")
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; known: {sorted(OPTIMIZERS)}")
    params = list(params)
    fused = bool(params) and params[0].device.type in ("cpu", "cuda")
    return OPTIMIZERS[name](params, lr=float(config["lr"]), weight_decay=float(config.get("weight_decay", 0.0)),
                            fused=fused)


def adam(model: nn.Module, lr: float) -> torch.optim.Optimizer:
    """DyGLib's optimizer, Adam(lr), fused (`make_optimizer` with the defaults)."""
    return make_optimizer({"lr": lr}, model.parameters())


def autocast(amp: str, device: torch.device):
    """The forward passes' autocast context for the `amp` setting ("none": float32, a no-op)."""
    if amp not in AMP:
        raise ValueError(f"unknown amp setting {amp!r}; known: {sorted(AMP)}")
    return torch.autocast(device.type, dtype=AMP[amp], enabled=AMP[amp] is not None)
