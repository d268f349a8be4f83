# Aggregation, the papermill notebook of each paper, claim verdicts and the HTML report.
# These are cheap and run where Snakemake runs (localrules), never as cluster jobs.


rule aggregate:
    input:
        paper_jobs,
        "params/{paper}.yaml",
    output:
        csv=RESULTS / "aggregated" / "{paper}.csv",
        provenance=RESULTS / "aggregated" / "{paper}.provenance.json",
        metrics=RESULTS / "metrics" / "{paper}.json",
        plots=directory(RESULTS / "plots" / "{paper}"),
    log:
        RESULTS / "logs" / "aggregate" / "{paper}.log",
    conda:
        CONDA_ENV
    params:
        tr=TR,
        scale=SCALE,
    shell:
        "{params.tr} aggregate {wildcards.paper} --scale {params.scale} > {log} 2>&1"


rule notebook:
    input:
        RESULTS / "aggregated" / "{paper}.csv",
        "workflow/notebooks/{paper}.ipynb",
        "params/published/published_values.csv",
    output:
        notebook=RESULTS / "notebooks" / "{paper}.ipynb",
        manifest=RESULTS / "rendered" / "{paper}.json",
    log:
        RESULTS / "logs" / "notebooks" / "{paper}.log",
    conda:
        CONDA_ENV
    params:
        tr=TR,
        scale=SCALE,
    shell:
        "{params.tr} notebook {wildcards.paper} --scale {params.scale} --quiet > {log} 2>&1"


rule claims:
    input:
        expand(RESULTS / "aggregated" / "{paper}.csv", paper=PAPERS),
    output:
        RESULTS / "claims.json",
    log:
        RESULTS / "logs" / "claims.log",
    conda:
        CONDA_ENV
    params:
        tr=TR,
        scale=SCALE,
    shell:
        "{params.tr} claims --scale {params.scale} > {log} 2>&1"


rule report:
    input:
        RESULTS / "claims.json",
        expand(RESULTS / "rendered" / "{paper}.json", paper=PAPERS),
    output:
        RESULTS / "report" / "index.html",
    log:
        RESULTS / "logs" / "report.log",
    conda:
        CONDA_ENV
    params:
        tr=TR,
        scale=SCALE,
    shell:
        "{params.tr} report --scale {params.scale} > {log} 2>&1"
