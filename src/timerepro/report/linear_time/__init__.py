"""linear_time ("Between Linear and Sinusoidal: Rethinking the Time Encoder in Dynamic Graph Learning"): where each
artifact of params/linear_time.yaml is built. Aggregators turn run records into rows, renderers draw figures, rules
judge claims; shared link-prediction pieces (selection on validation AP, win rule, readers) are in
`report/link_prediction.py`, dataset statistics in `report/dataset_statistics.py`.

| artifact | module | aggregator / renderer | claims |
|---|---|---|---|
| Figure 2 | synthetic.py | seqcls_accuracy / accuracy_vs_dim | c17 |
| Figure 3 | synthetic.py | seqcls_attention / attention_by_index | c18 |
| Tables 1, 2, 4, 9 | ap_tables.py | lp_ap_random (1, 9), lp_ap_historical (2), lp_ap_cosine_vs_sine_cosine (4) | c01-c09, c12 |
| Table 6 | ap_tables.py | lp_time_vs_position | c10 |
| Tables 3, 5 | ../dataset_statistics.py, statistics.py | statistics_rows | c19 |
| Tables 7, 8 | costs.py | lp_epoch_time, lp_peak_memory | c11 |
| Figures 5, 6 | dimensions.py | lp_tgat_dim, lp_dygformer_dtc / ap_vs_dimension | c14-c16 |
| Figures 7-12 | attention_maps.py | lp_attention_map / attention_map_source, _destination, _both | |
| Table 10 | node_classification.py | nc_auc | c13 |
"""

PAPER = "linear_time"
