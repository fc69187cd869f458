"""Independent checks of the mean-field eta (docs/finite-d.md#mean-field-for-eta).

Each piece is compared with a computation that shares none of its code: the tilted omega moments
with a fine log-space quadrature, the norm moments with simulation, the row functional and the
off-diagonal kernel with the library's exact eta of a real draw, and the whole mean field with the
dense exact eta (docs/paper-a.md#exact-block-formula-for-eta) and the sampled eta
(docs/long-context.md#the-sampled-eta) of simulated draws, each draw read at its own
``||z_0||``. Statistical tolerances are ``Z`` standard errors of the paired differences (SE from
the draws) plus the stated model error of the mean field.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnscale.core.seeding import job_rng, spawn_key
from attnscale.layer.dense.eta_exact import eta_exact, eta_exact_grid
from attnscale.layer.finite_d import eta as fe
from attnscale.layer.finite_d.laws import QUADRATURE_PRESETS, r0_nodes
from attnscale.layer.sampled.eta import eta_sampled
from attnscale.layer.tokens import from_draw, gaussian_draw

ROOT = 20261202
Z = 4.0  # two-sided normal quantile of the statistical tolerances (p ~ 6e-5 per check)
#: Model error allowed to the mean field, relative to eta [choice]: the neglected terms are
#: O(1/n), O(delta^2) and three weights on one key (docs/finite-d.md#mean-field-for-eta); the
#: measured differences at d = 128, 512 are below it (docs/finite-d.md#mean-field-for-eta).
MODEL = 0.01


def _rng(*ids):
    return job_rng(ROOT, spawn_key("test_finite_d_eta", *ids))


@pytest.mark.parametrize("d", [3, 8, 32, 512])
def test_omega_moments_against_quadrature(d):
    """The Bessel-ratio moments E_k[omega^p], p <= 4, against a fine trapezoid in the angle."""
    nu = (d - 3) / 2.0
    th = np.linspace(0.0, np.pi, 200001)
    x = np.cos(th)
    with np.errstate(divide="ignore"):  # (1 - w^2)^{nu - 1/2} dw = sin^{2 nu} dtheta
        lw0 = 2.0 * nu * np.log(np.sin(th)) if nu > 0 else np.zeros_like(th)
    for k in (0.0, 1e-4, 0.7, 5.0, 40.0, 200.0):
        lw = lw0 + k * x
        w = np.exp(lw - lw.max())
        w[[0, -1]] *= 0.5  # trapezoid
        w /= w.sum()
        ref = np.array([w @ x**p for p in range(5)])
        got = fe.omega_moments(nu, np.array([k]))[0]
        assert np.allclose(got, ref, rtol=1e-7, atol=1e-9), (d, k, got, ref)
        # the five-node rule integrates every quartic exactly against the tilted law
        c = np.array([0.3, -1.1, 0.7, 2.0, -0.4])
        rule = fe.omega_weights(nu, np.array([k]))[0] @ np.polyval(c[::-1], fe.OMEGA_NODES)
        assert abs(rule - c @ ref) < 1e-8


def test_inverse_norm_moments_against_simulation():
    """E[1/r^2 | tau] and E[1/r | tau] (J-ratios) against simulated tokens given z_0, at two tau
    bins and on average over tau."""
    d, rho, r0, N = 8, 0.5, 1.2, 400_000
    rng = _rng(1)
    v = (1 - rho) / d
    x = np.zeros((N, d))
    x[:, 0] = np.sqrt(rho) * r0
    x += np.sqrt(v) * rng.standard_normal((N, d))
    r = np.linalg.norm(x, axis=1)
    tau = x[:, 0] / r
    for lo, hi in ((0.5, 0.55), (0.8, 0.82)):
        sel = (tau > lo) & (tau < hi)
        t_mid = tau[sel]
        i2, i1 = fe.inverse_norm_moments(d, rho, r0, t_mid)
        for sim, th in ((1 / r[sel] ** 2, i2), (1 / r[sel], i1)):
            diff = sim - th  # paired with the theory at each token's own tau
            se = diff.std(ddof=1) / np.sqrt(diff.size)
            assert abs(diff.mean()) < Z * se + 1e-6, (lo, diff.mean(), se)


def test_row_functional_and_kernel_give_the_exact_eta():
    """Q, L and the off-diagonal kernel at a real row's measure reproduce the exact eta."""
    n, d, rho, beta, alpha = 48, 6, 0.5, 3.0, 0.3
    z0, Zs = gaussian_draw(n, d, _rng(2))
    X = from_draw(z0, Zs, rho)
    r = np.linalg.norm(X, axis=1)
    Y = X / r[:, None]
    A = np.exp(beta * (Y @ Y.T - 1.0))
    A /= A.sum(axis=1, keepdims=True)
    total = 0.0
    for i in range(n):
        m = A[i] @ Y
        S = (A[i][:, None] * Y).T @ Y
        q, lin = fe.row_functional(A[i, i], m, S, 0.0, Y[i], d, beta)
        off = [k for k in range(n) if k != i]
        g = fe.off_diagonal_kernel(m, Y[i], Y[off], d, beta)
        total += q / r[i] ** 2 + np.sum(A[i, off] ** 2 * g / r[off] ** 2)
        total += 2 * alpha * lin / r[i] + alpha**2 * d
    assert abs(total / (n * d) - eta_exact(X, beta, alpha)) < 1e-10


def test_eta_mean_field_at_beta0():
    """At beta = 0 every weight is 1/n: eta = (d - 1) E[1/r^2] / (n d) (+ the alpha terms)."""
    n, d, rho, alpha = 256, 16, 0.3, 0.5
    i2 = i1 = 0.0
    for wr, r0, _ti, _wi, tj, wj in fe.key_nodes(d, rho):
        a2, a1 = fe.inverse_norm_moments(d, rho, r0, tj)
        i2 += wr * (wj @ a2)
        i1 += wr * (wj @ a1)
    ref = (d - 1) * i2 / (n * d) + 2 * alpha * (d - 1) * i1 / (n * d) + alpha**2
    # the tau_i nodes of the alpha term and the tau_j grid of ref are different quadratures
    assert abs(fe.eta_mean_field(n, d, rho, 0.0, alpha=alpha) - ref) < 1e-7 * ref


def test_eta_given_averages_to_eta():
    """Conditioned on R_0 at the normal-score nodes and re-averaged, it is the unconditioned one."""
    n, d, rho, beta = 512, 64, 0.4, 10.0
    r0s, w = r0_nodes(d, QUADRATURE_PRESETS["standard"]["n_r0"])
    avg = sum(
        wk * fe.eta_mean_field(n, d, rho, beta, r0=float(r)) for r, wk in zip(r0s, w, strict=True)
    )
    assert abs(avg - fe.eta_mean_field(n, d, rho, beta)) < 1e-12


def _paired(n, d, rho, xs, draws, tag, sampled_rows=None):
    """Per draw: the exact (or sampled) eta and the mean field at the draw's own ||z_0||, at
    beta = x ln n / (1 - rho)."""
    betas = np.asarray(xs) * np.log(n) / (1 - rho)
    sim, th = [], []
    for t in range(draws):
        rng = _rng(tag, n, d, t)
        z0, Zs = gaussian_draw(n, d, rng)
        X = from_draw(z0, Zs, rho)
        if sampled_rows is None:
            sim.append(eta_exact_grid(X, betas))
        else:
            sim.append(eta_sampled(X, betas, rows=sampled_rows, rng=rng, probes=2).estimate)
        r0 = float(np.linalg.norm(z0))
        th.append([fe.eta_mean_field(n, d, rho, b, r0=r0) for b in betas])
    return np.array(sim), np.array(th)


def test_eta_mean_field_against_exact_eta():
    """d = 128, n = 512, rho = 0.5, around the transition: the dense exact eta of 4 draws, each
    against the theory at its own ||z_0||, within Z SE of the paired differences + MODEL."""
    xs = (0.75, 1.25)
    sim, th = _paired(512, 128, 0.5, xs, 4, 3)
    diff = sim - th
    se = diff.std(axis=0, ddof=1) / np.sqrt(diff.shape[0])
    assert np.all(np.abs(diff.mean(axis=0)) < Z * se + MODEL * th.mean(axis=0)), (diff, se)


def test_eta_mean_field_against_sampled_eta():
    """A longer context, n = 8192, d = 128: the sampled eta (128 rows, 2 probes) of 3 draws."""
    sim, th = _paired(8192, 128, 0.5, (1.0,), 3, 4, sampled_rows=128)
    diff = sim - th
    se = diff.std(axis=0, ddof=1) / np.sqrt(diff.shape[0])
    assert np.all(np.abs(diff.mean(axis=0)) < Z * se + MODEL * th.mean(axis=0)), (diff, se)


def test_eta_critical_beta_is_where_the_mean_field_reaches_a_quarter_of_its_limit():
    """The root is where ``eta_mean_field / eta_limit = 1/4`` (to the root's tolerance), and at
    ``d = 512`` (``ln n << d``) it is Paper A's ``gamma_c ln n`` within 1 % (measured 0.3 %); the
    figure's line equals the root at its nodes."""
    from attnscale.experiments.finite_d_theory import eta_star_line
    from attnscale.layer.finite_d.eta import eta_critical_beta, eta_limit

    n, rho = 1024, 0.5
    b = eta_critical_beta(n, 512, rho, r0=1.0)
    ratio = fe.eta_mean_field(n, 512, rho, b, r0=1.0) / eta_limit(512, rho, r0=1.0)
    assert ratio == pytest.approx(0.25, abs=1e-4)
    assert b * (1 - rho) / np.log(n) == pytest.approx(1.0, rel=0.01)
    line = eta_star_line(256, 64, [0.6])
    np.testing.assert_allclose(line, eta_critical_beta(256, 64, 0.6) / np.log(256), rtol=1e-12)
    with pytest.raises(ValueError, match="n must be"):
        eta_critical_beta(2, 64, 0.5)
