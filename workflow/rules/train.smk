# One scheduler job per configuration chunk (params/scales.yaml `seeds_per_job`; 1 at paper scale,
# so every training run is its own SLURM job). Each run inside writes its own run record under
# runs/<paper>/<run_id>/; the job marker lists them once all are complete. Resources come from
# params/ through the registry; time and memory grow with each retry.


def _res(key):
    def get(wc, attempt):
        base = JOBS[wc.job_id].resources[key]
        return base * attempt if key in ("mem_mb", "runtime") else base

    return get


rule train:
    output:
        RESULTS / "jobs" / "{paper}" / "{job_id}.json",
    wildcard_constraints:
        job_id="[0-9a-f]{12}",
    threads: lambda wc: JOBS[wc.job_id].resources["cpus"]
    resources:
        mem_mb=_res("mem_mb"),
        runtime=_res("runtime"),
        gpu=_res("gpu"),
        # GPU type from TIMEREPRO_SLURM_GPU_MODEL, only for jobs that ask for a GPU ('' = none asked)
        gpu_model=lambda wc: cluster.gpu_model() if JOBS[wc.job_id].resources["gpu"] else "",
        cpus_per_task=_res("cpus"),
    log:
        RESULTS / "logs" / "jobs" / "{paper}" / "{job_id}.log",
    shell:
        "{TR} run-job {wildcards.paper} {wildcards.job_id} --scale {SCALE} --threads {threads} --quiet > {log} 2>&1"
