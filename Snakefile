# The whole pipeline: params/ -> data -> runs -> run records -> aggregates -> notebooks -> claims -> report.
#
#   snakemake --profile local                        offline default (params/run.yaml)
#   snakemake --profile local --config scale=smoke   the tiny end-to-end check
#   snakemake --profile slurm --config scale=paper   one SLURM job per training run
#   snakemake -n                                     list what would run
#
# (`local`, `slurm`, `slurm-drmaa` in the repository root point to profiles/*.) The set of runs
# comes from timerepro.registry, the same expansion `timerepro dvc` writes into dvc.yaml. A job's
# output is named by the fingerprint of the code and pinned data its runs are made by, so a code
# change makes exactly the jobs of the runs that use that code due again (timerepro.fingerprint).
# `--config results=DIR data_dir=DIR` move every output and the data cache.

from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "params/run.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/report.smk"


localrules:
    all,
    prepare_dataset,
    prepare_standin,
    aggregate,
    notebook,
    claims,
    report,


rule all:
    default_target: True
    input:
        RESULTS / "report" / "index.html",
