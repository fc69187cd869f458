"""Benchmark suite: the workload's kernels against the machine's own limits, side by side.

    python -m attnscale.bench.kernels --out results/benchmarks      # the documented command
    python -m attnscale.bench.kernels --backend jax [--tiny]        # the JAX suite (docs/gpu.md)
    snakemake --cores all benchmark_suite                       # the same through the workflow

Everything runs in one process (the memory scaling runs one subprocess per n, to read its peak
resident memory) under the current BLAS thread limit, and reports ratios, not just seconds:

* ``gemm``: throughput of ``(n x n) @ (n x d)`` and ``(n x d) @ (d x n)`` — the shapes of the
  workload — and of ``exp``; the best of these GEMMs is the reference "peak".
* ``lambda_grid``: :func:`attnscale.layer.dense.attention.angle_ratio_grid` counted at ``4 n^2 d`` flops per
  gamma, its fraction of the GEMM peak, and its speed-up over :func:`naive_angle_ratio_grid`.
* ``eta_hutchinson``: counted at ``6 n^2 d`` flops per probe, fraction of peak, speed-up over an
  unbatched per-probe loop.
* ``paper_b``: keys per second for the A_(1) phase diagram and the vector fields.
* ``scaling``: time and peak memory of lambda (one gamma) and eta (one probe) against n.

Timings are the one non-deterministic output of the workflow: they are written to
``results/benchmarks/`` and excluded from the byte-identity checks.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from attnscale.bench.timing import best_time, machine_info
from attnscale.core.seeding import job_rng, spawn_key
from attnscale.layer import tokens
from attnscale.layer.dense import attention
from attnscale.pipeline.io import with_job_provenance

__all__ = [
    "machine_info",
    "gemm_peak",
    "bench_lambda",
    "bench_eta",
    "bench_paper_b",
    "bench_scaling",
    "run_suite",
    "suite",
    "markdown_table",
    "main",
]

ROOT_SEED = 0  # benchmark inputs are not results; any fixed seed will do


def _tokens(n: int, d: int, rho: float = 0.5) -> np.ndarray:
    return tokens.near_simplex(n, d, rho, job_rng(ROOT_SEED, spawn_key("benchmark", n, d)))


def gemm_peak(n: int, d: int, repeat: int = 3) -> list[dict]:
    """GEMM throughput on the workload's shapes and exp throughput on an ``n x n`` block."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n))
    B = rng.standard_normal((n, d))
    C = rng.standard_normal((d, n))
    out_nd = np.empty((n, d))
    out_nn = np.empty((n, n))
    records = []
    t = best_time(lambda: np.matmul(A, B, out=out_nd), repeat)
    records.append(
        {
            "benchmark": "gemm",
            "variant": "(n x n) @ (n x d)",
            "seconds": t,
            "gflops": 2 * n * n * d / t / 1e9,
        }
    )
    t = best_time(lambda: np.matmul(B, C, out=out_nn), repeat)
    records.append(
        {
            "benchmark": "gemm",
            "variant": "(n x d) @ (d x n)",
            "seconds": t,
            "gflops": 2 * n * n * d / t / 1e9,
        }
    )
    M = -np.abs(rng.standard_normal((n, n)))
    t = best_time(lambda: np.exp(M, out=out_nn), repeat)
    records.append(
        {
            "benchmark": "exp",
            "variant": "exp in place, n x n",
            "seconds": t,
            "gexp_per_s": n * n / t / 1e9,
        }
    )
    for r in records:
        r.update(n=n, d=d)
    return records


def naive_angle_ratio_grid(X: np.ndarray, betas) -> np.ndarray:
    """lambda recomputed from scratch for every beta (the baseline the grid version must beat):
    normalise, Gram, softmax, ``A Y``, output Gram, pair mean — ``6 n^2 d`` flops per beta and
    several fresh ``n x n`` temporaries."""
    out = []
    n = X.shape[0]
    iu = np.triu_indices(n, k=1)
    for beta in betas:
        Y = X / np.linalg.norm(X, axis=1, keepdims=True)
        G = Y @ Y.T
        A = attention.softmax_rows(beta * G)
        Xp = A @ Y
        Yp = Xp / np.linalg.norm(Xp, axis=1, keepdims=True)
        Gp = Yp @ Yp.T
        out.append(np.mean((1.0 - Gp[iu]) / (1.0 - G[iu])))
    return np.array(out)


def bench_lambda(n: int, d: int, gammas: int, peak: float, repeat: int = 3) -> dict:
    """Grid lambda vs the naive per-gamma recompute; both on the same tokens and gammas."""
    X = _tokens(n, d)
    betas = np.geomspace(0.25, 12.0, gammas) * np.log(n)
    fast = best_time(lambda: attention.angle_ratio_grid(X, betas), repeat)
    naive = best_time(lambda: naive_angle_ratio_grid(X, betas), 1)
    err = float(
        np.max(np.abs(attention.angle_ratio_grid(X, betas) - naive_angle_ratio_grid(X, betas)))
    )
    gflops = 4 * n * n * d * gammas / fast / 1e9
    return {
        "benchmark": "lambda_grid",
        "variant": f"{gammas} gammas",
        "n": n,
        "d": d,
        "seconds": fast,
        "gflops": gflops,
        "fraction_of_gemm_peak": gflops / peak,
        "baseline_seconds": naive,
        "speedup_vs_baseline": naive / fast,
        "max_abs_diff_vs_baseline": err,
    }


def bench_eta(n: int, d: int, probes: int, peak: float, repeat: int = 3) -> dict:
    """:func:`attnscale.layer.dense.jacobian.eta_hutchinson` (all probes batched) against an unbatched loop
    that calls :func:`attnscale.layer.dense.jacobian.jvp` once per probe on the same probes."""
    from attnscale.layer.dense import jacobian

    X = _tokens(n, d)
    beta = 2.0 * np.log(n)

    def batched():
        return jacobian.eta_hutchinson(X, beta, probes=probes, rng=np.random.default_rng(1))[0]

    def looped():
        V = jacobian.draw_probes(np.random.default_rng(1), probes, n, d, "rademacher")
        return sum(np.sum(jacobian.jvp(X, V[k], beta) ** 2) for k in range(probes)) / (
            n * d * probes
        )

    fast = best_time(batched, repeat)
    slow = best_time(looped, 1)
    gflops = 6 * n * n * d * probes / fast / 1e9
    return {
        "benchmark": "eta_hutchinson",
        "variant": f"{probes} probes",
        "n": n,
        "d": d,
        "seconds": fast,
        "gflops": gflops,
        "fraction_of_gemm_peak": gflops / peak,
        "baseline_seconds": slow,
        "speedup_vs_baseline": slow / fast,
        "max_abs_diff_vs_baseline": float(abs(batched() - looped()) / looped()),
    }


def bench_paper_b(repeat: int = 3) -> list[dict]:
    """Paper B throughput in keys per second, at the default figures' sizes.

    * phase diagram: one column of the A_(1) heat map (d = 5, n = 1e4 keys, 100 contexts, 36
      betas): drawing the keys on S^4 and evaluating A_(1) at every beta; reported as keys
      drawn per second and key-beta evaluations per second.
    * vector fields: attention output of 500 queries against one context of 1e4 keys on S^2
      (d = 3); reported as query-key pairs per second.
    """
    from attnscale.sphere import keys

    rng = np.random.default_rng(0)
    n, d, trials, nb = 10_000, 5, 100, 36
    betas = np.geomspace(0.1, 1e3, nb)

    def phase():
        T = keys.sample_d2q_uniform(trials, n, d, np.random.default_rng(1))
        return keys.top_weight_from_d2q(T, betas)

    t_phase = best_time(phase, repeat)
    Q = keys.fibonacci_sphere(500)
    K = keys.sample_uniform_sphere(10_000, 3, rng)
    t_vf = best_time(lambda: keys.attention_output(Q, K, 100.0), repeat)
    return [
        {
            "benchmark": "paper_b_phase",
            "variant": f"d=5, {trials} contexts, {nb} betas",
            "n": n,
            "d": d,
            "seconds": t_phase,
            "keys_per_s": trials * n / t_phase,
            "key_betas_per_s": trials * n * nb / t_phase,
        },
        {
            "benchmark": "paper_b_vector_field",
            "variant": "500 queries, one context",
            "n": 10_000,
            "d": 3,
            "seconds": t_vf,
            "keys_per_s": 500 * 10_000 / t_vf,
        },
    ]


def scaling_one(n: int, d: int, what: str) -> dict:
    """One point of the memory/time scaling (run in a fresh subprocess)."""
    X = _tokens(n, d)
    beta = 2.0 * np.log(n)
    t0 = time.perf_counter()
    if what == "lambda":
        val = float(attention.angle_ratio_grid(X, [beta])[0])
        flops = 4 * n * n * d
    elif what == "eta":
        from attnscale.layer.dense import jacobian

        est, _ = jacobian.eta_hutchinson(X, beta, probes=1, rng=np.random.default_rng(1))
        val = float(est)
        flops = 6 * n * n * d
    else:
        raise ValueError(f"what must be 'lambda' or 'eta', got {what!r}")
    t = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return {
        "benchmark": f"scaling_{what}",
        "variant": "1 gamma" if what == "lambda" else "1 probe",
        "n": n,
        "d": d,
        "seconds": t,
        "gflops": flops / t / 1e9,
        "peak_mem_mb": peak_mb,
        "value": val,
    }


def bench_scaling(ns, d: int, what: str) -> list[dict]:
    records = []
    for n in ns:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "attnscale.bench.kernels",
                "--scaling-one",
                what,
                str(n),
                str(d),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        records.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return records


def run_suite(
    out_dir,
    *,
    lambda_n: int,
    lambda_d: int,
    lambda_gammas: int,
    eta_n: int,
    eta_d: int,
    eta_probes: int,
    scaling_ns,
    scaling_d: int,
    paper_b: bool = True,
    log=None,
):
    """Run every benchmark; write ``suite.csv``, ``suite.md`` and ``machine.json`` into
    ``out_dir`` (unless it is ``None``) and return the table."""
    import pandas as pd

    from attnscale.pipeline.io import save_csv, save_json

    def say(msg):
        if log is not None:
            log.info(msg)

    records = gemm_peak(lambda_n, lambda_d)
    if (eta_n, eta_d) != (lambda_n, lambda_d):
        records += gemm_peak(eta_n, eta_d)
    peak = {(r["n"], r["d"]): 0.0 for r in records}
    for r in records:
        if r["benchmark"] == "gemm":
            peak[(r["n"], r["d"])] = max(peak[(r["n"], r["d"])], r["gflops"])
    say(f"gemm peak: {peak}")
    records.append(bench_lambda(lambda_n, lambda_d, lambda_gammas, peak[(lambda_n, lambda_d)]))
    say(f"lambda: {records[-1]}")
    try:
        records.append(bench_eta(eta_n, eta_d, eta_probes, peak[(eta_n, eta_d)]))
        say(f"eta: {records[-1]}")
    except ImportError:
        say("eta: attnscale.layer.dense.jacobian not available, skipped")
    from attnscale.bench.causal import bench_causal

    records += bench_causal(lambda_n, lambda_d, lambda_gammas, peak[(lambda_n, lambda_d)])
    say(f"causal: {records[-2:]}")
    if paper_b:
        records += bench_paper_b()
        say(f"paper B: {records[-2:]}")
    for what in ("lambda", "eta"):
        records += bench_scaling(scaling_ns, scaling_d, what)
        say(f"scaling {what}: done")
    df = pd.DataFrame(records)
    if out_dir is None:
        return df
    out = Path(out_dir)
    save_csv(out / "suite.csv", df)
    save_json(out / "machine.json", machine_info())
    (out / "suite.md").write_text(markdown_table(df) + "\n")
    return df


def suite(
    *,
    lambda_n: int,
    lambda_d: int,
    lambda_gammas: int,
    eta_n: int,
    eta_d: int,
    eta_probes: int,
    scaling_ns,
    scaling_d: int,
) -> dict:
    """Entry of rule ``benchmark_suite``: the suite table, its markdown summary and the machine
    description (outputs ``csv``, ``md``, ``machine``)."""
    from attnscale.pipeline.runtime import LOG

    df = run_suite(
        None,
        lambda_n=lambda_n,
        lambda_d=lambda_d,
        lambda_gammas=lambda_gammas,
        eta_n=eta_n,
        eta_d=eta_d,
        eta_probes=eta_probes,
        scaling_ns=scaling_ns,
        scaling_d=scaling_d,
        log=LOG,
    )
    md = markdown_table(df) + "\n"
    return {"csv": with_job_provenance(df), "md": md, "machine": machine_info()}


def markdown_table(df) -> str:
    """A short table of the ratios for the README."""
    lines = [
        "| benchmark | n | d | variant | seconds | GFLOP/s | fraction of GEMM peak | "
        "speed-up vs baseline | peak MB | keys/s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def f(v, fmt):
        return "" if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, fmt)

    for r in df.to_dict("records"):
        lines.append(
            f"| {r['benchmark']} | {r.get('n', '')} | {r.get('d', '')} | {r.get('variant', '')} | "
            f"{f(r.get('seconds'), '.3g')} | {f(r.get('gflops'), '.1f')} | "
            f"{f(r.get('fraction_of_gemm_peak'), '.2f')} | {f(r.get('speedup_vs_baseline'), '.1f')} | "
            f"{f(r.get('peak_mem_mb'), '.0f')} | {f(r.get('keys_per_s'), '.3g')} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="attnscale benchmark suite")
    ap.add_argument("--out", default="results/benchmarks", help="output directory")
    ap.add_argument("--lambda-n", type=int, default=2048)
    ap.add_argument("--lambda-d", type=int, default=512)
    ap.add_argument("--lambda-gammas", type=int, default=16)
    ap.add_argument("--eta-n", type=int, default=1024)
    ap.add_argument("--eta-d", type=int, default=512)
    ap.add_argument("--eta-probes", type=int, default=8)
    ap.add_argument("--scaling-n", type=int, nargs="+", default=[2**k for k in range(10, 16)])
    ap.add_argument("--scaling-d", type=int, default=512)
    ap.add_argument("--scaling-one", nargs=3, metavar=("WHAT", "N", "D"), help=argparse.SUPPRESS)
    ap.add_argument(
        "--backend",
        choices=["numpy", "jax"],
        default="numpy",
        help="jax: the JAX suite, attnscale.bench.jax (docs/gpu.md#benchmark)",
    )
    args, rest = ap.parse_known_args(argv)
    if args.backend == "jax":
        from attnscale.bench.jax import main as jax_main

        return jax_main(sys.argv[1:] if argv is None else argv)
    if rest:
        ap.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.scaling_one:
        what, n, d = args.scaling_one
        print(json.dumps(scaling_one(int(n), int(d), what)))
        return 0
    run_suite(
        args.out,
        lambda_n=args.lambda_n,
        lambda_d=args.lambda_d,
        lambda_gammas=args.lambda_gammas,
        eta_n=args.eta_n,
        eta_d=args.eta_d,
        eta_probes=args.eta_probes,
        scaling_ns=args.scaling_n,
        scaling_d=args.scaling_d,
    )
    print(markdown_table(__import__("pandas").read_csv(Path(args.out) / "suite.csv")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
