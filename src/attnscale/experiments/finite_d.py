"""Finite-d experiments (issue 9, ``docs/finite-d.md``): where the transition sits at finite
``(n, d)``, and the intermediate phase at low ``d``.

Two simulations, both on Paper A's Gaussian near-simplex tokens
``x_i = sqrt(rho) z_0 + sqrt(1 - rho) z_i``, ``z ~ N(0, I_d / d)`` (``docs/paper-a.md``):

* :func:`transition_points` finds the simulated critical point ``beta*`` (the beta at which the
  mean self-weight ``<A_ii>`` over query rows and draws equals 1/2) by root finding on beta with
  common random numbers: every draw's Gram rows are computed once and ``<A_ii>(beta)`` is
  evaluated at any beta from them. ``<A_ii>`` increases with beta in every row
  (:func:`attnscale.layer.scores.weight_stats.self_weight_curve`), so the crossing is unique. Its standard
  error comes from the delta method, ``SE(beta*) = SE(<A_ii>) / |d<A_ii>/dbeta|`` at ``beta*``,
  with ``SE(<A_ii>)`` from the spread of the per-draw means (draws are the independent units;
  rows of one draw share ``z_0``).
* :func:`intermediate_phase` measures the effective number of attended keys
  ``N_eff = 1 / sum_j A_ij^2`` and the number of keys holding 90 % of a row's mass per cell of
  Figure 1's ``(rho, gamma)`` grid (:func:`attnscale.layer.scores.weight_stats.row_weight_stats`).

The theory side (tables and lines from ``attnscale.layer.finite_d``) is in
:mod:`attnscale.experiments.finite_d_theory`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.roots import LEVEL
from attnscale.core.seeding import job_rng, spawn_key
from attnscale.core.stats import mean_se
from attnscale.core.validation import check_int, check_real, check_rhos, check_vector
from attnscale.layer import tokens
from attnscale.layer.scores import weight_stats
from attnscale.layer.theory import gamma_c
from attnscale.pipeline.io import provenance_columns, with_job_provenance

from .paper_a_tokens import check_draws

__all__ = ["simulated_critical_beta", "transition_points", "intermediate_phase"]

TRANSITION_STREAM = "finite_d/transition"

#: The simulated critical point is the beta where the mean self-weight equals the target level
#: :data:`attnscale.core.roots.LEVEL` (the simplex value at gamma_c, docs/finite-d.md).


def transition_key(n: int, d: int, trial: int) -> tuple[int, ...]:
    """Spawn key of one token draw of the transition experiment (``rho`` is not part of it:
    every ``rho`` uses the same ``z_0, z_i``, common random numbers)."""
    return spawn_key(TRANSITION_STREAM, n, d, trial)


def simulated_critical_beta(
    gaps_by_draw, *, level: float = LEVEL, guess: float | None = None, rtol: float = 1e-7
) -> dict:
    """The beta at which the mean self-weight over rows and draws equals ``level``.

    Safeguarded Newton iteration on the pooled mean ``f(beta) = <A_ii>(beta) - level`` with the
    analytic slope of :func:`attnscale.layer.scores.weight_stats.self_weight_curve`: a bracket
    ``f(lo) < 0 < f(hi)`` is kept (``f(0) = 1/n - level < 0``; ``hi`` doubles until ``f > 0``) and
    a Newton step leaving it is replaced by bisection. ``f`` is increasing, so the root is unique.

    Parameters
    ----------
    gaps_by_draw : list of numpy.ndarray
        Per draw, the score gaps of its query rows from
        :func:`attnscale.layer.scores.weight_stats.self_weight_scores` (shape ``(m, n - 1)``, same ``n``).
    level : float, optional
        Target mean self-weight, ``1/n < level < 1``.
    guess : float, optional
        Starting beta (e.g. the theory's critical beta); default ``max(1, ln n)``.
    rtol : float, optional
        Relative tolerance of the root (far below any standard error here).

    Returns
    -------
    dict
        ``beta_star``; ``beta_star_se`` (delta method over draws, ``nan`` for one draw);
        ``a_se`` (SE of the mean self-weight at ``beta_star``); ``slope`` (``d<A_ii>/dbeta``);
        ``a_draw`` (each draw's mean self-weight at ``beta_star``); ``evaluations``.
    """
    gaps = list(gaps_by_draw)
    if not gaps:
        raise ValueError("gaps_by_draw must hold at least one draw")
    n = gaps[0].shape[1] + 1
    level = check_real("level", level, low=1.0 / n, high=1.0, low_open=True, high_open=True)
    evals = 0

    def f(beta):
        nonlocal evals
        evals += 1
        curves = [weight_stats.self_weight_curve(g, beta) for g in gaps]
        a = np.array([c[0].mean() for c in curves])
        return a, float(np.mean([c[1].mean() for c in curves]))

    lo, hi = 0.0, np.inf
    beta = (
        max(1.0, np.log(n)) if guess is None else check_real("guess", guess, low=0.0, low_open=True)
    )
    for _ in range(200):
        a, slope = f(beta)
        fb = a.mean() - level
        if fb < 0:
            lo = beta
        else:
            hi = beta
        if fb == 0.0:
            break
        step = -fb / slope if slope > 0 else np.inf
        new = beta + step
        if not (lo < new < hi):
            new = 2.0 * beta if not np.isfinite(hi) else 0.5 * (lo + hi)
        if abs(new - beta) <= rtol * beta:
            beta = new
            break
        beta = new
    else:
        raise RuntimeError("root finding on beta did not converge in 200 steps")
    a, slope = f(beta)
    t = len(gaps)
    a_se = float(mean_se(a)[1])
    return {
        "beta_star": float(beta),
        "beta_star_se": a_se / slope if t > 1 else np.nan,
        "a_se": a_se,
        "slope": slope,
        "a_draw": a,
        "evaluations": evals,
    }


def transition_points(
    *, n, d: int, rho, trials: int, rows: int, root_seed: int, theory: bool = True
) -> pd.DataFrame:
    """Simulated finite-d critical points for one ``d``, every ``n`` and every ``rho`` (issue 9,
    item 1). One job per ``d`` (rather than per ``(n, d)``) saves the start-up of a process per
    point; the draws of each ``(n, d, trial)`` have their own generator, so the result of one
    ``n`` does not depend on which other ``n`` are in the list.

    Parameters
    ----------
    n : int or sequence of int
        Context lengths (each ``>= 3``).
    d : int
        Dimension (``d >= 1``; the theory needs ``d >= 3``).
    rho : sequence of float
        Nominal correlations in ``[0, 1)``; all share the same draws ``z`` per trial.
    trials : int
        Independent token draws (``>= 2`` for an error bar).
    rows : int
        Query rows per draw (the first ``min(rows, n)``; rows are exchangeable). Every key enters
        each row's softmax.
    root_seed : int
        Root seed; draw ``t`` uses ``job_rng(root_seed, transition_key(n, d, t))``.
    theory : bool, optional
        Also evaluate ``attnscale.layer.finite_d.critical_beta`` and the simulated mean self-weight at
        that beta (``a_at_theory``, with its SE over draws): a direct test of the theory.

    Returns
    -------
    pandas.DataFrame
        One row per ``(n, rho)``: ``beta_star``, ``beta_star_se``, ``gamma_star = beta_star /
        ln n`` and its SE, the slope ``d<A_ii>/dbeta``, the SE of the mean self-weight, the
        root finder's evaluations, with ``theory``: ``beta_theory``, ``a_at_theory`` and its SE;
        provenance.
    """
    ns = [check_int("n", v, minimum=3) for v in np.atleast_1d(n).tolist()]
    d = check_int("d", d, minimum=1)
    rhos = check_rhos(rho)
    trials = check_int("trials", trials, minimum=1)
    rows = check_int("rows", rows, minimum=1)
    frames = [_transition_one(v, d, rhos, trials, rows, root_seed, theory) for v in ns]
    return pd.concat(frames, ignore_index=True)


def _transition_one(n, d, rhos, trials, rows, root_seed, theory) -> pd.DataFrame:
    """:func:`transition_points` for one ``n`` (arguments already checked)."""
    m = min(rows, n)
    params = {"n": n, "d": d, "rho": rhos.tolist(), "trials": trials, "rows": m, "level": LEVEL}
    keys = [transition_key(n, d, t) for t in range(trials)]
    prov = provenance_columns(root_seed, keys, params)
    # one draw at a time: memory is the query rows' score gaps, trials x rows x n per rho
    gaps_by_rho = [[] for _ in rhos]
    for t in range(trials):
        z0, Z = tokens.gaussian_draw(n, d, job_rng(root_seed, transition_key(n, d, t)))
        for k, r in enumerate(rhos):
            X = tokens.from_draw(z0, Z, r)
            gaps_by_rho[k].append(weight_stats.self_weight_scores(X, rows=np.arange(m)))
        del z0, Z
    if theory:
        from attnscale.layer import finite_d
    out = []
    for r, gaps in zip(rhos, gaps_by_rho, strict=True):
        bt = float(finite_d.critical_beta(n, d, float(r))) if theory else None
        res = simulated_critical_beta(gaps, guess=bt)
        rec = {
            "n": n,
            "d": d,
            "rho": float(r),
            "trials": trials,
            "rows": m,
            "beta_star": res["beta_star"],
            "beta_star_se": res["beta_star_se"],
            "gamma_star": res["beta_star"] / np.log(n),
            "gamma_star_se": res["beta_star_se"] / np.log(n),
            "slope": res["slope"],
            "a_se": res["a_se"],
            "evaluations": res["evaluations"],
        }
        if theory:
            a = np.array([weight_stats.self_weight_curve(g, bt)[0].mean() for g in gaps])
            rec["beta_theory"] = bt
            a_mean, a_se = mean_se(a)
            rec["a_at_theory"] = float(a_mean)
            rec["a_at_theory_se"] = float(a_se)
        rec.update(prov)
        out.append(rec)
    return pd.DataFrame(out)


def intermediate_phase(
    *,
    draws,
    rho,
    gamma,
    rows: int,
    mass: float = 0.9,
    theory: bool = True,
    n: int | None = None,
    d: int | None = None,
) -> pd.DataFrame:
    """Effective number of attended keys per cell of Figure 1's grid (issue 9, item 4).

    For every draw in ``draws`` (same ``n`` and ``d``), every nominal ``rho`` (tokens
    :func:`attnscale.layer.tokens.from_draw`, common random numbers across ``rho``) and every ``gamma``
    (``beta = gamma ln n``): the mean over the first ``rows`` query rows of the self-weight
    ``A_ii``, of ``N_eff = 1 / sum_j A_ij^2`` and of the number of keys holding ``mass`` of the
    row's weight (:func:`attnscale.layer.scores.weight_stats.row_weight_stats`), then the mean over draws.

    Parameters
    ----------
    draws : list of dict
        Token draws (the npz files of Figure 1's draws), each with ``z0`` (``(d,)``), ``Z`` (``(n, d)``) and ``trial``.
    rho : sequence of float
        Nominal correlations in ``[0, 1)``.
    gamma : sequence of float
        Scale factors, ``> 0``.
    rows : int
        Query rows per draw (``>= 1``; at most ``n`` are used).
    mass : float, optional
        Mass fraction for the key count (default 0.9).
    theory : bool, optional
        Add the finite-d critical line ``gamma_star = attnscale.layer.finite_d.critical_gamma(n, d,
        rho)`` per ``rho`` (:func:`attnscale.experiments.finite_d_theory.gamma_star_line`;
        ``nan`` where the theory does not apply, ``d < 3``).
    n, d : int, optional
        The job's sizes, checked against the draws
        (:func:`attnscale.experiments.paper_a_tokens.check_draws`; ``None``: not checked).

    Returns
    -------
    pandas.DataFrame
        One row per ``(d, n, rho, gamma)``: ``self_weight_mean``, ``n_eff_mean``,
        ``n_eff_se`` (over draws; ``nan`` for one draw), ``k_mass_mean``, ``k_mass_se``,
        ``log_n_eff_mean`` (mean of ``ln N_eff`` over rows and draws), ``n_eff_others_mean``
        and its SE (effective number of the *other* keys), ``trials``, ``rows``,
        ``gamma_star``, ``gamma_c`` (``1/(1 - rho)``).
    """
    if not draws:
        raise ValueError("draws must hold at least one draw")
    rhos = check_rhos(rho)
    gam = check_vector("gamma", gamma, low=0.0, low_open=True)
    rows = check_int("rows", rows, minimum=1)
    mass = check_real("mass", mass, low=0.0, high=1.0, low_open=True)
    n, d = check_draws(draws, n, d)
    m = min(rows, n)
    betas = gam * np.log(n)
    if theory and d >= 3:
        from .finite_d_theory import gamma_star_line

        g_star = gamma_star_line(n, d, rhos)
    else:
        g_star = np.full(rhos.size, np.nan)
    out = []
    for ir, r in enumerate(rhos):
        # common random numbers: every rho reuses the same z_0, Z
        per_draw = [_draw_means(tok, r, betas, m, mass) for tok in draws]
        mean, se = mean_se(np.array(per_draw))  # over draws of (draws, 5, gammas)
        out.append(
            pd.DataFrame(
                {
                    "d": d,
                    "n": n,
                    "rho": float(r),
                    "gamma": gam,
                    "beta": betas,
                    "self_weight_mean": mean[0],
                    "n_eff_mean": mean[1],
                    "n_eff_se": se[1],
                    "k_mass_mean": mean[2],
                    "k_mass_se": se[2],
                    "log_n_eff_mean": mean[3],
                    "n_eff_others_mean": mean[4],
                    "n_eff_others_se": se[4],
                    "mass": mass,
                    "trials": len(per_draw),
                    "rows": m,
                    "gamma_star": g_star[ir],
                    "gamma_c": gamma_c(r),
                }
            )
        )
    return with_job_provenance(pd.concat(out, ignore_index=True))


def _draw_means(tok: dict, r: float, betas, m: int, mass: float) -> tuple:
    """Means over the first ``m`` query rows of one draw at nominal ``rho = r``: self-weight,
    ``N_eff``, key count holding ``mass``, ``ln N_eff`` and ``N_eff`` of the other keys."""
    st = weight_stats.row_weight_stats(
        tokens.from_draw(np.asarray(tok["z0"]), np.asarray(tok["Z"]), r),
        betas,
        rows=np.arange(m),
        mass=mass,
    )
    return (
        st["self_weight"].mean(axis=0),
        st["n_eff"].mean(axis=0),
        st["k_mass"].mean(axis=0),
        np.log(st["n_eff"]).mean(axis=0),
        st["n_eff_others"].mean(axis=0),
    )
