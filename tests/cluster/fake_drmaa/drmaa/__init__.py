"""Test double for the `drmaa` binding backed by sbatch/sacct (see ../README.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass

from .const import JobControlAction, JobState
from .errors import (
    AlreadyActiveSessionException,
    DeniedByDrmException,
    ExitTimeoutException,
    InternalException,
    InvalidAttributeValueException,
    InvalidJobException,
)

__all__ = [
    "Session", "JobTemplate", "JobState", "JobControlAction", "AlreadyActiveSessionException",
    "DeniedByDrmException", "ExitTimeoutException", "InternalException",
    "InvalidAttributeValueException", "InvalidJobException",
]

# long options slurm-drmaa's native-specification parser knows (from its documentation)
VALUE_OPTIONS = {
    "account", "acctg-freq", "comment", "constraint", "cpus-per-task", "mem", "mem-per-cpu",
    "mincpus", "nodelist", "nodes", "ntasks-per-node", "partition", "qos", "reservation",
    "job_name", "time", "ntasks", "gres", "licenses", "mail-type", "exclude", "tmp",
    "clusters", "dependency",
}
FLAG_OPTIONS = {"contiguous", "exclusive", "requeue", "share", "no-kill", "no-requeue"}
NUMERIC = {"cpus-per-task", "mem", "mem-per-cpu", "mincpus", "ntasks", "ntasks-per-node", "tmp"}
TIME = re.compile(r"^\d+:\d+(:\d+)?$")  # hours:minutes[:seconds]; no plain minutes, no days

FINAL_STATES = {
    "COMPLETED": JobState.DONE,
    "FAILED": JobState.FAILED,
    "CANCELLED": JobState.FAILED,
    "TIMEOUT": JobState.FAILED,
    "OUT_OF_MEMORY": JobState.FAILED,
    "NODE_FAIL": JobState.FAILED,
    "BOOT_FAIL": JobState.FAILED,
    "DEADLINE": JobState.FAILED,
    "PREEMPTED": JobState.FAILED,
}


def check_native_spec(spec: str) -> list[str]:
    """sbatch arguments for a native specification slurm-drmaa would accept, else raise."""
    args = []
    for token in spec.split():
        if not token.startswith("--"):
            raise InvalidAttributeValueException(f"Invalid native specification: {spec} ({token})")
        name, eq, value = token[2:].partition("=")
        if name in FLAG_OPTIONS and not eq:
            args.append(token)
            continue
        if name not in VALUE_OPTIONS:
            raise InvalidAttributeValueException(
                f"Invalid native specification: {spec} (Unsupported option: --{name})")
        if not eq or not value:
            raise InvalidAttributeValueException(f"Invalid native specification: {spec} (--{name} needs a value)")
        if name in NUMERIC and not value.isdigit():
            raise InvalidAttributeValueException(f"--{name}={value}: slurm-drmaa reads a plain number")
        if name == "time" and not TIME.match(value):
            raise InvalidAttributeValueException(f"--time={value}: slurm-drmaa reads hours:minutes[:seconds]")
        args.append(token)
    return args


@dataclass
class JobTemplate:
    remoteCommand: str = ""
    nativeSpecification: str = ""
    outputPath: str = ""
    errorPath: str = ""
    jobName: str = "drmaa"


def _run(cmd: list[str]) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout


class Session:
    _active = False

    def initialize(self, contact=None):
        if Session._active:
            raise AlreadyActiveSessionException("session already active")
        Session._active = True

    def exit(self):
        Session._active = False

    def createJobTemplate(self):
        return JobTemplate()

    def deleteJobTemplate(self, jt):
        pass

    def runJob(self, jt: JobTemplate) -> str:
        args = check_native_spec(jt.nativeSpecification)
        record = os.environ.get("FAKE_DRMAA_RECORD")
        if record:
            with open(record, "a") as f:
                f.write(json.dumps({"jobName": jt.jobName, "nativeSpecification": jt.nativeSpecification}) + "\n")
        out = jt.outputPath.lstrip(":")
        if out and os.path.isdir(out):
            out = os.path.join(out, f"{jt.jobName}.%j.log")
        cmd = ["sbatch", "--parsable", f"--job-name={jt.jobName}", *args]
        if out:
            cmd.append(f"--output={out}")
        cmd.append(jt.remoteCommand)
        try:
            return _run(cmd).strip().split(";")[0]
        except subprocess.CalledProcessError as e:
            raise DeniedByDrmException(e.stderr.strip()) from e

    def jobStatus(self, jobid: str) -> str:
        try:
            states = _run(["sacct", "-X", "-n", "-P", "-o", "State", "-j", jobid]).split()
            if states:
                state = states[0].split()[0]
                if state in FINAL_STATES:
                    return FINAL_STATES[state]
        except subprocess.CalledProcessError as e:
            raise InternalException(e.stderr.strip()) from e
        # squeue fails for jobs it no longer lists
        queued = subprocess.run(["squeue", "-h", "-o", "%T", "-j", jobid], capture_output=True,
                                text=True, timeout=60).stdout.split()
        if queued and queued[0] == "PENDING":
            return JobState.QUEUED_ACTIVE
        if queued:
            return JobState.RUNNING
        return JobState.UNDETERMINED  # finished, but not in accounting yet

    def control(self, jobid: str, action: str):
        if action == JobControlAction.TERMINATE:
            subprocess.run(["scancel", jobid], check=False, timeout=60)
