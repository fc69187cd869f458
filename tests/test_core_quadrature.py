"""The library's shared quadratures (attnscale.core.quadrature, attnscale.core.laplace) against
exact integrals: Gauss-Legendre rules are exact for polynomials of degree 2k - 1 (both routines,
both panel forms), and the Laplace identity reproduces E[1 / (1 + S)] for a sum of exponential
terms, whose law is known in closed form (docs/finite-d.md#exact-self-weight,
docs/regimes.md#exact-finite-n-top-weight)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special

from attnscale.core import laplace
from attnscale.core.quadrature import (
    ROUTINES,
    gauss_legendre,
    gauss_legendre_01,
    gauss_legendre_panels,
    panel_edges,
)


def _poly(deg: int):
    """A polynomial of degree ``deg`` with its antiderivative (integer coefficients 1..deg+1)."""
    c = np.arange(1, deg + 2, dtype=float)
    return np.polynomial.Polynomial(c), np.polynomial.Polynomial(c).integ()


@pytest.mark.parametrize("routine", ROUTINES)
@pytest.mark.parametrize("k", [1, 3, 8, 20])
def test_gauss_legendre_is_exact_to_degree_2k_minus_1(routine, k):
    p, P = _poly(2 * k - 1)
    x, w = gauss_legendre(k, routine=routine)
    assert w @ p(x) == pytest.approx(P(1.0) - P(-1.0), rel=1e-13)
    x01, w01 = gauss_legendre_01(k, routine=routine)
    assert w01 @ p(x01) == pytest.approx(P(1.0) - P(0.0), rel=1e-13)
    # one degree more is not integrated exactly (the rule has exactly k nodes)
    q, Q = _poly(2 * k)
    assert abs(w @ q(x) - (Q(1.0) - Q(-1.0))) > 1e-10


@pytest.mark.parametrize("centred", [False, True])
def test_panels_integrate_piecewise_and_both_forms_agree(centred):
    e = panel_edges(-1.3, 2.9, 0.5)
    assert e.size == 10 and np.all(np.diff(e) <= 0.5 + 1e-15)  # ceil(4.2 / 0.5) = 9 panels
    x, w = gauss_legendre_panels(e, 6, centred=centred)
    assert x.shape == w.shape == (9, 6)
    assert np.sum(w * np.exp(x)) == pytest.approx(math.exp(2.9) - math.exp(-1.3), rel=1e-14)
    y, v = gauss_legendre_panels(e, 6, centred=not centred)
    np.testing.assert_allclose(x, y, rtol=0, atol=1e-15)  # the same rule, up to rounding
    np.testing.assert_allclose(w, v, rtol=1e-15)


def test_the_two_routines_agree_to_rounding_and_rules_are_read_only():
    for k in (8, 48, 96):
        (x1, w1), (x2, w2) = (gauss_legendre(k, routine=r) for r in ROUTINES)
        np.testing.assert_allclose(x1, x2, rtol=0, atol=1e-15)
        np.testing.assert_allclose(w1, w2, rtol=1e-11)
    x, _ = gauss_legendre_01(4)
    with pytest.raises(ValueError):
        x[0] = 0.0


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: gauss_legendre(0), "k must be >= 1"),
        (lambda: gauss_legendre(4, routine="mpmath"), "routine must be one of"),
        (lambda: panel_edges(1.0, 1.0, 0.1), "a must be smaller than b"),
        (lambda: panel_edges(0.0, 1.0, 0.0), "width must lie in"),
        (lambda: gauss_legendre_panels([0.0], 4), "edges must be a 1-D array"),
    ],
)
def test_bad_arguments_are_named(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def _exponential_terms(n: float, h: float) -> float:
    """E[1 / (1 + S)], S a sum of n - 1 Exp(1) terms, by the library's Laplace identity:
    phi(s) = 1 / (1 + s), psi = s / (1 + s) = sum_k (-1)^{k+1} s^k (E Y^k = k!)."""
    ks, coef = laplace.series_terms()
    moments = np.array([math.factorial(int(k)) for k in ks], dtype=float)

    def series(ts):
        return laplace.log_one_minus((coef * moments) @ np.exp(np.outer(ks, ts)))

    def direct(td):
        s = np.exp(td)
        return laplace.log_one_minus(s / (1.0 + s), 1.0 / (1.0 + s))

    return float(laplace.reciprocal_mean(n, series, direct, h=h, t_lo=-40.0))


@pytest.mark.parametrize("n", [2, 10, 1000, 10**6])
def test_laplace_identity_against_the_gamma_law(n):
    """S ~ Gamma(n - 1, 1): E[1/(1+S)] = int_0^inf e^{-s} (1 + s)^{-(n-1)} ds = e E_{n-1}(1)
    (the generalised exponential integral; with u = 1 + s), checked by adaptive quadrature where
    it resolves the integrand (independent of the t grid and the series)."""
    exact = math.e * special.expn(n - 1, 1.0)
    if n <= 1000:
        quad = integrate.quad(
            lambda s: math.exp(-s - (n - 1) * math.log1p(s)),
            0,
            np.inf,
            epsabs=0,
            epsrel=1e-13,
            limit=400,
        )[0]
        assert quad == pytest.approx(exact, rel=1e-12)
    assert _exponential_terms(n, 0.3) == pytest.approx(exact, rel=1e-10)


def test_laplace_series_coefficients_and_log_one_minus():
    ks, coef = laplace.series_terms()
    assert ks.tolist() == list(range(1, laplace.SERIES_TERMS + 1))
    np.testing.assert_allclose(
        coef * [math.factorial(k) for k in ks], (-1.0) ** (ks + 1), rtol=1e-15
    )
    psi = np.array([1e-18, 0.3, 0.7, 1.0])
    out = laplace.log_one_minus(psi, 1.0 - psi)
    assert out[0] == -1e-18 and out[1] == math.log1p(-0.3)
    assert out[2] == math.log(1.0 - 0.7) and out[3] == -np.inf
