"""Attention sink: exact simplex-with-sink map against simulation on exact tokens, the sink
construction, bad input (docs/realistic-attention.md#attention-sink)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from attnscale.experiments import realistic, realistic_summaries
from attnscale.layer import tokens
from attnscale.layer.scores import attention as sa
from attnscale.layer.scores import sink


def brute_sink_layer(X, beta, kappa, alpha):
    """Reference: loops; the sink is row 0, its key scaled by kappa."""
    n = X.shape[0]
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    A = np.empty((n, n))
    for i in range(n):
        s = np.array([beta * (kappa if j == 0 else 1.0) * float(Y[i] @ Y[j]) for j in range(n)])
        e = np.exp(s - s.max())
        A[i] = e / e.sum()
    Xp = A @ Y + alpha * X
    Yp = Xp / np.linalg.norm(Xp, axis=1, keepdims=True)
    lam = np.mean(
        [(1 - Yp[i] @ Yp[j]) / (1 - Y[i] @ Y[j]) for i in range(1, n) for j in range(i + 1, n)]
    )
    return A, lam


@pytest.mark.parametrize("c_s", [-0.3, 0.2, 0.6])
@pytest.mark.parametrize("kappa", [1.0, 2.5])
@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_simplex_sink_map_is_exact(c_s, kappa, alpha):
    """Exact simplex-with-sink tokens (d = m + 1): the kernel, a brute-force loop and the closed
    form agree to rounding (1e-10)."""
    m, rho, q = 11, 0.45, 2.0
    X = np.sqrt(q) * sink.simplex_with_sink_tokens(m, rho, c_s)
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    keep = np.arange(m + 1) > 0
    for beta in (0.5, 4.0, 25.0):
        res = sa.layer_grid(X, Y, sink.sink_keys(Y, kappa), [beta], alpha, keep=keep, col=0)
        A, lam_ref = brute_sink_layer(X, beta, kappa, alpha)
        a, b, c = sink.simplex_sink_weights(m + 1, rho, c_s, beta, kappa)
        cos, norm2, lam = sink.simplex_sink_map(m + 1, rho, c_s, beta, alpha, q, kappa)
        np.testing.assert_allclose(np.diag(A)[1:], a, rtol=1e-10)
        np.testing.assert_allclose(A[1:, 0], c, rtol=1e-10)
        np.testing.assert_allclose(A[1, 2:], b, rtol=1e-10)
        np.testing.assert_allclose(res["self_weight"][0, 1:], a, rtol=1e-10)
        np.testing.assert_allclose(res["col_mass"][0, 1:], c, rtol=1e-10)
        assert res["lambda"][0] == pytest.approx(lam, rel=1e-10)
        assert lam_ref == pytest.approx(lam, rel=1e-9)  # 1 - cos form: mild cancellation
        Xp = A @ Y + alpha * X
        assert float(Xp[1] @ Xp[1]) == pytest.approx(norm2, rel=1e-10)
        yp = Xp / np.linalg.norm(Xp, axis=1, keepdims=True)
        assert float(yp[1] @ yp[2]) == pytest.approx(cos, rel=1e-10)


def test_no_sink_limit_is_paper_a_simplex():
    """kappa = 0 and c_s = 0 (sink score 0, value orthogonal): the ordinary weights are Paper
    A's with one extra competitor of score 0; as kappa c_s -> -inf (beta large) the sink drops
    out and the critical beta tends to the n - 1 token simplex value ln(n - 2) / (1 - rho)."""
    n, rho = 40, 0.3
    beta = sink.simplex_sink_critical_beta(n, rho, -1.0, 1.0)
    ref = brentq(lambda b: (n - 2) * np.exp(b * (rho - 1)) + np.exp(-2 * b) - 1, 0.1, 100)
    assert beta == pytest.approx(ref, rel=1e-12)
    assert beta == pytest.approx(np.log(n - 2) / (1 - rho), rel=1e-3)


def test_critical_beta_matches_simulation_and_root():
    m, rho, c_s = 15, 0.4, 0.55
    X = sink.simplex_with_sink_tokens(m, rho, c_s)
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    keep = np.arange(m + 1) > 0
    for kappa in (1.0, 1.6):
        b = sink.simplex_sink_critical_beta(m + 1, rho, c_s, kappa)
        f = (m - 1) * np.exp(b * (rho - 1)) + np.exp(b * (kappa * c_s - 1)) - 1
        assert abs(f) < 1e-12
        got = sa.self_weight_critical_beta(Y, sink.sink_keys(Y, kappa), 0.05, 500.0, rows=keep)
        assert got == pytest.approx(b, rel=1e-9)
    assert sink.simplex_sink_critical_beta(m + 1, rho, c_s, 1.0 / c_s) == np.inf
    # with spread: sum of the annealed ordinary term and the sink term is 1 at the root
    b = sink.simplex_sink_critical_beta(m + 1, rho, c_s, 1.2, sd_cross=0.05)
    f = (m - 1) * np.exp(b * (rho - 1) + 0.5 * (b * 0.05) ** 2) + np.exp(b * (1.2 * c_s - 1)) - 1
    assert abs(f) < 1e-12
    assert b > sink.simplex_sink_critical_beta(m + 1, rho, c_s, 1.2)


def test_add_sink_mean_cosine_and_feasibility():
    rng = np.random.default_rng(2)
    X = tokens.near_simplex(200, 64, 0.5, rng)
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    nb = np.linalg.norm(Y.mean(axis=0))
    for c_s in (-0.4, 0.0, 0.5, nb):
        Xs = sink.add_sink(X, c_s, np.random.default_rng(9))
        ys = Xs[0] / np.linalg.norm(Xs[0])
        assert float(np.mean(Y @ ys)) == pytest.approx(c_s, abs=1e-12)
        assert np.linalg.norm(Xs[0]) == pytest.approx(np.sqrt(np.mean(np.sum(X * X, 1))))
        np.testing.assert_array_equal(Xs[1:], X)
    with pytest.raises(ValueError, match="c_s must lie in"):
        sink.add_sink(X, nb + 0.01, rng)
    with pytest.raises(ValueError, match="c_s"):
        sink.add_sink(X, 1.5, rng)
    # the exact bound: the simplex-plus-sink Gram matrix is singular at max_sink_cosine
    m, rho = 9, 0.3
    cmax = sink.max_sink_cosine(m, rho)
    G = (1 - rho) * np.eye(m + 1) + rho
    G[0, :] = G[:, 0] = cmax
    G[0, 0] = 1.0
    assert abs(np.linalg.eigvalsh(G).min()) < 1e-12
    with pytest.raises(ValueError, match="c_s"):
        sink.simplex_with_sink_tokens(m, rho, cmax)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"c_s": [1.5]}, "c_s"),
        ({"c_s": [-1.2]}, "c_s"),
        ({"kappa": [-1.0]}, "kappa"),
        ({"trial": -1}, "trial"),
        ({"gammas": [0.0]}, "gammas"),
    ],
)
def test_entry_bad_input(kwargs, name):
    kw = dict(root_seed=1, n=12, d=8, rho=0.5, c_s=[0.2], kappa=[1.0], gammas=[1.0], trial=0)
    with pytest.raises(ValueError, match=name):
        realistic.attention_sink(**{**kw, **kwargs})


def test_entry_reproducible_and_common_tokens():
    kw = dict(
        root_seed=5,
        n=24,
        d=16,
        rho=0.5,
        c_s=[0.0, 0.4],
        kappa=[1.0, 2.0],
        gammas=[1.0, 2.0, 4.0],
        trial=0,
    )
    a = realistic.attention_sink(**kw)
    b = realistic.attention_sink(**kw)
    assert a["curves"].equals(b["curves"]) and a["critical"].equals(b["critical"])
    crit = a["critical"]
    assert crit["rho_hat"].nunique() == 1  # one ordinary draw for every c_s and kappa
    np.testing.assert_allclose(crit["c_s_realised"], crit["c_s"], atol=1e-12)
    # the gamma_c(rho_hat) row of the curves equals the critical table's entries
    cur = a["curves"][a["curves"]["gamma_kind"] == "gamma_c_hat"]
    np.testing.assert_allclose(cur["sink_mass"].to_numpy(), crit["sink_mass_at_gc"].to_numpy())


def test_sink_figure_data_is_draw_means_and_theory_at_the_mean_rho_hat():
    """The figure data of the sink figure: plain means and ddof-1 SEs over draws (numpy), and
    the theory lines evaluated directly at the draws' mean rho_hat and score spread; the plot
    runs on them."""
    kw = dict(root_seed=7, n=20, d=12, rho=0.5, c_s=[0.0, 0.3], kappa=[1.0, 2.0], gammas=[1.0, 3.0])
    runs = [realistic.attention_sink(**kw, trial=t) for t in range(3)]
    out = realistic_summaries.sink_figure_data(
        curves=[r["curves"] for r in runs], critical=[r["critical"] for r in runs]
    )
    cur = out["curves"]
    assert len(cur) == 2 * 2 * 2 and (cur["trials"] == 3).all()
    for _, row in cur.iterrows():
        v = np.array(
            [
                c.loc[
                    (c.kappa == row.kappa)
                    & (c.c_s == row.c_s)
                    & (c.gamma == row.gamma)
                    & (c.gamma_kind == "grid"),
                    "sink_mass",
                ].iloc[0]
                for c in (r["curves"] for r in runs)
            ]
        )
        assert row["sink_mass_mean"] == pytest.approx(v.mean(), rel=1e-13)
        assert row["sink_mass_se"] == pytest.approx(v.std(ddof=1) / np.sqrt(3), rel=1e-10)
    crit = np.array([r["critical"]["rho_hat"].iloc[0] for r in runs])
    th = out["theory"]
    assert th["rho_hat_mean"].iloc[0] == pytest.approx(crit.mean(), rel=1e-14)
    n, rh = 20, th["rho_hat_mean"].iloc[0]
    gc = 1.0 / (1.0 - rh)
    m = th[(th["line"] == "sink_mass") & (th["kappa"] == 2.0)]
    assert len(m) == 200 and m["x"].min() == 0.0 and m["x"].max() == 0.3
    x = float(m["x"].iloc[57])
    ref = sink.simplex_sink_weights(n, rh, x, gc * np.log(n), 2.0)[2]
    assert m["value"].iloc[57] == pytest.approx(ref, rel=1e-13)
    c = th[th["line"] == "critical_spread"]
    sd = th["sd_cross_mean"].iloc[0]
    x = float(c["x"].iloc[123])
    ref = sink.simplex_sink_critical_beta(n, rh, x, 1.0, sd) / np.log(n)
    assert c["value"].iloc[123] == pytest.approx(ref, rel=1e-13)
    from attnscale.figures.realistic import plot_sink

    fig = plot_sink(curves=cur, theory=th, critical=[r["critical"] for r in runs], caption="t")
    assert len(fig.axes) == 3
