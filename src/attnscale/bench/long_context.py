"""What a long-context configuration costs, estimated from single units measured here
(docs/long-context.md#cost-of-the-long-context-configuration).

    python -m attnscale.bench.long_context config/long-context.yaml     # measure and extrapolate
    python -m attnscale.bench.long_context config/long-context.yaml --tiny   # seconds (tests)

The configuration (``config.yaml`` with the given overlay merged over it, as ``snakemake
--configfile`` merges it) fixes the units of Paper A's rules whose work grows with ``n``: one
token draw (rule ``paper_a_tokens``), one ``(d, rho, draw)`` of Figure 1 and of Figure 2 over the
whole gamma grid, one ``(d, rho, draw)`` of the theorem table (its draw made in the job where it
is not cached) and one ``(d, rho, draw)`` of the intermediate-phase figure. One unit of each kind
is timed per ``d`` by calling its entry function, in this process, beside the GEMM peak measured
here (:func:`attnscale.bench.sampled.gemm_peak`, at the largest ``d``); the estimate is the unit
time times the number of units, plus a start-up per job. Dividing by the cores gives the wall
time if the jobs keep every core busy. Unit times are also given in "peak-seconds" (seconds
times this run's peak in GFLOP/s, i.e. GFLOP at peak), so that a machine with another peak can
rescale them. The rules whose cost does not depend on ``paper_a.n`` are not estimated here: their
measured times are in the default run's benchmarks.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import numpy as np

__all__ = [
    "JOB_STARTUP_S",
    "Z0_SPREAD_ROWS",
    "load_overlay",
    "units",
    "measure",
    "estimate",
    "z0_spread",
    "z0_spread_table",
    "main",
]

#: Start-up of one job (Python and library imports, reading inputs), seconds [measured ~0.5-1.5
#: s on this machine kind, docs/performance.md; the upper end is taken].
JOB_STARTUP_S = 1.5
ROOT_SEED = 0  # benchmark inputs are not results


def load_overlay(path, repo: Path | None = None):
    """``config.yaml`` of ``repo`` (default: the working directory) with the overlay at ``path``
    merged over it and checked (:func:`attnscale.pipeline.config.load`)."""
    import yaml
    from snakemake.utils import update_config

    from attnscale.pipeline.config import load

    repo = Path.cwd() if repo is None else Path(repo)
    raw = yaml.safe_load((repo / "config.yaml").read_text())
    if path is not None:
        update_config(raw, yaml.safe_load(Path(path).read_text()))
    return load(copy.deepcopy(raw), schema=repo / "workflow/schemas/config.schema.yaml")


def units(cfg) -> list[dict]:
    """The units of the configuration: ``part``, ``d``, ``n``, ``count`` (units of the run),
    ``jobs`` (jobs of the run for this part and ``d``)."""
    n = int(cfg.value("paper_a.n"))
    nt = int(cfg.get("paper_a.theorem_table.n") or n)
    rhos, per_job = len(cfg.grid("paper_a.rho")), int(cfg.value("paper_a.rho_per_job"))
    trials, eta_trials = int(cfg.value("paper_a.trials")), int(cfg.value("paper_a.eta.trials"))
    regen = int(cfg.value("paper_a.regenerate_n"))
    th_rho, th_trials = (
        len(cfg.grid("paper_a.theorem_table.rho")),
        int(cfg.value("paper_a.theorem_table.trials")),
    )
    inter = int(cfg.value("finite_d.intermediate.trials"))
    jobs = -(-rhos // per_job)
    out = []
    for d in cfg.ints("paper_a.d"):
        if n < regen:
            out.append({"part": "token draw", "d": d, "n": n, "count": trials, "jobs": trials})
        out += [
            {"part": "Figure 1 (lambda)", "d": d, "n": n, "count": rhos * trials, "jobs": jobs},
            {"part": "Figure 2 (eta)", "d": d, "n": n, "count": rhos * eta_trials, "jobs": jobs},
            {"part": "theorem table", "d": d, "n": nt, "count": th_rho * th_trials, "jobs": th_rho},
            {"part": "intermediate phase", "d": d, "n": n, "count": rhos * inter, "jobs": 1},
        ]
        if nt < regen and nt != n:
            out.append(
                {"part": "token draw", "d": d, "n": nt, "count": th_trials, "jobs": th_trials}
            )
    return out


def _draw(n, d, trial=0):
    from attnscale.experiments.paper_a_tokens import draw_tokens

    return draw_tokens(n=n, d=d, trial=trial, root_seed=ROOT_SEED)


def measure(cfg, part: str, n: int, d: int, tmp: Path) -> float:
    """Seconds of one unit of ``part`` at ``(n, d)`` (its entry function on one draw and
    ``rho = 0.5``, the configuration's other parameters)."""
    from attnscale.experiments import finite_d, paper_a, paper_a_eta, paper_a_theorem
    from attnscale.pipeline import io

    gammas = cfg.grid("paper_a.gamma").tolist()
    kw = {"rows": cfg.get("paper_a.rows"), "z0": cfg.get("paper_a.z0")}
    t0 = time.perf_counter()
    if part == "token draw":
        io.save_npz(tmp / "draw.npz", **_draw(n, d))
        return time.perf_counter() - t0
    if part == "theorem table":
        regen = n >= cfg.value("paper_a.regenerate_n")
        draws = [] if regen else [_draw(n, d)]
        t0 = time.perf_counter() if not regen else t0
        paper_a_theorem.theory_rows_all(
            draws=draws,
            rho=0.5,
            gamma_factors=cfg.grid("paper_a.theorem_table.gamma_factors"),
            alphas=cfg.grid("paper_a.theorem_table.alpha"),
            n=n,
            d=d,
            trials=1,
            root_seed=ROOT_SEED,
            **kw,
        )
        return time.perf_counter() - t0
    draw = _draw(n, d)
    t0 = time.perf_counter()
    if part == "Figure 1 (lambda)":
        paper_a.lambda_rows(
            draws=[draw], rhos=[0.5], gammas=gammas, alpha=cfg.value("paper_a.alpha"), **kw
        )
    elif part == "Figure 2 (eta)":
        paper_a_eta.eta_rows(
            draws=[draw],
            rhos=[0.5],
            gammas=gammas,
            alpha=cfg.value("paper_a.alpha"),
            method=cfg.get("paper_a.eta.method"),
            probes=cfg.get("paper_a.eta.probes"),
            probe_kind=cfg.get("paper_a.eta.probe_kind"),
            root_seed=ROOT_SEED,
            **kw,
        )
    elif part == "intermediate phase":
        finite_d.intermediate_phase(
            draws=[draw],
            rho=[0.5],
            gamma=gammas,
            rows=cfg.value("finite_d.intermediate.rows"),
            mass=cfg.value("finite_d.intermediate.mass"),
            theory=False,
        )
    else:
        raise ValueError(f"unknown part {part!r}")
    return time.perf_counter() - t0


def estimate(cfg, *, cores: int = 2, say=print):
    """Measure one unit per (part, d) and extrapolate: a table (one row per part and ``d``) and
    the totals (CPU seconds, wall seconds on ``cores`` fully used, the GEMM peak)."""
    import tempfile

    import pandas as pd

    from attnscale.bench.sampled import gemm_peak

    peak = gemm_peak(max(cfg.ints("paper_a.d")), work=1.0)["peak_gflops"]
    say(f"GEMM peak (this process): {peak:.1f} GFLOP/s")
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for u in units(cfg):
            t = measure(cfg, u["part"], u["n"], u["d"], Path(tmp))
            cpu = t * u["count"] + JOB_STARTUP_S * u["jobs"]
            records.append(
                {**u, "unit_seconds": t, "unit_peak_gflop": t * peak, "cpu_seconds": cpu}
            )
            say(
                f"{u['part']}, n = {u['n']}, d = {u['d']}: {t:.2f} s per unit x {u['count']} "
                f"+ {u['jobs']} jobs -> {cpu:.0f} CPU-s"
            )
    df = pd.DataFrame(records)
    total = float(df["cpu_seconds"].sum())
    return df, {
        "gemm_peak_gflops": peak,
        "cpu_seconds": total,
        "cores": cores,
        "wall_seconds_if_busy": total / cores,
    }


#: The stream of :func:`z0_spread`'s row samples (the same rows in both modes of a draw).
Z0_SPREAD_ROWS = "paper_a/z0_spread_rows"


def z0_spread(n: int, d: int, rho: float, gammas, draws: int, m: int, root_seed: int = 1):
    """The draw-to-draw spread of the sampled lambda with the Gaussian ``z_0`` and with
    ``||z_0|| = 1`` (docs/long-context.md#variance-reduction): for ``draws`` token draws (the
    same ``z_i`` and direction of ``z_0`` in both modes) and ``m`` sampled rows each, per gamma
    the mean and the standard deviation over draws in each mode, the rms within-draw SE, and
    the ratio of the two variances; with the Gaussian ``z_0`` also the fraction of the variance
    that a straight line in ``||z_0||^2`` explains (R^2). A table (one row per gamma). The rule
    ``paper_a_z0_spread`` runs it through :func:`z0_spread_table`."""
    import pandas as pd

    from attnscale.core.seeding import job_rng, spawn_key, value_id
    from attnscale.experiments.paper_a_tokens import draw_tokens, tokens_at
    from attnscale.layer.sampled.angle_ratio import angle_ratio_sampled

    gam = np.asarray(gammas, dtype=float)
    est = {mode: [] for mode in ("gaussian", "fixed_norm")}
    se, r2 = [], []
    for t in range(draws):
        draw = draw_tokens(n=n, d=d, trial=t, root_seed=root_seed)
        r2.append(float(draw["z0"] @ draw["z0"]))
        for mode in est:
            res = angle_ratio_sampled(
                tokens_at(draw, rho, z0=mode)["X"],
                gam * np.log(n),
                rows=m,
                rng=job_rng(root_seed, spawn_key(Z0_SPREAD_ROWS, n, d, value_id(rho), t, m)),
            )
            est[mode].append(res.estimate)
            if mode == "fixed_norm":
                se.append(res.se)
    g, f = np.array(est["gaussian"]), np.array(est["fixed_norm"])
    fit = [np.corrcoef(r2, g[:, k])[0, 1] ** 2 for k in range(gam.size)]
    return pd.DataFrame(
        {
            "n": n,
            "d": d,
            "rho": rho,
            "gamma": gam,
            "draws": draws,
            "m": m,
            "mean_gaussian": g.mean(0),
            "sd_gaussian": g.std(0, ddof=1),
            "mean_fixed_norm": f.mean(0),
            "sd_fixed_norm": f.std(0, ddof=1),
            "rms_se_within": np.sqrt((np.array(se) ** 2).mean(0)),
            "variance_ratio": g.var(0, ddof=1) / f.var(0, ddof=1),
            "r2_on_z0_norm": fit,
        }
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("overlay", nargs="?", default="config/long-context.yaml")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument(
        "--tiny",
        action="store_true",
        help="the overlay at tiny sizes (n = 512, 2 rho, 3 gammas; for the tests)",
    )
    p.add_argument("--out", default=None, help="write the table here (CSV)")
    p.add_argument(
        "--z0-spread",
        nargs=5,
        type=float,
        default=None,
        metavar=("N", "D", "RHO", "DRAWS", "M"),
        help="instead: the draw-to-draw spread of lambda with and without ||z_0|| = 1 "
        "at gamma = 1.6 .. 2.4 (docs/long-context.md#variance-reduction)",
    )
    a = p.parse_args(argv)
    if a.z0_spread is not None:
        n, d, rho, draws, m = a.z0_spread
        table = z0_spread(int(n), int(d), rho, [1.6, 1.8, 2.0, 2.2, 2.4], int(draws), int(m))
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        if a.out:
            table.to_csv(a.out, index=False)
        return 0
    cfg = load_overlay(a.overlay)
    if a.tiny:
        raw = cfg.raw
        raw["paper_a"].update(n=512, rho=[0.3, 0.6], gamma=[1.0, 2.0, 4.0], rho_per_job=1)
        raw["paper_a"]["theorem_table"].update(n=1024, rho=[0.5], trials=2)
        raw["paper_a"]["regenerate_n"] = 1024
        if raw["paper_a"]["rows"] != "all":
            raw["paper_a"]["rows"] = 32
        from attnscale.pipeline.config import check

        cfg = check(type(cfg)(raw))
    df, total = estimate(cfg, cores=a.cores)
    if a.out:
        df.to_csv(a.out, index=False)
    print(df.groupby("part")[["cpu_seconds"]].sum().round(0).to_string())
    print(
        f"total {total['cpu_seconds']:.0f} CPU-s; {total['wall_seconds_if_busy']:.0f} s "
        f"({total['wall_seconds_if_busy'] / 60:.1f} min) on {a.cores} busy cores at a GEMM "
        f"peak of {total['gemm_peak_gflops']:.1f} GFLOP/s"
    )
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())


def z0_spread_table(*, n: int, d: int, rho: float, gamma, draws: int, rows: int, root_seed: int):
    """Entry of rule ``paper_a_z0_spread``: :func:`z0_spread` at one point of
    ``paper_a.z0_spread`` (docs/long-context.md#variance-reduction), with the mean's SE in each
    mode; arguments checked before any work.

    Parameters
    ----------
    n, d : int
        Context length and dimension (``>= 2``).
    rho : float
        Nominal correlation in ``(0, 1)``.
    gamma : sequence of float
        The gammas (``> 0``).
    draws : int
        Token draws (``>= 3``).
    rows : int
        Sampled query rows per draw (``2 <= rows <= n``).
    root_seed : int

    Returns
    -------
    pandas.DataFrame
    """
    from attnscale.core.validation import check_int, check_vector

    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=2)
    draws = check_int("draws", draws, minimum=3)
    rows = check_int("rows", rows, minimum=2, maximum=n)
    if not (0.0 < rho < 1.0):
        raise ValueError(f"rho must be in (0, 1), got {rho!r}")
    gam = check_vector("gamma", gamma, low=0.0, low_open=True)
    out = z0_spread(n, d, float(rho), gam, draws, rows, root_seed)
    for mode in ("gaussian", "fixed_norm"):
        out[f"se_{mode}"] = out[f"sd_{mode}"] / np.sqrt(draws)
    from attnscale.pipeline.io import with_job_provenance

    return with_job_provenance(out)
