"""The rehearsal end to end on smoke stand-ins (untimed: what it records, not how fast), and its shapes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from timerepro import registry, rehearse


@pytest.fixture(scope="module")
def reg():
    return registry.load()


def test_every_paper_run_belongs_to_exactly_one_shape(reg):
    all_shapes = rehearse.shapes(reg, "paper")
    ids = [r.run_id + r.paper for s in all_shapes for r in s.runs]
    assert len(ids) == len(set(ids)) == sum(len(j.runs) for j in reg.jobs("paper"))
    for s in all_shapes:
        assert {rehearse.shape_id(rehearse.shape_of(r.config)) for r in s.runs} == {s.id}


def test_raw_and_binned_event_sequences_are_shapes_apart(reg):
    """N-TIDIGITS18 raw runs a step per event, binned one per frame of 100: one shape would price the binned runs
    (1,000 epochs) at the raw runs' batches, or the raw ones at the binned ones'; neither bounds the other."""
    from timerepro.estimate import sibling_gaps

    tidigits = [s for s in rehearse.shapes(reg, "paper") if s.name == "event_classification/lstm/ntidigits18"]
    modes = {s.shape["input_mode"]: s for s in tidigits}
    assert set(modes) == {"raw", "binned"} and len(tidigits) == 2
    assert all(r.config["input_mode"] == mode for mode, s in modes.items() for r in s.runs)
    raw = {"config": modes["raw"].config(), "shape": modes["raw"].shape}
    assert sibling_gaps(raw, modes["binned"].runs[0].config) == ["input_mode binned where it ran raw"]


def test_a_shape_holds_the_cost_keys_its_variant_sets(reg):
    """DyG-Mamba's vanilla Mamba and w/o Time-span variants set `time_span` false over the declared true: their
    shape says false (apart from the time-span runs); a variant that sets no cost key keeps the id it had."""
    from timerepro.estimate import sibling_gaps

    by_variant = {r.config["variant"]: r for r in reg.runs("paper", paper="dyg_mamba")  # Enron, Table 5 and Figure 1
                  if r.experiment in ("lp_dyg_mamba", "lp_dyg_mamba_variants", "fig1_vmamba")
                  and r.config.get("dataset") == "enron"}
    assert {"dyg_mamba", "wo_time_span", "wo_selective", "vanilla_mamba"} <= set(by_variant)

    def declared(r) -> dict:  # the shape of the declared config alone (what the shape was before the variant)
        return rehearse.shape_of({k: v for k, v in r.config.items() if k not in ("variant", "variants")})

    for name in ("vanilla_mamba", "wo_time_span"):
        shape = rehearse.shape_of(by_variant[name].config)
        assert shape["time_span"] is False and shape == {**declared(by_variant[name]), "time_span": False}
    for name in ("dyg_mamba", "wo_selective"):
        assert rehearse.shape_of(by_variant[name].config) == declared(by_variant[name])
    ids = {name: rehearse.shape_id(rehearse.shape_of(r.config)) for name, r in by_variant.items()}
    assert ids["wo_time_span"] != ids["dyg_mamba"] == ids["wo_selective"]
    # the lengths aside (256 each on Enron), a time-span-false rehearsal bounds Figure 1's vanilla Mamba run
    off = next(s for s in rehearse.shapes(reg, "paper") if s.id == ids["wo_time_span"])
    assert sibling_gaps({"config": off.config(), "shape": off.shape}, by_variant["vanilla_mamba"].config) == []
    on = next(s for s in rehearse.shapes(reg, "paper") if s.id == ids["dyg_mamba"])
    assert sibling_gaps({"config": on.config(), "shape": on.shape}, by_variant["vanilla_mamba"].config) == [
        "time_span False where it ran True"]


def test_a_shape_rehearses_its_widest_run_for_one_epoch_on_the_paper_stand_in(reg):
    s = next(s for s in rehearse.shapes(reg, "paper") if s.shape["task"] == "link_prediction"
             and len({rehearse._width(r.config) for r in s.runs}) > 1)
    config = s.config()
    assert rehearse._width(config) == max(rehearse._width(r.config) for r in s.runs)
    assert config["standin"] == "paper" and config["max_epochs"] == 1
    nc = next(s for s in rehearse.shapes(reg, "paper") if s.shape["task"] == "node_classification")
    assert nc.config()["backbone_epochs"] == 1  # the backbone it trains in the run: one epoch too


def _smoke_shape(reg, task, model=None):
    return next(s for s in rehearse.shapes(reg, "smoke") if s.shape["task"] == task
                and (model is None or s.shape["model"] == model))


def test_link_prediction_rehearsal_times_its_batches_and_counts_an_epoch(reg, standin_root, monkeypatch, tmp_path):
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root("uci")))
    shape = _smoke_shape(reg, "link_prediction", "tgat")
    rec = rehearse.rehearse(shape, batches=2, device="cpu", standin="smoke")
    assert rec["status"] == "ok", rec.get("traceback")
    assert rec["kind"] == "batches" and rec["train_batches_timed"] == min(2, rec["train_batches_per_epoch"])
    assert rec["train_batches_per_epoch"] >= 1 and rec["eval_batches_per_epoch"] >= 1
    assert rec["eval_batches_final"] >= rec["eval_batches_per_epoch"]  # val and test, both settings
    assert rec["train_batch_s"] > 0 and rec["eval_batch_s"] > 0 and 0 < rec["setup_s"] < rec["wall_s"]
    assert rec["train_batch_cpu_s"] > 0 and len(rec["load_average"]) == 2
    assert 0 <= rec["rest_epoch_s"] and rec["rest_once_s"] <= rec["rest_s"]  # the rest: every epoch, and once
    assert rec["peak_rss_mb"] > 0 and rec["peak_gpu_mb"] is None and rec["device_type"] == "cpu"
    assert not (tmp_path / "runs").exists()  # a rehearsal writes no run record


def test_a_pre_pass_model_rehearses_the_epochs_last_batches(reg, standin_root, monkeypatch):
    """SWINIT (graph_reuse: prepass) reuses a stored graph per training batch in order; the rehearsal passes over the
    epoch's first batches, and the model takes up the pre-pass at the batch timed (it failed on every SWINIT shape)."""
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root("jodie_wikipedia")))
    shape = next(s for s in rehearse.shapes(reg, "smoke") if s.shape["task"] == "link_prediction"
                 and s.config("smoke").get("graph_reuse") == "prepass")
    config = shape.config

    def small_batches(standin: str = "paper") -> dict:  # batches enough for some to be passed over
        return {**config(standin), "batch_size": 20}

    monkeypatch.setattr(shape, "config", small_batches, raising=False)
    rec = rehearse.rehearse(shape, batches=2, device="cpu", standin="smoke")
    assert rec["status"] == "ok", rec.get("traceback")
    assert rec["train_batches_per_epoch"] > 3 and rec["train_batches_timed"] == 2 and rec["train_batch_s"] > 0


def test_a_functions_first_pass_runs_its_batches_and_each_later_pass_one(reg, standin_root, monkeypatch):
    """Evaluation passes: the first validation pass times `batches` - 1 batches after a warm-up, every later pass (each
    part, each sampler) one, and each says how many batches the full pass has and whether it is paid every epoch."""
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root("uci")))
    shape = _smoke_shape(reg, "link_prediction", "tgat")
    rec = rehearse.rehearse(shape, batches=3, device="cpu", standin="smoke")
    assert rec["status"] == "ok", rec.get("traceback")
    first, *later = rec["eval_passes"]
    assert first["in_epoch"] and first["timed"] == min(2, first["batches"] - 1) or first["batches"] == 1
    assert later and all(not p["in_epoch"] and p["timed"] == 1 for p in later)
    assert all(p["batches"] >= p["timed"] and p["per_batch_s"] > 0 for p in rec["eval_passes"])
    assert rec["eval_batches_final"] == sum(p["batches"] for p in later)


def test_node_classification_times_its_backbone_and_its_embedding_pass(reg, standin_root, monkeypatch):
    """Node classification trains its link-prediction backbone in the run (a nested context): the backbone's batches
    and passes are recorded apart, the embedding of every edge is a pass paid once, bounded like evaluation."""
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root("wikipedia")))
    shape = next(s for s in rehearse.shapes(reg, "smoke") if s.shape["task"] == "node_classification"
                 and s.shape.get("dataset") == "wikipedia")
    rec = rehearse.rehearse(shape, batches=2, device="cpu", standin="smoke")
    assert rec["status"] == "ok", rec.get("traceback")
    backbone = rec["backbone"]
    assert backbone["train_batch_s"] > 0 and backbone["train_batches_per_epoch"] >= 1
    assert any(p["name"] == "evaluate" and p["in_epoch"] for p in backbone["eval_passes"])
    embeds = [p for p in rec["eval_passes"] if p["name"] == "source_embeddings"]
    assert len(embeds) == 3 and not any(p["in_epoch"] for p in embeds)  # train, val, test: once per run
    assert rec["train_batches_per_epoch"] >= 1  # the head's own batches


def test_a_failure_at_size_is_recorded_not_raised(reg, monkeypatch):
    shape = _smoke_shape(reg, "link_prediction", "tgat")
    from timerepro.tasks.link_prediction import loop

    def boom(config):
        raise MemoryError("Unable to allocate 12.3 GiB")

    monkeypatch.setattr(loop, "load_data", boom)
    rec = rehearse.rehearse(shape, batches=1, device="cpu", standin="smoke")
    assert rec["status"] == "failed" and "MemoryError" in rec["error"]


def test_point_process_training_and_evaluation_are_bounded(reg, standin_root, monkeypatch):
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root("taxi")))
    shape = _smoke_shape(reg, "temporal_point_process")
    rec = rehearse.rehearse(shape, batches=2, device="cpu", standin="smoke")
    assert rec["status"] == "ok", rec.get("traceback")
    assert rec["kind"] == "batches" and rec["train_batch_s"] > 0 and rec["train_batches_per_epoch"] >= 1
    in_epoch = [p for p in rec["eval_passes"] if p["in_epoch"]]
    final = [p for p in rec["eval_passes"] if not p["in_epoch"]]
    assert len(in_epoch) == 1 and len(final) == 1  # validation every epoch; the test pass (thinning) once
    for p in rec["eval_passes"]:  # rows of one batch (all of a smoke split's: fewer than PART_ROWS), priced whole
        assert p["timed"] == 1 and p["rows"] == min(rehearse.PART_ROWS, p["batch_rows"])
        assert p["per_batch_s"] == pytest.approx(p["seconds"] * p["batch_rows"] / p["rows"])


def test_a_partial_pass_runs_rows_of_one_batch_with_its_longest_and_prices_the_whole_batch():
    """A `Bounded.part` pass (the point processes' evaluation: one batch of AttNHP's thinning takes minutes on a CPU)
    runs PART_ROWS rows of its first batch, the batch's longest sequence among them (every row is computed at the
    padded length), a warm-up of them first on the function's first pass; a whole batch is priced as x its rows."""
    import numpy as np

    from timerepro.data.tpp import EventSequences

    lengths = np.array([3] * 40 + [9] + [2] * 59)  # 100 sequences; the longest, #40, in the first batch of 64
    ptr = np.concatenate([[0], np.cumsum(lengths)])
    n = int(ptr[-1])
    seqs = EventSequences(ptr, np.arange(n, dtype=float), np.ones(n), np.zeros(n, dtype=np.int64), np.arange(100))
    seen = []

    def evaluate(seqs, batch_size, thinning=None):
        seen.append(seqs)
        return {"n": len(seqs)}

    b = rehearse.Bounded("m", "evaluate", ("seqs",), lambda a: int(a["batch_size"]), part=rehearse._tpp_part)
    timings = rehearse.Timings(batches=3)
    bounded = rehearse._bounded_pass(b, evaluate, timings)
    assert bounded(seqs, batch_size=64) == {"n": rehearse.PART_ROWS}
    bounded(seqs, 64, thinning="on")  # a later pass
    assert len(seen) == 3  # the first pass: a warm-up, then the timed one; the later pass: one
    part = seen[-1]
    assert len(part) == rehearse.PART_ROWS and list(part.seq_idx) == list(range(rehearse.PART_ROWS - 1)) + [40]
    assert part.lengths.max() == 9
    np.testing.assert_array_equal(part.sequence(rehearse.PART_ROWS - 1)["time_since_start"],
                                  seqs.sequence(40)["time_since_start"])
    first, later = timings.passes
    assert first["batches"] == later["batches"] == 2 and first["timed"] == later["timed"] == 1
    assert first["rows"] == rehearse.PART_ROWS and first["batch_rows"] == 64 and later["warmup_s"] == 0
    assert rehearse._pass_per_batch(first) == pytest.approx(first["seconds"] * 64 / rehearse.PART_ROWS)


def test_fewer_part_rows_run_fewer_rows_and_price_the_whole_batch():
    """`--part-rows 4` (FullyNN's thinning on StackOverflow: 16 rows of one batch ran past the shape timeout): the
    pass runs 4 rows of its first batch, the longest among them, and prices the batch as x batch_rows / 4."""
    import argparse

    import numpy as np

    from timerepro.data.tpp import EventSequences

    lengths = np.array([3] * 10 + [9] + [2] * 89)
    ptr = np.concatenate([[0], np.cumsum(lengths)])
    n = int(ptr[-1])
    seqs = EventSequences(ptr, np.arange(n, dtype=float), np.ones(n), np.zeros(n, dtype=np.int64), np.arange(100))
    seen = []

    def evaluate(seqs, batch_size):
        seen.append(seqs)
        return {"n": len(seqs)}

    b = rehearse.Bounded("m", "evaluate", ("seqs",), lambda a: int(a["batch_size"]), part=rehearse._tpp_part)
    timings = rehearse.Timings(batches=3, part_rows=4)
    assert rehearse._bounded_pass(b, evaluate, timings)(seqs, batch_size=64) == {"n": 4}
    assert list(seen[-1].seq_idx) == [0, 1, 2, 10]  # the first three and the batch's longest
    (p,) = timings.passes
    assert p["rows"] == 4 and p["batch_rows"] == 64
    assert rehearse._pass_per_batch(p) == pytest.approx(p["seconds"] * 64 / 4)
    parser = argparse.ArgumentParser()
    rehearse.add_subcommand(parser.add_subparsers())
    assert parser.parse_args(["rehearse", "--part-rows", "4"]).part_rows == 4
    with pytest.raises(SystemExit):  # argparse's clear error: "--part-rows: must be at least 1, got 0"
        parser.parse_args(["rehearse", "--part-rows", "0"])


def test_a_task_without_batch_hooks_rehearses_one_whole_epoch(reg, monkeypatch):
    shape = _smoke_shape(reg, "sequence_classification")
    rec = rehearse.rehearse(shape, batches=2, device="cpu", standin="smoke")
    assert rec["status"] == "ok", rec.get("traceback")
    assert rec["kind"] == "epoch" and rec["epoch_s"] > 0 and rec["once_s"] >= 0


def test_a_child_process_the_run_waits_for_counts_in_its_peak(reg, monkeypatch):
    """sequence_cost measures its step in a spawned process: the job holds that child's memory beside its own, so the
    record's peak adds the child's (here a child that writes 200 MB)."""
    import subprocess
    import sys

    from timerepro.tasks import sequence_cost

    def measure_isolated(config, device="cpu", threads=None):
        subprocess.run([sys.executable, "-c", "b = b'x' * (200 * 2**20)"], check=True)
        return {}

    monkeypatch.setattr(sequence_cost, "measure_isolated", measure_isolated)
    rec = rehearse.rehearse_in_fork(_smoke_shape(reg, "sequence_cost"), batches=1, device="cpu", standin="smoke")
    assert rec["status"] == "ok", rec.get("traceback")
    assert rec["kind"] == "run" and rec["peak_child_rss_mb"] > 200
    assert rec["peak_rss_mb"] > rec["peak_child_rss_mb"]


def test_shapes_of_one_dataset_share_its_loading_in_one_process(standin_root, tmp_path):
    """The command rehearses the shapes of one dataset in forks of one process that loaded the data once: every
    record carries that one measurement in its set-up. (A process of its own, as a user runs it: a fork of a process
    that has run torch's thread pool may hang in it, so the command forks before any torch work.)"""
    import os
    import subprocess
    import sys

    env = {**os.environ, "TIMEREPRO_DATA": str(standin_root("uci"))}
    cmd = [sys.executable, "-m", "timerepro", "rehearse", "--scale", "smoke", "--standin", "smoke", "--one-per-pair",
           "--shape", "link_prediction/tgat/uci", "--shape", "link_prediction/tgn/uci", "--batches", "1",
           "--device", "cpu", "--redo", "--shape-timeout-s", "600", "--results", str(tmp_path)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    recs = [json.loads(p.read_text()) for p in sorted((tmp_path / "rehearsal").glob("*.json"))]
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs)
    assert len({r["setup_shared_s"] for r in recs}) == 1 and all(r["setup_s"] >= r["setup_shared_s"] > 0 for r in recs)
    assert all("measured once" in r["setup_shared"] for r in recs)


def test_the_costliest_sibling_stands_for_its_pair(reg):
    pairs: dict = {}
    for s in rehearse.shapes(reg, "paper"):
        pairs.setdefault(s.name, []).append(s)
    name, members = next((n, m) for n, m in pairs.items() if len({rehearse._cost_rank(s)[0] for s in m}) > 1)
    args = argparse.Namespace(task=[], shape=[name], one_per_pair=True, smallest_first=False, budget_s=None)
    (chosen,) = [s for s in rehearse._selected(members, args) if s.name == name]
    assert rehearse._cost_rank(chosen)[0] == max(rehearse._cost_rank(s)[0] for s in members)


def test_event_classification_bounds_its_test_accuracy_every_epoch(reg, standin_root, monkeypatch):
    """Its accuracy pass (every epoch, not through ctx) ran whole: Event-MNIST's 10,000 test sequences at paper
    size took the shape past 240 s; now its first batches run, and the pass is priced from them."""
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root("event_mnist")))
    shape = _smoke_shape(reg, "event_classification")
    rec = rehearse.rehearse(shape, batches=2, device="cpu", standin="smoke")
    assert rec["status"] == "ok", rec.get("traceback")
    passes = [p for p in rec["eval_passes"] if p["name"] == "accuracy"]
    assert passes and all(p["in_epoch"] and p["batches"] >= p["timed"] >= 1 for p in passes)


def test_next_item_bounds_its_ranking_of_every_test_and_held_out_sequence(reg, standin_root, monkeypatch):
    """next_item's `evaluate` (every epoch, test then held-out items, not through ctx) ran whole: TimeLSTM on the
    Last.fm 1K stand-in ran past 480 s; now its first batches run (the candidates cut with their sequences)."""
    shape = _smoke_shape(reg, "next_item")
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root(shape.shape["dataset"])))
    rec = rehearse.rehearse(shape, batches=2, device="cpu", standin="smoke")
    assert rec["status"] == "ok", rec.get("traceback")
    passes = [p for p in rec["eval_passes"] if p["name"] == "evaluate"]
    assert passes and all(p["in_epoch"] and p["batches"] >= p["timed"] >= 1 for p in passes)


def test_next_item_cut_keeps_each_kept_sequences_candidate_rows():
    import numpy as np

    test = [{"targets": np.array([4])}, {"targets": np.array([1, 2, 3])}, {"targets": np.array([5, 6])}]
    cand = np.arange(6 * 2 * 3).reshape(6, 2, 3)  # (targets, repeats, k)
    a = rehearse._next_item_cut({"test": test, "candidates": cand, "bs": 64}, 2)
    assert len(a["test"]) == 2 and a["bs"] == 64
    np.testing.assert_array_equal(a["candidates"], cand[:4])  # 1 + 3 targets


def test_a_timeout_kills_the_processes_the_run_started(reg, monkeypatch, tmp_path):
    """sequence_cost's step runs in a spawned process: DyG-Mamba at L = 2048 ran past the shape timeout, the fork was
    killed and its child ran on. The fork is a process group, killed whole."""
    import subprocess
    import sys
    import time

    from timerepro.tasks import sequence_cost

    pid_file = tmp_path / "child.pid"

    def measure_isolated(config, device="cpu", threads=None):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        pid_file.write_text(str(child.pid))
        child.wait()
        return {}

    monkeypatch.setattr(sequence_cost, "measure_isolated", measure_isolated)
    shape = _smoke_shape(reg, "sequence_cost")
    assert rehearse.rehearse_in_fork(shape, timeout_s=5, batches=1, device="cpu", standin="smoke") is None
    pid = int(pid_file.read_text())
    for _ in range(50):  # killed: gone, or a zombie until init reaps it
        status = Path(f"/proc/{pid}/status")
        if not status.exists() or "zombie" in status.read_text():
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the run's child {pid} outlived the timeout")


def test_training_batches_are_timed_at_the_epochs_end_where_history_is_longest():
    """A stream's batch costs more late in the epoch (more history to pack): `_bounded` times the batches before the
    last (which may be partial), passing over the earlier ones without running the loop's body."""
    timings = rehearse.Timings(batches=3)
    ctx = rehearse.RehearsalContext({"run_id": "r"}, Path("."), "cpu", timings)
    ran = [i for i in ctx.progress(range(100), desc="epoch 0", total=100)]
    assert ran == [96, 97, 98] and timings.train_per_epoch == 100 and len(timings.train) == 3
    short = rehearse.Timings(batches=3)
    ran = list(rehearse.RehearsalContext({"run_id": "r"}, Path("."), "cpu", short).progress(range(2), total=2))
    assert ran == [0, 1]  # an epoch shorter than the batches: all of it


def test_a_history_models_record_timed_at_the_start_is_a_lower_bound_and_rehearsed_again():
    old = {"kind": "batches", "shape": {"task": "link_prediction", "model": "dyg_mamba"}, "train_batch_s": 6.0}
    assert rehearse.early_timed(old)
    assert not rehearse.early_timed({**old, "train_at": rehearse.TRAIN_AT})
    assert not rehearse.early_timed({**old, "shape": {"task": "link_prediction", "model": "tgn"}})  # cost flat in history


def test_gpu_jobs_picks_the_shapes_whose_runs_ask_for_a_gpu(reg):
    """`--gpu-jobs`: what a lent GPU should rehearse; the shapes of CPU jobs (the statistics tables, linear_time's
    synthetic sequence classification, time2vec's day-of-week classifier) are left out, the graph models kept."""
    every = rehearse.shapes(reg, "paper")
    args = argparse.Namespace(task=[], shape=[], one_per_pair=False, smallest_first=False, budget_s=None, gpu_jobs=True)
    chosen = rehearse._selected(every, args)
    left_out = {s.shape["task"] for s in every if s not in chosen}
    assert left_out == {"dataset_statistics", "sequence_classification", "periodic_classification"}
    assert {"link_prediction", "node_classification", "temporal_point_process"} <= {s.shape["task"] for s in chosen}
