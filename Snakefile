# The whole pipeline: params/ -> runs -> run records -> aggregates -> notebooks -> claims -> report.
#
#   snakemake --profile profiles/local                       offline default (params/run.yaml)
#   snakemake --profile profiles/local --config scale=smoke  the tiny end-to-end check
#   snakemake --profile profiles/slurm --config scale=paper  one SLURM job per training run
#   snakemake -n                                             list what would run
#
# The set of runs comes from timerepro.registry, the same expansion `timerepro dvc` writes
# into dvc.yaml. `--config results=DIR` moves every output (default ./results).

import os
import sys
from pathlib import Path

from timerepro import cluster, registry
from timerepro.paths import results_dir

cluster.normalise_slurm_job_states()  # plugin 2.8.0 never notices scancel-ed jobs (docs/cluster.md)

configfile: "params/run.yaml"


SCALE = config["scale"]
RESULTS = Path(config.get("results") or results_dir()).resolve()
os.environ["TIMEREPRO_RESULTS"] = str(RESULTS)  # seen by every job's shell, local or SLURM
TR = f"{sys.executable} -m timerepro"
REG = registry.load()
JOBS = {j.job_id: j for j in REG.jobs(SCALE)}
PAPERS = list(registry.PAPERS)


include: "workflow/rules/train.smk"
include: "workflow/rules/report.smk"


include: "workflow/rules/data.smk"


localrules:
    all,
    fetch_dataset,
    prepare_dataset,
    prepare_standin,
    aggregate,
    notebook,
    claims,
    report,


rule all:
    input:
        RESULTS / "report" / "index.html",
    default_target: True
