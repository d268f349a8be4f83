"""Validation of params/ files: every error names the file and the key path, before any job starts.

Every process that loads the registry (each training job's too) reads and checks params/ here, so both are
kept cheap: libyaml's parser where PyYAML has it, one checked validator per distinct parameter spec. No run's
numbers depend on this module (it returns the files' data and fills nothing in): it is left out of the code
fingerprints (`timerepro.fingerprint.OUTSIDE`).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import jsonschema
import yaml


class ConfigError(ValueError):
    """An invalid params/ file: `file: key.path: what is wrong`."""

    def __init__(self, path: Path | str, key: str, message: str):
        self.path, self.key = str(path), key
        super().__init__(f"{path}: {key}: {message}")


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml's parser: ~10x faster, same data
    """SafeLoader that refuses a mapping key written twice (PyYAML keeps the last one silently): in
    params/ a name written twice is a registry entry defined twice. Keys merged in with `<<:` may be
    overridden."""


def _unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                    f"found duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


class NotFoundError(LookupError):
    """A name given on the command line (run, job, artifact) that params/ does not define."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def load_yaml(path: Path) -> object:
    """A params/ file as Python data; ConfigError (file, `<file>`) when absent, not YAML, or a key repeats."""
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.load(fh, Loader=_UniqueKeyLoader)
    except FileNotFoundError:
        raise ConfigError(path, "<file>", "file not found") from None
    except yaml.YAMLError as exc:
        raise ConfigError(path, "<file>", f"not valid YAML: {exc}") from None


def _key_path(error: jsonschema.ValidationError) -> str:
    parts = []
    for p in error.absolute_path:
        parts.append(f"[{p}]" if isinstance(p, int) else (("." if parts else "") + str(p)))
    return "".join(parts) or "<top level>"


def validate_file(path: Path, schema_path: Path) -> dict:
    """Load a YAML file and validate it against a JSON schema written in YAML."""
    doc = load_yaml(path)
    schema = load_yaml(schema_path)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: (len(list(e.absolute_path)), str(e.absolute_path)))
    if errors:
        err = errors[0]
        message = err.message
        if err.validator == "additionalProperties":
            message = f"unknown key: {err.message}"
        raise ConfigError(path, _key_path(err), message)
    return doc


def validate_value(path: Path, key: str, value, spec: dict, named: dict[str, set]) -> None:
    """Check one parameter value against its spec (JSON schema plus `registry: <name>`)."""
    spec = dict(spec)
    registry = spec.pop("registry", None)
    error = jsonschema.exceptions.best_match(_validator(json.dumps(spec, sort_keys=True)).iter_errors(value))
    if error is not None:  # the error `jsonschema.validate` would raise
        raise ConfigError(path, key, error.message)
    if registry and value not in named[registry]:
        raise ConfigError(path, key, f"unknown {registry[:-1] if registry.endswith('s') else registry} {value!r}; known: {sorted(named[registry])}")


@lru_cache(maxsize=None)
def _validator(spec: str) -> jsonschema.protocols.Validator:
    """The checked validator of one spec (JSON text): the registry checks thousands of values against a few hundred
    specs, and `jsonschema.validate` checks the spec itself again on every call (most of a registry load)."""
    schema = json.loads(spec)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)
