"""A plan before a run is paid for: per artifact, how many runs a scale needs and what they cost.

Costs come from the run records at hand (any scale: smoke, offline):
* measured: the run itself has a complete record (same run id, so the same config): its wall time
  and peak memory;
* extrapolated: a reference record of the same experiment (same dataset and model if there is one,
  else any dataset, else the same task and model in another experiment) gives its measured cost
  per epoch (training + validation, history.json) and its one-off cost (setup and final
  evaluation: the rest of its wall time); the run's cost is the data-size ratio (paper scale: the
  papers' published dataset statistics) x (its epochs x cost per epoch + one-off), its epochs being
  max_epochs: an upper bound, early stopping ends most runs sooner. Peak memory: the reference's
  peak plus its processed data's size x (data ratio - 1) (the data held grows, the model does not);
* none: no record to learn from; the run is counted, its cost is unknown.
Hours are of the device the run asks for at that scale (params/ resources): GPU hours for runs
that request a GPU, CPU hours (wall time x cpus) otherwise; a figure measured on a CPU stands for a
GPU run when nothing was measured on a GPU, and says so.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from timerepro.paths import results_dir
from timerepro.records import SUPERSEDED, load_record

MEASURED, EXTRAPOLATED, NONE = "measured", "extrapolated", "none"
GPU_REHEARSAL, CPU_REHEARSAL = "gpu rehearsal", "cpu rehearsal"  # paper scale: priced from `timerepro rehearse`
# paper scale: the run's rehearsal ran out of a GPU's memory, so the job fails at this size on such a device (the
# paper's own figures leave such models out: dyg_mamba Figure 10); priced at the seconds it ran before failing
FAILS = "fails (out of GPU memory)"


# ---------------------------------------------------------------- data sizes

@lru_cache(maxsize=1)
def _lock():
    from timerepro.data.lock import load_lock

    return load_lock()


@lru_cache(maxsize=None)
def _published_size(dataset: str, metrics: tuple[str, ...]) -> float | None:
    """A dataset's size as a paper printed it (its dataset-statistics table), summed over `metrics`."""
    from timerepro.report.published import load

    lock = _lock()
    if dataset not in lock.datasets:  # a generated dataset
        return None
    pub = load()
    for paper, entry in lock.datasets[dataset].papers.items():
        rows = pub[(pub["paper"] == paper) & (pub["row"] == entry.get("name")) & pub["metric"].isin(metrics)]
        if not rows.empty:
            return float(rows.groupby("metric")["mean"].first().sum())
    return None


def _config_size(config: dict) -> float | None:
    data = config.get("data") or {}
    return float(data["n_sequences"]) if "n_sequences" in data else None


# task -> (size of what a record read, size of what a run of a scale will read). Units per task:
# edges (dynamic graphs), training events (point processes), sequences (synthetic task).
SIZES = {
    "link_prediction": (lambda r: (r["provenance"].get("data") or {}).get("n_edges"),
                        lambda c: None if c.get("standin") else _published_size(c["dataset"], ("n_edges_total", "total_edges"))),
    "node_classification": (lambda r: (r["provenance"].get("data") or {}).get("n_edges"),
                            lambda c: None if c.get("standin") else _published_size(c["dataset"], ("n_edges_total", "total_edges"))),
    "temporal_point_process": (lambda r: (r["provenance"].get("data") or {}).get("train_events"),
                               lambda c: None if c.get("standin") else _published_size(c["dataset"], ("event_tokens_train",))),
    "sequence_classification": (lambda r: _config_size(r["config"]), _config_size),
}


def data_ratio(config: dict, record: dict) -> tuple[float, str]:
    """(target size / measured size, how it was obtained); 1.0 when either size is unknown."""
    sizes = SIZES.get(config["task"])
    if sizes is None:
        return 1.0, "data size not modelled for this task"
    measured, target = sizes[0](record), sizes[1](config)
    if config.get("standin") and record["config"].get("standin") == config.get("standin") \
            and record["config"].get("dataset") == config.get("dataset"):
        return 1.0, "same data"
    if not measured or not target:
        return 1.0, "data size at this scale unknown: not scaled"
    return target / measured, f"data x{target / measured:.3g}"


# ---------------------------------------------------------------- reference records

def _history(record: dict) -> list[dict]:
    if "_history" not in record:
        from timerepro.records import read_history

        record["_history"] = read_history(Path(record["dir"]))
    return record["_history"]


def records_at_hand(results: Path | None = None, papers=None) -> list[dict]:
    """Every readable complete record under results/runs/ (any scale, any code)."""
    root = (results or results_dir()) / "runs"
    out = []
    for paper_dir in sorted(root.iterdir()) if root.is_dir() else []:
        if papers and paper_dir.name not in papers:
            continue
        for d in sorted(paper_dir.iterdir()):
            if d.name != SUPERSEDED and d.is_dir() and (rec := load_record(d)) is not None:
                out.append(rec)
    return out


def _key(config: dict, level: int) -> tuple:
    base = (config["task"], config.get("model"))
    if level == 0:
        return (config["paper"], config["experiment"], *base, config.get("dataset"), config.get("encoder"))
    if level == 1:
        return (config["paper"], config["experiment"], *base, config.get("dataset"))
    if level == 2:
        return (config["paper"], config["experiment"], *base)
    return base


LEVELS = ("same experiment, dataset and encoder", "same experiment and dataset", "same experiment", "same task and model")


class References:
    """Records indexed by how closely they match a run (LEVELS, closest first)."""

    def __init__(self, recs: list[dict]):
        self.by_id = {r["config"]["run_id"]: r for r in recs}
        self.index: list[dict[tuple, list[dict]]] = [{} for _ in LEVELS]
        for r in recs:
            if not r["provenance"].get("wall_time_s"):
                continue
            for level in range(len(LEVELS)):
                self.index[level].setdefault(_key(r["config"], level), []).append(r)

    def find(self, config: dict) -> tuple[list[dict], str] | None:
        for level, index in enumerate(self.index):
            found = index.get(_key(config, level))
            if found:
                sizes = {id(r): (SIZES.get(config["task"], (lambda _r: None,))[0](r) or 0) for r in found}
                biggest = max(sizes.values())
                return [r for r in found if sizes[id(r)] == biggest], LEVELS[level]
        return None


# ---------------------------------------------------------------- estimates

@dataclass
class RunEstimate:
    paper: str
    run_id: str
    basis: str  # measured | extrapolated | none
    hours: float | None  # device hours (GPU hours for GPU runs, CPU hours = wall x cpus otherwise)
    gpu: bool
    peak_mb: float | None
    note: str = ""
    lower_bound: bool = False  # priced from training batches timed early on a history model (`rehearse.early_timed`)


def cost_parts(record: dict) -> tuple[float, float, int]:
    """(seconds per epoch: training + validation, seconds once: setup + final evaluation, epochs) of a record."""
    history = _history(record)
    wall = float(record["provenance"]["wall_time_s"])
    if not history:
        return 0.0, wall, 0
    per_epoch = statistics.mean(float(h.get("epoch_time_s") or 0) + float(h.get("val_time_s") or 0) for h in history)
    return per_epoch, max(wall - per_epoch * len(history), 0.0), len(history)


def _data_mb(config: dict) -> float | None:
    """Size on disk of the processed data a run reads (what it holds in memory, roughly); None if absent."""
    from timerepro.fingerprint import run_datasets
    from timerepro.paths import processed_path

    total, found = 0, False
    for name in run_datasets(config):
        folder = processed_path(name, config.get("standin"))
        if folder.is_dir():
            found = True
            total += sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    return total / 2**20 if found else None


def estimate_run(run, refs: References) -> RunEstimate:
    c, res = run.config, run.resources
    gpu = bool(res.get("gpu"))
    units = (res.get("gpu") or 1) if gpu else res.get("cpus", 1)
    own = refs.by_id.get(run.run_id)
    if own is not None and own["provenance"].get("wall_time_s"):
        p = own["provenance"]
        return RunEstimate(run.paper, run.run_id, MEASURED, p["wall_time_s"] * units / 3600, gpu,
                           p.get("peak_memory_mb"), f"measured on {p.get('device', '?')}")
    found = refs.find(c)
    if found is None:
        return RunEstimate(run.paper, run.run_id, NONE, None, gpu, None, "no record to learn from")
    recs, how = found
    ratio, ratio_note = data_ratio(c, recs[0])
    epochs_target = int(c.get("max_epochs") or 0)
    seconds, peaks, devices, memory_note = [], [], set(), ""
    for r in recs:
        per_epoch, once, epochs = cost_parts(r)
        seconds.append(ratio * ((epochs_target or epochs) * per_epoch + once))
        peak = float(r["provenance"].get("peak_memory_mb") or 0.0)
        data_mb = _data_mb(r["config"])
        if data_mb is None:
            from timerepro.fingerprint import run_datasets

            memory_note = ("; memory not scaled (its data is not in the cache)" if run_datasets(r["config"])
                           else "; memory not scaled (generated data, nothing on disk to measure)")
        else:  # the data held in memory grows with the data; the model and the libraries do not
            peak += data_mb * (ratio - 1)
        peaks.append(peak)
        devices.add(r["provenance"].get("device", "?"))
    note = (f"{how} ({len(recs)} record(s) on {'/'.join(sorted(devices))}), {ratio_note}, "
            + (f"{epochs_target} epochs (max_epochs: an upper bound)" if epochs_target else "no epochs")
            + memory_note)
    if gpu and devices == {"cpu"}:
        note += "; measured on CPU"
    return RunEstimate(run.paper, run.run_id, EXTRAPOLATED, statistics.median(seconds) * units / 3600, gpu,
                       max(peaks), note)


def _passes_seconds(fig: dict, config: dict) -> tuple[float, float]:
    """(seconds of the passes paid every epoch, of those paid once) of one run level of a rehearsal record: per
    pass its full batches x its seconds per batch (version-1 records: the mean over passes), the final passes scaled
    by the run's number of negative-sampling strategies against the rehearsed one's."""
    key = fig.get("strategies_key") or (None if "eval_passes" in fig else "eval_negatives")  # version 1: link prediction's
    strategies = len(config.get(key) or [None]) / fig.get("eval_strategies", 1) if key else 1.0
    if "eval_passes" in fig:
        in_epoch = sum(p["batches"] * p["per_batch_s"] for p in fig["eval_passes"] if p["in_epoch"])
        final = sum(p["batches"] * p["per_batch_s"] for p in fig["eval_passes"] if not p["in_epoch"])
    else:
        in_epoch = fig.get("eval_batches_per_epoch", 0) * fig.get("eval_batch_s", 0.0)
        final = fig.get("eval_batches_final", 0) * fig.get("eval_batch_s", 0.0)
    return in_epoch, final * strategies


def _train_seconds(fig: dict) -> float:
    return (fig.get("train_batches_per_epoch") or 0) * (fig.get("train_batch_s") or 0.0)


def rehearsed_seconds(rec: dict, config: dict) -> float:
    """Wall seconds of a run of `config` from its shape's rehearsal record (`timerepro.rehearse`): set-up, then
    max_epochs (an upper bound) x (training batches + the passes of every epoch + what else the epoch spent), then
    what ran once and the final passes; a nested backbone (node classification) adds its backbone_epochs x (its
    batches and passes of an epoch) and its final passes."""
    epochs = int(config.get("max_epochs") or 0)
    if rec["kind"] == "batches":
        in_epoch, final = _passes_seconds(rec, config)
        rounds = max(epochs, 1) if rec.get("trains", True) else 1  # nothing to train (EdgeBank): evaluated once
        if "rest_once_s" in rec:  # the rest split: what each epoch paid beyond its timed batches, and the rest once
            epoch_rest, once = rec.get("rest_epoch_s", 0.0), rec["rest_once_s"]
        else:  # version 1: the whole rest every epoch (an upper bound)
            epoch_rest, once = rec.get("rest_s", 0.0), 0.0
        total = rec["setup_s"] + rounds * (_train_seconds(rec) + in_epoch + epoch_rest) + once + final
        if rec.get("backbone"):
            b_epoch, b_final = _passes_seconds(rec["backbone"], config)
            b_rest = rec["backbone"].get("rest_epoch_s", 0.0)
            backbone_epochs = max(int(config.get("backbone_epochs") or 0), 1)
            total += backbone_epochs * (_train_seconds(rec["backbone"]) + b_epoch + b_rest) + b_final
        return total
    if rec["kind"] == "epoch":
        return rec["once_s"] + max(epochs, 1) * rec["epoch_s"]
    return rec["once_s"]


def sibling_gaps(rec: dict, config: dict) -> list[str]:
    """Why a sibling shape's rehearsal `rec` is no upper bound for a run of `config`: each cost key (batch sizes
    aside, `sibling_record` scales those) where the run asks for more than the sibling ran, or for another value
    (a window length, `rehearse.WINDOW_KEYS`: any other value changes the batch counts the other way).
    Compared as each runs them (`rehearse.effective_shape`: a history length of `sequence_length_by_dataset` as the
    neighbours or input length it sets, a model's dataset default filled), where the record keeps its config."""
    from timerepro.rehearse import BATCH_KEYS, DATA_KEYS, WINDOW_KEYS, effective_shape, shape_of

    if rec.get("config") is not None:
        own, theirs = effective_shape(config), effective_shape(rec["config"])
    else:
        own, theirs = shape_of(config), rec["shape"]
    gaps = []
    for k in sorted(set(own) | set(theirs)):
        if k in ("task", "model", *DATA_KEYS, *BATCH_KEYS) or own.get(k) == theirs.get(k):
            continue
        a, b = own.get(k), theirs.get(k)
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
        if k in WINDOW_KEYS:
            gaps.append(f"{k} {a} where it ran {b} (another number of windows)")
        elif not (numbers and a <= b):
            gaps.append(f"{k} {a} where it ran {b}")
    return gaps


def sibling_record(rec: dict, config: dict) -> dict:
    """`rec` of a sibling shape (same task, model, data; `sibling_gaps` empty) made to stand for `config`: batch
    counts scaled by the batch sizes, seconds per batch scaled up with a larger batch (cost affine in the batch
    size: an upper bound) and kept with a smaller one."""
    out = dict(rec)
    if rec.get("kind") != "batches":
        return out

    def scale(fig: dict, own: int | None, theirs: int | None, count_keys, second_keys) -> None:
        if not (own and theirs):
            return
        for k in count_keys:
            if fig.get(k) is not None:
                fig[k] = math.ceil(fig[k] * theirs / own)
        if own > theirs:
            for k in second_keys:
                if fig.get(k) is not None:
                    fig[k] = fig[k] * own / theirs
        if "eval_passes" in fig and "eval_batches_per_epoch" in count_keys:
            fig["eval_passes"] = [{**p, "batches": math.ceil(p["batches"] * theirs / own),
                                   "per_batch_s": p["per_batch_s"] * max(own / theirs, 1.0)} for p in fig["eval_passes"]]

    own, theirs = config.get("batch_size"), rec["shape"].get("batch_size")
    own_eval = config.get("eval_batch_size") or own
    theirs_eval = rec["shape"].get("eval_batch_size") or theirs
    if rec.get("backbone"):  # node classification's backbone trains and evaluates in the same batches
        out["backbone"] = dict(rec["backbone"])
    for fig in (out, out.get("backbone")):
        if fig:
            scale(fig, own, theirs, ("train_batches_per_epoch",), ("train_batch_s",))
            scale(fig, own_eval, theirs_eval, ("eval_batches_per_epoch", "eval_batches_final"), ("eval_batch_s",))
    return out


def out_of_gpu_memory(rec: dict) -> bool:
    """A rehearsal that failed because its GPU's memory ran out (torch.cuda.OutOfMemoryError), not the host's."""
    return rec.get("device_type") == "cuda" and str(rec.get("error", "")).startswith("OutOfMemoryError")


def estimate_rehearsed(run, rec: dict) -> RunEstimate:
    """A paper-scale run priced from its shape's rehearsal (GPU or CPU), or unpriced when the rehearsal failed."""
    gpu = bool(run.resources.get("gpu"))
    units = (run.resources.get("gpu") or 1) if gpu else run.resources.get("cpus", 1)
    if rec["status"] != "ok":
        if out_of_gpu_memory(rec):  # a finding: the job fails at this size, after the seconds it ran
            return RunEstimate(run.paper, run.run_id, FAILS, float(rec.get("wall_s") or 0.0) * units / 3600, gpu,
                               rec.get("peak_rss_mb"),
                               f"{rec['name']} ran out of memory on {rec['device']} at "
                               f"{(rec.get('peak_gpu_mb') or 0) / 1024:.0f} GB (rehearsal {rec['shape_id']}): "
                               "the job fails at this size on such a device")
        return RunEstimate(run.paper, run.run_id, NONE, None, gpu, None,
                           f"rehearsal of {rec['name']} failed: {rec.get('error', '?')[:160]}")
    from timerepro.rehearse import early_timed

    basis = GPU_REHEARSAL if rec["device_type"] == "cuda" else CPU_REHEARSAL
    seconds = rehearsed_seconds(rec, run.config)
    note = f"{basis} of {rec['name']} ({rec['kind']}, {rec['device']})"
    if gpu and basis == CPU_REHEARSAL:
        note += "; measured on CPU for a GPU run"
    early = early_timed(rec)
    if early:
        note += "; training timed at the epoch's start: a lower bound"
    return RunEstimate(run.paper, run.run_id, basis, seconds * units / 3600, gpu, rec.get("peak_rss_mb"), note,
                       lower_bound=early)


@dataclass
class ArtifactEstimate:
    paper: str
    artifact: str
    runs: list[RunEstimate] = field(default_factory=list)
    declared_mem_mb: int = 0

    def count(self, basis: str) -> int:
        return sum(r.basis == basis for r in self.runs)

    @property
    def cpu_hours(self) -> float:
        return sum(r.hours for r in self.runs if r.hours is not None and not r.gpu)

    @property
    def gpu_hours(self) -> float:
        return sum(r.hours for r in self.runs if r.hours is not None and r.gpu)

    @property
    def peak_mb(self) -> float | None:
        peaks = [r.peak_mb for r in self.runs if r.peak_mb is not None]
        return max(peaks) if peaks else None

    @property
    def notes(self) -> list[str]:
        counts: dict[str, int] = {}
        for r in self.runs:
            if r.basis != MEASURED:
                counts[r.note] = counts.get(r.note, 0) + 1
        return [f"{n} run(s): {note}" for note, n in sorted(counts.items(), key=lambda kv: -kv[1])]


@dataclass
class Plan:
    scale: str
    artifacts: list[ArtifactEstimate]

    @property
    def unique_runs(self) -> dict[str, RunEstimate]:
        return {f"{r.paper}/{r.run_id}": r for a in self.artifacts for r in a.runs}

    def total(self) -> ArtifactEstimate:
        total = ArtifactEstimate("all", "total", list(self.unique_runs.values()))
        total.declared_mem_mb = max((a.declared_mem_mb for a in self.artifacts), default=0)
        return total


def plan(reg, scale: str, *, paper: str | None = None, artifact: str | None = None,
         results: Path | None = None) -> Plan:
    """Per implemented artifact of the registry (or of one paper/artifact): the runs `scale` needs
    and their estimated cost, from the records under `results`."""
    from timerepro.registry import PAPERS

    papers = [paper] if paper else list(PAPERS)
    refs = References(records_at_hand(results))
    rehearsals = _rehearsals(results) if scale == "paper" else {}
    cache: dict[str, RunEstimate] = {}
    out = []
    for p in papers:
        for art in reg.implemented(p):
            if artifact and art["id"] != artifact:
                continue
            est = ArtifactEstimate(p, art["id"])
            for run in reg.artifact_runs(p, art["id"], scale):
                if run.run_id not in cache:
                    cache[run.run_id] = _estimate_paper(run, rehearsals, refs) if rehearsals else estimate_run(run, refs)
                est.runs.append(cache[run.run_id])
                est.declared_mem_mb = max(est.declared_mem_mb, int(run.resources.get("mem_mb", 0)))
            out.append(est)
    return Plan(scale, out)


def _estimate_paper(run, rehearsals: dict[str, dict], refs: References) -> RunEstimate:
    """From the run's own shape's rehearsal; else a sibling shape's that bounds it (`sibling_gaps`; a GPU one
    first, then the one that ran the least: the closest bound); a sibling that does not bound it prices nothing and
    says why; else from records."""
    from timerepro.rehearse import cost_size, effective_shape, pair_of, shape_of

    shape = shape_of(run.config)
    rec = rehearsals.get(_shape_id(run.config))
    if rec is not None:
        return estimate_rehearsed(run, rec)
    siblings = [r for r in rehearsals.values() if r["status"] == "ok" and r.get("name") == pair_of(shape)]
    if siblings:
        def ran(r: dict) -> float:
            return cost_size(effective_shape(r["config"]) if r.get("config") is not None else r["shape"])

        best = max(siblings, key=lambda r: (not sibling_gaps(r, run.config), r["device_type"] == "cuda", -ran(r),
                                            r.get("runs", 0)))
        gaps = sibling_gaps(best, run.config)
        if gaps:
            return RunEstimate(run.paper, run.run_id, NONE, None, bool(run.resources.get("gpu")), None,
                               f"no rehearsal of its shape; its sibling {best['shape_id']} is no upper bound "
                               f"({'; '.join(gaps)[:120]})")
        est = estimate_rehearsed(run, sibling_record(best, run.config))
        est.note += f"; a sibling shape {best['shape_id']} (batch counts scaled by batch size)"
        return est
    return estimate_run(run, refs)


def _rehearsals(results: Path | None) -> dict[str, dict]:
    from timerepro.rehearse import project_records

    return project_records(results)


def _shape_id(config: dict) -> str:
    from timerepro.rehearse import shape_id, shape_of

    return shape_id(shape_of(config))


def artifact_estimates(reg, paper: str, scale: str = "paper", results: Path | None = None) -> dict[str, ArtifactEstimate]:
    """The report's hook: per implemented artifact of `paper`, what a run at `scale` would cost."""
    return {a.artifact: a for a in plan(reg, scale, paper=paper, results=results).artifacts}


# ---------------------------------------------------------------- text

def hours_text(hours: float) -> str:
    if hours == 0:
        return "0"
    return f"{hours:.3g}" if hours < 100 else f"{hours:,.0f}"


def mb_text(mb: float | None) -> str:
    if mb is None or (isinstance(mb, float) and math.isnan(mb)):
        return "?"
    return f"{mb / 1024:.1f} GB" if mb >= 1024 else f"{mb:.0f} MB"


@dataclass(frozen=True)
class Column:
    """One column of the plan's table: heading, width, and its text for an artifact's estimate."""

    head: str
    width: int
    cell: Callable[[ArtifactEstimate], str]


NAME_COLUMNS = [Column("paper", -17, lambda a: a.paper), Column("artifact", -9, lambda a: a.artifact),
                Column("runs", 6, lambda a: str(len(a.runs)))]
COST_COLUMNS = [Column("CPU h", 9, lambda a: hours_text(a.cpu_hours)), Column("GPU h", 9, lambda a: hours_text(a.gpu_hours)),
                Column("peak mem", 9, lambda a: mb_text(a.peak_mb)), Column("declared", 9, lambda a: mb_text(a.declared_mem_mb))]


def _count(head: str, width: int, *bases: str) -> Column:
    return Column(head, width, lambda a: str(sum(a.count(b) for b in bases)))


@dataclass(frozen=True)
class View:
    """What the table says for one way of pricing: title, counted bases, how the figures are made, and which
    runs' notes it lists under which heading."""

    title: str
    columns: list[Column]
    how: str
    notes_heading: str
    noted: Callable[[RunEstimate], bool]


RECORDS_VIEW = View(
    "from the run records at hand; see `timerepro estimate --help`",
    NAME_COLUMNS + [_count("meas.", 6, MEASURED), _count("extrap.", 7, EXTRAPOLATED), _count("unknown", 7, NONE)]
    + COST_COLUMNS,
    "How: measured = the run's own record (same config); extrapolated = data-size ratio x (max_epochs x the closest "
    "record's measured seconds per epoch + its one-off seconds): an upper bound, early stopping ends most runs sooner; "
    "unknown = no record of that task and model yet. GPU h for runs that request a GPU at this scale, CPU h (x cpus) "
    "otherwise. Peak memory: the largest of the artifact's runs; declared: the mem_mb params/ asks the scheduler for. "
    "Totals count a run shared by artifacts once.",
    "Bases of the figures not measured (distinct runs):", lambda r: r.basis != MEASURED)
REHEARSALS_VIEW = View(
    "from the rehearsals under results/rehearsal/ and benchmarks/rehearsals/, `timerepro rehearse`",
    NAME_COLUMNS + [_count("GPU reh", 7, GPU_REHEARSAL), _count("CPU reh", 7, CPU_REHEARSAL),
                    _count("extrap.", 7, EXTRAPOLATED, MEASURED), _count("fails", 5, FAILS),
                    _count("none", 5, NONE)] + COST_COLUMNS,
    "How: a run's shape (task, model, data, batch sizes, neighbours, sequence lengths) ran a few batches on the "
    "paper-size stand-in; its seconds = set-up + max_epochs (an upper bound: early stopping ends most runs sooner) x "
    "(training + validation batches per epoch x seconds per batch) + the final evaluation passes. GPU h for runs that "
    "request a GPU (from a CPU rehearsal where no GPU one exists: an upper bound), CPU h (x cpus) otherwise. A shape "
    "without a rehearsal is priced from a sibling (same task, model, data) only where the sibling bounds it (no larger "
    "neighbours or sequence lengths, the same forecasting windows; batch counts scaled by batch size). A CPU rehearsal "
    "on a loaded machine is an upper bound (its record keeps the load average and CPU seconds per batch). extrap.: no rehearsal of its shape "
    "or of a sibling yet, priced from run records. fails: the shape's GPU rehearsal ran out of the GPU's memory: "
    "the job fails at this size on that device, priced at the seconds it ran (listed below).",
    "Runs without a basis, and why (distinct runs):", lambda r: r.basis == NONE)


def format_plan(p: Plan, scale: str) -> str:
    """The plan as a table, one row per artifact and a total; priced from rehearsals where any run is."""
    rehearsed = any(r.basis in (GPU_REHEARSAL, CPU_REHEARSAL, FAILS) for r in p.unique_runs.values())
    view = REHEARSALS_VIEW if rehearsed else RECORDS_VIEW

    def row(cells: list[str]) -> str:  # a negative width aligns left
        return " ".join(f"{c:{'<' if col.width < 0 else '>'}{abs(col.width)}s}" for c, col in zip(cells, view.columns))

    head = row([col.head for col in view.columns])
    lines = [f"Estimated cost at scale {scale} ({view.title})", head, "-" * len(head)]
    for a in p.artifacts + [p.total()]:
        if a.artifact == "total":
            lines.append("-" * len(head))
        lines.append(row([col.cell(a) for col in view.columns]))
    lines += ["", view.how]
    early = sum(r.lower_bound for r in p.unique_runs.values())
    if early:
        lines.append(f"Lower bounds: {early} runs are priced from rehearsals that timed their training batches at the "
                     "epoch's start (before `train_at`), on models whose cost per batch grows with the history they "
                     "read (`rehearse.GROWS_WITH_HISTORY`): their training part is low; `timerepro rehearse "
                     "--missing` rehearses them again at the epoch's end.")
    lines += _tallied(p, view.notes_heading, view.noted, top=20)
    lines += _tallied(p, "Runs that fail at this size (distinct runs):", lambda r: r.basis == FAILS)
    return "\n".join(lines)


def _tallied(p: Plan, heading: str, keep: Callable[[RunEstimate], bool], top: int | None = None) -> list[str]:
    """`heading` and the notes of the plan's distinct runs that `keep` selects, each with its count, commonest first
    (the first `top`); nothing when none is selected."""
    notes: dict[str, int] = {}
    for r in p.unique_runs.values():
        if keep(r):
            notes[r.note] = notes.get(r.note, 0) + 1
    if not notes:
        return []
    return [heading] + [f"  {n:5d}  {note}" for note, n in sorted(notes.items(), key=lambda kv: -kv[1])[:top]]
