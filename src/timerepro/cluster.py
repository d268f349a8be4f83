"""Cluster helpers: the DRMAA native specification, reading SLURM accounting (sacct), and
normalise_slurm_job_states(), which lets the SLURM executor notice jobs cancelled with scancel.

The SLURM profile (profiles/slurm) needs no code: snakemake-executor-plugin-slurm turns a
job's resources into sbatch options. The DRMAA profile (profiles/slurm-drmaa) cannot call
Python per job: snakemake-executor-plugin-drmaa formats its `drmaa-args` string with the job's
properties (`{resources.mem_mb}`, `{rule}`, ...). So the mapping lives here as a template,
`DRMAA_ARGS_TEMPLATE`; the profile carries exactly this string (a test checks it) and
`drmaa_native_spec` renders it the way the plugin does, for tests and for checking a site.

The template follows what slurm-drmaa's native-specification parser accepts (long options
only as `--name=value`, no spaces inside values):

- time: slurm-drmaa reads `--time` as `hours:minutes[:seconds]` and rejects plain minutes,
  while sbatch reads `a:b` as minutes:seconds. `0:<minutes>:00` means the same to both.
- memory: `--mem=<MB>` (per node) with a plain number; slurm-drmaa takes no unit suffixes.
- GPUs: `--gres=gpu[:model]:<n>`; slurm-drmaa has no `--gpus`.
- partition and account come from the environment, the same variables as the SLURM profile.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from types import SimpleNamespace

from timerepro.patching import replace_once

ENV_PARTITION = "TIMEREPRO_SLURM_PARTITION"
ENV_ACCOUNT = "TIMEREPRO_SLURM_ACCOUNT"
ENV_GPU_MODEL = "TIMEREPRO_SLURM_GPU_MODEL"

# What the DRMAA profile passes to each submission (profiles/slurm-drmaa/config.yaml:
# `drmaa-args`). `drmaa_site` and `drmaa_gres` are resources the profile computes from the
# environment with drmaa_site_args() and drmaa_gres_name().
DRMAA_ARGS_TEMPLATE = (
    "--ntasks=1 --cpus-per-task={resources.cpus_per_task} --mem={resources.mem_mb}"
    " --time=0:{resources.runtime}:00 --gres={resources.drmaa_gres}:{resources.gpu}"
    " --comment=rule_{rule} {resources.drmaa_site}"
)

# Fallbacks for resources a rule does not set: the DRMAA profile's `default-resources`
# (a test checks that the two agree). The SLURM profile uses the same numbers.
DRMAA_DEFAULT_RESOURCES: dict[str, int] = {
    "mem_mb": 2000,
    "runtime": 60,
    "cpus_per_task": 1,
    "gpu": 0,
}

_NO_SPACE = re.compile(r"^[^\s'\"]+$")


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def _site_value(name: str, value: str) -> str:
    value = value.strip()
    if value and not _NO_SPACE.match(value):
        raise ValueError(f"{name}={value!r}: SLURM names cannot contain spaces or quotes")
    return value


def drmaa_site_args(environ: Mapping[str, str] | None = None) -> str:
    """`--partition=P --account=A` from TIMEREPRO_SLURM_PARTITION / _ACCOUNT ('' when unset)."""
    env = _env(environ)
    parts = []
    partition = _site_value(ENV_PARTITION, env.get(ENV_PARTITION, ""))
    account = _site_value(ENV_ACCOUNT, env.get(ENV_ACCOUNT, ""))
    if partition:
        parts.append(f"--partition={partition}")
    if account:
        parts.append(f"--account={account}")
    return " ".join(parts)


def drmaa_gres_name(environ: Mapping[str, str] | None = None) -> str:
    """`gpu` or `gpu:<model>` (TIMEREPRO_SLURM_GPU_MODEL): the GRES a GPU count attaches to."""
    model = _site_value(ENV_GPU_MODEL, _env(environ).get(ENV_GPU_MODEL, ""))
    return f"gpu:{model}" if model else "gpu"


def gpu_model(environ: Mapping[str, str] | None = None) -> str:
    """The GPU type requested by GPU rules on SLURM ('' = any): TIMEREPRO_SLURM_GPU_MODEL.

    For the Snakefile: `gpu_model=cluster.gpu_model()` next to `gpu=N` in a rule's resources
    (the SLURM plugin then asks for `--gpus=<model>:N`; an empty string is ignored).
    """
    return _site_value(ENV_GPU_MODEL, _env(environ).get(ENV_GPU_MODEL, ""))


def _int_resource(name: str, value: object, minimum: int) -> int:
    """An integer resource (snakemake resources are ints; digit strings are accepted)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"resource {name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"resource {name} must be >= {minimum}, got {value}")
    return value


def drmaa_native_spec(
    resources: Mapping[str, object],
    rule: str = "job",
    environ: Mapping[str, str] | None = None,
) -> str:
    """The native specification the DRMAA profile gives slurm-drmaa for one job.

    `resources` are the job's snakemake resources (missing ones fall back to
    DRMAA_DEFAULT_RESOURCES); partition, account and GPU model come from `environ`
    (default: os.environ). Renders DRMAA_ARGS_TEMPLATE like the plugin does, with
    whitespace collapsed.

    >>> drmaa_native_spec({"mem_mb": 4000, "runtime": 90, "gpu": 1}, rule="train",
    ...                   environ={"TIMEREPRO_SLURM_PARTITION": "gpu"})
    '--ntasks=1 --cpus-per-task=1 --mem=4000 --time=0:90:00 --gres=gpu:1 --comment=rule_train --partition=gpu'
    """
    values: dict[str, object] = dict(DRMAA_DEFAULT_RESOURCES)
    values.update({k: v for k, v in resources.items() if v is not None})
    checked = {
        "cpus_per_task": _int_resource("cpus_per_task", values["cpus_per_task"], 1),
        "mem_mb": _int_resource("mem_mb", values["mem_mb"], 1),
        "runtime": _int_resource("runtime", values["runtime"], 1),
        "gpu": _int_resource("gpu", values["gpu"], 0),
    }
    if not _NO_SPACE.match(rule):
        raise ValueError(f"rule name {rule!r} cannot go into a native specification")
    ns = SimpleNamespace(
        **{**values, **checked},
        drmaa_site=drmaa_site_args(environ),
        drmaa_gres=drmaa_gres_name(environ),
    )
    return " ".join(DRMAA_ARGS_TEMPLATE.format(resources=ns, rule=rule).split())


# --------------------------------------------------------------------------------------------
# SLURM accounting

SACCT_FIELDS = (
    "JobID",
    "JobName",
    "State",
    "ExitCode",
    "Account",
    "Partition",
    "AllocTRES",
    "ReqMem",
    "ReqCPUS",
    "Timelimit",
    "Start",
    "End",
    "Comment",
)


def parse_sacct(text: str, fields: Iterable[str] = SACCT_FIELDS) -> list[dict[str, str]]:
    """Rows of `sacct --parsable2 --noheader --format=<fields>` output as dicts."""
    names = list(fields)
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = line.split("|")
        if len(cells) != len(names):
            raise ValueError(f"sacct line has {len(cells)} fields, expected {len(names)}: {line!r}")
        rows.append(dict(zip(names, cells)))
    return rows


def sacct_jobs(
    job_ids: Iterable[str | int] | None = None,
    *,
    name: str | None = None,
    fields: Iterable[str] = SACCT_FIELDS,
    since: timedelta = timedelta(days=2),
    allocations_only: bool = True,
    env: Mapping[str, str] | None = None,
    timeout: float = 30,
) -> list[dict[str, str]]:
    """Jobs from SLURM accounting as dicts (one per job; with allocations_only=False also
    the job steps). Records reach slurmdbd asynchronously: poll rather than read once.

    Raises subprocess.CalledProcessError when sacct fails (e.g. no accounting storage).
    """
    names = list(fields)
    start = (datetime.now() - since).strftime("%Y-%m-%dT%H:%M:%S")
    cmd = ["sacct", "--parsable2", "--noheader", f"--format={','.join(names)}",
           f"--starttime={start}", "--endtime=now"]
    if allocations_only:
        cmd.append("--allocations")
    if job_ids is not None:
        ids = [str(j) for j in job_ids]
        if not ids:
            return []
        cmd.append(f"--jobs={','.join(ids)}")
    else:
        cmd.append("--allusers")
    if name is not None:
        cmd.append(f"--name={name}")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=timeout,
                         env=None if env is None else dict(env)).stdout
    return parse_sacct(out, names)


def tres(text: str) -> dict[str, str]:
    """`billing=1,cpu=2,gres/gpu=1,mem=700M,node=1` -> {'cpu': '2', 'gres/gpu': '1', ...}."""
    out = {}
    for item in text.split(","):
        if item:
            key, _, value = item.partition("=")
            out[key] = value
    return out


_MEM_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def mem_mb(text: str) -> float:
    """A SLURM memory figure (`700M`, `2G`, `4000Mn`, `1024Mc`, `1500`) in MB."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)([KMGT]?)([nc]?)\s*", text)
    if not m:
        raise ValueError(f"not a SLURM memory figure: {text!r}")
    return float(m.group(1)) * _MEM_UNITS[m.group(2) or "M"]


def minutes(text: str) -> float | None:
    """A SLURM duration (`MM:SS`, `HH:MM:SS`, `D-HH:MM:SS`, `UNLIMITED`) in minutes."""
    text = text.strip()
    if text.upper() in ("UNLIMITED", "INFINITE", "PARTITION_LIMIT"):
        return None
    m = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text)
    if not m:
        raise ValueError(f"not a SLURM duration: {text!r}")
    days = int(m.group(1) or 0)
    parts = [int(p) for p in m.group(2, 3, 4) if p is not None]
    if len(parts) == 3:
        h, mi, s = parts
    elif len(parts) == 2:
        # D-HH:MM with a day part, otherwise MM:SS
        h, mi, s = (parts[0], parts[1], 0) if m.group(1) else (0, parts[0], parts[1])
    else:
        h, mi, s = (parts[0], 0, 0) if m.group(1) else (0, parts[0], 0)
    return days * 1440 + h * 60 + mi + s / 60


def slurm_time(text: str) -> datetime | None:
    """sacct's Start/End (`2026-01-02T03:04:05`; `Unknown`/`None` -> None)."""
    if text in ("", "Unknown", "None"):
        return None
    return datetime.fromisoformat(text)


def sbatch_args(native_spec: str) -> list[str]:
    """A native specification as an argument list (it is also valid sbatch syntax)."""
    return shlex.split(native_spec)


# --------------------------------------------------------------------------------------------
# snakemake-executor-plugin-slurm 2.8.0: jobs cancelled with scancel are never noticed

def normalise_slurm_job_states() -> bool:
    """Make the SLURM executor notice jobs cancelled by a user or an admin (`scancel`).

    `sacct` reports such a job as `CANCELLED by <uid>`; snakemake-executor-plugin-slurm
    (<= 2.8.0) compares the state with the exact word `CANCELLED`, so it keeps waiting for the
    job forever. This wraps the plugin's status query so that any `CANCELLED ...` state reads
    `CANCELLED`: the job is then reported as failed (and retried or rerun) like any other.
    Call it once from the Snakefile; it is idempotent and a no-op without the plugin.
    Returns True when the plugin's query is (now) wrapped.
    """
    try:
        import snakemake_executor_plugin_slurm as plugin
    except ImportError:
        return False

    def wrap(query):
        async def query_job_status(command, logger):
            states, duration = await query(command, logger)
            if states:
                states = {job: ("CANCELLED" if state.startswith("CANCELLED") else state)
                          for job, state in states.items()}
            return states, duration

        return query_job_status

    return replace_once(plugin, "query_job_status", wrap)
