"""attnscale.pipeline.scheduler_fix: at most one pending scheduler wake-up (docs/pipeline.md#the-scheduler-fix)."""

import os
import re
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest
from snakemake.scheduling import job_scheduler

from attnscale.pipeline import scheduler_fix

REPO = Path(__file__).resolve().parents[1]
ORIGINAL = job_scheduler.JobScheduler.__dict__["_schedule_reevalutation"]


class FakeScheduler:
    """The two attributes the wake-up method touches."""

    def __init__(self):
        self._open_jobs = threading.Semaphore(0)


def releases(sched, wait):
    """How many times the scheduler's semaphore was released within ``wait`` seconds."""
    time.sleep(wait)
    count = 0
    while sched._open_jobs.acquire(blocking=False):
        count += 1
    return count


@pytest.mark.parametrize("method, expected", [(ORIGINAL, 10), (scheduler_fix._schedule_once, 1)])
def test_ten_rounds_start_ten_chains_unpatched_and_one_patched(method, expected):
    # ten scheduling rounds within one timespan, as when ten jobs finish in the same second:
    # Snakemake's own method starts ten timers (ten wake-ups, each starting another timer),
    # the replacement one
    sched = FakeScheduler()
    for _ in range(10):
        method(sched, 0.05)
    assert releases(sched, 0.3) == expected


def test_a_new_timer_once_the_pending_one_is_due():
    sched = FakeScheduler()
    scheduler_fix._schedule_once(sched, 0.05)
    assert releases(sched, 0.2) == 1
    scheduler_fix._schedule_once(sched, 0.05)  # the chain continues while jobs are waiting
    scheduler_fix._schedule_once(sched, 0.05)
    assert releases(sched, 0.2) == 1


def test_install_patches_the_pinned_snakemake_only(monkeypatch):
    monkeypatch.setattr(job_scheduler.JobScheduler, "_schedule_reevalutation", ORIGINAL)
    assert scheduler_fix.install() is True
    assert job_scheduler.JobScheduler._schedule_reevalutation is scheduler_fix._schedule_once
    monkeypatch.setattr(job_scheduler.JobScheduler, "_schedule_reevalutation", ORIGINAL)
    monkeypatch.setattr("snakemake.__version__", "9.99.0")
    assert scheduler_fix.install() is False
    assert job_scheduler.JobScheduler.__dict__["_schedule_reevalutation"] is ORIGINAL


def test_a_fix_that_does_not_apply_says_so(monkeypatch):
    import io

    monkeypatch.setattr("snakemake.__version__", "9.99.0")
    out = io.StringIO()
    assert scheduler_fix.install_or_say_why(out) is False
    assert "NOT installed" in out.getvalue() and "9.99.0" in out.getvalue()
    monkeypatch.undo()
    monkeypatch.setattr(job_scheduler.JobScheduler, "_schedule_reevalutation", ORIGINAL)
    out = io.StringIO()
    assert scheduler_fix.install_or_say_why(out) is True
    assert out.getvalue() == ""


def test_the_workflow_installs_the_fix():
    text = (REPO / "workflow/rules/common.smk").read_text()
    assert "_install_scheduler_fix()" in text


def test_smoke_run_rounds_grow_with_jobs_plus_seconds_not_their_product(smoke_run):
    # the session's smoke run (80 jobs on 2 cores, --verbose) installs the fix through
    # common.smk: the loop may run once per finished job and once per second of the one timer
    # chain (+ a few rounds at start and end). Unpatched, it ran ~3150 times for 80 jobs in 96 s.
    log = smoke_run["proc"].stdout + smoke_run["proc"].stderr
    rounds = log.count("Resources before job selection")
    finished = log.count("Finished jobid:")
    stamps = [
        datetime.strptime(t, "%a %b %d %H:%M:%S %Y")
        for t in re.findall(r"^\[(\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})\]$", log, re.M)
    ]
    if not os.environ.get("ATTNSCALE_SMOKE_TREE"):  # a fresh smoke run (always so in CI)
        assert finished >= 1 and rounds >= 1, (finished, rounds)
    span = (max(stamps) - min(stamps)).total_seconds() + 2 if stamps else 0.0  # 1-s resolution
    assert rounds <= finished + span + 3, (rounds, finished, span)
