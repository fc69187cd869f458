"""Causal mask and per-row scaling (docs/realistic-attention.md#causal-mask) against brute force.

Every kernel is compared with loop-level implementations (one row at a time, ``math.exp``) at
small n. Tolerance 1e-10: float64 rounding of sums of ~n terms of size <= 1 is ~n * 1e-16.
"""

import math

import numpy as np
import pytest

from attnscale.bench.causal import bench_causal
from attnscale.core import softmax
from attnscale.experiments import causal as exp_causal
from attnscale.layer import _threads, tokens
from attnscale.layer.causal import angle_ratio as causal_lambda
from attnscale.layer.causal import attention as causal
from attnscale.layer.causal import blocks as causal_blocks
from attnscale.layer.causal import theory as causal_theory
from attnscale.layer.dense import attention

TOL = 1e-10


def brute_forward(X, beta_rows, alpha=0.0, causal_mask=True):
    """Row by row: scores beta_i <y_i, y_j> over the visible keys, max-shifted math.exp."""
    n, d = X.shape
    Y = [x / math.sqrt(sum(v * v for v in x)) for x in X.tolist() for x in [np.array(x)]]
    out, aii = [], []
    for i in range(n):
        keys = range(i + 1) if causal_mask else range(n)
        s = [beta_rows[i] * float(np.dot(Y[i], Y[j])) for j in keys]
        m = max(s)
        w = [math.exp(v - m) for v in s]
        z = sum(w)
        out.append(sum(w[k] / z * Y[j] for k, j in enumerate(keys)) + alpha * X[i])
        aii.append(w[i] / z)
    return np.array(out), np.array(aii)


def brute_lambda(X, Xp):
    """Mean over pairs i < j of ||y'_i - y'_j||^2 / ||y_i - y_j||^2 (no Gram cancellation)."""
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    Yp = Xp / np.linalg.norm(Xp, axis=1, keepdims=True)
    n = len(X)
    return float(
        np.mean(
            [
                np.sum((Yp[i] - Yp[j]) ** 2) / np.sum((Y[i] - Y[j]) ** 2)
                for i in range(n)
                for j in range(i + 1, n)
            ]
        )
    )


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(5)
    return tokens.near_simplex(23, 6, 0.4, rng) * np.linspace(0.5, 2.0, 23)[:, None]


def scalings(n):
    return {
        "scalar": 3.0,
        "position": 2.5 * np.log(np.arange(1, n + 1)),
        "random": np.random.default_rng(1).uniform(0, 30, n),
    }


@pytest.mark.parametrize("kind", ["scalar", "position", "random"])
@pytest.mark.parametrize("alpha", [0.0, 0.5])
@pytest.mark.parametrize("block_rows", [None, 1, 4, 23])
def test_forward_causal_against_brute_force(X, kind, alpha, block_rows):
    beta = scalings(len(X))[kind]
    ref, aii = brute_forward(X, np.broadcast_to(beta, (len(X),)), alpha)
    got, got_aii = causal.forward_rows(
        X, beta, alpha, block_rows=block_rows, return_self_weight=True
    )
    np.testing.assert_allclose(got, ref, rtol=0, atol=TOL)
    np.testing.assert_allclose(got_aii, aii, rtol=0, atol=TOL)
    assert got_aii[0] == 1.0  # the first query sees one key
    np.testing.assert_allclose(attention.forward(X, beta, alpha, causal=True), ref, atol=TOL)


def test_row_scaled_bidirectional_against_brute_force(X):
    beta = scalings(len(X))["random"]
    ref, _ = brute_forward(X, beta, 0.3, causal_mask=False)
    np.testing.assert_allclose(attention.forward(X, beta, 0.3), ref, atol=TOL)
    lam = attention.angle_ratio_grid(X, beta[None, :], 0.3, block_rows=5)[0]
    assert abs(lam - brute_lambda(X, ref)) < TOL


def test_causal_false_scalar_path_is_unchanged(X):
    """The original dense path: identical bits to the formula it always computed."""
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    expect = attention.softmax_rows(2.0 * (Y @ Y.T)) @ Y + 0.5 * X
    assert np.array_equal(attention.forward(X, 2.0, 0.5), expect)
    assert np.array_equal(attention.forward(X, 2.0, 0.5, causal=False), expect)


@pytest.mark.parametrize("block_rows", [None, 1, 6, 23])
def test_lambda_grid_causal_against_brute_force(X, block_rows):
    n = len(X)
    sc = scalings(n)
    grid = np.vstack([np.full(n, 0.0), np.full(n, sc["scalar"]), sc["position"], sc["random"]])
    got = attention.angle_ratio_grid(
        X, grid, 0.2, causal=True, block_rows=block_rows, output_entries=2 * n * X.shape[1]
    )  # groups of 2 betas
    for k in range(grid.shape[0]):
        ref = brute_lambda(X, brute_forward(X, grid[k], 0.2)[0])
        assert abs(got[k] - ref) < TOL
    scalar = attention.angle_ratio_grid(X, [0.0, sc["scalar"]], 0.2, causal=True)
    np.testing.assert_allclose(scalar, got[:2], atol=TOL)


def test_lambda_grid_near_pairs_exact():
    """Duplicated and nearly duplicated tokens: near pairs recomputed exactly, exact duplicates
    left out (as in the bidirectional kernel)."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((12, 3))
    X[5] = X[2]
    X[7] = X[1] + 1e-6 * rng.standard_normal(3)
    beta = 4.0
    lam, diag = attention.angle_ratio_grid(
        X, [beta], causal=True, return_diagnostics=True, block_rows=5
    )
    Xp = brute_forward(X, np.full(12, beta))[0]
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    Yp = Xp / np.linalg.norm(Xp, axis=1, keepdims=True)
    vals = [
        np.sum((Yp[i] - Yp[j]) ** 2) / np.sum((Y[i] - Y[j]) ** 2)
        for i in range(12)
        for j in range(i + 1, 12)
        if (i, j) != (2, 5)
    ]
    assert diag["n_excluded_pairs"] == 1 and diag["n_near_pairs"] == 2
    # the near pair's outputs differ by ~1e-6, so output rounding of ~1e-16 enters its ratio
    # with a relative weight ~1e-16 / 1e-6 = 1e-10; 1e-8 leaves room for the 65 other pairs
    assert lam[0] == pytest.approx(np.mean(vals), rel=1e-8)


def test_self_weights_and_query_block(X):
    n = len(X)
    sc = scalings(n)
    grid = np.vstack([np.full(n, sc["scalar"]), sc["position"]])
    sw = causal.self_weights(X, grid, block_rows=7)
    qb = causal.query_block(X, grid, 15, n)
    for k in range(2):
        out, aii = brute_forward(X, grid[k])
        np.testing.assert_allclose(sw[k], aii, atol=TOL)
        np.testing.assert_allclose(qb["self_weight"][k], aii[15:], atol=TOL)
        np.testing.assert_allclose(qb["outputs"][k], out[15:], atol=TOL)


def test_causal_softmax_reference(X):
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    beta = scalings(len(X))["position"]
    A = causal.causal_softmax(Y @ Y.T, beta)
    assert np.all(np.triu(A, 1) == 0.0)
    np.testing.assert_allclose(A @ Y, brute_forward(X, beta)[0], atol=TOL)


def test_causal_softmax_is_the_one_row_softmax(X):
    """The causal reference is the library's one row softmax (attnscale.core.softmax) of the
    masked scores, bit for bit the inline form it replaced; the dense module's name is the same
    function."""
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    beta = scalings(len(X))["position"]
    T = np.where(np.tri(len(X), dtype=bool), beta[:, None] * (Y @ Y.T), -np.inf)
    E = np.exp(T - T.max(axis=1, keepdims=True))
    A = causal.causal_softmax(Y @ Y.T, beta)
    assert np.array_equal(A, E / E.sum(axis=1, keepdims=True))
    assert np.array_equal(A, softmax.softmax_rows(T))
    A2, log_mass = softmax.softmax_rows(T, log_mass=True)
    assert np.array_equal(A2, A)
    np.testing.assert_allclose(log_mass, np.log(np.exp(T).sum(axis=1)), rtol=1e-13)
    assert attention.softmax_rows is softmax.softmax_rows


@pytest.mark.parametrize("rho", [0.2, 0.7])
@pytest.mark.parametrize("alpha", [0.0, 0.8])
def test_causal_simplex_theory_against_exact_tokens(rho, alpha):
    """Exact simplex tokens (Cholesky, d = n): the closed forms of the self-weight, the pairwise
    gap 1 - <y_i', y_j'> and lambda (O(n) and O(n^2) forms) match the kernels to 1e-10."""
    n = 40
    Xs = tokens.simplex_exact(n, rho, q=1.7)
    for beta in (np.full(n, 2.0 * np.log(n)), 1.3 * np.log(np.arange(1, n + 1))):
        Xp, aii = causal.forward_rows(Xs, beta, alpha, return_self_weight=True)
        np.testing.assert_allclose(
            causal_theory.causal_simplex_self_weight(rho, beta), aii, atol=TOL
        )
        Yp = Xp / np.linalg.norm(Xp, axis=1, keepdims=True)
        gap = causal_theory.causal_simplex_pair_gap(rho, beta, alpha, 1.7)
        iu = np.triu_indices(n, 1)
        brute_gap = 0.5 * np.sum((Yp[iu[0]] - Yp[iu[1]]) ** 2, axis=1)
        np.testing.assert_allclose(gap[iu], brute_gap, atol=TOL)
        lam = causal_theory.causal_simplex_lambda(rho, beta, alpha, 1.7)
        assert abs(lam - brute_gap.mean() / (1 - rho)) < TOL
        pos = np.arange(30, n + 1)
        sub = np.isin(iu[0] + 1, pos) & np.isin(iu[1] + 1, pos)
        lam_b = causal_theory.causal_simplex_lambda(rho, beta, alpha, 1.7, positions=pos)
        assert abs(lam_b - brute_gap[sub].mean() / (1 - rho)) < TOL


def test_global_log_scaling_self_weight_closed_form():
    """At beta = gamma_c ln n for every row, e^{beta (rho - 1)} = 1/n, so
    A_ii = 1 / (1 + (i-1)/n) = n / (n + i - 1): 1 at i = 1, about 1/2 at i = n. With
    beta_i = gamma_c ln i instead, A_ii = i / (2 i - 1) -> 1/2 at every large i."""
    n, rho = 1000, 0.6
    i = np.arange(1, n + 1)
    glob = causal_theory.causal_simplex_self_weight(rho, np.full(n, np.log(n) / (1 - rho)))
    np.testing.assert_allclose(glob, n / (n + i - 1.0), rtol=1e-12)
    pos = causal_theory.causal_simplex_self_weight(rho, np.log(i) / (1 - rho))
    np.testing.assert_allclose(pos, i / (2.0 * i - 1.0), rtol=1e-12)
    # position average under the global rule: ln(1 + u) / u with u = n^{1-g}; it is 1/2 at
    # u = 2.5128 (root of ln(1 + u) = u / 2), i.e. g = 1 - ln(2.5128) / ln n. The sum differs
    # from the integral by O(1/n) (trapezoid error of a monotone integrand of size <= 1).
    u = 2.5128
    assert abs(np.log1p(u) / u - 0.5) < 1e-4
    for n in (1024, 100_000):
        g = 1 - np.log(u) / np.log(n)
        a = causal_theory.causal_simplex_self_weight(rho, np.full(n, g * np.log(n) / (1 - rho)))
        assert abs(a.mean() - 0.5) < 2.0 / n


def test_bad_input_names_the_argument(X):
    with pytest.raises(ValueError, match="S must be a square"):
        causal.causal_softmax(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="beta must be a scalar or a vector of length n = 23"):
        attention.forward(X, np.ones(22), causal=True)
    with pytest.raises(ValueError, match="betas must have shape"):
        attention.angle_ratio_grid(X, np.ones((2, 22)), causal=True)
    with pytest.raises(ValueError, match="every entry of beta"):
        causal.forward_rows(X, -1.0)
    with pytest.raises(ValueError, match="stop must be <= 23"):
        causal.query_block(X, [1.0], 0, 24)
    with pytest.raises(ValueError, match="rho must lie in"):
        causal_theory.causal_simplex_self_weight(1.0, np.ones(3))
    with pytest.raises(ValueError, match="positions must be increasing"):
        causal_theory.causal_simplex_lambda(0.5, np.ones(5), positions=[3, 2])
    with pytest.raises(ValueError, match="scaling must be one of"):
        exp_causal.scaling_rows("linear", [1.0], 5)


def test_experiment_tables_are_consistent():
    """The map entry's lambda equals the kernel on the same draw; the self-weight bins cover
    every position once; the same seed gives the same table."""
    kw = dict(n=48, d=8, rhos=[0.3, 0.6], gammas=[0.5, 3.0], trial=1, root_seed=99)
    df = exp_causal.causal_lambda(**kw)
    assert len(df) == 2 * 2 * 3 and set(df["kind"]) == {"grid", "critical"}
    assert df.equals(exp_causal.causal_lambda(**kw))
    _, z0, Z = exp_causal._draw(48, 8, 1, 99)
    X = tokens.from_draw(z0, Z, 0.6)
    row = df[(df.rho == 0.6) & (df.scaling == "position") & (df.gamma == 3.0)].iloc[0]
    ref = brute_lambda(X, brute_forward(X, 3.0 * np.log(np.arange(1, 49)))[0])
    assert abs(row["lambda"] - ref) < TOL
    sw = exp_causal.causal_self_weight(
        n=48, d=8, rhos=[0.5], gamma_factors=[1.0], trial=0, root_seed=99, bins=10
    )
    one = sw[sw.scaling == "global"]
    assert one["pos_lo"].iloc[0] == 1 and one["pos_hi"].iloc[-1] == 48
    assert np.all(one["pos_lo"].to_numpy()[1:] == one["pos_hi"].to_numpy()[:-1] + 1)
    assert one["self_weight"].iloc[0] == 1.0  # position 1 is its own bin: A_11 = 1


def test_benchmark_rows():
    rows = bench_causal(64, 8, 2, peak=1.0, repeat=1)
    assert [r["benchmark"] for r in rows] == ["causal_forward", "causal_lambda_grid"]
    for r in rows:
        assert r["max_abs_diff_vs_baseline"] < TOL and r["seconds"] > 0


@pytest.mark.parametrize("causal_mask", [True, False])
def test_threaded_elementwise_passes_do_not_change_a_bit(monkeypatch, causal_mask):
    """The element-wise passes of a block run on row slices in threads (as many as BLAS may use);
    every row goes through the same operations whatever the split, so 1, 2 and 3 threads (an
    uneven split) give identical bits. n x block is above THREADED_ENTRIES so the pool is used."""
    n, d = 800, 12
    X = tokens.near_simplex(n, d, 0.4, np.random.default_rng(11))
    ln = np.log(np.arange(1, n + 1.0))
    grid = np.geomspace(0.5, 8.0, 3)[:, None] * ln[None, :]
    assert causal_blocks.causal_block_rows(n) * n >= _threads.THREADED_ENTRIES
    got = {}
    for k in (1, 2, 3):
        monkeypatch.setattr(_threads, "blas_threads", lambda k=k: k)
        got[k] = (
            causal.forward_rows(X, 2.0 * ln, 0.3, causal=causal_mask, return_self_weight=True),
            causal_lambda.angle_ratio_grid_rows(X, grid, 0.2, causal=causal_mask),
            causal.self_weights(X, grid, causal=causal_mask),
            causal.query_block(X, grid, n - 100, n, causal=causal_mask)["outputs"],
        )
    for k in (2, 3):
        for a, b in zip(got[1], got[k], strict=True):
            a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
            for u, v in zip(a, b, strict=True):
                np.testing.assert_array_equal(u, v)
