"""Table 5 and Figures 5, 11: DyG-Mamba against its named ablation variants (A12)."""

from __future__ import annotations

from collections import defaultdict

from timerepro import metric_keys as mk

from ..aggregate import aggregator
from ..rows import cell_row, over_runs
from .common import ABLATION_VARIANTS, TABLE5_VARIANTS, VARIANT_LABELS, dataset_of, variant_of


def _variant_groups(records: list[dict], variants) -> dict[tuple[str, str], list[dict]]:
    groups = defaultdict(list)
    for r in records:
        c = r["config"]
        if c["model"] == "dyg_mamba" and variant_of(c) in variants:
            groups[(variant_of(c), dataset_of(c))].append(r)
    return groups


@aggregator("dm_table5")
def dm_table5(records: list[dict]) -> list[dict]:
    """Table 5: transductive AP (random negatives) of DyG-Mamba and its four time ablations (A12)."""
    rows = []
    for (variant, ds), rs in sorted(_variant_groups(records, TABLE5_VARIANTS).items()):
        cell = over_runs(rs, mk.link_prediction("test", "transductive", "random", "ap"))
        if cell:
            rows.append(cell_row("rnd", ds, VARIANT_LABELS[variant], "AP_transductive_random", cell))
    return rows


@aggregator("dm_ablation")
def dm_ablation(records: list[dict]) -> list[dict]:
    """Figures 5 and 11: test AP (random negatives) of DyG-Mamba and w/o Time-span / Selective / Cross-attn,
    transductive and inductive (A12)."""
    rows = []
    for (variant, ds), rs in sorted(_variant_groups(records, ABLATION_VARIANTS).items()):
        for setting in ("transductive", "inductive"):
            cell = over_runs(rs, mk.link_prediction("test", setting, "random", "ap"))
            if cell:
                rows.append(cell_row(setting, VARIANT_LABELS[variant], ds, "AP_random", cell))
    return rows
