"""Benchmark of the row-sampled kernels at long contexts (docs/long-context.md#benchmark).

    python -m attnscale.bench.sampled --out results/benchmarks/sampled     # n = 2^17 .. 2^20
    python -m attnscale.bench.sampled --tiny                                 # seconds, for tests
    snakemake --cores all benchmark_sampled                                  # the same, as a rule

In one process, under the current BLAS thread limit: the GEMM peak on the kernels' own shapes
(:func:`gemm_peak`), then :func:`attnscale.layer.sampled.angle_ratio.angle_ratio_sampled` and
:func:`attnscale.layer.sampled.eta.eta_sampled` (probe route, one probe) for a grid of betas at
each ``(n, d)`` whose tokens fit ``max_gib``. Flops are counted honestly
(docs/long-context.md#cost-and-memory): lambda ``2 m n d`` per beta for ``A Y`` plus the Gram
tiles once per grid, ``2 m n d``; eta ``2 (2 + P) m n d`` per beta plus ``2 (1 + P) m n d`` once.
Reported: seconds, counted GFLOP/s, the fraction of the same run's GEMM peak, and the cost per
beta against ``m n d`` (nanoseconds per ``m n d``). The pairs of lambda (``2 m^2 d`` per beta),
the exps (``m n`` per beta) and the element-wise passes are not counted as flops: they are what
separates the kernels from the peak. Timings are written to ``results/benchmarks/``; no result of
the workflow depends on them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from attnscale.bench.timing import best_time, machine_info
from attnscale.core.seeding import job_rng, spawn_key
from attnscale.layer import tokens
from attnscale.layer.sampled import angle_ratio as sampled_lambda
from attnscale.layer.sampled import eta as sampled_eta
from attnscale.pipeline.io import with_job_provenance

__all__ = ["TINY", "gemm_peak", "bench_sampled", "run", "suite", "markdown_table", "main"]

ROOT_SEED = 0  # benchmark inputs are not results; any fixed seed will do
#: Sizes of ``--tiny`` (and of the tests): seconds in all.
TINY = {"ns": [1024, 2048], "ds": [64, 16], "m": 64, "gammas": 3, "max_gib": 1.0, "work": 0.02}


def gemm_peak(
    d: int, rows: int = 256, keys: int = 1024, repeat: int = 5, work: float = 2.0
) -> dict:
    """float64 GEMM throughput on the sampled kernels' shapes: the Gram tile
    ``(rows x d) @ (d x keys)``, the weights' product ``(rows x keys) @ (keys x d)`` and a large
    ``(2048 x 2048) @ (2048 x d)``, each timed over about ``work`` GFLOP; the best is the run's
    peak (GFLOP/s)."""
    rng = np.random.default_rng(0)
    shapes = {"gram tile": (rows, d, keys), "A Y tile": (rows, keys, d), "large": (2048, 2048, d)}
    out = {}
    for name, (a, k, b) in shapes.items():
        A, B, C = rng.standard_normal((a, k)), rng.standard_normal((k, b)), np.empty((a, b))
        reps = max(1, int(work * 1e9 // (2 * a * k * b)))

        def many(A=A, B=B, C=C, reps=reps):
            for _ in range(reps):
                np.matmul(A, B, out=C)

        out[name] = 2 * a * k * b * reps / best_time(many, repeat) / 1e9
    return {"peak_gflops": max(out.values()), **{f"{k} GFLOP/s": v for k, v in out.items()}}


def _tokens(n: int, d: int) -> np.ndarray:
    z0, Z = tokens.gaussian_draw(n, d, job_rng(ROOT_SEED, spawn_key("bench/sampled", n, d)))
    return tokens.from_draw(z0 / np.linalg.norm(z0), Z, 0.5, out=Z)


def bench_sampled(n: int, d: int, m: int, gammas: int, peak: float, repeat: int = 1) -> list[dict]:
    """The sampled lambda and eta at one ``(n, d)``: ``gammas`` betas around the transition
    (``gamma`` from 1 to 3, ``rho = 0.5``), ``m`` rows; two rows of the benchmark table."""
    X = _tokens(n, d)
    betas = np.geomspace(1.0, 3.0, gammas) * np.log(n)
    probes = 1
    kernels = {
        "sampled_lambda": (
            lambda: sampled_lambda.angle_ratio_sampled(
                X, betas, rows=m, rng=np.random.default_rng(1)
            ),
            2.0 * m * n * d * (gammas + 1),
        ),
        "sampled_eta": (
            lambda: sampled_eta.eta_sampled(
                X, betas, rows=m, rng=np.random.default_rng(1), probes=probes
            ),
            2.0 * m * n * d * ((2 + probes) * gammas + 1 + probes),
        ),
    }
    records = []
    for kernel, (fn, flops) in kernels.items():
        t = best_time(fn, repeat)
        records.append(
            {
                "benchmark": kernel,
                "n": n,
                "d": d,
                "m": m,
                "betas": gammas,
                "seconds": t,
                "seconds_per_beta": t / gammas,
                "gflops": flops / t / 1e9,
                "fraction_of_gemm_peak": flops / t / 1e9 / peak,
                "ns_per_mnd_per_beta": t / gammas / (m * n * d) * 1e9,
            }
        )
    return records


def run(
    *, ns, ds, m: int, gammas: int, max_gib: float, repeat: int = 1, work: float = 2.0, say=print
):
    """The benchmark table (a :class:`pandas.DataFrame`) and the machine record: the GEMM peak
    per ``d`` in this process, then every ``(n, d)`` with ``8 n d`` bytes of tokens within
    ``max_gib`` GiB (``work``: GFLOP per timing of the peak)."""
    import pandas as pd

    machine = machine_info()
    out = []
    for d in ds:
        peak = gemm_peak(d, work=work)
        machine[f"gemm_peak_d{d}"] = peak
        say(f"d = {d}: GEMM peak {peak['peak_gflops']:.1f} GFLOP/s")
        out.append(
            {
                "benchmark": "gemm_peak",
                "d": d,
                "gflops": peak["peak_gflops"],
                "fraction_of_gemm_peak": 1.0,
            }
        )
        for n in ns:
            if 8 * n * d > max_gib * 2**30:
                continue
            for row in bench_sampled(n, d, m, gammas, peak["peak_gflops"], repeat):
                say(
                    f"{row['benchmark']} n = {n}, d = {d}, m = {m}: {row['seconds_per_beta']:.3f} "
                    f"s per beta, {row['fraction_of_gemm_peak']:.2f} of peak"
                )
                out.append(row)
    df = pd.DataFrame(out)
    for col in ("n", "m", "betas"):
        df[col] = df[col].astype("Int64")
    return df, machine


def markdown_table(df) -> str:
    """The benchmark table as Markdown (docs/long-context.md#benchmark)."""
    lines = [
        "| kernel | n | d | m | s per beta | GFLOP/s (counted) | fraction of peak | ns per m n d |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in df[df["benchmark"] != "gemm_peak"].itertuples():
        lines.append(
            f"| {r.benchmark} | {r.n} | {r.d} | {r.m} | {r.seconds_per_beta:.3f} | "
            f"{r.gflops:.1f} | {r.fraction_of_gemm_peak:.2f} | "
            f"{r.ns_per_mnd_per_beta:.3f} |"
        )
    return "\n".join(lines) + "\n"


def suite(*, ns, ds, m: int, gammas: int, max_gib: float) -> dict:
    """Entry of rule ``benchmark_sampled``: the table, its Markdown and the machine record."""
    df, machine = run(ns=ns, ds=ds, m=m, gammas=gammas, max_gib=max_gib)
    return {"csv": with_job_provenance(df), "md": markdown_table(df), "machine": machine}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="results/benchmarks/sampled")
    p.add_argument("--tiny", action="store_true", help="tiny sizes (seconds; for the tests)")
    p.add_argument("--n", type=int, nargs="+", default=[2**17, 2**18, 2**19, 2**20])
    p.add_argument("--d", type=int, nargs="+", default=[512, 128, 32])
    p.add_argument("--m", type=int, default=256)
    p.add_argument("--gammas", type=int, default=8)
    p.add_argument("--max-gib", type=float, default=1.0)
    a = p.parse_args(argv)
    sizes = (
        dict(TINY)
        if a.tiny
        else {"ns": a.n, "ds": a.d, "m": a.m, "gammas": a.gammas, "max_gib": a.max_gib}
    )
    df, machine = run(**sizes)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / "sampled.csv", index=False)
    (out / "sampled.md").write_text(markdown_table(df))
    (out / "machine.json").write_text(json.dumps(machine, indent=1, default=str))
    print(markdown_table(df))
    return 0


if __name__ == "__main__":
    sys.exit(main())
