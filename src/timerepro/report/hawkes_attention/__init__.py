"""hawkes_attention ("Hawkes Attention"): where each artifact of params/hawkes_attention.yaml is built.

| artifact | module | aggregator / renderer | claims |
|---|---|---|---|
| Table 1 | ../dataset_statistics.py | statistics_rows | |
| Table 2 | point_process.py | tpp_rmse | c01, c02 |
| Table 3 | point_process.py | tpp_error_rate | c03, c04 |
| Table 4 | point_process.py | tpp_ablation_shared | c05 |
| Table 5 | point_process.py | tpp_ablation_pe | c06 |
| Tables 6, 7, 8 | point_process.py | tpp_baseline_hyperparameters, tpp_structure, tpp_dataset_hyperparameters | |
| Figure 2 | point_process.py | tpp_kernels / kernel_curves | c10 |
| Table 9 | forecasting.py | forecasting_table9 | c07, c08 |
"""

PAPER = "hawkes_attention"
