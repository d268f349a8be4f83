"""Tables 7 and 8: DyG-Mamba's hyperparameters and sequence lengths as the runs used them."""

from __future__ import annotations

from collections import defaultdict

from ..aggregate import aggregator
from .common import OURS, dataset_of


# Table 7's rows: (column, the value in a run's effective settings)
TABLE7 = [("learning_rate", lambda c: c["lr"]), ("train_epochs", lambda c: c["max_epochs"]),
          ("optimizer", lambda c: "Adam"), ("dim_time_encoding_dT", lambda c: c["d_T"]),
          ("dim_cooccurrence_dC", lambda c: c["d_cooc"]), ("dim_aligned_encoding_d", lambda c: c["d_ch"]),
          ("dim_delta_t_encoder_4d", lambda c: c["d_ch"] * (2 + bool(c.get("time_encoding", True)) + bool(c.get("cooccurrence", True)))),
          ("dim_output_dout", lambda c: c["d_out"]), ("num_mamba_blocks", lambda c: c["num_blocks"]),
          ("dim_ssm_dssm", lambda c: c["d_state"]), ("mamba_expand_factor", lambda c: c["expand"]),
          ("num_cross_attention_layers", lambda c: int(c.get("cross_attention", "cross") == "cross"))]


def effective_settings(record: dict) -> dict:
    """The configuration a run's model was built with: the effective config its task resolved once and recorded
    (effective_config.json, records.read_effective_config); for a record made before runs recorded it, the same
    one resolution (tasks.registry.effective_config) applied to its declared config. Never re-derived here."""
    if record.get("effective_config") is not None:
        return record["effective_config"]
    from timerepro.tasks.registry import effective_config

    return effective_config(record["config"])


@aggregator("dm_table7")
def dm_table7(records: list[dict]) -> list[dict]:
    """Table 7: DyG-Mamba's hyperparameters as the runs used them (one column per value; several values: noted)."""
    rows = []
    for name, get in TABLE7:
        values = sorted({get(effective_settings(r)) for r in records}, key=str)
        value = values[0] if len(values) == 1 else None
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        note = f"value: {value}" if value is not None and not numeric else ("" if value is not None else f"runs differ: {values}")
        rows.append({"row_group": "config", "row": OURS, "column": name, "metric": "config",
                     "mean": float(value) if numeric else float("nan"), "std": 0.0, "n_runs": len(records),
                     "_records": records, "note": note})
    return rows


@aggregator("dm_table8")
def dm_table8(records: list[dict]) -> list[dict]:
    """Table 8: the sequence length DyG-Mamba ran with on each dataset."""
    groups = defaultdict(list)
    for r in records:
        groups[dataset_of(r["config"])].append(r)
    rows = []
    for ds, rs in sorted(groups.items()):
        lengths = {int(effective_settings(r)["max_input_sequence_length"]) for r in rs}
        rows.append({"row_group": "sequence_length", "row": ds, "column": OURS, "metric": "sequence_length",
                     "mean": float(max(lengths)), "std": 0.0, "n_runs": len(rs), "_records": rs,
                     "note": "" if len(lengths) == 1 else f"runs differ: {sorted(lengths)}"})
    return rows
