"""The effective config: resolved once (tasks/effective.py) from the declared config, which alone the run id hashes;
what the model builders construct is what it says, so a reader of the record (the report's settings tables) reads
the values the run used."""

from __future__ import annotations

import pytest

from timerepro import registry
from timerepro.tasks.registry import effective_config

RESOLVING_TASKS = {"link_prediction", "node_classification", "sequence_cost"}


@pytest.fixture(scope="module")
def runs():
    reg = registry.load()
    return [run for scale in ("smoke", "offline") for run in reg.runs(scale)]


def test_run_ids_hash_the_declared_config_and_resolving_is_idempotent(runs):
    differ = 0
    for run in runs:
        declared = run.config
        assert run.run_id == registry.run_id({k: v for k, v in declared.items() if k != "run_id"})
        eff = effective_config(declared)
        if declared["task"] not in RESOLVING_TASKS:
            assert eff is declared  # nothing to resolve: the record's effective config is the declared one
            continue
        assert eff["run_id"] == run.run_id and effective_config(eff) == eff
        differ += eff != declared
    assert differ > 100  # dataset defaults, history lengths and variants do change what graph runs run with


def test_the_history_length_per_dataset_values_and_variants_land_in_the_effective_config():
    base = {"task": "link_prediction", "model": "dyg_mamba", "dataset": "uslegis", "run_id": "x",
            "dataset_defaults": {"default": {"max_input_sequence_length": 32}, "uslegis": {"max_input_sequence_length": 272}},
            "variants": {"dyg_mamba": {}, "wo_time_span": {"time_span": False}}, "time_span": True}
    assert effective_config(base)["max_input_sequence_length"] == 272  # Table 8's value for US Legis
    assert effective_config({**base, "sequence_length": 64})["max_input_sequence_length"] == 64  # one length for all
    assert effective_config({**base, "variant": "wo_time_span"})["time_span"] is False  # the variant's switch wins
    assert effective_config({**base, "per_dataset": {"uslegis": {"dropout": 0.2}}, "dropout": 0.1})["dropout"] == 0.2
    with pytest.raises(KeyError, match="unknown variant"):
        effective_config({**base, "variant": "w/o everything"})


def test_the_builders_construct_what_the_effective_config_says(runs):
    """DyG-Mamba's and DyGFormer's constructor arguments equal the effective config's values (Tables 7-8 read them)."""
    from timerepro.models.graph.dyg_mamba import SWITCHES, dyg_mamba_hparams
    from timerepro.models.graph.dygformer import dygformer_hparams

    seen = set()
    for run in runs:
        c = run.config
        if c["task"] != "link_prediction" or c.get("model") not in ("dyg_mamba", "dygformer"):
            continue
        eff = effective_config(c)
        if c["model"] == "dyg_mamba":
            hp = dyg_mamba_hparams(eff)
            assert hp["max_input_sequence_length"] == eff["max_input_sequence_length"]
            assert hp["time_encoder"] == eff["encoder"] and {k: hp[k] for k in SWITCHES} == {k: eff[k] for k in SWITCHES}
        else:
            hp = dygformer_hparams(eff)
            assert (hp["max_input_sequence_length"], hp["patch_size"], hp["dropout"]) == \
                (eff["max_input_sequence_length"], eff["patch_size"], eff["dropout"])
        seen.add((c["model"], c.get("variant"), c["dataset"]))
    assert len(seen) > 5
