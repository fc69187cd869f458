"""What sets the order of the critical scale (issue 20, docs/regimes.md): every prediction against
an independent computation, the samplers against full simulation, the root finder against exact
root finding, reruns byte-identical, and argument errors naming the argument.

Monte Carlo tolerances are ``4 SE`` of the simulated quantity (plus the stated quadrature or
truncation error where one exists); SE is the sample standard deviation over independent rows
divided by the square root of their number, unless stated.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, optimize, stats

from attnscale.core.seeding import job_rng, spawn_key
from attnscale.experiments import regimes_common as rgc
from attnscale.experiments import regimes_rem as rgr
from attnscale.experiments import regimes_simulation as rgs
from attnscale.experiments import regimes_summary as rgsum
from attnscale.experiments import regimes_theory as rgth
from attnscale.experiments import regimes_tokens as rgt
from attnscale.experiments.findings import regimes_checks
from attnscale.figures import regimes as fr
from attnscale.layer import finite_d, tokens
from attnscale.pipeline.config import ConfigError
from attnscale.regimes import gap, observable, rem, rem_samplers, ties, ties_exact, token_samplers

SEED = 271828182845904523536028747135266249775


def rng(*ids):
    return job_rng(SEED, spawn_key("tests/regimes", *ids))


def softmax_group(scores, group, beta):
    """Direct softmax of one row: the weight of the indices ``group``."""
    z = beta * (np.asarray(scores) - np.max(scores))
    w = np.exp(z)
    return w[group].sum() / w.sum()


# =========================================================================== gap and near-ties
@pytest.mark.parametrize("n, rho", [(2, 0.0), (10, 0.3), (1000, 0.5), (10**6, 0.9)])
def test_gap_critical_beta_against_direct_softmax(n, rho):
    """Self-score 1, the others rho (docs/regimes.md#gap-regime-paper-a): the root of the direct
    softmax self-weight equals ln(n - 1) / (1 - rho)."""
    scores = np.r_[1.0, np.full(n - 1, rho)]
    b = optimize.brentq(lambda x: softmax_group(scores, [0], x) - 0.5, 0.0, 200.0, xtol=1e-13)
    assert gap.gap_critical_beta(n, rho) == pytest.approx(b, rel=1e-10, abs=1e-10)
    assert gap.gap_top_weight(n, rho, b) == pytest.approx(0.5, abs=1e-12)
    assert gap.gap_critical_beta(n, rho) == pytest.approx(math.log(n - 1) / (1 - rho), abs=1e-12)


@pytest.mark.parametrize("n, k, rho", [(10, 3, 0.0), (1000, 31, 0.5), (5000, 70, 0.8)])
def test_ties_critical_beta_against_direct_softmax(n, k, rho):
    """k tokens share the top score, n - k sit 1 - rho below (docs/regimes.md#near-ties)."""
    scores = np.r_[np.ones(k), np.full(n - k, rho)]
    group = np.arange(k)
    b = optimize.brentq(lambda x: softmax_group(scores, group, x) - 0.5, 0.0, 100.0, xtol=1e-13)
    assert ties.ties_critical_beta(n, k, 1 - rho) == pytest.approx(b, rel=1e-10)
    assert ties.ties_critical_beta(n, k, 1 - rho) == pytest.approx(
        math.log((n - k) / k) / (1 - rho), rel=1e-12
    )


@pytest.mark.parametrize("n, k, gap", [(200, 5, 0.1), (10**4, 100, 0.3), (10**4, 100, 0.05)])
def test_copies_at_a_fixed_cosine_against_direct_softmax(n, k, gap):
    """Copies at cosine 1 - gap count with weight e^{-beta gap} (docs/regimes.md#noisy-copies)."""
    rho = 0.5
    scores = np.r_[1.0, np.full(k - 1, 1.0 - gap), np.full(n - k, rho)]
    group = np.arange(k)
    b = optimize.brentq(lambda x: softmax_group(scores, group, x) - 0.5, 0.0, 200.0, xtol=1e-13)
    assert ties.ties_critical_beta(n, k, 1 - rho, copy_gap=gap) == pytest.approx(b, rel=1e-9)


def test_ties_kappa_limit_and_vectorisation():
    """k = n^kappa: gamma* = beta*/ln n -> (1 - kappa) gamma_c; the relative error of the finite-n
    value is ln(1 - n^{kappa-1}) / ((1-kappa) ln n) exactly (docs/regimes.md#near-ties)."""
    n = np.array([1e2, 1e4, 1e8, 1e16, 1e32])
    for kappa, rho in ((0.25, 0.5), (0.5, 0.0), (0.75, 0.3)):
        k = n**kappa
        g = ties.ties_critical_beta(n, k, 1 - rho) / np.log(n)
        ratio = g / ((1 - kappa) / (1 - rho))
        expect = 1 + np.log1p(-(n ** (kappa - 1))) / ((1 - kappa) * np.log(n))
        np.testing.assert_allclose(ratio, expect, rtol=1e-12)
        assert abs(ratio[-1] - 1) < 1e-8
    assert np.shape(ties.ties_critical_beta(n, 2.0, 0.5)) == n.shape
    assert isinstance(ties.ties_critical_beta(100, 2, 0.5), float)


def test_ties_first_order_reduces_to_finite_d_first_order():
    """With s2 the within-row variance, k = 1 is docs/finite-d.md's first-order beta*."""
    for n, d, rho in ((1000, 128, 0.5), (131072, 128, 0.0), (10**6, 4096, 0.5)):
        s2 = finite_d.first_order_variance(d, rho)
        assert ties.ties_critical_beta(n, 1, 1 - rho, s2=s2) == pytest.approx(
            finite_d.first_order_critical_beta(n, d, rho), rel=1e-12
        )
    assert math.isnan(
        ties.ties_critical_beta(10**6, 1, 1.0, s2=finite_d.first_order_variance(8, 0))
    )


def test_copy_cosines_and_copy_factor_against_monte_carlo():
    """copy_cosines against noisy copies built in R^d; copy_factor against their Monte Carlo
    mean (4 SE; the 32 x 32 product rule is exact to ~1e-10 here)."""
    d, noise = 16, 0.4
    r = rng(1)
    y = r.standard_normal(d)
    y /= np.linalg.norm(y)
    xi = r.standard_normal((20000, d)) / math.sqrt(d)
    c = y + noise * xi
    direct = (c @ y) / np.linalg.norm(c, axis=1)
    a = math.sqrt(d) * (xi @ y)
    w = d * (np.sum(xi * xi, axis=1) - (xi @ y) ** 2)
    np.testing.assert_allclose(ties.copy_cosines(noise, a, w, d), direct, rtol=1e-12)
    for beta in (1.0, 10.0, 40.0):
        vals = np.exp(-beta * (1 - direct))
        se = vals.std(ddof=1) / math.sqrt(vals.size)
        assert abs(ties.copy_factor(beta, noise, d) - vals.mean()) < 4 * se
    big = ties.copy_factor(
        5.0, 0.3, 10**6
    )  # large d: the cosine concentrates on 1/sqrt(1 + noise^2)
    assert big == pytest.approx(math.exp(-5.0 * (1 - 1 / math.sqrt(1.09))), rel=1e-3)
    assert ties.copy_factor(7.0, 0.0, 16) == 1.0


def test_noisy_ties_solve_their_group_equation():
    n, k, rho, d, noise = 10**5, 316, 0.5, 4096, 0.3
    s2 = finite_d.first_order_variance(d, rho)
    b = ties.ties_critical_beta(n, k, 1 - rho, s2=s2, copy_noise=noise, d=d)
    k_eff = 1 + (k - 1) * ties.copy_factor(b, noise, d)
    w = k_eff / (k_eff + (n - k) * math.exp(-b * (1 - rho) + 0.5 * b * b * s2))
    assert w == pytest.approx(0.5, abs=1e-10)
    assert (
        ties.ties_critical_beta(n, k, 1 - rho, s2=s2)
        < b
        < ties.ties_critical_beta(n, 1, 1 - rho, s2=s2)
    )


def test_ties_for_shift_round_trip():
    """ties_shift at the real-valued k of ties_for_shift is the requested shift
    (docs/regimes.md#practical-reading)."""
    for c in (1.0, 0.95, 0.8):
        k = ties.ties_for_shift(131072, 128, 0.0, shift=0.1, copy_cosine=c)
        assert 1 < k < 131071
        assert ties.ties_shift(131072, k, 128, 0.0, copy_cosine=c) == pytest.approx(0.1, abs=1e-9)
    assert ties.ties_for_shift(131072, 128, 0.0) == pytest.approx(3.078, abs=1e-3)


# =========================================================================== REM
@pytest.mark.parametrize("n, beta", [(2, 1.5), (10, 2.0), (100, 3.0), (100, 6.0), (1000, 4.5)])
def test_rem_top_weight_against_brute_force(n, beta):
    """Exact E[A_(1)] against plain Monte Carlo of n i.i.d. normal scores (4 SE + 1e-4)
    (docs/regimes.md#exact-finite-n-top-weight)."""
    r = rng(2, n)
    rows = 40000 if n <= 100 else 8000
    x = r.standard_normal((rows, n))
    z = np.exp(beta * (x - x.max(axis=1, keepdims=True)))
    a1 = 1.0 / z.sum(axis=1)
    se = a1.std(ddof=1) / math.sqrt(rows)
    assert abs(rem.rem_top_weight_mean(n, beta) - a1.mean()) < 4 * se + 1e-4


def test_rem_two_scores_closed_form_and_resolution():
    """n = 2: E A_(1) = E[1 / (1 + e^{-beta sqrt(2) |Z|})] by quad; every resolution doubled
    changes E A_(1) by < 1e-9 (n = 1e2 .. 1e30)."""
    for beta in (0.5, 2.0, 7.0):
        ref = integrate.quad(
            lambda z, b=beta: 2 * stats.norm.pdf(z) / (1 + math.exp(-b * math.sqrt(2) * z)),
            0,
            np.inf,
        )[0]
        assert rem.rem_top_weight_mean(2, beta) == pytest.approx(ref, abs=1e-10)
    for n, b in ((100, 3.0), (1e6, 7.0), (1e30, 18.0)):
        assert (
            abs(rem.rem_top_weight_mean(n, b, resolution=2.0) - rem.rem_top_weight_mean(n, b))
            < 1e-9
        )
    assert rem.rem_top_weight_mean(50, 0.0) == pytest.approx(1 / 50)
    assert rem.rem_top_weight_mean(100, [1.0, 2.0], s=2.0)[0] == pytest.approx(
        rem.rem_top_weight_mean(100, 2.0)
    )


def test_pd_top_weight_against_poisson_points():
    """E V_1 of PD(alpha) against the normalised points Gamma_i^{-1/alpha} of a unit Poisson
    process (4 SE; the truncation at 5000 points biases by < 2e-4 for alpha <= 0.65)
    (docs/regimes.md#poisson-dirichlet-limit)."""
    r = rng(3)
    gam = np.cumsum(r.exponential(size=(4000, 5000)), axis=1)
    for alpha in (0.3, 0.5, rem.pd_critical_alpha()):
        u = gam ** (-1.0 / alpha)
        v1 = u[:, 0] / u.sum(axis=1)
        se = v1.std(ddof=1) / math.sqrt(v1.size)
        assert abs(rem.pd_top_weight_mean(alpha) - v1.mean()) < 4 * se + 2e-4
    # g_alpha in closed form against its defining integral
    for alpha, t in ((0.3, 0.7), (0.65, 5.0), (0.9, 40.0)):
        ref = integrate.quad(
            lambda w, a=alpha, t=t: a * (1 - math.exp(-t * w)) * w ** (-a - 1), 0, 1
        )[0]
        assert rem._pd_g(alpha, np.float64(t)) == pytest.approx(ref, rel=1e-8)
    assert rem.pd_critical_alpha() == pytest.approx(0.645496, abs=1e-6)
    assert rem.pd_top_weight_mean(rem.pd_critical_alpha()) == pytest.approx(0.5, abs=1e-12)


def test_rem_freezing_point_and_poisson_dirichlet_limit():
    """Below sqrt(2 ln n)/s the top weight vanishes, above it E A_(1) tends to the PD(sqrt(2 ln
    n)/(beta s)) mean, and beta* / sqrt(2 ln n) -> 1/alpha_c from below; the penultimate value
    w_n/alpha_c lies above the exact one by less than 1/ln n
    (docs/regimes.md#freezing-point-and-finite-n-corrections)."""
    ns = [1e2, 1e4, 1e8, 1e16, 1e30]
    below = [rem.rem_top_weight_mean(n, 0.8 * rem.rem_freezing_beta(n)) for n in ns]
    assert np.all(np.diff(below) < 0) and below[-1] < 0.02
    for kappa in (1.5, 2.0):
        gaps = [
            abs(
                rem.rem_top_weight_mean(n, kappa * rem.rem_freezing_beta(n))
                - rem.pd_top_weight_mean(1 / kappa)
            )
            for n in ns
        ]
        assert np.all(np.diff(gaps) < 0) and gaps[-1] < 0.02
    exact = rem.rem_critical_beta(ns)
    ratio = exact / rem.rem_freezing_beta(ns)
    assert np.all(np.diff(ratio) > 0) and 1.0 < ratio[-1] < 1 / rem.pd_critical_alpha()
    assert ratio[-1] == pytest.approx(1 / rem.pd_critical_alpha(), rel=0.03)
    excess = rem.rem_critical_beta(ns, method="penultimate") / exact - 1
    assert np.all(excess > 0) and np.all(excess * np.log(ns) < 1.0)
    assert rem.rem_critical_beta(1e4, s=2.0) == pytest.approx(rem.rem_critical_beta(1e4) / 2)


def test_rem_truncation_bias_is_the_dropped_mass():
    """rem_truncation_bias is E[R; X_(1) >= t] + P(X_(1) < t), R the dropped keys' weight
    relative to the top one: against its Monte Carlo mean (4 SE) (docs/regimes.md#samplers)."""
    n, t, beta = 300, 1.0, 2.5
    x = rng(4).standard_normal((20000, n))
    top = x.max(axis=1, keepdims=True)
    R = np.where(x < t, np.exp(beta * (x - top)), 0.0).sum(axis=1)
    R = np.where(top[:, 0] >= t, R, 1.0)
    se = R.std(ddof=1) / math.sqrt(R.size)
    assert abs(rem.rem_truncation_bias(n, t, beta) - R.mean()) < 4 * se
    th = rem.rem_truncation_threshold(10**6, 6.0, 1e-6)
    assert 0 < th and rem.rem_truncation_bias(10**6, th, 6.0) == pytest.approx(1e-6, rel=1e-3)
    assert rem.rem_truncation_threshold(100, 3.0, 1e-6) is None


def test_rem_scores_above_is_the_tail_of_a_full_draw():
    """Count Binomial(n, Q(t)) and values from the tail: KS against the tail of full draws."""
    n, t = 2000, 1.5
    r1, r2 = rng(5), rng(6)
    tails = np.concatenate([rem_samplers.rem_scores_above(n, t, r1) for _ in range(200)])
    full = np.concatenate([x[x > t] for x in (rem_samplers.rem_scores(n, r2) for _ in range(200))])
    assert stats.ks_2samp(tails, full).pvalue > 1e-3
    q = stats.norm.sf(t)
    assert abs(tails.size / 200 - n * q) < 4 * math.sqrt(n * q * (1 - q) / 200)


# =========================================================================== Gaussian tokens
def brute_rows(n, d, rho, rows, r):
    out = np.empty((rows, n - 1))
    for i in range(rows):
        z0, Z = tokens.gaussian_draw(n, d, r)
        X = np.sqrt(rho) * z0 + np.sqrt(1 - rho) * Z
        Y = X / np.linalg.norm(X, axis=1, keepdims=True)
        out[i] = Y[1:] @ Y[0]
    return out


@pytest.mark.parametrize("d, rho", [(5, 0.0), (8, 0.5), (64, 0.3)])
def test_token_draw_against_full_tokens(d, rho):
    """The sufficient-statistics row against rows of full Gaussian tokens: KS on one cosine per
    row, the row minimum and maximum (rows are independent; tokens within a row are not)."""
    n, rows = 6, 6000
    r = rng(7, d, 1)
    fast = np.array(
        [token_samplers.gaussian_token_draw(n, d, rho, r)["others"] for _ in range(rows)]
    )
    full = brute_rows(n, d, rho, rows, rng(8, d))
    for f in (lambda a: a[:, 0], lambda a: a.min(axis=1), lambda a: a.max(axis=1)):
        assert stats.ks_2samp(f(fast), f(full)).pvalue > 1e-3


def test_token_row_self_weight_against_finite_d_theory():
    """Mean self-weight of sampled rows against the exact finite-d theory (4 SE + 3e-4, the
    theory's quadrature tolerance) (docs/regimes.md#finite-d-where-log-n-ends)."""
    for n, d, rho, beta in ((500, 16, 0.0, 9.0), (500, 32, 0.5, 12.0)):
        r = rng(9, d)
        w = np.array(
            [
                observable.group_weight(
                    [0.0], token_samplers.gaussian_token_row(n, d, rho, r)[1:] - 1, beta
                )[0]
                for _ in range(3000)
            ]
        )
        se = w.std(ddof=1) / math.sqrt(w.size)
        assert abs(w.mean() - finite_d.self_weight(n, d, rho, beta)) < 4 * se + 3e-4


def test_token_row_copies():
    """Copies replace tokens 1..k-1 of the same draw (common random numbers) and their cosines
    follow copy_cosines; exact copies have cosine 1."""
    a = token_samplers.gaussian_token_row(50, 8, 0.5, rng(10), copies=4, copy_noise=0.2)
    b = token_samplers.gaussian_token_row(50, 8, 0.5, rng(10), copies=4, copy_noise=0.0)
    c = token_samplers.gaussian_token_draw(50, 8, 0.5, rng(10), copies=4)
    assert a[0] == 1.0 and np.all(b[:5] == 1.0) and np.all(a[1:5] < 1.0)
    np.testing.assert_array_equal(a[5:], c["others"][4:])
    np.testing.assert_array_equal(a[1:5], ties.copy_cosines(0.2, c["copy_a"], c["copy_w"], 8))


# =========================================================================== observable and root
def test_group_weight_grid_matches_group_weight_and_finite_differences():
    r = rng(11)
    group = np.r_[0.0, -0.05 * r.random(3)]
    others = -r.random(500) * 1.5
    betas = np.linspace(2.0, 9.0, 8)
    W, dW = observable.group_weight_grid(group, others, betas)
    for j, b in enumerate(betas):
        w, dw = observable.group_weight(group, others, b)
        assert W[j] == pytest.approx(w, rel=1e-13) and dW[j] == pytest.approx(dw, rel=1e-11)
        h = 1e-6
        fd = (
            observable.group_weight(group, others, b + h)[0]
            - observable.group_weight(group, others, b - h)[0]
        ) / (2 * h)
        assert dw == pytest.approx(fd, rel=1e-6)


def test_curve_root_against_exact_root_finding():
    """The grid-Hermite root equals Brent's root of the exact Monte Carlo mean on the same rows
    to 1e-6 relative, far below the SE (docs/regimes.md#simulation-and-root-finding)."""
    r = rng(12)
    n, C = 3000, 64
    rows = [r.standard_normal(n) for _ in range(C)]
    data = [(np.zeros(1), np.delete(x, x.argmax()) - x.max()) for x in rows]
    guess = rem.rem_critical_beta(n)
    grid = rgs.beta_grid(guess, rem.rem_top_weight_slope(n, guess), 7)
    W = np.empty((7, C))
    dW = np.empty((7, C))
    for c, (g, o) in enumerate(data):
        W[:, c], dW[:, c] = observable.group_weight_grid(g, o, grid)
    res = rgs.curve_root(grid, W, dW, level=0.5, batches=8)

    def mean(b):
        return np.mean([observable.group_weight(g, o, b)[0] for g, o in data]) - 0.5

    exact = optimize.brentq(mean, grid[0], grid[-1], xtol=1e-12)
    assert res["status"] == "ok"
    assert res["beta_star"] == pytest.approx(exact, rel=1e-6)
    assert abs(res["beta_star"] - exact) < 1e-3 * res["se"]
    assert res["w_mean"] == pytest.approx(0.5, abs=1e-6)
    assert 0.5 < res["se_batches"] / res["se"] < 2.0
    assert rgs.curve_root(grid, W + 1, dW, level=0.5, batches=8)["status"] == "low"
    assert rgs.curve_root(grid, W - 1, dW, level=0.5, batches=8)["status"] == "high"


# =========================================================================== exact k copies
def _mc_group_weight(n, k, d, rho, beta, noise, draws, gen):
    """Plain Monte Carlo of the top group's weight with full Gaussian tokens: token 0 is the
    query, tokens 1 .. k-1 are replaced by its copies (y + noise xi)/||.||, xi ~ N(0, I_d/d); one
    independent draw (z_0 included) per row. Mean and SE over the rows."""
    z0 = gen.standard_normal((draws, 1, d)) / math.sqrt(d)
    Z = gen.standard_normal((draws, n, d)) / math.sqrt(d)
    X = math.sqrt(rho) * z0 + math.sqrt(1 - rho) * Z
    Y = X / np.linalg.norm(X, axis=2, keepdims=True)
    q = Y[:, 0, :]
    C = q[:, None, :] + noise * gen.standard_normal((draws, k - 1, d)) / math.sqrt(d)
    Y[:, 1:k, :] = C / np.linalg.norm(C, axis=2, keepdims=True)
    e = np.exp(beta * (np.einsum("bnd,bd->bn", Y, q) - 1.0))
    W = e[:, :k].sum(1) / e.sum(1)
    return W.mean(), W.std(ddof=1) / math.sqrt(draws)


@pytest.mark.parametrize(
    "n, k, d, rho, noise", [(40, 3, 8, 0.5, 0.0), (40, 3, 8, 0.5, 0.5), (60, 5, 4, 0.0, 0.3)]
)
def test_ties_exact_against_monte_carlo(n, k, d, rho, noise):
    """The exact finite-d group weight of k copies against plain Monte Carlo of full tokens at
    0.7, 1 and 1.4 times its beta*: within 4 SE plus the quadrature tolerance 3e-4 of
    docs/finite-d.md#exact-self-weight (docs/regimes.md#exact-finite-d-theory-for-k-copies)."""
    b = ties_exact.ties_exact_critical_beta(n, k, d, rho, copy_noise=noise)
    gen = rng(28, n, k, d)
    for f in (0.7, 1.0, 1.4):
        th = ties_exact.ties_group_weight(n, k, d, rho, f * b, copy_noise=noise)
        m, se = _mc_group_weight(n, k, d, rho, f * b, noise, 12000, gen)
        assert abs(m - th) <= 4 * se + 3e-4, (f, m, se, th)
    # the first-order group formula is far off here, so the test can tell the two apart
    s2 = finite_d.first_order_variance(d, rho)
    first = ties.ties_critical_beta(n, k, 1 - rho, s2=s2, copy_noise=noise, d=d)
    assert not np.isfinite(first) or abs(first / b - 1) > 0.01


def test_ties_exact_limits():
    """k = 1 is the finite-d self-weight bit for bit; the root solves its equation at any level;
    a real k lies between its integer neighbours; the first-order formula's relative excess falls
    like 1/d at large d (it neglects the O(beta/d) shift of the mean score,
    docs/finite-d.md#first-order-approximation)."""
    for n, d, rho in ((300, 8, 0.0), (1000, 32, 0.5)):
        b = finite_d.critical_beta(n, d, rho)
        bs = [0.8 * b, b, 1.3 * b]
        assert np.array_equal(
            ties_exact.ties_group_weight(n, 1, d, rho, bs), finite_d.self_weight(n, d, rho, bs)
        )
    for level, noise in ((0.5, 0.0), (0.3, 0.2)):
        b = ties_exact.ties_exact_critical_beta(2000, 12, 32, 0.5, copy_noise=noise, level=level)
        w = ties_exact.ties_group_weight(2000, 12, 32, 0.5, b, copy_noise=noise)
        assert w == pytest.approx(level, abs=1e-5)  # the root's relative tolerance is 1e-6
    bk = [ties_exact.ties_exact_critical_beta(2000, k, 32, 0.5) for k in (2, 2.5, 3)]
    assert bk[0] > bk[1] > bk[2]
    assert ties_exact.ties_exact_critical_beta(10, 6, 32, 0.5) == 0.0  # k / n >= level
    excess = []
    for d in (1024, 4096):
        e = ties_exact.ties_exact_critical_beta(10**4, 100, d, 0.5, xtol=1e-10)
        f = ties.ties_critical_beta(10**4, 100, 0.5, s2=finite_d.first_order_variance(d, 0.5))
        excess.append(f / e - 1)
    assert 0 < excess[1] < excess[0] < 1.0 / 1024
    assert 2.0 < excess[0] / excess[1] < 8.0


def test_first_order_line_ends_at_its_breakdown():
    """The finite-d first-order line of the theory table runs up to ln(n - 1) = d / (2 (1 + rho -
    rho^2 / 2)), where its root is 2 ln(n - 1) / (1 - rho) = (1 - rho) / s^2, and has no root
    beyond (docs/regimes.md#finite-d-where-log-n-ends)."""
    th = rgth.theory_table(
        n=[100, 1000],
        theory_n=np.geomspace(100, 1e5, 7),
        gap_d=64,
        gap_rho=0.5,
        ties=[],
        rem_s=1.0,
        fd_d=[16],
        fd_rho=0.0,
        level=0.5,
    )
    fo = th[
        (th["series"] == "finite_d d=16") & (th["kind"] == "first_order") & (th["role"] == "line")
    ].sort_values("n")
    ok = fo[np.isfinite(fo["beta"])]
    ln_b = gap.log_n_breakdown(16, 0.0)
    end = ok.iloc[-1]
    assert math.log(end["n"] - 1) == pytest.approx(ln_b, rel=1e-12)
    assert end["beta"] == pytest.approx(1.0 / finite_d.first_order_variance(16, 0.0), rel=1e-12)
    assert np.all(np.log(fo.loc[~np.isfinite(fo["beta"]), "n"] - 1) > ln_b)
    assert np.all(np.diff(ok["beta"]) > 0) and len(ok) >= len(rgth.FIRST_ORDER_END) + 3
    for n in (200.0, 2500.0):
        assert rgth.first_order_at(math.log(n - 1), 16, 0.0) == pytest.approx(
            finite_d.first_order_critical_beta(int(n), 16, 0.0), rel=1e-12
        )
    assert math.isnan(rgth.first_order_at(ln_b * (1 + 1e-9), 16, 0.0))


def _synthetic_table():
    """A summary table by hand: two finite-d points a decade apart, their predictions and power
    law, one gap row set with a tie series, one REM row set."""
    rows = []
    for n, b, se in ((1e5, 60.0, 0.6), (1e6, 116.0, 1.2)):
        rows.append(
            {
                "regime": "finite_d",
                "series": "finite_d d=8",
                "kind": "simulation",
                "role": "point",
                "n": n,
                "d": 8,
                "rho": 0.0,
                "k": 1.0,
                "beta": b,
                "beta_se": se,
                "z_pred": 0.5,
                "spawn_key": f"fd-{n:g}",
            }
        )
    for kind, b5, b6 in (("prediction", 60.3, 117.7), ("power_law", 61.6, 119.0)):
        for n, b in ((1e5, b5), (1e6, b6)):
            rows.append(
                {
                    "regime": "finite_d",
                    "series": "finite_d d=8",
                    "kind": kind,
                    "role": "point",
                    "n": n,
                    "d": 8,
                    "rho": 0.0,
                    "k": 1.0,
                    "beta": b,
                }
            )
    rows += [
        {
            "regime": "gap",
            "series": "gap",
            "kind": "simulation",
            "role": "point",
            "n": 1e3,
            "d": 64,
            "rho": 0.5,
            "k": 1.0,
            "z_pred": 2.5,
            "spawn_key": "g",
        },
        {
            "regime": "ties",
            "series": "ties kappa=0.5",
            "kind": "simulation",
            "role": "point",
            "n": 1e3,
            "d": 64,
            "rho": 0.5,
            "k": 32.0,
            "z_pred": 2.6,
            "spawn_key": "g",
        },
        {
            "regime": "rem",
            "series": "rem",
            "kind": "simulation",
            "role": "point",
            "n": 1e3,
            "d": np.nan,
            "rho": np.nan,
            "k": 1.0,
            "z_pred": -1.0,
            "spawn_key": "r",
        },
    ]
    return pd.DataFrame(rows)


def test_local_exponent_and_row_sets_by_hand():
    """The local exponent table and the row-set summary of the findings against a hand
    computation (docs/regimes.md#finite-d-where-log-n-ends, docs/regimes.md#results)."""
    t = _synthetic_table()
    e = rgsum.local_exponent_table(t).iloc[0]
    ln10 = math.log(10.0)
    assert e["exponent_sim"] == pytest.approx(math.log(116.0 / 60.0) / ln10, rel=1e-12)
    se = math.hypot(0.6 / 60.0, 1.2 / 116.0) / ln10  # independent rows at the two n
    assert e["exponent_sim_se"] == pytest.approx(se, rel=1e-12)
    assert e["exponent_pred"] == pytest.approx(math.log(117.7 / 60.3) / ln10, rel=1e-12)
    assert e["exponent_power_law"] == pytest.approx(2.0 / 7.0)
    assert e["ratio_sim_power_law"] == pytest.approx(116.0 / 119.0)
    assert e["ln_n_over_d_hi"] == pytest.approx(math.log(1e6) / 8)
    found = {
        f.key: f
        for f in regimes_checks.regimes_check_findings(
            table=t, exponent=rgsum.local_exponent_table(t), rem_orders=pd.DataFrame()
        )
    }
    # three row sets (finite d at two n, gap with its tie series, REM): the tie series counts once
    assert found["regimes.row_sets_within_2se"].value == [3, 4]
    chi2 = 0.5**2 + 0.5**2 + 2.5**2 + 1.0**2
    assert found["regimes.row_sets_chi2"].value == pytest.approx([chi2, 4, stats.chi2.sf(chi2, 4)])
    assert found["regimes.finite_d8.local_exponent"].value[0] == pytest.approx(e["exponent_sim"])
    assert found["regimes.finite_d16.local_exponent"].value is None  # not in this table


def test_rem_orders_from_the_library():
    """The REM orders table is the library's values (docs/regimes.md#freezing-point-and-finite-n-corrections)."""
    t = rgth.rem_orders(n=[100, 1e12], factors=[0.8, 1.5], s=2.0, level=0.5)
    r = t[(t["n"] == 1e12) & (t["factor"] == 1.5)].iloc[0]
    assert r["beta_exact"] == pytest.approx(rem.rem_critical_beta(1e12, s=2.0))
    assert r["beta_penultimate"] == pytest.approx(
        rem.gaussian_tail_scale(1e12)[1] / rem.pd_critical_alpha() / 2.0
    )
    assert r["top_weight"] == pytest.approx(
        rem.rem_top_weight_mean(1e12, 1.5 * rem.rem_freezing_beta(1e12, 2.0), s=2.0)
    )
    assert r["top_weight_pd"] == pytest.approx(rem.pd_top_weight_mean(1 / 1.5))
    assert t.loc[t["factor"] == 0.8, "top_weight_pd"].eq(0.0).all()
    assert r["penultimate_excess_ln_n"] == pytest.approx(
        (r["beta_penultimate"] / r["beta_exact"] - 1) * math.log(1e12)
    )


# =========================================================================== experiments
def small_rem(seed=SEED, n=(100, 1000), contexts=600):
    return rgr.rem_points(
        n=list(n),
        s=1.0,
        contexts=contexts,
        level=0.5,
        grid_points=7,
        batches=8,
        truncation_eps=1e-6,
        root_seed=seed,
    )


def test_simulated_rem_within_4se_of_exact_prediction():
    df = small_rem()
    z = (df["beta_sim"] - rem.rem_critical_beta(df["n"].to_numpy(float))) / df["beta_sim_se"]
    assert np.all(np.abs(z) < 4), z.tolist()
    assert np.all(df["attempts"] == 1)


def test_simulated_tokens_within_4se_of_predictions():
    """Gap (large d), near-ties (exact and noisy) and finite d against their predictions."""
    gap_sim = rgt.token_points(
        regime="gap",
        n=[200, 2000],
        d=1024,
        rho=0.5,
        contexts=24,
        level=0.5,
        grid_points=7,
        batches=4,
        root_seed=SEED,
        ties=[[0.5, 0.0], [0.5, 0.3]],
    )
    fd = rgt.token_points(
        regime="finite_d",
        n=[200, 2000],
        d=[8],
        rho=0.0,
        contexts=48,
        level=0.5,
        grid_points=7,
        batches=4,
        root_seed=SEED,
    )
    th = rgth.theory_table(
        n=[200, 2000],
        theory_n=[200, 2000],
        gap_d=1024,
        gap_rho=0.5,
        ties=[[0.5, 0.0], [0.5, 0.3]],
        rem_s=1.0,
        fd_d=[8],
        fd_rho=0.0,
        level=0.5,
    )
    ro = rgt.read_off_points(
        n=5000,
        d=64,
        rho=0.0,
        shift=0.1,
        contexts=8,
        level=0.5,
        grid_points=7,
        batches=4,
        root_seed=SEED,
    )
    rt = rgth.read_off_theory(n=5000, d=64, rho=0.0, shift=0.1, copy_cosine=[1.0, 0.9], level=0.5)
    out = rgsum.critical_scale_table(
        simulations=[gap_sim, fd], theory=th, read_off_sim=ro, read_off_theory=rt
    )
    t = out["table"]
    assert list(t.columns) == rgsum.SUMMARY_COLUMNS
    sim = t[t["kind"] == "simulation"]
    assert len(sim) == 8 and np.all(np.abs(sim["z_pred"]) < 4), sim[["series", "n", "z_pred"]]
    # the k = 1 predictions are the exact finite-d theory
    one = sim[sim["k"] == 1]
    for _, r in one.iterrows():
        assert r["beta_pred"] == pytest.approx(
            finite_d.critical_beta(int(r["n"]), int(r["d"]), r["rho"])
        )
    # the tie series against the exact theory of k copies, paired on the rows of the query alone
    tied = sim[sim["k"] > 1]
    assert len(tied) == 4 and np.all(np.abs(tied["z_ratio"]) < 4), tied[["series", "z_ratio"]]
    # practical reading: simulated shifts bracket the target, near the first-order theory
    s = ro.set_index("k")
    ks = sorted(s.index)
    assert s.loc[ks[1], "shift_sim"] < 0.1 < s.loc[ks[-1], "shift_sim"]
    assert np.all(np.abs(ro["shift_sim"] - ro["shift_theory"]) < 0.01)
    assert set(out["read_off"]["source"]) == {"theory", "simulation"}


def test_rerun_is_byte_identical():
    """Same seed, same bytes; another seed, other numbers (docs/pipeline.md#reproducibility)."""
    kw = {
        "n": [100, 300],
        "d": [16],
        "rho": 0.0,
        "contexts": 8,
        "level": 0.5,
        "grid_points": 5,
        "batches": 2,
        "ties": [[0.5, 0.3]],
    }
    a = rgt.token_points(regime="finite_d", root_seed=SEED, **kw).to_csv(index=False)
    b = rgt.token_points(regime="finite_d", root_seed=SEED, **kw).to_csv(index=False)
    c = rgt.token_points(regime="finite_d", root_seed=SEED + 1, **kw).to_csv(index=False)
    assert a.encode() == b.encode() and a != c
    r1 = small_rem(n=(200,), contexts=16).to_csv(index=False)
    assert r1.encode() == small_rem(n=(200,), contexts=16).to_csv(index=False).encode()


def test_table_provenance_and_spawn_key():
    df = small_rem(n=(150,), contexts=8)
    row = df.iloc[0]
    assert row["root_seed"] == str(SEED)
    prefix = "-".join(map(str, spawn_key(rgr.REM_STREAM, 150)))
    assert row["spawn_key"] == prefix + "-{0..7}"
    for c in rgc.PROV:
        assert c in df.columns


def test_figure_draws_from_the_table():
    th = rgth.theory_table(
        n=[100, 1000],
        theory_n=[100, 1000, 10000],
        gap_d=64,
        gap_rho=0.5,
        ties=[[0.5, 0.0]],
        rem_s=1.0,
        fd_d=[8],
        fd_rho=0.0,
        level=0.5,
    )
    sim = small_rem(n=(100, 1000), contexts=16)
    ro = rgt.read_off_points(
        n=2000,
        d=32,
        rho=0.0,
        shift=0.1,
        contexts=4,
        level=0.5,
        grid_points=5,
        batches=2,
        root_seed=SEED,
    )
    rt = rgth.read_off_theory(n=2000, d=32, rho=0.0, shift=0.1, copy_cosine=[1.0], level=0.5)
    out = rgsum.critical_scale_table(
        simulations=[sim], theory=th, read_off_sim=ro, read_off_theory=rt
    )
    fig = fr.plot_regimes(
        table=out["table"], read_off=out["read_off"], caption="test", exponent=out["exponent"]
    )
    assert len(fig.axes) == 6
    import matplotlib.pyplot as plt

    plt.close(fig)


# =========================================================================== argument checks
@pytest.mark.parametrize(
    "call, needle",
    [
        (lambda: gap.gap_critical_beta(1, 0.5), "n must be"),
        (lambda: gap.gap_critical_beta(10, 1.0), "rho must be a real number in"),
        (lambda: gap.gap_top_weight(10, 0.5, -1.0), "beta must lie in"),
        (lambda: ties.ties_critical_beta(10, 10, 0.5), "k must be smaller than n"),
        (lambda: ties.ties_critical_beta(10, 0.5, 0.5), "k must be finite and >= 1"),
        (lambda: ties.ties_critical_beta(10, 2, 0.0), "delta must lie in"),
        (lambda: ties.ties_critical_beta(10, 2, 0.5, copy_gap=0.1, copy_noise=0.1), "at most one"),
        (lambda: ties.ties_critical_beta(10, 2, 0.5, copy_noise=0.1), "d must be given"),
        (lambda: ties.ties_critical_beta(10, 2, 0.5, level=1.0), "level must lie in"),
        (lambda: ties.ties_for_shift(100, 128, 0.0, shift=0.0), "shift must lie in"),
        (lambda: ties.ties_for_shift(100, 128, 0.0, copy_cosine=1.5), "copy_cosine must lie in"),
        (lambda: ties.copy_factor(-1.0, 0.1, 8), "beta must be finite and >= 0"),
        (lambda: rem.rem_top_weight_mean(100, -1.0), "beta must be finite and >= 0"),
        (lambda: rem.rem_top_weight_mean(100, 1.0, s=0.0), "s must lie in"),
        (lambda: rem.rem_critical_beta(100, method="pd"), "method must be one of"),
        (lambda: rem.pd_top_weight_mean(1.0), "alpha must lie in (0, 1)"),
        (lambda: rem_samplers.rem_scores_above(100, -1.0, rng(0)), "threshold must lie in"),
        (lambda: rem.rem_truncation_threshold(100, 3.0, 0.0), "eps must lie in"),
        (lambda: token_samplers.gaussian_token_draw(10, 2, 0.0, rng(0)), "d must be >= 3"),
        (
            lambda: token_samplers.gaussian_token_draw(10, 8, 0.0, rng(0), copies=10),
            "copies must be <= 9",
        ),
        (lambda: token_samplers.gaussian_token_draw(10, 8, 0.0, np.random.default_rng(0)), None),
        (
            lambda: token_samplers.gaussian_token_draw(10, 8, 0.0, 5),
            "rng must be a numpy.random.Generator",
        ),
        (lambda: ties.copy_cosines(-0.1, [0.0], [1.0], 8), "noise must lie in"),
        (
            lambda: rgr.rem_points(
                n=[100],
                s=1.0,
                contexts=2,
                level=0.5,
                grid_points=5,
                batches=2,
                truncation_eps=1e-6,
                root_seed=1,
            ),
            "contexts must be >= 4",
        ),
        (
            lambda: rgr.rem_points(
                n=[100],
                s=1.0,
                contexts=8,
                level=0.5,
                grid_points=5,
                batches=9,
                truncation_eps=1e-6,
                root_seed=1,
            ),
            "batches must be <= 8",
        ),
        (
            lambda: rgr.rem_points(
                n=[300, 100],
                s=1.0,
                contexts=8,
                level=0.5,
                grid_points=5,
                batches=2,
                truncation_eps=1e-6,
                root_seed=1,
            ),
            "strictly increasing",
        ),
        (
            lambda: rgt.token_points(
                regime="rem",
                n=[100],
                d=8,
                rho=0.0,
                contexts=8,
                level=0.5,
                grid_points=5,
                batches=2,
                root_seed=1,
            ),
            "regime must be",
        ),
        (
            lambda: rgt.token_points(
                regime="gap",
                n=[100],
                d=8,
                rho=0.0,
                contexts=8,
                level=0.5,
                grid_points=5,
                batches=2,
                root_seed=1,
                ties=[[1.5, 0.0]],
            ),
            "ties[0] kappa must lie in",
        ),
        (
            lambda: rgth.read_off_theory(
                n=100, d=8, rho=0.0, shift=0.1, copy_cosine=[1.2], level=0.5
            ),
            "copy_cosine must be <= 1",
        ),
        (lambda: rgs.beta_grid(5.0, 0.0, 7), "slope must lie in"),
        (lambda: ties_exact.ties_group_weight(10, 10, 8, 0.0, 1.0), "k must lie in"),
        (lambda: ties_exact.ties_group_weight(10, 2, 8, 0.0, -1.0), "beta must be finite"),
        (
            lambda: ties_exact.ties_group_weight(10, 2, 8, 0.0, 1.0, quadrature="x"),
            "quadrature must be",
        ),
        (lambda: ties_exact.ties_exact_critical_beta(10, 2, 2, 0.0), "d must be an integer"),
        (lambda: rgth.rem_orders(n=[2.0], factors=[1.5], s=1.0, level=0.5), "n must be >= 3"),
    ],
)
def test_bad_arguments_are_refused_naming_the_argument(call, needle):
    if needle is None:  # a plain Generator is fine
        call()
        return
    with pytest.raises((ValueError, TypeError)) as err:
        call()
    assert needle in str(err.value)


def test_config_checks():
    """regimes.batches above a contexts value, and n that collide after rounding, are refused
    before any job runs (src/attnscale/pipeline/config.py)."""
    import copy
    from pathlib import Path

    import yaml

    from attnscale.pipeline.config import load

    repo = Path(__file__).resolve().parents[1]
    schema = repo / "workflow/schemas/config.schema.yaml"
    base = yaml.safe_load((repo / "config.yaml").read_text())
    load(copy.deepcopy(base), schema=schema)
    bad = copy.deepcopy(base)
    bad["regimes"]["batches"] = 40
    with pytest.raises(ConfigError, match="regimes.batches"):
        load(bad, schema=schema)
    bad = copy.deepcopy(base)
    bad["regimes"]["n"] = [100, 100.2]
    with pytest.raises(ConfigError, match="regimes.n"):
        load(bad, schema=schema)
