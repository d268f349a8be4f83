"""The graph a link-prediction run reads (and node classification, on the same data): the dataset from its
lock entry or the scale's labelled stand-in, with what the run record says about it."""

from __future__ import annotations

from timerepro.data.ctdg import CTDGData, load_processed
from timerepro.data.manifest import data_identity
from timerepro.data.prepare import prepare


def load_data(config: dict) -> tuple[CTDGData, dict]:
    """(the processed graph of `config["dataset"]` or of its `standin`, the record's `data` entry)."""
    standin = config.get("standin")
    folder = prepare(config["dataset"], standin=standin, require_pinned=standin is None, progress=False)
    data = load_processed(folder)
    return data, data_identity(config["dataset"], standin, data.manifest)
