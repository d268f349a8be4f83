"""Run-time overrides of a graph-model config (dyg_mamba): DyGLib's per-dataset best configuration for a model
whose params/ defaults are global (`per_dataset`), and one history length for every model (Figures 3, 4, 7, 10:
"the same neighbour count for all models": `sequence_length`, or `sequence_length_by_dataset[<dataset>]`, set
on each model's own knob)."""

from __future__ import annotations

# model -> the config key that bounds how many past interactions of a node it reads (None: it reads none)
KNOB = {
    "tgat": "num_neighbors", "tgn": "num_neighbors", "cawn": "num_neighbors", "tcl": "num_neighbors",
    "graphmixer": "num_neighbors", "dyrep": "num_neighbors",
    "dygformer": "max_input_sequence_length", "dygformer_separate": "max_input_sequence_length",
    "dygdecoder": "max_input_sequence_length", "dyg_mamba": "max_input_sequence_length",
    "swinit_mlp": "num_neighbors", "swinit_gru": "num_neighbors",  # the stars of the last k interactions
    "edgebank": None, "jodie": None, "jodie_gru": None,  # JODIE reads no neighbours: its memory and time projection
}


def resolve(config: dict) -> dict:
    """The config with `per_dataset[<dataset>]` applied over it (those values win), then its history length
    written onto the model's knob; unchanged when neither is set. A sequence length L means L - 1 past
    interactions plus the node itself for the sequence models (DyGFormer, DyG-Mamba: max_input_sequence_length
    = L, as in Table 8) and L neighbours for the others."""
    dataset = str(config.get("dataset"))
    over = (config.get("per_dataset") or {}).get(dataset, {})
    if over:
        config = {**config, **over}
    length = config.get("sequence_length")
    if length is None:
        length = (config.get("sequence_length_by_dataset") or {}).get(dataset)
    if length is None:
        return config
    model = config.get("model")
    if model not in KNOB:
        raise KeyError(f"sequence_length: model {model!r} has no known history-length knob; known: {sorted(KNOB)}")
    knob = KNOB[model]
    return config if knob is None else {**config, knob: int(length)}
