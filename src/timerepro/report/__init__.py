"""The report: run records -> aggregated rows -> tables, figures, claim verdicts, one HTML page.

Engine (knows no paper):
    aggregate.py   records -> results/aggregated/<paper>.csv; `@aggregator`; the `data_kind` of each row
    claims.py      claim verdicts -> results/claims.json; `@rule`; verdicts on stand-ins withheld
    figures.py     `@renderer`; style(), stamp(), PALETTE, ENCODER_COLORS, save()
    tables.py      published beside reproduced (Markdown, LaTeX, HTML)
    published.py   the paper's numbers, only from params/published/published_values.csv
    render.py      one paper's tables and figures (called by its papermill notebook)
    html.py        results/report/index.html, with the marks of:
    staleness.py   numbers made by other code or data (freshness.py): modules changed, refresh commands
    suspects.py    link-prediction APs below EdgeBank's on the same data (floors.py), per paper layout
    cost_plan.py   what a paper-scale rerun costs per artifact (estimate.py)
    badges.py      the data-kind badge of an artifact (`data_kind`)
    notebooks.py   the thin notebooks under workflow/notebooks/
    families.py    fills the catalogs from the modules below (listed in timerepro/report_catalog.py)
Shared task-family pieces (no registration of their own beyond generic aggregators):
    rows.py                cells over runs and their rows (`over_runs`, `cell_row`, `values_row`, `group_by`)
    link_prediction.py     DyGLib protocol: selection on validation AP, AP tables and the win rule, cost rows
    dataset_statistics.py  `statistics_rows` (every paper's dataset-statistics tables)
Labels: timerepro.names (models, encoders; a dataset's printed name from params/datasets.lock.yaml); colours:
figures.PALETTE; record metric names: timerepro.metric_keys.
Papers (each package's __init__ lists artifact -> module -> function -> claims):
    linear_time/       e.g. Table 2: linear_time/ap_tables.py `lp_ap_historical`
    dyg_mamba/         e.g. Table 4: dyg_mamba/lp_tables.py `dm_table4`, claims in dyg_mamba/rules_tables.py
    time2vec/          e.g. Figure 3: time2vec/synthetic.py `t2v_synthetic`, claims in time2vec/rules.py
    hawkes_attention/
    swinit.py          (one module: Tables 1-4 and claims c01-c08)
"""
