"""Depth: the iterated layer against the iterated finite-n simplex map
(docs/realistic-attention.md#depth)."""

from __future__ import annotations

import numpy as np
import pytest

from attnscale.experiments import realistic, realistic_summaries
from attnscale.layer import theory, tokens
from attnscale.layer.scores import depth


@pytest.mark.parametrize("rho", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("beta", [0.5, 5.0, 50.0])
@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_simplex_step_is_theory_simplex_map(rho, beta, alpha):
    """The delta form reproduces attnscale.layer.theory's one-layer map to rounding."""
    n, q = 50, 1.7
    cos, norm2 = theory.simplex_map(n, rho, beta, alpha, q)
    lam = theory.simplex_lambda(n, rho, beta, alpha, q)
    d1, q1, lam1 = depth.simplex_step(n, 1.0 - rho, beta, alpha, q)
    assert 1.0 - d1 == pytest.approx(cos, abs=1e-14)
    assert q1 == pytest.approx(norm2, rel=1e-13)
    assert lam1 == pytest.approx(lam, rel=1e-12, abs=1e-300)


def test_simplex_step_keeps_relative_accuracy_near_collapse():
    """delta = 1e-20 (rho = 1 in float64): lambda is the limit of the map as delta -> 0,
    (alpha sqrt q / (alpha sqrt q + 1))^2 with a_n = b_n = 1/n at t = 1."""
    n, alpha, q = 30, 1.0, 4.0
    d1, q1, lam = depth.simplex_step(n, 1e-20, 3.0, alpha, q)
    s = alpha * np.sqrt(q)
    assert lam == pytest.approx((s / (s + 1.0)) ** 2, rel=1e-12)
    assert d1 == pytest.approx(lam * 1e-20, rel=1e-15)


@pytest.mark.parametrize("alpha", [0.0, 1.0])
@pytest.mark.parametrize("beta", [1.0, 3.0, 8.0])
def test_iterated_layer_on_simplex_tokens_is_the_map(alpha, beta):
    """Simplex tokens stay simplex: simulation = iterated map. Tolerances: absolute 1e-12 on
    delta (rounding of O(1) sums), and relative 1e-6 on delta and lambda while delta > 1e-16
    (the centred distances carry ~1e-16 / sqrt(delta) relative error)."""
    n, rho, q, L = 10, 0.3, 2.0, 12
    X = tokens.simplex_exact(n, rho, q)
    sim = depth.iterate_layers(X, beta, L, alpha, block_rows=3)
    th = depth.simplex_depth(n, rho, beta, L, alpha, q)
    ran = ~np.isnan(sim["delta"])
    np.testing.assert_allclose(sim["delta"][ran], th["delta"][ran], rtol=0, atol=1e-12)
    ok = ran & (th["delta"] > 1e-16)
    np.testing.assert_allclose(sim["delta"][ok], th["delta"][ok], rtol=1e-6)
    np.testing.assert_allclose(sim["q"][ran], th["q"][ran], rtol=1e-12)
    lam_ok = ok[:-1] & ok[1:]  # input and output distances both resolved
    np.testing.assert_allclose(sim["lambda"][lam_ok], th["lambda"][lam_ok], rtol=1e-6)
    if alpha == 0.0 and beta <= 3.0:
        # sub-critical (gamma_c = 1/(1-rho) ln n = 3.3): collapse, the simulation stops
        assert np.isnan(sim["delta"][-1]) and th["delta"][-1] < depth.COLLAPSE_DELTA


@pytest.mark.parametrize("factor", [0.7, 2.0])
def test_gaussian_tokens_deviate_from_the_map_like_one_over_d(factor):
    """One layer on Gaussian near-simplex tokens (n = 64) at gamma = f gamma_c(rho_hat): the
    deviation of lambda from the simplex map at rho_hat is a bias of order 1/d (score spread
    ~ 1/sqrt(d) enters squared). d x (mean deviation) at d = 1024 and d = 4096 agree within
    4 combined standard errors (6 draws each)."""
    scaled = []
    for d in (1024, 4096):
        dev = []
        for trial in range(6):
            X = tokens.near_simplex(64, d, 0.5, np.random.default_rng(100 + trial))
            rho_hat, q_hat = tokens.mean_cosine(X), tokens.mean_sq_norm(X)
            beta = factor * theory.gamma_c(rho_hat) * np.log(64)
            lam = depth.iterate_layers(X, beta, 1)["lambda"][0]
            dev.append(lam - theory.simplex_lambda(64, rho_hat, beta, 0.0, q_hat))
        dev = np.asarray(dev)
        scaled.append((d * dev.mean(), d * dev.std(ddof=1) / np.sqrt(dev.size)))
    (m1, s1), (m2, s2) = scaled
    assert abs(m1 - m2) < 4 * np.hypot(s1, s2)
    assert abs(m1) > 4 * s1  # the bias itself is resolved: the check has power


def test_bad_input_names_argument():
    X = tokens.simplex_exact(5, 0.3)
    with pytest.raises(ValueError, match="L must be >= 1"):
        depth.iterate_layers(X, 1.0, 0)
    with pytest.raises(ValueError, match="L must be >= 1"):
        depth.simplex_depth(5, 0.3, 1.0, 0)
    with pytest.raises(ValueError, match="alpha"):
        depth.iterate_layers(X, 1.0, 2, -1.0)
    with pytest.raises(ValueError, match="layers must be >= 1"):
        realistic.depth_iteration(
            root_seed=1, n=8, d=8, rho=0.5, gamma_factors=[1.0], alphas=[0.0], layers=0, trial=0
        )


def test_depth_entry_reproducible():
    kw = dict(
        root_seed=3,
        n=16,
        d=16,
        rho=0.5,
        gamma_factors=[0.5, 2.0],
        alphas=[0.0, 1.0],
        layers=4,
        trial=0,
    )
    a = realistic.depth_iteration(**kw)
    assert a.equals(realistic.depth_iteration(**kw))
    assert len(a) == 2 * 2 * 5
    first = a[a["layer"] == 1]
    np.testing.assert_allclose(first["gamma_over_gc_input"], first["gamma_factor"], rtol=1e-12)


def test_depth_summary_is_draw_means_and_the_plot_runs_on_it():
    """The figure data of the depth figure: plain means and ddof-1 SEs over draws (numpy)."""
    kw = dict(
        root_seed=3, n=16, d=16, rho=0.5, gamma_factors=[0.5, 2.0], alphas=[0.0, 1.0], layers=3
    )
    runs = [realistic.depth_iteration(**kw, trial=t) for t in range(3)]
    out = realistic_summaries.depth_summary(data=runs)
    assert len(out) == 2 * 2 * 4 and (out["trials"] == 3).all()
    for _, row in out.iterrows():
        v = np.array(
            [
                r.loc[
                    (r.alpha == row.alpha)
                    & (r.gamma_factor == row.gamma_factor)
                    & (r.layer == row.layer),
                    "delta",
                ].iloc[0]
                for r in runs
            ]
        )
        assert row["delta_mean"] == pytest.approx(v.mean(), rel=1e-13)
        assert row["delta_se"] == pytest.approx(v.std(ddof=1) / np.sqrt(3), rel=1e-10)
    rho0 = np.mean([r["rho_hat0"].iloc[0] for r in runs])
    assert out["rho_hat0_mean"].iloc[0] == pytest.approx(rho0, rel=1e-14)
    from attnscale.figures.realistic import plot_depth

    fig = plot_depth(data=out, caption="t")
    assert len(fig.axes) == 4
    # what is drawn is the table: per alpha (column) and factor, the simulated means as markers
    # and the iterated simplex map as a line, 1 - rho_l on top and lambda_l below (layers >= 1)
    from drawn import all_lines

    alphas = sorted(out["alpha"].unique())
    for j, a in enumerate(alphas):
        top, bottom = all_lines(fig.axes[j]), all_lines(fig.axes[len(alphas) + j])
        top, bottom = [ln for ln in top if ln[1].size], [ln for ln in bottom if ln[1].size]
        for k, f in enumerate(sorted(out["gamma_factor"].unique())):
            s = out[(out["alpha"] == a) & (out["gamma_factor"] == f)].sort_values("layer")
            ok = s["layer"] >= 1
            np.testing.assert_array_equal(top[2 * k][2], s["delta_mean"].to_numpy())
            np.testing.assert_array_equal(
                top[2 * k + 1][2], np.maximum(s["delta_simplex_mean"].to_numpy(), 1e-30)
            )
            np.testing.assert_array_equal(bottom[2 * k][1], s["layer"][ok].to_numpy())
            np.testing.assert_array_equal(bottom[2 * k][2], s["lambda_mean"][ok].to_numpy())
            np.testing.assert_array_equal(
                bottom[2 * k + 1][2], s["lambda_simplex_mean"][ok].to_numpy()
            )
