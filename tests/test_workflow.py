"""The workflow end to end (docs/pipeline.md#what-the-tests-check).

The smoke configuration runs once per session in a temporary copy of the repository
(``smoke_run`` in conftest.py); these tests inspect that run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO, SMOKE, copy_repo, hermetic_env, jobs_to_run, snakemake
from golden_compare import (
    ACCEPT,
    FLAG,
    GOLDEN_COLUMNS,
    compare_table,
    golden_files,
    may_differ,
    numeric_columns,
    tolerance,
)
from warm_snakemake import snakemake as warm_snakemake

pytestmark = pytest.mark.workflow
BIN = Path(sys.executable).parent


def test_snakefmt_check():
    proc = subprocess.run(
        [str(BIN / "snakefmt"), "--check", "Snakefile", "workflow/rules"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_clean():
    for args in (["check"], ["format", "--check"]):
        proc = subprocess.run(
            [str(BIN / "ruff"), *args, "--no-cache", "src", "workflow", "tests", "tools"],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def fresh_copy(tmp_path_factory):
    """One fresh copy of the repository for the module's runs that write no output (a lint, a
    dry run)."""
    return copy_repo(tmp_path_factory.mktemp("workflow") / "repo")


def test_snakemake_lint(fresh_copy):
    """``snakemake --lint`` (from the warm Snakemake process: tests/warm_snakemake.py)."""
    proc = warm_snakemake(fresh_copy, "--lint", env=hermetic_env(fresh_copy), check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Congratulations" in proc.stdout + proc.stderr


def test_dry_run_default_config(fresh_copy):
    """The whole paper-scale DAG builds (config.yaml)."""
    proc = warm_snakemake(fresh_copy, "-n", "--quiet", "rules", env=hermetic_env(fresh_copy))
    assert "paper_a_lambda" in proc.stdout + proc.stderr


def _declared_outputs(summary: str) -> list[str]:
    """The output files of Snakemake's (detailed) summary of a DAG."""
    lines = summary.strip().splitlines()
    assert lines[0].startswith("output_file")
    return [ln.split("\t")[0] for ln in lines[1:]]


def test_smoke_produces_every_declared_output(smoke_run, smoke_summary):
    work = smoke_run["dir"]
    outputs = _declared_outputs(smoke_summary)  # conftest.smoke_summary, shared with test_deps
    assert len(outputs) > 10
    missing = [o for o in outputs if not (work / o).is_file() or (work / o).stat().st_size == 0]
    assert not missing, f"missing or empty outputs: {missing}"
    for fig in ("figures/paper_a/figure1_lambda.png", "figures/paper_a/lambda_critical_check.png"):
        assert fig in outputs


def test_second_dry_run_has_nothing_to_do(smoke_run):
    proc = snakemake(smoke_run["dir"], *SMOKE, "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr


@pytest.mark.parametrize("rel", golden_files())
def test_golden_tables(smoke_run, rel):
    """Figure data of the smoke run equal the committed tables within tolerances that follow from
    each column's conditioning (tests/golden_compare.py, docs/pipeline.md#golden-tables-across-cpus).

    Same seeds, same code: on another CPU only rounding differs (OpenBLAS and numpy pick their
    SIMD kernels by CPU, and the order of their sums with them). Primary columns (simulated and
    theory values, their means; configuration values) must agree to rtol = 1e-9 (atol = 1e-12
    near zero). A derived column gets the largest change that a relative error of 1e-9 in every
    draw can cause, bounded from the golden row: an SE of k draws moves by at most
    1e-9 rms(x) / sqrt(k - 1); paired differences a_i - b_i by at most
    A = 1e-9 (2 rms(a) + rms(a - b)) in the mean and A / sqrt(k - 1) in the SE, so z = mean / SE
    by (A + |z| B) / (SE - B); a difference t_1 - t_2 by 1e-9 (|t_1| + |t_2|); a one-sample KS
    distance by 1e-9 (d - 1) / 2 and its p-value by the change of kstwo.sf over that range.
    A boolean that thresholds a statistic (|z| <= 2, accept_fd) must be equal unless the golden
    statistic lies within its tolerance of the threshold. Integers and text must be equal.
    Regenerate on purpose with ``python tests/regenerate_golden.py``."""
    got = pd.read_csv(smoke_run["dir"] / rel)
    ref = pd.read_csv(REPO / "tests/golden" / rel)
    failed = [r for r in compare_table(got, ref, rel) if not r.ok]
    assert not failed, "\n".join(map(str, failed))


@pytest.mark.parametrize("rel", golden_files())
def test_every_golden_column_is_classified(rel):
    """Every numeric column of every golden table has a kind in golden_compare.GOLDEN_COLUMNS
    (a new column cannot fall through to a default tolerance), and the table lists no column the
    file does not have."""
    ref = pd.read_csv(REPO / "tests/golden" / rel)
    classified = set(GOLDEN_COLUMNS.get(rel, {}))
    assert set(numeric_columns(ref)) - classified == set(), "unclassified numeric columns"
    assert classified - set(ref.columns) == set(), "classified columns the file does not have"
    for name in numeric_columns(ref):  # every tolerance can be computed from the golden rows
        if GOLDEN_COLUMNS[rel][name].kind in (FLAG, ACCEPT):
            assert may_differ(ref, GOLDEN_COLUMNS[rel], name).dtype == bool
        elif not pd.api.types.is_bool_dtype(ref[name]):
            tol = tolerance(ref, GOLDEN_COLUMNS[rel], name)
            assert (tol[ref[name].notna().to_numpy()] >= 0).all(), name  # not NaN either


# (config fragment over tests/smoke.yaml, the jobs a dry run must schedule and nothing else)
# (the findings read the tables of every family, so they rerun too: docs/pipeline.md#numbers-in-the-prose)
PARAM_CHANGES = [
    (
        {"paper_a": {"scaling_rules": {"overlay_n": 16384}}},
        {"paper_a_scaling_rules_data": 1, "paper_a_scaling_rules_figure": 1, "findings": 1},
    ),
    (
        {"paper_b": {"profile": {"trials": 41}}},
        {"paper_b_profile": 2, "paper_b_profile_figure": 1, "findings": 1},
    ),
]


@pytest.mark.parametrize("frag, expected", PARAM_CHANGES, ids=["overlay_n", "profile-trials"])
def test_parameter_change_reruns_only_the_affected_jobs(smoke_run, tmp_path, frag, expected):
    """A dry run on the finished smoke tree with one parameter changed schedules exactly the jobs
    that use it and their dependants (params are a rerun trigger; ``all`` is not a job)."""
    import yaml

    smoke = yaml.safe_load((REPO / "tests/smoke.yaml").read_text())

    def update(dst, src):
        for k, v in src.items():
            if isinstance(v, dict):
                update(dst.setdefault(k, {}), v)
            else:
                dst[k] = v

    update(smoke, frag)
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(smoke))
    proc = snakemake(smoke_run["dir"], "-n", "--configfile", str(changed))
    todo = {k: v for k, v in jobs_to_run(proc.stdout).items() if k != "all"}
    assert todo == expected, proc.stdout[-3000:]
    assert "Params have changed" in proc.stdout


def test_build_one_figure_by_rule_name(smoke_run, tmp_path):
    """``snakemake <rule>`` in a fresh copy builds that figure and only what it needs; the bytes
    equal the full run's (exact equality: both runs are made on this machine in this session,
    with the same kernels and one BLAS thread per job). The transformer family's text is
    missing here: a target of another family builds without it
    (docs/pipeline.md#optional-pieces)."""
    work = copy_repo(tmp_path / "repo")
    no_text = tmp_path / "no_text.yaml"
    no_text.write_text("transformer:\n  text: no/such/corpus.txt\n  text_sha256: null\n")
    snakemake(
        work, "paper_b_profile_figure", "--cores", "2", *SMOKE, str(no_text)
    )  # target first: --configfile takes several values
    made = {
        str(p.relative_to(work))
        for d in ("results", "figures")
        for p in (work / d).rglob("*")
        if p.is_file()
    }
    assert made == {
        "results/paper_b/profile_d5.csv",
        "results/paper_b/profile_d3.csv",
        "figures/paper_b/weight_profile.png",
        "figures/paper_b/weight_profile.pdf",
    }
    for rel in made:
        assert (work / rel).read_bytes() == (smoke_run["dir"] / rel).read_bytes(), rel


def test_benchmark_suite_smoke(smoke_run):
    """The benchmark suite runs (tiny sizes from tests/smoke.yaml); timings are not checked."""
    work = smoke_run["dir"]
    snakemake(work, "benchmark_suite", "--cores", "2", *SMOKE)
    df = pd.read_csv(work / "results/benchmarks/suite.csv")
    kinds = set(df["benchmark"])
    assert {"gemm", "exp", "lambda_grid", "scaling_lambda"} <= kinds
    lam = df[df["benchmark"] == "lambda_grid"].iloc[0]
    # the fast path computes the same numbers: both paths run in one process on this CPU, and
    # lambda is O(1), so reordered sums leave ~1e-13 on any CPU (1e-10 leaves a margin of 1e3)
    assert lam["max_abs_diff_vs_baseline"] < 1e-10
    assert (work / "results/benchmarks/suite.md").read_text().startswith("| benchmark")


def test_every_table_writes_spawn_key_in_one_format(smoke_run):
    """Every table's provenance comes from :func:`attnscale.pipeline.io.provenance_columns`, so
    ``spawn_key`` (and the summaries' ``spawn_keys``, the draws' keys joined with ``;``) has one
    format everywhere (``SPAWN_KEY_PATTERN``); no table has another name for it."""
    import re

    from attnscale.pipeline.io import SPAWN_KEY_PATTERN

    tables = sorted((smoke_run["dir"] / "results").rglob("*.csv"))
    seen, bad = 0, []
    for path in tables:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        for col in ("spawn_key", "spawn_keys"):
            if col not in df.columns:
                continue
            seen += 1
            for v in set(df[col]) - {""}:
                if not re.match(SPAWN_KEY_PATTERN, v):
                    bad.append(f"{path.relative_to(smoke_run['dir'])}: {col} = {v!r}")
    assert seen > 15, seen
    assert not bad, bad[:10]
