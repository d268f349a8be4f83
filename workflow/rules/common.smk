# Shared by the workflow files: the registry's jobs at this scale, where results and data live,
# the one interpreter of every job, and the input functions (this file defines no rules).

import os
import sys
from pathlib import Path

from snakemake.settings.types import DeploymentMethod

from timerepro import batching, cluster, records, registry, scheduler_timer
from timerepro.data.pinning import unpinned_report
from timerepro.fingerprint import Fingerprinter, run_datasets
from timerepro.report.families import report_fingerprint
from timerepro.names import STANDIN_SCALES
from timerepro.paths import data_dir, processed_path, results_dir

cluster.normalise_slurm_job_states()  # plugin 2.8.0 never notices scancel-ed jobs (docs/cluster.md)
scheduler_timer.single_reevaluation_timer()  # one wake-up timer, not one more per finished job (its docstring)

SCALE = config["scale"]
RESULTS = Path(config.get("results") or results_dir()).resolve()
DATA = Path(config.get("data_dir") or data_dir()).resolve()
# the interpreter that runs Snakemake (the project's environment, also on SLURM nodes of a shared
# file system); `python` of the rule's conda environment when deploying with --sdm conda
PYTHON = "python" if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method else sys.executable
TR = f"{PYTHON} -m timerepro --results {RESULTS} --data-dir {DATA}"
CONDA_ENV = "../../environment.yml"
REG = registry.load()
# the processes Snakemake starts (here, or a SLURM job's own Snakemake through sbatch --export=ALL) skip the
# reference checks this parse ran on the same files (timerepro.registry.CHECKED_ENV)
os.environ[registry.CHECKED_ENV] = REG.checks_digest
JOBS = {j.job_id: j for j in REG.jobs(SCALE)}
PAPERS = list(registry.PAPERS)
FINGERPRINTS = Fingerprinter(models=REG.models)
JOB_CODE = {jid: FINGERPRINTS.job([r.config for r in j.runs]) for jid, j in JOBS.items()}
# one run-job process per batch of jobs made by the same code (params/scales.yaml `runs_per_batch`)
BATCHES = {b.batch_id: b for b in batching.batches(JOBS.values(), JOB_CODE, batching.runs_per_batch(REG, SCALE))}
REPORT_CODE = report_fingerprint(FINGERPRINTS.source)  # the aggregators' and renderers' code
# A SLURM job's own Snakemake (remote mode) parses this file again for its one job: the submitting process has
# written the stamps and printed the warning (the unpinned report alone is 1.7 s at paper scale, per job).
if not workflow.remote_exec:
    for _paper in PAPERS:  # rewritten only when a job's or the report's fingerprint changed (records.update_code_stamp)
        records.update_code_stamp(
            records.code_stamp(RESULTS, _paper),
            {jid: JOB_CODE[jid] for jid, j in JOBS.items() if j.paper == _paper},
            report_code=REPORT_CODE,
        )
    if any("standin" in r.config and not r.config["standin"] for j in JOBS.values() for r in j.runs):
        _unpinned = unpinned_report(REG, SCALE)
        if _unpinned:
            print(f"WARNING: {_unpinned}", file=sys.stderr)


def batch_marker(batch):
    return records.job_marker(RESULTS, batch.paper, batch.batch_id, batch.code)


def paper_jobs(wc):
    """The markers of a paper's batches, each named by the fingerprint of the current code, and the file
    of the jobs' fingerprints (newer than the aggregate when one changed)."""
    return [batch_marker(b) for b in BATCHES.values() if b.paper == wc.paper] + [records.code_stamp(RESULTS, wc.paper)]


def batch_jobs(wc):
    """The job ids a batch runs, one after another in one process."""
    return " ".join(j.job_id for j in BATCHES[wc.batch].jobs)


def job_data(wc):
    """The processed datasets (manifest.json) a batch's runs read: real ones or the scale's stand-ins."""
    wanted = {(name, r.config.get("standin")) for r in BATCHES[wc.batch].runs for name in run_datasets(r.config)}
    return sorted(str(processed_path(name, standin, DATA) / "manifest.json") for name, standin in wanted)


def stop_signal(wc, attempt):
    """SLURM's early warning before a training job's time limit (timerepro.stopping: checkpoint at the next batch,
    exit 75, the retry resumes): SIGUSR1 120 s before it, for jobs of 10 minutes or more; SLURM may deliver it up to
    60 s early, so a shorter job would be warned at its start: those stop on the SIGTERM at the limit."""
    return "--signal=USR1@120" if job_resource("runtime")(wc, attempt) >= 10 else ""


def job_resource(key):
    """A batch's resource from params/ (through the registry: the sum of its jobs' runtimes, the largest
    memory); memory and time grow with each retry."""

    def get(wc, attempt):
        base = BATCHES[wc.batch].resources[key]
        return base * attempt if key in ("mem_mb", "runtime") else base

    return get
