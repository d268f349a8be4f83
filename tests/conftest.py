"""Project-wide pytest options: tests marked `network` talk to real upstream hosts and run only with --run-network."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def pytest_addoption(parser):
    parser.addoption("--run-network", action="store_true", default=False,
                     help="run tests marked @pytest.mark.network (they download from the real upstream hosts)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-network"):
        return
    skip = pytest.mark.skip(reason="needs the real network: pass --run-network")
    for item in items:
        if "network" in item.keywords:
            item.add_marker(skip)


class Killed(Exception):
    """Stands for a process killed mid-training."""


@pytest.fixture
def kill_then_resume(monkeypatch):
    """Run `config` until its n-th checkpoint, 'kill' it there, check what it left, then resume it.

    Returns the run folder of the resumed (complete) run.
    """
    from timerepro import runs

    def go(config, results, after: int):
        original = runs.RunContext.save_checkpoint
        calls = {"n": 0}

        def dying(self, state):
            original(self, state)
            calls["n"] += 1
            if calls["n"] == after:
                raise Killed(f"killed after checkpoint {after}")

        monkeypatch.setattr(runs.RunContext, "save_checkpoint", dying)
        with pytest.raises(Killed):
            runs.execute(config, results=results, show_progress=False)
        d = results / "runs" / config["paper"] / config["run_id"]
        assert (d / "checkpoint.pt").exists() and not (d / "metrics.json").exists()
        monkeypatch.setattr(runs.RunContext, "save_checkpoint", original)
        return runs.execute(config, results=results, show_progress=False)

    return go


@contextlib.contextmanager
def stop_requested_at_step(step: int | None):
    """Count training steps (every torch optimizer's `step`); during step `step` note a stop request as SLURM's
    SIGTERM does (`timerepro.stopping`: the handler only sets the flag, the batch finishes). The flag is cleared
    on the way out, so no later test sees it."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    from timerepro import stopping

    count = {"n": 0}

    def hook(optimizer, args, kwargs):
        count["n"] += 1
        if count["n"] == step:
            stopping.STOP.request(signal.SIGTERM)

    handle = register_optimizer_step_post_hook(hook)
    try:
        yield count
    finally:
        handle.remove()
        stopping.STOP.clear()


@pytest.fixture
def stop_at_step():
    """`with stop_at_step(k):` a stop request during training step k (`stop_requested_at_step`)."""
    return stop_requested_at_step


def without_cost(d: Path) -> tuple[dict, list]:
    """A run record's metrics and history without what measures the machine (seconds, peak memory)."""
    def keep(k: str) -> bool:
        return not (k.endswith("_time_s") or k.startswith("peak_"))

    metrics = json.loads((d / "metrics.json").read_text())
    history = json.loads((d / "history.json").read_text())
    return {k: v for k, v in metrics.items() if keep(k)}, [{k: v for k, v in row.items() if keep(k)} for row in history]


@pytest.fixture
def stop_then_resume(monkeypatch):
    """Run `config` whole; run it again with a stop request during the second training step of its second epoch;
    check that the job exited to be retried (`JobStopped`, status 75) with a checkpoint before the third batch of
    that epoch and no metrics; resume it, and check that it ends with the whole run's metrics and history, to the
    bit. Returns the resumed run's folder."""
    import torch

    from timerepro import runs, stopping

    def go(config, results: Path) -> Path:
        ends: list[int] = []  # training steps taken when each epoch's history was written
        write = runs.RunContext.write_history
        monkeypatch.setattr(runs.RunContext, "write_history", lambda self, h: ends.append(count["n"]) or write(self, h))
        with stop_requested_at_step(None) as count:
            whole = runs.execute(config, results=results / "whole", show_progress=False)
        assert len(ends) >= 2 and ends[1] - ends[0] >= 3, f"two epochs of 3+ steps needed, steps at epoch ends: {ends}"
        with stop_requested_at_step(ends[0] + 2) as count, pytest.raises(stopping.JobStopped) as stopped:
            runs.execute(config, results=results / "stopped", show_progress=False)
        assert stopped.value.code == stopping.EXIT_STOPPED
        d = results / "stopped" / "runs" / config["paper"] / config["run_id"]
        ckpt = torch.load(d / "checkpoint.pt", weights_only=False)
        assert (ckpt["epoch"], ckpt["batch"]) == (0, 2) and not (d / "metrics.json").exists()
        with stop_requested_at_step(None) as count:
            resumed = runs.execute(config, results=results / "stopped", show_progress=False)
        assert json.loads((resumed / "provenance.json").read_text())["resumed_from_epoch"] == 0
        assert without_cost(resumed) == without_cost(whole)
        return resumed

    return go


@pytest.fixture(scope="session")
def standin_root(tmp_path_factory):
    """One data folder for the session; `standin_root("uci", ...)` prepares those smoke stand-ins once and returns it."""
    root = tmp_path_factory.mktemp("standin-data")
    prepared: set[str] = set()

    def prepare_names(*names: str):
        from timerepro.data.prepare import prepare

        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("TIMEREPRO_DATA", str(root))
            for name in names:
                if name not in prepared:
                    prepare(name, standin="smoke", progress=False)
                    prepared.add(name)
        return root

    return prepare_names


@pytest.fixture
def one_thread():
    """One torch thread for a test of tiny tensors (two threads on a busy two-core machine run many times slower).
    Opt in with `pytestmark = pytest.mark.usefixtures("one_thread")`."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def copy_working_tree(dst: Path) -> Path:
    """The working tree as it is (committed or not, links kept as links: ./slurm is a profile),
    without what git ignores (.venv, results, data, .snakemake)."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                            capture_output=True, text=True, timeout=60, check=True).stdout
    for rel in filter(None, listed.split("\0")):
        src = REPO / rel
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst / rel)
        elif src.is_file():  # deleted-but-tracked files are skipped
            shutil.copy2(src, dst / rel)
    return dst


@pytest.fixture(scope="session")
def scratch_copy():
    """`scratch_copy(folder)` copies the working tree there (see copy_working_tree) and returns it."""
    return copy_working_tree
