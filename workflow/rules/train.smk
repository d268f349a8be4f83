# One scheduler job per batch: jobs of one paper made by the same code, run one after another in one
# process, up to params/scales.yaml `runs_per_batch` runs (a job is `seeds_per_job` seeds of one
# configuration; both 1 at paper scale, so every training run is its own SLURM job; timerepro.batching).
# Each run inside writes its own run record under runs/<paper>/<run_id>/; the batch's marker, named
# by the fingerprint of the code and data the runs are made by, lists them once all are complete.
# Resources come from params/ through the registry; time and memory grow with each retry.


rule train:
    input:
        job_data,
    output:
        RESULTS / "jobs" / "{paper}" / "{batch}.{code}.json",
    log:
        out=RESULTS / "logs" / "jobs" / "{paper}" / "{batch}.{code}.log",
        timing=RESULTS / "logs" / "jobs" / "{paper}" / "{batch}.{code}.timing.json",
    wildcard_constraints:
        batch="[0-9a-f]{12}",
        code="[0-9a-f]{16}",
    conda:
        CONDA_ENV
    threads: lambda wc: BATCHES[wc.batch].resources["cpus"]
    resources:
        mem_mb=job_resource("mem_mb"),
        runtime=job_resource("runtime"),
        gpu=job_resource("gpu"),
        # GPU type from TIMEREPRO_SLURM_GPU_MODEL, only for jobs that ask for a GPU ('' = none asked)
        gpu_model=lambda wc: cluster.gpu_model() if BATCHES[wc.batch].resources["gpu"] else "",
        cpus_per_task=job_resource("cpus"),
        slurm_extra=stop_signal,
    params:
        tr=TR,
        scale=SCALE,
        jobs=batch_jobs,
    shell:
        "{params.tr} run-job {wildcards.paper} {params.jobs} --scale {params.scale} --marker {output} "
        "--threads {threads} --timing {log.timing} --quiet > {log.out} 2>&1"
