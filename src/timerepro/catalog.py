"""Registries of code by name: a Catalog refuses a second entry under a taken name, and a
`module:function` target of params/ is checked without importing it.

Two kinds of registry, one rule each (docs/map.md):
* names that params/ resolve to code through a `module: package.module:function` field (tasks in
  params/tasks.yaml, models in params/models.yaml): the YAML is the only map, and
  `schema.load_yaml` refuses a key written twice;
* functions registered in code (report aggregators, claim rules, figure renderers, time encoders):
  a Catalog, filled by explicit `add` calls (for the report: `report.families.fill`).

Validation (`timerepro validate`, every `registry.load()`) never imports a model or matplotlib:
`defined_names` reads a module's source; tests import everything and check that both views agree.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Callable, Generic, Iterator, Mapping, TypeVar

T = TypeVar("T")


class DuplicateName(ValueError):
    """A name registered twice: a programming error, raised when the second entry is added."""


class UnknownName(KeyError):
    """A name no entry has; the message lists the known ones."""

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0])


def where(obj) -> str:
    """'package.module:qualname' of a function or class (for messages)."""
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', repr(obj))}"


MARK = "__catalog_entries__"  # attribute of a function marked by `Catalog.register`: [(kind, name), ...]


class Catalog(Mapping[str, T], Generic[T]):
    """name -> object; `add` refuses a taken name. `fill` (optional) is called once, before the
    first lookup, to add the entries (e.g. `report.families.fill`). `register(name)` is a decorator
    that only marks a function; `add_marked(module)` adds the marked functions a module defines."""

    def __init__(self, kind: str, fill: Callable[[], None] | None = None):
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._fill = fill
        self._filled = fill is None

    def add(self, name: str, obj: T) -> T:
        if name in self._entries and self._entries[name] is not obj:
            raise DuplicateName(f"{self.kind} {name!r} is registered twice: by {where(self._entries[name])} "
                                f"and by {where(obj)}")
        self._entries[name] = obj
        return obj

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: mark a function as this catalog's entry `name` (added by `add_marked`)."""

        def deco(fn: T) -> T:
            fn.__dict__.setdefault(MARK, []).append((self.kind, name))
            return fn

        return deco

    def add_marked(self, module) -> list[str]:
        """Add every top-level function of `module` (defined there, not imported) marked for this catalog."""
        added = []
        for obj in list(vars(module).values()):
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            for kind, name in getattr(obj, MARK, ()):
                if kind == self.kind:
                    self.add(name, obj)
                    added.append(name)
        return added

    def _ensure_filled(self) -> None:
        if not self._filled:
            self._filled = True  # before the call: fill() adds through `add`, which must not recurse
            self._fill()

    def __getitem__(self, name: str) -> T:
        self._ensure_filled()
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownName(f"unknown {self.kind} {name!r}; known: {sorted(self._entries)}") from None

    def __iter__(self) -> Iterator[str]:
        self._ensure_filled()
        return iter(self._entries)

    def __len__(self) -> int:
        self._ensure_filled()
        return len(self._entries)

    def __contains__(self, name) -> bool:
        self._ensure_filled()
        return name in self._entries

    def __repr__(self) -> str:
        return f"Catalog({self.kind!r}, {sorted(self._entries)})"


# ------------------------------------------------------------------ module:function targets

def split_target(target: str) -> tuple[str, str]:
    """'package.module:function' -> ('package.module', 'function'); ValueError when malformed."""
    module, sep, attr = str(target).partition(":")
    if not sep or not module or not attr.isidentifier():
        raise ValueError(f"{target!r} is not of the form 'package.module:function'")
    return module, attr


def resolve(target: str):
    """Import 'package.module:function' and return the function."""
    module, attr = split_target(target)
    obj = getattr(importlib.import_module(module), attr, None)
    if obj is None:
        raise ImportError(f"{target!r}: module {module!r} defines no {attr!r}")
    return obj


@lru_cache(maxsize=256)
def _source(module: str) -> tuple[str, str] | None:
    """(path, source) of a module found on sys.path without executing it (parent packages' __init__
    files are imported by find_spec; the project's are light)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return spec.origin, Path(spec.origin).read_text(encoding="utf-8")


def defined_names(module: str) -> set[str] | None:
    """Top-level names a module defines (def, class, assignment, import), read from its source; None
    when the module cannot be found."""
    found = _source(module)
    if found is None:
        return None
    names: set[str] = set()
    for node in ast.parse(found[1], filename=found[0]).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def target_problem(target: str) -> str | None:
    """Why 'package.module:function' cannot be resolved (read from source, nothing imported), or None."""
    try:
        module, attr = split_target(target)
    except ValueError as exc:
        return str(exc)
    names = defined_names(module)
    if names is None:
        return f"{target!r}: no module {module!r}"
    if attr not in names:
        return f"{target!r}: module {module!r} defines no {attr!r}"
    return None


def decorated_names(module: str, decorators: Mapping[str, str]) -> dict[str, list[str]]:
    """kind -> the names a module registers with decorators such as `@aggregator("name")` or
    `@aggregate.aggregator("name")`, read from its source. `decorators` maps a decorator's name to its
    kind; only top-level functions count (those `report.families.fill` registers)."""
    found = _source(module)
    out: dict[str, list[str]] = {kind: [] for kind in decorators.values()}
    if found is None:
        return out
    for node in ast.parse(found[1], filename=found[0]).body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in node.decorator_list:
            if not (isinstance(deco, ast.Call) and deco.args and isinstance(deco.args[0], ast.Constant)):
                continue
            func = deco.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in decorators:
                out[decorators[name]].append(deco.args[0].value)
    return out
