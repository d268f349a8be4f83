"""params/ -> papers -> artifacts -> experiments -> runs, each run a resolved config with a stable id.

Both front ends use this module: the Snakefile asks it for the runs of a scale, `timerepro dvc`
writes dvc.yaml from it. A config resolves as

    task defaults < model defaults < experiment `fixed` < grid point < experiment `when` < scale `fixed`
    data: dataset config < experiment `data` < scale `data`

where `when` is a list of {match: {key: value}, fixed: {...}} (or of such lists, so YAML anchors combine):
settings that apply only to the grid points whose resolved values match (linear_time: the authors' options of
one encoder, one dataset's sampling, the authors' selected hyperparameters of one cell). `skip` lists
{key: value} matches of grid points that are not run (linear_time: no historical-select sine-cosine run). Its id
is the first 12 hex digits of the sha256 of its canonical JSON, so the same
configuration always lands in the same run folder, whichever scale or scheduler asked for it.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from timerepro import report_catalog
from timerepro.catalog import _source, target_problem
from timerepro.models.registry import serves
from timerepro.paths import params_dir, project_root
from timerepro.schema import ConfigError, NotFoundError, load_yaml, validate_file, validate_value

PAPERS = ("linear_time", "dyg_mamba", "time2vec", "swinit", "hawkes_attention")
# The checks' digest (`checks_digest`) of params/ and code whose reference checks passed in a parent process: the
# Snakefile sets it, so the jobs Snakemake starts (run-job, a SLURM job's own Snakemake) skip the checks it ran.
CHECKED_ENV = "TIMEREPRO_CHECKED"


@dataclass(frozen=True)
class Run:
    paper: str
    experiment: str
    run_id: str
    config: dict = field(hash=False, compare=False)
    resources: dict = field(hash=False, compare=False)


@dataclass(frozen=True)
class Job:
    """What one scheduler job executes: the seeds of one configuration, `seeds_per_job` at a time.

    At paper scale a job is one run (one GPU job per seed); on a laptop the seeds of a grid point
    share one process, which saves the few seconds each Python + torch start costs.
    """

    paper: str
    job_id: str
    runs: tuple
    resources: dict = field(hash=False, compare=False)


def conditions(exp: dict) -> list[dict]:
    """An experiment's `when` entries, nested lists flattened in order (a later match wins)."""
    out = []
    for entry in exp.get("when", []):
        out.extend(entry if isinstance(entry, list) else [entry])
    return out


def run_id(config: dict) -> str:
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


class Registry:
    """The validated contents of params/. Construct with `load()`."""

    def __init__(self, root: Path, trust_checked: bool = True):
        """`trust_checked`: skip the reference checks (0.6 s: they read the source of every module params/ names)
        when CHECKED_ENV holds this content's digest, i.e. a parent process ran them on the same files."""
        self.root = root
        schemas = project_root() / "workflow" / "schemas"
        tasks = validate_file(root / "tasks.yaml", schemas / "tasks.schema.yaml")
        tasks.pop("shared_parameters", None)  # merged into the tasks' `parameters` by YAML anchors
        self.tasks = tasks
        self.models = validate_file(root / "models.yaml", schemas / "models.schema.yaml")
        self.datasets = validate_file(root / "datasets.yaml", schemas / "datasets.schema.yaml")
        self.scales = validate_file(root / "scales.yaml", schemas / "scales.schema.yaml")
        self.papers = {p: validate_file(root / f"{p}.yaml", schemas / "paper.schema.yaml") for p in PAPERS}
        run_defaults = load_yaml(root / "run.yaml") or {}
        if run_defaults.get("scale") not in self.scales["scales"]:
            raise ConfigError(root / "run.yaml", "scale", f"unknown scale {run_defaults.get('scale')!r}; known: {self.scale_names()}")
        self._default_scale = run_defaults["scale"]
        parent = os.environ.get(CHECKED_ENV) if trust_checked else None
        self.checked_by_parent = parent is not None and parent == self.checks_digest  # hashed only when one came
        if not self.checked_by_parent:
            self._check_references()

    @cached_property
    def checks_digest(self) -> str:
        """`checks_digest` of this registry's params/ and the modules its tasks and models name."""
        return checks_digest(self.root, [*self.tasks.values(), *self.models.values()])

    # ---- validation beyond the JSON schemas: names that must exist elsewhere -------------------
    def _check_references(self) -> None:
        """Every name params/ uses resolves: tasks and models to code (`module:`, read from source, nothing
        imported), experiments to tasks, models and datasets, artifacts to aggregators and renderers and claims
        to rules (the report modules' decorators); errors list the valid names."""
        report_names = report_catalog.declared()  # kind -> names the report modules register (read from source)
        tasks = sorted(self.tasks)
        for name, task in self.tasks.items():
            if problem := target_problem(task["module"]):
                raise ConfigError(self.root / "tasks.yaml", f"{name}.module", problem)
        for name, model in self.models.items():
            for task in serves(model):
                if task not in self.tasks:
                    raise ConfigError(self.root / "models.yaml", f"{name}.task", f"unknown task {task!r}; known: {tasks}")
            if problem := target_problem(model["module"]):
                raise ConfigError(self.root / "models.yaml", f"{name}.module", problem)
        for paper, doc in self.papers.items():
            path = self.root / f"{paper}.yaml"
            if doc["paper"] != paper:
                raise ConfigError(path, "paper", f"must be {paper!r} (the file name), got {doc['paper']!r}")
            for name, exp in doc["experiments"].items():
                where = f"experiments.{name}"
                if exp["task"] not in self.tasks:
                    raise ConfigError(path, f"{where}.task", f"unknown task {exp['task']!r}; known: {tasks}")
                if "model" in exp:
                    if exp["model"] not in self.models:
                        raise ConfigError(path, f"{where}.model", f"unknown model {exp['model']!r}; known: {sorted(self.models)}")
                    if exp["task"] not in serves(self.models[exp["model"]]):
                        raise ConfigError(path, f"{where}.model", f"model {exp['model']!r} serves {serves(self.models[exp['model']])}, not {exp['task']!r}")
                names = [("dataset", exp["dataset"])] if "dataset" in exp else [(f"datasets[{i}]", d) for i, d in enumerate(exp["datasets"])]
                for key, name in names:
                    if name not in self.datasets and name not in self._locked_datasets:
                        raise ConfigError(path, f"{where}.{key}", f"unknown dataset {name!r}; known: {sorted(self.datasets) + sorted(self._locked_datasets)}")
                self._check_values(path, where, exp, exp.get("dataset"))
                for j, cond in enumerate(conditions(exp)):
                    self._check_values(path, f"{where}.when[{j}]", {"task": exp["task"], **cond}, exp.get("dataset"))
                for j, match in enumerate(exp.get("skip", [])):
                    self._check_values(path, f"{where}.skip[{j}]", {"task": exp["task"], "match": match}, exp.get("dataset"))
            ids = set()
            for i, art in enumerate(doc["artifacts"]):
                if art["id"] in ids:
                    raise ConfigError(path, f"artifacts[{i}].id", f"duplicate artifact {art['id']!r}")
                ids.add(art["id"])
                for exp in art.get("experiments", []):
                    if exp not in doc["experiments"]:
                        raise ConfigError(path, f"artifacts[{i}].experiments", f"unknown experiment {exp!r}")
            for i, claim in enumerate(doc["claims"]):
                for art in str(claim["artifact"]).replace(" ", "").split(","):
                    if art not in ids:
                        raise ConfigError(path, f"claims[{i}].artifact", f"unknown artifact {art!r}")
            self._check_report_names(path, doc, report_names)
        self._check_resource_datasets()
        for scale, spec in self.scales["scales"].items():
            for key, override in spec["experiments"].items():
                paper, exp = key.split("/")
                where = f"scales.{scale}.experiments.{key}"
                if paper not in self.papers or exp not in self.papers[paper]["experiments"]:
                    raise ConfigError(self.root / "scales.yaml", where, f"unknown experiment {key!r}")
                base = self.papers[paper]["experiments"][exp]
                self._check_values(self.root / "scales.yaml", where, {"task": base["task"], **override}, base.get("dataset"))

    def _check_resource_datasets(self) -> None:
        """Every `per_dataset` key of a resource declaration names a known dataset."""
        known = set(self.datasets) | self._locked_datasets
        places = [(self.root / "tasks.yaml", name, t["resources"]) for name, t in self.tasks.items()]
        places += [(self.root / "models.yaml", name, m.get("resources", {})) for name, m in self.models.items()]
        places += [(self.root / "scales.yaml", f"scales.{scale}.resources.{task}", r)
                   for scale, spec in self.scales["scales"].items() for task, r in spec.get("resources", {}).items()]
        for path, where, resources in places:
            for name in resources.get("per_dataset", {}):
                if name not in known:
                    raise ConfigError(path, f"{where}.resources.per_dataset.{name}" if path.name != "scales.yaml"
                                      else f"{where}.per_dataset.{name}", f"unknown dataset {name!r}; known: {sorted(known)}")

    @staticmethod
    def _check_report_names(path: Path, doc: dict, found: dict[str, dict]) -> None:
        """Aggregator, renderer and rule names of a paper file are functions the report modules register."""
        uses = [(f"artifacts[{i}].aggregate", "aggregator", art.get("aggregate")) for i, art in enumerate(doc["artifacts"])]
        uses += [(f"artifacts[{i}].render", "figure renderer", art.get("render")) for i, art in enumerate(doc["artifacts"])]
        uses += [(f"claims[{i}].rule", "claim rule", claim.get("rule")) for i, claim in enumerate(doc["claims"])]
        for key, kind, name in uses:
            if name is not None and name not in found[kind]:
                raise ConfigError(path, key, f"unknown {kind} {name!r}; known: {sorted(found[kind])} (functions marked "
                                  "in the modules of timerepro.report_catalog.FAMILY_MODULES)")

    def report_code_problems(self) -> list[str]:
        """What the report code says that params/ does not (`timerepro validate`): registered aggregators, renderers
        and rules no paper names, and artifact ids a paper's report code spells that its params/ file lacks."""
        return report_catalog.problems(self.papers)

    def _named(self) -> dict[str, set]:
        """Registries a parameter spec may name with `registry:` (params/tasks.yaml)."""
        from timerepro.names import ENCODER_LABELS

        return {"encoders": set(ENCODER_LABELS), "datasets": self._locked_datasets | set(self.datasets),
                "models": set(self.models)}

    @cached_property
    def _locked_datasets(self) -> set[str]:
        lock = self.root / "datasets.lock.yaml"
        if not lock.is_file():
            return set()
        doc = load_yaml(lock) or {}
        entries = doc.get("datasets", doc) if isinstance(doc, dict) else {}
        return set(entries) if isinstance(entries, dict) else set()

    @cached_property
    def _unobtainable(self) -> dict[str, str]:
        """Locked datasets whose status is `unobtainable`, with the lock's reason: their real-data runs are left
        out of every scale before any job starts (a stand-in of them still runs)."""
        lock = self.root / "datasets.lock.yaml"
        doc = (load_yaml(lock) or {}) if lock.is_file() else {}
        entries = doc.get("datasets", doc) if isinstance(doc, dict) else {}
        return {name: str(e.get("reason", "")) for name, e in (entries or {}).items()
                if isinstance(e, dict) and e.get("status") == "unobtainable"}

    def left_out(self, scale: str) -> list[str]:
        """'paper/experiment: dataset (reason)' for each experiment of an implemented artifact whose real-data runs
        `scale` leaves out because the dataset is unobtainable."""
        out = []
        standin = self._scale(scale)["standin"]
        for paper in PAPERS:
            for art in self.implemented(paper):
                for name in art.get("experiments", []):
                    exp = self.papers[paper]["experiments"][name]
                    over = self._scale(scale)["experiments"].get(f"{paper}/{name}", {})
                    line = f"{paper}/{name}: {exp.get('dataset')} ({self._unobtainable.get(exp.get('dataset'))})"
                    if exp.get("dataset") in self._unobtainable and not over.get("standin", standin) and line not in out:
                        out.append(line)
        return out

    def _check_values(self, path: Path, where: str, exp: dict, dataset: str | None) -> None:
        """Every fixed and grid value must be a declared parameter of the task, of its type; every
        `data` key must be a setting of the dataset."""
        known_data = self.datasets.get(dataset, {}).get("config", {})
        for key in exp.get("data", {}):
            if key not in known_data:
                raise ConfigError(path, f"{where}.data.{key}", f"unknown setting {key!r} of dataset {dataset!r}; known: {sorted(known_data)}")
        spec = self.tasks[exp["task"]]["parameters"]
        named = self._named()
        items = [(f"fixed.{k}", k, v) for k, v in exp.get("fixed", {}).items()]
        items += [(f"match.{k}", k, v) for k, v in exp.get("match", {}).items() if k not in ("model", "dataset")]
        items += [(f"grid.{k}[{i}]", k, v) for k, vs in exp.get("grid", {}).items() for i, v in enumerate(vs)]
        for key_path, key, value in items:
            if key not in spec:
                raise ConfigError(path, f"{where}.{key_path}", f"unknown parameter {key!r} for task {exp['task']!r}; known: {sorted(spec)}")
            validate_value(path, f"{where}.{key_path}", value, spec[key], named)

    # ---- expansion -------------------------------------------------------------------------
    def scale_names(self) -> list[str]:
        return list(self.scales["scales"])

    def default_scale(self) -> str:
        """The scale of params/run.yaml, used when a command names none."""
        return self._default_scale

    def _scale(self, scale: str) -> dict:
        if scale not in self.scales["scales"]:
            raise ConfigError(self.root / "scales.yaml", "scales", f"unknown scale {scale!r}; known: {self.scale_names()}")
        return self.scales["scales"][scale]

    def resource_layers(self, task: str, model: str | None, scale: str, dataset: str | None) -> list[tuple[str, dict]]:
        """(where, values) of the resource declarations of a run, later ones winning: the task's, the model's, the
        scale's for the task; each followed by its `per_dataset[<dataset>]` entry (one size does not fit all)."""
        layers = [("params/tasks.yaml", task, self.tasks[task]["resources"]),
                  ("params/models.yaml", model, self.models.get(model, {}).get("resources", {})),
                  ("params/scales.yaml", f"scales.{scale}.resources.{task}",
                   self._scale(scale).get("resources", {}).get(task, {}))]
        out = []
        for file, key, values in layers:
            out.append((f"{file} {key}.resources" if file != "params/scales.yaml" else f"{file} {key}",
                        {k: v for k, v in values.items() if k != "per_dataset"}))
            if dataset in values.get("per_dataset", {}):
                out.append((f"{out[-1][0]}.per_dataset.{dataset}", values["per_dataset"][dataset]))
        return out

    def resources(self, task: str, model: str | None, scale: str, dataset: str | None) -> dict:
        """cpus, mem_mb, runtime (minutes) and gpu a run of (task, model, dataset) asks for at `scale`."""
        out: dict = {}
        for _, values in self.resource_layers(task, model, scale, dataset):
            out.update(values)
        return out

    def resource_source(self, task: str, model: str | None, scale: str, dataset: str | None, key: str) -> str:
        """Where resource `key` of such a run is set: the params/ key to raise."""
        found = [where for where, values in self.resource_layers(task, model, scale, dataset) if key in values]
        return f"{found[-1]}.{key}"

    def experiment_runs(self, paper: str, experiment: str, scale: str) -> list[Run]:
        exp = self.papers[paper]["experiments"][experiment]
        over = self._scale(scale)["experiments"].get(f"{paper}/{experiment}", {})
        task = self.tasks[exp["task"]]
        model = self.models.get(exp.get("model"), {"defaults": {}})
        data = copy.deepcopy(self.datasets.get(exp.get("dataset"), {}).get("config", {}))
        data.update(exp.get("data", {}))
        data.update(over.get("data", {}))
        grid = dict(exp.get("grid", {}))
        grid.update(over.get("grid", {}))
        seeds = over.get("seeds", exp["seeds"])

        axes = list(grid)
        runs = []
        for point in itertools.product(*(grid[a] for a in axes)):
            for seed in range(seeds):
                identity = {k: exp[k] for k in ("model", "dataset", "datasets") if k in exp}
                if task.get("uses_downloads"):
                    standin = self._scale(scale)["standin"]
                    identity["standin"] = over.get("standin", standin) if standin else None
                config = {
                    "paper": paper,
                    "experiment": experiment,
                    "task": exp["task"],
                    **identity,
                    **task["defaults"],
                    **model["defaults"],
                    **exp.get("fixed", {}),
                    **dict(zip(axes, point)),
                }
                if any(all(config.get(k) == v for k, v in match.items()) for match in exp.get("skip", [])):
                    continue
                if config.get("dataset") in self._unobtainable and not config.get("standin"):
                    continue  # real data that cannot be had: left out, with the lock's reason (`left_out`)
                for cond in conditions(exp):
                    if all(config.get(k) == v for k, v in cond["match"].items()):
                        config.update(cond["fixed"])
                config = {
                    **config,
                    **over.get("fixed", {}),
                    **({"data": data} if data else {}),
                    "seed": seed,
                }
                rid = run_id(config)
                resources = self.resources(exp["task"], exp.get("model"), scale, config.get("dataset"))
                runs.append(Run(paper, experiment, rid, {**config, "run_id": rid}, resources))
        return runs

    def runs(self, scale: str, paper: str | None = None, artifact: str | None = None) -> list[Run]:
        """Every run that the implemented artifacts need at `scale` (deduplicated, ordered)."""
        seen: dict[str, Run] = {}
        for p in [paper] if paper else PAPERS:
            for art in self.implemented(p):
                if artifact and art["id"] != artifact:
                    continue
                for run in self.artifact_runs(p, art["id"], scale):
                    seen.setdefault(run.run_id, run)
        return list(seen.values())

    def jobs(self, scale: str, paper: str | None = None) -> list[Job]:
        """The runs of `scale` grouped into scheduler jobs; runtime scales with the runs per job."""
        per_job = self._scale(scale).get("seeds_per_job", 1)
        groups: dict[tuple, list[Run]] = {}
        for run in self.runs(scale, paper=paper):
            point = {k: v for k, v in run.config.items() if k not in ("seed", "run_id")}
            groups.setdefault((run.paper, run_id(point)), []).append(run)
        jobs = []
        for (paper_key, _), runs in groups.items():
            for i in range(0, len(runs), per_job):
                chunk = tuple(runs[i : i + per_job])
                res = dict(chunk[0].resources)
                res["runtime"] = res["runtime"] * len(chunk)
                jid = hashlib.sha256(" ".join(r.run_id for r in chunk).encode()).hexdigest()[:12]
                jobs.append(Job(paper_key, jid, chunk, res))
        return jobs

    def find_job(self, paper: str, job_id: str, scale: str) -> Job:
        for job in self.jobs(scale, paper=paper):
            if job.job_id == job_id:
                return job
        raise NotFoundError(f"no job {job_id!r} of paper {paper!r} at scale {scale!r}; the params may have changed since the "
                       "workflow was planned: rerun snakemake")

    def artifact_runs(self, paper: str, artifact: str, scale: str) -> list[Run]:
        art = self.artifact(paper, artifact)
        select = art.get("select", {})
        out = []
        for exp in art.get("experiments", []):
            for run in self.experiment_runs(paper, exp, scale):
                if all(_matches(run.config.get(k), v) for k, v in select.items()):
                    out.append(run)
        return out

    def find_run(self, paper: str, rid: str, scale: str | None = None) -> Run:
        scales = [scale] if scale else self.scale_names()
        for s in scales:
            for run in self.runs(s, paper=paper):
                if run.run_id == rid:
                    return run
        raise NotFoundError(f"no run {rid!r} of paper {paper!r} at scale(s) {scales}; list them with `timerepro runs {paper}`")

    def artifact(self, paper: str, artifact: str) -> dict:
        for art in self.papers[paper]["artifacts"]:
            if art["id"] == artifact:
                return art
        raise NotFoundError(f"paper {paper!r} has no artifact {artifact!r}; known: {[a['id'] for a in self.artifacts(paper)]}")

    def artifacts(self, paper: str) -> list[dict]:
        return self.papers[paper]["artifacts"]

    def implemented(self, paper: str) -> list[dict]:
        return [a for a in self.papers[paper]["artifacts"] if a["status"] == "implemented"]

    def papers_with_runs(self) -> list[str]:
        return [p for p in PAPERS if self.implemented(p)]


def _matches(value, wanted) -> bool:
    return value in wanted if isinstance(wanted, list) else value == wanted


def load(root: Path | None = None, trust_checked: bool = True) -> Registry:
    return Registry(Path(root) if root else params_dir(), trust_checked=trust_checked)


def checks_digest(root: Path, entries: list[dict]) -> str:
    """sha256 of everything the reference checks read: every file under `root` (params/), every module of this
    package (the checks' own code, the names they look up, the report modules) and the source of any module
    outside it that a task or model entry names (`module: package.module:function`)."""
    package = Path(__file__).resolve().parent
    files = sorted(p for p in Path(root).rglob("*") if p.is_file()) + sorted(package.rglob("*.py"))
    outside = sorted({str(e.get("module", "")).split(":")[0] for e in entries} - {""})
    h = hashlib.sha256()
    for name in outside:
        if name.split(".")[0] == package.name:
            continue
        found = _source(name)  # the text the checks read (catalog's, read once per process)
        h.update(f"{name}\0{found[0]}\0{found[1]}\0".encode() if found else f"missing {name}\0".encode())
    for path in files:
        data = path.read_bytes()
        h.update(f"{path}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()
