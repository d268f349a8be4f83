"""`timerepro estimate`: measured where the run has a record, extrapolated by data size and epochs from
the closest record otherwise, unknown without one; totals count each run once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from timerepro import cli, estimate, registry
from timerepro.report.published import load as published


@pytest.fixture(scope="module")
def reg():
    return registry.load()


def write_record(results: Path, config: dict, *, wall: float, history: list[dict], data: dict, peak: float = 500.0):
    d = results / "runs" / config["paper"] / config["run_id"]
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps(config))
    (d / "metrics.json").write_text(json.dumps({"run_id": config["run_id"]}))
    (d / "history.json").write_text(json.dumps(history))
    (d / "provenance.json").write_text(json.dumps({"wall_time_s": wall, "peak_memory_mb": peak, "device": "cpu",
                                                   "data": data}))
    return d


def taxi_runs(reg, scale):
    return [r for r in reg.runs(scale, paper="hawkes_attention", artifact="table7") if r.config["dataset"] == "taxi"]


def test_extrapolated_by_data_size_and_epochs(reg, tmp_path):
    ref = taxi_runs(reg, "smoke")[0]
    history = [{"epoch": 0, "epoch_time_s": 2.0, "val_time_s": 1.0}, {"epoch": 1, "epoch_time_s": 2.0, "val_time_s": 1.0}]
    write_record(tmp_path, ref.config, wall=10.0, history=history, data={"train_events": 100})
    target = taxi_runs(reg, "paper")[0]
    est = estimate.estimate_run(target, estimate.References(estimate.records_at_hand(tmp_path)))
    pub = published("hawkes_attention", "table1")
    train_events = float(pub[(pub["row"] == "Taxi") & (pub["metric"] == "event_tokens_train")]["mean"].iloc[0])
    epochs = target.config["max_epochs"]
    # 2 epochs of 3 s (training + validation) and 4 s once; x data ratio, x the paper's max_epochs
    expected_s = train_events / 100 * (epochs * 3.0 + 4.0)
    assert est.basis == estimate.EXTRAPOLATED and est.gpu == bool(target.resources["gpu"])
    assert est.hours == pytest.approx(expected_s * max(target.resources["gpu"], 1) / 3600)
    assert "same experiment" in est.note and "upper bound" in est.note


def test_a_run_with_its_own_record_is_measured(reg, tmp_path):
    run = taxi_runs(reg, "paper")[0]
    write_record(tmp_path, run.config, wall=7200.0, history=[], data={}, peak=3000.0)
    est = estimate.estimate_run(run, estimate.References(estimate.records_at_hand(tmp_path)))
    assert est.basis == estimate.MEASURED and est.hours == pytest.approx(2.0 * max(run.resources["gpu"], 1))
    assert est.peak_mb == 3000.0


def test_plan_counts_every_run_and_each_once_in_the_total(reg, tmp_path, capsys):
    ref = taxi_runs(reg, "smoke")[0]
    write_record(tmp_path, ref.config, wall=10.0, history=[{"epoch_time_s": 2.0}], data={"train_events": 100})
    plan = estimate.plan(reg, "paper", paper="hawkes_attention", results=tmp_path)
    by_art = {a.artifact: a for a in plan.artifacts}
    assert len(by_art["table7"].runs) == len(reg.artifact_runs("hawkes_attention", "table7", "paper"))
    shared = {r.run_id for r in by_art["table2"].runs} & {r.run_id for r in by_art["table3"].runs}
    assert shared  # Tables 2 and 3 read the same runs ...
    total = plan.total()
    assert len(total.runs) == len(reg.runs("paper", paper="hawkes_attention"))  # ... counted once in the total
    assert by_art["table9"].count(estimate.NONE) == len(by_art["table9"].runs)  # no forecasting record: unknown
    assert cli.main(["--results", str(tmp_path), "estimate", "--scale", "paper", "--paper", "hawkes_attention",
                     "--artifact", "table7"]) == 0
    out = capsys.readouterr().out
    assert "hawkes_attention  table7" in out and "all               total" in out and "upper bound" in out


def test_report_hook_gives_one_estimate_per_implemented_artifact(reg, tmp_path):
    ests = estimate.artifact_estimates(reg, "hawkes_attention", "paper", results=tmp_path)
    assert set(ests) == {a["id"] for a in reg.implemented("hawkes_attention")}
    assert all(e.count(estimate.NONE) == len(e.runs) for e in ests.values())  # no records at all


# ---------------------------------------------------------------- paper scale: priced from the rehearsal

def write_rehearsal(results: Path, run, **over):
    from timerepro import rehearse

    shape = rehearse.shape_of(run.config)
    rec = {"format": rehearse.FORMAT, "shape_id": rehearse.shape_id(shape), "shape": shape,
           "name": rehearse.shape_name(shape), "status": "ok", "device": "cpu (test)", "device_type": "cpu",
           "kind": "batches", "setup_s": 30.0, "train_batch_s": 0.5, "train_batches_per_epoch": 100,
           "eval_batch_s": 0.2, "eval_batches_per_epoch": 20, "eval_batches_final": 80, "eval_strategies": 1,
           "rest_s": 1.0, "peak_rss_mb": 2500.0, "peak_gpu_mb": None, **over}
    path = results / "rehearsal" / f"{rec['shape_id']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))
    return rec


def test_paper_runs_are_priced_from_their_shapes_rehearsal(reg, tmp_path):
    runs = taxi_runs(reg, "paper")
    for run in runs:
        write_rehearsal(tmp_path, run, kind="epoch", epoch_s=60.0, once_s=20.0)
    p = estimate.plan(reg, "paper", paper="hawkes_attention", artifact="table7", results=tmp_path)
    (art,) = p.artifacts
    taxi = [r for r in art.runs if r.run_id in {x.run_id for x in runs}]
    assert taxi and all(r.basis == estimate.CPU_REHEARSAL for r in taxi)
    run = runs[0]
    units = max(run.resources["gpu"], 1)
    est = next(r for r in taxi if r.run_id == run.run_id)
    assert est.hours == pytest.approx((20.0 + run.config["max_epochs"] * 60.0) * units / 3600)
    assert est.peak_mb == 2500.0 and "measured on CPU for a GPU run" in est.note
    assert "CPU reh" in estimate.format_plan(p, "paper")


def test_batches_are_priced_per_epoch_and_pass_and_a_failed_rehearsal_prices_nothing(reg, tmp_path):
    run = next(r for r in reg.runs("paper", paper="linear_time") if r.config["task"] == "link_prediction")
    rec = write_rehearsal(tmp_path, run)
    strategies = len(run.config["eval_negatives"])
    expected = 30.0 + run.config["max_epochs"] * (100 * 0.5 + 20 * 0.2 + 1.0) + 80 * 0.2 * strategies
    assert estimate.rehearsed_seconds(rec, run.config) == pytest.approx(expected)
    failed = estimate.estimate_rehearsed(run, {**rec, "status": "failed", "error": "MemoryError: 12 GiB"})
    assert failed.basis == estimate.NONE and failed.hours is None and "MemoryError" in failed.note


def _sibling_pair(reg, bounded: bool):
    """Two shapes of one (task, model, data): the second's run asks for no more than the first ran (bounded) or more."""
    from timerepro import rehearse

    pairs: dict = {}
    for s in rehearse.shapes(reg, "paper"):
        pairs.setdefault(s.name, []).append(s)
    for members in pairs.values():
        for a in members:
            for b in members:
                if a is b:
                    continue
                run, other = a.runs[0], b.runs[0]
                rec = {"shape": rehearse.shape_of(run.config)}
                if bool(not estimate.sibling_gaps(rec, other.config)) == bounded:
                    return run, other
    raise LookupError("no such pair")


def test_a_shape_without_a_rehearsal_is_priced_from_a_sibling_that_bounds_it(reg, tmp_path):
    run, other = _sibling_pair(reg, bounded=True)
    rec = write_rehearsal(tmp_path, run)
    rec = {**rec, "shape": {**rec["shape"], "batch_size": 2 * run.config["batch_size"]}}
    sib = estimate.sibling_record(rec, run.config)  # twice the batches, each no dearer (a smaller batch)
    assert sib["train_batches_per_epoch"] == 200 and sib["train_batch_s"] == rec["train_batch_s"]
    bigger = estimate.sibling_record({**rec, "shape": {**rec["shape"], "batch_size": run.config["batch_size"] // 2}},
                                     run.config)  # half the batches, each up to twice as dear (a larger batch)
    assert bigger["train_batches_per_epoch"] == 50 and bigger["train_batch_s"] == 2 * rec["train_batch_s"]
    est = estimate._estimate_paper(other, {rec["shape_id"]: rec}, estimate.References([]))
    assert est.basis == estimate.CPU_REHEARSAL and "sibling" in est.note


def test_a_sibling_that_ran_less_prices_nothing_and_says_why(reg, tmp_path):
    run, other = _sibling_pair(reg, bounded=False)
    rec = write_rehearsal(tmp_path, run)
    est = estimate._estimate_paper(other, {rec["shape_id"]: rec}, estimate.References([]))
    assert est.basis == estimate.NONE and est.hours is None and "no upper bound" in est.note


@pytest.fixture(scope="module")
def paper_shapes(reg):
    from timerepro import rehearse

    return rehearse.shapes(reg, "paper")


def _lp_run(paper_shapes, model: str, dataset: str, history: str | None, length: int | None = None):
    """A paper-scale link-prediction run of (model, dataset), in the model's own variant, whose history length is set
    by `history` only (the table "sequence_length_by_dataset", or "sequence_length" = `length`) or by nothing."""
    for s in paper_shapes:
        keys = {k.split("[")[0] for k in s.shape if k.startswith("sequence_length")}
        if (s.name == f"link_prediction/{model}/{dataset}" and keys == ({history} if history else set())
                and (length is None or s.shape.get("sequence_length") == length)):
            for r in s.runs:
                if r.config.get("variant", model) == model:
                    return r
    raise LookupError((model, dataset, history, length))


def _as_sibling(run) -> dict:
    """A rehearsal record of `run`, as far as `sibling_gaps` reads it: its shape and the config it ran."""
    from timerepro.rehearse import shape_of

    return {"shape": shape_of(run.config), "config": run.config}


def _gaps(sibling, run) -> list[str]:
    return estimate.sibling_gaps(_as_sibling(sibling), run.config)


def test_a_history_length_bounds_a_sibling_through_the_knob_it_sets(paper_shapes):
    """A history length (the per-dataset table, `sequence_length`) acts on one knob of the model (overrides.resolve),
    a cost key: a sibling that ran without it bounds a run with it where the knob it ran with is no smaller (and the
    reverse), a knob set higher is the gap; a model without a knob reads no history. Without the record's config
    the declared shapes are compared (the table's entry against nothing: no bound)."""
    from timerepro.models.graph.overrides import KNOB
    from timerepro.rehearse import COST_KEYS, shape_of

    assert {k for k in KNOB.values() if k} <= set(COST_KEYS)  # the knob is a cost key of every shape
    table = "sequence_length_by_dataset"
    # DyG-Mamba on UCI: the table's 32 against the dataset default 1024 (models.yaml dataset_defaults)
    short, default = _lp_run(paper_shapes, "dyg_mamba", "uci", table), _lp_run(paper_shapes, "dyg_mamba", "uci", None)
    assert _gaps(default, short) == []
    assert any(table in g for g in estimate.sibling_gaps({"shape": shape_of(default.config)}, short.config))
    assert _gaps(short, default) == ["max_input_sequence_length 1024 where it ran 32"]
    # JODIE reads no history: the table changes nothing, either way
    eq, plain = _lp_run(paper_shapes, "jodie", "uci", table), _lp_run(paper_shapes, "jodie", "uci", None)
    assert _gaps(plain, eq) == _gaps(eq, plain) == []
    # TGN on LastFM: the table's 512 neighbours are no run's default 10
    eq, plain = _lp_run(paper_shapes, "tgn", "lastfm", table), _lp_run(paper_shapes, "tgn", "lastfm", None)
    assert _gaps(plain, eq) == ["num_neighbors 512 where it ran 10"] and _gaps(eq, plain) == []
    # Figure 7's sequence_length on Enron: the longest bounds the default (256), not the reverse
    longest = _lp_run(paper_shapes, "dyg_mamba", "enron", "sequence_length", 2048)
    plain = _lp_run(paper_shapes, "dyg_mamba", "enron", None)
    assert _gaps(longest, plain) == [] and _gaps(plain, longest) == ["max_input_sequence_length 2048 where it ran 256"]


def test_a_longer_forecasting_horizon_is_no_bound_for_a_shorter_one(paper_shapes):
    """A horizon of 720 leaves fewer windows (batches) than one of 96 (`series.n_windows`): neither bounds the other."""
    from timerepro.data.series import SeriesSplit

    runs = {s.shape["pred_len"]: s.runs[0] for s in paper_shapes if s.name == "forecasting/hawkes_ts/etth1"}
    assert {96, 720} <= set(runs)
    rows = SeriesSplit(*([0] * n for n in (8640, 2976, 2976)), None, None, [], [])  # ETTh1, seq_len 96
    assert rows.n_windows("test", 96, 720) < rows.n_windows("test", 96, 96)
    assert _gaps(runs[720], runs[96]) == ["pred_len 96 where it ran 720 (another number of windows)"]
    assert _gaps(runs[96], runs[720]) == ["pred_len 720 where it ran 96 (another number of windows)"]


def test_of_the_siblings_that_bound_a_run_the_closest_prices_it(paper_shapes, tmp_path):
    """Two siblings bound a run (Figure 7's lengths on Enron for the default 256): the one that ran less prices it."""
    plain = _lp_run(paper_shapes, "dyg_mamba", "enron", None)
    recs = {}
    for length, seconds in ((2048, 9.0), (512, 3.0)):
        run = _lp_run(paper_shapes, "dyg_mamba", "enron", "sequence_length", length)
        rec = write_rehearsal(tmp_path, run, train_batch_s=seconds)
        recs[rec["shape_id"]] = {**rec, "config": run.config}
    est = estimate._estimate_paper(plain, recs, estimate.References([]))
    assert est.basis == estimate.CPU_REHEARSAL and "sibling" in est.note
    closest = next(r for r in recs.values() if r["train_batch_s"] == 3.0)
    assert closest["shape_id"] in est.note


def test_passes_are_priced_each_by_its_own_batches_and_a_backbone_by_its_epochs(reg):
    """A version-2 record: each pass its full batches x its seconds per batch, every epoch or once; node
    classification's backbone adds backbone_epochs x its epoch and its final passes."""
    run = next(r for r in reg.runs("paper", paper="linear_time") if r.config["task"] == "node_classification")
    c = {**run.config, "max_epochs": 10, "backbone_epochs": 4, "backbone_eval_negatives": ["random", "historical"]}
    rec = {"kind": "batches", "setup_s": 5.0, "rest_s": 0.5, "train_batch_s": 0.1, "train_batches_per_epoch": 10,
           "eval_passes": [{"in_epoch": False, "batches": 30, "per_batch_s": 1.0}],  # the embeddings, once
           "backbone": {"train_batch_s": 2.0, "train_batches_per_epoch": 100, "eval_strategies": 1,
                        "strategies_key": "backbone_eval_negatives",
                        "eval_passes": [{"in_epoch": True, "batches": 20, "per_batch_s": 0.5},
                                        {"in_epoch": False, "batches": 40, "per_batch_s": 0.25}]}}
    head = 5.0 + 10 * (10 * 0.1 + 0.5) + 30 * 1.0
    backbone = 4 * (100 * 2.0 + 20 * 0.5) + 40 * 0.25 * 2  # two strategies where one was rehearsed
    assert estimate.rehearsed_seconds(rec, c) == pytest.approx(head + backbone)  # version 1: the rest every epoch
    split = {**rec, "rest_epoch_s": 0.2, "rest_once_s": 7.0}  # the rest: 0.2 s of each epoch untimed, 7 s once
    assert estimate.rehearsed_seconds(split, c) == pytest.approx(5.0 + 10 * (10 * 0.1 + 0.2) + 7.0 + 30 * 1.0 + backbone)
    untrained = {"kind": "batches", "setup_s": 5.0, "rest_s": 2.0, "trains": False,
                 "eval_passes": [{"in_epoch": False, "batches": 30, "per_batch_s": 1.0}]}
    assert estimate.rehearsed_seconds(untrained, c) == pytest.approx(5.0 + 2.0 + 30.0)  # EdgeBank: evaluated once


def test_an_early_timed_history_model_is_priced_as_a_lower_bound_and_said(reg, tmp_path):
    run = next(r for r in reg.runs("paper", paper="dyg_mamba")
               if r.config["task"] == "link_prediction" and r.config["model"] == "dyg_mamba")
    rec = write_rehearsal(tmp_path, run)
    assert "train_at" not in rec  # written as before `train_at` existed
    early = estimate.estimate_rehearsed(run, rec)
    assert early.lower_bound and "a lower bound" in early.note
    late = estimate.estimate_rehearsed(run, {**rec, "train_at": "end"})
    assert not late.lower_bound and late.hours == early.hours
    p = estimate.plan(reg, "paper", paper="dyg_mamba", results=tmp_path)
    assert "Lower bounds: " in estimate.format_plan(p, "paper")


def test_a_rehearsal_out_of_gpu_memory_prices_a_failing_job_and_says_so(reg, tmp_path):
    """A shape whose GPU rehearsal ran out of the device's memory fails at that size (dyg_mamba Figure 10 leaves such
    models out): priced at the seconds it ran, counted under "fails" and listed; out of host memory prices nothing."""
    run = next(r for r in reg.runs("paper", paper="linear_time") if r.config["task"] == "link_prediction")
    rec = write_rehearsal(tmp_path, run)
    oom = {**rec, "status": "failed", "device_type": "cuda", "device": "cuda (NVIDIA H200)", "wall_s": 36.0,
           "peak_gpu_mb": 124000.0, "error": "OutOfMemoryError: CUDA out of memory. Tried to allocate 29.70 GiB."}
    est = estimate.estimate_rehearsed(run, oom)
    units = (run.resources.get("gpu") or 1) if run.resources.get("gpu") else run.resources.get("cpus", 1)
    assert est.basis == estimate.FAILS and est.hours == pytest.approx(36.0 * units / 3600)
    assert "NVIDIA H200" in est.note and "121 GB" in est.note
    host = estimate.estimate_rehearsed(run, {**oom, "device_type": "cpu", "error": "MemoryError: 12 GiB"})
    assert host.basis == estimate.NONE and host.hours is None
    p = estimate.Plan("paper", [estimate.ArtifactEstimate(run.paper, "fig", [est])])
    text = estimate.format_plan(p, "paper")
    assert "Runs that fail at this size" in text and "fails" in text.splitlines()[1]
