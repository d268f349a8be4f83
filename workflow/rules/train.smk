# One scheduler job per configuration chunk (params/scales.yaml `seeds_per_job`; 1 at paper scale,
# so every training run is its own SLURM job). Each run inside writes its own run record under
# runs/<paper>/<run_id>/; the job marker, named by the fingerprint of the code and data the runs
# are made by, lists them once all are complete. Resources come from params/ through the
# registry; time and memory grow with each retry.


rule train:
    input:
        job_data,
    output:
        RESULTS / "jobs" / "{paper}" / "{job_id}.{code}.json",
    wildcard_constraints:
        job_id="[0-9a-f]{12}",
        code="[0-9a-f]{16}",
    threads: lambda wc: JOBS[wc.job_id].resources["cpus"]
    resources:
        mem_mb=job_resource("mem_mb"),
        runtime=job_resource("runtime"),
        gpu=job_resource("gpu"),
        # GPU type from TIMEREPRO_SLURM_GPU_MODEL, only for jobs that ask for a GPU ('' = none asked)
        gpu_model=lambda wc: cluster.gpu_model() if JOBS[wc.job_id].resources["gpu"] else "",
        cpus_per_task=job_resource("cpus"),
    log:
        RESULTS / "logs" / "jobs" / "{paper}" / "{job_id}.{code}.log",
    params:
        tr=TR,
        scale=SCALE,
    conda:
        CONDA_ENV
    shell:
        "{params.tr} run-job {wildcards.paper} {wildcards.job_id} --scale {params.scale} --marker {output} "
        "--threads {threads} --quiet > {log} 2>&1"
