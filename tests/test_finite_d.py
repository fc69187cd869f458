"""Independent checks of the finite-d theory (docs/finite-d.md).

Every public function of :mod:`attnscale.layer.finite_d` is compared with a computation that shares
none of its quadrature: brute-force simulation with the real token generator, scipy.integrate
of a different representation, closed forms in a limit. Tolerances are k * SE (SE computed from
the draws) plus the stated quadrature error (docs/finite-d.md#exact-self-weight).
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import gammaln, log_ndtr

import attnscale.layer.finite_d as fd
from attnscale.core.seeding import job_rng, spawn_key
from attnscale.layer.finite_d import approx, laws
from attnscale.layer.tokens import near_simplex

ROOT = 20261130
QUAD_ERR = 3e-4  # measured |standard - fine| <= 1.1e-4 on 9 (n, d, rho) cases; 3x margin
Z = 4.0  # two-sided normal quantile for the statistical tolerances (p ~ 6e-5 per check)


def _rng(*ids):
    return job_rng(ROOT, spawn_key("test_finite_d", *ids))


def _unit_rows(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _draw_self_weight(Y, beta, rows):
    """Mean of A_ii over the query rows ``rows`` against all keys (row subsampling)."""
    S = np.exp(beta * (Y[rows] @ Y.T - 1.0))  # self term is exp(0) = 1, no overflow
    return float(np.mean(1.0 / S.sum(axis=1)))


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: fd.self_weight(100, 2, 0.5, 1.0), "d"),
        (lambda: fd.self_weight(100, 4097, 0.5, 1.0), "d"),
        (lambda: fd.self_weight(100, 8.0, 0.5, 1.0), "d"),
        (lambda: fd.self_weight(1, 8, 0.5, 1.0), "n"),
        (lambda: fd.self_weight(10**7 + 1, 8, 0.5, 1.0), "n"),
        (lambda: fd.self_weight(100.5, 8, 0.5, 1.0), "n"),
        (lambda: fd.self_weight(100, 8, 1.0, 1.0), "rho"),
        (lambda: fd.self_weight(100, 8, -0.1, 1.0), "rho"),
        (lambda: fd.self_weight(100, 8, 0.5, -1.0), "beta"),
        (lambda: fd.self_weight(100, 8, 0.5, [1.0, np.inf]), "beta"),
        (lambda: fd.self_weight(100, 8, 0.5, np.nan), "beta"),
        (lambda: fd.self_weight_given(100, 8, 0.5, 1.0, 0.0), "r0"),
        (lambda: fd.critical_beta(100, 3000.5, 0.5), "d"),
        (lambda: fd.critical_gamma(100, 8, 1.5), "rho"),
        (lambda: fd.annealed_critical_beta(0, 8, 0.5), "n"),
        (lambda: fd.first_order_critical_beta(100, 1, 0.5), "d"),
        (lambda: fd.mean_field(100, 8, 0.5, -2.0), "beta"),
        (lambda: fd.mean_field(100, 8, 0.5, 1.0, alpha=0.5), "alpha"),
        (lambda: fd.mean_field_given(100, 8, 0.5, 1.0, -1.0), "r0"),
        (lambda: fd.check_args(100, 8, float("nan")), "rho"),
        (lambda: fd.self_weight(100, 8, 0.5, 1.0, quadrature="coarse"), "quadrature"),
    ],
)
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError, match=rf"^{name} "):
        call()


def test_check_args_normalises():
    assert fd.check_args(1e6, 64, 0) == (10**6, 64, 0.0)
    n, d, rho, b = fd.check_args(100, 8, 0.25, [0, 1])
    assert b.dtype == np.float64 and b.shape == (2,)


# ---------------------------------------------------------------- exact self-weight


@pytest.mark.parametrize(
    "n, d, rho, gscale",
    [
        (64, 8, 0.5, 1.0),
        (128, 32, 0.3, 0.8),
        (128, 4, 0.7, 1.0),
        (256, 128, 0.5, 1.2),
        (96, 6, 0.0, 1.0),
    ],
)
def test_self_weight_against_brute_force(n, d, rho, gscale):
    """Plain Monte Carlo with attnscale.layer.tokens.near_simplex (rho > 0) or Gaussian directions (rho = 0)."""
    beta = gscale * fd.critical_beta(n, d, rho)
    theory = fd.self_weight(n, d, rho, beta)
    rng = _rng(n, d, int(rho * 100))
    draws = 800 if n <= 128 else 300
    vals = np.empty(draws)
    rows = np.arange(n)
    for k in range(draws):
        X = near_simplex(n, d, rho, rng) if rho > 0 else rng.standard_normal((n, d))
        vals[k] = _draw_self_weight(_unit_rows(X), beta, rows)
    se = vals.std(ddof=1) / np.sqrt(draws)
    assert abs(vals.mean() - theory) <= Z * se + QUAD_ERR, (vals.mean(), se, theory)


def _log_survival_ncx2(y, d, kappa, tau_i):
    """``ln P(1 - c < y | R_0, tau_i)`` from a different representation (docs/finite-d.md#conditional-structure).

    With ``a = <x_j, y_i>`` normal and ``||x_j - a y_i||^2`` a scaled noncentral chi-square
    ``W`` (d - 1 degrees of freedom, noncentrality ``kappa^2 sigma_i^2``),
    ``P(c > x) = E_W[Phi(kappa tau_i - x sqrt(W) / sqrt(1 - x^2))]``, integrated with quad in
    ``u = sqrt(W)``.
    """
    x = 1.0 - y
    a = x / np.sqrt(y * (2.0 - y))
    lam = (kappa * np.sqrt(1.0 - tau_i**2)) ** 2
    m = np.sqrt(d - 1 + lam)

    def lg(u):
        return (
            stats.ncx2.logpdf(u * u, d - 1, lam) + np.log(2 * u) + log_ndtr(kappa * tau_i - a * u)
        )

    us = max(kappa * tau_i / a, 0.0)
    edges = sorted({0.0, us, us + 10.0 / abs(a), m, m + 12.0})
    grid = np.concatenate(
        [np.linspace(1e-9, m + 12.0, 200), np.linspace(1e-12, us + 20.0 / abs(a), 200)]
    )
    ref = max(lg(g) for g in grid)
    tot = sum(
        integrate.quad(lambda u: np.exp(lg(u) - ref), lo, hi, limit=200, epsrel=1e-9, epsabs=0)[0]
        for lo, hi in zip(edges[:-1], edges[1:], strict=False)
    )
    return np.log(tot) + ref


@pytest.mark.parametrize(
    "d, rho, r0, q",
    [(3, 0.3, 1.0, 0.5), (8, 0.5, 0.8, 0.9), (32, 0.5, 1.1, 0.2), (512, 0.5, 1.0, 0.5)],
)
def test_score_law_against_noncentral_chi2(d, rho, r0, q):
    """The tabulated score quantiles y(v) satisfy P(1 - c < y(v)) = e^{-v} (a different route)."""
    law = laws.tau_law(d, rho, r0)
    tau_i = float(law.quantile(np.array([q]))[0])
    y = laws.score_quantiles(d, rho, law, tau_i, "standard")
    v, _ = laws.v_nodes("standard")
    with np.errstate(all="ignore"):
        for k in (5, 40, 100):
            if y[k] < 1e-10:  # the reference's quad cannot resolve the cap below this
                continue
            err = -_log_survival_ncx2(y[k], d, law.kappa, tau_i) - v[k]
            # 2e-3 in v = 0.2 % in the tail probability: interpolation + panel error
            assert abs(err) < 2e-3, (k, v[k], y[k], err)


@pytest.mark.parametrize("d, n, beta", [(5, 100, 12.0), (3, 1000, 300.0), (40, 5000, 9.0)])
def test_uniform_sphere_self_weight_by_quad(d, n, beta):
    """rho = 0: the Laplace formula with the closed-form score density, by scipy.integrate.quad."""
    log_cd = gammaln(d / 2) - 0.5 * np.log(np.pi) - gammaln((d - 1) / 2)

    def phi(s):
        def f(c):
            dens = np.exp(log_cd + (d - 3) / 2 * np.log1p(-c * c))
            return dens * -np.expm1(-s * np.exp(beta * (c - 1.0)))

        pts = [1.0 - k / beta for k in (1, 5, 20, 80) if 1.0 - k / beta > -1.0]
        return sum(
            integrate.quad(f, lo, hi, limit=200, epsabs=1e-16)[0]
            for lo, hi in zip([-1.0] + pts, pts + [1.0], strict=False)
        )

    def integrand(t):
        return np.exp(t - np.exp(t) + (n - 1) * np.log1p(-phi(np.exp(t))))

    ref = integrate.quad(integrand, -60.0, 5.0, limit=200, points=[-20, -10, -5, 0])[0]
    assert abs(fd.self_weight(n, d, 0.0, beta) - ref) < QUAD_ERR


def test_quadrature_resolution():
    """Standard against fine quadrature (every resolution doubled), conditioned on R_0."""
    for n, d, rho, r0, g in [(4096, 8, 0.5, 0.9, 1.0)]:
        beta = g * fd.critical_beta(n, d, rho)
        std = fd.self_weight_given(n, d, rho, beta, r0)
        fine = fd.self_weight_given(n, d, rho, beta, r0, quadrature="fine")
        assert abs(std - fine) < QUAD_ERR, (d, std, fine)


def test_r0_average_converged():
    """The 6-node normal-score rule in R_0 against 12 nodes built from self_weight_given."""
    n, d, rho = 2048, 16, 0.5
    beta = fd.critical_beta(n, d, rho)
    r0s, w = laws.r0_nodes(d, 12)
    ref = sum(
        wk * fd.self_weight_given(n, d, rho, beta, float(r)) for r, wk in zip(r0s, w, strict=False)
    )
    assert abs(fd.self_weight(n, d, rho, beta) - ref) < QUAD_ERR


def test_monotone_in_beta():
    for d, rho in [(4, 0.5), (64, 0.2)]:
        b = np.linspace(0.0, 3.0, 7) * fd.paper_a_asymptote_beta(1000, rho)
        a = fd.self_weight(1000, d, rho, b)
        assert np.all(np.diff(a) > 0) and abs(a[0] - 1e-3) < 1e-9  # beta = 0: A_ii = 1/n


# ---------------------------------------------------------------- critical point


CRIT_CASES = [(d, n, rho) for d in (4, 8, 32, 128) for n in (256, 2048) for rho in (0.0, 0.5)]


def test_simulated_self_weight_at_critical_beta():
    """Issue acceptance: at beta = critical_beta the simulated mean A_ii is within 0.02 of 1/2.

    rho > 0: ||z_0|| is stratified (24 equal-probability strata of chi_d / sqrt(d), two draws per
    stratum, uniform direction), an unbiased estimate of the plain average whose SE comes from
    the within-stratum variances. Keys: all n tokens; queries: 128 rows per draw.
    """
    rows = 128
    for d, n, rho in CRIT_CASES:
        beta = fd.critical_beta(n, d, rho)
        rng = _rng(d, n, int(rho * 100), 1)
        per = np.empty((24, 2))
        for k in range(24):
            for r in range(2):
                G = rng.standard_normal((n, d)) / np.sqrt(d)
                if rho > 0:
                    r0 = np.sqrt(stats.chi2.ppf((k + rng.random()) / 24, d) / d)
                    u = _unit_rows(rng.standard_normal((1, d)))[0]
                    X = np.sqrt(rho) * r0 * u + np.sqrt(1.0 - rho) * G
                else:
                    X = G
                per[k, r] = _draw_self_weight(_unit_rows(X), beta, np.arange(rows))
        mean = per.mean()
        se = np.sqrt(np.sum(per.var(axis=1, ddof=1) / 2)) / 24
        assert se < 0.006, (d, n, rho, se)  # the acceptance bound 0.02 must be > 3 SE
        assert abs(mean - 0.5) < 0.02, (d, n, rho, mean, se)
        assert abs(mean - 0.5) < Z * se + QUAD_ERR, (d, n, rho, mean, se)


def test_critical_beta_cost():
    """One cold call (new (d, rho): tables built) in well under a second of CPU."""
    laws.table.cache_clear()
    t0 = time.process_time()
    fd.critical_beta(100_000, 96, 0.35)
    cold = time.process_time() - t0
    t0 = time.process_time()
    fd.critical_beta(1_000_000, 96, 0.35)
    warm = time.process_time() - t0
    assert cold < 1.5 and warm < 0.5, (cold, warm)


def test_large_d_limits():
    """As d grows at fixed n: annealed -> first order, and beta* / ln n -> 1 / (1 - rho)."""
    n, rho = 1024, 0.5
    gaps = []
    for d in (512, 4096):
        fo = fd.first_order_critical_beta(n, d, rho)
        gaps.append(abs(fd.annealed_critical_beta(n, d, rho) / fo - 1))
        ex = fd.critical_beta(n, d, rho)
        # first order neglects O(beta / d) corrections: relative O(1/d)
        assert abs(ex / fo - 1) < 4.0 / d, (d, ex, fo)
    assert gaps[1] < gaps[0] / 4 and gaps[1] < 2e-3, gaps  # the gap shrinks like 1/d
    g = fd.critical_gamma(n, 4096, rho) * (1 - rho)
    assert abs(g - 1) < 0.01, g  # first-order shift at d = 4096 is ~0.1 %; ln(n-1)/ln n ~ 1e-4


def test_power_law_asymptote_rho0():
    """rho = 0, ln n >> d: beta* -> (K_d (n-1) / Lambda*_d)^{2/(d-1)} (Poisson near-neighbour limit)."""
    for d, n in [(3, 10**6), (4, 10**7)]:
        ratio = fd.critical_beta(n, d, 0.0) / fd.power_law_beta(n, d)
        assert abs(ratio - 1) < 2e-3, (d, n, ratio)
    # and far from it at d = 64 (the gap regime)
    assert fd.critical_beta(4096, 64, 0.0) < 0.5 * fd.power_law_beta(4096, 64)


# ---------------------------------------------------------------- approximations


@pytest.mark.parametrize("d, beta", [(3, 40.0), (8, 15.0), (64, 9.0), (1000, 30.0)])
def test_annealed_mgf_uniform_closed_form(d, beta):
    """rho = 0 formula against quad of the uniform score density, and the vMF route at rho -> 0."""
    log_cd = gammaln(d / 2) - 0.5 * np.log(np.pi) - gammaln((d - 1) / 2)
    f = lambda c: np.exp(log_cd + (d - 3) / 2 * np.log1p(-c * c) + beta * (c - 1))  # noqa: E731
    cs = np.clip(beta / (d - 3 + beta), -0.9, 0.9)  # the tilted mode, width ~ 1 / sqrt(d)
    pts = sorted(p for p in (1 - 5 / beta, 1 - 1 / beta, cs - 0.2, cs, cs + 0.2) if -1 < p < 1)
    ref = np.log(integrate.quad(f, -1, 1, points=pts, limit=400, epsabs=0, epsrel=1e-12)[0])
    assert abs(approx.log_annealed_mgf(d, 0.0, beta) - ref) < 1e-8
    # the general (tau_i, tau_j, vMF) route reduces to the same number when rho -> 0
    assert abs(approx.log_annealed_mgf(d, 1e-12, beta) - ref) < 2e-3


def test_log_vmf_branches():
    """log E[e^{k w}] against its power series sum_m (k^2/4)^m / (m! (nu+1)_m), both branches.

    At nu = 200 and k <= 20 ``ive`` underflows and the Debye branch is used; at nu = 30 the
    direct branch. The series (80 terms) converges to double precision for k^2/4 << 80 nu.
    """

    def series(nu, k):
        m = np.arange(80)
        logt = m * np.log(k * k / 4.0) - gammaln(m + 1) - (gammaln(nu + 1 + m) - gammaln(nu + 1))
        return np.log(np.sum(np.exp(logt)))

    for nu in (30.0, 200.0):
        for k in (1e-3, 0.5, 5.0, 20.0):
            assert abs(approx.log_vmf(nu, np.array([k]))[0] - series(nu, k)) < 1e-9, (nu, k)
    assert abs(approx.log_vmf(2.5, np.array([1e-7]))[0] - 1e-14 / 14) < 1e-20


def test_first_order_variance_is_within_row_variance():
    """s^2 = Var_j(c_ij | z_0, i) at first order: Monte Carlo at d = 2048 (d * Var -> formula)."""
    d, rho, n = 2048, 0.5, 1500
    rng = _rng(2048, 1)
    vals = []
    for _ in range(8):
        Y = _unit_rows(near_simplex(n, d, rho, rng))
        c = Y[1:] @ Y[0]
        vals.append(c.var(ddof=1) * d)
    vals = np.array(vals)
    formula = fd.first_order_variance(d, rho) * d
    # across-draw spread (tau_i, z_0 vary) plus O(1/sqrt(d)) corrections; total variance differs
    assert abs(vals.mean() - formula) < 0.03 * formula, (vals.mean(), formula)
    assert abs(vals.mean() - approx.total_variance(d, rho) * d) > 0.2 * formula


def test_first_order_matches_quadratic():
    n, d, rho = 1024, 128, 0.5
    b = fd.first_order_critical_beta(n, d, rho)
    s2 = fd.first_order_variance(d, rho)
    assert abs(b * (1 - rho) - b * b * s2 / 2 - np.log(n - 1)) < 1e-10
    assert np.isnan(fd.first_order_critical_beta(10**6, 4, 0.5))  # no real root: breakdown


def test_mean_field_against_simulation():
    """Mean field at d = 1024, n = 256, beta = beta*: a_ii, cos and lambda within 4 SE of brute force."""
    n, d, rho = 256, 1024, 0.5
    beta = fd.critical_beta(n, d, rho)
    mf = fd.mean_field(n, d, rho, beta)
    rng = _rng(n, d, 7)
    sims = {"a_ii": [], "cos": [], "lambda": []}
    iu = np.triu_indices(n, 1)
    for _ in range(16):
        Y = _unit_rows(near_simplex(n, d, rho, rng))
        G = Y @ Y.T
        A = np.exp(beta * (G - 1.0))
        A /= A.sum(axis=1, keepdims=True)
        Yp = _unit_rows(A @ Y)
        Gp = Yp @ Yp.T
        sims["a_ii"].append(np.diag(A).mean())
        sims["cos"].append(Gp[iu].mean())
        sims["lambda"].append(np.mean((1 - Gp[iu]) / (1 - G[iu])))
    for key, v in sims.items():
        v = np.array(v)
        se = v.std(ddof=1) / np.sqrt(v.size)
        assert abs(v.mean() - mf[key]) < Z * se, (key, v.mean(), se, mf[key])
    # the mean-field a_ii is the annealed-within-row value; at large d it meets the exact one
    assert abs(mf["a_ii"] - fd.self_weight(n, d, rho, beta)) < 0.01


def test_mean_field_given_averages_to_mean_field():
    """Conditioned on R_0 at the normal-score nodes and re-averaged, it is the unconditioned one."""
    n, d, rho, beta = 512, 256, 0.4, 12.0
    r0s, w = laws.r0_nodes(d, laws.QUADRATURE_PRESETS["standard"]["n_r0"])
    parts = [fd.mean_field_given(n, d, rho, beta, float(r)) for r in r0s]
    mf = fd.mean_field(n, d, rho, beta)
    for key in ("a_ii", "cos", "lambda"):
        avg = sum(wk * float(p[key]) for wk, p in zip(w, parts, strict=True))
        assert abs(avg - float(mf[key])) < 1e-12, key
