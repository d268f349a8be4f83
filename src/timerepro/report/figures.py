"""Figure renderers by name (engine: no paper here) and the style every figure shares.

A renderer is a function of a paper module marked `@renderer("name")` (params/<paper>.yaml `render:`),
`(df, meta) -> matplotlib Figure`, where df is the artifact's aggregated rows and meta (`meta_of`) holds `scale`,
`data` (the label) and the data's kind and words. Every figure uses `style(ax)` on its axes, `stamp(fig, meta)`
(reproduced, scale, kind of data, data: render.py stamps a figure its renderer did not)
and the Okabe-Ito colours of PALETTE / ENCODER_COLORS; `save` writes PNG and PDF atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from timerepro.catalog import Catalog  # noqa: E402
from timerepro.names import ENCODER_LABELS  # noqa: E402

from . import badges, families  # noqa: E402

RENDERERS: Catalog[Callable[[pd.DataFrame, dict], plt.Figure]] = Catalog("figure renderer", fill=lambda: families.fill(RENDERERS))
renderer = RENDERERS.register  # @renderer("name") on a function of a module listed in report_catalog.py

# Okabe-Ito colours: distinguishable with every common colour-vision deficiency.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
# one colour per time encoder in every figure, keyed by its display name (names.ENCODER_LABELS)
ENCODER_COLORS = {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(ENCODER_LABELS.values())}


def style(ax) -> None:
    """The project's axes: no top/right spines, a light grid behind the data."""
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(True, color="#e5e5e5", linewidth=0.8)
    ax.set_axisbelow(True)


def meta_of(rows: pd.DataFrame, scale: str) -> dict:
    """What a renderer's `meta` and a figure's caption read from the artifact's aggregated rows."""
    return {"scale": scale, "data": "; ".join(sorted(set(rows["data"]))),
            "data_kind": "; ".join(sorted(set(rows["data_kind"]))), "data_words": badges.data_words(rows)}


def caption(meta: dict) -> str:
    """The words under every figure: reproduced, at which scale, on which kind of data (real, real cut, stand-in)
    and which data."""
    words = meta.get("data_words") or meta.get("data_kind", "")
    warn = " (proves the pipeline, not the paper)" if "stand-in" in words else ""
    return f"reproduced · scale={meta['scale']} · {words}{warn} · {meta['data']}"


def stamp(fig, meta: dict) -> None:
    """`caption(meta)` under the figure, once (render.py stamps any figure its renderer left unstamped)."""
    if getattr(fig, "_timerepro_stamp", None):
        return
    text = caption(meta)
    fig.text(0.99, -0.04, text, ha="right", va="bottom", fontsize=7,
             color="#a4161a" if "stand-in" in text else "#666666")
    fig._timerepro_stamp = text




def save(fig: plt.Figure, stem: Path) -> list[Path]:
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for ext in ("png", "pdf"):
        tmp = stem.with_name(f".{stem.name}.tmp.{ext}")
        fig.savefig(tmp, dpi=160 if ext == "png" else None, bbox_inches="tight")
        final = stem.with_suffix(f".{ext}")
        tmp.replace(final)
        out.append(final)
    plt.close(fig)
    return out
