"""The row-sampled estimators of lambda and eta (docs/long-context.md).

Where each tolerance comes from:

* **Exact identities** (every row sampled reproduces the dense kernels; a sampled kernel equals the
  estimator applied to its rows' exact values; ``R_i`` against ``jax.jacfwd``): rounding only.
  lambda to ``1e-12`` relative (at d = 2 a ratio with ``1 - <y_i, y_j>`` near the near-pair
  threshold ``1e-6`` carries ``~1e-10`` relative rounding in either kernel, averaged over many
  pairs), eta to ``1e-12`` relative at moderate beta; ``R_i`` to ``10 eps (1 + beta)^2`` relative
  (``||C P_i||^2`` is a difference of O(1) terms multiplied by ``beta^2``, as in
  ``attnscale.layer.dense.eta_exact``).
* **Finite differences**: central differences with step ``h = 1e-6`` have truncation error
  ``~h^2`` times third derivatives (``~beta^3``) and rounding ``eps / h``: ``1e-6`` relative at
  ``beta <= 5``.
* **Exact unbiasedness of the estimators**: every sample of small designs is enumerated, so the mean
  of the estimate and of the variance estimate over samples equal the true value and variance up
  to rounding (``1e-12``).
* **Monte Carlo over subsamples** (``S`` subsamples of ``m`` rows; the kernels' outputs on a
  subsample are exactly the estimator applied to the subsample's rows of the all-row values, which
  the bridge test checks to 1e-12, so the subsamples are evaluated from those values): the mean
  lies within 3 of its standard errors ``sd / sqrt(S)`` of the dense value; the spread over
  subsamples divided by the mean reported SE lies in ``[0.8, 1.25]`` (``S = 400``: the sd is known
  to ~4 %, so the interval is ~5 sd wide on each side of 1).
* **Probe noise**: the mean of ``K`` probe estimates of ``R_i`` lies within 4 of its standard
  errors (from the probes' own spread) of the exact ``R_i``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from attnscale.layer.causal.angle_ratio import angle_ratio_grid_rows
from attnscale.layer.causal.attention import forward_rows
from attnscale.layer.dense.attention import angle_ratio, angle_ratio_grid, forward
from attnscale.layer.dense.eta_exact import eta_exact_grid
from attnscale.layer.sampled.angle_ratio import (
    angle_ratio_sampled,
    pair_ratio_block,
    sampled_outputs,
)
from attnscale.layer.sampled.eta import eta_sampled, row_jacobian_norms
from attnscale.layer.sampled.pairs import (
    pair_block_sums,
    pair_estimate,
    pair_estimate_from_sums,
    pair_variance_from_sums,
)
from attnscale.layer.sampled.rows import row_sample, sample_rows, stratified_mean
from attnscale.layer.tokens import near_simplex

SEED = 20261201
N, M, S = 512, 128, 400  # tokens, sampled rows, subsamples of the Monte Carlo tests
EPS = np.finfo(float).eps


def rel(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b) / np.abs(b)))


def gammas(rho):
    """Below, at and above Paper A's critical line gamma_c = 1 / (1 - rho)."""
    return np.array([0.7, 1.0, 1.3]) / (1.0 - rho)


# ------------------------------------------------------------------ the design and the estimators


def test_sample_rows_draws_distinct_sorted_rows_in_equal_shares():
    s = sample_rows(1000, 100, np.random.default_rng(SEED), strata=4, head=4)
    assert s.m == 100 and np.all(np.diff(s.rows) > 0)
    assert s.edges.tolist() == [0, 4, 253, 502, 751, 1000]
    assert s.counts.tolist() == [4, 24, 24, 24, 24]
    assert np.all((s.rows >= s.edges[s.stratum]) & (s.rows < s.edges[s.stratum + 1]))
    again = sample_rows(1000, 100, np.random.default_rng(SEED), strata=4, head=4)
    assert np.array_equal(s.rows, again.rows)  # reproducible from the seed
    every = sample_rows(50, 50)  # all rows: no generator needed
    assert np.array_equal(every.rows, np.arange(50))


def _all_samples(edges, counts):
    per = [itertools.combinations(range(edges[k], edges[k + 1]), c) for k, c in enumerate(counts)]
    for combo in itertools.product(*per):
        yield np.sort(np.concatenate([np.array(c, dtype=np.int64) for c in combo]))


@pytest.mark.parametrize(
    "n, edges, counts",
    [
        (9, [0, 9], [5]),
        (11, [0, 4, 11], [4, 4]),
        (12, [0, 5, 8, 12], [4, 3, 4]),
        (12, [0, 2, 12], [2, 5]),
    ],
)
def test_pair_estimator_and_its_variance_are_exactly_unbiased(n, edges, counts):
    """Enumerating every sample of the design: E[estimate] = theta and E[variance estimate] =
    Var(estimate), the U-statistic's exact finite-population variance (second-order term
    included); the last design has a head stratum sampled in full."""
    rng = np.random.default_rng(SEED)
    H = rng.random((2, n, n)) ** 3  # two pair functions, skewed
    H = H + H.transpose(0, 2, 1)
    theta = H[:, ~np.eye(n, dtype=bool)].mean(axis=1)
    ests, vars_ = [], []
    for rows in _all_samples(edges, counts):
        s = row_sample(n, rows, edges)
        m = rows.size
        keep = ~np.eye(m, dtype=bool)
        sums = pair_block_sums(H[:, rows][:, :, rows], keep, np.arange(m), s)
        est, var = pair_variance_from_sums(sums, s)
        ests.append(est)
        vars_.append(var)
    ests, vars_ = np.array(ests), np.array(vars_)
    assert np.allclose(ests.mean(axis=0), theta, rtol=0, atol=1e-12)
    assert np.allclose(vars_.mean(axis=0), ests.var(axis=0), rtol=1e-10, atol=1e-15)
    census = row_sample(n, np.arange(n), edges)
    est, se = pair_estimate(H, census)
    assert np.allclose(est, theta, atol=1e-12) and np.all(se == 0.0)


def test_stratified_mean_is_exactly_unbiased_and_counts_probe_noise():
    """Enumeration over samples for exact values; for noisy values (independent noise of known
    variance nu_i, averaged analytically: E s^2 gains the mean nu of the stratum) the variance
    estimate with ``noise_var`` is unbiased and the one with ``"unknown"`` is not smaller."""
    n, edges, counts = 11, [0, 4, 11], [2, 3]
    rng = np.random.default_rng(SEED)
    v, nu = rng.random(n) ** 3, 0.05 * rng.random(n)
    s0 = row_sample(n, np.array([0, 1, 4, 5, 6]), edges)
    w = s0.sizes / n
    ests, var0, var_nu, var_unk, extra = [], [], [], [], []
    for rows in _all_samples(edges, counts):
        s = row_sample(n, rows, edges)
        est, se = stratified_mean(v[rows], s)
        ests.append(est[0])
        var0.append(se[0] ** 2)
        # noise: Var(estimate) gains sum_l w_l^2 mean_{S_l}(nu) / m_l; E s_l^2 gains mean_{S_l}(nu)
        nu_l = np.bincount(s.stratum, nu[rows]) / s.counts
        extra.append(np.sum(w**2 * nu_l / s.counts))
        _, se_nu = stratified_mean(v[rows], s, nu[rows])
        var_nu.append(se_nu[0] ** 2 + np.sum(w**2 * (1 - s.counts / s.sizes) * nu_l / s.counts))
        _, se_unk = stratified_mean(v[rows], s, "unknown")
        var_unk.append(se_unk[0] ** 2 + np.sum(w**2 * nu_l / s.counts))
    ests = np.array(ests)
    assert abs(ests.mean() - v.mean()) < 1e-14
    assert abs(np.mean(var0) - ests.var()) < 1e-14
    true_noisy = ests.var() + np.mean(extra)
    assert abs(np.mean(var_nu) - true_noisy) < 1e-14
    assert np.mean(var_unk) >= true_noisy


# ------------------------------------------------------------------ exact identities


@pytest.mark.parametrize("d", [2, 32, 512])
def test_sampled_lambda_with_all_rows_is_the_dense_kernel(d):
    """m = n (odd row blocks and key tiles): lambda and its diagnostics equal the dense
    bidirectional kernel, and the causal kernel with per-position and global beta; SE is 0.

    At d = 2 the dense grid kernel itself is off by ~3e-12 relative (its identity
    ``sum W - sum <y', W y'>`` cancels large weights ``W = 1 / (1 - <y_i, y_j>)``; measured against
    a long-double evaluation, where the sampled kernel is off by ~2e-14), so there the reference at
    1e-12 is the pair-by-pair :func:`attnscale.layer.dense.attention.angle_ratio` and the dense grid is
    matched to 1e-11."""
    n = 384
    X = near_simplex(n, d, 0.5, np.random.default_rng(SEED + d))
    betas = gammas(0.5) * np.log(n)
    perpos = gammas(0.5)[:, None] * np.log(np.arange(1, n + 1))[None]
    for alpha in (0.0, 0.5):
        lam, diag = angle_ratio_grid(X, betas, alpha, return_diagnostics=True)
        got = angle_ratio_sampled(X, betas, alpha, rows=n, block_rows=100, key_block=77)
        assert rel(got.estimate, lam) < (1e-11 if d == 2 else 1e-12) and np.all(got.se == 0.0)
        if d == 2:
            assert rel(got.estimate, [angle_ratio(X, b, alpha) for b in betas]) < 1e-12
        assert (got.n_pairs, got.n_near_pairs, got.n_excluded_pairs) == tuple(diag.values())
        assert (d == 2) == (got.n_near_pairs > 0)  # d = 2 exercises the near pairs
        for grid in (perpos, np.repeat(betas[:, None], n, axis=1)):
            lam_c = angle_ratio_grid_rows(X, grid, alpha, causal=True)
            got_c = angle_ratio_sampled(X, grid, alpha, rows=n, causal=True, key_block=50)
            assert rel(got_c.estimate, lam_c) < 1e-12 and np.all(got_c.se == 0.0)


@pytest.mark.parametrize("d", [2, 32, 512])
def test_sampled_eta_with_all_rows_is_the_dense_exact_eta(d):
    n = 256
    X = near_simplex(n, d, 0.5, np.random.default_rng(SEED + d))
    betas = gammas(0.5) * np.log(n)
    for alpha in (0.0, 0.5):
        got = eta_sampled(X, betas, alpha, rows=n, route="exact", key_block=60, block_rows=50)
        assert rel(got.estimate, eta_exact_grid(X, betas, alpha)) < 1e-12
        assert np.all(got.se == 0.0)


def _layer_jacobian(n, d, causal):
    """``J[i, a, k, b] = d x'_{ia} / d x_{kb}`` of the whole layer with ``jax.jacfwd`` (jit)."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def layer(X, beta, alpha):
        Y = X / jnp.linalg.norm(X, axis=1, keepdims=True)
        s = beta[:, None] * (Y @ Y.T)
        if causal:
            s = jnp.where(jnp.tril(jnp.ones((n, n), dtype=bool)), s, -jnp.inf)
        return jax.nn.softmax(s, axis=1) @ Y + alpha * X

    return jax.jit(jax.jacfwd(layer))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d", [2, 5])
def test_row_norms_match_jax_jacfwd(d, causal):
    """R_i of both routes (at d = 2 the probe is exact: the tangent space is a line) against
    ``jax.jacfwd`` of the layer, per-row beta up to 1e3, alpha 0 and 0.5; and with the causal mask
    the sum over rows is the dense Jacobian's eta."""
    n = 9
    rng = np.random.default_rng(SEED)
    X = rng.standard_normal((n, d)) + 0.3
    jac = _layer_jacobian(n, d, causal)
    rows = np.arange(n)
    for beta in (0.0, 0.7, 30.0, 1e3):
        bvec = beta * np.linspace(0.5, 1.5, n)
        for alpha in (0.0, 0.5):
            J = np.asarray(jac(X, bvec, alpha))
            ref = np.sum(J**2, axis=(1, 2, 3))
            tol = 10 * EPS * (1 + beta) ** 2
            for route in ("exact", "probe") if d == 2 else ("exact",):
                R, _ = row_jacobian_norms(
                    X,
                    bvec[None],
                    alpha,
                    rows=rows,
                    route=route,
                    rng=rng,
                    causal=causal,
                    key_block=4,
                    block_rows=3,
                )
                assert np.max(np.abs(R[0] - ref)) <= tol * ref.max()
            if causal and beta <= 30:
                got = eta_sampled(X, bvec[None], alpha, rows=n, causal=True, route="exact")
                assert rel(got.estimate, [ref.sum() / (n * d)]) < 1e-12


def test_row_norms_match_finite_differences():
    """Central differences of the numpy forward pass (bidirectional and causal, per-row beta)."""
    n, d, h = 7, 4, 1e-6
    rng = np.random.default_rng(SEED)
    X = rng.standard_normal((n, d))
    for causal in (False, True):
        for beta in (0.7, 5.0):
            bvec = beta * np.linspace(0.5, 1.5, n)
            J = np.empty((n, d, n * d))
            for c in range(n * d):
                E = np.zeros(n * d)
                E[c] = h
                plus, minus = X + E.reshape(n, d), X - E.reshape(n, d)
                if causal:
                    diff = forward_rows(plus, bvec, 0.5) - forward_rows(minus, bvec, 0.5)
                else:
                    diff = forward(plus, bvec, 0.5) - forward(minus, bvec, 0.5)
                J[:, :, c] = diff / (2 * h)
            R, _ = row_jacobian_norms(
                X, bvec[None], 0.5, rows=np.arange(n), route="exact", causal=causal
            )
            assert rel(R[0], np.sum(J**2, axis=(1, 2))) < 1e-6


def test_diagonal_term_is_not_a_function_of_per_key_scalars():
    """Two sets of keys around the query y_0 = e_1 in d = 4, all at cosine 0.6 with it and
    balanced (so a_j, g_j, K_j, r_j and m agree), one a square and one a tetrahedron in the
    orthogonal complement: R_0 differs (0.9162 against 0.8800 at beta = 1), through
    ||S||_F^2 = sum_jl a_j a_l <y_j, y_l>^2 alone, which is why the exact route costs O(n d^2) or
    O(n^2) per row (docs/long-context.md#the-jacobian-norm-of-one-output-row)."""
    c, s = 0.6, 0.8
    square = np.array([[0, 1, 0, 0], [0, -1, 0, 0], [0, 0, 1, 0], [0, 0, -1, 0]], dtype=float)
    tetra = np.hstack(
        [
            np.zeros((4, 1)),
            np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]]) / np.sqrt(3),
        ]
    )
    R0, scalars = [], []
    for U in (square, tetra):
        X = np.vstack([[1.0, 0, 0, 0], c * np.eye(4)[0] + s * U])
        a = np.exp(X @ X[0] - 1.0)
        a /= a.sum()
        m = a @ X
        scalars.append(np.concatenate([a, X @ X[0], X @ m, m]))
        R, _ = row_jacobian_norms(X, [1.0], 0.0, rows=np.arange(5), route="exact")
        R0.append(R[0, 0])
    assert np.allclose(scalars[0], scalars[1], atol=1e-15)
    assert abs(R0[0] - 0.91617158) < 1e-8 and abs(R0[1] - 0.87995601) < 1e-8


@pytest.mark.parametrize("d", [5, 512])
def test_probe_route_is_unbiased_per_row(d):
    """K tangent probes per row: the mean estimate of R_i is within 4 SE of the exact R_i, the SE
    from the probes' spread (returned as the noise variance of the mean)."""
    n, K = 16, 400
    X = near_simplex(n, d, 0.5, np.random.default_rng(SEED))
    betas = np.array([2.0, 8.0]) * np.log(n)
    rows = np.arange(n)
    exact, _ = row_jacobian_norms(X, betas, 0.5, rows=rows, route="exact")
    mean, noise = row_jacobian_norms(
        X, betas, 0.5, rows=rows, probes=K, rng=np.random.default_rng(SEED)
    )
    z = (mean - exact) / np.sqrt(noise)
    assert np.all(np.abs(z) < 4), z
    assert np.all(noise > 0)


def _all_row_values(X, betas, alpha, causal=False):
    """Unit outputs, pair ratios (with keep) and exact R_i of every row."""
    n = X.shape[0]
    rows = np.arange(n)
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    Yp = sampled_outputs(X, betas, alpha, rows=rows, causal=causal)
    Yp /= np.linalg.norm(Yp, axis=2, keepdims=True)
    H, keep, _ = pair_ratio_block(Y, Y, Yp, Yp, rows)
    R, _ = row_jacobian_norms(X, betas, alpha, rows=rows, route="exact", causal=causal)
    return H, keep, R / X.shape[1]


def _subsample_estimates(H, keep, V, samples):
    """The estimators on each subsample's rows of the all-row values, vectorised over subsamples
    (they share one design, and only the design enters the estimators): the per-row, per-stratum
    sums that :func:`attnscale.layer.sampled.pairs.pair_block_sums` forms from a subsample's pair
    matrix are read off ``H @ Z`` with ``Z`` the subsamples' indicator columns, then the library's
    estimators run on them."""
    design = samples[0]
    idx = np.array([s.rows for s in samples])  # (k, m)
    k, m = idx.shape
    B, L = H.shape[0], design.edges.size - 1
    Hk = np.where(keep[None], H, 0.0)
    cols = np.arange(k)[:, None]
    sums = {"h": np.empty((k, B, m, L)), "h2": np.empty((k, B, m, L)), "n": np.empty((k, m, L))}
    H2, K = Hk * Hk, keep.astype(float)
    for s in range(L):
        p0, p1 = design.edges[s], design.edges[s + 1]
        Z = np.zeros((p1 - p0, k))  # Z[j - p0, c] = 1: row j of stratum s is in subsample c
        inside = design.stratum == s
        Z[idx[:, inside] - p0, np.repeat(cols, inside.sum(), axis=1)] = 1.0
        for key, A in (("h", Hk), ("h2", H2)):
            sums[key][..., s] = (A[:, :, p0:p1] @ Z)[:, idx, cols].transpose(1, 0, 2)
        sums["n"][..., s] = (K[:, p0:p1] @ Z)[idx, cols]
    sums = {
        "h": sums["h"].reshape(k * B, m, L),
        "h2": sums["h2"].reshape(k * B, m, L),
        "n": np.repeat(sums["n"], B, axis=0),
    }
    lam, lam_se = pair_estimate_from_sums(sums, design)
    eta, eta_se = stratified_mean(V[:, idx].transpose(1, 0, 2).reshape(k * B, m), design)
    return [a.reshape(k, B) for a in (lam, lam_se, eta, eta_se)]


def test_sampled_kernels_equal_the_estimators_of_their_rows():
    """The bridge of the Monte Carlo tests: on a given subsample the kernels return the estimators
    applied to that subsample's rows of the all-row values (bidirectional; causal and stratified)."""
    rng = np.random.default_rng(SEED)
    X = near_simplex(N, 32, 0.5, rng)
    betas = gammas(0.5) * np.log(N)
    for causal in (False, True):
        grid = gammas(0.5)[:, None] * np.log(np.arange(1, N + 1)) if causal else betas
        H, keep, V = _all_row_values(X, grid, 0.5, causal)
        samples = [
            sample_rows(N, M, rng, **({"strata": 4, "head": 4} if causal else {})) for _ in range(3)
        ]
        lam, lam_se, eta, eta_se = _subsample_estimates(H, keep, V, samples)
        for k, s in enumerate(samples):
            got = angle_ratio_sampled(X, grid, 0.5, rows=s, causal=causal, key_block=100)
            assert rel(got.estimate, lam[k]) < 1e-12 and rel(got.se, lam_se[k]) < 1e-9
            got = eta_sampled(X, grid, 0.5, rows=s, causal=causal, route="exact")
            assert rel(got.estimate, eta[k]) < 1e-12 and rel(got.se, eta_se[k]) < 1e-9


@pytest.fixture(scope="module")
def subsamples():
    rng = np.random.default_rng(SEED + 1)
    return [sample_rows(N, M, rng) for _ in range(S)]


@pytest.mark.parametrize("d", [2, 32, 512])
def test_sampled_lambda_and_eta_are_unbiased_with_honest_se(d, subsamples):
    """Over S = 400 subsamples of m = 128 of n = 512 rows, rho = 0.2, 0.5, 0.8, alpha = 0, 0.5,
    gamma below / at / above gamma_c: the mean estimate lies within 3 SE of the dense exact value
    (angle_ratio_grid, eta_exact_grid) and, at d = 32 and 512, the spread over subsamples divided
    by the mean reported SE lies in [0.8, 1.25]. At d = 2 the row values are heavy-tailed (1 / r_i^2
    with r_i^2 ~ chi^2_2 for eta; pairs nearly coincident in direction but not in norm for lambda
    with alpha > 0), so a sample rarely sees the rows that dominate the variance: the estimates
    stay unbiased, but the SE of one sample is not an honest error bar there
    (docs/long-context.md#standard-error-of-the-sampled-lambda)."""
    for rho in (0.2, 0.5, 0.8):
        X = near_simplex(N, d, rho, np.random.default_rng(SEED + d))
        betas = gammas(rho) * np.log(N)
        for alpha in (0.0, 0.5):
            H, keep, V = _all_row_values(X, betas, alpha)
            # the mean of the exact R_i / d over all rows is eta_exact_grid's value (to 1e-12,
            # test_sampled_eta_with_all_rows_is_the_dense_exact_eta)
            dense = (angle_ratio_grid(X, betas, alpha), V.mean(axis=1))
            lam, lam_se, eta, eta_se = _subsample_estimates(H, keep, V, subsamples)
            for est, se, ref in ((lam, lam_se, dense[0]), (eta, eta_se, dense[1])):
                spread = est.std(axis=0, ddof=1)
                assert np.all(np.abs(est.mean(axis=0) - ref) <= 3 * spread / np.sqrt(S))
                if d > 2:
                    ratio = spread / se.mean(axis=0)
                    assert np.all((ratio > 0.8) & (ratio < 1.25)), (rho, alpha, ratio)


def test_probe_route_eta_is_unbiased_with_honest_se():
    """The probe route through the public kernel: 150 calls with fresh row draws and probes
    (d = 32). Two probes per row, so that the SE carries the estimated probe noise with the
    finite-population correction and its expected ratio to the spread is 1; with one probe (the
    default) the SE drops the correction and is conservative by up to ``1 / sqrt(1 - m / n)``
    (1.15 here: test_stratified_mean_is_exactly_unbiased_and_counts_probe_noise)."""
    rng = np.random.default_rng(SEED + 2)
    X = near_simplex(N, 32, 0.5, rng)
    betas = gammas(0.5) * np.log(N)
    ref = eta_exact_grid(X, betas, 0.5)
    calls = 150
    res = [eta_sampled(X, betas, 0.5, rows=M, rng=rng, probes=2) for _ in range(calls)]
    est = np.array([r.estimate for r in res])
    se = np.array([r.se for r in res])
    spread = est.std(axis=0, ddof=1)
    assert np.all(np.abs(est.mean(axis=0) - ref) <= 3 * spread / np.sqrt(calls))
    ratio = spread / se.mean(axis=0)
    assert np.all((ratio > 0.8) & (ratio < 1.25)), ratio


def test_causal_stratified_estimators_are_unbiased_with_honest_se():
    """Causal mask, per-position and global beta, the default causal design (8 strata after a
    head of 8 positions), n = 512, d = 32, m = 128: unbiased within 3 SE, honest SE."""
    n, d = N, 32
    rng = np.random.default_rng(SEED + 3)
    X = near_simplex(n, d, 0.5, rng)
    g = gammas(0.5)
    ln = np.log(np.arange(1, n + 1))
    samples = [sample_rows(n, M, rng, strata=8, head=8) for _ in range(S)]
    assert (
        angle_ratio_sampled(X, g * np.log(n), rows=M, rng=rng, causal=True).rows.counts.tolist()
        == samples[0].counts.tolist()
    )  # the default causal design
    for grid in (g[:, None] * ln[None], np.repeat(g[:, None] * np.log(n), n, axis=1)):
        H, keep, V = _all_row_values(X, grid, 0.0, causal=True)
        dense_lam = angle_ratio_grid_rows(X, grid, 0.0, causal=True)
        dense_eta = V.mean(axis=1)  # = the dense Jacobian's eta (checked against jax.jacfwd)
        lam, lam_se, eta, eta_se = _subsample_estimates(H, keep, V, samples)
        for est, se, ref in ((lam, lam_se, dense_lam), (eta, eta_se, dense_eta)):
            spread = est.std(axis=0, ddof=1)
            assert np.all(np.abs(est.mean(axis=0) - ref) <= 3 * spread / np.sqrt(S))
            ratio = spread / se.mean(axis=0)
            assert np.all((ratio > 0.8) & (ratio < 1.25)), ratio


# ------------------------------------------------------------------ argument errors

X0 = near_simplex(16, 3, 0.5, np.random.default_rng(0))


@pytest.mark.parametrize(
    "func, kwargs, name",
    [
        (angle_ratio_sampled, {"X": np.zeros((16, 3))}, "X"),
        (angle_ratio_sampled, {"betas": [-1.0]}, "betas"),
        (angle_ratio_sampled, {"betas": np.ones((2, 5))}, "betas"),
        (angle_ratio_sampled, {"alpha": -0.1}, "alpha"),
        (angle_ratio_sampled, {"rows": 1}, "rows"),
        (angle_ratio_sampled, {"rows": 17}, "rows"),
        (angle_ratio_sampled, {"rows": np.array([3, 3, 4])}, "rows"),
        (angle_ratio_sampled, {"rows": np.array([0, 16])}, "rows"),
        (angle_ratio_sampled, {"rows": 8, "strata": 5}, "strata"),
        (angle_ratio_sampled, {"rows": 8, "head": 7}, "head"),
        (angle_ratio_sampled, {"rows": 8, "rng": None}, "rng"),
        (angle_ratio_sampled, {"block_rows": 0}, "block_rows"),
        (angle_ratio_sampled, {"key_block": 0}, "key_block"),
        (angle_ratio_sampled, {"output_entries": 0}, "output_entries"),
        (eta_sampled, {"route": "dense"}, "route"),
        (eta_sampled, {"probes": 0}, "probes"),
        (eta_sampled, {"rows": 16, "rng": None}, "rng"),
        (eta_sampled, {"rows": 8, "strata": 0}, "strata"),
    ],
)
def test_arguments_are_checked_before_any_work(func, kwargs, name):
    args = {"X": X0, "betas": [1.0, 2.0], "rows": 8, "rng": np.random.default_rng(0)} | kwargs
    with pytest.raises((ValueError, TypeError), match=name):
        func(**args)


def test_results_do_not_depend_on_the_number_of_threads(monkeypatch):
    """The element-wise passes run on row slices in as many threads as BLAS may use; every row goes
    through the same operations whatever the split, so 1, 2 and 3 threads agree bit for bit."""
    from attnscale.layer import _threads

    X = near_simplex(N, 16, 0.5, np.random.default_rng(SEED))
    betas = gammas(0.5)[:, None] * np.log(np.arange(1, N + 1))[None]
    runs = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(_threads, "blas_threads", lambda k=threads: k)
        runs.append(
            (
                angle_ratio_sampled(
                    X, betas, 0.5, rows=M, rng=np.random.default_rng(1), causal=True
                ).estimate,
                eta_sampled(
                    X, betas, 0.5, rows=M, rng=np.random.default_rng(1), causal=True, probes=2
                ).values,
            )
        )
    for run in runs[1:]:
        for a, b in zip(runs[0], run, strict=True):
            assert np.array_equal(a, b)
