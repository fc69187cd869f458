"""Paper A forward pass: the lambda grid of Figure 1 and its theory check
(docs/paper-a.md#the-angle-ratio-lambda). The token draws are in :mod:`.paper_a_tokens`."""

from __future__ import annotations

import numpy as np

from attnscale.core.seeding import job_rng, spawn_key
from attnscale.experiments.summaries import (
    columns_after,
    insert_after,
    mean_se_table,
    se_components,
)
from attnscale.layer import theory
from attnscale.layer.dense import attention
from attnscale.layer.observables import grid_observables
from attnscale.layer.sampled import angle_ratio as sampled_lambda
from attnscale.pipeline.io import PROVENANCE_COLUMNS, provenance_aggregations, provenance_columns
from attnscale.pipeline.runtime import LOG, Progress

from .paper_a_tokens import job_draws, tokens_at

__all__ = [
    "CELL_KEYS",
    "ROWS_STREAM",
    "check_rows",
    "rows_key",
    "long_context_params",
    "lambda_table",
    "lambda_rows",
    "figure1_data",
    "cell_provenance",
    "critical_data",
    "lambda_summary",
]

#: The keys of one heat-map cell of Figures 1 and 2.
CELL_KEYS = ["d", "n", "alpha", "rho", "gamma"]
#: Stream of the row samples of the sampled lambda (docs/long-context.md#the-rows-choice).
ROWS_STREAM = "paper_a/lambda_rows"


def check_rows(rows, n: int):
    """``rows`` of the rows choice (docs/long-context.md#the-rows-choice): ``"all"`` (the dense
    kernels) or a number of sampled rows ``2 <= m <= n``; returned as ``"all"`` or an ``int``
    (``m >= n`` would sample every row: use ``"all"``)."""
    if rows == "all":
        return rows
    if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or not 2 <= rows < n:
        raise ValueError(f"rows must be 'all' or an integer m with 2 <= m < n = {n}, got {rows!r}")
    return int(rows)


def rows_key(stream: str, n: int, d: int, trial: int) -> tuple[int, ...]:
    """Spawn key of the row sample of one token draw. ``rho`` is not part of it: every ``rho`` of
    a draw uses the same rows (and probes), common random numbers as for the tokens."""
    return spawn_key(stream, n, d, trial)


def lambda_table(tok: dict, gammas, alpha: float, params: dict, rows="all"):
    """lambda on the gamma grid and at ``gamma_c(rho_hat)`` for one token draw (docs/paper-a.md).

    Each row also carries the theory at the draw's realised ``rho_hat`` and ``q_hat``: the
    finite-n simplex value (:func:`attnscale.layer.theory.simplex_lambda`) and the n -> inf limit
    (:func:`attnscale.layer.theory.lambda_limit`, piecewise constant in gamma).

    ``rows="all"`` computes lambda with the dense kernel
    (:func:`attnscale.layer.dense.attention.angle_ratio_grid`); a number ``m`` estimates it from ``m``
    sampled rows (:func:`attnscale.layer.sampled.angle_ratio.angle_ratio_sampled`, rows drawn from the
    job's generator with key :func:`rows_key`, docs/long-context.md#the-rows-choice), adds the
    columns ``rows`` (``m``) and ``lambda_se_within`` (the within-draw SE) and records the row
    generator's key as the provenance; the near-pair counts are then those of the sampled pairs.

    The simplex theory needs ``0 < rho_hat < 1``. A d = 2 draw can (rarely) have
    ``rho_hat <= 0``; it then gets no ``critical`` row and ``nan`` theory columns, and the job
    log says so.
    """
    import pandas as pd

    X, n, d = tok["X"], tok["n"], tok["d"]
    rho_hat, q_hat = tok["rho_hat"], tok["q_hat"]
    valid = 0.0 < rho_hat < 1.0
    gc_hat = theory.gamma_c(rho_hat) if valid else np.nan
    gam = np.asarray(gammas, dtype=float)
    kind = ["grid"] * gam.size
    if valid:
        gam = np.concatenate([gam, [gc_hat]])
        kind.append("critical")
    else:
        LOG.warning(
            "draw d=%d rho=%g trial=%d has rho_hat=%g <= 0: no critical row",
            d,
            tok["rho"],
            tok["trial"],
            rho_hat,
        )
    betas = theory.beta_of_gamma(gam, n)

    def theory_col(fn, values):
        return [fn(v) if valid else np.nan for v in values]

    extra = {}
    grid = grid_observables()
    if rows == "all":
        lam, diag = attention.angle_ratio_grid(
            X, betas, alpha, return_diagnostics=True, observables=grid
        )
        prov = provenance_columns(tok["root_seed"], tok["spawn_key"], params)
    else:
        key = rows_key(ROWS_STREAM, n, d, tok["trial"])
        res = sampled_lambda.angle_ratio_sampled(
            X, betas, alpha, rows=rows, rng=job_rng(tok["root_seed"], key)
        )
        lam = res.estimate
        diag = {"n_near_pairs": res.n_near_pairs, "n_excluded_pairs": res.n_excluded_pairs}
        prov = provenance_columns(tok["root_seed"], key, params)
        extra = {"lambda_se_within": res.se, "rows": res.m}
        if grid:
            LOG.warning("sampled rows: no accumulator of %s on Figure 1's grid (nan)", grid)
            diag["observables"] = {o.name: np.full(betas.size, np.nan) for o in grid}
    on_grid = {}
    for o in grid:
        on_grid[o.name] = diag["observables"][o.name]
        on_grid[f"{o.name}_simplex_n"] = theory_col(
            lambda b, o=o: o.grid_simplex(n, rho_hat, b), betas
        )
        on_grid[f"{o.name}_limit"] = theory_col(lambda g, o=o: o.limit(rho_hat, g, d), gam)
    table = pd.DataFrame(
        {
            "d": d,
            "n": n,
            "rho": tok["rho"],
            "rho_hat": rho_hat,
            "q_hat": q_hat,
            "trial": tok["trial"],
            "gamma_kind": kind,
            "gamma": gam,
            "gamma_over_gc_hat": gam / gc_hat,
            "beta": betas,
            "alpha": alpha,
            "lambda": lam,
            "lambda_simplex_n": theory_col(
                lambda b: theory.simplex_lambda(n, rho_hat, b, alpha, q_hat), betas
            ),
            "lambda_limit": theory_col(
                lambda g: theory.lambda_limit(rho_hat, g, alpha, q_hat), gam
            ),
            "n_near_pairs": diag["n_near_pairs"],
            "n_excluded_pairs": diag["n_excluded_pairs"],
            **prov,
        }
    )
    return insert_after(insert_after(table, "lambda_limit", on_grid), "lambda", extra)


def lambda_rows(
    *,
    draws: list[dict],
    rhos,
    gammas,
    alpha: float,
    n=None,
    d=None,
    rows="all",
    z0: str = "gaussian",
    trials=None,
    root_seed=None,
):
    """Entry of rule ``paper_a_lambda``: :func:`lambda_table` for every draw of one ``(n, d)``
    at each ``rho`` of ``rhos`` (a piece of the rho grid), stacked.

    ``n``, ``d``: the job's, checked against the draws
    (:func:`attnscale.experiments.paper_a_tokens.check_draws`; ``None``: not checked). ``rows``:
    ``"all"`` (dense) or the number of sampled rows (docs/long-context.md#the-rows-choice); ``z0``:
    the common component's mode (:func:`attnscale.experiments.paper_a_tokens.tokens_at`). Without
    ``draws`` the ``trials`` draws are made here from ``root_seed``
    (:func:`attnscale.experiments.paper_a_tokens.job_draws`). The defaults are the dense default
    run (its tables unchanged; the parameter hash then covers only gammas, alpha and n)."""
    import pandas as pd

    draws = job_draws(draws, n=n, d=d, trials=trials, root_seed=root_seed)
    tables = []
    progress = Progress("lambda (rho, draw)", len(draws) * len(rhos))
    for rho in rhos:
        for draw in draws:
            tok = tokens_at(draw, rho, z0=z0)
            params = {"gammas": [float(g) for g in gammas], "alpha": float(alpha), "n": tok["n"]}
            rows = check_rows(rows, tok["n"])
            params.update(long_context_params(rows, z0))
            tables.append(lambda_table(tok, gammas, alpha, params, rows))
            progress.step()
    return pd.concat(tables, ignore_index=True)


def long_context_params(rows, z0: str) -> dict:
    """The parameters of the rows choice and the common-component mode that enter the parameter
    hash where they differ from the default run's (dense rows, Gaussian ``z_0``): none there,
    so the default run's hashes stay as they were."""
    out = {}
    if rows != "all":
        out["rows"] = int(rows)
    if z0 != "gaussian":
        out["z0"] = z0
    return out


def figure1_data(table):
    """Figure 1 data: mean lambda (and SE over trials) per ``(d, n, alpha, rho, gamma)``.

    From sampled rows (a ``lambda_se_within`` column) the cell also gets the two parts of its SE,
    ``lambda_se_within`` and ``lambda_se_between``
    (:func:`attnscale.experiments.summaries.se_components`), and ``rows``."""
    grid = table[table["gamma_kind"] == "grid"]
    groups = grid.groupby(CELL_KEYS, sort=True)
    grid_cols = [c for o in grid_observables() for c in (o.name, f"{o.name}_simplex_n")]
    out = mean_se_table(groups, ["lambda", "rho_hat", "lambda_simplex_n", *grid_cols])
    if "lambda_se_within" in grid.columns:
        parts = se_components(groups, "lambda", "lambda_se_within")
        parts["rows"] = groups["rows"].first().to_numpy()
        out = out.merge(parts, on=CELL_KEYS, how="left")
        out = out[
            columns_after(list(out.columns), "lambda_se", list(parts.columns[len(CELL_KEYS) :]))
        ]
    out["gamma_c_nominal"] = theory.gamma_c(out["rho"].to_numpy())
    return out.merge(cell_provenance(grid, CELL_KEYS), on=CELL_KEYS, how="left")


def cell_provenance(table, keys, **extra):
    """Provenance of the draws behind each group of ``rows``: the root seed, every spawn key
    (``;``-joined), the parameter hash, package version and git commit (plus ``extra`` named
    aggregations, as for :meth:`pandas.DataFrame.agg`)."""
    return (
        table.groupby(keys, sort=True)
        .agg(
            **provenance_aggregations(joined=("spawn_key",)),
            **extra,
        )
        .reset_index()
    )


def critical_data(table):
    """Theory-check data: lambda at ``gamma_c(rho_hat)`` per draw, with the simplex and limit
    values at the same ``rho_hat`` and the difference ``lambda - lambda_simplex_n``."""
    crit = table[table["gamma_kind"] == "critical"].copy()
    crit["diff_vs_simplex_n"] = crit["lambda"] - crit["lambda_simplex_n"]
    cols = [
        "d",
        "n",
        "alpha",
        "rho",
        "trial",
        "rho_hat",
        "q_hat",
        "gamma",
        "beta",
        "lambda",
        "lambda_simplex_n",
        "lambda_limit",
        "diff_vs_simplex_n",
        *PROVENANCE_COLUMNS,
    ]
    grid_cols = [
        c for o in grid_observables() for c in (o.name, f"{o.name}_simplex_n", f"{o.name}_limit")
    ]
    cols = columns_after(cols, "diff_vs_simplex_n", grid_cols) if grid_cols else cols
    if "lambda_se_within" in crit.columns:  # sampled rows
        cols = columns_after(cols, "lambda", ["lambda_se_within", "rows"])
    return crit[cols].sort_values(["d", "rho", "trial"]).reset_index(drop=True)


def lambda_summary(*, csvs: list) -> dict:
    """Entry of rule ``paper_a_lambda_summary``: Figure 1's cell means and the per-draw
    critical rows from the per-``(d, rho)`` tables."""
    import pandas as pd

    table = pd.concat(csvs, ignore_index=True)
    return {"figure1": figure1_data(table), "critical": critical_data(table)}
