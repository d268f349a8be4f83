"""benchmarks/reference_table.py's `--device` plumbing (issue 27, item 1: the table on a GPU), checked on CPU: a graph
row's process runs end to end through the device path, cuda is refused where torch sees no GPU, a timed step waits for
the device before each clock read, the GPU columns sit beside the memory columns, a failed process leaves its
traceback and the table goes on, and the budget and --interleave decide which processes run."""

import math
import os
import subprocess
import sys
import time
from argparse import Namespace
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import reference_rows  # noqa: E402
import reference_table  # noqa: E402
from reference_rows import timing  # noqa: E402


def args_for(**kw) -> Namespace:
    base = dict(device="cpu", threads=1, batches=None, dyglib="", dyg_mamba="", mamba_ssm="", timeout=600.0,
                seeds=1, heavy_seeds=2, interleave=False, row_timeout_s=None, no_floor=True, end=math.inf)
    return Namespace(**{**base, **kw})


def test_cuda_is_refused_with_a_clear_error_where_torch_sees_no_gpu(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit) as stop:
        reference_table.main(["--device", "cuda", "--models", "tgat"])
    assert stop.value.code == 2
    assert "--device cuda: torch.cuda.is_available() is False" in capsys.readouterr().err


def test_a_graph_rows_process_runs_end_to_end_through_the_device_path_on_cpu(monkeypatch):
    # the project's side needs no checkout: the same command line the table starts, with --device cpu
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]))
    res = reference_table.child(args_for(batches=1), "project", "jodie", 0)
    assert "error" not in res, res
    assert res["train_step_s"] > 0 and res["eval_step_s"] > 0 and 0.0 <= res["ap"] <= 1.0
    assert len(res["train_steps"]["wall"]) == 2 and "gpu_peak_mb" not in res  # warm-up + 1 timed; no GPU on cpu
    cells = reference_table.row("jodie", {"reference": [{"error": "x"}], "project": [res]})
    assert len(cells) == len(reference_table.HEADER) and cells[4] == f"{res['train_bps']:.2f}"


def test_a_timed_step_waits_for_the_device_before_every_clock_read():
    calls = []

    def sync():  # the device's queued work: counted in the step it belongs to
        calls.append(time.perf_counter())
        time.sleep(0.02)

    _, record = timing.timed(lambda x: x, [1, 2, 3], sync)
    assert len(calls) == 2 * 3 + 1  # before each step's first and last clock read, and before the loop's end
    assert all(w >= 0.02 for w in record["wall"])
    _, plain = timing.timed(lambda x: x, [1, 2, 3])  # cpu: no sync, the clock as before
    assert all(w < 0.02 for w in plain["wall"])


def test_the_gpu_columns_sit_after_the_resident_memory_columns():
    header, widths = reference_table.columns(gpu=True)
    at = header.index("proj MB")
    assert header[at + 1:at + 3] == ["ref GPU MB", "proj GPU MB"] and len(widths) == len(header)
    assert reference_table.columns(gpu=False) == (reference_table.HEADER, reference_table.WIDTHS)
    runs = {"reference": [{"gpu_peak_mb": 10.0, "peak_mb": 1.0}], "project": [{"gpu_peak_mb": 4.0, "peak_mb": 2.0}]}
    cells = reference_table.row("tgat", runs, gpu=True)
    assert len(cells) == len(header) and cells[at + 1:at + 3] == ["10", "4"]


def test_a_failed_process_leaves_its_traceback_on_stderr_and_an_error_cell(capsys):
    res = reference_rows.run_json([sys.executable, "-c", "raise ValueError('boom')"], dict(os.environ), 60)
    assert res == {"error": "ValueError: boom"}
    assert "Traceback" in capsys.readouterr().err
    slow = reference_rows.run_json([sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ), 0.5)
    assert slow["error"].startswith("timed out")
    assert reference_rows.run_json(["false-command-never-run"], {}, 0.0)["error"].startswith("not run")
    out = subprocess.run([sys.executable, "-c", "print('not json')"], capture_output=True, text=True)
    assert out.returncode == 0  # a clean exit without a JSON line is an error too
    assert "error" in reference_rows.run_json([sys.executable, "-c", "print('not json')"], dict(os.environ), 60)


def fake_run_json(calls):
    def run(cmd, env, timeout):
        if timeout <= 0:
            return {"error": "not run: spent"}
        impl, name, seed = cmd[cmd.index("--one") + 1:cmd.index("--one") + 4]
        calls.append((name, int(seed), impl))
        return {"train_step_s": 1.0, "train_cpu_s": 1.0, "eval_step_s": 0.5, "eval_cpu_s": 0.5, "train_bps": 1.0,
                "eval_bps": 2.0, "loss": 0.7, "ap": 0.5, "peak_mb": 1.0}
    return run


def test_interleave_measures_seed_after_seed_and_a_spent_budget_starts_nothing(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(reference_rows, "run_json", fake_run_json(calls))
    printed = []
    args = args_for(models=["tgat", "cawn"], seeds=3, interleave=True)
    _, _, not_measured = reference_table.graph_rows(args, reference_table.row, printed.append)
    # cawn is heavy: 2 seeds; each seed's pair alternates which side goes first
    assert [c[:2] for c in calls[::2]] == [("tgat", 0), ("cawn", 0), ("tgat", 1), ("cawn", 1), ("tgat", 2)]
    assert [c[2] for c in calls[:4]] == ["reference", "project"] * 2 and calls[4][2] == "project"
    assert [cells[0] for cells in printed] == ["cawn", "tgat"] and not not_measured
    calls.clear()
    spent = args_for(models=["tgat"], seeds=2, end=time.monotonic() - 1)
    _, _, not_measured = reference_table.graph_rows(spent, reference_table.row, printed.append)
    assert not calls and "tgat" in not_measured
