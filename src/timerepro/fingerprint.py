"""What a run was made from, as a fingerprint: the code it executes and the pinned data it reads.

Code: the normalised source of the run's task module, model module and encoder module and of every
project module they import, transitively. Normalised = the module's syntax tree with docstrings
removed, unparsed again, so comments, blank lines and formatting do not count. The unit is the
module, with one refinement: another model's module (params/models.yaml `module:`) contributes only
the names imported from it and what those use, and a task module's import of another model's entry
point does not count (a task dispatches on `config["model"]` to one model). So editing TGAT's
forward changes the fingerprint of TGAT's runs and of no other model's; editing report code changes
none. Modules no run's numbers can depend on are left out, each with its reason (`OUTSIDE`). Data: the
sha256 pins (params/datasets.lock.yaml) of the real datasets a run reads; stand-ins are made by code,
which the code part covers.

Torch-free and import-free (the source is parsed, never executed), so the Snakefile, `timerepro
status` and the report compute fingerprints in milliseconds.
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from timerepro.data.reads import run_datasets  # noqa: F401 (the data part of a run's fingerprint; re-exported)

PACKAGE = "timerepro"
ENCODER_MODULE = "timerepro.encoders"  # every time encoder is registered in this one module
DIGEST_CHARS = 16
SUMMARY_VERSION = 1  # bump when `summarise` changes what it records

# Project modules in no run's fingerprint, with why no run's numbers can depend on them; editing one makes nothing
# stale. Each imports no project module (tests/unit/test_fingerprint.py), so leaving it out hides no other code.
OUTSIDE = {
    "timerepro.schema": "reads and checks params/ files and fills nothing in: inside a run it only reads the task "
                        "and model tables (params/tasks.yaml, models.yaml) that pick the run's modules, the same "
                        "tables this module reads to find them (so a different reading changes the fingerprint)",
}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]


# ---------------------------------------------------------------- where a run's code starts

def model_module(name: str, models: dict | None = None) -> str | None:
    """THE map from a model name to the module that implements it: params/models.yaml `module:`
    ("package.module:attribute"); None for a name without a model entry."""
    models = _models_yaml() if models is None else models
    entry = models.get(name) or {}
    module = entry.get("module")
    return module.split(":")[0] if module else None


def model_entry(name: str, models: dict | None = None) -> tuple[str, str] | None:
    """(module, attribute) of a model's registered entry point."""
    models = _models_yaml() if models is None else models
    module = (models.get(name) or {}).get("module")
    if not module or ":" not in module:
        return None
    mod, attr = module.split(":", 1)
    return mod, attr


def task_module(name: str) -> str:
    from timerepro.tasks.registry import TASKS

    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; known: {sorted(TASKS)}")
    return TASKS[name].split(":")[0]


def task_modules() -> set[str]:
    from timerepro.tasks.registry import TASKS

    return {entry.split(":")[0] for entry in TASKS.values()}


def _models_yaml() -> dict:
    from timerepro.paths import params_dir

    path = params_dir() / "models.yaml"
    return _load_models(str(path), path.stat().st_mtime_ns if path.is_file() else 0)


@lru_cache(maxsize=4)
def _load_models(path: str, _mtime: int) -> dict:
    from timerepro.schema import load_yaml

    return load_yaml(Path(path)) or {}


# ---------------------------------------------------------------- one module, parsed

def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def _referenced_names(node: ast.AST) -> set[str]:
    """Names a statement reads, annotations left out (they never run the code they name)."""
    names: set[str] = set()
    skip: set[int] = set()
    for sub in ast.walk(node):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
            skip.update(id(a.annotation) for a in (*sub.args.args, *sub.args.posonlyargs, *sub.args.kwonlyargs,
                                                   sub.args.vararg, sub.args.kwarg) if a is not None and a.annotation)
            if sub.returns is not None:
                skip.add(id(sub.returns))
        elif isinstance(sub, ast.AnnAssign):
            skip.add(id(sub.annotation))
    stack = [node]
    while stack:
        sub = stack.pop()
        if id(sub) in skip:
            continue
        if isinstance(sub, ast.Name):
            names.add(sub.id)
        stack.extend(ast.iter_child_nodes(sub))
    return names


def _defined_names(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name.split(".")[0]) for a in stmt.names if a.name != "*"}
    return set()


def summarise(text: str, filename: str = "<module>") -> dict:
    """What the closure needs of one module's source, JSON-able (cached by the source's sha256):
    per top-level statement its normalised hash, the names it defines and reads, and whether it
    is an import; and every import statement, nested ones included, unresolved."""
    tree = _strip_docstrings(ast.parse(text, filename=filename))
    statements, imports = [], []
    for i, stmt in enumerate(tree.body):
        statements.append({"hash": _sha(ast.unparse(stmt)), "defines": sorted(_defined_names(stmt)),
                           "reads": sorted(_referenced_names(stmt)),
                           "import": isinstance(stmt, (ast.Import, ast.ImportFrom))})
        for node in ast.walk(stmt):
            if isinstance(node, ast.Import):
                imports += [[i, "import", a.name, 0, a.asname] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                imports += [[i, "from", node.module or "", node.level, a.name, a.asname] for a in node.names]
    return {"statements": statements, "imports": imports}


@dataclass(frozen=True)
class Import:
    """One import's binding: `bound` names the module `module` (attr None) or `module.attr`."""

    bound: str
    module: str
    attr: str | None
    stmt: int  # index of the top-level statement that holds it


@dataclass
class ModuleSource:
    name: str
    path: Path
    statements: list[dict]  # of `summarise`
    imports: list[Import]
    _definitions: dict | None = field(default=None, repr=False)

    def refs(self, i: int) -> list[str]:
        return self.statements[i]["reads"]

    @property
    def digest(self) -> str:
        return self.digest_of(range(len(self.statements)))

    def digest_of(self, keep) -> str:
        return _sha("\n".join(self.statements[i]["hash"] for i in sorted(keep)))

    @property
    def definitions(self) -> dict[str, list[int]]:
        if self._definitions is None:
            self._definitions = {}
            for i, stmt in enumerate(self.statements):
                for name in stmt["defines"]:
                    self._definitions.setdefault(name, []).append(i)
        return self._definitions

    def slice(self, names: set[str]) -> set[int]:
        """Indices of the top-level statements `names` need: their definitions, the definitions those
        read, and every statement that defines nothing (it runs on import)."""
        keep = {i for i, s in enumerate(self.statements) if not s["defines"]}
        todo = list(names) + [n for i in keep for n in self.refs(i)]
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for i in self.definitions.get(name, []):
                if i not in keep:
                    keep.add(i)
                    todo.extend(self.refs(i))
        return keep

    def imports_of(self, keep: set[int]) -> list[tuple[Import, bool]]:
        """The imports the statements `keep` execute, each with whether a kept statement reads the name
        it binds (an import nobody reads still runs the imported module's top-level statements)."""
        used = {n for i in keep for n in self.refs(i)}
        return [(imp, not self.statements[imp.stmt]["import"] or imp.bound in used or imp.bound == "*")
                for imp in self.imports if imp.stmt in keep]


class Source:
    """The project's modules as files under one package folder (the code this process runs).

    Module summaries are cached in `__pycache__/fingerprint-<module>.json` beside the source (as
    Python caches bytecode), keyed by the source's sha256: parsing every module costs ~1 s."""

    def __init__(self, package_dir: Path | None = None):
        if package_dir is None:
            import timerepro

            package_dir = Path(timerepro.__file__).resolve().parent
        self.package_dir = Path(package_dir)
        self._cache: dict[str, ModuleSource | None] = {}

    def path(self, module: str) -> Path | None:
        parts = module.split(".")
        if parts[0] != PACKAGE:
            return None
        base = self.package_dir.joinpath(*parts[1:])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def is_module(self, module: str) -> bool:
        return self.path(module) is not None

    def get(self, module: str) -> ModuleSource | None:
        if module not in self._cache:
            self._cache[module] = self._load(module)
        return self._cache[module]

    def _summary(self, module: str, path: Path) -> dict:
        data = path.read_bytes()
        key = hashlib.sha256(data).hexdigest()
        cache = path.parent / "__pycache__" / f"fingerprint-{module}.json"
        try:
            cached = json.loads(cache.read_text())
            if cached.get("sha256") == key and cached.get("version") == SUMMARY_VERSION:
                return cached["summary"]
        except (OSError, ValueError):
            pass
        summary = summarise(data.decode("utf-8"), str(path))
        try:
            from timerepro.io import atomic_write_text

            atomic_write_text(cache, json.dumps({"sha256": key, "version": SUMMARY_VERSION, "summary": summary}),
                              durable=False)
        except OSError:  # a read-only install: parse every time
            pass
        return summary

    def _load(self, module: str) -> ModuleSource | None:
        path = self.path(module)
        if path is None:
            return None
        summary = self._summary(module, path)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        imports = []
        for entry in summary["imports"]:
            if entry[1] == "import":
                i, _, name, _, asname = entry
                imports.append(Import(asname or name.split(".")[0], name, None, i))
                continue
            i, _, base, level, name, asname = entry
            if level:
                anchor = package.split(".")
                base = ".".join(anchor[: len(anchor) - (level - 1)] + ([base] if base else []))
            if name == "*":
                imports.append(Import("*", base, None, i))
            elif self.is_module(f"{base}.{name}"):
                imports.append(Import(asname or name, f"{base}.{name}", None, i))
            else:
                imports.append(Import(asname or name, base, name, i))
        return ModuleSource(module, path, summary["statements"], imports)


# ---------------------------------------------------------------- closure of a run's code

@dataclass(frozen=True)
class CodeFingerprint:
    digest: str
    modules: dict  # module -> digest of what the run uses of it
    partial: dict  # module -> the names used, for modules of other models (not the whole file)


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def code_fingerprint(roots: list[str], *, entry_roots: tuple = (), foreign: set[str] = frozenset(),
                     foreign_entries: set[tuple] = frozenset(), dispatchers: set[str] = frozenset(),
                     source: Source | None = None) -> CodeFingerprint:
    """Fingerprint of the modules `roots` and every project module they import, transitively.

    `entry_roots`: (module, attribute) roots taken in part, the attribute and what it uses (a model's entry point in
    a module other models' entries share; the module must be in `foreign`); `foreign`: modules of other models, taken
    only in the part imported from them (and what that part uses); `foreign_entries`: (module, attribute) entry
    points of other models, not followed from the modules in `dispatchers` (the task modules, which pick one model
    by name).
    """
    source = source or Source()
    whole: set[str] = set()
    wanted: dict[str, set[str]] = {}  # foreign module -> the names used from it
    followed: dict[str, set[str]] = {}  # foreign module -> the names whose imports were followed
    todo: list[tuple[str, str | None]] = [(r, None) for r in roots] + list(entry_roots)

    def push(src: ModuleSource, imports: list[tuple[Import, bool]]) -> None:
        for imp, used in imports:
            if (imp.module != PACKAGE and not imp.module.startswith(PACKAGE + ".")) or imp.module in OUTSIDE:
                continue
            if imp.attr is not None and src.name in dispatchers and (imp.module, imp.attr) in foreign_entries:
                continue
            # a name nobody reads (annotations only): of another model's module, only what runs on import
            todo.append((imp.module, imp.attr if used or imp.module not in foreign else ""))

    while True:
        while todo:
            module, name = todo.pop()
            src = source.get(module)
            if src is None:
                continue
            todo.extend((p, None) for p in _parents(module) if p not in whole)  # packages run on import
            if module in foreign and name is not None:
                wanted.setdefault(module, set()).add(name)  # "" = only its statements that run on import
            elif module not in whole:
                whole.add(module)
                push(src, src.imports_of(set(range(len(src.statements)))))
        pending = [m for m, names in wanted.items() if m not in whole and followed.get(m) != names]
        if not pending:
            break
        for module in pending:
            followed[module] = set(wanted[module])
            src = source.get(module)
            push(src, src.imports_of(src.slice(followed[module])))

    modules = {m: source.get(m).digest for m in sorted(whole)}
    partial = {}
    for module, names in sorted(wanted.items()):
        if module not in whole:
            src = source.get(module)
            modules[module] = src.digest_of(src.slice(names))
            partial[module] = sorted(n for n in names if n)
    digest = _sha(json.dumps({"modules": modules, "partial": partial}, sort_keys=True))
    return CodeFingerprint(digest, dict(sorted(modules.items())), partial)


# ---------------------------------------------------------------- a run's fingerprint

@dataclass(frozen=True)
class RunFingerprint:
    digest: str
    code: CodeFingerprint
    data: dict  # dataset -> digest of its pinned file hashes (real data only)

    def as_record(self) -> dict:
        return {"fingerprint": self.digest, "code": self.code.digest, "modules": self.code.modules,
                "partial": self.code.partial, "data": self.data}


class Fingerprinter:
    """Fingerprints of runs against one snapshot of the source, params/models.yaml and the lock;
    cached per (task, model, encoder), so thousands of runs cost a few parses."""

    def __init__(self, *, package_dir: Path | None = None, models: dict | None = None, lock=None):
        self.source = Source(package_dir)
        self.models = _models_yaml() if models is None else models
        self._lock = lock
        self._code: dict[tuple, CodeFingerprint] = {}

    @property
    def lock(self):
        if self._lock is None:
            from timerepro.data.lock import load_lock

            self._lock = load_lock()
        return self._lock

    def code(self, task: str, model: str | None, encoder: str | None) -> CodeFingerprint:
        key = (task, model, encoder)
        if key not in self._code:
            roots = [task_module(task)]
            own = model_module(model, self.models) if model else None
            others = [m for m in self.models if m != model]
            foreign = {model_module(m, self.models) for m in others} - {None}
            entries = {model_entry(m, self.models) for m in others} - {None}
            # a module other models' entries share (models/seq/time_lstm.py) counts in part: the run's entry and
            # what it uses, as another model's module would; a module of its own counts whole
            entry = model_entry(model, self.models) if own in foreign else None
            if own and entry is None:
                roots.append(own)
                foreign.discard(own)
                entries = {e for e in entries if e[0] != own}
            if encoder:
                roots.append(ENCODER_MODULE)
            self._code[key] = code_fingerprint(roots, entry_roots=(entry,) if entry else (), foreign=foreign,
                                               foreign_entries=entries, dispatchers=task_modules(), source=self.source)
        return self._code[key]

    def data(self, config: dict) -> dict:
        if config.get("standin"):
            return {}
        out = {}
        for name in run_datasets(config):
            try:
                files = self.lock.get(name).files
            except Exception:  # noqa: BLE001 - a generated dataset (not in the lock) has no pins
                continue
            out[name] = _sha(json.dumps(sorted((f.name, f.sha256) for f in files)))
        return out

    def run(self, config: dict) -> RunFingerprint:
        code = self.code(config["task"], config.get("model"), config.get("encoder"))
        data = self.data(config)
        return RunFingerprint(_sha(json.dumps({"code": code.digest, "data": data}, sort_keys=True)), code, data)

    def job(self, configs: list[dict]) -> str:
        """One digest for the runs of a scheduler job (its marker's name)."""
        return _sha(" ".join(sorted({self.run(c).digest for c in configs})))


def changes(recorded: dict | None, current: RunFingerprint) -> list[str]:
    """What differs between a record's fingerprint (its `code` provenance) and the current one:
    module names, `data:<dataset>`, or `unknown code` for a record made before fingerprints."""
    if not recorded or "fingerprint" not in recorded:
        return ["unknown code (record made before code fingerprints)"]
    if recorded["fingerprint"] == current.digest:
        return []
    old, new = recorded.get("modules", {}), current.code.modules
    out = sorted(m for m in set(old) | set(new) if old.get(m) != new.get(m))
    old_data, new_data = recorded.get("data", {}), current.data
    out += [f"data:{d}" for d in sorted(set(old_data) | set(new_data)) if old_data.get(d) != new_data.get(d)]
    return out or ["fingerprint scheme"]
