"""Paper A closed forms (docs/paper-a.md)."""

import numpy as np
import pytest

from attnscale.layer import theory


@pytest.mark.parametrize("rho, gc", [(0.2, 1.25), (0.5, 2.0), (0.8, 5.0)])
def test_gamma_c_spec_values(rho, gc):
    assert theory.gamma_c(rho) == pytest.approx(gc, rel=1e-14)


@pytest.mark.parametrize("rho, cos", [(0.3, 0.6316), (0.5, 0.8), (0.6, 0.8571)])
def test_critical_cosine_spec_values(rho, cos):
    assert theory.critical_cosine(rho) == pytest.approx(cos, abs=5e-5)
    assert theory.cosine_limit(rho, theory.gamma_c(rho)) == pytest.approx(cos, abs=5e-5)


@pytest.mark.parametrize("rho, lam", [(0.2, 0.625), (0.5, 0.4), (0.8, 0.294)])
def test_critical_lambda_spec_values(rho, lam):
    assert theory.critical_lambda(rho) == pytest.approx(lam, abs=5e-4)
    assert theory.lambda_limit(rho, theory.gamma_c(rho)) == pytest.approx(lam, abs=5e-4)


def test_eta_limits_spec_values():
    rho, d = 0.5, 512
    gc = theory.gamma_c(rho)
    assert theory.eta_limit(rho, 0.5 * gc, d) == 0.0
    assert theory.eta_limit(rho, gc, d) == pytest.approx(0.2495, abs=5e-5)
    assert theory.eta_limit(rho, 2 * gc, d) == pytest.approx(0.998, abs=5e-4)
    assert theory.eta_limit(rho, gc, d, q=2.0) == pytest.approx(0.2495 / 2, abs=5e-5)


def test_theorem_2_1_alpha0_regimes():
    for rho in (0.1, 0.5, 0.9):
        gc = theory.gamma_c(rho)
        assert theory.cosine_limit(rho, 0.5 * gc) == pytest.approx(1.0)
        assert theory.cosine_limit(rho, 2.0 * gc) == pytest.approx(rho)
        assert theory.lambda_limit(rho, 0.5 * gc) == 0.0
        assert theory.lambda_limit(rho, 2.0 * gc) == pytest.approx(1.0)


@pytest.mark.parametrize("alpha, q", [(0.0, 1.0), (0.5, 1.0), (0.3, 2.3)])
@pytest.mark.parametrize("rho", [0.2, 0.5, 0.8])
def test_finite_n_map_converges_to_the_limits(rho, alpha, q):
    """The exact simplex map at astronomically large n reaches the n -> inf forms (sub and super
    regimes converge like n^{-|gamma(1-rho) - 1|}; at gamma_c like 1/n)."""
    gc = theory.gamma_c(rho)
    n = 10**12
    for gamma, tol in ((0.5 * gc, 1e-5), (gc, 1e-9), (2.0 * gc, 1e-5)):
        beta = gamma * np.log(n)
        cos, _ = theory.simplex_map(n, rho, beta, alpha, q)
        lam = theory.simplex_lambda(n, rho, beta, alpha, q)
        assert cos == pytest.approx(theory.cosine_limit(rho, gamma, alpha, q), abs=tol)
        assert lam == pytest.approx(theory.lambda_limit(rho, gamma, alpha, q), abs=tol)


def test_simplex_lambda_consistent_with_cosine():
    for beta in (0.0, 1.0, 10.0, 100.0):
        cos, _ = theory.simplex_map(500, 0.4, beta, 0.2, 1.3)
        lam = theory.simplex_lambda(500, 0.4, beta, 0.2, 1.3)
        assert lam == pytest.approx((1 - cos) / (1 - 0.4), rel=1e-9, abs=1e-15)


def test_alpha_sqrt_q_enters_only_as_a_product():
    a = theory.cosine_limit(0.4, 1.0, alpha=0.5, q=4.0)
    b = theory.cosine_limit(0.4, 1.0, alpha=1.0, q=1.0)
    assert a == pytest.approx(b, rel=1e-14)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: theory.gamma_c(1.0), "rho"),
        (lambda: theory.gamma_c(-0.1), "rho"),
        (lambda: theory.simplex_map(1, 0.5, 1.0), "n must be >= 2"),
        (lambda: theory.simplex_map(10, 0.5, -1.0), "beta"),
        (lambda: theory.eta_limit(0.5, 1.0, 0), "d must be >= 1"),
        (lambda: theory.lambda_limit(0.5, 1.0, q=0.0), "q must lie in"),
    ],
)
def test_theory_bad_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
