"""The attention Jacobian, its JVP and eta (docs/paper-a.md#the-jacobian-norm-eta); the finite-n simplex eta.

Tolerances come from error budgets stated next to each check (rounding, finite-difference
truncation, Monte Carlo standard errors, asymptotic rates), not from the observed errors.
"""

import numpy as np
import pytest

from attnscale.layer import theory, tokens
from attnscale.layer.dense import attention, eta_exact, jacobian

EPS = np.finfo(float).eps
BETAS = [0.0, 0.3, 3.0, 30.0, 1e3]


def _tokens(kind: str, n: int = 7, d: int = 5, seed: int = 0) -> np.ndarray:
    """``"gauss"``: i.i.d. Gaussian tokens with spread norms; ``"near_tie"``: near-simplex tokens
    with cosines within ~0.01 of each other, so the softmax stays soft even at beta = 1e3."""
    rng = np.random.default_rng(seed)
    if kind == "gauss":
        return rng.standard_normal((n, d)) * rng.uniform(0.5, 2.0, size=(n, 1))
    return tokens.near_simplex(n, d, 0.995, rng) * rng.uniform(0.5, 2.0, size=(n, 1))


@pytest.mark.parametrize("kind", ["gauss", "near_tie"])
@pytest.mark.parametrize("alpha", [0.0, 0.7])
@pytest.mark.parametrize("beta", BETAS)
def test_jvp_matches_central_differences(kind, alpha, beta):
    """Central differences with step ``h = 1e-4 / (1 + beta)`` (tokens of norm >= 0.5): the
    truncation error is ``O((h beta)^2) ~ 1e-8`` relative and rounding ``O(eps (1 + beta) / h)
    ~ 1e-12 (1 + beta)^2 <= 1e-6``; the required bound, 1e-6, holds with margin."""
    X = _tokens(kind)
    V = np.random.default_rng(1).standard_normal(X.shape)
    h = 1e-4 / (1.0 + beta)
    fd = (attention.forward(X + h * V, beta, alpha) - attention.forward(X - h * V, beta, alpha)) / (
        2 * h
    )
    jv = jacobian.jvp(X, V, beta, alpha)
    assert np.linalg.norm(fd - jv) <= 1e-6 * np.linalg.norm(jv)


@pytest.mark.parametrize("n, d", [(2, 3), (5, 1), (6, 2), (4, 9)])
@pytest.mark.parametrize("alpha", [0.0, 0.5])
@pytest.mark.parametrize("beta", BETAS)
def test_exact_eta_matches_the_dense_jacobian(n, d, alpha, beta):
    """The block formula (both routes for ``||S_i||^2``) against ``||J||_F^2`` of the Jacobian
    built column by column; ``J v`` against ``jvp``. The formula adds and subtracts O(1) terms
    scaled by ``beta^2`` (``||C_i P_i||^2``), so its absolute rounding error is a few hundred
    ``eps (1 + beta)^2`` at these sizes."""
    X = _tokens("gauss" if beta < 100 else "near_tie", n, d, seed=n + d)
    J = jacobian.jacobian(X, beta, alpha)
    dense = np.sum(J**2) / (n * d)
    tol = 1e3 * EPS * (1.0 + beta) ** 2 * max(1.0, dense)
    for route in ("gram", "outer"):
        assert abs(eta_exact.eta_exact_grid(X, [beta], alpha, route=route)[0] - dense) <= tol
    assert abs(eta_exact.eta_exact(X, beta, alpha) - dense) <= tol
    V = np.random.default_rng(2).standard_normal((3, n, d))
    want = np.stack([(J @ v.ravel()).reshape(n, d) for v in V])
    np.testing.assert_allclose(jacobian.jvp(X, V, beta, alpha), want, rtol=1e-10, atol=1e-12)


def test_exact_eta_closed_forms_at_beta0_and_d1():
    """beta = 0: ``A = 1 1^T / n`` and ``J_ik = P_k / (n r_k) + alpha [i = k] I``, so
    ``eta = [(d-1) mean(1/r^2) / n + 2 alpha (d-1) mean(1/r) / n + alpha^2 d] / d``.
    d = 1: ``P = 0``, only the residual is left, ``eta = alpha^2``."""
    X = _tokens("gauss", 9, 4)
    r = np.linalg.norm(X, axis=1)
    n, d = X.shape
    for alpha in (0.0, 0.3):
        want = ((d - 1) * np.mean(r**-2) / n + 2 * alpha * (d - 1) * np.mean(1 / r) / n) / d
        want += alpha**2
        assert eta_exact.eta_exact(X, 0.0, alpha) == pytest.approx(want, rel=1e-13)
    X1 = _tokens("gauss", 6, 1)
    betas = np.array([0.0, 2.0, 50.0])
    got = eta_exact.eta_exact_grid(X1, betas, [0.0, 0.4])
    tol = 1e3 * EPS * (1.0 + betas) ** 2  # the beta^2 terms cancel to rounding
    assert np.all(np.abs(got - np.array([[0.0], [0.16]])) <= tol)


def test_exact_grid_blocks_routes_and_alphas_agree():
    """Row blocks, stacked betas, the two routes and the alpha-vectorised form all compute the
    same sums in different orders: agreement to rounding (1e-11 relative)."""
    X = tokens.near_simplex(70, 6, 0.5, np.random.default_rng(3))
    betas = np.array([0.0, 1.0, 4.0, 9.0, 25.0])
    alphas = [0.0, 0.5, 2.0]
    ref = np.array([[eta_exact.eta_exact(X, b, a) for b in betas] for a in alphas])
    for kw in ({}, {"block_entries": 150}, {"block_entries": 10**6}, {"route": "gram"}):
        np.testing.assert_allclose(
            eta_exact.eta_exact_grid(X, betas, alphas, **kw), ref, rtol=1e-11
        )


@pytest.mark.parametrize("kind", ["rademacher", "gaussian"])
@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_hutchinson_within_four_standard_errors(kind, alpha):
    """200 probes: the estimate is a mean of i.i.d. terms with finite variance, so |estimate -
    exact| <= 4 SE fails with probability ~1e-4 per comparison (fixed seed: deterministic)."""
    X = tokens.near_simplex(40, 6, 0.5, np.random.default_rng(4))
    betas = np.array([0.5, 1.0, 2.0, 4.0]) * theory.gamma_c(0.5) * np.log(40)
    exact = eta_exact.eta_exact_grid(X, betas, alpha)
    est, se = jacobian.eta_hutchinson_grid(
        X, betas, alpha, probes=200, rng=np.random.default_rng(5), kind=kind
    )
    assert np.all(se > 0)
    assert np.all(np.abs(est - exact) <= 4 * se), (est, exact, se)


def test_hutchinson_grid_shares_probes_and_groups_do_not_matter():
    """The grid uses one set of probes for every beta: it equals the one-beta estimator with the
    same generator state, and processing probes in groups changes nothing (rounding only)."""
    X = tokens.near_simplex(30, 4, 0.3, np.random.default_rng(6))
    betas = [0.7, 5.0]
    est, se = jacobian.eta_hutchinson_grid(X, betas, probes=5, rng=np.random.default_rng(7))
    for b, e, s in zip(betas, est, se, strict=True):
        e1, s1 = jacobian.eta_hutchinson(X, b, probes=5, rng=np.random.default_rng(7))
        assert e1 == pytest.approx(e, rel=1e-12) and s1 == pytest.approx(s, rel=1e-10)
    est2, _ = jacobian.eta_hutchinson_grid(
        X, betas, probes=5, rng=np.random.default_rng(7), block_entries=2 * 30 * 30
    )
    np.testing.assert_allclose(est2, est, rtol=1e-12)
    one, one_se = jacobian.eta_hutchinson(X, 1.0, probes=1, rng=np.random.default_rng(8))
    assert np.isfinite(one) and np.isnan(one_se)


def test_permutation_invariance():
    """Relabelling tokens permutes the blocks of J: eta is unchanged and the JVP is equivariant
    (sums in another order: agreement to rounding)."""
    X = tokens.near_simplex(25, 5, 0.6, np.random.default_rng(9))
    p = np.random.default_rng(10).permutation(25)
    V = np.random.default_rng(11).standard_normal(X.shape)
    for beta in (0.0, 3.0, 40.0):
        for alpha in (0.0, 0.5):
            assert eta_exact.eta_exact(X[p], beta, alpha) == pytest.approx(
                eta_exact.eta_exact(X, beta, alpha), rel=1e-12
            )
            np.testing.assert_allclose(
                jacobian.jvp(X[p], V[p], beta, alpha),
                jacobian.jvp(X, V, beta, alpha)[p],
                rtol=1e-11,
                atol=1e-13,
            )


@pytest.mark.parametrize("n, pad", [(3, 0), (12, 0), (12, 5), (40, 2)])
def test_simplex_eta_closed_form_is_exact(n, pad):
    """theory.simplex_eta equals the block formula on exact simplex tokens (in d = n + pad
    dimensions), also with unequal norms through the realised norm moments."""
    rho = 0.35
    for q, alpha, beta in [(1.0, 0.0, 0.0), (1.0, 0.0, 4.0), (2.5, 0.6, 9.0), (0.7, 0.3, 200.0)]:
        X = np.hstack([tokens.simplex_exact(n, rho, q), np.zeros((n, pad))])
        got = eta_exact.eta_exact(X, beta, alpha)
        want = theory.simplex_eta(n, n + pad, rho, beta, alpha, q)
        assert got == pytest.approx(want, rel=1e-9, abs=1e3 * EPS * (1 + beta) ** 2)
    s = np.random.default_rng(12).uniform(0.5, 2.0, size=(n, 1))
    X = np.hstack([tokens.simplex_exact(n, rho) * s, np.zeros((n, pad))])
    r = np.linalg.norm(X, axis=1)
    want = theory.simplex_eta(
        n, n + pad, rho, 5.0, 0.4, mean_inv_norm=np.mean(1 / r), mean_inv_sq_norm=np.mean(r**-2)
    )
    assert eta_exact.eta_exact(X, 5.0, 0.4) == pytest.approx(want, rel=1e-9)


def test_simplex_eta_reproduces_the_spec_finite_size_number():
    """docs/paper-a.md#simplex-eta-and-its-finite-size-bias: n = d = 48, rho = 0.5 at gamma_c gives 0.319 against the limit 0.245."""
    eta = theory.simplex_eta(48, 48, 0.5, 2.0 * np.log(48))
    assert eta == pytest.approx(0.319, abs=5e-4)
    assert theory.eta_limit(0.5, 2.0, 48) == pytest.approx(0.245, abs=5e-4)


@pytest.mark.parametrize("rho", [0.2, 0.5, 0.8])
def test_exact_simplex_tokens_at_large_n_reach_the_limits(rho):
    """Exact simplex tokens at n = d = 512 (the block formula, i.e. the simulation) equal the
    closed form, and the closed form converges to Theorem 2.4 (and the derived alpha > 0 form) at
    the rate its leading corrections predict. With ``f = gamma / gamma_c`` and ``a = A_ii``:
    ``a - a_inf ~ n^{f-1}`` below gamma_c, ``n^{1-f}`` above, and the beta-terms of the diagonal
    blocks are ``O(beta / d)`` and ``O(beta^2 / d)`` with ``beta = gamma log n``. Hence
    ``|eta - limit| ~ (log n)^k n^{-p}`` with ``0 <= k <= 2`` and ``p = min(1, 2(1-f))``
    (alpha = 0, sub), ``1 - f`` (alpha > 0, sub: alpha enters linearly in a), 1 (critical),
    ``min(1, f - 1)`` (super). Between n = 2^16 and 2^24 a factor ``(log n)^k`` moves the log-log
    slope by ``k log(24/16) / log(2^8) = 0.073 k``, so the slope must lie in
    ``[-p, -p + 0.146]``, widened by 0.05 for the next-order terms."""
    n = 512
    X = tokens.simplex_exact(n, rho)
    gc = theory.gamma_c(rho)
    dk = np.log(24 / 16) / np.log(2**8)
    for f in (0.5, 1.0, 2.0):
        got = eta_exact.eta_exact_grid(X, [f * gc * np.log(n)], [0.0, 0.5])[:, 0]
        for alpha, g in zip((0.0, 0.5), got, strict=True):
            want = theory.simplex_eta(n, n, rho, f * gc * np.log(n), alpha)
            assert g == pytest.approx(want, rel=1e-9)
            if f < 1:
                p = min(1.0, 2 * (1 - f)) if alpha == 0 else 1 - f
            else:
                p = min(1.0, f - 1) if f > 1 else 1.0
            errs = []
            for m in (2**16, 2**24):
                lim = theory.eta_limit(rho, f * gc, m, alpha)
                errs.append(abs(theory.simplex_eta(m, m, rho, f * gc * np.log(m), alpha) - lim))
            slope = np.log(errs[1] / errs[0]) / np.log(2**8)
            assert -p - 0.05 <= slope <= -p + 2 * dk + 0.05, (rho, f, alpha, slope, p)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: jacobian.jvp(np.ones((3, 2)), np.ones((3, 3)), 1.0), ValueError, "V must have"),
        (lambda: jacobian.jvp(np.ones((3, 2)), np.full((3, 2), np.nan), 1.0), ValueError, "V must"),
        (
            lambda: jacobian.jvp([[1.0, 0.0], [0.0, 0.0]], np.ones((2, 2)), 1.0),
            ValueError,
            "zero row",
        ),
        (
            lambda: jacobian.jvp(np.ones((3, 2)), np.ones((3, 2)), -1.0),
            ValueError,
            r"beta must lie in \[0",
        ),
        (
            lambda: jacobian.jvp(np.ones((3, 2)), np.ones((3, 2)), 1.0, -0.1),
            ValueError,
            "alpha must lie",
        ),
        (lambda: eta_exact.eta_exact(np.ones(4), 1.0), ValueError, "X must be a 2-D array"),
        (
            lambda: eta_exact.eta_exact(np.ones((1, 3)), 1.0),
            ValueError,
            "X must have at least 2 rows",
        ),
        (
            lambda: eta_exact.eta_exact_grid(np.ones((3, 2)), [1.0, -2.0]),
            ValueError,
            "betas must be >= 0",
        ),
        (
            lambda: eta_exact.eta_exact_grid(np.ones((3, 2)), [1.0], [0.1, -1.0]),
            ValueError,
            "alpha must be >= 0",
        ),
        (
            lambda: eta_exact.eta_exact_grid(np.ones((3, 2)), [1.0], route="x"),
            ValueError,
            "route must be",
        ),
        (
            lambda: jacobian.eta_hutchinson(
                np.ones((3, 2)), 1.0, probes=0, rng=np.random.default_rng()
            ),
            ValueError,
            "probes must be >= 1",
        ),
        (
            lambda: jacobian.eta_hutchinson(np.ones((3, 2)), 1.0, probes=2, rng=1),
            TypeError,
            "rng must be a numpy",
        ),
        (
            lambda: jacobian.eta_hutchinson(
                np.ones((3, 2)), 1.0, probes=2, rng=np.random.default_rng(), kind="x"
            ),
            ValueError,
            "kind must be one of",
        ),
        (lambda: jacobian.jacobian(np.ones((100, 50)), 1.0), ValueError, "n d <= 4096"),
        (lambda: theory.simplex_eta(1, 3, 0.5, 1.0), ValueError, "n must be >= 2"),
        (lambda: theory.simplex_eta(4, 3, 1.0, 1.0), ValueError, r"rho must lie in \(0, 1\)"),
        (
            lambda: theory.simplex_eta(4, 3, 0.5, 1.0, mean_inv_sq_norm=0.0),
            ValueError,
            "mean_inv_sq_norm",
        ),
    ],
)
def test_bad_input_names_the_argument(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_row_blocked_hutchinson_equals_unblocked():
    """The row-blocked path (used when one n x n matrix exceeds the budget, e.g. n = 32768)
    gives the same numbers as the stacked path for the same probes, up to rounding."""
    from attnscale.layer import tokens as tk
    from attnscale.layer.dense import jacobian as jac

    X = tk.near_simplex(50, 6, 0.4, np.random.default_rng(4))
    betas = [0.0, 1.5, 8.0]
    for alpha in (0.0, 0.3):
        full = jac.eta_hutchinson_grid(X, betas, alpha, probes=3, rng=np.random.default_rng(9))
        blocked = jac.eta_hutchinson_grid(
            X, betas, alpha, probes=3, rng=np.random.default_rng(9), block_entries=7 * 50
        )
        np.testing.assert_allclose(blocked[0], full[0], rtol=1e-12)
        np.testing.assert_allclose(blocked[1], full[1], rtol=1e-9)
