"""Evaluation probes of a trained link-prediction model, run after its test evaluation when the config asks:
what a paper's figure reads beyond the metrics. Each is a `Probe` (base.py: one signature); they live with the
tasks, so no model module imports them and a model's code fingerprint holds only what trains and scores it.

| probe | config key | writes | for |
|---|---|---|---|
| attention_maps | `record_attention: k` (DyGFormer-separate, DyGDecoder) | attention_records.npz | linear_time Figures 7-12 |
| noise | `noise_ratios: [...]` (`noise_mode`, `noise_batch_size`) | metrics `test_{transductive,inductive}_random_noise<r>_{ap,auc}` | dyg_mamba Figures 8, 9 |
| case_study | `case_study_edges: k` (DyG-Mamba, DyGFormer) | case_study.npz | dyg_mamba Figure 6 (B-D) |
"""

from __future__ import annotations

from timerepro.tasks.probes import attention_maps, case_study, noise
from timerepro.tasks.probes.base import Probe, Trained

PROBES = {  # run in this order, each from the state the test evaluation left (Trained.start_pass)
    "attention_maps": Probe(attention_maps.wants, attention_maps.probe),
    "noise": Probe(noise.wants, noise.probe),
    "case_study": Probe(case_study.wants, case_study.probe),
}


def run_probes(trained: Trained, config: dict, ctx) -> dict:
    """The extra metrics of every probe the config asks for (their artifacts are written in the run folder)."""
    metrics: dict = {}
    for probe in PROBES.values():
        if probe.wants(config):
            metrics.update(probe.run(trained, config, ctx))
    return metrics


__all__ = ["PROBES", "Probe", "Trained", "run_probes"]
