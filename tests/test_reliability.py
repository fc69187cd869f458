"""Interruption, determinism across core counts, provenance command and the HTML report."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnscale.pipeline.io import WRITE_PAUSE_ENV
from conftest import SMOKE, finished_copy, hermetic_env, jobs_to_run, snakemake, tree_hashes

pytestmark = pytest.mark.workflow
BIN = Path(sys.executable).parent


#: The interrupted write: ``figure1_data.csv`` of rule ``paper_a_lambda_summary`` (its
#: dependants are the Figure 1, theory-check and scaling-rules plots).
PAUSED_FILE = "figure1_data.csv"
PAUSED_RULE = "paper_a_lambda_summary"


def test_sigkill_during_a_write_then_rerun_is_byte_identical(smoke_run, tmp_path):
    """Kill Snakemake and its job (SIGKILL to the process group) while the atomic writer is
    paused between a complete temporary file and the rename (the hook in
    ``attnscale.pipeline.io.atomic_path``), on a copy of the finished tree with one rule forced to rerun.
    At that moment the final name must not exist (a writer that wrote in place would fail here);
    after the kill every file under a final name is complete, the repeated command (for the
    interrupted file: its dependants' reruns are Snakemake's, and their determinism is
    test_forced_rerun_with_one_core_gives_identical_bytes's) reruns the job, and results and
    figures are byte-identical to the uninterrupted run. Exact equality holds on any CPU: both
    runs are made on this machine in this session, with the same libraries and kernels
    (docs/pipeline.md#golden-tables-across-cpus)."""
    work = finished_copy(smoke_run, tmp_path / "repo")
    target = work / "results/paper_a" / PAUSED_FILE
    marker = tmp_path / "paused"
    env = hermetic_env(work)
    env.update(
        {
            WRITE_PAUSE_ENV: PAUSED_FILE,
            f"{WRITE_PAUSE_ENV}_MARKER": str(marker),
            f"{WRITE_PAUSE_ENV}_SECONDS": "300",
        }
    )
    command = ["--forcerun", PAUSED_RULE, "--cores", "1", str(target.relative_to(work)), *SMOKE]
    proc = subprocess.Popen(
        [str(BIN / "snakemake"), *command],
        cwd=work,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        t0 = time.monotonic()
        while not marker.exists():
            if proc.poll() is not None:
                pytest.fail("the run ended without pausing in the atomic writer")
            if time.monotonic() - t0 > 300:
                pytest.fail("the write of figure1_data.csv never started")
            time.sleep(0.02)
        time.sleep(0.05)  # the marker is written just before the pause
        partial = work / marker.read_text().split()[1]  # absolute: "/" ignores work
        assert partial.is_file() and partial.name.startswith(f".{PAUSED_FILE}.partial")
        assert not target.exists(), "the final name exists before the rename: not atomic"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not target.exists()
    # whatever exists under its final name is complete
    for p in (work / "results").rglob("*"):
        if p.is_file() and not p.name.startswith("."):
            if p.suffix == ".csv":
                pd.read_csv(p)
            elif p.suffix == ".npz":
                with np.load(p) as z:
                    assert z.files
    snakemake(work, "--unlock", *SMOKE)
    # rerun the interrupted command (a plain `snakemake` would not: the figures built from the
    # missing table still exist and Snakemake does not rebuild a missing intermediate file)
    # (the rerun prints the job table a dry run would: no separate dry run, one parse less)
    rerun = snakemake(work, *command)
    todo = jobs_to_run(rerun.stdout + rerun.stderr)
    assert todo.get(PAUSED_RULE) == 1, todo
    leftovers = [p for p in (work / "results").rglob(".*partial*")]
    assert not leftovers, f"stray partial files: {leftovers}"
    assert tree_hashes(work / "results") == tree_hashes(smoke_run["dir"] / "results")
    assert tree_hashes(work / "figures") == tree_hashes(smoke_run["dir"] / "figures")


def test_forced_rerun_with_one_core_gives_identical_bytes(smoke_run, forced_rerun):
    """One run covers three claims: a forced rerun (conftest.FORCED and everything downstream)
    over existing outputs, --cores 1 against the fixture's --cores 2, and jobs each in its own
    process against the smoke run's warm jobs (docs/pipeline.md#warm-jobs) all reproduce every
    byte under results/ and figures/. The run starts in the background as soon as the smoke run
    has finished (conftest.forced_rerun).

    Exact equality, not a tolerance, holds on any CPU: both runs are made on this machine in this
    session, so OpenBLAS and numpy pick the same kernels. The core count cannot change bits
    either: every rule of the smoke DAG runs with ``threads: 1`` and ``attnscale.pipeline.runtime.job``
    limits BLAS to the rule's threads inside each job, so ``--cores`` changes only the order in
    which jobs run (and each job seeds itself from its own spawn key). Across machines the bytes
    differ; that is what test_golden_tables' tolerances are for
    (docs/pipeline.md#golden-tables-across-cpus)."""
    work = forced_rerun["dir"]
    assert "paper_a_eta_figure" in forced_rerun["output"]  # downstream figures were rebuilt
    assert "warm jobs off (ATTNSCALE_WARM_JOBS=0)" in forced_rerun["output"]
    smoke_log = smoke_run["proc"].stdout + smoke_run["proc"].stderr
    if "Nothing to be done" not in smoke_log:  # not a reused tree (ATTNSCALE_SMOKE_TREE)
        assert "warm jobs on" in smoke_log
    assert tree_hashes(work / "results") == tree_hashes(smoke_run["dir"] / "results")
    assert tree_hashes(work / "figures") == tree_hashes(smoke_run["dir"] / "figures")


def test_provenance_command(smoke_run):
    env = hermetic_env(smoke_run["dir"])
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "attnscale.pipeline.lineage",
            "figures/paper_a/figure1_lambda.png",
            "--depth",
            "4",
        ],
        cwd=smoke_run["dir"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    out = proc.stdout
    for needle in (
        "paper_a_lambda_figure",
        "paper_a_lambda_summary",
        "paper_a_lambda",
        "paper_a_tokens",
        "src/attnscale/layer/dense/attention.py",
    ):
        assert needle in out, needle
    import yaml

    seed = yaml.safe_load((smoke_run["dir"] / "tests/smoke.yaml").read_text())["seed"]
    assert str(seed) in out
    bad = subprocess.run(
        [sys.executable, "-m", "attnscale.pipeline.lineage", "figures/nope.png"],
        cwd=smoke_run["dir"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1 and "no Snakemake record" in bad.stderr


def test_html_report_builds(smoke_run):
    work = smoke_run["dir"]
    snakemake(work, *SMOKE, "--report", "report.html")
    html = (work / "report.html").read_text(errors="replace")
    assert "Paper A" in html
    assert len(html) > 10_000


def test_every_results_table_records_its_provenance(smoke_run):
    """Every CSV under results/ (benchmark timings aside) carries a parameter hash, the package
    version and the git commit; tables made from random draws also carry the root seed."""
    bad = {}
    for p in sorted((smoke_run["dir"] / "results").rglob("*.csv")):
        rel = p.relative_to(smoke_run["dir"] / "results")
        if rel.parts[0] == "benchmarks":
            continue
        cols = set(pd.read_csv(p, nrows=1).columns)
        missing = {"attnscale_version", "git_commit"} - cols
        if not cols & {"params_hash", "params_hashes"}:
            missing.add("params_hash")
        # tables with no random draws behind them
        deterministic = str(rel) in {
            "paper_a/scaling_rules.csv",
            "paper_b/heat_drift_theory.csv",
            "finite_d/transition_theory.csv",
            "regimes/theory.csv",  # quadrature and closed forms (docs/regimes.md)
            "regimes/read_off_theory.csv",
            "regimes/rem_orders.csv",  # quadrature (docs/regimes.md)
        }
        deterministic |= rel.parts[:2] == ("explorer", "theory")  # the theory at its nodes
        if not deterministic and "root_seed" not in cols:
            missing.add("root_seed")
        if missing:
            bad[str(rel)] = sorted(missing)
    assert not bad, bad
