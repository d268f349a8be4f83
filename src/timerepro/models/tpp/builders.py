"""Builders of the project's own TPP models from a resolved run config (params/models.yaml `module:` entries)."""

from __future__ import annotations

from timerepro.models.tpp.hawkes_attention import HawkesAttention

# Table 4/5 and the THP ablation view as one config value: variant -> HawkesAttention options
HAWKES_VARIANTS: dict[str, dict] = {
    "original": {},
    "shared_phi": {"shared_phi": True},
    "positional_encoding": {"positional_encoding": True},
    "thp_view": {"kernel": "constant", "positional_encoding": True},  # phi == 1 with PE (the paper's THP view)
}


def hawkes_attention(config: dict, num_event_types: int) -> HawkesAttention:
    """Hawkes Attention with Table 7's structure and Table 8's per-dataset values read from `config`."""
    variant = config["variant"]
    if variant not in HAWKES_VARIANTS:
        raise ValueError(f"unknown hawkes_attention variant {variant!r}; known: {sorted(HAWKES_VARIANTS)}")
    d_rnn = config["d_rnn"]  # null: Table 8's "NA"
    return HawkesAttention(
        num_event_types,
        d_model=int(config["d_model"]), d_inner=int(config["d_inner"]), d_k=int(config["d_k"]),
        d_v=int(config["d_v"]), num_layers=int(config["num_layers"]), num_heads=int(config["num_heads"]),
        phi_width=int(config["phi_width"]), phi_depth=int(config["phi_depth"]), dropout=float(config["dropout"]),
        d_rnn=int(d_rnn) if d_rnn else None, time_scale=float(config["time_scale"]),
        softplus=config.get("softplus", "formula"),  # absent = the paper's formula (not a default: run ids)
        **HAWKES_VARIANTS[variant])
