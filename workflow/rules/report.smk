# Aggregation, the papermill notebook of each paper, claim verdicts and the HTML report.
# These are cheap and run where Snakemake runs (localrules), never as cluster jobs.


def paper_jobs(wc):
    return [RESULTS / "jobs" / j.paper / f"{j.job_id}.json" for j in JOBS.values() if j.paper == wc.paper]


rule aggregate:
    input:
        paper_jobs,
        f"params/{{paper}}.yaml",
    output:
        csv=RESULTS / "aggregated" / "{paper}.csv",
        provenance=RESULTS / "aggregated" / "{paper}.provenance.json",
    shell:
        "{TR} aggregate {wildcards.paper} --scale {SCALE}"


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
    shell:
        "{TR} notebook {wildcards.paper} --scale {SCALE} --quiet > {log} 2>&1"


rule claims:
    input:
        expand(RESULTS / "aggregated" / "{paper}.csv", paper=PAPERS),
    output:
        RESULTS / "claims.json",
    shell:
        "{TR} claims --scale {SCALE}"


rule report:
    input:
        RESULTS / "claims.json",
        expand(RESULTS / "rendered" / "{paper}.json", paper=PAPERS),
    output:
        RESULTS / "report" / "index.html",
    shell:
        "{TR} report --scale {SCALE}"
