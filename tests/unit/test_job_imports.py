"""A job's process imports only what its runs use: pandas (about 0.3 CPU-second of every process's start-up) is for
preparing data, never for a run, which reads processed arrays (issue 27)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from timerepro.tasks.registry import TASKS

SRC = Path(__file__).resolve().parents[2] / "src"
NOT_ON_THE_RUN_PATH = ("pandas", "matplotlib", "papermill", "sklearn")
TABLE_TASKS = {"dataset_statistics"}  # its runs build pandas tables


def test_a_run_tasks_modules_import_no_preparation_or_report_library():
    tasks = sorted(set(TASKS) - TABLE_TASKS)
    code = ("import json, sys; from timerepro import cli, runs; cli._registry(); runs.load_once(sys.argv[1:]); "
            f"print(json.dumps([m for m in {NOT_ON_THE_RUN_PATH!r} if m in sys.modules]))")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, "-c", code, *tasks], capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
