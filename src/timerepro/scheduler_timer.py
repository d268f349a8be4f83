"""One pending re-evaluation timer in Snakemake's scheduler instead of one more per finished job.

Snakemake (9.27.1, `scheduling/job_scheduler.py`) ends every scheduling pass by starting a `threading.Timer` of the
rate limiter's timespan (`--max-jobs-per-timespan`, default 100/1s) that wakes the scheduler again. Passes are also
woken by every finished job, and each of those passes starts a timer too, so the chains add up: after N finished
jobs, about N timers each wake the scheduler every second (upstream: snakemake/snakemake#3744, "the main loop is
being rerun by the scheduler before the specified wait time has elapsed"; #2354, CPU growing on long runs). On the
offline default (470 jobs) that was Snakemake's own process at 5.9 of 136 core-minutes (round 16), its share
growing with every finished job (17 threads after 11 jobs, 1 more per job). Keeping a single pending timer keeps
what the timer is for (a pass within one timespan after a pass, so rate-limited jobs are submitted) and nothing
else; the timer is a daemon, so a finished workflow does not wait for it.
"""

from __future__ import annotations

import threading

from timerepro.patching import replace_once

_PENDING = "_timerepro_timer_pending"


def single_reevaluation_timer() -> bool:
    """Make `JobScheduler._schedule_reevalutation` (sic) start a timer only when none is pending.

    Call it once from the Snakefile (before the scheduler runs); idempotent, and a no-op (False) on a Snakemake
    without that method. Returns True when the method is (now) the single-timer one.
    """
    try:
        from snakemake.scheduling.job_scheduler import JobScheduler
    except ImportError:
        return False
    return replace_once(JobScheduler, "_schedule_reevalutation", lambda upstream: _schedule_reevalutation)


def _schedule_reevalutation(self, delay) -> None:
    """Upstream's method, but a no-op while a timer is pending; the timer is a daemon thread."""
    if getattr(self, _PENDING, False):  # a pass is already due within `delay`: it schedules the next timer
        return
    setattr(self, _PENDING, True)

    def wake() -> None:
        setattr(self, _PENDING, False)  # cleared before the release: the pass it wakes starts the next timer
        self._open_jobs.release()

    timer = threading.Timer(delay, wake)
    timer.daemon = True
    timer.start()
