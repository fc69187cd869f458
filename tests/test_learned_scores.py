"""Learned query-key matrices and the general score-matrix kernels
(docs/realistic-attention.md#learned-query-key-matrix)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from attnscale.experiments import realistic
from attnscale.layer import tokens
from attnscale.layer.scores import attention as sa
from attnscale.layer.scores import learned as ls


def brute_layer(X, W, beta, alpha=0.0, keep=None, col=None, kappa_col=None):
    """Reference: explicit loops over rows and pairs, lambda from 1 - cos (well conditioned at
    these sizes), scores <W y_i, y_j> (key ``col`` scaled by ``kappa_col`` if given)."""
    n, d = X.shape
    Y = np.array([x / np.sqrt(sum(v * v for v in x)) for x in X])
    W = np.eye(d) if W is None else W
    S = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            S[i, j] = beta * float(np.dot(W @ Y[i], Y[j]))
            if kappa_col is not None and j == col:
                S[i, j] *= kappa_col
    A = np.empty((n, n))
    for i in range(n):
        e = np.exp(S[i] - S[i].max())
        A[i] = e / e.sum()
    Xp = A @ Y + alpha * X
    Yp = Xp / np.linalg.norm(Xp, axis=1, keepdims=True)
    idx = range(n) if keep is None else np.flatnonzero(keep)
    idx = list(idx)
    ratios = [
        (1.0 - Yp[i] @ Yp[j]) / (1.0 - Y[i] @ Y[j]) for a, i in enumerate(idx) for j in idx[a + 1 :]
    ]
    return (
        float(np.mean(ratios)),
        np.diag(A).copy(),
        (A[:, col].copy() if col is not None else None),
    )


@pytest.fixture
def small():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((9, 6)) + 0.8  # positive mean cosine, unequal norms
    return X, rng


@pytest.mark.parametrize("kind", ["identity", "perturbed", "projected", "nonsymmetric"])
@pytest.mark.parametrize("alpha", [0.0, 0.7])
def test_layer_grid_matches_brute_force(small, kind, alpha):
    X, rng = small
    d = X.shape[1]
    W = {
        "identity": None,
        "perturbed": ls.perturbed_identity(d, 0.5, rng),
        "projected": ls.random_projection(d, 2, rng),
        "nonsymmetric": np.eye(d) + 0.3 * rng.standard_normal((d, d)),
    }[kind]
    _, Qm, Km = ls.query_key_rows(X, W)
    betas = [0.0, 0.7, 4.0, 60.0]
    keep = np.ones(9, dtype=bool)
    keep[[0, 4]] = False
    # block_rows and output_entries force several row blocks and beta groups
    res = sa.layer_grid(
        X, Qm, Km, betas, alpha, keep=keep, col=2, block_rows=4, output_entries=2 * X.size
    )
    for k, b in enumerate(betas):
        lam, diag, colm = brute_layer(X, W, b, alpha, keep=keep, col=2)
        # float64 rounding of O(1) quantities over 9 x 6 sums: 1e-10 is 1e5 ulps of margin
        assert res["lambda"][k] == pytest.approx(lam, rel=1e-10, abs=1e-12)
        np.testing.assert_allclose(res["self_weight"][k], diag, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(res["col_mass"][k], colm, rtol=1e-10, atol=1e-14)
    sw, cm = sa.self_weight_grid(Qm, Km, betas, col=2, block_rows=3)
    np.testing.assert_allclose(sw, res["self_weight"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(cm, res["col_mass"], rtol=1e-12, atol=1e-15)
    out = sa.layer_outputs(X, Qm, Km, betas, alpha, block_rows=2)
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    A = np.exp(betas[1] * (Qm @ Km.T))
    A /= A.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out[1], A @ Y + alpha * X, rtol=1e-12, atol=1e-14)


def test_angle_ratio_accurate_near_collapse():
    """Rows 1e-6 apart (1 - cos ~ 1e-12: a Gram matrix gives it to ~1e-4 relative). Reference:
    explicit differences of the normalised rows, sum_k (y_ik - y_jk)^2, accurate to ~1e-10."""
    rng = np.random.default_rng(3)
    u = rng.standard_normal(8)
    V = rng.standard_normal((7, 8))
    Y = u + 1e-6 * V
    Yout = (u + 0.5e-6 * V)[None]
    lam, n_pairs, n_excl = sa.angle_ratio_outputs(Y, Yout)
    Yn = Y / np.linalg.norm(Y, axis=1, keepdims=True)
    On = Yout[0] / np.linalg.norm(Yout[0], axis=1, keepdims=True)
    ref = np.mean(
        [
            np.sum((On[i] - On[j]) ** 2) / np.sum((Yn[i] - Yn[j]) ** 2)
            for i in range(7)
            for j in range(i + 1, 7)
        ]
    )
    assert ref == pytest.approx(0.25, rel=1e-5)  # contracted copy: ratio 1/4 to first order
    # both sides: rounding of the unit rows (~1e-16 per entry) against differences ~1e-6 gives
    # ~1e-10 relative; tolerance 1e-8
    assert lam[0] == pytest.approx(ref, rel=1e-8)
    assert (n_pairs, n_excl) == (21, 0)
    # exact duplicates are left out and counted
    Yd = np.vstack([Y, Y[:1]])
    lam_d, n_pairs_d, n_excl_d = sa.angle_ratio_outputs(Yd, np.vstack([Yout[0], Yout[0, :1]])[None])
    assert (n_pairs_d, n_excl_d) == (28 - 1, 1)
    # the 27 kept pairs: the 21 original ones and the copy of row 0 with rows 1 .. 6
    extra = sum(np.sum((On[0] - On[j]) ** 2) / np.sum((Yn[0] - Yn[j]) ** 2) for j in range(1, 7))
    assert lam_d[0] == pytest.approx((21 * ref + extra) / 27, rel=1e-8)


def test_mean_pair_distance_and_effective_scores_brute(small):
    X, rng = small
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    n = Y.shape[0]
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    ref = np.mean([0.5 * np.sum((Y[i] - Y[j]) ** 2) for i, j in pairs])
    assert sa.mean_pair_distance(Y) == pytest.approx(ref, rel=1e-12)
    W = ls.perturbed_identity(X.shape[1], 0.4, rng)
    _, Qm, Km = ls.query_key_rows(X, W)
    S = np.array([[float((W @ Y[i]) @ Y[j]) for j in range(n)] for i in range(n)])
    s_self, s_cross = ls.effective_scores(Qm, Km)
    assert s_self == pytest.approx(np.mean(np.diag(S)), rel=1e-12)
    assert s_cross == pytest.approx(np.mean([S[i, j] for i, j in pairs]), rel=1e-12)
    sd_self, sd_cross = sa.score_spread(Qm, Km, block_rows=4)
    assert sd_self == pytest.approx(np.std(np.diag(S)), rel=1e-10)
    row_var = [np.var([S[i, j] for j in range(n) if j != i]) for i in range(n)]
    assert sd_cross == pytest.approx(np.sqrt(np.mean(row_var)), rel=1e-10)


def test_critical_beta_matches_root_of_brute_force(small):
    X, rng = small
    W = ls.perturbed_identity(X.shape[1], 0.2, rng)
    _, Qm, Km = ls.query_key_rows(X, W)
    rows = np.arange(9) >= 1

    def f(b):
        return brute_layer(X, W, b)[1][rows].mean() - 0.5

    ref = brentq(f, 0.1, 200.0, xtol=1e-13)
    got = sa.self_weight_critical_beta(Qm, Km, 0.1, 200.0, rows=rows)
    assert got == pytest.approx(ref, rel=1e-9)
    assert np.isnan(sa.self_weight_critical_beta(Qm, Km, 0.01, 0.02))  # no crossing in range


def test_gamma_c_eff_exact_on_simplex_tokens():
    """Simplex tokens: s_self = 1, s_cross = rho, and the simulated crossing of A_ii = 1/2 is
    exactly the finite-n prediction ln(n-1) / (ln n (1 - rho))."""
    n, rho = 24, 0.35
    X = tokens.simplex_exact(n, rho)
    Y, Qm, Km = ls.query_key_rows(X)
    s_self, s_cross = ls.effective_scores(Qm, Km)
    assert (s_self, s_cross) == pytest.approx((1.0, rho), abs=1e-12)
    assert ls.gamma_c_eff(s_self, s_cross) == pytest.approx(1.0 / (1.0 - rho), rel=1e-11)
    g = sa.self_weight_critical_beta(Qm, Km, 0.05, 200.0) / np.log(n)
    assert g == pytest.approx(ls.gamma_c_eff(s_self, s_cross, n), rel=1e-9)


def test_gamma_c_fluct_limits_and_root():
    n = 1000
    assert ls.gamma_c_fluct(1.0, 0.5, 0.0, n) == pytest.approx(
        ls.gamma_c_eff(1.0, 0.5, n), rel=1e-14
    )
    assert ls.gamma_c_fluct(1.0, 0.5, 1e-7, n) == pytest.approx(
        ls.gamma_c_eff(1.0, 0.5, n), rel=1e-9
    )
    g, sd = ls.gamma_c_fluct(1.0, 0.5, 0.05, n), 0.05
    b = g * np.log(n)
    # the root of beta (s_self - s_cross) = ln(n - 1) + beta^2 sd^2 / 2
    assert b * 0.5 == pytest.approx(np.log(n - 1) + 0.5 * b * b * sd * sd, rel=1e-12)
    # no root: the spread beats the gap
    assert ls.gamma_c_fluct(1.0, 0.5, 0.5 / np.sqrt(2 * np.log(n - 1)) * 1.01, n) == np.inf
    assert ls.gamma_c_eff(0.4, 0.5) == np.inf


def test_annealed_sum_of_gaussian_scores_monte_carlo():
    """The annealed step of gamma_c_fluct: for i.i.d. N(s, sd^2) cross-scores,
    E sum_j e^{beta s_j} = (n - 1) e^{beta s + beta^2 sd^2 / 2} (Gaussian moment generating
    function). Checked within 4 standard errors over 400 independent rows."""
    rng = np.random.default_rng(11)
    n, beta, s, sd = 512, 14.0, 0.5, 0.03
    Z = s + sd * rng.standard_normal((400, n - 1))
    per_row = np.exp(beta * (Z - s)).mean(axis=1)
    se = per_row.std(ddof=1) / np.sqrt(per_row.size)
    assert abs(per_row.mean() - np.exp(0.5 * beta**2 * sd**2)) < 4 * se


def test_random_matrices_normalisation():
    rng = np.random.default_rng(5)
    d = 400
    G = ls.goe_matrix(d, rng)
    assert np.allclose(G, G.T)
    off = G[np.triu_indices(d, 1)]
    # sample variance of N = d(d-1)/2 Gaussian entries: SE = sqrt(2/N) / d
    assert abs(off.var() - 1.0 / d) < 4 * np.sqrt(2.0 / off.size) / d
    # spectral edge 2; at d = 400 the Tracy-Widom fluctuation scale is d^{-2/3} ~ 0.02
    assert abs(np.abs(np.linalg.eigvalsh(G)).max() - 2.0) < 0.15
    d, r = 64, 8
    W = ls.random_projection(d, r, rng)
    assert np.allclose(W @ W, (d / r) * W, atol=1e-12)
    assert np.linalg.matrix_rank(W) == r
    assert np.trace(W) == pytest.approx(d, rel=1e-12)
    y = rng.standard_normal((20000, d))
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    v = np.einsum("id,de,ie->i", y, W, y)
    assert abs(v.mean() - 1.0) < 4 * v.std(ddof=1) / np.sqrt(v.size)  # E <W y, y> = 1


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda rng: ls.random_projection(8, 9, rng), "r"),
        (lambda rng: ls.random_projection(8, 0, rng), "r"),
        (lambda rng: ls.perturbed_identity(8, -0.1, rng), "epsilon"),
        (lambda rng: ls.query_key_rows(np.ones((3, 4)), np.eye(3)), "W"),
        (
            lambda rng: sa.layer_grid(
                np.eye(4) + 1, np.eye(4), np.eye(4), [1.0], keep=[1, 0, 0, 0]
            ),
            "keep",
        ),
        (lambda rng: sa.layer_grid(np.eye(4) + 1, np.eye(4), np.eye(4), [-1.0]), "betas"),
        (lambda rng: ls.gamma_c_fluct(1.0, 0.5, -0.1, 10), "sd_cross"),
    ],
)
def test_bad_input_names_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call(np.random.default_rng(0))


def test_learned_entry_reproducible_and_checked():
    kw = dict(
        root_seed=123, n=16, d=8, rho=0.5, gammas=[1.0, 3.0], epsilons=[0.3], ranks=[2], trial=0
    )
    a = realistic.learned_qk(**kw)
    b = realistic.learned_qk(**kw)
    for k in ("curves", "critical"):
        assert a[k].equals(b[k])
    crit = a["critical"]
    assert list(crit["kind"]) == ["identity", "perturbed", "projected"]
    assert crit["rho_hat"].nunique() == 1  # one token draw shared by every W
    other = realistic.learned_qk(**{**kw, "trial": 1})["critical"]
    assert other["rho_hat"].iloc[0] != crit["rho_hat"].iloc[0]  # trials differ
    with pytest.raises(ValueError, match="r must be <= 8"):
        realistic.learned_qk(**{**kw, "ranks": [9]})
    with pytest.raises(ValueError, match="epsilon"):
        realistic.learned_qk(**{**kw, "epsilons": [-1.0]})
