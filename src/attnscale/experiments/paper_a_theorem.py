"""Paper A: simulation beside theory at the critical scale, the theorem table and the
finite-size check (docs/paper-a.md#results-of-the-paper-that-we-use, docs/finite-d.md).

For every token draw (rule ``paper_a_tokens``, :func:`attnscale.experiments.paper_a_tokens.draw_tokens`)
at ``gamma = f gamma_c(rho_hat)``: the simulated mean self-weight, output cosine, lambda and exact
eta beside their n -> inf limits, their finite-n simplex values at the draw's realised ``rho_hat``
and ``q_hat`` and (``alpha = 0``, ``d >= 3``) the finite-d theory (:func:`theory_rows`); then the
tidy table of means over draws with paired standard errors (:func:`theorem_table`). The same two
steps at one factor and several ``n`` give the finite-size check. Figure 2's eta grid is
:mod:`attnscale.experiments.paper_a_eta`.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng
from attnscale.core.stats import mean_se
from attnscale.core.validation import check_vector
from attnscale.layer import theory, tokens
from attnscale.layer.dense import attention, eta_exact
from attnscale.layer.sampled import stats as sampled_stats
from attnscale.pipeline.io import PROVENANCE_COLUMNS, provenance_columns, provenance_of

from .paper_a import check_rows, long_context_params, rows_key
from .paper_a_eta import has_gamma_c, norm_moments
from .paper_a_tokens import RegeneratedDraws, job_draws, tokens_at

__all__ = [
    "FINITE_D_ABS_TOL",
    "theory_rows",
    "theory_rows_all",
    "theorem_table",
    "theorem_table_data",
]

LOG = logging.getLogger("attnscale")

#: The quantities of the theorem table.
QUANTITIES = ("self_weight", "cosine", "lambda", "eta")
#: Quantities with a finite-d theory column from :func:`attnscale.experiments.finite_d_theory.theory_given_draw`
#: (docs/finite-d.md; ``alpha = 0``); eta's column is the mean field of
#: docs/finite-d.md#mean-field-for-eta (every ``alpha``).
FINITE_D_QUANTITIES = ("self_weight", "cosine", "lambda")
#: Acceptance of the finite-d theory (issue 9): |sim - theory| <= max(3 SE, FINITE_D_ABS_TOL).
FINITE_D_ABS_TOL = 0.002
#: One row of the theorem table per these keys (and quantity).
THEORY_KEYS = ["d", "n", "rho", "alpha", "gamma_factor"]
#: Stream of the row samples and probes of the sampled theorem rows (docs/long-context.md#the-rows-choice).
ROWS_STREAM = "paper_a/theorem_rows"


def simulated(tok: dict, betas, alphas, rows="all") -> dict:
    """The simulated quantities of one draw at ``betas`` for each of ``alphas``: ``(A, B)`` arrays
    ``self_weight``, ``cosine``, ``lambda``, ``eta``; dense (``rows="all"``: the whole attention
    matrix, the ``n x n`` Gram kept, exact eta) or from ``rows`` sampled rows
    (:func:`attnscale.layer.sampled.stats.layer_statistics_sampled`, rows and probes from the
    job's generator with key :func:`attnscale.experiments.paper_a.rows_key`), which adds the
    within-draw SEs ``<q>_se`` and ``m`` (docs/long-context.md#the-rows-choice)."""
    X = tok["X"]
    if rows != "all":
        key = rows_key(ROWS_STREAM, tok["n"], tok["d"], tok["trial"])
        out = sampled_stats.layer_statistics_sampled(
            X, betas, alphas, rows=rows, rng=job_rng(tok["root_seed"], key)
        )
        return dict(out, spawn_key=key)
    A_, B_ = len(alphas), len(betas)
    out = {"eta": eta_exact.eta_exact_grid(X, betas, alphas)}  # (alphas, factors)
    out["lambda"] = np.array([attention.angle_ratio_grid(X, betas, a) for a in alphas])
    out["self_weight"], out["cosine"] = np.empty((A_, B_)), np.empty((A_, B_))
    Y, _ = attention.normalise(X)
    G = Y @ Y.T  # beta-free: shared by every factor
    for k, beta in enumerate(betas):
        A = attention.softmax_rows(beta * G)
        out["self_weight"][:, k] = float(np.mean(np.diag(A)))
        AY = A @ Y
        for ia, alpha in enumerate(alphas):
            out["cosine"][ia, k] = tokens.mean_cosine(AY + alpha * X)
    return out


def theory_rows(tok: dict, gamma_factors, alphas, params: dict, rows="all") -> pd.DataFrame:
    """Simulation beside theory for one draw at ``gamma = f gamma_c(rho_hat)`` (docs/paper-a.md).

    For every factor ``f`` and residual ``alpha``: the realised mean self-weight ``A_ii`` (the
    mechanism of docs/paper-a.md#results-of-the-paper-that-we-use: ``A_ii -> 0, 1/2, 1``), the simulated mean output cosine
    ``<y_i', y_j'>`` (mean over ``i != j``), lambda (:func:`attnscale.layer.dense.attention.angle_ratio_grid`)
    and exact eta (:func:`attnscale.layer.dense.eta_exact.eta_exact_grid`), each with its n -> inf limit
    (Theorem 2.1, 2.4 and the derived alpha > 0 forms; ``A_ii``: docs/paper-a.md#results-of-the-paper-that-we-use) and its finite-n
    simplex value (:func:`attnscale.layer.theory.simplex_self_weight`, ``simplex_map``,
    ``simplex_lambda``, ``simplex_eta``) at ``rho_hat`` and ``q_hat``; eta also at the realised
    norm moments (``eta_simplex_n_norms``). A draw with ``rho_hat`` outside (0, 1) has no
    ``gamma_c`` and gives no rows (logged).

    Finite-d theory columns ``{self_weight, cosine, lambda}_finite_d`` (docs/finite-d.md):
    :func:`attnscale.experiments.finite_d_theory.theory_given_draw` at the draw's nominal ``rho``, its
    ``beta`` and its own ``||z_0||`` (``tok["r0"]``); ``nan`` where the theory does not apply
    (``d < 3``, ``alpha > 0``, or no ``r0`` in ``tok``). ``eta_finite_d``: the mean-field eta
    (:func:`attnscale.layer.finite_d.eta.eta_mean_field`, docs/finite-d.md#mean-field-for-eta) at the
    same point, for every ``alpha``; ``nan`` for ``d < 3`` or without ``r0``.

    ``rows``: ``"all"`` (dense) or a number of sampled rows (:func:`simulated`); sampled rows add
    the within-draw SE columns ``<q>_se_within`` and ``rows`` and record the row generator's key
    as the provenance (docs/long-context.md#the-rows-choice).
    """
    X, n, d = tok["X"], tok["n"], tok["d"]
    rho_hat, q_hat = tok["rho_hat"], tok["q_hat"]
    factors = check_vector("gamma_factors", gamma_factors, low=0.0, low_open=True)
    alphas = check_vector("alphas", alphas, low=0.0)
    if not has_gamma_c(rho_hat):
        LOG.warning(
            "d = %d trial %d: rho_hat = %g outside (0, 1), draw skipped", d, tok["trial"], rho_hat
        )
        return pd.DataFrame()
    gc_hat = theory.gamma_c(rho_hat)
    gam = factors * gc_hat
    betas = theory.beta_of_gamma(gam, n)
    sim = simulated(tok, betas, alphas, rows)
    w1, w2 = norm_moments(X)
    prov = provenance_columns(tok["root_seed"], sim.get("spawn_key", tok["spawn_key"]), params)
    nan = np.full(betas.size, np.nan)
    fd = dict.fromkeys(FINITE_D_QUANTITIES, nan)
    if d >= 3 and tok.get("r0") is not None and 0.0 in set(np.asarray(alphas).tolist()):
        from .finite_d_theory import theory_given_draw

        fd = theory_given_draw(n, d, tok["rho"], betas, tok["r0"])
    eta_fd = np.full((alphas.size, betas.size), np.nan)
    if d >= 3 and tok.get("r0") is not None:
        from attnscale.layer.finite_d.eta import eta_mean_field

        eta_fd = eta_mean_field(n, d, tok["rho"], betas, alpha=alphas, r0=float(tok["r0"]))
    out = []
    for k, (f, g, beta) in enumerate(zip(factors, gam, betas, strict=True)):
        for ia, alpha in enumerate(alphas):
            out.append(
                {
                    "d": d,
                    "n": n,
                    "rho": tok["rho"],
                    "trial": tok["trial"],
                    "rho_hat": rho_hat,
                    "q_hat": q_hat,
                    "mean_inv_sq_norm": w2,
                    "alpha": alpha,
                    "gamma_factor": f,
                    "gamma": g,
                    "beta": beta,
                    "self_weight": sim["self_weight"][ia, k],
                    "self_weight_limit": theory.self_weight_limit(rho_hat, g),
                    "self_weight_simplex_n": theory.simplex_self_weight(n, rho_hat, beta),
                    "cosine": sim["cosine"][ia, k],
                    "cosine_limit": theory.cosine_limit(rho_hat, g, alpha, q_hat),
                    "cosine_simplex_n": theory.simplex_map(n, rho_hat, beta, alpha, q_hat)[0],
                    "lambda": sim["lambda"][ia, k],
                    "lambda_limit": theory.lambda_limit(rho_hat, g, alpha, q_hat),
                    "lambda_simplex_n": theory.simplex_lambda(n, rho_hat, beta, alpha, q_hat),
                    "eta": sim["eta"][ia, k],
                    "eta_limit": theory.eta_limit(rho_hat, g, d, alpha, q_hat),
                    "eta_simplex_n": theory.simplex_eta(n, d, rho_hat, beta, alpha, q_hat),
                    "eta_simplex_n_norms": theory.simplex_eta(
                        n, d, rho_hat, beta, alpha, q_hat, mean_inv_norm=w1, mean_inv_sq_norm=w2
                    ),
                    **{
                        f"{q}_finite_d": float(fd[q][k]) if alpha == 0.0 else np.nan
                        for q in FINITE_D_QUANTITIES
                    },
                    "eta_finite_d": float(eta_fd[ia, k]),
                    **prov,
                    **{f"{q}_se_within": sim[f"{q}_se"][ia, k] for q in QUANTITIES if "m" in sim},
                    **({"rows": sim["m"]} if "m" in sim else {}),
                }
            )
    return pd.DataFrame(out).sort_values(["alpha", "gamma_factor"], kind="stable")


def theory_rows_all(
    *,
    draws: list[dict],
    rho: float,
    gamma_factors,
    alphas,
    n=None,
    d=None,
    rows="all",
    z0: str = "gaussian",
    trials=None,
    root_seed=None,
) -> pd.DataFrame:
    """Entry of rules ``paper_a_theorem_rows`` and ``paper_a_finite_size_rows``:
    :func:`theory_rows` for every draw of one (n, d, rho), stacked. ``n``, ``d``: the job's,
    checked against the draws (:func:`attnscale.experiments.paper_a_tokens.check_draws`;
    ``None``: not checked). ``rows``, ``z0`` and ``trials``, ``root_seed`` (draws made here when
    ``draws`` is empty, each built in place: one draw in memory at a time) as for
    :func:`attnscale.experiments.paper_a.lambda_rows`."""
    draws = job_draws(draws, n=n, d=d, trials=trials, root_seed=root_seed)
    frames = []
    for draw in draws:
        # ||z_0|| conditions the finite-d theory on the draw (docs/finite-d.md): 1 for fixed_norm
        r0 = 1.0 if z0 == "fixed_norm" else float(np.linalg.norm(draw["z0"]))
        tok = dict(tokens_at(draw, rho, z0=z0, in_place=isinstance(draws, RegeneratedDraws)), r0=r0)
        rows = check_rows(rows, tok["n"])
        params = {
            "gamma_factors": [float(f) for f in gamma_factors],
            "alphas": [float(a) for a in alphas],
            "n": tok["n"],
            **long_context_params(rows, z0),
        }
        frames.append(theory_rows(tok, gamma_factors, alphas, params, rows))
    df = pd.concat(frames, ignore_index=True)
    if df.empty:
        raise ValueError(
            f"no token draw of d = {draws[0]['d']} at rho = {rho} has rho_hat in (0, 1)"
        )
    return df


def theorem_table(table: pd.DataFrame) -> pd.DataFrame:
    """Tidy theorem table: one row per (d, n, rho, alpha, gamma_factor, quantity).

    ``sim_mean``/``sim_se``: the simulation's mean and standard error over draws;
    ``simplex_n``/``limit``: the theory values, averaged over draws (each draw is evaluated at its
    own ``rho_hat`` and ``q_hat``); ``diff_mean``/``diff_se``: the paired difference simulation
    minus finite-n simplex value per draw, ``z = diff_mean / diff_se`` and
    ``within_2se = |z| <= 2``. For eta, ``simplex_n_norms`` uses the realised norm moments.

    Finite-d theory (docs/finite-d.md; self-weight, cosine and lambda at ``alpha = 0``, ``d >=
    3``): ``finite_d`` (mean over draws of the per-draw theory), the paired difference
    ``diff_fd_mean`` with its SE ``diff_fd_se``, ``z_fd``, ``within_2se_fd``/``within_3se_fd``,
    and ``accept_fd``: ``|diff_fd_mean| <= max(3 diff_fd_se, 0.002)`` (issue 9's criterion).

    From sampled rows (``<q>_se_within`` columns) each row also gets ``sim_se_within`` and
    ``sim_se_between``, the two parts of ``sim_se``
    (docs/long-context.md#within-draw-and-between-draw-variance; as
    :func:`attnscale.experiments.summaries.se_components`), and ``rows``; ``sim_se`` and the paired
    SEs, from the spread over draws, already include the row sampling.
    """
    out = []
    for keys, g in table.groupby(THEORY_KEYS, sort=True):
        t = len(g)
        for qty in QUANTITIES:
            sim = g[qty].to_numpy()
            simp = g[f"{qty}_simplex_n"].to_numpy()
            sim_mean, se = mean_se(sim)
            diff_mean, dse = mean_se(sim - simp)
            z = diff_mean / dse if t > 1 and dse > 0 else np.nan
            rec = dict(zip(THEORY_KEYS, keys, strict=True))
            rec.update(
                {
                    "quantity": qty,
                    "trials": t,
                    "rho_hat_mean": g["rho_hat"].mean(),
                    "q_hat_mean": g["q_hat"].mean(),
                    "gamma_mean": g["gamma"].mean(),
                    "sim_mean": sim_mean,
                    "sim_se": se,
                    "simplex_n": simp.mean(),
                    "limit": g[f"{qty}_limit"].mean(),
                    "diff_mean": diff_mean,
                    "diff_se": dse,
                    "z": z,
                    "within_2se": bool(np.isfinite(z) and abs(z) <= 2.0),
                    "simplex_n_norms": np.nan,
                    "z_norms": np.nan,
                }
            )
            # provenance of the draws behind the row (the per-draw tables hold the details)
            rec.update(provenance_of(g, joined=PROVENANCE_COLUMNS))
            fcol = g.get(f"{qty}_finite_d")
            fdv = np.full(t, np.nan) if fcol is None else fcol.to_numpy(dtype=float)
            if np.all(np.isfinite(fdv)):
                dfd_mean, dfse = mean_se(sim - fdv)
                zfd = dfd_mean / dfse if t > 1 and dfse > 0 else np.nan
                rec.update(
                    finite_d=fdv.mean(),
                    diff_fd_mean=dfd_mean,
                    diff_fd_se=dfse,
                    z_fd=zfd,
                    within_2se_fd=bool(np.isfinite(zfd) and abs(zfd) <= 2.0),
                    within_3se_fd=bool(np.isfinite(zfd) and abs(zfd) <= 3.0),
                    accept_fd=bool(
                        abs(dfd_mean)
                        <= max(3.0 * dfse if np.isfinite(dfse) else 0.0, FINITE_D_ABS_TOL)
                    ),
                )
            else:
                rec.update(
                    finite_d=np.nan,
                    diff_fd_mean=np.nan,
                    diff_fd_se=np.nan,
                    z_fd=np.nan,
                    within_2se_fd=False,
                    within_3se_fd=False,
                    accept_fd=False,
                )
            if f"{qty}_se_within" in g:  # sampled rows: the two parts of sim_se
                within = float(np.sqrt(np.sum(g[f"{qty}_se_within"].to_numpy() ** 2)) / t)
                rec.update(
                    sim_se_within=within,
                    sim_se_between=float(np.sqrt(max(se**2 - within**2, 0.0))),
                    rows=int(g["rows"].iloc[0]),
                )
            if qty == "eta":
                dn_mean, dnse = mean_se(sim - g["eta_simplex_n_norms"].to_numpy())
                rec["simplex_n_norms"] = g["eta_simplex_n_norms"].mean()
                rec["z_norms"] = dn_mean / dnse if t > 1 and dnse > 0 else np.nan
            out.append(rec)
    return pd.DataFrame(out)


def theorem_table_data(*, csvs: list) -> pd.DataFrame:
    """Entry of rules ``paper_a_theorem_table_summary`` and ``paper_a_finite_size_summary``:
    :func:`theorem_table` of the stacked per-(n, d, rho) rows."""
    return theorem_table(pd.concat(csvs, ignore_index=True))
