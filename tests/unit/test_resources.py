"""Declared resources cover measured ones: `timerepro resources` holds each job's mem_mb and runtime against the
peaks and wall times of its run records, and fails (exit 1, naming the params/ key) when a job used more."""

from __future__ import annotations

import json

import pytest

from timerepro import resources
from timerepro.cli import main
from timerepro.io import atomic_write_json
from timerepro.records import run_dir
from timerepro.registry import load


def _write(run, results, peak_mb: float, wall_s: float, trained_with: str | None = None) -> None:
    d = run_dir(run.config, results)
    atomic_write_json(d / "config.json", run.config)
    prov = {"peak_memory_mb": peak_mb, "wall_time_s": wall_s, **({"trained_with": trained_with} if trained_with else {})}
    atomic_write_json(d / "provenance.json", prov)
    atomic_write_json(d / "metrics.json", {"run_id": run.run_id})


@pytest.fixture(scope="module")
def registry():
    return load()


def _jobs(registry, task: str):
    return [j for j in registry.jobs("smoke") if j.runs[0].config["task"] == task]


def test_a_job_over_its_memory_is_named_with_the_key_to_raise(registry, tmp_path, capsys):
    tpp = _jobs(registry, "temporal_point_process")[:2]
    declared = tpp[0].resources["mem_mb"]
    _write(tpp[0].runs[0], tmp_path, peak_mb=declared + 1, wall_s=1.0)
    _write(tpp[1].runs[0], tmp_path, peak_mb=declared - 1, wall_s=1.0)
    uses = {u.job_id: u for u in resources.check(registry, "smoke", results=tmp_path)}
    assert set(uses) == {tpp[0].job_id, tpp[1].job_id}  # jobs without records are not judged
    assert uses[tpp[0].job_id].over_memory and not uses[tpp[1].job_id].over_memory
    assert uses[tpp[0].job_id].mem_source == "params/scales.yaml scales.smoke.resources.temporal_point_process.mem_mb"
    assert not resources.report(list(uses.values()), "smoke")
    out = capsys.readouterr().out
    assert f"OVER hawkes_attention/{tpp[0].job_id}" in out and tpp[1].job_id not in out


def test_job_peak_is_its_largest_run_and_stacked_seeds_share_their_wall_time(registry, tmp_path):
    job = next(j for j in registry.jobs("smoke") if len(j.runs) == 2)
    per_run_min = job.resources["runtime"] / 2
    for run, peak in zip(job.runs, (100.0, 300.0)):
        _write(run, tmp_path, peak_mb=peak, wall_s=per_run_min * 60 * 1.5, trained_with="stacked ensemble of 2 seeds")
    (use,) = resources.check(registry, "smoke", results=tmp_path)
    assert use.peak_mb == 300.0 and use.runs == 2
    assert use.wall_min == pytest.approx(per_run_min * 1.5) and not use.over_time  # shared: counted once
    for run in job.runs:  # the same wall times from runs one after another add up: over the job's runtime
        _write(run, tmp_path, peak_mb=100.0, wall_s=per_run_min * 60 * 1.5)
    (use,) = resources.check(registry, "smoke", results=tmp_path)
    assert use.wall_min == pytest.approx(per_run_min * 3) and use.over_time


def test_command_exit_status(registry, tmp_path, capsys):
    job = _jobs(registry, "link_prediction")[0]
    _write(job.runs[0], tmp_path, peak_mb=10.0, wall_s=1.0)
    assert main(["--results", str(tmp_path), "resources", "--scale", "smoke"]) == 0
    _write(job.runs[0], tmp_path, peak_mb=job.resources["mem_mb"] * 2, wall_s=1.0)
    assert main(["--results", str(tmp_path), "resources", "--scale", "smoke"]) == 1
    assert "raise params/scales.yaml scales.smoke.resources.link_prediction.mem_mb" in capsys.readouterr().out


def test_no_records_is_not_a_failure(registry, tmp_path):
    assert resources.check(registry, "smoke", results=tmp_path) == []
    assert resources.report([], "smoke")


def test_paper_scale_jobs_are_held_against_their_rehearsal(tmp_path, capsys):
    from timerepro import registry as registry_module
    from timerepro import resources

    from .test_estimate import write_rehearsal

    reg = registry_module.load()
    job = next(j for j in reg.jobs("paper", paper="hawkes_attention") if j.runs[0].config.get("dataset") == "taxi")
    run = job.runs[0]
    write_rehearsal(tmp_path, run, kind="epoch", epoch_s=1.0, once_s=1.0, peak_rss_mb=job.resources["mem_mb"] + 500.0)
    jobs, unchecked = resources.check_rehearsed(reg, results=tmp_path, paper="hawkes_attention")
    mine = [j for j in jobs if j.job_id == job.job_id]
    assert mine and mine[0].over_memory and not mine[0].over_time
    assert unchecked.get("not rehearsed", 0) > 0
    assert not resources.report_rehearsed(jobs, unchecked)
    out = capsys.readouterr().out
    assert f"RAISE {mine[0].mem_source}" in out and "UNCHECKED" in out


def test_resources_are_resolved_per_dataset_and_name_their_key(registry):
    """One size does not fit all: a run asks for its dataset's declaration (task, then model, then scale, each with
    its per_dataset entry), and the check names that entry as the key to raise."""
    lp = registry.tasks["link_prediction"]["resources"]
    uci = registry.resources("link_prediction", "tgat", "paper", "uci")
    assert uci == {k: v for k, v in lp.items() if k != "per_dataset"}
    assert registry.resource_source("link_prediction", "tgat", "paper", "uci", "mem_mb") == \
        "params/tasks.yaml link_prediction.resources.mem_mb"
    big = registry.resources("link_prediction", "dyg_mamba", "paper", "lastfm")
    assert big["mem_mb"] == registry.models["dyg_mamba"]["resources"]["per_dataset"]["lastfm"]["mem_mb"] > lp["mem_mb"]
    assert registry.resource_source("link_prediction", "dyg_mamba", "paper", "lastfm", "mem_mb") == \
        "params/models.yaml dyg_mamba.resources.per_dataset.lastfm.mem_mb"
    assert registry.resource_source("link_prediction", "jodie", "paper", "contacts", "mem_mb") == \
        "params/tasks.yaml link_prediction.resources.per_dataset.contacts.mem_mb"
    # below paper scale the scale's own declaration wins over every per-dataset one
    assert registry.resources("link_prediction", "dyg_mamba", "smoke", "lastfm")["mem_mb"] == \
        registry.scales["scales"]["smoke"]["resources"]["link_prediction"]["mem_mb"]
    runs = [r for r in registry.runs("paper", paper="dyg_mamba") if r.config.get("model") == "dyg_mamba"]
    by_data = {r.config["dataset"]: r.resources["mem_mb"] for r in runs if r.config["task"] == "link_prediction"}
    own = registry.models["dyg_mamba"]["resources"]["per_dataset"]
    assert by_data["lastfm"] == big["mem_mb"] and by_data["uci"] == own["uci"]["mem_mb"]
    assert "mem_mb" not in own.get("enron", {}) and by_data["enron"] == lp["mem_mb"]  # its runtime only: the task's MB
