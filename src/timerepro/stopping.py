"""A job asked to stop by its scheduler: the request is noted, training stops at the next batch boundary.

SLURM stops a job with SIGTERM (time limit, preemption, scancel; SIGKILL follows after KillWait) and,
with the profile's `--signal=USR1@<s>`, warns it with SIGUSR1 some seconds before its time limit.
While `handlers()` is active, either signal only sets a flag: `train.fit` reads it between batches (the
stacked seeds of `ensemble` and `tasks.periodic_classification` after each epoch),
writes a checkpoint there and raises `JobStopped`, whose exit status (75, EX_TEMPFAIL) fails the job
so that the workflow retries it, and the retry resumes at that batch.
"""

from __future__ import annotations

import contextlib
import signal
import threading

STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)
EXIT_STOPPED = 75  # EX_TEMPFAIL: stopped on request, the checkpoint is current, rerun to resume


class JobStopped(SystemExit):
    """Raised once the stopped job's checkpoint is written; the process exits with EXIT_STOPPED."""

    def __init__(self, where: str):
        super().__init__(EXIT_STOPPED)
        self.where = where

    def __str__(self) -> str:
        return f"stopped on request ({self.where}); the checkpoint is current: rerun to resume"


class StopRequest:
    """Which stop signal arrived (None: none yet). Handlers are per process, so is this."""

    def __init__(self):
        self.signum: int | None = None

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def request(self, signum: int, frame=None) -> None:
        self.signum = signum

    def clear(self) -> None:
        self.signum = None


STOP = StopRequest()


def requested() -> bool:
    return STOP.requested


@contextlib.contextmanager
def handlers(request: StopRequest = STOP):
    """Within the block, SIGTERM and SIGUSR1 note a stop request instead of ending the process; an
    earlier request is forgotten on entry. Outside the main thread handlers cannot be set: the block
    then changes nothing."""
    request.clear()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return
    previous = {s: signal.signal(s, request.request) for s in STOP_SIGNALS}
    try:
        yield request
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
