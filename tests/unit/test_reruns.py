"""Records of other code are superseded and the run redone; reverting the code brings them back;
a damaged record is kept and redone; every run measures its own peak memory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from timerepro import fingerprint, freshness, records, registry, runs
from timerepro.fingerprint import Fingerprinter

PACKAGE = Path(fingerprint.__file__).resolve().parent


@pytest.fixture(scope="module")
def reg():
    return registry.load()


@pytest.fixture
def config(reg):
    """One smoke run of the synthetic task (a few seconds)."""
    return dict(reg.runs("smoke", artifact="fig2")[0].config)


@pytest.fixture
def package(tmp_path) -> Path:
    dst = tmp_path / "pkg" / "timerepro"
    shutil.copytree(PACKAGE, dst, ignore=shutil.ignore_patterns("*.pyc"))
    return dst


def fingerprints(reg, package) -> Fingerprinter:
    return Fingerprinter(package_dir=package, models=reg.models)


def edit_transformer(package: Path, value: int) -> None:
    """Edit the synthetic task's model (`value` 0: revert to the original text). The statement added
    changes nothing at run time: what counts is that the code differs."""
    path = package / "models" / "seq" / "transformer.py"
    original = path.with_suffix(".orig")
    if not original.exists():
        shutil.copyfile(path, original)
    path.write_text(original.read_text() + (f"\n_EDIT = {value}\n" if value else ""))


@pytest.fixture
def trainings(monkeypatch):
    """Counts the training runs that really happen."""
    calls = []
    real = runs._train

    def counting(ctxs, runner):
        calls.extend(c.run_id for c in ctxs)
        return real(ctxs, runner)

    monkeypatch.setattr(runs, "_train", counting)
    return calls


def test_record_carries_the_fingerprint_of_its_code(reg, config, tmp_path, package):
    fp = fingerprints(reg, package)
    d = runs.execute_many([config], results=tmp_path, show_progress=False, fingerprints=fp)[0]
    code = json.loads((d / "provenance.json").read_text())["code"]
    assert code["fingerprint"] == fp.run(config).digest
    assert "timerepro.models.seq.transformer" in code["modules"] and "timerepro.report.aggregate" not in code["modules"]


def test_a_code_change_reruns_the_run_and_reverting_reuses_the_old_record(reg, config, tmp_path, package, trainings):
    results = tmp_path / "results"
    original = fingerprints(reg, package)
    runs.execute_many([config], results=results, show_progress=False, fingerprints=original)
    first = json.loads((records.run_dir(config, results) / "metrics.json").read_text())
    assert trainings == [config["run_id"]]

    edit_transformer(package, 1)
    edited = fingerprints(reg, package)
    states = freshness.run_states(reg, "smoke", artifact="fig2", paper="linear_time", results=results,
                                  fingerprints=edited)
    stale = [s for s in states if s.run_id == config["run_id"]][0]
    assert stale.state == records.STALE and stale.changes == ("timerepro.models.seq.transformer",)
    assert not records.is_complete(config, results, fingerprints=edited)
    runs.execute_many([config], results=results, show_progress=False, fingerprints=edited)
    assert trainings == [config["run_id"]] * 2  # redone
    kept = records.superseded_root(config, results)
    assert [p.name for p in kept.iterdir()] == [original.run(config).digest]  # kept by fingerprint
    old = next(kept.iterdir())
    assert json.loads((old / "metrics.json").read_text()) == first  # nothing computed is lost

    edit_transformer(package, 0)  # revert
    reverted = fingerprints(reg, package)
    assert reverted.run(config).digest == json.loads((old / "provenance.json").read_text())["code"]["fingerprint"]
    runs.execute_many([config], results=results, show_progress=False, fingerprints=reverted)
    assert trainings == [config["run_id"]] * 2  # no third training: the old record is back
    assert json.loads((records.run_dir(config, results) / "metrics.json").read_text()) == first
    assert records.is_complete(config, results, fingerprints=reverted)
    assert [p.name for p in kept.iterdir()] == [edited.run(config).digest]  # the edited code's record, kept in turn


def test_a_record_without_fingerprint_counts_as_made_by_unknown_code(reg, config, tmp_path, package):
    fp = fingerprints(reg, package)
    d = runs.execute_many([config], results=tmp_path, show_progress=False, fingerprints=fp)[0]
    prov = json.loads((d / "provenance.json").read_text())
    del prov["code"]
    (d / "provenance.json").write_text(json.dumps(prov))
    state = records.state_of(d, fp.run(config))
    assert state.state == records.STALE and "unknown code" in state.changes[0]


def test_a_checkpoint_of_other_code_is_not_resumed(reg, config, tmp_path, package):
    d = tmp_path / "run"
    d.mkdir()
    old = runs.RunContext(config, d, device="cpu", fingerprint=fingerprints(reg, package).run(config))
    old.save_checkpoint({"epoch": 3})
    assert old.load_checkpoint() == {"epoch": 3}
    edit_transformer(package, 7)
    new = runs.RunContext(config, d, device="cpu", fingerprint=fingerprints(reg, package).run(config))
    assert new.load_checkpoint() is None


def test_a_truncated_metrics_json_is_kept_aside_and_the_run_redone(reg, config, tmp_path, package, trainings, caplog):
    fp = fingerprints(reg, package)
    d = runs.execute_many([config], results=tmp_path, show_progress=False, fingerprints=fp)[0]
    text = (d / "metrics.json").read_text()
    (d / "metrics.json").write_text(text[: len(text) // 2])
    assert records.load_record(d) is None and "metrics.json" in caplog.text  # aggregation skips it, naming it
    state = records.state_of(d, fp.run(config))
    assert state.state == records.CORRUPT and str(d / "metrics.json") in state.changes[0]
    runs.execute_many([config], results=tmp_path, show_progress=False, fingerprints=fp)
    assert trainings == [config["run_id"]] * 2
    kept = next(records.superseded_root(config, tmp_path).iterdir())
    assert (kept / "metrics.json").read_text() == text[: len(text) // 2]  # the damaged file is kept
    assert records.is_complete(config, tmp_path, fingerprints=fp)


def _allocating_task(config, ctx):
    """A task that holds `alloc_mb` of memory for a moment and reports the run's own peak."""
    block = np.ones(int(config["alloc_mb"]) * 2**20 // 8)  # touched: resident
    block[::512] += 1.0
    del block
    return {"metrics": {"peak_rss_mb": ctx.peak_memory_mb()}, "data": {}}


def test_two_runs_in_one_job_report_their_own_peak_memory(monkeypatch, tmp_path, reg):
    monkeypatch.setattr(runs, "get_task", lambda name: _allocating_task)
    monkeypatch.setattr(runs, "get_group_runner", lambda name: None)
    base = {"paper": "linear_time", "experiment": "memory", "task": "dataset_statistics", "seed": 0}
    big = {**base, "alloc_mb": 400, "run_id": "aaaaaaaaaaaa"}
    small = {**base, "alloc_mb": 20, "run_id": "bbbbbbbbbbbb"}
    d_big, d_small = runs.execute_many([big, small], results=tmp_path, show_progress=False,
                                       fingerprints=Fingerprinter(models=reg.models))
    peak_big = json.loads((d_big / "provenance.json").read_text())["peak_memory_mb"]
    peak_small = json.loads((d_small / "provenance.json").read_text())["peak_memory_mb"]
    assert peak_big - peak_small > 300, (peak_big, peak_small)  # ru_maxrss would give the second run the first's peak
    metrics_small = json.loads((d_small / "metrics.json").read_text())
    assert metrics_small["peak_rss_mb"] < peak_big - 300


def test_sampled_peak_when_the_kernel_counter_cannot_be_reset(monkeypatch):
    from timerepro import memory

    monkeypatch.setattr(memory, "_reset_hwm", lambda: False)
    meter = memory.PeakMemory(interval=0.01).start()
    block = np.ones(200 * 2**20 // 8)
    block[::512] += 1.0
    import time

    time.sleep(0.1)
    del block
    meter.stop()
    assert meter.method.startswith("RSS sampled") and meter.peak_mb() - meter.start_mb > 150


def test_report_hook_lists_per_artifact_the_numbers_made_by_other_code(reg, config, tmp_path, package):
    runs.execute_many([config], results=tmp_path, show_progress=False, fingerprints=fingerprints(reg, package))
    assert not any(freshness.stale_by_artifact(reg, "linear_time", "smoke", tmp_path,
                                               fingerprints(reg, package)).values())
    edit_transformer(package, 3)
    stale = freshness.stale_by_artifact(reg, "linear_time", "smoke", tmp_path, fingerprints(reg, package))
    assert [s.run_id for s in stale["fig2"]] == [config["run_id"]]
    assert freshness.changed_modules(stale["fig2"]) == ["timerepro.models.seq.transformer"]
    assert stale["table3"] == []  # no record: nothing to mark (missing numbers are already absent)


def test_the_code_stamp_is_rewritten_only_when_a_fingerprint_changes(tmp_path):
    path = records.code_stamp(tmp_path, "linear_time")
    records.update_code_stamp(path, {"job1": "a" * 16}, report_code="r" * 16)
    stamp = path.stat().st_mtime_ns
    records.update_code_stamp(path, {"job1": "a" * 16}, report_code="r" * 16)
    assert path.stat().st_mtime_ns == stamp  # same fingerprints: the date stays (nothing becomes due)
    records.update_code_stamp(path, {"job1": "b" * 16}, report_code="r" * 16)
    assert json.loads(path.read_text()) == {"jobs": {"job1": "b" * 16}, "report": "r" * 16}


def test_an_edit_of_the_report_code_rewrites_every_papers_stamp_and_no_run_fingerprint(package, tmp_path):
    """The aggregate rule's stamp carries the report code's fingerprint: editing an aggregator makes the papers'
    aggregation due (their stamp is rewritten) while every run stays complete (its fingerprint is unchanged)."""
    from timerepro.fingerprint import Source
    from timerepro.report.families import report_fingerprint

    before = report_fingerprint(Source(package))
    run_before = Fingerprinter(package_dir=package).code("link_prediction", "tgat", "cosine").digest
    path = records.code_stamp(tmp_path, "swinit")
    records.update_code_stamp(path, {"job1": "a" * 16}, report_code=before)
    stamp = path.stat().st_mtime_ns
    records.update_code_stamp(path, {"job1": "a" * 16}, report_code=report_fingerprint(Source(package)))
    assert path.stat().st_mtime_ns == stamp
    module = package / "report" / "swinit.py"
    module.write_text(module.read_text().replace('EDGEBANK = "EdgeBank (floor)"', 'EDGEBANK = "EdgeBank, the floor"'))
    after = report_fingerprint(Source(package))
    assert after != before
    assert Fingerprinter(package_dir=package).code("link_prediction", "tgat", "cosine").digest == run_before
    records.update_code_stamp(path, {"job1": "a" * 16}, report_code=after)
    assert json.loads(path.read_text()) == {"jobs": {"job1": "a" * 16}, "report": after}
