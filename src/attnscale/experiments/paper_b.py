"""Paper B compute steps: vector fields, the A_(1) phase diagram, the subcritical weight profile,
the critical laws and the heat-equation drift (spec ``paper-b.md`` §2-§5).

Every function here writes one tidy table (CSV, atomic) whose rows carry the provenance of the
draw: ``root_seed``, ``spawn_key`` (``-``-joined) and ``params_hash``. Generators come only from
:func:`attnscale.seeding.job_rng` with keys built by :func:`attnscale.seeding.spawn_key` from the
experiment's stream name and integer ids (``n``, ``d``, ``value_id(beta)``, ...), so results do
not depend on which other jobs run or in which order.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special

from .. import keys
from .. import sphere_theory as st
from ..io import provenance, read_csvs, save_csv
from ..runtime import Progress
from ..seeding import job_rng, spawn_key, value_id
from ..validation import check_int, check_real, check_vector

VF_STREAM = "paper_b/vector_fields"
PHASE_STREAM = "paper_b/phase"
LIMIT_STREAM = "paper_b/poisson_limit"
PROFILE_STREAM = "paper_b/profile"
CRIT_STREAM = "paper_b/critical_laws"
CRIT_LIMIT_STREAM = "paper_b/critical_laws/limit"
HEAT_STREAM = "paper_b/heat_drift"

#: Keys per block of trials when drawing D2Q matrices (float64 entries, 32 MiB).
TRIAL_BLOCK_ENTRIES = 4 * 2**20


def _prov(root_seed, key, params) -> dict:
    p = provenance(root_seed, key, params)
    return {
        "root_seed": p["root_seed"],
        "spawn_key": "-".join(str(k) for k in p["spawn_key"]),
        "params_hash": p["params_hash"],
        "attnscale_version": p["attnscale_version"],
        "git_commit": p["git_commit"],
    }


def _se(x, axis=0):
    x = np.asarray(x, dtype=float)
    m = x.shape[axis]
    return (
        x.std(axis=axis, ddof=1) / np.sqrt(m)
        if m > 1
        else np.full(np.delete(x.shape, axis), np.nan)
    )


def _d2q_blocks(trials: int, n: int, d: int, rng, method: str):
    """Yield ``(trials_in_block, n)`` D2Q blocks of uniform keys, in a fixed order."""
    rows = max(1, TRIAL_BLOCK_ENTRIES // (n * (d if method == "sphere" else 1)))
    for s in range(0, trials, rows):
        yield keys.sample_d2q_uniform(min(rows, trials - s), n, d, rng, method)


def _lonlat(Q: np.ndarray):
    lon = np.degrees(np.arctan2(Q[:, 1], Q[:, 0]))
    lat = np.degrees(np.arcsin(np.clip(Q[:, 2], -1, 1)))
    return lon, lat


def _east_north(Q: np.ndarray, V: np.ndarray):
    """Components of tangent vectors ``V`` at ``Q`` along the local east and north unit vectors."""
    lon = np.arctan2(Q[:, 1], Q[:, 0])
    lat = np.arcsin(np.clip(Q[:, 2], -1, 1))
    east = np.column_stack([-np.sin(lon), np.cos(lon), np.zeros_like(lon)])
    north = np.column_stack([-np.sin(lat) * np.cos(lon), -np.sin(lat) * np.sin(lon), np.cos(lat)])
    return np.einsum("ij,ij->i", V, east), np.einsum("ij,ij->i", V, north)


# =========================================================================== 1. vector fields
def vector_fields(
    *,
    n: int,
    beta_exponents,
    n_queries: int,
    sweep_betas,
    root_seed: int,
    d: int = 3,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Tangential displacements on a query grid for one shared context (paper-b.md §5, Vector fields).

    One context of ``n`` keys from ``rho ∝ exp(x1 x2)`` on S^2 [paper]; queries on a Fibonacci grid
    of ``n_queries`` points [choice]; panels ``beta = n^e`` for ``e`` in ``beta_exponents``
    [paper: 5/4, 1, 3/4, 1/2, 1/4]. Every query sees the same context (so panels differ only by
    beta). The sweep table (ours) records, for ``beta`` in ``sweep_betas`` and the panel betas,
    the root-mean-square of the tangential displacement over the grid, of its deviation from the
    drift ``grad_S log rho / beta`` and (for ``beta <= n^{2/(d+1)}``) from the ``n = inf`` mean
    field at the same beta (quadrature, :func:`attnscale.sphere_theory.mean_field_x1x2`), and the
    theory scales: drift, d = 3 noise ``1/(4 pi n rho(q))`` and the supercritical nearest-key
    value ``2 / (C(q) n)`` (mean squares averaged over the grid).

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        Per-query panel table and per-beta sweep table.
    """
    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=3, maximum=3)
    exps = check_vector("beta_exponents", beta_exponents, low=0.0, low_open=True)
    n_queries = check_int("n_queries", n_queries, minimum=1)
    sweep = check_vector("sweep_betas", sweep_betas, low=0.0, low_open=True)
    params = {
        "n": n,
        "d": d,
        "beta_exponents": exps.tolist(),
        "n_queries": n_queries,
        "sweep_betas": sweep.tolist(),
    }
    key = spawn_key(VF_STREAM, n, d)
    prov = _prov(root_seed, key, params)
    K = keys.sample_x1x2(n, job_rng(root_seed, key), d)
    Q = keys.fibonacci_sphere(n_queries)
    G = st.score_x1x2(Q)
    rho = st.density_x1x2(Q, d)
    C = np.array([st.c_density(r, d) for r in rho])
    lon, lat = _lonlat(Q)
    g_e, g_n = _east_north(Q, G)
    rows = []
    for panel, e in enumerate(exps):
        beta = float(n**e)
        Y = keys.tangential_displacement(Q, K, beta)
        y_e, y_n = _east_north(Q, Y)
        rows.append(
            pd.DataFrame(
                {
                    "panel": panel,
                    "beta_exponent": e,
                    "beta": beta,
                    "n": n,
                    "query": np.arange(n_queries),
                    "qx": Q[:, 0],
                    "qy": Q[:, 1],
                    "qz": Q[:, 2],
                    "lon": lon,
                    "lat": lat,
                    "disp_x": Y[:, 0],
                    "disp_y": Y[:, 1],
                    "disp_z": Y[:, 2],
                    "disp_east": y_e,
                    "disp_north": y_n,
                    "drift_east": g_e / beta,
                    "drift_north": g_n / beta,
                    "rho": rho,
                    "m_n": C * n / beta,
                    **prov,
                }
            )
        )
    panels = pd.concat(rows, ignore_index=True)

    betas = np.unique(np.concatenate([sweep, n**exps]))
    g2 = np.einsum("ij,ij->i", G, G)
    beta_tr = st.drift_transition_beta(n, d)
    srows = []
    for beta in betas:
        Y = keys.tangential_displacement(Q, K, beta)
        R = Y - G / beta
        if beta <= beta_tr * (1 + 1e-9):
            M = st.mean_field_x1x2(Q, beta)
            M -= np.einsum("ij,ij->i", M, Q)[:, None] * Q
            dev_mf = float(np.sqrt(np.mean(np.einsum("ij,ij->i", Y - M, Y - M))))
        else:
            dev_mf = np.nan
        cos = np.einsum("ij,ij->i", Y, G) / np.sqrt(np.einsum("ij,ij->i", Y, Y) * g2)
        srows.append(
            {
                "beta": float(beta),
                "n": n,
                "is_panel": bool(np.any(np.isclose(beta, n**exps, rtol=1e-12))),
                "rms_disp": float(np.sqrt(np.mean(np.einsum("ij,ij->i", Y, Y)))),
                "rms_dev_from_drift": float(np.sqrt(np.mean(np.einsum("ij,ij->i", R, R)))),
                "rms_dev_from_mean_field": dev_mf,
                "mean_cos_disp_drift": float(np.mean(cos)),
                "rms_drift_theory": float(np.sqrt(np.mean(g2)) / beta),
                "rms_noise_theory": float(np.sqrt(np.mean(st.noise_trace_d3(n, rho)))),
                "rms_nearest_theory": float(np.sqrt(np.mean(st.nearest_key_tangent_ms(n, C, d)))),
                "beta_drift_transition": st.drift_transition_beta(n, d),
                "beta_critical": st.critical_beta(n, d),
                **prov,
            }
        )
    return panels, pd.DataFrame(srows)


def run_vector_fields(panels_csv, sweep_csv, **kw) -> None:
    """Script entry point of rule ``paper_b_vector_fields``."""
    panels, sweep = vector_fields(**kw)
    save_csv(panels_csv, panels)
    save_csv(sweep_csv, sweep)


# =========================================================================== 2. phase diagram
def phase_column(
    *, n: int, d: int, betas, line_gammas, trials: int, method: str, root_seed: int
) -> pd.DataFrame:
    """Mean ``A_(1)`` over ``trials`` contexts of ``n`` uniform keys, for every beta (paper-b.md §5).

    Rows of ``kind = "grid"`` are the heat-map betas; rows of ``kind = "line"`` are the betas
    ``gamma n^alpha`` for ``gamma`` in ``line_gammas`` (the critical lines of the figure). Each
    context is drawn once and evaluated at every beta (common random numbers along a column of the
    heat map) [choice]; ``q = e_1`` [choice]. ``method`` selects the D2Q sampler
    (:func:`attnscale.keys.sample_d2q_uniform`). Theory columns: ``gamma = beta / n^alpha``,
    ``m_n``, and the subcritical asymptote ``1 / (Gamma(1 + 1/alpha) m_n)``
    (``beta^2 / (1.5 n)`` for d = 5).
    """
    n = check_int("n", n, minimum=1)
    d = check_int("d", d, minimum=2)
    betas = check_vector("betas", betas, low=0.0, low_open=True)
    line_gammas = check_vector("line_gammas", line_gammas, low=0.0, low_open=True)
    trials = check_int("trials", trials, minimum=2)
    params = {
        "n": n, "d": d, "betas": betas.tolist(), "line_gammas": line_gammas.tolist(),
        "trials": trials, "method": method,
    }  # fmt: skip
    key = spawn_key(PHASE_STREAM, d, n)
    rng = job_rng(root_seed, key)
    alpha = st.alpha_exponent(d)
    all_betas = np.concatenate([betas, line_gammas * n**alpha])
    kind = ["grid"] * betas.size + ["line"] * line_gammas.size
    A = np.concatenate(
        [keys.top_weight_from_d2q(T, all_betas) for T in _d2q_blocks(trials, n, d, rng, method)]
    )
    c = st.c_uniform(d)
    m = np.array([st.m_eff(n, b, c, d) for b in all_betas])
    return pd.DataFrame(
        {
            "d": d,
            "n": n,
            "kind": kind,
            "beta": all_betas,
            "gamma": np.concatenate([betas / n**alpha, line_gammas]),
            "trials": trials,
            "method": method,
            "top_weight_mean": A.mean(axis=0),
            "top_weight_se": _se(A),
            "m_n": m,
            "subcritical_asymptote": st.subcritical_top_weight_limit(d) / m,
            **_prov(root_seed, key, params),
        }
    )


def run_phase_column(out_csv, **kw) -> None:
    """Script entry point of rule ``paper_b_phase_column``."""
    save_csv(out_csv, phase_column(**kw))


def poisson_limit_table(*, d: int, gammas, trials: int, root_seed: int) -> pd.DataFrame:
    """Critical limit ``E W_(1)`` (and ``E 1/W_(1)``) of ``A_(1)`` at ``beta = gamma n^alpha``, uniform keys.

    Simulated by :func:`attnscale.sphere_theory.poisson_limit_top_weight` [derived], one
    generator per ``(d, gamma)``. For d = 3 the closed form ``1 + C/gamma`` of ``E 1/W_(1)`` is
    added (paper-b.md §3).
    """
    d = check_int("d", d, minimum=2)
    gammas = check_vector("gammas", gammas, low=0.0, low_open=True)
    trials = check_int("trials", trials, minimum=2)
    c = st.c_uniform(d)
    rows = []
    for g in gammas:
        params = {"d": d, "gamma": float(g), "trials": trials}
        key = spawn_key(LIMIT_STREAM, d, value_id(g))
        w = st.poisson_limit_top_weight(g, c, d, trials, job_rng(root_seed, key))
        rows.append(
            {
                "d": d,
                "gamma": float(g),
                "c": c,
                "trials": trials,
                "top_weight_mean": w.mean(),
                "top_weight_se": _se(w),
                "inv_top_weight_mean": (1 / w).mean(),
                "inv_top_weight_se": _se(1 / w),
                "inv_top_weight_closed_form": st.inv_top_weight_limit_d3(g, c)
                if d == 3
                else np.nan,
                "subcritical_asymptote": st.subcritical_top_weight_limit(d)
                * g ** (1 / st.alpha_exponent(d))
                / c,
                **_prov(root_seed, key, params),
            }
        )
    return pd.DataFrame(rows)


def run_poisson_limit(out_csv, **kw) -> None:
    """Script entry point of rule ``paper_b_poisson_limit``."""
    save_csv(out_csv, poisson_limit_table(**kw))


def run_phase_summary(csv_paths, out_csv) -> None:
    """Script entry point of rule ``paper_b_phase_summary``: one table, sorted by (n, beta)."""
    df = read_csvs(csv_paths).sort_values(["kind", "n", "beta"]).reset_index(drop=True)
    save_csv(out_csv, df)


# =========================================================================== 3. weight profile
def weight_profile(
    *, n: int, d: int, beta_exponent: float, trials: int, method: str, root_seed: int
) -> pd.DataFrame:
    """Mean ordered-weight profile at ``beta = n^{alpha e}`` (paper-b.md §5, Subcritical profile).

    ``n`` uniform keys, ``q = e_1``, ``e = 1/4`` [paper]. For each rank ``k``: mean (and SE over
    ``trials`` contexts) of ``A_(k)/A_(1)`` and of the cumulative mass ``sum_{j<=k} A_(j)``, with
    ``x = k / m_n``, the limits ``exp(-x^alpha)`` and ``P(1/alpha, x^alpha)`` [paper/derived] and
    the finite-beta overlays ``exp(-beta F^{-1}(k/n))`` (spec), its shifted form
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
    s1 = np.zeros(n)
    s2 = np.zeros(n)
    c1 = np.zeros(n)
    c2 = np.zeros(n)
    for T in _d2q_blocks(trials, n, d, rng, method):
        W = keys.ordered_weights_from_d2q(T, beta)
        R = W / W[:, :1]
        M = np.cumsum(W, axis=1)
        s1 += R.sum(axis=0)
        s2 += (R * R).sum(axis=0)
        c1 += M.sum(axis=0)
        c2 += (M * M).sum(axis=0)
    k = np.arange(1, n + 1)
    x = k / m

    def mean_se(a, b):
        mu = a / trials
        var = np.maximum(b / trials - mu * mu, 0.0) * trials / (trials - 1)
        return mu, np.sqrt(var / trials)

    r_mu, r_se = mean_se(s1, s2)
    m_mu, m_se = mean_se(c1, c2)
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
            "ratio_mean": r_mu,
            "ratio_se": r_se,
            "ratio_limit": st.profile_limit(x, d),
            "ratio_finite_beta": st.profile_finite_beta(k, n, beta, d),
            "ratio_finite_beta_shifted": st.profile_finite_beta(k, n, beta, d, shifted=True),
            "mass_mean": m_mu,
            "mass_se": m_se,
            "mass_limit": st.cumulative_mass_limit(x, d),
            "mass_finite_beta": st.cumulative_mass_finite_beta(n, beta, d),
            **_prov(root_seed, key, params),
        }
    )


def run_profile(out_csv, **kw) -> None:
    """Script entry point of rule ``paper_b_profile``."""
    save_csv(out_csv, weight_profile(**kw))


# =========================================================================== 4. critical laws
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
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Law of ``A_(1)`` at ``beta = gamma n^alpha`` and of ``n^alpha T_(1)`` for growing n (ours).

    Uniform keys, ``q = e_1``; for each ``n`` one generator, each context evaluated at every gamma
    (common random numbers) [choice]. Limits: the Poisson limit ``W_(1)`` by simulation with
    ``limit_trials`` samples (paper-b.md §3 [derived]) and the Weibull law
    ``P(n^alpha T_(1) > s) = exp(-C s^{1/alpha})`` (§4 [paper]); for the nearest key also the exact
    finite-n law ``(1 - F(s/n^alpha))^n`` [derived].

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        ECDF table on fixed grids (``stat`` = ``top_weight`` or ``nearest_scaled``; ``source`` =
        ``finite_n``, ``poisson_limit``, ``weibull_limit`` or ``exact_finite_n``) and a summary with
        means, SEs and Kolmogorov-Smirnov distances (two-sample against the simulated limit for
        ``A_(1)``, one-sample against the Weibull and the exact law for the nearest key).
    """
    from scipy import stats  # imported here: ~0.4 s that the other jobs do not need

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

    def ecdf(sample, grid):
        return np.searchsorted(np.sort(sample), grid, side="right") / sample.size

    ecdf_rows, summ = [], []
    limits, lim_prov = {}, {}
    for g in gammas:
        key = spawn_key(CRIT_LIMIT_STREAM, d, value_id(g))
        lim_prov[float(g)] = _prov(root_seed, key, {**base, "gamma": float(g)})
        limits[float(g)] = st.poisson_limit_top_weight(
            g, c, d, limit_trials, job_rng(root_seed, key)
        )
    samples = {}
    progress = Progress("critical-law context sizes", len(ns))
    for n in ns:
        key = spawn_key(CRIT_STREAM, d, n)
        rng = job_rng(root_seed, key)
        betas = gammas * n**alpha
        A, s = [], []
        for T in _d2q_blocks(trials, n, d, rng, method):
            A.append(keys.top_weight_from_d2q(T, betas))
            s.append(T.min(axis=1) * n**alpha)
        prov = _prov(root_seed, key, {**base, "n": n, "gammas": gammas.tolist()})
        samples[n] = (np.concatenate(A), np.concatenate(s), betas, prov)
        progress.step()
    # A_(1) grid per gamma: [0, top], top = the 99.9% quantile over all samples, rounded up to
    # a multiple of 0.05 (so narrow laws, e.g. d = 5 and small gamma, are resolved)
    grids = {}
    for j, g in enumerate(gammas):
        q999 = max(
            [np.quantile(limits[float(g)], 0.999)]
            + [np.quantile(samples[n][0][:, j], 0.999) for n in ns]
        )
        grids[float(g)] = np.linspace(0.0, min(1.0, np.ceil(q999 / 0.05) * 0.05), grid_points)
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
                    "cdf": ecdf(w, a_grid),
                    **prov,
                }
            )  # fmt: skip
        )
        summ.append(
            {"d": d, "n": 0, "gamma": float(g), "stat": "top_weight", "source": "poisson_limit",
             "samples": limit_trials, "mean": w.mean(), "se": _se(w), **prov}
        )  # fmt: skip
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
                "root_seed": None,
                "spawn_key": None,
                "params_hash": None,
            }
        )  # fmt: skip
    )
    for n in ns:
        A, s, betas, prov = samples[n]
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
                        "cdf": ecdf(A[:, j], a_grid),
                        **prov,
                    }
                )  # fmt: skip
            )
            summ.append(
                {"d": d, "n": n, "gamma": float(g), "beta": float(betas[j]), "stat": "top_weight",
                 "source": "finite_n", "samples": trials, "mean": A[:, j].mean(),
                 "se": _se(A[:, j]), "limit_mean": limits[float(g)].mean(),
                 "limit_se": _se(limits[float(g)]), "ks_vs_limit": ks.statistic,
                 "ks_pvalue": ks.pvalue, **prov}
            )  # fmt: skip
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
                    "cdf": ecdf(s, s_grid),
                    **prov,
                }
            )  # fmt: skip
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
            )  # fmt: skip
        )
        summ.append(
            {"d": d, "n": n, "gamma": np.nan, "stat": "nearest_scaled", "source": "finite_n",
             "samples": trials, "mean": s.mean(), "se": _se(s),
             "limit_mean": special.gamma(1 + alpha) * c ** (-alpha),
             "ks_vs_limit": ks_lim.statistic, "ks_pvalue": ks_lim.pvalue,
             "ks_vs_exact": ks_ex.statistic, "ks_exact_pvalue": ks_ex.pvalue, **prov}
        )  # fmt: skip
    return pd.concat(ecdf_rows, ignore_index=True), pd.DataFrame(summ)


def run_critical_laws(ecdf_csv, summary_csv, **kw) -> None:
    """Script entry point of rule ``paper_b_critical_laws``."""
    e, s = critical_laws(**kw)
    save_csv(ecdf_csv, e)
    save_csv(summary_csv, s)


# =========================================================================== 5. heat drift
def contexts_needed(
    beta: float, n: int, q, target_se: float, min_contexts: int, max_contexts: int
) -> int:
    """Contexts so that the ratio's SE is about ``target_se`` [choice, planning only].

    One context gives the ratio ``<beta P_q ATT, g> / |g|^2`` with standard deviation
    ``beta / |g| / sqrt(8 pi n rho(q))`` (d = 3 noise, paper-b.md §4 [derived]); the count is
    clipped to ``[min_contexts, max_contexts]``.
    """
    q = np.asarray(q, dtype=float)
    g = np.linalg.norm(st.score_x1x2(q))
    rho_q = float(st.density_x1x2(q[None, :])[0])
    sd = beta / g / np.sqrt(8 * np.pi * n * rho_q)
    return int(np.clip(np.ceil((sd / target_se) ** 2), min_contexts, max_contexts))


def heat_drift(
    *,
    beta: float,
    n: int,
    q,
    target_se: float,
    min_contexts: int,
    max_contexts: int,
    cut: float,
    root_seed: int,
) -> pd.DataFrame:
    """``beta P_q ATT_n(q)`` against ``grad_S log rho(q)`` at one beta, one row per context (ours).

    Keys from ``rho ∝ exp(x1 x2)`` on S^2 (paper-b.md §4, §5). Only the keys with
    ``T <= t_c = min(2, (cut + log n) / beta)`` are drawn (exact in law,
    :func:`attnscale.keys.sample_x1x2_cap`); the others weigh at most ``e^{-cut}/n`` each relative
    to the top key, and the bound on their total relative mass is recorded
    (``neglected_mass_bound``). Columns: ``ratio = <beta P_q ATT, g> / |g|^2``, ``perp`` (signed
    component along ``q x g / |g|``, over ``|g|``), ``normal = beta (<ATT, q> - 1)`` (-> -1/alpha).
    """
    beta = check_real("beta", beta, low=0.0, low_open=True)
    n = check_int("n", n, minimum=2)
    q = check_vector("q", q)
    q = q / np.linalg.norm(q)
    cut = check_real("cut", cut, low=0.0, low_open=True)
    target_se = check_real("target_se", target_se, low=0.0, low_open=True)
    min_contexts = check_int("min_contexts", min_contexts, minimum=2)
    max_contexts = check_int("max_contexts", max_contexts, minimum=min_contexts)
    R = contexts_needed(beta, n, q, target_se, min_contexts, max_contexts)
    t_c = float(min(2.0, (cut + np.log(n)) / beta))
    params = {
        "beta": beta, "n": n, "q": q.tolist(), "target_se": target_se,
        "min_contexts": min_contexts, "max_contexts": max_contexts, "cut": cut,
    }  # fmt: skip
    key = spawn_key(HEAT_STREAM, value_id(beta), n)
    rng = job_rng(root_seed, key)
    g = st.score_x1x2(q)
    g2 = float(g @ g)
    e_perp = np.cross(q, g) / np.sqrt(g2)
    rows = []
    progress = Progress(f"heat drift contexts (beta = {beta:g})", R)
    for r in range(R):
        if r:
            progress.step()  # context r - 1 is done
        X, T = keys.sample_x1x2_cap(n, q, t_c, rng)
        tmin = T.min()
        w = np.exp(-beta * (T - tmin))
        att = (w @ X) / w.sum()
        tang = beta * (att - (att @ q) * q)
        rows.append(
            {
                "beta": beta,
                "n": n,
                "context": r,
                "contexts": R,
                "t_c": t_c,
                "keys_in_cap": T.size,
                "ratio": float(tang @ g) / g2,
                "perp": float(tang @ e_perp) / np.sqrt(g2),
                "normal": float(beta * (att @ q - 1.0)),
                "neglected_mass_bound": float((n - T.size) * np.exp(-beta * (t_c - tmin)) / w.sum())
                if t_c < 2.0
                else 0.0,
            }
        )
    progress.step()
    df = pd.DataFrame(rows)
    for k, v in _prov(root_seed, key, params).items():
        df[k] = v
    return df


def run_heat_drift(out_csv, **kw) -> None:
    """Script entry point of rule ``paper_b_heat_drift``."""
    save_csv(out_csv, heat_drift(**kw))


def heat_drift_summary(rows: pd.DataFrame, q, theory_betas) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-beta mean and SE of the heat-drift table, with the ``n = inf`` quadrature [derived].

    Also ``beta (ratio - 1)`` (the O(1/beta) correction) for simulation and quadrature, and a
    dense quadrature curve over ``theory_betas``.
    """
    q = np.asarray(q, dtype=float)
    q = q / np.linalg.norm(q)
    out = []
    for beta, sub in rows.groupby("beta", sort=True):
        th = st.heat_drift_limit_x1x2(q, beta)
        out.append(
            {
                "beta": beta,
                "n": int(sub["n"].iloc[0]),
                "contexts": len(sub),
                "ratio_mean": sub["ratio"].mean(),
                "ratio_se": _se(sub["ratio"]),
                "perp_mean": sub["perp"].mean(),
                "perp_se": _se(sub["perp"]),
                "normal_mean": sub["normal"].mean(),
                "normal_se": _se(sub["normal"]),
                "ratio_quadrature": th["ratio"],
                "normal_quadrature": th["normal"],
                "max_neglected_mass_bound": sub["neglected_mass_bound"].max(),
                "root_seed": sub["root_seed"].iloc[0],
                "spawn_key": sub["spawn_key"].iloc[0],
                "params_hash": sub["params_hash"].iloc[0],
                "attnscale_version": sub["attnscale_version"].iloc[0],
                "git_commit": sub["git_commit"].iloc[0],
            }
        )
    summ = pd.DataFrame(out)
    tb = check_vector("theory_betas", theory_betas, low=0.0, low_open=True)
    curve = pd.DataFrame(
        [
            {
                "beta": b,
                "ratio_quadrature": (th := st.heat_drift_limit_x1x2(q, b))["ratio"],
                "normal_quadrature": th["normal"],
                "correction_quadrature": b * (th["ratio"] - 1.0),
            }
            for b in tb
        ]
    )
    prov = provenance(None, None, {"q": np.asarray(q, float).tolist(), "theory_betas": tb.tolist()})
    for k in ("params_hash", "attnscale_version", "git_commit"):
        curve[k] = prov[k]  # deterministic quadrature: no seed
    return summ, curve


def run_heat_drift_summary(csv_paths, summary_csv, curve_csv, *, q, theory_betas) -> None:
    """Script entry point of rule ``paper_b_heat_drift_summary``."""
    summ, curve = heat_drift_summary(read_csvs(csv_paths), q, theory_betas)
    save_csv(summary_csv, summ)
    save_csv(curve_csv, curve)
