"""Pipeline efficiency: the default run's counted work against its measured time
(docs/pipeline.md#pipeline-efficiency).

    python -m attnscale.bench.pipeline_cost --benchmarks benchmarks --wall 612 [--configfile config.yaml]

The *counted work* of the Paper A rules (the bulk of the default run) is computed from the
configuration with the kernels' own operation counts: per draw and grid point, lambda costs
``4 n^2 d`` flops (plus ``2 n^2 d`` per draw for the Gram matrix) and ``n^2`` exponentials; exact
eta ``6 n^2 d + min(2 n^3, n^2 d (d + 1))`` flops (:func:`attnscale.layer.dense.eta_exact.exact_cost` without
its elementwise term) and ``n^2`` exponentials; a Hutchinson probe ``4 n^2 d`` flops. Its
*roofline time* is the counted flops over the machine's GEMM peak (measured here, in the same
process, with all cores) plus, in the second variant, the exponentials over the exp throughput
of all cores. The *measured time* is the sum of the per-job wall times Snakemake recorded in
``benchmarks/`` (``benchmark:`` directive), divided by the number of cores, and the end-to-end
wall time if given. Rules whose work is not counted are listed with their time, so the ratio is
never flattered by leaving time out.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

__all__ = ["counted_work", "job_seconds", "efficiency", "markdown", "main"]

#: Paper A rules whose work is counted.
COUNTED = ("paper_a_lambda", "paper_a_eta", "paper_a_theorem_rows", "paper_a_finite_size_rows")


def _exact_flops(n: float, d: float) -> float:
    return 6.0 * n * n * d + min(2.0 * n**3, n * n * d * (d + 1))


def counted_work(cfg) -> list[dict]:
    """Counted flops and exponentials per Paper A compute rule for a :class:`attnscale.pipeline.config.Config`
    (see the module doc for the operation counts)."""
    from attnscale.experiments.paper_a_eta import choose_method

    n = float(cfg.value("paper_a.n"))
    ds = cfg.ints("paper_a.d")
    n_rho = len(cfg.grid("paper_a.rho"))
    g = len(cfg.grid("paper_a.gamma")) + 1  # + the gamma_c(rho_hat) point
    trials = cfg.value("paper_a.trials")
    eta_trials = cfg.value("paper_a.eta.trials")
    probes = cfg.get("paper_a.eta.probes")
    records = []
    lam = sum(trials * n_rho * (2 * n * n * d + g * 4 * n * n * d) for d in ds)
    records.append(
        {"rule": "paper_a_lambda", "flops": lam, "exps": trials * n_rho * len(ds) * g * n * n}
    )
    eta = 0.0
    for d in ds:
        how = choose_method(cfg.get("paper_a.eta.method"), int(n), d, probes)
        per = _exact_flops(n, d) if how == "exact" else probes * 4 * n * n * d
        eta += eta_trials * n_rho * g * per
    records.append(
        {"rule": "paper_a_eta", "flops": eta, "exps": eta_trials * n_rho * len(ds) * g * n * n}
    )

    def theory(n_, trials_, n_rho_, factors, alphas):
        # per draw (experiments.paper_a_theorem.theory_rows): exact eta for every factor (alphas
        # share it), lambda per alpha (Gram once + 4 n^2 d per factor), the self-weight pass
        # (Gram once + A Y per factor)
        fl = ex = 0.0
        na = len(alphas)
        for d in ds:
            per_draw = (
                factors * _exact_flops(n_, d)
                + na * (2 * n_ * n_ * d + factors * 4 * n_ * n_ * d)
                + 2 * n_ * n_ * d
                + factors * 2 * n_ * n_ * d
            )
            fl += trials_ * n_rho_ * per_draw
            ex += trials_ * n_rho_ * factors * (na + 2) * n_ * n_
        return fl, ex

    tt = theory(
        n,
        cfg.value("paper_a.theorem_table.trials"),
        len(cfg.grid("paper_a.theorem_table.rho")),
        len(cfg.grid("paper_a.theorem_table.gamma_factors")),
        cfg.grid("paper_a.theorem_table.alpha"),
    )
    records.append({"rule": "paper_a_theorem_rows", "flops": tt[0], "exps": tt[1]})
    fs_fl = fs_ex = 0.0
    for nn in cfg.ints("paper_a.finite_size.n"):
        f = theory(
            float(nn),
            cfg.value("paper_a.finite_size.trials"),
            len(cfg.grid("paper_a.finite_size.rho")),
            1,
            cfg.grid("paper_a.finite_size.alpha"),
        )
        fs_fl, fs_ex = fs_fl + f[0], fs_ex + f[1]
    records.append({"rule": "paper_a_finite_size_rows", "flops": fs_fl, "exps": fs_ex})
    return records


def job_seconds(bench_dir) -> dict[str, tuple[int, float]]:
    """rule -> (jobs, sum of wall seconds) from Snakemake's per-job benchmark files.

    The rule of a file is read from its path: ``benchmarks/<paper>/<what>/...`` maps to the rule
    whose benchmark directive writes there (see :data:`BENCH_DIRS`); other files are grouped by
    their first two path parts.
    """
    import pandas as pd

    out: dict[str, list] = {}
    for f in sorted(Path(bench_dir).rglob("*.tsv")):
        rel = f.relative_to(bench_dir).parts
        key = BENCH_DIRS.get(rel[:2], "/".join(rel[:2]).removesuffix(".tsv"))
        s = float(pd.read_csv(f, sep="\t")["s"].iloc[0])
        jobs, tot = out.get(key, (0, 0.0))
        out[key] = (jobs + 1, tot + s)
    return out


#: benchmark directory -> rule (the rules' ``benchmark:`` paths).
BENCH_DIRS = {
    ("paper_a", "lambda"): "paper_a_lambda",
    ("paper_a", "eta"): "paper_a_eta",
    ("paper_a", "theorem_table"): "paper_a_theorem_rows",
    ("paper_a", "finite_size"): "paper_a_finite_size_rows",
    ("paper_a", "tokens"): "paper_a_tokens",
}


def efficiency(
    work: list[dict],
    seconds: dict,
    gemm_gflops: float,
    exp_gexps: float,
    cores: int,
    wall_s: float | None = None,
) -> dict:
    """Roofline times of the counted work and the measured times (see the module doc)."""
    flops = sum(r["flops"] for r in work)
    exps = sum(r["exps"] for r in work)
    counted_s = sum(seconds.get(r["rule"], (0, 0.0))[1] for r in work)
    total_s = sum(t for _, t in seconds.values())
    roof_gemm = flops / (gemm_gflops * 1e9)
    roof_both = roof_gemm + exps / (exp_gexps * 1e9 * cores)
    out = {
        "counted_gflop": flops / 1e9,
        "counted_gexp": exps / 1e9,
        "gemm_peak_gflops": gemm_gflops,
        "exp_peak_gexp_per_s_per_core": exp_gexps,
        "cores": cores,
        "roofline_gemm_s": roof_gemm,
        "roofline_gemm_exp_s": roof_both,
        "counted_rules_job_s": counted_s,
        "counted_rules_s_per_core": counted_s / cores,
        "all_rules_job_s": total_s,
        "all_rules_s_per_core": total_s / cores,
        "ratio_counted_to_roofline_gemm": counted_s / cores / roof_gemm if roof_gemm else np.nan,
        "ratio_counted_to_roofline_gemm_exp": counted_s / cores / roof_both
        if roof_both
        else np.nan,
    }
    if wall_s is not None:
        out["wall_s"] = wall_s
        out["ratio_wall_to_roofline_gemm"] = wall_s / roof_gemm
        out["ratio_wall_to_roofline_gemm_exp"] = wall_s / roof_both
    return out


def markdown(eff: dict, seconds: dict) -> str:
    """The efficiency record and the per-rule job seconds as a markdown table."""
    lines = ["| quantity | value |", "|---|---|"]
    lines += [
        f"| {k} | {v:.4g} |" if isinstance(v, float) else f"| {k} | {v} |" for k, v in eff.items()
    ]
    lines += ["", "| rule (from benchmarks/) | jobs | sum of job wall s |", "|---|---|---|"]
    for rule, (jobs, s) in sorted(seconds.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"| {rule} | {jobs} | {s:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmarks", default="benchmarks", help="Snakemake's per-job benchmarks")
    ap.add_argument("--configfile", default="config.yaml")
    ap.add_argument("--schema", default="workflow/schemas/config.schema.yaml")
    ap.add_argument("--wall", type=float, default=None, help="end-to-end wall time (s), if known")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--out", default="results/benchmarks/pipeline_efficiency.md")
    args = ap.parse_args(argv)
    import yaml
    from threadpoolctl import threadpool_limits

    from attnscale.bench.kernels import gemm_peak
    from attnscale.pipeline.config import load
    from attnscale.pipeline.io import atomic_path

    cfg = load(yaml.safe_load(Path(args.configfile).read_text()), args.schema)
    with threadpool_limits(limits=args.cores):
        records = gemm_peak(1024, 512) + gemm_peak(2048, 512)
    gemm = max(r["gflops"] for r in records if r["benchmark"] == "gemm")
    with threadpool_limits(limits=1):
        exp = max(r["gexp_per_s"] for r in gemm_peak(1024, 32) if r["benchmark"] == "exp")
    seconds = job_seconds(args.benchmarks)
    eff = efficiency(counted_work(cfg), seconds, gemm, exp, args.cores, args.wall)
    text = markdown(eff, seconds)
    with atomic_path(args.out, suffix=".md") as tmp:
        Path(tmp).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
