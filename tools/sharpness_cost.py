"""Cost of the sharpness jobs of a configuration, each measured with the GEMM peak of the same
process (docs/long-context.md#transition-sharpness-against-context-length).

Runs the entry function of every ``sharpness_curves`` job of the configuration in this process,
one BLAS thread (as the workflow runs it), and prints per job: the CPU seconds, the counted GEMM
work of the sampled kernels (per draw and rho ``2 (1 + P) m n d`` once and ``2 (2 + P) m n d`` per
grid point), the single-thread GEMM peak measured just before the job (best of three
1024 x 1024 x 1024 products) and the fraction of that peak the job reached. On a shared machine
the CPU seconds rise with the load; the fraction says how much.

    python tools/sharpness_cost.py [--configfile config/long-context.yaml] [--out costs.csv]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]


def gemm_peak(size: int = 1024, repeat: int = 3) -> float:
    """Best single-thread GEMM rate in GFLOP/s on a ``size``-cube product."""
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((size, size)), rng.standard_normal((size, size))
    out = np.empty((size, size))
    np.matmul(A, B, out=out)
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        np.matmul(A, B, out=out)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * size**3 / best / 1e9


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--configfile",
        action="append",
        default=[],
        help="configuration files merged over config.yaml (in order)",
    )
    ap.add_argument("--out", default=None, help="also write the table as CSV here")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO / "src"))
    import pandas as pd
    from snakemake.utils import update_config
    from threadpoolctl import threadpool_limits

    from attnscale.experiments.sharpness import sharpness_curves

    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    for f in args.configfile:
        update_config(cfg, yaml.safe_load(Path(f).read_text()))
    s = cfg["sharpness"]
    x, rhos = s["x"], s["rho"]
    rows = []
    with threadpool_limits(1):
        for size in s["sizes"]:
            d = size["d"]
            for n in s["n"]:
                if n > size["n_max"]:
                    continue
                peak = gemm_peak()
                c0, w0 = time.process_time(), time.perf_counter()
                sharpness_curves(
                    n=n,
                    d=d,
                    rhos=rhos,
                    x=x,
                    rows=s["rows"],
                    probes=s["probes"],
                    trials=s["trials"],
                    root_seed=cfg["seed"],
                )
                cpu, wall = time.process_time() - c0, time.perf_counter() - w0
                m, P, B = min(s["rows"], n), s["probes"], len(x)
                flops = len(rhos) * s["trials"] * (2 * (1 + P) + 2 * (2 + P) * B) * m * n * d
                rows.append(
                    {
                        "d": d,
                        "n": n,
                        "cpu_s": cpu,
                        "wall_s": wall,
                        "gemm_gflop": flops / 1e9,
                        "peak_gflops": peak,
                        "fraction_of_peak": flops / 1e9 / (cpu * peak),
                    }
                )
                print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    print(df.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print(
        f"total CPU-s {df['cpu_s'].sum():.1f}; at the median peak of this run: "
        f"{(df['gemm_gflop'].sum() / df['peak_gflops'].median()):.1f} s of pure GEMM"
    )
    if args.out:
        df.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
