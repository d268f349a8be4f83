"""Project-wide pytest options: tests marked `network` talk to real upstream hosts and run only with --run-network."""

import os
import shutil
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
