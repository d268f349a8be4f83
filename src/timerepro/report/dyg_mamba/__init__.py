"""dyg_mamba ("DyG-Mamba: Continuous State Space Modeling on Dynamic Graphs"): where each artifact of
params/dyg_mamba.yaml is built. Row keys follow params/published/published_values.csv (row_group = negative
sampler "rnd"/"hist"/"ind", row = dataset as printed, column = model as printed), so every reproduced cell sits
beside its published one. Nothing here reads a published value; FreeDyG (Tables 9-11) is published only.

| artifact | module | aggregator / renderer | claims (module) |
|---|---|---|---|
| Table 1 | (criteria of C19) | | C19 (rules_studies.py) |
| Tables 2, 4, 9, 10, 11 | lp_tables.py | dm_table2, dm_table4, dm_table9, dm_table10, dm_table11 | C01, C02, C04-C09, C21 (rules_tables.py) |
| Table 3 | node_classification.py | dm_table3 | C03, C21 (rules_tables.py) |
| Table 5 | ablations.py | dm_table5 | C15, C16 (rules_studies.py) |
| Table 6 | ../dataset_statistics.py | statistics_rows | |
| Tables 7, 8 | settings.py | dm_table7, dm_table8 (`effective_settings`) | |
| Figure 1 | time_information.py | dm_fig1 / dm_fig1_bars (plots.py) | C20 (rules_studies.py) |
| Figure 3 | efficiency.py | dm_fig3 / dm_fig3_cost (plots.py) | C11, C12, C23 (rules_studies.py) |
| Figures 4, 10 | efficiency.py | dm_bubbles / dm_bubbles (plots.py) | C13, C22 (rules_studies.py) |
| Figures 5, 11 | ablations.py | dm_ablation / dm_ablation_bars (plots.py) | C14 (rules_studies.py) |
| Figure 6 | case_study.py | dm_fig6 / dm_fig6 (plots.py) | C10, C24 (rules_studies.py) |
| Figure 7 | sequence_length.py | dm_fig7 / dm_fig7_lines (plots.py) | C17 (rules_studies.py) |
| Figures 8, 9 | robustness.py | dm_noise / dm_noise_lines (plots.py) | C18, C19 (rules_studies.py) |

Shared by the modules: common.py (labels of samplers, variants and the compared models, a run's dataset as
printed, average ranks, published quotes); ../rows.py (cells over runs and their rows).

Cells: test metric x 100, mean and population std over the runs (A18: np.std, as DyGLib). No hyperparameter
search (DyGLib's best configurations), except EdgeBank: per dataset and negative sampler the memory with the best
validation AP (the paper reports "the best of 4 variants"). Average ranks: per dataset, models ranked by their
mean (1 = best, ties share their average rank), then averaged over the datasets where the model has a cell;
FreeDyG is never ranked, EdgeBank not in the inductive tables (C21). docs/dyg_mamba.md has every decision.
"""

PAPER = "dyg_mamba"
