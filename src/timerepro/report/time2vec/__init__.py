"""time2vec ("Time2Vec: Learning a Vector Representation of Time"): where each artifact of params/time2vec.yaml is
built.

| artifact | module | aggregator / renderer | claims (rules.py) |
|---|---|---|---|
| Figures 1, 2 | curves.py | t2v_curves_best / t2v_curves (plots.py) | c01, c02 (1), c03 (2) |
| Figure 3 | synthetic.py | t2v_synthetic / t2v_preactivation | c06 |
| Figure 4 | synthetic.py | t2v_sine_weights / t2v_sine_weights | c07 |
| Figure 5 | curves.py | t2v_ablations / t2v_ablations (plots.py) | c04, c05, c08, c09 |
| Figures 6-14 | curves.py | t2v_curves / t2v_curves (plots.py) | c11 (6), c10 (7-14) |

The synthetic task's figures read each run's sines in a canonical form (sines.py: a sin(w tau + phi), w folded
into [0, pi / scale], a > 0); Figures 1, 2, 5-14 are metric curves against the training epoch with a band of one
standard deviation over runs, read from each run's history (`records.read_history`).
"""

PAPER = "time2vec"
