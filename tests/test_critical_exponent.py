"""``beta*(n)`` root finding, exact caps and the exponent fit (:mod:`attnscale.sphere.critical_exponent`),
and the entry functions and figures of the exponent experiments
(docs/paper-b-beyond.md#critical-exponent-across-dimensions).

Independent checks: brute-force softmax and finite differences for ``A_(1)`` and its slope; the
Poisson limit of ``E A_(1)`` at ``beta = gamma n^{2/(d-1)}`` (d = 3 closed form
``E[1/A_(1)] -> 1 + C/gamma`` and the quadrature values of docs/paper-b.md) at large ``n`` from
exact caps; caps against full contexts; the delta-method standard error against the spread of
independent replicates; the fit against synthetic power laws. Tolerances: 4 standard errors, or a
chi-square quantile where a variance is compared.
"""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from attnscale.experiments import paper_b_exponent as ex
from attnscale.experiments import paper_b_exponent_fits as exf
from attnscale.experiments import paper_b_exponent_rope as exr
from attnscale.figures import paper_b_exponent as fx
from attnscale.sphere import critical_exponent as ce
from attnscale.sphere import structured_keys as sk

SEED = 271828182845904523536028747135266249775


def rng(*ids):
    return np.random.default_rng(np.random.SeedSequence(20261130, spawn_key=ids))


# --------------------------------------------------------------------------- A_(1) and slope
def test_top_weight_and_slope_against_brute_force():
    T = rng(1).random((5, 30)) * 0.5
    Tf, owner, size = ce.dense_to_flat(T)
    D = Tf - ce.context_min(Tf, owner, size)[owner]
    beta = 17.0
    A, dA = ce.top_weight(D, owner, size, beta)
    W = np.exp(-beta * T)
    np.testing.assert_allclose(A, W.max(1) / W.sum(1), rtol=1e-13)
    h = 1e-5  # central difference: error O(h^2) ~ 1e-10 relative
    fd = ce.top_weight(D, owner, size, beta + h)[0] - ce.top_weight(D, owner, size, beta - h)[0]
    np.testing.assert_allclose(dA, fd / (2 * h), rtol=1e-7)
    assert np.all(dA >= 0)  # A_(1) increases with beta for every context


def test_context_min_marks_empty_contexts():
    T = np.array([0.3, 0.1, 0.7])
    owner = np.array([0, 0, 2])
    np.testing.assert_array_equal(ce.context_min(T, owner, 4), [0.1, np.inf, 0.7, np.inf])
    with pytest.raises(ValueError, match="every context needs at least one key"):
        ce.solve_critical_beta(T, owner, 3, 1.0, 2.0)


def test_root_solves_the_level_and_reports_bracket_failures():
    T = 2.0 * rng(2).beta(2, 2, size=(64, 200))
    Tf, owner, size = ce.dense_to_flat(T)
    lo, hi = ce.bracket_dense(Tf, owner, size, 1.0)
    res = ce.solve_critical_beta(Tf, owner, size, lo, hi)
    assert res["status"] == "ok" and lo <= res["beta_star"] <= hi
    D = Tf - ce.context_min(Tf, owner, size)[owner]
    assert abs(ce.top_weight(D, owner, size, res["beta_star"])[0].mean() - 0.5) < 1e-9
    assert ce.solve_critical_beta(Tf, owner, size, hi * 2, hi * 4)["status"] == "low"
    assert ce.solve_critical_beta(Tf, owner, size, lo / 4, lo / 2)["status"] == "high"


# --------------------------------------------------------------------------- exact caps, large n
def cap_top_weights(n, k, beta, size, r):
    t_c = ce.cap_radius(n, k, beta)
    T, owner, _ = sk.sample_d2q_cap(size, n, k, t_c, r)
    bound = ce.tail_bound(T, owner, size, n, t_c, beta)
    assert bound.max() <= ce.TAIL_EPS  # every nearest key inside t_q
    D = T - ce.context_min(T, owner, size)[owner]
    return ce.top_weight(D, owner, size, beta)[0]


def test_cap_top_weight_d3_matches_the_closed_form_limit():
    """d = 3, beta = gamma n: E[1/A_(1)] -> 1 + C/gamma = 1 + 1/(2 gamma) (docs/paper-b.md);
    the finite-n correction is O(1/n) = 1e-5, far below the Monte Carlo error."""
    n, size = 100_000, 4000
    for gamma, e_inv, e_a in ((1.0, 1.5, 0.72949), (0.3, 1 + 1 / 0.6, 0.42207)):
        A = cap_top_weights(n, 3, gamma * n, size, rng(3, int(gamma * 10)))
        inv = 1.0 / A
        assert abs(inv.mean() - e_inv) < 4 * inv.std() / np.sqrt(size)
        assert abs(A.mean() - e_a) < 4 * A.std() / np.sqrt(size)


def test_cap_top_weight_d5_matches_the_poisson_limit():
    """d = 5, beta = sqrt(n) = 1000: E A_(1) -> 0.27599 (Palm quadrature, docs/paper-b.md); the
    finite-n correction is O(1/beta) = 1e-3 relative, below the Monte Carlo error 0.006."""
    size = 2000
    A = cap_top_weights(1_000_000, 5, 1000.0, size, rng(4))
    assert abs(A.mean() - 0.27599) < 4 * A.std() / np.sqrt(size)


def test_cap_and_full_contexts_give_the_same_beta_star():
    n, k, size = 3000, 6, 400
    full = 2.0 * rng(5).beta((k - 1) / 2, (k - 1) / 2, size=(size, n))
    Tf, owner, s = ce.dense_to_flat(full)
    res_full = ce.solve_critical_beta(Tf, owner, s, *ce.bracket_dense(Tf, owner, s, 10.0))
    res_cap = ce.critical_beta_cap(n, k, size, res_full["beta_star"], lambda j: rng(6, j))
    assert res_cap["keys_in_cap"] < n / 2  # the cap really drops keys
    se = np.hypot(res_full["se"], res_cap["se"])
    assert abs(res_full["beta_star"] - res_cap["beta_star"]) < 4 * se


def test_delta_method_se_matches_the_spread_of_replicates():
    """Var of 40 independent estimates / mean SE^2 ~ chi2_39 / 39: inside its 0.1% .. 99.9% range."""
    reps, size, n = 40, 48, 60  # d = 4: T/2 ~ Beta(3/2, 3/2)
    est, ses = [], []
    for i in range(reps):
        T = 2.0 * rng(7, i).beta(1.5, 1.5, size=(size, n))
        Tf, owner, s = ce.dense_to_flat(T)
        res = ce.solve_critical_beta(Tf, owner, s, *ce.bracket_dense(Tf, owner, s, 5.0))
        est.append(res["beta_star"])
        ses.append(res["se"])
    ratio = np.var(est, ddof=1) / np.mean(np.square(ses))
    lo, hi = stats.chi2.ppf([0.001, 0.999], reps - 1) / (reps - 1)
    assert lo < ratio < hi


def test_cap_radius_and_tail_bound():
    assert ce.cap_radius(10, 3, 1e-3) == 2.0  # tiny beta: the whole sphere
    r1, r2 = ce.cap_radius(10**6, 5, 100.0), ce.cap_radius(10**6, 5, 1000.0)
    assert 0 < r2 < r1 < 2
    T = np.array([0.01, 0.02, 0.05])
    b = ce.tail_bound(T, np.array([0, 0, 1]), 3, 100, 0.1, 50.0)
    np.testing.assert_allclose(b[:2], [98 * np.exp(-50 * 0.09), 99 * np.exp(-50 * 0.05)])
    assert b[2] == np.inf
    with pytest.raises(ValueError, match="beta_lo"):
        ce.cap_radius(100, 3, 0.0)


# --------------------------------------------------------------------------- fit
def test_fit_recovers_exact_power_laws_with_and_without_correction():
    n = np.geomspace(100, 1e6, 9)
    se = np.full(9, 0.01)
    b = 2.0 * n**0.4
    f = ce.fit_exponent(n, b, se * b, correction=False)
    assert abs(f["alpha"] - 0.4) < 1e-12 and f["chi2"] < 1e-20
    # log b = A + alpha log n + B / b has an exact solution for b: solve by fixed point
    bc = 2.0 * n**0.4
    for _ in range(200):
        bc = np.exp(np.log(2.0) + 0.4 * np.log(n) + 3.0 / bc)
    f = ce.fit_exponent(n, bc, se * bc)
    assert abs(f["alpha"] - 0.4) < 1e-9 and abs(f["b"] - 3.0) < 1e-7
    assert ce.fit_exponent(n, bc, se * bc, n_min=1e4)["points"] == 5


def test_fit_standard_error_is_calibrated_on_synthetic_noise():
    """200 synthetic noisy power laws: the z-scores of the fitted exponent have sd 1 (chi2 range)."""
    n = np.geomspace(100, 1e6, 9)
    r = rng(8)
    z = []
    for _ in range(200):
        rel = r.uniform(0.01, 0.05, 9)
        b = 3.0 * n**0.25 * np.exp(rel * r.standard_normal(9))
        f = ce.fit_exponent(n, b, rel * b, correction=False)
        z.append((f["alpha"] - 0.25) / f["se_alpha"])
    lo, hi = stats.chi2.ppf([0.001, 0.999], 199) / 199
    assert lo < np.var(z, ddof=1) < hi
    assert abs(np.mean(z)) < 4 / np.sqrt(200)


def test_fit_bad_input():
    with pytest.raises(ValueError, match="same length"):
        ce.fit_exponent([1, 2, 3, 4], [1, 2, 3], [1, 1, 1])
    with pytest.raises(ValueError, match="at least 4 points"):
        ce.fit_exponent([10, 20, 30], [1, 2, 3], [0.1, 0.1, 0.1])
    with pytest.raises(ValueError, match="se"):
        ce.fit_exponent([10, 20, 30, 40], [1, 2, 3, 4], [0.1, 0.0, 0.1, 0.1])


# --------------------------------------------------------------------------- entry functions
def test_uniform_points_are_deterministic_and_well_formed():
    kw = {"d": 4, "n": [100, 1000, 20000], "contexts": 32, "level": 0.5}
    P = ex.uniform_points(**kw, root_seed=SEED)
    pd.testing.assert_frame_equal(P, ex.uniform_points(**kw, root_seed=SEED))
    assert not P["beta_star"].equals(ex.uniform_points(**kw, root_seed=SEED + 1)["beta_star"])
    assert list(P["n"]) == [100, 1000, 20000] and np.all(np.diff(P["beta_star"]) > 0)
    assert (P["tail_bound"] <= ce.TAIL_EPS).all() and (P["alpha_theory"] == 2 / 3).all()
    assert {"root_seed", "spawn_key", "params_hash"} <= set(P.columns)


def test_subsphere_and_rope_points_and_fits():
    S = ex.subsphere_points(
        d=6,
        k=3,
        n=[50, 200, 800, 3200, 12800],
        contexts=16,
        level=0.5,
        full_keys_max_n=800,
        root_seed=SEED,
    )
    assert set(S["method"]) == {"d2q", "full"} and (S["alpha_theory"] == 1.0).all()
    R = exr.rope_points(
        d=8,
        kappa_per_d=np.inf,
        base=10000.0,
        n=[50, 100, 200, 400, 800],
        contexts=16,
        level=0.5,
        root_seed=SEED,
    )
    assert (R["alpha_orbit"] == 2.0).all() and (R["family"] == "rope").all()
    out = exf.exponent_tables(points=[S, R], upper_n_min=200)
    F = out["fits"]
    assert len(out["points"]) == len(S) + len(R)
    sel = F[(F["family"] == "subsphere") & (F["method"] == "d2q")]
    assert set(sel["model"]) == {"correction", "plain", "upper", "top3"}
    full = F[(F["family"] == "subsphere") & (F["method"] == "full")]
    assert full["model"].tolist() == ["plain", "top3"]  # 3 points: too few for the correction
    for fig in (
        fx.plot_exponent(points=out["points"], fits=F, caption="c"),
        fx.plot_rope(points=out["points"], fits=F, caption="c"),
    ):
        assert isinstance(fig, matplotlib.figure.Figure) and len(fig.axes) >= 3
        matplotlib.pyplot.close(fig)


@pytest.mark.parametrize(
    "fn,kw,word",
    [
        (ex.subsphere_points, {"d": 5, "k": 6}, "k"),
        (ex.subsphere_points, {"d": 5, "k": 1}, "k"),
        (exr.rope_points, {"d": 8, "kappa_per_d": 0.0, "base": 1.0}, "base"),
        (exr.rope_points, {"d": 9, "kappa_per_d": 0.0, "base": 1e4}, "d must be even"),
        (exr.rope_points, {"d": 8, "kappa_per_d": -1.0, "base": 1e4}, "kappa"),
        (ex.uniform_points, {"d": 2}, "d"),
        (ex.uniform_points, {"d": 4, "level": 1.0}, "level"),
        (ex.uniform_points, {"d": 4, "n": [100, 50]}, "increasing"),
    ],
)
def test_entry_functions_reject_bad_input_by_name(fn, kw, word):
    base = {"n": [100, 200], "contexts": 16, "level": 0.5, "root_seed": SEED}
    if fn is ex.subsphere_points:
        base["full_keys_max_n"] = 0
    with pytest.raises(ValueError, match=word):
        fn(**{**base, **kw})


def test_sphere_points_runs_both_families_and_checks_its_sections_first():
    uni = {"d": [3], "n": [100, 300, 1000], "contexts": 8}
    sub = {"d": 5, "k": [3], "n": [100, 300, 1000], "contexts": 8, "full_keys_max_n": 0}
    P = ex.sphere_points(uniform=uni, subsphere=sub, level=0.5, root_seed=SEED)
    assert set(P["family"]) == {"uniform", "subsphere"} and len(P) == 6
    with pytest.raises(ValueError, match="subsphere must be a dict"):
        ex.sphere_points(uniform=uni, subsphere={"d": 5}, level=0.5, root_seed=SEED)
    with pytest.raises(ValueError, match=r"k \(dimension of the sub-space\)"):
        ex.sphere_points(uniform=uni, subsphere={**sub, "k": [6]}, level=0.5, root_seed=SEED)
