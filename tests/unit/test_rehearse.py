"""The rehearsal end to end on smoke stand-ins (untimed: what it records, not how fast), and its shapes."""

from __future__ import annotations

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


def test_a_shape_rehearses_its_widest_run_for_one_epoch_on_the_paper_stand_in(reg):
    s = next(s for s in rehearse.shapes(reg, "paper") if s.shape["task"] == "link_prediction"
             and len({rehearse._width(r.config) for r in s.runs}) > 1)
    config = s.config()
    assert rehearse._width(config) == max(rehearse._width(r.config) for r in s.runs)
    assert config["standin"] == "paper" and config["max_epochs"] == 1


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
    assert rec["peak_rss_mb"] > 0 and rec["peak_gpu_mb"] is None and rec["device_type"] == "cpu"
    assert not (tmp_path / "runs").exists()  # a rehearsal writes no run record


def test_a_failure_at_size_is_recorded_not_raised(reg, monkeypatch):
    shape = _smoke_shape(reg, "link_prediction", "tgat")
    from timerepro.tasks.link_prediction import loop

    def boom(config):
        raise MemoryError("Unable to allocate 12.3 GiB")

    monkeypatch.setattr(loop, "load_data", boom)
    rec = rehearse.rehearse(shape, batches=1, device="cpu", standin="smoke")
    assert rec["status"] == "failed" and "MemoryError" in rec["error"]


def test_a_task_without_batch_hooks_rehearses_one_whole_epoch(reg, standin_root, monkeypatch):
    monkeypatch.setenv("TIMEREPRO_DATA", str(standin_root("taxi")))
    shape = _smoke_shape(reg, "temporal_point_process")
    rec = rehearse.rehearse(shape, batches=2, device="cpu", standin="smoke")
    assert rec["status"] == "ok", rec.get("traceback")
    assert rec["kind"] == "epoch" and rec["epoch_s"] > 0 and rec["once_s"] >= 0
