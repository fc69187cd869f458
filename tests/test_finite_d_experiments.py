"""Finite-d experiments (attnscale.layer.scores.weight_stats, attnscale.experiments.finite_d) against
independent computations at tiny sizes (docs/finite-d.md).

References are written here from the definitions with dense numpy: A = row-softmax(beta Y Y^T),
N_eff = 1 / sum_j A_ij^2, the 90 %-mass key count from the sorted cumulative weights. Tolerances:
float64 rounding of softmax sums over n <= 300 terms at beta <= 300 (rtol 1e-9); the analytic
beta-derivative against a central difference with h = 1e-4 (truncation ~h^2 |f'''| < 1e-7 and
rounding ~eps/h ~ 1e-12 for |f'''| = O(10) here, hence atol 1e-6); statistical checks use k
standard errors computed from the draws.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnscale.experiments import finite_d as F
from attnscale.experiments import finite_d_theory as FT
from attnscale.layer import tokens
from attnscale.layer.scores import weight_stats

SEED = 271828182845904523536028747135266249775


def dense_weights(X, beta):
    """A = row-softmax(beta <y_i, y_j>), written from the definition (docs/paper-a.md)."""
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    S = beta * (Y @ Y.T)
    W = np.exp(S - S.max(axis=1, keepdims=True))
    return W / W.sum(axis=1, keepdims=True)


def dense_stats(X, beta, rows, mass=0.9):
    A = dense_weights(X, beta)[rows]
    ii = np.arange(len(rows))
    self_w = A[ii, rows]
    off = A.copy()
    off[ii, rows] = 0.0
    cum = np.cumsum(-np.sort(-A, axis=1), axis=1)
    k = np.array([int(np.argmax(c >= mass * (1 - 1e-12))) + 1 for c in cum])
    return self_w, 1.0 / (A**2).sum(axis=1), off.sum(1) ** 2 / (off**2).sum(1), k


@pytest.mark.parametrize("block_entries", [2**21, 700])  # one block; many blocks of 2 rows
def test_row_weight_stats_equal_dense_softmax(block_entries):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 6)) * rng.uniform(0.5, 2.0, (300, 1))
    rows = np.arange(5, 300, 11)
    betas = np.array([0.0, 0.7, 4.0, 25.0, 300.0])
    st = weight_stats.row_weight_stats(X, betas, rows=rows, block_entries=block_entries)
    for k, beta in enumerate(betas):
        s, ne, no, km = dense_stats(X, beta, rows)
        np.testing.assert_allclose(st["self_weight"][:, k], s, rtol=1e-9, atol=1e-300)
        np.testing.assert_allclose(st["n_eff"][:, k], ne, rtol=1e-9)
        np.testing.assert_allclose(st["n_eff_others"][:, k], no, rtol=1e-9)
        np.testing.assert_array_equal(st["k_mass"][:, k], km)


def test_row_weight_stats_closed_forms_at_beta_zero_and_on_the_simplex():
    """beta = 0: uniform weights, A_ii = 1/n, N_eff = n, k = ceil(0.9 n). Exact simplex tokens
    (all cosines rho): A_ii = 1 / (1 + (n-1) t), t = e^{beta (rho - 1)}, the others share equally
    (N_eff of the others = n - 1)."""
    n, rho, beta = 40, 0.3, 5.0
    X = tokens.simplex_exact(n, rho)
    st = weight_stats.row_weight_stats(X, [0.0, beta])
    np.testing.assert_allclose(st["self_weight"][:, 0], 1.0 / n, rtol=1e-12)
    np.testing.assert_allclose(st["n_eff"][:, 0], n, rtol=1e-12)
    assert np.all(st["k_mass"][:, 0] == 36)  # ceil(0.9 * 40)
    t = np.exp(beta * (rho - 1.0))
    np.testing.assert_allclose(st["self_weight"][:, 1], 1.0 / (1.0 + (n - 1) * t), rtol=1e-12)
    np.testing.assert_allclose(st["n_eff_others"][:, 1], n - 1, rtol=1e-9)


def test_self_weight_curve_matches_dense_and_its_derivative():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((120, 5))
    rows = np.arange(0, 120, 3)
    gaps = weight_stats.self_weight_scores(X, rows=rows, block_entries=300)
    assert gaps.shape == (40, 119)
    assert np.all(gaps <= 0.0)
    for beta in (0.5, 3.0, 12.0):
        a, da = weight_stats.self_weight_curve(gaps, beta)
        A = dense_weights(X, beta)
        np.testing.assert_allclose(a, A[rows, rows], rtol=1e-9)
        h = 1e-4
        fd = (
            weight_stats.self_weight_curve(gaps, beta + h)[0]
            - weight_stats.self_weight_curve(gaps, beta - h)[0]
        ) / (2 * h)
        np.testing.assert_allclose(da, fd, atol=1e-6)
        assert np.all(da >= 0.0)  # A_ii increases with beta in every row


def test_simulated_critical_beta_on_simplex_tokens_is_the_closed_form():
    """All cosines rho: <A_ii> = 1/2 exactly at beta = ln(n - 1) / (1 - rho)."""
    n, rho = 64, 0.4
    gaps = [weight_stats.self_weight_scores(tokens.simplex_exact(n, rho), rows=np.arange(10))]
    res = F.simulated_critical_beta(gaps)
    assert res["beta_star"] == pytest.approx(np.log(n - 1) / (1 - rho), rel=1e-9)
    assert np.isnan(res["beta_star_se"])  # one draw: no error bar
    # any starting guess converges to the same root
    res2 = F.simulated_critical_beta(gaps, guess=500.0)
    assert res2["beta_star"] == pytest.approx(res["beta_star"], rel=1e-9)


def test_transition_points_root_is_where_dense_mean_self_weight_is_one_half():
    n, d, trials, rows = 48, 6, 3, 20
    df = F.transition_points(
        n=n, d=d, rho=[0.0, 0.5], trials=trials, rows=rows, root_seed=SEED, theory=False
    )
    assert list(df["rho"]) == [0.0, 0.5]
    for _, r in df.iterrows():
        a = []
        for t in range(trials):
            rng = np.random.default_rng(
                np.random.SeedSequence(SEED, spawn_key=F.transition_key(n, d, t))
            )
            z0 = rng.standard_normal(d) / np.sqrt(d)
            Z = rng.standard_normal((n, d)) / np.sqrt(d)
            X = np.sqrt(r["rho"]) * z0 + np.sqrt(1 - r["rho"]) * Z
            A = dense_weights(X, r["beta_star"])
            a.append(np.diag(A)[:rows].mean())
        assert np.mean(a) == pytest.approx(0.5, abs=1e-7)
        se = np.std(a, ddof=1) / np.sqrt(trials)
        assert r["a_se"] == pytest.approx(se, rel=1e-6)
        assert r["gamma_star"] == pytest.approx(r["beta_star"] / np.log(n))
    again = F.transition_points(
        n=n, d=d, rho=[0.0, 0.5], trials=trials, rows=rows, root_seed=SEED, theory=False
    )
    pd.testing.assert_frame_equal(df, again)  # reproducible from the seed


def test_delta_method_se_matches_the_spread_of_per_draw_roots():
    """SE(beta*) = SE(<A_ii>) / slope against the standard deviation of 60 independent per-draw
    roots / sqrt(60). The sample SD of 60 draws has a relative SE of ~1/sqrt(2 * 59) = 9 %, and the
    linearisation adds a few %: the ratio must lie within 1 +- 0.35 (about 3.5 SE)."""
    n, d, trials = 64, 8, 60
    df = F.transition_points(
        n=n, d=d, rho=[0.5], trials=trials, rows=16, root_seed=SEED, theory=False
    )
    roots = []
    for t in range(trials):
        rng = np.random.default_rng(
            np.random.SeedSequence(SEED, spawn_key=F.transition_key(n, d, t))
        )
        z0, Z = tokens.gaussian_draw(n, d, rng)
        g = weight_stats.self_weight_scores(tokens.from_draw(z0, Z, 0.5), rows=np.arange(16))
        roots.append(F.simulated_critical_beta([g])["beta_star"])
    direct = np.std(roots, ddof=1) / np.sqrt(trials)
    assert df["beta_star_se"].iloc[0] / direct == pytest.approx(1.0, abs=0.35)


def test_intermediate_phase_equals_dense_means():
    n, d = 40, 4
    rng = np.random.default_rng(5)
    draws = []
    for t in range(2):
        z0, Z = tokens.gaussian_draw(n, d, rng)
        draws.append({"z0": z0, "Z": Z, "trial": np.int64(t)})
    rhos, gam = [0.2, 0.7], [0.5, 1.5, 6.0]
    df = F.intermediate_phase(draws=draws, rho=rhos, gamma=gam, rows=15, theory=False)
    assert len(df) == 6
    for _, r in df.iterrows():
        per = [
            dense_stats(
                tokens.from_draw(t["z0"], t["Z"], r["rho"]), r["gamma"] * np.log(n), np.arange(15)
            )
            for t in draws
        ]
        s, ne, no, km = (np.mean([p[k].mean() for p in per]) for k in range(4))
        assert r["self_weight_mean"] == pytest.approx(s, rel=1e-9)
        assert r["n_eff_mean"] == pytest.approx(ne, rel=1e-9)
        assert r["n_eff_others_mean"] == pytest.approx(no, rel=1e-9)
        assert r["k_mass_mean"] == pytest.approx(km, rel=1e-12)
        ne_draw = [p[1].mean() for p in per]
        assert r["n_eff_se"] == pytest.approx(np.std(ne_draw, ddof=1) / np.sqrt(2), rel=1e-9)
        assert r["gamma_c"] == pytest.approx(1 / (1 - r["rho"]))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: weight_stats.row_weight_stats(np.ones((4, 2)), [1.0], mass=1.5), "mass"),
        (lambda: weight_stats.row_weight_stats(np.ones((4, 2)), [-1.0]), "betas"),
        (lambda: weight_stats.row_weight_stats(np.ones((4, 2)), [1.0], rows=[7]), "rows"),
        (lambda: weight_stats.self_weight_scores(np.zeros((4, 2))), "X"),
        (
            lambda: F.transition_points(
                n=2, d=4, rho=[0.0], trials=2, rows=2, root_seed=1, theory=False
            ),
            "n",
        ),
        (
            lambda: F.transition_points(
                n=8, d=4, rho=[1.0], trials=2, rows=2, root_seed=1, theory=False
            ),
            "rho",
        ),
        (
            lambda: F.transition_points(
                n=8, d=4, rho=[0.1], trials=0, rows=2, root_seed=1, theory=False
            ),
            "trials",
        ),
        (lambda: F.simulated_critical_beta([np.zeros((2, 3))], level=0.1), "level"),
        (lambda: F.intermediate_phase(draws=[], rho=[0.5], gamma=[1.0], rows=2), "draws"),
        (
            lambda: F.intermediate_phase(
                draws=[{"z0": np.ones(2), "Z": np.ones((3, 2))}], rho=[0.5], gamma=[0.0], rows=2
            ),
            "gamma",
        ),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_conditioned_theory_averaged_over_r0_is_the_unconditioned_theory():
    """theory_given_draw at the R_0 quadrature nodes, averaged with their weights, reproduces
    attnscale.layer.finite_d.mean_field (cosine, lambda) and self_weight (A_ii): the same quadrature,
    so up to rounding for the mean field; for A_ii the library's own quadrature error (< 1e-4,
    docs/finite-d.md) bounds the difference."""
    from attnscale.layer import finite_d
    from attnscale.layer.finite_d.laws import QUADRATURE_PRESETS, r0_nodes

    n, d, rho, betas = 256, 64, 0.5, np.array([8.0, 12.0])
    r0s, r0w = r0_nodes(d, QUADRATURE_PRESETS["standard"]["n_r0"])
    acc = {"self_weight": 0.0, "cosine": 0.0, "lambda": 0.0}
    for r, w in zip(r0s, r0w, strict=True):
        g = FT.theory_given_draw(n, d, rho, betas, float(r))
        for k in acc:
            acc[k] = acc[k] + w * g[k]
    mf = finite_d.mean_field(n, d, rho, betas)
    np.testing.assert_allclose(acc["cosine"], mf["cos"], rtol=1e-10)
    np.testing.assert_allclose(acc["lambda"], mf["lambda"], rtol=1e-10)
    np.testing.assert_allclose(
        acc["self_weight"], finite_d.self_weight(n, d, rho, betas), atol=1e-4
    )


def test_gamma_star_line_hits_the_theory_at_its_nodes():
    """With nodes on grid points the spline passes through the exact critical_gamma values
    (rho = 0 and two small rho: cheap theory evaluations)."""
    from attnscale.layer import finite_d

    rhos = np.array([0.0, 0.05, 0.1, 0.15, 0.2])
    line = FT.gamma_star_line(512, 32, rhos, nodes=3)  # nodes 0, 0.1, 0.2
    for k in (0, 2, 4):
        assert line[k] == pytest.approx(finite_d.critical_gamma(512, 32, float(rhos[k])), rel=1e-12)
    exact = [finite_d.critical_gamma(512, 32, r) for r in (0.0, 0.05, 0.1, 0.15, 0.2)]
    line5 = FT.gamma_star_line(512, 32, rhos, nodes=5)  # as many nodes as points: exact
    np.testing.assert_allclose(line5, exact, rtol=1e-12)


def test_theorem_table_finite_d_columns_and_acceptance():
    """Paired differences against the finite-d column: z_fd = mean / SE, accept_fd uses
    max(3 SE, 0.002)."""
    from attnscale.experiments import paper_a_theorem as pth

    qs = pth.QUANTITIES
    rows = pd.DataFrame(
        {
            "d": 32,
            "n": 16,
            "rho": 0.5,
            "alpha": 0.0,
            "gamma_factor": 1.0,
            "trial": [0, 1, 2],
            "rho_hat": 0.5,
            "q_hat": 1.0,
            "gamma": 2.0,
            **{q: [0.50, 0.51, 0.49] for q in qs},
            **{f"{q}_simplex_n": 0.5 for q in qs},
            **{f"{q}_limit": 0.5 for q in qs},
            "eta_simplex_n_norms": 0.5,
            "self_weight_finite_d": [0.499, 0.509, 0.488],
            "cosine_finite_d": [0.40, 0.41, 0.39],
            "lambda_finite_d": [0.5005, 0.5105, 0.4905],
            "eta_finite_d": np.nan,
        }
    )
    tab = pth.theorem_table(rows).set_index("quantity")
    diff = np.array([0.001, 0.001, 0.002])
    se = diff.std(ddof=1) / np.sqrt(3)
    assert tab.loc["self_weight", "z_fd"] == pytest.approx(diff.mean() / se)
    assert tab.loc["self_weight", "accept_fd"]  # |0.00133| <= max(3 SE, 0.002)
    assert not tab.loc["cosine", "accept_fd"]  # off by 0.1 with SE 0
    assert tab.loc["lambda", "accept_fd"]  # off by -0.0005, constant: within 0.002
    assert np.isnan(tab.loc["eta", "finite_d"]) and not tab.loc["eta", "accept_fd"]


def test_plot_functions_return_figures():
    import matplotlib.pyplot as plt

    from attnscale.figures import finite_d as FF

    pts = pd.DataFrame(
        {
            "n": [128, 512],
            "d": 8,
            "rho": 0.0,
            "gamma_star": [1.5, 1.9],
            "gamma_star_se": [0.01, 0.02],
        }
    )
    th = pd.DataFrame(
        {
            "kind": ["grid", "grid", "read_off"],
            "d": [8, 8, 128],
            "rho": 0.0,
            "n": [100, 10000, 131072],
            "gamma_star": [1.5, 2.5, 1.1],
            "beta_power": [np.nan, 30.0, np.nan],
        }
    )
    fig = FF.plot_transition(data=[pts], theory=th, caption="c")
    assert len(fig.axes) == 2  # gamma* and the zoomed gamma*/gamma_c, one rho
    plt.close(fig)
    cells = pd.DataFrame(
        [
            {
                "d": d,
                "n": 64,
                "rho": r,
                "gamma": g,
                "self_weight_mean": 0.5,
                "n_eff_mean": 2.0,
                "n_eff_others_mean": 3.0,
                "k_mass_mean": 4.0,
                "mass": 0.9,
                "trials": 1,
                "rows": 8,
                "gamma_star": np.nan,
                "gamma_c": 1 / (1 - r),
            }
            for d in (16, 2)
            for r in (0.2, 0.5)
            for g in (1.0, 2.0)
        ]
    )
    fig = FF.plot_intermediate(data=[cells], caption="c")
    assert len(fig.axes) == 3 * 2 + 1  # panels + colour bar
    plt.close(fig)


def test_transition_theory_table_and_theory_check_at_rho_zero():
    """The theory table holds critical_beta / ln n per (d, rho, n) plus the read-off rows, the
    power law only at rho = 0; transition_points' theory check is the simulated mean A_ii at
    the theory's beta*, recomputed here with dense softmax."""
    from attnscale.layer import finite_d

    th = FT.transition_theory(n=[100.4, 1000.0], d=[8], rho=[0.0], read_off=[[4096, 16]])
    assert list(th["kind"]) == ["grid", "grid", "read_off"]
    assert list(th["n"]) == [100, 1000, 4096]  # rounded to integers
    for _, r in th.iterrows():
        b = finite_d.critical_beta(int(r["n"]), int(r["d"]), 0.0)
        assert r["beta_star"] == pytest.approx(b, rel=1e-12)
        assert r["gamma_star"] == pytest.approx(b / np.log(r["n"]), rel=1e-12)
        assert r["beta_power"] == pytest.approx(finite_d.power_law_beta(int(r["n"]), int(r["d"])))
    n, d, trials, rows = 40, 8, 2, 10
    df = F.transition_points(n=n, d=d, rho=[0.0], trials=trials, rows=rows, root_seed=SEED)
    r = df.iloc[0]
    assert r["beta_theory"] == pytest.approx(finite_d.critical_beta(n, d, 0.0), rel=1e-12)
    a = []
    for t in range(trials):
        rng = np.random.default_rng(
            np.random.SeedSequence(SEED, spawn_key=F.transition_key(n, d, t))
        )
        _, Z = tokens.gaussian_draw(n, d, rng)
        a.append(np.diag(dense_weights(Z, r["beta_theory"]))[:rows].mean())
    assert r["a_at_theory"] == pytest.approx(np.mean(a), rel=1e-9)
    assert r["a_at_theory_se"] == pytest.approx(np.std(a, ddof=1) / np.sqrt(trials), rel=1e-9)
