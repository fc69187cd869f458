"""attnscale.scheduler_fix: at most one pending scheduler wake-up (docs/pipeline.md#the-scheduler-fix)."""

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from snakemake.scheduling import job_scheduler

from attnscale import scheduler_fix

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


def test_the_workflow_installs_the_fix():
    text = (REPO / "workflow/rules/common.smk").read_text()
    assert "_install_scheduler_fix()" in text


def test_scheduling_rounds_grow_with_jobs_plus_seconds_not_their_product(tmp_path):
    # 12 jobs of 0.6 s on 2 cores (~4 s): with the fix the loop runs at most once per finished
    # job, once per second of the one timer chain, and a few times at start and end
    jobs = 12
    (tmp_path / "Snakefile").write_text(
        f"import sys\nsys.path.insert(0, {str(REPO / 'src')!r})\n"
        "from attnscale.scheduler_fix import install\ninstall()\n"
        f"rule all:\n    input: expand('o{{i}}.txt', i=range({jobs}))\n"
        "rule a:\n    output: 'o{i}.txt'\n    shell: 'sleep 0.6; touch {output}'\n"
    )
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--verbose", "--scheduler", "greedy"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall = time.monotonic() - t0
    rounds = (out.stdout + out.stderr).count("Resources before job selection")
    assert rounds <= jobs + wall + 3, (rounds, wall)
