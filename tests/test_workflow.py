"""The workflow end to end (spec pipeline.md, "Checks a pipeline like this runs in CI").

The smoke configuration runs once per session in a temporary copy of the repository
(``smoke_run`` in conftest.py); these tests inspect that run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import REPO, SMOKE, copy_repo, snakemake, tree_hashes

pytestmark = pytest.mark.workflow
BIN = Path(sys.executable).parent


def test_snakefmt_check():
    proc = subprocess.run(
        [str(BIN / "snakefmt"), "--check", "Snakefile", "workflow/rules"],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_clean():
    for args in (["check"], ["format", "--check"]):
        proc = subprocess.run(
            [str(BIN / "ruff"), *args, "src", "workflow", "tests"],
            cwd=REPO, capture_output=True, text=True,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_snakemake_lint(tmp_path):
    work = copy_repo(tmp_path / "repo")
    proc = snakemake(work, "--lint", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Congratulations" in proc.stdout + proc.stderr


def test_dry_run_default_config(tmp_path):
    """The whole paper-scale DAG builds (config.yaml)."""
    work = copy_repo(tmp_path / "repo")
    proc = snakemake(work, "-n", "--quiet", "rules")
    assert "paper_a_lambda" in proc.stdout + proc.stderr


def _declared_outputs(work: Path) -> list[str]:
    proc = snakemake(work, *SMOKE, "--summary")
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith("output_file")
    return [ln.split("\t")[0] for ln in lines[1:]]


def test_smoke_produces_every_declared_output(smoke_run):
    work = smoke_run["dir"]
    outputs = _declared_outputs(work)
    assert len(outputs) > 10
    missing = [o for o in outputs if not (work / o).is_file() or (work / o).stat().st_size == 0]
    assert not missing, f"missing or empty outputs: {missing}"
    for fig in ("figures/paper_a/figure1_lambda.png", "figures/paper_a/lambda_critical_check.png"):
        assert fig in outputs


def test_second_dry_run_has_nothing_to_do(smoke_run):
    proc = snakemake(smoke_run["dir"], *SMOKE, "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def _golden_files():
    lines = (REPO / "tests/golden/files.txt").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


@pytest.mark.parametrize("rel", _golden_files())
def test_golden_tables(smoke_run, rel):
    """Figure data of the smoke run equals the committed tables.

    Same seeds, same code: the only admissible differences are floating-point reduction order
    across BLAS builds and CPUs, a few ulps amplified by at most ~1e3 in the softmax and the
    ratio, hence rtol = 1e-9 (atol = 1e-12 for values near zero). Text columns must be equal.
    Regenerate on purpose with ``python tests/regenerate_golden.py``."""
    got = pd.read_csv(smoke_run["dir"] / rel)
    ref = pd.read_csv(REPO / "tests/golden" / rel)
    assert list(got.columns) == list(ref.columns)
    assert len(got) == len(ref)
    for col in ref.columns:
        if pd.api.types.is_numeric_dtype(ref[col]):
            np.testing.assert_allclose(
                got[col].to_numpy(float), ref[col].to_numpy(float), rtol=1e-9, atol=1e-12,
                equal_nan=True, err_msg=f"{rel}: column {col}",
            )  # fmt: skip
        else:
            assert got[col].astype(str).tolist() == ref[col].astype(str).tolist(), col


def test_forceall_rerun_is_byte_identical(smoke_run):
    work = smoke_run["dir"]
    before = tree_hashes(work / "results")
    figs_before = tree_hashes(work / "figures")
    snakemake(work, "--cores", "2", *SMOKE, "--forceall")
    assert tree_hashes(work / "results") == before
    assert tree_hashes(work / "figures") == figs_before


def test_benchmark_suite_smoke(smoke_run):
    """The benchmark suite runs (tiny sizes from tests/smoke.yaml); timings are not checked."""
    work = smoke_run["dir"]
    snakemake(work, "benchmark_suite", "--cores", "2", *SMOKE)
    df = pd.read_csv(work / "results/benchmarks/suite.csv")
    kinds = set(df["benchmark"])
    assert {"gemm", "exp", "lambda_grid", "scaling_lambda"} <= kinds
    lam = df[df["benchmark"] == "lambda_grid"].iloc[0]
    assert lam["max_abs_diff_vs_baseline"] < 1e-10  # the fast path computes the same numbers
    assert (work / "results/benchmarks/suite.md").read_text().startswith("| benchmark")
