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

from conftest import SMOKE, copy_repo, hermetic_env, snakemake, tree_hashes

pytestmark = pytest.mark.workflow
BIN = Path(sys.executable).parent


def _kill_during_compute_job(work: Path, marker_glob: str, timeout: float = 300.0) -> None:
    """Start the smoke run and SIGKILL its whole process group as soon as a compute job has
    started (its log exists) but not finished (its output does not)."""
    env = hermetic_env(work)
    proc = subprocess.Popen(
        [str(BIN / "snakemake"), "--cores", "2", *SMOKE],
        cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
        start_new_session=True,
    )  # fmt: skip
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < timeout:
            logs = list(work.glob(marker_glob))
            if logs:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return
            if proc.poll() is not None:
                pytest.fail("the run finished before a compute job could be interrupted")
            time.sleep(0.01)
        pytest.fail("no compute job started in time")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_sigkill_mid_job_then_rerun_is_byte_identical(smoke_run, tmp_path):
    work = copy_repo(tmp_path / "repo")
    _kill_during_compute_job(work, "logs/paper_a/lambda/**/*.log")
    started = list(work.glob("logs/paper_a/lambda/**/*.log"))
    interrupted = [
        lg for lg in started
        if not (work / "results" / lg.relative_to(work / "logs").with_suffix(".csv")).exists()
    ]  # fmt: skip
    assert interrupted, "the kill came after the compute job had finished"
    # whatever exists under its final name is complete (outputs are renamed into place)
    for p in (work / "results").rglob("*"):
        if p.is_file() and not p.name.startswith("."):
            if p.suffix == ".csv":
                pd.read_csv(p)
            elif p.suffix == ".npz":
                with np.load(p) as z:
                    assert "X" in z.files
    snakemake(work, "--unlock", *SMOKE)
    snakemake(work, "--cores", "2", *SMOKE)
    leftovers = [p for p in (work / "results").rglob(".*partial*")]
    assert not leftovers, f"stray partial files: {leftovers}"
    assert tree_hashes(work / "results") == tree_hashes(smoke_run["dir"] / "results")
    assert tree_hashes(work / "figures") == tree_hashes(smoke_run["dir"] / "figures")


def test_cores_1_and_2_give_identical_bytes(smoke_run, tmp_path):
    work = copy_repo(tmp_path / "repo")
    snakemake(work, "--cores", "1", *SMOKE)
    assert tree_hashes(work / "results") == tree_hashes(smoke_run["dir"] / "results")
    assert tree_hashes(work / "figures") == tree_hashes(smoke_run["dir"] / "figures")


def test_provenance_command(smoke_run):
    env = hermetic_env(smoke_run["dir"])
    proc = subprocess.run(
        [sys.executable, "-m", "attnscale.provenance", "figures/paper_a/figure1_lambda.png",
         "--depth", "4"],
        cwd=smoke_run["dir"], capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    out = proc.stdout
    for needle in ("paper_a_figure1", "paper_a_lambda_summary", "paper_a_lambda", "paper_a_tokens",
                   "src/attnscale/attention.py"):  # fmt: skip
        assert needle in out, needle
    import yaml

    seed = yaml.safe_load((smoke_run["dir"] / "tests/smoke.yaml").read_text())["seed"]
    assert str(seed) in out
    bad = subprocess.run(
        [sys.executable, "-m", "attnscale.provenance", "figures/nope.png"],
        cwd=smoke_run["dir"], capture_output=True, text=True,
    )  # fmt: skip
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
        deterministic = p.name in {"scaling_rules.csv", "heat_drift_theory.csv"}  # no draws
        if not deterministic and "root_seed" not in cols:
            missing.add("root_seed")
        if missing:
            bad[str(rel)] = sorted(missing)
    assert not bad, bad
