# Data rules: thin wrappers around `python -m timerepro.data.commands data ...` (run locally).
# Cache location: config["data_dir"], else $TIMEREPRO_DATA, else <project>/data.
# config["require_pinned"] (paper scale) makes fetch/prepare refuse files without sha256 in the lock.

import os as _os

DATA_DIR = config.get("data_dir") or _os.environ.get("TIMEREPRO_DATA") or "data"
_PINNED = "--require-pinned" if config.get("require_pinned", False) else ""
_DATA_CMD = f"python -m timerepro.data.commands data --data-dir {DATA_DIR}"


rule fetch_dataset:
    """Download and verify every file of one dataset into <data>/raw/<dataset>/."""
    output:
        touch(f"{DATA_DIR}/raw/{{dataset}}/.fetched"),
    log:
        f"{DATA_DIR}/logs/fetch_{{dataset}}.log",
    shell:
        f"{_DATA_CMD} fetch {{wildcards.dataset}} {_PINNED} > {{log}} 2>&1"


rule prepare_dataset:
    """Extract and preprocess one real dataset into <data>/processed/<dataset>/ (manifest.json last)."""
    input:
        f"{DATA_DIR}/raw/{{dataset}}/.fetched",
    output:
        f"{DATA_DIR}/processed/{{dataset}}/manifest.json",
    log:
        f"{DATA_DIR}/logs/prepare_{{dataset}}.log",
    shell:
        f"{_DATA_CMD} prepare {{wildcards.dataset}} {_PINNED} > {{log}} 2>&1"


rule prepare_standin:
    """Generate a synthetic stand-in (upstream format) and preprocess it: <data>/standin/<scale>/processed/<dataset>/."""
    output:
        f"{DATA_DIR}/standin/{{scale}}/processed/{{dataset}}/manifest.json",
    wildcard_constraints:
        scale="smoke|offline",
    log:
        f"{DATA_DIR}/logs/standin_{{scale}}_{{dataset}}.log",
    shell:
        f"{_DATA_CMD} prepare {{wildcards.dataset}} --standin {{wildcards.scale}} > {{log}} 2>&1"
