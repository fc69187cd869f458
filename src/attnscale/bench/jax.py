"""Benchmark of the JAX backend (``docs/gpu.md#benchmark``):
``python -m attnscale.bench.kernels --backend jax``.

In one process, on JAX's default device (the GPU if the CUDA build is installed):

* ``gemm``: float64 ``jnp.matmul`` on the workload's shapes, ``(n x n) @ (n x d)`` and
  ``(n x d) @ (d x n)``, and a square ``s x s`` product (``s = min(n, 8192)``); the best is the
  GEMM peak of this run, the denominator of every fraction below;
* ``lambda_grid`` (``4 n^2 d`` flops per gamma, the numpy benchmark's count), ``eta_hutchinson``
  (``6 n^2 d`` per probe, one beta) and ``causal_lambda_grid`` (``2 n^2 d`` per gamma,
  ``beta_i = gamma ln i``) at ``n = 8192, d = 512`` by default: seconds, GFLOP/s and the fraction
  of the GEMM peak; the first call's compile time separately;
* ``scaling_lambda``: one gamma of lambda against ``n`` (default ``2^13 .. 2^20`` at
  ``d = 128``) with the planned memory (:func:`attnscale.backend.lambda_bytes`).

Writes ``suite.csv``, ``suite.md`` and ``machine.json`` (device, driver, JAX version, GEMM peak)
into ``--out``. ``--tiny`` runs every part at tiny sizes (seconds on a CPU). Timings are
measurements of the machine it runs on; nothing here is an estimate.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from attnscale import backend

__all__ = [
    "TINY",
    "timed",
    "gemm_peak",
    "bench_kernels",
    "bench_scaling",
    "machine_info",
    "markdown",
    "run",
    "main",
]

TINY = {"n": 256, "d": 32, "gammas": 4, "probes": 2, "scaling_n": [256, 512, 1024], "scaling_d": 32}


def _jax():
    return backend.jax_float64()


def timed(fn, repeat: int = 3) -> tuple[float, float]:
    """``(best seconds of repeat calls, first call's seconds)``; the first call compiles."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return float(best), float(first)


def gemm_peak(n: int, d: int, repeat: int = 3) -> list[dict]:
    """float64 GEMM throughput of ``jnp.matmul`` on the workload's shapes and a square one."""
    jax = _jax()
    import jax.numpy as jnp

    key = jax.random.PRNGKey(0)
    s = min(n, 8192)
    shapes = [
        ("(n x n) @ (n x d)", (n, n), (n, d)),
        ("(n x d) @ (d x n)", (n, d), (d, n)),
        (f"square {s} x {s}", (s, s), (s, s)),
    ]
    records = []
    mm = jax.jit(jnp.matmul)
    for name, sa, sb in shapes:
        k1, k2, key = jax.random.split(key, 3)
        A = jax.random.normal(k1, sa, dtype=jnp.float64)
        B = jax.random.normal(k2, sb, dtype=jnp.float64)
        t, _ = timed(lambda A=A, B=B: mm(A, B).block_until_ready(), repeat)
        flops = 2.0 * sa[0] * sa[1] * sb[1]
        records.append(
            {
                "benchmark": "gemm",
                "variant": name,
                "n": n,
                "d": d,
                "seconds": t,
                "gflops": flops / t / 1e9,
            }
        )
    return records


def bench_kernels(n: int, d: int, gammas: int, probes: int, peak: float, repeat: int = 3) -> list:
    """lambda grid, Hutchinson eta and causal lambda grid on JAX, as fractions of ``peak``."""
    from attnscale.core.seeding import job_rng, spawn_key
    from attnscale.layer import tokens
    from attnscale.layer.dense import attention, jacobian

    X = tokens.near_simplex(n, d, 0.5, job_rng(0, spawn_key("benchmark/jax", n, d)))
    betas = np.geomspace(0.25, 12.0, gammas) * np.log(n)
    ln_i = np.log(np.arange(1, n + 1, dtype=float))
    grid = np.geomspace(0.25, 12.0, gammas)[:, None] * ln_i[None, :]
    beta = 2.0 * np.log(n)
    cases = [
        (
            "lambda_grid",
            f"{gammas} gammas",
            4.0 * n * n * d * gammas,
            lambda: attention.angle_ratio_grid(X, betas, backend="jax"),
        ),
        (
            "eta_hutchinson",
            f"{probes} probes, 1 beta (jax.jvp)",
            6.0 * n * n * d * probes,
            lambda: jacobian.eta_hutchinson(
                X, beta, probes=probes, rng=np.random.default_rng(1), backend="jax"
            ),
        ),
        (
            "causal_lambda_grid",
            f"{gammas} gammas, beta_i = gamma ln i",
            2.0 * n * n * d * gammas,
            lambda: attention.angle_ratio_grid(X, grid, causal=True, backend="jax"),
        ),
    ]
    records = []
    for name, variant, flops, fn in cases:
        t, first = timed(fn, repeat)
        gf = flops / t / 1e9
        records.append(
            {
                "benchmark": name,
                "variant": variant,
                "n": n,
                "d": d,
                "seconds": t,
                "compile_seconds": max(0.0, first - t),
                "gflops": gf,
                "fraction_of_gemm_peak": gf / peak,
            }
        )
    return records


def bench_scaling(ns, d: int, peak: float, repeat: int = 1) -> list[dict]:
    """One gamma of lambda against ``n``: seconds, GFLOP/s, fraction of the peak, planned bytes."""
    from attnscale.core.seeding import job_rng, spawn_key
    from attnscale.layer import tokens
    from attnscale.layer.dense import attention

    records = []
    for n in ns:
        X = tokens.near_simplex(n, d, 0.5, job_rng(0, spawn_key("benchmark/jax", n, d)))
        beta = 2.0 * np.log(n)
        plan = backend.plan_lambda(n, d, 1)
        t, first = timed(
            lambda X=X, beta=beta: attention.angle_ratio_grid(X, [beta], backend="jax"), repeat
        )
        gf = 4.0 * n * n * d / t / 1e9
        records.append(
            {
                "benchmark": "scaling_lambda",
                "variant": "1 gamma",
                "n": n,
                "d": d,
                "seconds": t,
                "compile_seconds": max(0.0, first - t),
                "gflops": gf,
                "fraction_of_gemm_peak": gf / peak,
                "planned_bytes": plan["bytes"],
                "tile": plan["tile"],
            }
        )
    return records


def machine_info(peak: float | None = None) -> dict:
    """Device, driver and library versions (and the run's GEMM peak) for ``machine.json``."""
    jax = _jax()
    import jaxlib

    from attnscale.bench.timing import machine_info as cpu_info

    dev = jax.devices()[0]
    info = {
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "platform": dev.platform,
        "device_kind": dev.device_kind,
        "device_count": jax.device_count(),
        "python": platform.python_version(),
        "host": cpu_info(),
        "gemm_peak_gflops_float64": peak,
    }
    try:
        stats = dev.memory_stats() if dev.platform != "cpu" else None
    except Exception:  # noqa: BLE001 - not every runtime has memory statistics
        stats = None
    if stats:
        info["device_bytes_limit"] = stats.get("bytes_limit")
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
        info["nvidia_smi"] = out.splitlines()
    except (OSError, subprocess.SubprocessError):
        info["nvidia_smi"] = None
    return info


def markdown(df) -> str:
    """The suite as a markdown table."""
    cols = [
        "benchmark",
        "variant",
        "n",
        "d",
        "seconds",
        "compile_seconds",
        "gflops",
        "fraction_of_gemm_peak",
        "planned_bytes",
    ]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in df.to_dict("records"):
        cells = []
        for c in cols:
            v = r.get(c)
            if v is None or (isinstance(v, float) and np.isnan(v)):
                cells.append("")
            elif isinstance(v, float):
                cells.append(f"{v:.4g}")
            else:
                cells.append(str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run(
    out_dir,
    *,
    n: int,
    d: int,
    gammas: int,
    probes: int,
    scaling_n,
    scaling_d: int,
    repeat: int = 3,
    log=print,
):
    """Run the JAX suite and write ``suite.csv``, ``suite.md``, ``machine.json`` to ``out_dir``."""
    import pandas as pd

    _jax()
    records = gemm_peak(n, d, repeat)
    peak = max(r["gflops"] for r in records)
    log(f"float64 GEMM peak (jnp.matmul): {peak:.1f} GFLOP/s")
    records += bench_kernels(n, d, gammas, probes, peak, repeat)
    for r in records[-3:]:
        log(f"{r['benchmark']}: {r['seconds']:.3g} s, {r['fraction_of_gemm_peak']:.2f} of peak")
    records += bench_scaling(scaling_n, scaling_d, peak)
    log("scaling: done")
    df = pd.DataFrame(records)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / "suite.csv", index=False)
    (out / "suite.md").write_text(markdown(df) + "\n")
    (out / "machine.json").write_text(json.dumps(machine_info(peak), indent=2) + "\n")
    return df


def main(argv=None) -> int:
    """``python -m attnscale.bench.kernels --backend jax [--tiny] [--out DIR] [sizes]``."""
    ap = argparse.ArgumentParser(description="attnscale JAX benchmark (docs/gpu.md#benchmark)")
    ap.add_argument("--backend", choices=["jax"], default="jax")
    ap.add_argument("--out", default="results/benchmarks-jax", help="output directory")
    ap.add_argument("--tiny", action="store_true", help="tiny sizes (a CPU try-out)")
    ap.add_argument("--lambda-n", type=int, default=8192)
    ap.add_argument("--lambda-d", type=int, default=512)
    ap.add_argument("--lambda-gammas", type=int, default=16)
    ap.add_argument("--eta-probes", type=int, default=4)
    ap.add_argument("--scaling-n", type=int, nargs="+", default=[2**k for k in range(13, 21)])
    ap.add_argument("--scaling-d", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    sizes = dict(
        n=args.lambda_n,
        d=args.lambda_d,
        gammas=args.lambda_gammas,
        probes=args.eta_probes,
        scaling_n=args.scaling_n,
        scaling_d=args.scaling_d,
    )
    if args.tiny:
        sizes = dict(TINY)
    df = run(args.out, repeat=args.repeat, **sizes)
    print(markdown(df))
    return 0


if __name__ == "__main__":
    sys.exit(main())
