"""A training job stopped by SLURM mid-epoch resumes at that batch on its retry, to the same metrics.

One link-prediction run (the smoke UCI stand-in) runs as a SLURM job through the shipped profile. Its first
attempt holds a training batch of its second epoch until the test has sent the job SLURM's early-warning
signal (`scancel --signal=USR1`, what the profile's `--signal=USR1@...` sends before the time limit); the
job writes a checkpoint at the next batch boundary and exits 75; the profile's retry resumes there and
ends with the metrics of an uninterrupted run made in the test process.
"""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from timerepro import registry, runs
from timerepro.tasks import link_prediction

from .conftest import by_rule, is_final, run_id, wait_for

pytestmark = pytest.mark.slurm

SNAKEFILE = textwrap.dedent(
    """
    from timerepro.cluster import normalise_slurm_job_states
    normalise_slurm_job_states()

    rule fit:
        output: "fitted.txt"
        resources: mem_mb=3000, runtime=10
        shell: "echo $SLURM_JOB_ID >> attempts.txt; python fit.py config.json results {config[pause_at]} 2>> fit.log; "
               "echo $SLURM_JOB_ID > {output}"
    """
)

# the job's program: `timerepro run-job` runs configs through runs.execute just so. The first attempt holds
# training batch `pause_at` until the test says it has signalled the job (the signal lands inside the batch).
FIT = textwrap.dedent(
    """
    import json, logging, os, sys, time
    from pathlib import Path
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    from timerepro import runs
    from timerepro.tasks import link_prediction

    config, results, pause_at = json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2]), int(sys.argv[3])
    if not Path("paused").exists():
        score, calls = link_prediction.LinkPredictionModel.score, {"n": 0}

        def scoring(self, *args, **kw):
            if self.training:
                calls["n"] += 1
                if calls["n"] == pause_at:
                    Path("paused").write_text(os.environ["SLURM_JOB_ID"])
                    deadline = time.monotonic() + 120
                    while not Path("signalled").exists() and time.monotonic() < deadline:
                        time.sleep(0.1)
                    time.sleep(2)
            return score(self, *args, **kw)

        link_prediction.LinkPredictionModel.score = scoring
    runs.execute(config, results=results, show_progress=False)
    """
)

COST = {"epoch_time_s", "peak_rss_mb", "peak_gpu_memory_mb"}  # measurements, not results


def _config() -> dict:
    reg = registry.load()
    over = dict(paper="linear_time", experiment="lp_stop", task="link_prediction", dataset="uci", standin="smoke",
                model="tgat", encoder="linear", d_T=4, dropout=0.1, lr=1e-3, batch_size=50, max_epochs=3,
                patience=5, num_neighbors=3, num_layers=2, num_heads=2, eval_negatives=["random"], seed=0)
    cfg = {**reg.tasks["link_prediction"]["defaults"], **reg.models["tgat"]["defaults"], **over}
    cfg["run_id"] = registry.run_id(cfg)
    return cfg


def test_job_signalled_mid_epoch_resumes_on_its_retry_to_the_metrics_of_an_uninterrupted_run(
        slurm_cluster, tmp_path, monkeypatch):
    wd = tmp_path / "wd"
    wd.mkdir()
    monkeypatch.setenv("TIMEREPRO_DATA", str(tmp_path / "data"))
    cfg = _config()
    score, calls = link_prediction.LinkPredictionModel.score, {"n": 0}

    def counting(self, *args, **kw):
        calls["n"] += self.training
        return score(self, *args, **kw)

    monkeypatch.setattr(link_prediction.LinkPredictionModel, "score", counting)
    ref = runs.execute(cfg, results=tmp_path / "uninterrupted", show_progress=False)
    expected = json.loads((ref / "metrics.json").read_text())
    per_epoch = calls["n"] // expected["epochs_run"]
    assert expected["epochs_run"] == 3 and per_epoch >= 4

    (wd / "Snakefile").write_text(SNAKEFILE)
    (wd / "fit.py").write_text(FIT)
    (wd / "config.json").write_text(json.dumps(cfg))
    env = {**slurm_cluster.env, "TIMEREPRO_DATA": str(tmp_path / "data")}
    cmd = slurm_cluster.snakemake_cmd("--config", f"pause_at={per_epoch + 3}", timeout=600)
    log = tmp_path / "snakemake.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen(cmd, cwd=wd, env=env, stdout=sink, stderr=subprocess.STDOUT, text=True)
        try:
            wait_for(wd / "paused", proc, log, timeout=300)
            job = (wd / "paused").read_text().strip()
            slurm_cluster.run(["scancel", "--signal=USR1", job])
            (wd / "signalled").touch()
            assert proc.wait(timeout=600) == 0, log.read_text()
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=60)

    output = log.read_text()
    jobs = by_rule(slurm_cluster.wait_sacct(lambda rows: len(rows) == 2 and all(map(is_final, rows)),
                                            name=run_id(output)))["fit"]
    assert [r["State"].split()[0] for r in jobs] == ["FAILED", "COMPLETED"], jobs
    fit_log = (wd / "fit.log").read_text()
    assert "stop requested: checkpoint before batch 3 of epoch 1" in fit_log, fit_log
    assert "resumed from checkpoint before batch 3 of epoch 1" in fit_log, fit_log
    d = wd / "results" / "runs" / cfg["paper"] / cfg["run_id"]
    got = json.loads((d / "metrics.json").read_text())
    assert json.loads((d / "provenance.json").read_text())["resumed_from_epoch"] == 0
    assert {k: v for k, v in got.items() if k not in COST} == {k: v for k, v in expected.items() if k not in COST}
