"""Closed forms and limit laws of :mod:`attnscale.sphere.theory` (docs/paper-b.md).

Exact quantities are compared at floating-point tolerance; Monte Carlo quantities within 4
standard errors (the SE is stated at each check), plus, where a finite-n or finite-m bias of
known order exists, that bias bound (stated). All generators are seeded.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from attnscale.sphere import keys
from attnscale.sphere import poisson_limit as pl
from attnscale.sphere import quadrature as sq
from attnscale.sphere import theory as st

KS_C = 1.949  # 0.1% critical value of the Kolmogorov distribution


def rng(*ids):
    return np.random.default_rng(np.random.SeedSequence(20260509, spawn_key=ids))


def mean_se(v):
    v = np.asarray(v, dtype=float)
    return v.mean(), v.std(ddof=1) / np.sqrt(v.size)


# --------------------------------------------------------------------------- constants
@pytest.mark.parametrize("d, value", [(2, 0.4502), (3, 0.5), (4, 0.6002), (5, 0.75)])
def test_c_uniform_reference_values(d, value):
    assert st.c_uniform(d) == pytest.approx(value, abs=5e-5)
    # the general formula with rho = 1 / |S^{d-1}| gives the same constant
    assert st.c_density(1 / st.sphere_area(d), d) == pytest.approx(st.c_uniform(d), rel=1e-13)
    # and it is the local-law constant of the exact F
    assert st.d2q_cdf_uniform(1e-8, d) / 1e-8 ** ((d - 1) / 2) == pytest.approx(
        st.c_uniform(d), rel=1e-6
    )


def test_exact_f_closed_forms_and_inverse():
    t = np.linspace(0, 2, 41)
    np.testing.assert_allclose(st.d2q_cdf_uniform(t, 3), t / 2, atol=1e-15)
    np.testing.assert_allclose(
        st.d2q_cdf_uniform(t, 5), 3 * (t / 2) ** 2 - 2 * (t / 2) ** 3, atol=1e-15
    )
    u = np.linspace(0, 1, 23)
    for d in (3, 4, 5, 8):
        np.testing.assert_allclose(st.d2q_cdf_uniform(st.d2q_ppf_uniform(u, d), d), u, atol=1e-13)
    with pytest.raises(ValueError, match="u must lie"):
        st.d2q_ppf_uniform([1.5], 3)


def test_alpha_and_scales():
    assert st.alpha_exponent(3) == 1.0 and st.alpha_exponent(5) == 0.5
    assert st.critical_scale(1e4, 3) == pytest.approx(1e4)
    assert st.critical_scale(1e4, 5, 2.0) == pytest.approx(200.0)
    assert st.drift_transition_beta(1e4, 3) == pytest.approx(100.0)
    # m_n = C n beta^{-1/alpha}: the d = 5 profile of docs/paper-b.md has m_n ≈ 133
    assert st.m_eff(1000, 1000 ** (1 / 8), 0.75, 5) == pytest.approx(133.4, abs=0.05)
    with pytest.raises(ValueError, match="beta"):
        st.m_eff(10, 0.0, 0.5, 3)


def test_normaliser_x1x2():
    z = st.normaliser_x1x2(3)
    assert z == pytest.approx(12.9903, abs=5e-5)  # docs/paper-b.md
    # independent closed-ish form: Z = 2 pi int_{-1}^{1} I_0((1 - u^2) / 2) du
    ref = 2 * np.pi * integrate.quad(lambda u: special.i0((1 - u * u) / 2), -1, 1, epsabs=1e-14)[0]
    assert z == pytest.approx(ref, rel=1e-13)
    # d = 2: Z = int_0^{2 pi} exp(sin(2 phi) / 2) dphi = 2 pi I_0(1/2)
    assert st.normaliser_x1x2(2) == pytest.approx(2 * np.pi * special.i0(0.5), rel=1e-13)


def test_c_x1x2_range():
    lo = st.c_x1x2(np.array([1.0, -1.0, 0.0]) / np.sqrt(2))
    hi = st.c_x1x2(np.array([1.0, 1.0, 0.0]) / np.sqrt(2))
    assert lo == pytest.approx(0.2934, abs=5e-5) and hi == pytest.approx(0.7975, abs=5e-5)
    Q = keys.fibonacci_sphere(200)
    c = [st.c_x1x2(q) for q in Q]
    assert lo - 1e-12 <= min(c) and max(c) <= hi + 1e-12


def test_score_is_the_riemannian_gradient():
    Q = keys.fibonacci_sphere(50)
    G = st.score_x1x2(Q)
    np.testing.assert_allclose(np.einsum("ij,ij->i", G, Q), 0.0, atol=1e-15)
    h = 1e-5
    for q, g in zip(Q, G, strict=True):
        e1, e2 = st.tangent_frame(q)
        for e in (e1, e2):
            xp = np.cos(h) * q + np.sin(h) * e  # geodesic through q with velocity e
            xm = np.cos(h) * q - np.sin(h) * e
            fd = (xp[0] * xp[1] - xm[0] * xm[1]) / (2 * h)
            assert g @ e == pytest.approx(fd, abs=1e-9)


def test_drift_parts():
    q = np.ones(3) / np.sqrt(3)
    g = st.score_x1x2(q)
    v = st.drift(q, g, 3, 20.0)
    np.testing.assert_allclose(v - (v @ q) * q, g / 20, atol=1e-16)
    assert v @ q == pytest.approx(-1 / 20)  # -1 / (alpha beta), alpha = 1
    assert st.drift(q, g, 5, 20.0) @ q == pytest.approx(-2 / 20)


# --------------------------------------------------------------------------- Poisson limit
@pytest.mark.parametrize("gamma", [0.3, 1.0, 3.0])
def test_poisson_limit_d3_closed_form(gamma):
    """d = 3: E[1 / W_(1)] = 1 + C / gamma exactly (docs/paper-b.md)."""
    c = st.c_uniform(3)
    w = pl.poisson_limit_top_weight(gamma, c, 3, 20_000, rng(1, int(10 * gamma)))
    m, se = mean_se(1 / w)
    assert abs(m - pl.inv_top_weight_limit_d3(gamma, c)) < 4 * se, (m, se)
    # negative control: the d = 5 process at the same gamma is far from 1 + C/gamma
    w5 = pl.poisson_limit_top_weight(gamma, st.c_uniform(5), 5, 4_000, rng(2))
    m5, se5 = mean_se(1 / w5)
    assert abs(m5 - (1 + st.c_uniform(5) / gamma)) > 4 * se5


def test_poisson_limit_matches_untruncated_simulation():
    """Our truncated simulator (tail replaced by its mean) against the plain one: all arrival
    times Gamma_k up to Y > 40, no approximation (d = 5, gamma = 1: ~1200 points per trial)."""
    c, gamma, trials = 0.75, 1.0, 8_000
    r = rng(3)
    plain = []
    for _ in range(trials // 1000):
        G = np.cumsum(r.standard_exponential((1000, 1500)), axis=1)
        Y = gamma * (G / c) ** 0.5
        assert np.all(Y[:, -1] > 40)
        plain.append(1 / np.exp(-(Y - Y[:, :1])).sum(axis=1))
    m1, se1 = mean_se(np.concatenate(plain))
    m2, se2 = mean_se(pl.poisson_limit_top_weight(gamma, c, 5, trials, rng(4)))
    assert abs(m1 - m2) < 4 * np.hypot(se1, se2), (m1, m2, se1, se2)


# docs/paper-b.md: the limit E[A_(1)], uniform keys, exact (Palm formula; our quadrature of it is
# in tests/test_refs_paper_b.py), 5 decimals. The earlier Monte Carlo table (0.278 at d = 5,
# gamma = 1) and the assumed 10^4-sample SE that excused it are gone.
EXACT_TABLE = [
    (3, 0.3, 0.42207),
    (3, 1.0, 0.72949),
    (3, 3.0, 0.89414),
    (5, 0.3, 0.04506),
    (5, 1.0, 0.27599),
    (5, 3.0, 0.66271),
]


@pytest.mark.parametrize("d, gamma, value", EXACT_TABLE)
def test_poisson_limit_exact_table(d, gamma, value):
    """20000 samples of the simulated limit: mean within 4 SE of the exact value (+ its 5e-6
    rounding)."""
    w = pl.poisson_limit_top_weight(gamma, st.c_uniform(d), d, 20_000, rng(5, d, int(10 * gamma)))
    m, se = mean_se(w)
    assert abs(m - value) < 4 * se + 5e-6, (m, se)


def test_critical_finite_n_d3():
    """d = 3, beta = gamma n, n = 1000: E[1/A_(1)] -> 1 + 1/(2 gamma) (docs/paper-b.md). The finite-n
    bias is below 1/(2 gamma n) = 5e-4, far inside 4 SE (SE ≈ 0.012)."""
    gamma, n = 1.0, 1000
    T = keys.sample_d2q_uniform(3000, n, 3, rng(6), "sphere")
    A = keys.top_weight_from_d2q(T, [gamma * n])[:, 0]
    m, se = mean_se(1 / A)
    assert abs(m - (1 + 1 / (2 * gamma))) < 4 * se, (m, se)
    # negative control: at 2 gamma the same statistic is rejected
    assert abs(m - (1 + 1 / (4 * gamma))) > 4 * se


def test_subcritical_top_weight_d3():
    """d = 3, n = 1e4, beta = 10 (m_n = 500): m_n A_(1) -> 1 / Gamma(2) = 1 (docs/paper-b.md). First-order
    bias -1/(2 m_n) = -0.001 [derived: S is Dickman with mean m and variance m/2]; allowed on
    top of 4 SE (SE ≈ 0.0016). F is exactly linear for d = 3: no finite-beta correction."""
    n, beta = 10_000, 10.0
    m_n = st.m_eff(n, beta, st.c_uniform(3), 3)
    T = keys.sample_d2q_uniform(400, n, 3, rng(7), "sphere")
    mA = m_n * keys.top_weight_from_d2q(T, [beta])[:, 0]
    m, se = mean_se(mA)
    assert abs(m - st.subcritical_top_weight_limit(3)) < 4 * se + 1 / (2 * m_n), (m, se)
    assert st.subcritical_top_weight_limit(5) == pytest.approx(0.5)


def test_subcritical_cumulative_mass_d3():
    """Top x m_n weights carry P(1, x) = 1 - e^{-x} at x = 1 (docs/paper-b.md); finite-m bias O(1/m)."""
    n, beta = 10_000, 10.0
    m_n = st.m_eff(n, beta, st.c_uniform(3), 3)
    k = int(round(m_n))
    T = keys.sample_d2q_uniform(200, n, 3, rng(8), "sphere")
    W = keys.ordered_weights_from_d2q(T, beta, k=k)
    m, se = mean_se(W.sum(axis=1))
    assert abs(m - (1 - np.exp(-1))) < 4 * se + 1 / m_n, (m, se)


def test_profile_and_mass_limits_closed_forms():
    x = np.linspace(0, 5, 11)
    np.testing.assert_allclose(st.cumulative_mass_limit(x, 3), 1 - np.exp(-x), atol=1e-15)
    np.testing.assert_allclose(
        st.cumulative_mass_limit(x, 5), 1 - np.exp(-np.sqrt(x)) * (1 + np.sqrt(x)), atol=1e-15
    )
    np.testing.assert_allclose(st.profile_limit(x, 5), np.exp(-np.sqrt(x)))
    # d = 3: F is exactly linear, so the finite-beta profile is the limit profile
    n, beta = 1000, 5.0
    k = np.arange(1, n + 1)
    m = st.m_eff(n, beta, 0.5, 3)
    np.testing.assert_allclose(st.profile_finite_beta(k, n, beta, 3), st.profile_limit(k / m, 3))
    assert st.profile_finite_beta(1, n, beta, 5, shifted=True) == pytest.approx(1.0)
    mass = st.cumulative_mass_finite_beta(n, beta, 5)
    assert mass[-1] == pytest.approx(1.0) and np.all(np.diff(mass) > 0)


def test_nearest_key_weibull_law_d5():
    """n^alpha T_(1) for uniform keys on S^4 (n = 1000): KS against the exact finite-n law within
    the 0.1% bound; against the Weibull limit within the bound plus sup |exact - limit|."""
    n, d = 1000, 5
    T = keys.sample_d2q_uniform(4000, n, d, rng(9), "sphere")
    s = T.min(axis=1) * n**0.5
    bound = KS_C / np.sqrt(s.size)
    exact = stats.kstest(s, lambda v: 1 - st.nearest_key_sf_exact_uniform(v, n, d)).statistic
    assert exact < bound
    grid = np.linspace(0, 5, 2001)
    gap = np.abs(
        st.nearest_key_sf_exact_uniform(grid, n, d) - st.nearest_key_sf_limit(grid, 0.75, d)
    ).max()
    assert gap < 0.01
    weib = stats.kstest(s, lambda v: 1 - st.nearest_key_sf_limit(v, 0.75, d)).statistic
    assert weib < bound + gap
    # negative control: the d = 3 Weibull (exponential) law is rejected
    assert stats.kstest(s, lambda v: 1 - st.nearest_key_sf_limit(v, 0.75, 3)).statistic > bound


def test_nearest_key_tangent_mean_square():
    """Supercritical displacement scale: E |P_q(x_(1) - q)|^2 = E[T(2-T)] ≈ 2 Gamma(1+alpha) (C n)^-alpha."""
    n = 2000
    T = keys.sample_d2q_uniform(2000, n, 3, rng(10), "sphere").min(axis=1)
    m, se = mean_se(T * (2 - T))
    theory = st.nearest_key_tangent_ms(n, 0.5, 3)
    assert abs(m - theory) < 4 * se + theory * 2 / n  # E[T^2] term is O(1/n) relative


# --------------------------------------------------------------------------- heat drift
def test_heat_drift_quadrature_limits():
    q = np.ones(3) / np.sqrt(3)
    big = sq.heat_drift_limit_x1x2(q, 1e5)
    assert big["ratio"] == pytest.approx(1.0, abs=1e-4)
    assert big["normal"] == pytest.approx(-1.0, abs=1e-4)  # -1/alpha
    assert big["perp"] < 1e-9  # q is symmetric in x1 <-> x2: no orthogonal component
    # the correction is O(1/beta): beta (ratio - 1) converges
    c4 = 1e4 * (sq.heat_drift_limit_x1x2(q, 1e4)["ratio"] - 1)
    c5 = 1e5 * (big["ratio"] - 1)
    assert abs(c4 - c5) < 0.01
    # the vectorised mean field agrees with the scalar quadrature
    M = sq.mean_field_x1x2(q[None, :], 30.0)[0]
    ref = sq.heat_drift_limit_x1x2(q, 30.0)
    np.testing.assert_allclose(30 * (M - (M @ q) * q), ref["beta_tangential"], atol=1e-12)


def test_heat_drift_quadrature_against_simulation():
    """n = 2e5 keys, beta = 10, 24 contexts: mean ratio within 4 SE of the n = inf quadrature
    (the ratio-estimator bias is O(1/m_n), m_n ≈ 1e4). Per-context SD ≈ 0.03."""
    q = np.ones(3) / np.sqrt(3)
    g = st.score_x1x2(q)
    beta, r = 10.0, rng(11)
    ratios = []
    for _ in range(24):
        X, T = keys.sample_x1x2_cap(200_000, q, 2.0, r)
        w = np.exp(-beta * (T - T.min()))
        att = w @ X / w.sum()
        ratios.append(beta * (att - (att @ q) * q) @ g / (g @ g))
    m, se = mean_se(ratios)
    quad = sq.heat_drift_limit_x1x2(q, beta)["ratio"]
    assert abs(m - quad) < 4 * se, (m, se, quad)
    # the heat-equation limit itself (ratio 1) is rejected at beta = 10: the O(1/beta) term
    assert abs(m - 1.0) > 4 * se
