"""Keep Snakemake's scheduler from re-running its loop ever more often (docs/pipeline.md#the-scheduler-fix).

Snakemake 9.27.1 rate-limits job submission (``--max-jobs-per-timespan``, default ``100/1s``). At
the end of every scheduling round that had ready jobs it starts a one-second ``threading.Timer``
that wakes the scheduler again (``JobScheduler._schedule_reevalutation``). Rounds are also woken
by every finished job, and each of those rounds starts one more timer, so while jobs are waiting
for a core the number of live timer chains grows by one per finished job: after k jobs the loop
runs about k times a second. Each round re-evaluates every ready job's params and stats all their
inputs. On the default run (235 jobs, most of them waiting for one of two cores) that kept the
Snakemake process at ~35 % of a core (391 CPU-s in an 18.7-min run). The upstream report is snakemake/snakemake PR #3744
("the main loop is triggered multiple times").

:func:`install` replaces that method by one that starts a timer only when none is pending, so the
loop wakes at most once per timespan plus once per finished job. Submission is unchanged: a
timer is still pending whenever the rate limit could hold a job back. The patch applies to the
pinned Snakemake only (it checks the version and the method's presence) and is a no-op otherwise.
"""

from __future__ import annotations

import sys
import threading
import time

__all__ = ["PATCHED_VERSION", "install", "install_or_say_why"]

#: Snakemake version whose scheduler this patch was written against (pyproject.toml pins it).
PATCHED_VERSION = "9.27.1"

_LOCK = threading.Lock()


def _schedule_once(self, delay) -> None:
    """Replacement for ``JobScheduler._schedule_reevalutation``: one pending wake-up at a time."""
    now = time.monotonic()
    with _LOCK:
        due = getattr(self, "_attnscale_wakeup_due", 0.0)
        if due > now:  # a timer is pending and will wake the loop; do not start another chain
            return
        self._attnscale_wakeup_due = now + delay
    timer = threading.Timer(delay, self._open_jobs.release)
    timer.daemon = True  # never keeps the process alive after the run
    timer.start()


def install() -> bool:
    """Patch the running Snakemake's scheduler; return whether the patch was applied.

    Returns ``False`` (and changes nothing) if Snakemake is not the pinned version or no longer
    has the patched method, so a Snakemake upgrade falls back to its own behaviour.
    """
    try:
        import snakemake
        from snakemake.scheduling import job_scheduler
    except ImportError:
        return False
    cls = getattr(job_scheduler, "JobScheduler", None)
    if getattr(snakemake, "__version__", None) != PATCHED_VERSION or not hasattr(
        cls, "_schedule_reevalutation"
    ):
        return False
    cls._schedule_reevalutation = _schedule_once
    return True


def install_or_say_why(stream=None) -> bool:
    """:func:`install`, and if it did not apply, one line on ``stream`` (default stderr) saying
    so and why, so that a Snakemake upgrade does not drop the fix silently. The run is correct
    either way; without the fix the scheduler loop costs more CPU
    (docs/pipeline.md#the-scheduler-fix)."""
    if install():
        return True
    try:
        import snakemake

        found = getattr(snakemake, "__version__", "unknown")
    except ImportError:
        found = "not importable"
    print(
        f"attnscale: scheduler fix NOT installed (written for Snakemake {PATCHED_VERSION}, "
        f"found {found}); results are unaffected, the scheduler may use more CPU "
        "(docs/pipeline.md#the-scheduler-fix)",
        file=sys.stderr if stream is None else stream,
    )
    return False
