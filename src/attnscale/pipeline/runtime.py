"""Job-level helpers for workflow scripts: a log file per job and BLAS threads that follow the
rule's ``threads:`` (so parallel jobs do not oversubscribe the cores)."""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import traceback

from threadpoolctl import threadpool_limits

__all__ = ["LOG", "job", "Progress"]

LOG = logging.getLogger("attnscale")


@contextlib.contextmanager
def job(log_path, threads: int = 1, name: str = "job"):
    """Run a workflow job: log to ``log_path``, limit BLAS/OpenMP threads to ``threads``.

    Elapsed times go to the log only (never into results). Exceptions are written to the log with
    their traceback and re-raised, so ``snakemake --show-failed-logs`` shows them.
    """
    handler = logging.FileHandler(log_path, mode="w") if log_path else logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    LOG.handlers[:] = [handler]
    LOG.setLevel(logging.INFO)
    LOG.propagate = False
    t0 = time.perf_counter()
    LOG.info("%s: start (threads=%d, python %s)", name, threads, sys.version.split()[0])
    try:
        with threadpool_limits(limits=int(threads)):
            yield LOG
    except BaseException:
        LOG.error("%s: failed\n%s", name, traceback.format_exc())
        raise
    finally:
        LOG.info("%s: elapsed %.2f s", name, time.perf_counter() - t0)
        handler.close()


class Progress:
    """Progress lines for a job's log: ``"<what>: k/total done, elapsed t s"``.

    Wall-clock time appears only in logs, never in results.
    """

    def __init__(self, what: str, total: int, log: logging.Logger = LOG):
        self.what, self.total, self.done, self.log = what, int(total), 0, log
        self.t0 = time.perf_counter()

    def step(self, k: int = 1) -> None:
        self.done += k
        self.log.info(
            "%s: %d/%d done, elapsed %.1f s",
            self.what,
            self.done,
            self.total,
            time.perf_counter() - self.t0,
        )
