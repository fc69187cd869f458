"""The critical output law (docs/paper-b-beyond.md#critical-output-law): samplers against exact
laws and brute force, the Mecke quadrature against identities and closed forms.

Monte Carlo checks use 4 standard errors (SE stated at each check; a false alarm has probability
~6e-5 per check); two-sample KS checks use the 0.1% critical value of the Kolmogorov law.
Quadrature checks use tolerances from the step-halving difference (stated).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from attnscale.sphere import keys
from attnscale.sphere import marked_poisson as mp
from attnscale.sphere import theory as st

KS_C = 1.949  # 0.1% critical value of the Kolmogorov distribution


def rng(*ids):
    return np.random.default_rng(np.random.SeedSequence(20261130, spawn_key=ids))


def mean_se(v):
    v = np.asarray(v, dtype=float)
    return v.mean(), stats.sem(v)


def brute_force_output(n, gamma, d, trials, g):
    """``n^{1/(d-1)} P_q (ATT_n(q) - q)`` from full uniform keys, ``q = e_1`` (independent path)."""
    beta = gamma * n ** st.alpha_exponent(d)
    X = keys.sample_uniform_sphere(trials * n, d, g).reshape(trials, n, d)
    W = keys.weights_from_d2q(1.0 - X[..., 0], beta)
    return n ** (1.0 / (d - 1)) * np.einsum("tn,tnj->tj", W, X[..., 1:])


# --------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("d", [3, 5, 7])
def test_fast_d2q_quantile_matches_betaincinv(d):
    u = np.concatenate([np.geomspace(1e-14, 1.0, 400), rng(1, d).random(400)])
    # closed forms vs scipy's betaincinv: agreement to a few ulps (float error only)
    np.testing.assert_allclose(mp.d2q_ppf_fast(u, d), st.d2q_ppf_uniform(u, d), rtol=1e-13)


@pytest.mark.parametrize("d", [3, 4, 5, 8])
def test_tangent_intensity_of_uniform_keys(d):
    # uniform keys: rho = 1 / |S^{d-1}| (inverse of c_density)
    assert mp.tangent_intensity(st.c_uniform(d), d) == pytest.approx(1 / st.sphere_area(d), 1e-13)


@pytest.mark.parametrize("gamma", [0.3, 3.0])
def test_laplace_exponent_d3_closed_form(gamma):
    # d = 3: Lambda(dy) = (C/gamma) dy, psi(s) = (C/gamma) Ein(s), Ein(s) = E1(s) + log s + euler
    h = 0.02
    x = np.arange(-2000, 1000) * h
    psi = mp._psi_grid(x, gamma, 0.5, 1.0, h)
    s = np.exp(x[1000:2500])  # s in [e^-20, e^10]
    ein = special.exp1(s) + np.log(s) + np.euler_gamma
    # trapezoid with end correction: O(h^4) ~ 1e-8 relative; absolute 1e-11 (the FFT
    # convolution's rounding) where psi ~ s is tiny
    np.testing.assert_allclose(psi[1000:2500], 0.5 / gamma * ein, rtol=1e-7, atol=1e-11)


@pytest.mark.parametrize("d", [3, 5])
@pytest.mark.parametrize("gamma", [0.3, 1.0, 3.0])
def test_palm_identity_weights_sum_to_one(d, gamma):
    # E sum_i W_i = 1 exactly; the quadrature (h = 0.02) reaches it to ~6e-7 (its truncation)
    c = st.c_uniform(d)
    v = mp.palm_weight_moment(gamma, c, d, 1, np.ones_like)
    assert v == pytest.approx(1.0, abs=2e-6)


@pytest.mark.parametrize("d", [3, 5])
def test_second_moment_quadrature_is_converged(d):
    c = st.c_uniform(d)
    a, b = (mp.critical_output_second_moment(1.0, c, d, h=h) for h in (0.02, 0.01))
    assert a == pytest.approx(b, rel=1e-6)  # step-halving difference is ~1e-8 (measured)


def test_second_moment_large_gamma_is_nearest_point():
    # gamma -> inf: L -> z_(1), E |z_(1)|^2 = 2 Gamma(1 + alpha) C^{-alpha} (Weibull radius);
    # the correction is O(1/gamma) (second point's weight ~ e^{-(Y_2 - Y_1)}), d = 5
    c = st.c_uniform(5)
    nearest = 2 * special.gamma(1.5) * c**-0.5
    v = [mp.critical_output_second_moment(g, c, 5) for g in (10.0, 100.0)]
    assert abs(v[1] - nearest) < abs(v[0] - nearest) / 5  # error falls ~10x per 10x in gamma
    assert v[1] == pytest.approx(nearest, rel=0.02)


# --------------------------------------------------------------------------- the limit sampler
def test_limit_cloud_is_the_poisson_process():
    d, gamma, c = 5, 1.0, st.c_uniform(5)
    m = 20_000
    cl = mp.limit_cloud(gamma, c, d, m, rng(2), max_points=64)  # 64 >> Lambda(y0) = 3
    # nearest point: P(Y_(1) > y) = exp(-Lambda(y)), Lambda(y) = C (y / gamma)^2 (one-sample KS)
    ks = stats.kstest(cl["y1"], lambda y: -np.expm1(-c * (y / gamma) ** 2))
    assert ks.statistic < KS_C / np.sqrt(m)
    # points with Y <= y0 (y0 below every truncation level): Poisson with mean Lambda(y0) = 3
    y0 = gamma * np.sqrt(3.0 / c)
    assert np.all(cl["yc"] > y0)
    cnt = (cl["y1"] <= y0) + np.bincount(cl["owner"], weights=cl["y"] <= y0, minlength=m)
    mu, se = mean_se(cnt)
    assert abs(mu - 3.0) < 4 * se
    var_se = np.sqrt((3.0 + 2 * 3.0**2) / m)  # SE of a Poisson sample variance (mu + 2 mu^2)/m
    assert abs(cnt.var(ddof=1) - 3.0) < 4 * var_se


@pytest.mark.parametrize("d, gamma", [(3, 1.0), (5, 0.3), (5, 3.0)])
def test_limit_output_is_isotropic_with_the_mecke_second_moment(d, gamma):
    c = st.c_uniform(d)
    L = mp.critical_output_limit(gamma, c, d, 4000, rng(3, d, int(10 * gamma)))
    assert L.shape == (4000, d - 1)
    for j in range(d - 1):  # centred in every coordinate
        mu, se = mean_se(L[:, j])
        assert abs(mu) < 4 * se
    r2 = np.einsum("ij,ij->i", L, L)
    mu, se = mean_se(r2)
    assert abs(mu - mp.critical_output_second_moment(gamma, c, d)) < 4 * se
    # isotropy: E L_1^2 = E |L|^2 / (d - 1)
    mu1, se1 = mean_se(L[:, 0] ** 2 - r2 / (d - 1))
    assert abs(mu1) < 4 * se1


# --------------------------------------------------------------------------- finite n
@pytest.mark.parametrize("d, gamma", [(3, 0.3), (3, 3.0), (5, 1.0)])
def test_finite_n_sampler_matches_brute_force(d, gamma):
    n, m = 200, 3000
    fast = mp.critical_output_finite_n(n, gamma, d, m, rng(4, d, int(10 * gamma)))
    slow = brute_force_output(n, gamma, d, m, rng(5, d, int(10 * gamma)))
    r_fast, r_slow = np.linalg.norm(fast, axis=1), np.linalg.norm(slow, axis=1)
    assert stats.ks_2samp(r_fast, r_slow).statistic < KS_C * np.sqrt(2 / m)
    (a, sa), (b, sb) = mean_se(r_fast**2), mean_se(r_slow**2)
    assert abs(a - b) < 4 * np.hypot(sa, sb)


def test_finite_n_with_count_truncation_tends_to_the_limit():
    # n = 1e6 at d = 5, gamma = 1: ~1000 keys within y_max of the nearest, the count cap is active;
    # finite-n bias O(n^{-1/2}) = 1e-3 relative, far below the SE (~2%)
    d, gamma, c = 5, 1.0, st.c_uniform(5)
    Ln = mp.critical_output_finite_n(10**6, gamma, d, 2000, rng(6), max_points=256)
    mu, se = mean_se(np.einsum("ij,ij->i", Ln, Ln))
    assert abs(mu - mp.critical_output_second_moment(gamma, c, d)) < 4 * se


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: mp.critical_output_finite_n(0, 1.0, 3, 10, rng(7)), "n"),
        (lambda: mp.critical_output_finite_n(10, -1.0, 3, 10, rng(7)), "gamma"),
        (lambda: mp.critical_output_limit(1.0, 0.5, 2, 10, rng(7)), "d"),
        (lambda: mp.critical_output_limit(1.0, 0.0, 3, 10, rng(7)), "c"),
        (lambda: mp.palm_weight_moment(1.0, 0.5, 3, 0, np.ones_like), "p"),
    ],
)
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError, match=rf"^{name} must"):
        call()
