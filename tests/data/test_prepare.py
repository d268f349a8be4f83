"""prepare() is safe when parallel jobs (Snakemake, run-all --jobs, dvc repro) share one data cache."""

import multiprocessing as mp
from pathlib import Path

from timerepro.data.manifest import read_manifest
from timerepro.data.prepare import prepare


def _prepare(root: str, barrier) -> str:
    barrier.wait()  # every process starts the same extraction at the same moment
    return str(prepare("uci", standin="smoke", data_root=root, force=True, progress=False))


def test_concurrent_prepares_of_one_dataset_all_succeed(tmp_path):
    ctx = mp.get_context("spawn")
    n = 4
    with ctx.Manager() as manager, ctx.Pool(n) as pool:
        for _ in range(3):  # the race is timing-dependent: several rounds make a missing lock show
            barrier = manager.Barrier(n)
            outs = pool.starmap(_prepare, [(str(tmp_path), barrier)] * n)
    assert len(set(outs)) == 1
    manifest = read_manifest(Path(outs[0]))
    assert manifest["standin"] is True and manifest["sources"]
    assert not list(tmp_path.rglob("*.tmp"))  # no torn temporary file left behind
