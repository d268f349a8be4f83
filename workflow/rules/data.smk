# Data rules: each processed dataset a training job reads is an input of that job, made here on
# the submitting host (downloads need its network; a cluster's nodes read the shared cache).
# A stand-in is generated (no network); real data are fetched, verified against the pinned
# sha256 of params/datasets.lock.yaml (`timerepro data pin --all` once) and preprocessed.


rule prepare_dataset:
    """Fetch, verify, extract and preprocess one real dataset: <data>/processed/<dataset>/."""
    output:
        DATA / "processed" / "{dataset}" / "manifest.json",
    log:
        DATA / "logs" / "prepare_{dataset}.log",
    conda:
        CONDA_ENV
    params:
        tr=TR,
    shell:
        "{params.tr} data prepare {wildcards.dataset} --require-pinned > {log} 2>&1"


rule prepare_standin:
    """Generate a labelled synthetic stand-in in the upstream format and preprocess it."""
    output:
        DATA / "standin" / "{scale}" / "processed" / "{dataset}" / "manifest.json",
    log:
        DATA / "logs" / "standin_{scale}_{dataset}.log",
    wildcard_constraints:
        scale="|".join(STANDIN_SCALES),
    conda:
        CONDA_ENV
    params:
        tr=TR,
    shell:
        "{params.tr} data prepare {wildcards.dataset} --standin {wildcards.scale} > {log} 2>&1"
