"""Paper B ordered-weight laws: the subcritical weight profile (docs/paper-b.md) and the law of
``A_(1)`` and of the nearest key at the critical scale against their limits (ours).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special, stats

from attnscale.core.seeding import job_rng, spawn_key, value_id
from attnscale.core.stats import mean_se
from attnscale.core.validation import check_int, check_real, check_vector
from attnscale.pipeline.io import PROVENANCE_COLUMNS, provenance_columns
from attnscale.pipeline.runtime import Progress
from attnscale.sphere import keys
from attnscale.sphere import theory as st
from attnscale.sphere.poisson_limit import poisson_limit_top_weight

from .paper_b_common import d2q_blocks

__all__ = ["weight_profile", "critical_laws"]

PROFILE_STREAM = "paper_b/profile"
CRIT_STREAM = "paper_b/critical_laws"
CRIT_LIMIT_STREAM = "paper_b/critical_laws/limit"


def weight_profile(
    *, n: int, d: int, beta_exponent: float, trials: int, method: str, root_seed: int
) -> pd.DataFrame:
    """Mean ordered-weight profile at ``beta = n^{alpha e}`` (docs/paper-b.md, Subcritical profile).

    ``n`` uniform keys, ``q = e_1``, ``e = 1/4`` [paper]. For each rank ``k``: mean (and SE over
    ``trials`` contexts) of ``A_(k)/A_(1)`` and of the cumulative mass ``sum_{j<=k} A_(j)``, with
    ``x = k / m_n``, the limits ``exp(-x^alpha)`` and ``P(1/alpha, x^alpha)`` [paper/derived] and
    the finite-beta overlays ``exp(-beta F^{-1}(k/n))`` [derived], its shifted form
    ``exp(-beta (F^{-1}(k/n) - F^{-1}(1/n)))`` (ours) and the normalised cumulative sum [derived].
    """
    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=2)
    e = check_real("beta_exponent", beta_exponent, low=0.0, low_open=True)
    trials = check_int("trials", trials, minimum=2)
    params = {"n": n, "d": d, "beta_exponent": e, "trials": trials, "method": method}
    key = spawn_key(PROFILE_STREAM, d, n)
    rng = job_rng(root_seed, key)
    alpha = st.alpha_exponent(d)
    beta = float(n ** (alpha * e))
    c = st.c_uniform(d)
    m = st.m_eff(n, beta, c, d)
    ratios, masses = [], []
    for T in d2q_blocks(trials, n, d, rng, method):
        W = keys.ordered_weights_from_d2q(T, beta)
        ratios.append(W / W[:, :1])
        masses.append(np.cumsum(W, axis=1))
    R, M = np.concatenate(ratios), np.concatenate(masses)  # (trials, n) each: 16 MB at 2000 x 1000
    k = np.arange(1, n + 1)
    x = k / m
    return pd.DataFrame(
        {
            "d": d,
            "n": n,
            "beta": beta,
            "m_n": m,
            "trials": trials,
            "method": method,
            "k": k,
            "x": x,
            "ratio_mean": R.mean(axis=0),
            "ratio_se": mean_se(R)[1],
            "ratio_limit": st.profile_limit(x, d),
            "ratio_finite_beta": st.profile_finite_beta(k, n, beta, d),
            "ratio_finite_beta_shifted": st.profile_finite_beta(k, n, beta, d, shifted=True),
            "mass_mean": M.mean(axis=0),
            "mass_se": mean_se(M)[1],
            "mass_limit": st.cumulative_mass_limit(x, d),
            "mass_finite_beta": st.cumulative_mass_finite_beta(n, beta, d),
            **provenance_columns(root_seed, key, params),
        }
    )


def critical_laws(
    *,
    d: int,
    n_values,
    gammas,
    trials: int,
    limit_trials: int,
    method: str,
    root_seed: int,
    grid_points: int = 201,
) -> dict:
    """Law of ``A_(1)`` at ``beta = gamma n^alpha`` and of ``n^alpha T_(1)`` for growing n (ours).

    Uniform keys, ``q = e_1``; for each ``n`` one generator, each context evaluated at every gamma
    (common random numbers) [choice]. Limits: the Poisson limit ``W_(1)`` by simulation with
    ``limit_trials`` samples (docs/paper-b.md [derived]) and the Weibull law
    ``P(n^alpha T_(1) > s) = exp(-C s^{1/alpha})`` (docs/paper-b.md [paper]); for the nearest key also the exact
    finite-n law ``(1 - F(s/n^alpha))^n`` [derived].

    Returns
    -------
    dict
        ``ecdf``: ECDF table on fixed grids (``stat`` = ``top_weight`` or ``nearest_scaled``; ``source`` =
        ``finite_n``, ``poisson_limit``, ``weibull_limit`` or ``exact_finite_n``) and a summary with
        ``summary``: means, SEs and Kolmogorov-Smirnov distances (two-sample against the simulated limit for
        ``A_(1)``, one-sample against the Weibull and the exact law for the nearest key).
    """
    d = check_int("d", d, minimum=2)
    ns = [check_int("n_values[i]", int(v), minimum=1) for v in n_values]
    gammas = check_vector("gammas", gammas, low=0.0, low_open=True)
    trials = check_int("trials", trials, minimum=2)
    limit_trials = check_int("limit_trials", limit_trials, minimum=2)
    alpha = st.alpha_exponent(d)
    c = st.c_uniform(d)
    s_max = float((np.log(1e3) / c) ** alpha)
    s_grid = np.linspace(0.0, s_max, grid_points)
    base = {"d": d, "trials": trials, "limit_trials": limit_trials, "method": method}
    limits, lim_prov = {}, {}
    for g in gammas:
        key = spawn_key(CRIT_LIMIT_STREAM, d, value_id(g))
        lim_prov[float(g)] = provenance_columns(root_seed, key, {**base, "gamma": float(g)})
        limits[float(g)] = poisson_limit_top_weight(g, c, d, limit_trials, job_rng(root_seed, key))
    samples = _finite_n_samples(ns, d, gammas, trials, method, base, root_seed)
    grids = _top_weight_grids(gammas, limits, samples, grid_points)
    ecdf_rows, summ = _limit_rows(d, gammas, limits, grids, lim_prov, s_grid, limit_trials)
    for n in ns:
        e, s = _finite_n_rows(d, n, gammas, samples[n], limits, grids, s_grid, trials)
        ecdf_rows += e
        summ += s
    return {"ecdf": pd.concat(ecdf_rows, ignore_index=True), "summary": pd.DataFrame(summ)}


def _ecdf(sample, grid):
    return np.searchsorted(np.sort(sample), grid, side="right") / sample.size


def _finite_n_samples(ns, d, gammas, trials, method, base, root_seed) -> dict:
    """Per ``n``: the ``A_(1)`` sample at every gamma, the scaled nearest-key sample, the betas and
    the provenance columns (one generator per ``n``, common random numbers over gamma)."""
    alpha = st.alpha_exponent(d)
    samples = {}
    progress = Progress("critical-law context sizes", len(ns))
    for n in ns:
        key = spawn_key(CRIT_STREAM, d, n)
        rng = job_rng(root_seed, key)
        betas = gammas * n**alpha
        A, s = [], []
        for T in d2q_blocks(trials, n, d, rng, method):
            A.append(keys.top_weight_from_d2q(T, betas))
            s.append(T.min(axis=1) * n**alpha)
        prov = provenance_columns(root_seed, key, {**base, "n": n, "gammas": gammas.tolist()})
        samples[n] = (np.concatenate(A), np.concatenate(s), betas, prov)
        progress.step()
    return samples


def _top_weight_grids(gammas, limits, samples, grid_points) -> dict:
    """The ``A_(1)`` grid per gamma: [0, top], top = the 99.9% quantile over all samples, rounded
    up to a multiple of 0.05 (so narrow laws, e.g. d = 5 and small gamma, are resolved)."""
    grids = {}
    for j, g in enumerate(gammas):
        q999 = max(
            [np.quantile(limits[float(g)], 0.999)]
            + [np.quantile(samples[n][0][:, j], 0.999) for n in samples]
        )
        grids[float(g)] = np.linspace(0.0, min(1.0, np.ceil(q999 / 0.05) * 0.05), grid_points)
    return grids


def _limit_rows(d, gammas, limits, grids, lim_prov, s_grid, limit_trials):
    """The limits' ECDF rows (Poisson limit per gamma, then the Weibull law) and summary rows."""
    c = st.c_uniform(d)
    ecdf_rows, summ = [], []
    for g in gammas:
        w, a_grid, prov = limits[float(g)], grids[float(g)], lim_prov[float(g)]
        ecdf_rows.append(
            pd.DataFrame(
                {
                    "d": d,
                    "n": 0,
                    "gamma": float(g),
                    "stat": "top_weight",
                    "source": "poisson_limit",
                    "x": a_grid,
                    "cdf": _ecdf(w, a_grid),
                    **prov,
                }
            )
        )
        summ.append(
            {
                "d": d,
                "n": 0,
                "gamma": float(g),
                "stat": "top_weight",
                "source": "poisson_limit",
                "samples": limit_trials,
                "mean": w.mean(),
                "se": mean_se(w)[1],
                **prov,
            }
        )
    ecdf_rows.append(
        pd.DataFrame(
            {
                "d": d,
                "n": 0,
                "gamma": np.nan,
                "stat": "nearest_scaled",
                "source": "weibull_limit",
                "x": s_grid,
                "cdf": 1.0 - st.nearest_key_sf_limit(s_grid, c, d),
                **dict.fromkeys(PROVENANCE_COLUMNS[:3]),  # a limit: no draw, no params
            }
        )
    )
    return ecdf_rows, summ


def _finite_n_rows(d, n, gammas, sample, limits, grids, s_grid, trials):
    """The ECDF rows and summary rows of one context size ``n``."""
    alpha = st.alpha_exponent(d)
    c = st.c_uniform(d)
    ecdf_rows, summ = [], []
    A, s, betas, prov = sample
    for j, g in enumerate(gammas):
        a_grid = grids[float(g)]
        ks = stats.ks_2samp(A[:, j], limits[float(g)])
        ecdf_rows.append(
            pd.DataFrame(
                {
                    "d": d,
                    "n": n,
                    "gamma": float(g),
                    "stat": "top_weight",
                    "source": "finite_n",
                    "x": a_grid,
                    "cdf": _ecdf(A[:, j], a_grid),
                    **prov,
                }
            )
        )
        summ.append(
            {
                "d": d,
                "n": n,
                "gamma": float(g),
                "beta": float(betas[j]),
                "stat": "top_weight",
                "source": "finite_n",
                "samples": trials,
                "mean": A[:, j].mean(),
                "se": mean_se(A[:, j])[1],
                "limit_mean": limits[float(g)].mean(),
                "limit_se": mean_se(limits[float(g)])[1],
                "ks_vs_limit": ks.statistic,
                "ks_pvalue": ks.pvalue,
                **prov,
            }
        )
    ks_lim = stats.kstest(s, lambda v: 1.0 - st.nearest_key_sf_limit(v, c, d))
    ks_ex = stats.kstest(s, lambda v, n=n: 1.0 - st.nearest_key_sf_exact_uniform(v, n, d))
    ecdf_rows.append(
        pd.DataFrame(
            {
                "d": d,
                "n": n,
                "gamma": np.nan,
                "stat": "nearest_scaled",
                "source": "finite_n",
                "x": s_grid,
                "cdf": _ecdf(s, s_grid),
                **prov,
            }
        )
    )
    ecdf_rows.append(
        pd.DataFrame(
            {
                "d": d,
                "n": n,
                "gamma": np.nan,
                "stat": "nearest_scaled",
                "source": "exact_finite_n",
                "x": s_grid,
                "cdf": 1.0 - st.nearest_key_sf_exact_uniform(s_grid, n, d),
                **prov,
            }
        )
    )
    summ.append(
        {
            "d": d,
            "n": n,
            "gamma": np.nan,
            "stat": "nearest_scaled",
            "source": "finite_n",
            "samples": trials,
            "mean": s.mean(),
            "se": mean_se(s)[1],
            "limit_mean": special.gamma(1 + alpha) * c ** (-alpha),
            "ks_vs_limit": ks_lim.statistic,
            "ks_pvalue": ks_lim.pvalue,
            "ks_vs_exact": ks_ex.statistic,
            "ks_exact_pvalue": ks_ex.pvalue,
            **prov,
        }
    )
    return ecdf_rows, summ
