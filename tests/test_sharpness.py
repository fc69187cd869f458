"""Transition sharpness against context length (docs/long-context.md#transition-sharpness-against-context-length).

Where each tolerance comes from:

* **Exact identities** (one pass for three observables against the separate sampled kernels, and
  with every row sampled against the dense kernels and numpy from the definitions): rounding only,
  ``1e-12`` relative, absolute below ``1e-3`` (lambda and eta vanish at ``beta = 0``); eta
  bit-identical to ``eta_sampled`` with the same generator state.
* **The figure's data at tiny size**: ``draw_curves`` with every row and the exact eta route
  against an independent recomputation (the self-weight and lambda from the n x n attention
  matrix in numpy, eta from the dense kernel ``eta_exact_grid``, Paper A's token draw rebuilt
  from ``tokens.gaussian_draw``): rounding, ``1e-10`` relative.
* **Crossings, widths and their delta-method SE**: linear interpolation is exact on a piecewise
  linear curve; the SE against the spread of the width over ``R = 2000`` synthetic replications
  (logistic curves with a random centre per draw and independent noise per point): the ratio of
  the spread to the root-mean-square SE is known to ~2 % (``1/sqrt(2 R)``) and the delta method
  is first order, so it must lie in ``[0.9, 1.1]``; the within-draw SEs do not enter (issue 37
  removed the floor; the calibration on simulated draws is tests/test_crossing_se.py).
* **Paper A's finite-n simplex width** of the self-weight and lambda is a function of
  ``(n - 1) n^{-x}`` (lambda up to ``O(1/n)``): its exponent against ``ln n`` is ``-1`` to ``0.01``
  for ``n >= 2^10``; eta's has explicit beta terms and shrinks a little slower.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnscale.core.crossings import crossing_gradient, crossing_se, first_crossing
from attnscale.experiments.findings.sharpness import sharpness_findings
from attnscale.experiments.paper_a_tokens import draw_tokens, tokens_at
from attnscale.experiments.sharpness import draw_curves, sharpness_curves
from attnscale.experiments.sharpness_summary import (
    local_slopes,
    sharpness_summary,
    simplex_crossing,
    theory_crossings,
    transition_rows,
)
from attnscale.layer import finite_d, theory, tokens
from attnscale.layer.dense.eta_exact import eta_exact_grid
from attnscale.layer.observables import REGISTRY, critical_level
from attnscale.layer.sampled.angle_ratio import angle_ratio_sampled
from attnscale.layer.sampled.eta import eta_sampled
from attnscale.layer.sampled.observables import observables_sampled

SEED = 20261201
ROOT = 271828182845904523536028747135266249775


def rel(a, b) -> float:
    """Largest relative difference, absolute below 0.1: lambda and eta vanish at beta = 0, where
    each is a mean of 1 - cos of order-one numbers whose rounding error (~1e-15 absolute, either
    sign, CPU-dependent) is all there is; a floor of 1e-3 turned 8e-16 vs -8e-16 into a
    1.7e-12 "relative" miss on an AMD machine."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 0.1)))


def dense(X, betas, alpha=0.0, causal=False):
    """Self-weight and lambda of every beta from the n x n attention matrix, by definition."""
    n = X.shape[0]
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    G = Y @ Y.T
    iu = np.triu_indices(n, 1)
    sw, lam = [], []
    for b in betas:
        S = b * G
        if causal:
            S = np.where(np.tril(np.ones((n, n), dtype=bool)), S, -np.inf)
        S -= S.max(axis=1, keepdims=True)
        A = np.exp(S)
        A /= A.sum(axis=1, keepdims=True)
        out = A @ Y + alpha * X
        Yo = out / np.linalg.norm(out, axis=1, keepdims=True)
        sw.append(np.diag(A).mean())
        lam.append(np.mean((1.0 - (Yo @ Yo.T)[iu]) / (1.0 - G[iu])))
    return np.array(sw), np.array(lam)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_one_pass_equals_the_sampled_kernels_and_with_every_row_the_dense_ones(alpha, causal):
    X = tokens.near_simplex(200, 12, 0.5, np.random.default_rng(SEED))
    betas = np.array([0.0, 2.0, 7.0, 20.0])
    got = observables_sampled(
        X, betas, alpha, rows=64, rng=np.random.default_rng(1), probes=2, causal=causal
    )
    eta = eta_sampled(
        X, betas, alpha, rows=64, rng=np.random.default_rng(1), probes=2, causal=causal
    )
    assert np.array_equal(got.eta.estimate, eta.estimate)
    assert np.array_equal(got.eta.se, eta.se)
    assert np.array_equal(got.lam.rows.rows, eta.rows.rows)
    lam = angle_ratio_sampled(X, betas, alpha, rows=got.lam.rows, causal=causal)
    assert rel(got.lam.estimate, lam.estimate) < 1e-12
    assert np.allclose(got.lam.se, lam.se, rtol=1e-10, atol=1e-15)
    full = observables_sampled(X, betas, alpha, rows=200, route="exact", causal=causal)
    sw, lam_dense = dense(X, betas, alpha, causal)
    assert rel(full.self_weight, sw) < 1e-12 and np.all(full.self_weight_se == 0)
    assert rel(full.lam.estimate, lam_dense) < 1e-12
    if not causal:
        assert rel(full.eta.estimate, eta_exact_grid(X, betas, alpha)) < 1e-12


def test_figure_data_at_tiny_size_against_a_dense_recomputation():
    n, d, rho, trial = 96, 8, 0.5, 1
    x = np.array([0.5, 0.9, 1.0, 1.3, 2.0])
    draw = draw_tokens(n=n, d=d, trial=trial, root_seed=ROOT)
    tok = tokens_at(draw, rho)
    r0 = float(np.linalg.norm(draw["z0"]))
    got = draw_curves(tok, r0, x, n, 1, np.random.default_rng(0), route="exact")
    # Paper A's draw rebuilt independently: z_0 first, then the n x d block, both N(0, I/d)
    from attnscale.core.seeding import job_rng
    from attnscale.experiments.paper_a_tokens import token_key

    g = job_rng(ROOT, token_key(n, d, trial))
    z0 = g.standard_normal(d) / np.sqrt(d)
    Z = g.standard_normal((n, d)) / np.sqrt(d)
    X = np.sqrt(rho) * z0 + np.sqrt(1 - rho) * Z
    assert np.allclose(X, tok["X"], rtol=1e-14, atol=0)
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    s = Y.sum(axis=0)
    rho_hat = (s @ s - n) / (n * (n - 1))
    assert got["rho_hat"].iloc[0] == pytest.approx(rho_hat, rel=1e-12)
    betas = x / (1 - rho_hat) * np.log(n)
    assert rel(got["beta"], betas) < 1e-12
    sw, lam = dense(X, betas)
    assert rel(got["self_weight"], sw) < 1e-10
    assert rel(got["lambda"], lam) < 1e-10
    limit = (1 - 1 / d) * np.mean(1 / np.einsum("ij,ij->i", X, X))
    assert rel(got["eta"], eta_exact_grid(X, betas) / limit) < 1e-10
    assert np.all(
        got[["self_weight_se_within", "lambda_se_within", "eta_se_within"]].to_numpy() == 0
    )
    # the finite-d critical point of the draw: E[A_ii | ||z_0||] = 1/2 there
    xs = got["x_star_given"].iloc[0]
    beta_star = xs * np.log(n) / (1 - rho_hat)
    assert finite_d.self_weight_given(n, d, rho, beta_star, r0) == pytest.approx(0.5, abs=1e-6)
    assert got["lambda_critical"].iloc[0] == pytest.approx(1 / (1 + 3 * rho_hat))


def test_sharpness_curves_is_reproducible_and_checks_its_arguments():
    kw = dict(n=64, d=6, rhos=[0.5], x=[0.8, 1.0, 1.5], rows=16, probes=1, trials=2, root_seed=ROOT)
    a, b = sharpness_curves(**kw), sharpness_curves(**kw)
    pd.testing.assert_frame_equal(a, b)
    assert sorted(a["trial"].unique()) == [0, 1] and (a["m"] == 16).all()
    for bad, name in (
        ({"x": [1.0, 0.8]}, "x"),
        ({"rows": 1}, "rows"),
        ({"d": 2}, "d"),
        ({"rhos": [1.0]}, "rhos"),
        ({"trials": 0}, "trials"),
    ):
        with pytest.raises(ValueError, match=name):
            sharpness_curves(**{**kw, **bad})


def test_crossing_interpolates_linearly_and_finds_the_first_upward_crossing():
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    F = np.array([0.0, 0.2, 0.6, 0.5, 1.0])
    assert first_crossing(x, F, 0.4)[0] == pytest.approx(1.5)
    assert first_crossing(x, F, 0.55)[0] == pytest.approx(1.875)  # the first, not the one after 3
    assert first_crossing(x, F, 1.5) is None and first_crossing(x, F, -0.1) is None
    assert first_crossing(x, F, 0.0) is None  # the curve starts at the level: no upward crossing
    # in log x (a geometric grid of scalings): the same bracket, the fraction taken in log x
    xg = np.geomspace(1.0, 16.0, 5)
    hit = first_crossing(xg, F, 0.4, log_x=True)
    assert hit.k == 1 and hit.t == pytest.approx(0.5) and hit.x == pytest.approx(np.sqrt(2.0 * 4.0))


def test_the_critical_level_is_the_limit_at_gamma_c():
    """One definition (attnscale.layer.observables.critical_level), equal to Paper A's values: 1/2,
    1/(1 + 3 rho) and 1/4, and the level of the figure's n -> inf step."""
    for rho in (0.1, 0.5, 0.9):
        assert critical_level("self_weight", rho) == 0.5
        assert critical_level("lambda", rho) == pytest.approx(1 / (1 + 3 * rho), rel=1e-15)
        assert critical_level("eta", rho) == 0.25
    with pytest.raises(ValueError, match="observable must be one of"):
        critical_level("cosine", 0.5)


def _synthetic(rng, T, x, centre, spread, scale, noise):
    c = centre + spread * rng.standard_normal(T)
    f = 1 / (1 + np.exp(-(x[None] - c[:, None]) / scale))
    return f + noise * rng.standard_normal(f.shape), np.full(f.shape, noise)


def test_delta_method_se_of_the_width_matches_its_spread():
    rng = np.random.default_rng(SEED)
    x = np.linspace(0.5, 1.5, 26)
    T, R = 8, 2000
    widths, spread = [], []
    for _ in range(R):
        f, _ = _synthetic(rng, T, x, 1.0, 0.03, 0.06, 0.01)
        F = f.mean(axis=0)
        lo, hi = first_crossing(x, F, 0.1), first_crossing(x, F, 0.9)
        from attnscale.experiments.sharpness_summary import _merge

        coef = _merge((1.0, crossing_gradient(x, F, hi)[0]), (-1.0, crossing_gradient(x, F, lo)[0]))
        widths.append(hi[0] - lo[0])
        spread.append(crossing_se(coef, 0.0, f, np.zeros(T)))
    sd = np.std(widths, ddof=1)
    assert 0.9 <= sd / np.sqrt(np.mean(np.square(spread))) <= 1.1


def test_simplex_width_shrinks_like_one_over_ln_n():
    ns = 2 ** np.arange(10, 21, 2)
    for obs in REGISTRY:
        lev = critical_level(obs, 0.5)
        w = [
            simplex_crossing(obs, n, 128, 0.5, 0.9) - simplex_crossing(obs, n, 128, 0.5, 0.1)
            for n in ns
        ]
        p = np.polyfit(np.log(np.log(ns)), np.log(w), 1)[0]
        if obs in ("eta", "entropy"):  # explicit beta terms: a little slower than 1/ln n
            assert -1.0 < p < -0.85, p
        else:  # a function of (n - 1) n^{-x} (lambda: up to O(1/n))
            assert p == pytest.approx(-1.0, abs=0.01), (obs, p)
        # the centre tends to Paper A's gamma_c (x = 1); not eta's at fixed d, whose value at
        # gamma_c exceeds the limit's 1/4 by about beta / (2 d) (docs/paper-a.md)
        c = [simplex_crossing(obs, n, 128, 0.5, lev) for n in ns]
        if obs != "eta":
            assert abs(c[-1] - 1) < abs(c[0] - 1) + 1e-12
    a = simplex_crossing("self_weight", 1024, 128, 0.5, 0.5)
    assert a == pytest.approx(np.log(1023) / np.log(1024), rel=1e-9)  # (n - 1) n^{-x} = 1


def test_the_tilt_floor_is_the_mean_field_lambda_far_below_the_transition():
    """Far below the transition (x = 0.3 at n = 1e7, where the self-weight and the finite-n
    dispersion vanish) the tilt's closed-form floor is lambda's finite-d mean field (independent
    code: tilted Bessel moments and quadrature, docs/finite-d.md#mean-field-for-cosine-and-lambda)
    within 2 % (measured 0.2-1.2 % at d = 64..512, rho = 0.5, 0.8); and ``floor_crossing`` inverts
    the floor."""
    n, x = 10**7, 0.3
    for d in (64, 128, 512):
        for rho in (0.5, 0.8):
            beta = x * theory.gamma_c(rho) * np.log(n)
            mf = finite_d.mean_field_given(n, d, rho, beta, 1.0)["lambda"]
            assert finite_d.lambda_floor(beta, d, rho) == pytest.approx(float(mf), rel=0.02)
            t = finite_d.floor_crossing(0.1, rho)
            assert finite_d.lambda_floor(t * d / (1 - rho), d, rho) == pytest.approx(0.1, rel=1e-12)
    assert finite_d.tilt(10.0, 32, 0.5) == pytest.approx(10 * 0.5 / 32)
    with pytest.raises(ValueError, match="level"):
        finite_d.floor_crossing(1.5, 0.5)
    with pytest.raises(ValueError, match="beta"):
        finite_d.lambda_floor(-1.0, 32, 0.5)


def test_eta_limit_is_the_mean_field_eta_at_large_beta():
    """eta's ``beta -> inf`` normaliser equals the mean-field eta at beta = 1e4 (no self-weight
    deficit left) to 1e-9, conditioned and averaged over ``||z_0||``."""
    from attnscale.layer.finite_d.eta import eta_limit, eta_mean_field

    for d, rho, r0 in ((32, 0.5, 1.0), (128, 0.8, 0.9), (64, 0.3, None)):
        big = eta_mean_field(1024, d, rho, 1e4, r0=r0)
        assert eta_limit(d, rho, r0=r0) == pytest.approx(big, rel=1e-9)
    with pytest.raises(ValueError, match="r0"):
        eta_limit(32, 0.5, r0=-1.0)


def test_local_slopes_of_a_power_law_and_their_se():
    """Widths ``w = c (ln n)^p`` give the local slope ``p`` at every pair, and the SE is the
    independent widths' delta method."""
    ns = np.array([1024, 4096, 65536])
    w = 0.7 * np.log(ns) ** -0.8
    se = 0.01 * w
    tr = pd.DataFrame(
        {
            "d": 32,
            "rho": 0.5,
            "observable": "lambda",
            "n": ns,
            "width": w,
            "width_se": se,
            "width_finite_d": 2 * w,
            "width_simplex": 1 / np.log(ns),
        }
    )
    out = local_slopes(tr)
    assert len(out) == 2
    np.testing.assert_allclose(out["slope"], -0.8, rtol=1e-12)
    np.testing.assert_allclose(out["slope_finite_d"], -0.8, rtol=1e-12)
    np.testing.assert_allclose(out["slope_simplex"], -1.0, rtol=1e-12)
    dt = np.diff(np.log(np.log(ns)))
    np.testing.assert_allclose(out["slope_se"], np.sqrt(2) * 0.01 / dt, rtol=1e-12)
    np.testing.assert_allclose(
        out["ln_n_over_d"], np.sqrt(np.log(ns[:-1]) * np.log(ns[1:])) / 32, rtol=1e-12
    )


def _table(T=3, ns=(1024, 4096, 16384), seed=SEED):
    """Per-draw rows of sharpness_curves' layout: logistic curves narrowing like 1/ln n."""
    rng = np.random.default_rng(seed)
    x = np.linspace(0.6, 1.8, 31)
    rows = []
    for d in (32, 128):
        for n in ns:
            for t in range(T):
                rec = {
                    "d": d,
                    "rho": 0.5,
                    "n": n,
                    "trial": t,
                    "x": x,
                    "m": 64,
                    "rho_hat": 0.5,
                    "x_star_given": 1.05,
                    "x_star_nominal": 1.05,
                    "lambda_critical": 0.4,
                }
                for o in REGISTRY.values():
                    f, s = _synthetic(rng, 1, x, 1.05, 0.01, 1.0 / np.log(n), 0.005)
                    # the raw value whose step is f (each step is its own inverse: v or 1 - v)
                    rec[o.name], rec[f"{o.name}_se_within"] = o.step(f[0]), s[0]
                rec["self_weight_theory"] = 1 / (1 + np.exp(-(x - 1.05) * np.log(n)))
                rows.append(pd.DataFrame(rec))
    return pd.concat(rows, ignore_index=True)


def _logistic_theory(g, n, d, x):
    """A stand-in for the finite-d theory of :func:`_table`: the curves' true logistic."""
    f = 1 / (1 + np.exp(-(np.asarray(x) - 1.05) * np.log(n)))
    return {
        "x": np.asarray(x),
        "rho_hat": 0.5,
        **{o.name: f for o in REGISTRY.values()},
        "floor_lambda": np.zeros_like(f),
    }


def test_summary_and_findings_on_a_known_table():
    out = sharpness_summary(data=[_table()], finite_d_theory=_logistic_theory)
    tr, trends, cur = out["transitions"], out["trends"], out["curves"]
    w_true = 2 * np.log(9) / np.log(tr["n"])  # 10 %-90 % width of a logistic of scale 1/ln n
    assert np.allclose(tr["width"], w_true, rtol=0.05)
    assert np.allclose(tr["width_finite_d"], w_true, rtol=0.01)
    assert np.allclose(tr["centre"][tr["observable"] == "self_weight"], 1.05, atol=0.01)
    assert np.allclose(tr["centre_finite_d"][tr["observable"] == "self_weight"], 1.05, atol=1e-3)
    assert np.allclose(trends["slope"], -1.0, atol=0.3)
    assert np.allclose(trends["slope_finite_d"], -1.0, atol=0.05)
    found = {f.key: f for f in sharpness_findings(transitions=tr, trends=trends, curves=cur)}
    last = trends[(trends["observable"] == "lambda") & (trends["n_hi"] == 16384)].sort_values("d")
    assert found["sharpness.local_slope_lambda"].value == pytest.approx(last["slope"].tolist())
    k, m = found["sharpness.centre_self_weight_within"].value
    assert m == 6 and k >= 4
    k, m = found["sharpness.width_eta_accepted"].value
    assert m == 6 and k >= 4
    assert all(f.value is not None for f in found.values()), [
        (k, f.note) for k, f in found.items() if f.value is None
    ]
    # a transition outside the grid: width nan, and the findings say why
    narrow = _table(ns=(1024,))[lambda t: t["x"] < 0.9]
    theory_of = {
        (d, 0.5, 1024): _logistic_theory(None, 1024, d, np.sort(narrow["x"].unique()))
        for d in (32, 128)
    }
    narrow = transition_rows(narrow, theory_of)
    assert narrow["width"].isna().all() and narrow["width_finite_d"].isna().all()


def test_theory_crossings_read_a_curve_as_the_simulated_ones():
    x = np.linspace(0.5, 1.5, 11)
    got = theory_crossings(x, x - 0.5, 0.45)
    assert got["width"] == pytest.approx(0.8) and got["centre"] == pytest.approx(0.95)
    assert np.isnan(theory_crossings(x, 0.05 * x, 0.5)["centre"])


def test_theory_curves_on_draws_at_their_rho_hat():
    """The theory of a (d, rho, n) is the mean field at the draws' mean rho_hat and norm 1:
    lambda from ``mean_field_given``, eta over its limit (tends to 1), the self-weight the mean of
    the draws' own column."""
    from attnscale.experiments.sharpness_summary import theory_curves

    x = np.array([0.5, 1.0, 6.0])
    g = pd.DataFrame(
        {
            "trial": np.repeat([0, 1], 3),
            "x": np.tile(x, 2),
            "rho_hat": np.repeat([0.48, 0.52], 3),
            "self_weight_theory": [0.1, 0.5, 0.9, 0.3, 0.7, 1.0],
        }
    )
    got = theory_curves(g, 4096, 256, x)
    beta = x * theory.gamma_c(0.5) * np.log(4096)
    want = finite_d.mean_field_given(4096, 256, 0.5, beta, 1.0)["lambda"]
    np.testing.assert_allclose(got["lambda"], want, rtol=1e-12)
    np.testing.assert_allclose(got["self_weight"], [0.2, 0.6, 0.95])
    assert got["eta"][-1] == pytest.approx(1.0, abs=1e-3) and got["eta"][0] < 0.05
    np.testing.assert_allclose(got["floor_lambda"], finite_d.lambda_floor(beta, 256, 0.5))


def test_config_refuses_bad_sizes():
    from attnscale.pipeline.config import Config, ConfigError
    from attnscale.pipeline.config_checks import CHECKS

    check = next(fn for fn in CHECKS if fn.__name__ == "_check_sharpness")
    good = {"sharpness": {"sizes": [{"d": 32, "n_max": 4096}], "n": [1024, 4096]}}
    check(Config(good))
    for sizes, msg in (
        ([{"d": 2, "n_max": 4096}], r"sharpness.sizes\[0\].d"),
        ([{"d": 32, "n_max": 512}], r"sharpness.sizes\[0\].n_max"),
        ([{"d": 64, "n_max": 4096}, {"d": 32, "n_max": 4096}], "increasing d"),
        ([], "non-empty"),
    ):
        with pytest.raises(ConfigError, match=msg):
            check(Config({"sharpness": {**good["sharpness"], "sizes": sizes}}))


def test_critical_beta_given_is_the_root_of_the_conditional_self_weight():
    b = finite_d.critical_beta_given(4096, 64, 0.5, 1.1)
    assert finite_d.self_weight_given(4096, 64, 0.5, b, 1.1) == pytest.approx(0.5, abs=1e-6)
    assert finite_d.critical_beta_given(2, 64, 0.5, 1.0) == 0.0
    # a larger ||z_0|| correlates the tokens more: the transition moves to larger beta
    assert finite_d.critical_beta_given(4096, 64, 0.5, 1.2) > b
    with pytest.raises(ValueError, match="r0"):
        finite_d.critical_beta_given(4096, 64, 0.5, 0.0)
    assert theory.gamma_c(0.5) == 2.0


def test_the_figure_draws_the_table_and_the_critical_level():
    """The plotted mean curves are the summary's curves, the widths and centres its transitions,
    and the open circle of Paper A's step sits at attnscale.layer.observables.critical_level."""
    import matplotlib.pyplot as plt

    from attnscale.figures.sharpness import plot_sharpness
    from drawn import all_lines, errorbars, lines

    out = sharpness_summary(data=[_table()], finite_d_theory=_logistic_theory)
    cur, tra = out["curves"], out["transitions"]
    fig = plot_sharpness(curves=cur, transitions=tra, caption="t")
    # rows: the registry's observables, width, centre; columns: d
    K = len(REGISTRY)
    axes = np.asarray(fig.axes[: 2 * (K + 2)]).reshape(K + 2, 2)
    for j, d in enumerate((32, 128)):
        for i, obs in enumerate(REGISTRY):
            drawn = lines(axes[i, j])
            for n in (1024, 4096, 16384):
                want = cur[(cur["observable"] == obs) & (cur["d"] == d) & (cur["n"] == n)]
                want = want.sort_values("x")
                x, y = drawn[f"n = 2^{int(np.log2(n))}"]
                np.testing.assert_array_equal(x, want["x"].to_numpy())
                np.testing.assert_array_equal(y, want["mean"].to_numpy())
                theory_lines = [
                    ln for ln in all_lines(axes[i, j]) if ln[2].tolist() == want["theory"].tolist()
                ]
                assert theory_lines, (obs, d, n)
            circle = [ln for ln in all_lines(axes[i, j]) if ln[1].tolist() == [1.0]]
            assert [c[2][0] for c in circle] == [critical_level(obs, 0.5)]
        for i, what in ((K, "width"), (K + 1, "centre")):
            drawn = errorbars(axes[i, j])
            for obs, lab in ((o.name, o.symbol) for o in REGISTRY.values()):
                want = tra[(tra["observable"] == obs) & (tra["d"] == d)].sort_values("n")
                x, y = drawn[f"{lab}, rho = 0.5"]
                np.testing.assert_allclose(x, np.log(want["n"].to_numpy()) / d, rtol=1e-15)
                np.testing.assert_array_equal(y, want[what].to_numpy())
    plt.close(fig)


def test_config_refuses_bad_calibration_and_z0_points():
    """The measurement points of config/long-context.yaml are checked before any work, each bad
    field named with its index and allowed range."""
    from attnscale.pipeline.config import Config, ConfigError
    from attnscale.pipeline.config_checks import CHECKS

    checks = {fn.__name__: fn for fn in CHECKS}
    base = {"sizes": [{"d": 32, "n_max": 4096}], "n": [1024, 4096]}
    good = {"d": 32, "n": 256, "rho": 0.5, "draws": 4, "rows": 32, "experiments": 100}
    checks["_check_sharpness"](Config({"sharpness": {**base, "calibration": [good]}}))
    for bad, msg in (
        ({"draws": 1}, r"sharpness.calibration\[0\].draws"),
        ({"rho": 1.0}, r"sharpness.calibration\[0\].rho"),
        ({"rows": 512}, r"sharpness.calibration\[0\].rows"),
    ):
        with pytest.raises(ConfigError, match=msg):
            checks["_check_sharpness"](
                Config({"sharpness": {**base, "calibration": [{**good, **bad}]}})
            )
    z0 = {"n": 4096, "d": 512, "rho": 0.5, "draws": 40, "rows": 256, "gamma": [2.0]}
    checks["_check_z0_spread"](Config({"paper_a": {"z0_spread": [z0]}}))
    with pytest.raises(ConfigError, match=r"paper_a.z0_spread\[0\].gamma"):
        checks["_check_z0_spread"](Config({"paper_a": {"z0_spread": [{**z0, "gamma": []}]}}))
