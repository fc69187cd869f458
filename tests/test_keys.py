"""Samplers, ordered weights and blocked attention of :mod:`attnscale.sphere.keys` (docs/paper-b.md).

Statistical tests use fixed seeds (deterministic) and tolerances from the statistics: Monte Carlo
means within 4 standard errors, Kolmogorov-Smirnov distances below the 0.1% critical value
``1.949 / sqrt(N_eff)``. Each law test has a negative control showing the check can fail.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from attnscale.sphere import keys
from attnscale.sphere import quadrature as sq
from attnscale.sphere import theory as st

KS_C = 1.949  # Kolmogorov distribution: P(sqrt(N) D_N > 1.949) = 0.001


def rng(*ids):
    return np.random.default_rng(np.random.SeedSequence(20260508, spawn_key=ids))


def exact_f(t, d):
    """The closed forms of F for uniform keys (docs/paper-b.md)."""
    s = np.clip(t / 2, 0, 1)
    return {3: s, 5: 3 * s**2 - 2 * s**3}[d]


# --------------------------------------------------------------------------- uniform keys
def test_uniform_sphere_rows_are_unit_and_centred():
    X = keys.sample_uniform_sphere(40_000, 5, rng(1))
    assert X.shape == (40_000, 5) and X.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-14)
    se = np.sqrt(1 / 5 / X.shape[0])  # Var x_j = 1/d
    assert np.all(np.abs(X.mean(axis=0)) < 4 * se)
    sd2 = np.sqrt(3 / (5 * 7) - 1 / 25)  # E x_j^4 = 3 / (d (d + 2))
    np.testing.assert_allclose((X**2).mean(axis=0), 0.2, atol=4 * sd2 / np.sqrt(X.shape[0]))


@pytest.mark.parametrize("d", [3, 5])
@pytest.mark.parametrize("method", ["sphere", "beta"])
def test_d2q_law_matches_exact_f(d, method):
    """KS distance of T = 1 - <e_1, x> against t/2 (S^2) and 3(t/2)^2 - 2(t/2)^3 (S^4)."""
    T = keys.sample_d2q_uniform(20, 1000, d, rng(2, d), method).ravel()
    bound = KS_C / np.sqrt(T.size)
    assert stats.kstest(T, lambda t: exact_f(t, d)).statistic < bound
    # negative control: the other dimension's law is rejected by the same bound
    other = 5 if d == 3 else 3
    assert stats.kstest(T, lambda t: exact_f(t, other)).statistic > bound


def test_d2q_paths_agree_in_law():
    a = keys.sample_d2q_uniform(10, 2000, 5, rng(3), "sphere").ravel()
    b = keys.sample_d2q_uniform(10, 2000, 5, rng(4), "beta").ravel()
    bound = KS_C * np.sqrt(2 / a.size)
    assert stats.ks_2samp(a, b).statistic < bound


def test_d2q_sphere_path_is_first_coordinate_of_the_keys():
    """method="sphere" uses exactly the keys of sample_uniform_sphere (same draws)."""
    X = keys.sample_uniform_sphere(300, 4, rng(5))
    T = keys.sample_d2q_uniform(3, 100, 4, rng(5), "sphere")
    np.testing.assert_array_equal(T.ravel(), np.clip(1 - X[:, 0], 0, 2))


def test_d2q_rejects_unknown_method():
    with pytest.raises(ValueError, match="method"):
        keys.sample_d2q_uniform(1, 10, 3, rng(6), "gauss")


# --------------------------------------------------------------------------- rho ∝ exp(x1 x2)
def _quadrature_moment(f):
    """E_rho[f(x)] on S^2 by Gauss-Legendre in cos(theta) x trapezoid in phi (z-axis polar
    coordinates: independent of the q-centred quadrature of sphere_theory)."""
    u, w = np.polynomial.legendre.leggauss(80)
    phi = 2 * np.pi * np.arange(160) / 160
    U, P = np.meshgrid(u, phi, indexing="ij")
    r = np.sqrt(1 - U**2)
    X = np.stack([r * np.cos(P), r * np.sin(P), U], axis=-1).reshape(-1, 3)
    W = (w[:, None] * np.full_like(P, 2 * np.pi / 160)).ravel() * np.exp(X[:, 0] * X[:, 1])
    return float(np.sum(W * f(X)) / np.sum(W))


MOMENTS = {
    "x1": lambda X: X[:, 0],
    "x1 x2": lambda X: X[:, 0] * X[:, 1],
    "x1^2": lambda X: X[:, 0] ** 2,
    "x3^2": lambda X: X[:, 2] ** 2,
    "(x1 x2)^2": lambda X: (X[:, 0] * X[:, 1]) ** 2,
    "x1 x2 x3^2": lambda X: X[:, 0] * X[:, 1] * X[:, 2] ** 2,
}


def test_x1x2_sampler_moments_match_quadrature():
    X = keys.sample_x1x2(200_000, rng(7))
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-14)
    for name, f in MOMENTS.items():
        v = f(X)
        se = v.std(ddof=1) / np.sqrt(v.size)
        exact = _quadrature_moment(f)
        assert abs(v.mean() - exact) < 4 * se, f"{name}: {v.mean()} vs {exact} (SE {se:.2g})"
    # negative control: uniform keys are off in E[x1 x2] (1/30 ≈ 0.033 vs 0) by >> 4 SE
    U = keys.sample_uniform_sphere(200_000, 3, rng(8))
    v = U[:, 0] * U[:, 1]
    assert abs(v.mean() - _quadrature_moment(MOMENTS["x1 x2"])) > 4 * v.std() / np.sqrt(v.size)


def test_rejection_sampler_checks_the_bound():
    with pytest.raises(ValueError, match="log_max"):
        keys.sample_rejection(10, 3, keys.log_density_x1x2, 0.1, rng(9))


def test_x1x2_cap_sampler_matches_the_full_sample_in_the_cap():
    """Count ~ Binomial(n, p) and, given the count, the law of the cap keys equals that of the
    full sample restricted to the cap (two-sample KS on T and on x1; means within 4 SE)."""
    q = np.ones(3) / np.sqrt(3)
    n, t_c = 200_000, 0.3
    p = sq.cap_probability_x1x2(q, t_c)
    Xc, Tc = keys.sample_x1x2_cap(n, q, t_c, rng(10))
    assert abs(Tc.size - n * p) < 4 * np.sqrt(n * p * (1 - p))
    np.testing.assert_allclose(Tc, 1 - Xc @ q, atol=1e-14)
    assert Tc.max() <= t_c
    Xf = keys.sample_x1x2(n, rng(11))
    Tf = 1 - Xf @ q
    inside = Tf <= t_c
    assert abs(inside.sum() - n * p) < 4 * np.sqrt(n * p * (1 - p))
    bound = KS_C * np.sqrt(1 / Tc.size + 1 / inside.sum())
    assert stats.ks_2samp(Tc, Tf[inside]).statistic < bound
    assert stats.ks_2samp(Xc[:, 0], Xf[inside, 0]).statistic < bound
    # negative control: uniform (not exp(x1 x2)) keys in the cap have a different law of x1
    Xu = keys.sample_uniform_sphere(n, 3, rng(13))
    inu = (1 - Xu @ q) <= t_c
    assert stats.ks_2samp(Xc[:, 2], Xu[inu, 2]).statistic > KS_C * np.sqrt(
        1 / Tc.size + 1 / inu.sum()
    )


def test_cap_probability_whole_sphere_and_hemisphere():
    q = np.ones(3) / np.sqrt(3)
    assert sq.cap_probability_x1x2(q, 2.0) == pytest.approx(1.0, abs=1e-13)
    # rho(x) = rho(-x): any hemisphere has probability 1/2
    assert sq.cap_probability_x1x2(q, 1.0) == pytest.approx(0.5, abs=1e-13)
    q2 = np.array([0.6, 0.0, 0.8])
    assert sq.cap_probability_x1x2(q2, 1.0) == pytest.approx(0.5, abs=1e-13)


# --------------------------------------------------------------------------- ordered weights
def test_ordered_weights_against_brute_force():
    r = rng(14)
    K = keys.sample_uniform_sphere(60, 4, r)
    q = keys.sample_uniform_sphere(1, 4, r)[0]
    for beta in (0.0, 0.7, 7.3, 40.0):
        e = np.exp(beta * (K @ q))  # no shift needed at these betas
        brute = np.sort(e / e.sum())[::-1]
        w = keys.ordered_weights(q, K, beta)
        np.testing.assert_allclose(w, brute, rtol=1e-12, atol=1e-300)
        assert w.sum() == pytest.approx(1.0, abs=1e-14)
        assert np.all(np.diff(w) <= 0)
        np.testing.assert_array_equal(keys.ordered_weights(q, K, beta, k=5), w[:5])


def test_ordered_weights_finite_at_beta_1e6():
    """Keys at exact distances T = 1e-3, 1e-3 + ln 2 / beta, 1e-3 + 1e-4: weights 2/3, 1/3, ~e^-100."""
    beta = 1e6
    T = np.array([1e-3, 1e-3 + np.log(2) / beta, 1e-3 + 1e-4])
    K = np.column_stack([1 - T, np.sqrt(T * (2 - T)), np.zeros(3)])
    w = keys.ordered_weights(np.array([1.0, 0.0, 0.0]), K, beta)
    # 1 - <q, x> recovers T to ~1e-16 absolute, i.e. ~1e-10 after multiplying by beta
    np.testing.assert_allclose(w[:2], [2 / 3, 1 / 3], rtol=1e-8)
    assert 0 <= w[2] < 1e-40
    X = keys.sample_uniform_sphere(10_000, 3, rng(15))
    w = keys.ordered_weights(X[0], X[1:], beta)
    assert np.all(np.isfinite(w)) and w[0] > 0 and w.sum() == pytest.approx(1.0, abs=1e-12)


def test_top_weight_from_d2q_matches_ordered_weights():
    T = keys.sample_d2q_uniform(7, 300, 5, rng(16))
    betas = [0.5, 5.0, 50.0, 5e5]
    A = keys.top_weight_from_d2q(T, betas, max_entries=600)  # 2 rows per block
    for i in range(T.shape[0]):
        for j, b in enumerate(betas):
            assert A[i, j] == pytest.approx(keys.ordered_weights_from_d2q(T[i], b)[0], rel=1e-13)


def test_weights_validate_beta():
    with pytest.raises(ValueError, match="beta"):
        keys.weights_from_d2q(np.ones(3), -1.0)


# --------------------------------------------------------------------------- attention output
def test_attention_output_blocked_equals_brute_force():
    r = rng(17)
    K = keys.sample_x1x2(500, r)
    Q = keys.fibonacci_sphere(37)
    for beta in (0.0, 3.0, 300.0):
        S = beta * (Q @ K.T)
        A = np.exp(S - S.max(axis=1, keepdims=True))
        A /= A.sum(axis=1, keepdims=True)
        brute = A @ K
        for block in (500, 1000, 10**7):  # 1 row, 2 rows, all rows per block
            np.testing.assert_allclose(
                keys.attention_output(Q, K, beta, block_entries=block), brute, atol=1e-14
            )
        Y = keys.tangential_displacement(Q, K, beta, block_entries=1000)
        np.testing.assert_allclose(np.einsum("ij,ij->i", Y, Q), 0.0, atol=1e-15)
        np.testing.assert_allclose(Y, brute - np.einsum("ij,ij->i", brute, Q)[:, None] * Q)


def test_fibonacci_grid_is_unit_and_balanced():
    Q = keys.fibonacci_sphere(500)
    np.testing.assert_allclose(np.linalg.norm(Q, axis=1), 1.0, atol=1e-14)
    assert np.abs(Q.mean(axis=0)).max() < 5e-3
    G = Q @ Q.T - 2 * np.eye(500)
    nearest = np.arccos(np.clip(G.max(axis=1), -1, 1))
    assert nearest.min() > 0.5 * np.sqrt(4 * np.pi / 500)  # no two points crowd together


def test_special_function_reference():
    """C_unif through the incomplete beta: F(t) / t^a -> C as t -> 0 (checks the sampler's F)."""
    for d in (3, 5):
        a = (d - 1) / 2
        t = 1e-7
        assert special.betainc(a, a, t / 2) / t**a == pytest.approx(st.c_uniform(d), rel=1e-6)
