"""Validation of params/ files: every error names the file and the key path, before any job starts."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml


class ConfigError(ValueError):
    """An invalid params/ file: `file: key.path: what is wrong`."""

    def __init__(self, path: Path | str, key: str, message: str):
        self.path, self.key = str(path), key
        super().__init__(f"{path}: {key}: {message}")


class NotFoundError(LookupError):
    """A name given on the command line (run, job, artifact) that params/ does not define."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def load_yaml(path: Path) -> object:
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
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
    try:
        jsonschema.validate(value, spec)
    except jsonschema.ValidationError as exc:
        raise ConfigError(path, key, exc.message) from None
    if registry and value not in named[registry]:
        raise ConfigError(path, key, f"unknown {registry[:-1] if registry.endswith('s') else registry} {value!r}; known: {sorted(named[registry])}")
