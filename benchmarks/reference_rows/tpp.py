"""What the two TPP rows (EasyTPP's runner, the Hawkes Attention authors' runner) share: the sequences, the run
configs, the project's side, and the reference side's loop over an EasyTPP-style `ModelWrapper.run_batch`.

Inputs: Hawkes-process sequences shaped as Taxi (hawkes_attention Table 1: K = 10 types, 36 to 38 events per
sequence; `timerepro.data.standins`' generator), written once as EasyTPP JSON files (the reference reads them
with its own TPPDataLoader: HF `json` loading, EventTokenizer, collator) and as the project's CSR npz (read with
`timerepro.tpp.iterate_batches`); batches of `batch` sequences in stored order (no shuffle, both sides).
Training: 1 + n batches, the first untimed; evaluation: 1 + n other batches, the first untimed, each scored as
each side's test evaluation scores it (log-likelihood on EasyTPP's 20-point grid and one-step thinning
predictions after every event, thinning settings of the run config).

Floor (`floor=True`, the project's process of seed 0, after its timed phases): one more training step and one more
evaluation batch of the project under torch.profiler, and the self time of their product kernels (`PRODUCTS`:
matrix products, and the fused RNN layers of nn.RNN/GRU/LSTM, gates included, which no implementation of those
classes avoids). The project's step is an exact float32 implementation (one encoder pass per batch and phase, the
intensity only at the proposals thinning reads): the reference step's time over these seconds is what an exact
float32 implementation with these products could gain at most (issue 27, item 2). That bound is generous where
element-wise work dominates, so two more lines follow it (`elementwise.floor_lines`): the products plus the calls of
the element-wise kernels every exact implementation runs (`elementwise.UNAVOIDABLE`, per phase `phase_kernels`:
for THP the attention's softmax and its backward, the FFN's ReLU and its backward, the time encoding's sin and cos,
the softplus's log1p on the integral's grid, at the events and at the thinning's proposals, its derivative in
training, the events' log), recorded in the same profiled step and replayed outside the profiler; then those plus
the dropout masks the project's stream draws (none at the rows' dropout 0: EasyTPP's example configs).
"""

from __future__ import annotations

import json
import resource
import tempfile
import time
from itertools import islice
from pathlib import Path
from statistics import median

import numpy as np

from reference_rows import elementwise
from reference_rows.timing import (REPLAY, floor_text, new_record, recorded_products, replay_seconds, summary,
                                    timed, timed_iter)

K, MIN_LEN, MAX_LEN = 10, 36, 38  # Taxi: hawkes_attention Table 1 (timerepro.data.standins.PAPER_TPP["taxi"])
# the floor's kernels (torch.profiler names, self time): matrix products and the fused RNN layers (forward, backward)
PRODUCTS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::mv", "aten::addmv",
            "aten::dot", "aten::_addmm_activation", "aten::mkldnn_rnn_layer", "aten::mkldnn_rnn_layer_backward")


def records(n_sequences: int, split_seed: int) -> list[dict]:
    """EasyTPP JSON records of `n_sequences` Taxi-shaped Hawkes sequences (one process, other draws per split)."""
    from timerepro.data.standins import easytpp_records, hawkes_params, hawkes_sequences

    params = hawkes_params(np.random.default_rng(0), K)  # one process for every split and seed
    rng = np.random.default_rng(1000 + split_seed)
    return easytpp_records(hawkes_sequences(rng, K, n_sequences, MIN_LEN, MAX_LEN, params), K)


def run_config(paper: str, experiment: str, dataset: str = "taxi") -> dict:
    """The paper-scale run config of `experiment` on `dataset`, seed 0, as the registry resolves it."""
    from timerepro import registry

    runs = [r for r in registry.load().experiment_runs(paper, experiment, "paper")
            if r.config.get("dataset") == dataset and int(r.config["seed"]) == 0]
    if not runs:
        raise SystemExit(f"{paper}/{experiment} has no paper-scale run on {dataset}")
    return dict(runs[0].config)


class Inputs:
    """The training and evaluation sequences of one process, as files both sides read (a temporary folder)."""

    def __init__(self, n: int, batch: int, seed: int):
        from timerepro.data.tpp import read_sequences, write_sequences

        self.folder = Path(tempfile.mkdtemp(prefix="reference_rows_tpp_"))
        self.batch = batch
        self.records = {"train": records((n + 1) * batch, 2 * seed), "dev": records((n + 1) * batch, 2 * seed + 1)}
        for split, recs in self.records.items():
            (self.folder / f"{split}.json").write_text(json.dumps(recs))
            for part, sl in (("warm", slice(0, batch)), ("timed", slice(batch, None))):
                write_sequences(self.folder / f"{split}_{part}.npz", recs[sl])
            for i in range(n):  # one file per timed batch: evaluation is timed batch by batch
                write_sequences(self.folder / f"{split}_{i}.npz", recs[(i + 1) * batch:(i + 2) * batch])
        self.seqs = {f"{split}_{part}": read_sequences(self.folder / f"{split}_{part}.npz")
                     for split in self.records for part in ("warm", "timed", *range(n))}

    def json(self, split: str) -> str:
        return str(self.folder / f"{split}.json")


# ------------------------------------------------------------------ the project's side

def product_seconds(fn, phase: str) -> dict:
    """`fn()` (one step of `phase`, "train" or "eval") under torch.profiler: the self CPU seconds of its PRODUCTS
    kernels (`profiled_s`), the same product calls replayed at their recorded shapes outside the profiler
    (`replayed_s` wall, `replayed_cpu_s` CPU; the fused RNN layers, which have no replay, at their profiled self time,
    `rnn_s`), the profiled call's wall seconds, and the step's unavoidable element-wise calls and dropout masks
    replayed likewise (`elementwise.floor_keys`: `<phase>_elementwise{,_cpu}_s`, `<phase>_mask_draws{,_cpu}_s`)."""
    from torch.profiler import ProfilerActivity, profile

    t0 = time.perf_counter()
    with (profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof,
          elementwise.recording_masks() as masks):
        fn()
    wall = time.perf_counter() - t0
    self_s = {e.key: e.self_cpu_time_total / 1e6 for e in prof.key_averages() if e.key in PRODUCTS}
    rnn = sum(v for k, v in self_s.items() if k not in REPLAY)
    wall_s, cpu_s = replay_seconds(recorded_products(prof, tuple(REPLAY)))
    calls = elementwise.recorded_calls(prof, elementwise.phase_kernels(phase == "train", bool(masks)))
    return {"profiled_s": sum(self_s.values()), "replayed_s": wall_s + rnn, "replayed_cpu_s": cpu_s + rnn, "rnn_s": rnn,
            "wall_s": wall, **elementwise.floor_keys(phase, calls, masks, 1)}


def project_measure(config: dict, inputs: Inputs, seed: int, floor: bool = False) -> dict:
    """tasks/temporal_point_process.py's model, optimizer, `train_epoch` and test-time `evaluate`, timed step by step
    (`train_epoch`'s batches through its `progress` hook, `evaluate` one batch per call); `floor`: then the product
    seconds of one more training step and one more evaluation batch (`floor_train_s`, `floor_eval_s`: replayed
    outside the profiler; `*_profiled_s`: the profiler's self time, for comparison)."""
    import torch

    from timerepro.models.registry import build
    from timerepro.tasks.temporal_point_process import builder_config, param_groups
    from timerepro.tpp import ThinningConfig, evaluate, train_epoch
    from timerepro.tpp.thinning import THINNING_KEYS

    torch.manual_seed(seed)
    train = _concat(inputs.seqs["train_warm"], inputs.seqs["train_timed"])  # the task's training split
    model = build("temporal_point_process", config["model"], builder_config(config, train), K)
    opt = torch.optim.Adam(param_groups(model, config), lr=float(config["lr"]))
    gen = torch.Generator().manual_seed(seed)
    n_int = int(config["loss_integral_num_sample_per_step"])
    kw = dict(batch_size=inputs.batch, shuffle=False, generator=gen, num_samples=n_int,
              max_grad_norm=config.get("max_grad_norm"))
    warm, steps = new_record(), new_record()
    train_epoch(model, opt, inputs.seqs["train_warm"], progress=lambda b: timed_iter(b, warm), **kw)
    loss = train_epoch(model, opt, inputs.seqs["train_timed"], progress=lambda b: timed_iter(b, steps),
                       **kw)["train_nll_per_event"]
    out = {**summary("train", warm, steps), "loss": float(loss)}
    thinning = ThinningConfig(**{k: config[k] for k in THINNING_KEYS})
    ev = dict(batch_size=inputs.batch, thinning=thinning, seed=seed, num_samples=n_int)
    n = sum(1 for k in inputs.seqs if k.startswith("dev_") and k[4:].isdigit())
    _, warm = timed(lambda s: evaluate(model, s, **ev), [inputs.seqs["dev_warm"]])
    metrics, steps = timed(lambda s: evaluate(model, s, **ev), [inputs.seqs[f"dev_{i}"] for i in range(n)])
    events = sum(m["n_events"] for m in metrics)  # the batches' log-likelihood per event, pooled over their events
    out.update(summary("eval", warm, steps),
               metric=float(sum(m["loglike_per_event"] * m["n_events"] for m in metrics) / events),
               n_parameters=int(sum(p.numel() for p in model.parameters() if p.requires_grad)))
    if floor:  # the warm-up batches again (one batch each), after every timed step
        out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # the row's: before the profiler's
        for phase, fn in (("train", lambda: train_epoch(model, opt, inputs.seqs["train_warm"], **kw)),
                          ("eval", lambda: evaluate(model, inputs.seqs["dev_warm"], **ev))):
            p = product_seconds(fn, phase)
            out.update({f"floor_{phase}_s": p["replayed_s"], f"floor_{phase}_cpu_s": p["replayed_cpu_s"],
                        f"floor_{phase}_profiled_s": p["profiled_s"],
                        f"floor_{phase}_rnn_s": p["rnn_s"], f"floor_{phase}_wall_s": p["wall_s"]})
            out.update({k: v for k, v in p.items() if k.startswith(f"{phase}_")})  # element-wise and mask draws
    return out


def floor_note(model: str, runs: dict) -> str | None:
    """The lines printed under a row: its floor (`floor_text`: the product seconds of the project's process of seed 0
    against every project process's unprofiled steps), then that floor plus the unavoidable element-wise work and
    plus the mask draws (`elementwise.floor_lines`, where they were recorded); None when no floor was measured."""
    floors = [p for p in runs["project"] if "floor_train_s" in p]
    if not floors:
        return None
    f = floors[0]
    products = {k: (f[f"floor_{k}_s"], f[f"floor_{k}_cpu_s"]) for k in ("train", "eval")}
    lines = [f"  floor {model} (products per batch replayed outside the profiler; profiled self time "
             f"{f['floor_train_profiled_s']:.4f} / {f['floor_eval_profiled_s']:.4f} s): " + floor_text(runs, products)]
    lines += [f"  {line}" for line in elementwise.floor_lines(f"floor {model}", runs, products, f)]
    return "\n".join(lines)


def _concat(a, b):
    """Two CSR splits as one (IntensityFree's statistics read every training sequence)."""
    from timerepro.data.tpp import EventSequences

    return EventSequences(np.concatenate([a.seq_ptr, b.seq_ptr[1:] + a.seq_ptr[-1]]),
                          np.concatenate([a.time_since_start, b.time_since_start]),
                          np.concatenate([a.time_since_last_event, b.time_since_last_event]),
                          np.concatenate([a.type_event, b.type_event]), np.concatenate([a.seq_idx, b.seq_idx]))


# ------------------------------------------------------------------ the reference side

def reference_loop(wrapper, train_loader, dev_loader, train_phase, eval_phase) -> dict:
    """The reference runner's `run_one_epoch` body, batch by batch: `wrapper.run_batch(batch, phase)` over the
    loader (its collation inside the timed loop, as in the runner); the first batch of each phase untimed.
    Loss: sum of the batches' NLL over their events (the runner's `loglike` with the sign flipped). A phase that
    raises is reported by its error (`<rate>_error`), the other phase still measured."""
    out = {}
    for phase, loader, prefix, key in ((train_phase, train_loader, "train", "loss"),
                                       (eval_phase, dev_loader, "eval", "metric")):
        try:
            it = iter(loader)
            run = lambda batch: wrapper.run_batch(batch, phase=phase)  # noqa: B023, E731
            _, warm = timed(run, islice(it, 1))
            results, steps = timed(run, it)
        except Exception as exc:  # noqa: BLE001  (the reference's own failure is a result of the row)
            out[f"{prefix}_bps_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
            continue
        total, events = sum(float(r[0]) for r in results), sum(int(r[1]) for r in results)
        out.update(summary(prefix, warm, steps))
        out[key] = total / events if key == "loss" else -total / events
    return out
