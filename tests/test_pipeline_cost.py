"""Counted work of the default run (attnscale.bench.pipeline_cost, docs/pipeline.md#pipeline-efficiency):
the operation counts against a hand count for a small configuration, and the efficiency record
against its definition."""

from __future__ import annotations

import pytest

from attnscale.bench import pipeline_cost
from attnscale.pipeline.config import Config


def small_cfg(method="exact"):
    return Config(
        {
            "paper_a": {
                "n": 64,
                "d": [16, 2],
                "rho": [0.2, 0.5],
                "gamma": [1.0, 2.0, 4.0],
                "trials": 3,
                "alpha": 0.0,
                "eta": {"trials": 1, "method": method, "probes": 2, "probe_kind": "rademacher"},
                "theorem_table": {
                    "rho": [0.5],
                    "alpha": [0.0],
                    "gamma_factors": [1.0],
                    "trials": 2,
                },
                "finite_size": {"n": [32], "rho": [0.5], "alpha": [0.0], "trials": 2},
            }
        }
    )


def test_lambda_and_eta_counts_by_hand():
    work = {r["rule"]: r for r in pipeline_cost.counted_work(small_cfg())}
    n, pts = 64.0, 4  # 3 gammas + gamma_c(rho_hat)
    # lambda: per draw 2 n^2 d (Gram) + 4 n^2 d per point; 3 trials x 2 rho per d
    lam = sum(3 * 2 * (2 * n * n * d + pts * 4 * n * n * d) for d in (16, 2))
    assert work["paper_a_lambda"]["flops"] == pytest.approx(lam, rel=1e-15)
    assert work["paper_a_lambda"]["exps"] == 3 * 2 * 2 * pts * n * n
    # exact eta: 6 n^2 d + min(2 n^3, n^2 d (d + 1)) per point
    eta = sum(2 * pts * (6 * n * n * d + min(2 * n**3, n * n * d * (d + 1))) for d in (16, 2))
    assert work["paper_a_eta"]["flops"] == pytest.approx(eta, rel=1e-15)
    hut = {r["rule"]: r for r in pipeline_cost.counted_work(small_cfg("hutchinson"))}
    assert hut["paper_a_eta"]["flops"] == pytest.approx(
        sum(2 * pts * 2 * 4 * n * n * d for d in (16, 2)), rel=1e-15
    )


def test_efficiency_record():
    work = [{"rule": "paper_a_lambda", "flops": 2e12, "exps": 4e9}]
    secs = {"paper_a_lambda": (10, 50.0), "paper_a_tokens": (4, 2.0)}
    eff = pipeline_cost.efficiency(
        work, secs, gemm_gflops=100.0, exp_gexps=0.5, cores=2, wall_s=40.0
    )
    assert eff["roofline_gemm_s"] == pytest.approx(20.0)
    assert eff["roofline_gemm_exp_s"] == pytest.approx(20.0 + 4.0)
    assert eff["counted_rules_s_per_core"] == pytest.approx(25.0)
    assert eff["all_rules_s_per_core"] == pytest.approx(26.0)
    assert eff["ratio_wall_to_roofline_gemm"] == pytest.approx(2.0)


def test_job_seconds_reads_snakemake_benchmark_files(tmp_path):
    head = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    for rel, s in (
        ("paper_a/lambda/n64/d2/rho0.2000.tsv", 1.5),
        ("paper_a/lambda/n64/d2/rho0.5000.tsv", 2.5),
        ("paper_b/phase/n10.tsv", 0.25),
    ):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(head + f"{s}\t0:00:01\t1\t1\t1\t1\t0\t0\t0\t0\n")
    got = pipeline_cost.job_seconds(tmp_path)
    assert got["paper_a_lambda"] == (2, 4.0)
    assert got["paper_b/phase"] == (1, 0.25)
