"""Independent references for every Paper A experiment table (docs/paper-a.md).

The entry functions are called on tiny token draws and their rows are recomputed here with dense
numpy written from the definitions (the attention layer x_i' = sum_j A_ij y_j + alpha x_i, the
angle ratio lambda, eta = ||J||_F^2 / (n d) with J by central finite differences), and on the
equicorrelated configuration (all cosines rho, all norms q), where the finite-n simplex formulas
are exact. Tolerances: float64 rounding for dense recomputation (rtol 1e-9: sums of n <= 12
terms, softmax at beta <= 30, ratios of differences 1 - cos >= 0.05); central differences with
step h = 1e-5 have truncation error ~h^2 |f'''| and rounding ~eps/h, both < 1e-7 relative here,
hence rtol 1e-6; aggregates are checked against hand-computed means and standard errors.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnscale.experiments import paper_a as pa
from attnscale.experiments import paper_a_eta as pe
from attnscale.experiments import paper_a_theorem as pth
from attnscale.experiments import paper_a_tokens as ptok
from attnscale.layer import theory

SEED = 271828182845904523536028747135266249775


# ------------------------------------------------------------------ brute-force definitions
def unit(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def softmax_rows(S):
    W = np.exp(S - S.max(axis=1, keepdims=True))
    return W / W.sum(axis=1, keepdims=True)


def layer(X, beta, alpha):
    """x_i' = sum_j A_ij y_j + alpha x_i, A = row-softmax(beta <y_i, y_j>) (docs/paper-a.md)."""
    Y = unit(X)
    return softmax_rows(beta * Y @ Y.T) @ Y + alpha * X


def angle_ratio(X, beta, alpha):
    """lambda = mean over pairs i < j of (1 - <y_i', y_j'>) / (1 - <y_i, y_j>)."""
    Y, Yp = unit(X), unit(layer(X, beta, alpha))
    iu = np.triu_indices(X.shape[0], 1)
    return float(np.mean((1 - (Yp @ Yp.T)[iu]) / (1 - (Y @ Y.T)[iu])))


def eta_fd(X, beta, alpha, h=1e-5):
    """eta = ||J||_F^2 / (n d), J = d vec(x') / d vec(x) by central differences."""
    n, d = X.shape
    total = 0.0
    for i in range(n):
        for k in range(d):
            E = np.zeros_like(X)
            E[i, k] = h
            col = (layer(X + E, beta, alpha) - layer(X - E, beta, alpha)) / (2 * h)
            total += np.sum(col * col)
    return total / (n * d)


def mean_cos(X):
    Y = unit(X)
    n = len(X)
    return float(((Y @ Y.T).sum() - n) / (n * (n - 1)))


def equicorrelated_draw(n, rho, q, trial=0):
    """A draw whose tokens at ``rho`` have every pairwise cosine rho and every squared norm q:
    z_0 and z_i along orthogonal axes (d = n + 1), so x_i = sqrt(rho q) e_0 + sqrt((1-rho) q) e_i."""
    d = n + 1
    eye = np.eye(d)
    return {
        "z0": np.sqrt(q) * eye[0],
        "Z": np.sqrt(q) * eye[1:],
        "n": n,
        "d": d,
        "trial": trial,
        "root_seed": str(SEED),
        "spawn_key": np.array([1, 2, 3]),
    }


def gaussian_draws(n, d, trials):
    return [ptok.draw_tokens(n=n, d=d, trial=t, root_seed=SEED) for t in range(trials)]


# ------------------------------------------------------------------ tokens
def test_tokens_at_builds_the_model_tokens():
    """x_i = sqrt(rho) z_0 + sqrt(1 - rho) z_i; rho_hat and q_hat are the realised mean cosine and
    mean squared norm (recomputed with dense numpy)."""
    draw = gaussian_draws(9, 5, 1)[0]
    z0, Z = np.asarray(draw["z0"]), np.asarray(draw["Z"])
    assert Z.shape == (9, 5) and z0.shape == (5,)
    tok = ptok.tokens_at(draw, 0.3)
    np.testing.assert_allclose(tok["X"], np.sqrt(0.3) * z0 + np.sqrt(0.7) * Z, rtol=1e-15)
    assert tok["rho_hat"] == pytest.approx(mean_cos(tok["X"]), rel=1e-12)
    assert tok["q_hat"] == pytest.approx(np.mean(np.sum(tok["X"] ** 2, axis=1)), rel=1e-14)
    # z ~ N(0, I/d): E|z|^2 = 1, so over 200 draws the mean squared norm of z is 1 within 4 SE
    # (|z|^2 = chi^2_d / d has SD sqrt(2/d))
    d = 8
    zz = np.concatenate(
        [np.sum(np.asarray(dr["Z"]) ** 2, axis=1) for dr in gaussian_draws(25, d, 8)]
    )
    assert abs(zz.mean() - 1) < 4 * np.sqrt(2 / d) / np.sqrt(zz.size)


# ------------------------------------------------------------------ lambda (Figure 1)
@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_lambda_rows_recomputed_from_the_definition(alpha):
    """Every lambda row of two Gaussian draws (n = 10, d = 4) against the dense definition;
    beta = gamma ln n; the critical row sits at gamma_c(rho_hat) = 1 / (1 - rho_hat), and a draw
    with rho_hat <= 0 (trial 0 here: rho_hat = -0.03) has no critical row and nan theory."""
    n, d = 10, 4
    draws = gaussian_draws(n, d, 2)
    gammas = [0.5, 2.0, 8.0]
    df = pa.lambda_rows(draws=draws, rhos=[0.3, 0.5], gammas=gammas, alpha=alpha)
    ok = []
    for rho in (0.3, 0.5):
        for t, draw in enumerate(draws):
            X = ptok.tokens_at(draw, rho)["X"]
            sub = df[(df["trial"] == t) & (df["rho"] == rho)]
            rho_hat = mean_cos(X)
            ok.append(0 < rho_hat < 1)
            assert sub["rho_hat"].iloc[0] == pytest.approx(rho_hat, rel=1e-12)
            want_g = gammas + ([1 / (1 - rho_hat)] if ok[-1] else [])
            np.testing.assert_allclose(sub["gamma"], want_g, rtol=1e-13)
            assert list(sub["gamma_kind"]) == ["grid"] * 3 + ["critical"] * ok[-1]
            assert sub["lambda_simplex_n"].isna().all() != ok[-1]
            np.testing.assert_allclose(sub["beta"], np.array(want_g) * np.log(n), rtol=1e-13)
            ref = [angle_ratio(X, b, alpha) for b in sub["beta"]]
            np.testing.assert_allclose(sub["lambda"], ref, rtol=1e-9)
    assert False in ok and True in ok  # both paths are exercised


@pytest.mark.parametrize("rho", [0.3, 0.7])
def test_lambda_on_equicorrelated_tokens_is_the_simplex_value(rho):
    """All cosines rho and norms q: the dense lambda equals the table's finite-n simplex column
    (an independent closed form) to rounding, and rho_hat / q_hat are exact."""
    n, q = 8, 1.7
    df = pa.lambda_rows(
        draws=[equicorrelated_draw(n, rho, q)], rhos=[rho], gammas=[0.5, 2.0, 20.0], alpha=0.3
    )
    assert df["rho_hat"].iloc[0] == pytest.approx(rho, rel=1e-13)
    assert df["q_hat"].iloc[0] == pytest.approx(q, rel=1e-14)
    X = ptok.tokens_at(equicorrelated_draw(n, rho, q), rho)["X"]
    ref = [angle_ratio(X, b, 0.3) for b in df["beta"]]
    np.testing.assert_allclose(df["lambda"], ref, rtol=1e-9)
    np.testing.assert_allclose(df["lambda_simplex_n"], ref, rtol=1e-8)


def _synthetic_rows(values, kind="grid"):
    """Rows of one (d, n, alpha, rho, gamma) cell with the given per-trial values."""
    t = len(values)
    return pd.DataFrame(
        {
            "d": 4,
            "n": 10,
            "alpha": 0.0,
            "rho": 0.5,
            "gamma": 2.0,
            "trial": range(t),
            "gamma_kind": kind,
            "lambda": values,
            "rho_hat": 0.5,
            "lambda_simplex_n": 0.25,
            "q_hat": 1.0,
            "beta": 2.0 * np.log(10),
            "lambda_limit": 0.2,
            "eta": values,
            "eta_rel": values,
            "eta_plateau": 1.0,
            "eta_simplex_n_norms": 0.5,
            "mean_inv_sq_norm": 1.0,
            "method": "exact",
            "probes": 0,
            "eta_se_within": 0.0,
            "eta_limit": 0.3,
            "eta_simplex_n": 0.4,
            "entropy": 0.5,  # the registry's fourth observable on the grid
            "entropy_simplex_n": 0.6,
            "entropy_limit": 0.5,
            "root_seed": str(SEED),
            "spawn_key": [f"1-{i}" for i in range(t)],
            "params_hash": "h",
            "attnscale_version": "v",
            "git_commit": "c",
        }
    )


def test_figure_tables_mean_and_standard_error():
    """Cell mean and SE = sample SD (ddof 1) / sqrt(trials) by hand: values 1, 2, 4 give mean 7/3
    and SE sqrt(7/3) / sqrt(3); one trial gives SE nan; critical rows carry lambda - simplex."""
    rows = pd.concat(
        [
            _synthetic_rows([1.0, 2.0, 4.0]),
            _synthetic_rows([0.9]).assign(gamma=5.0),
            _synthetic_rows([0.6, 0.7], kind="critical"),
        ]
    )
    out = pa.lambda_summary(csvs=[rows])
    f1 = out["figure1"].set_index("gamma")
    assert f1.loc[2.0, "lambda_mean"] == pytest.approx(7 / 3, rel=1e-15)
    assert f1.loc[2.0, "lambda_se"] == pytest.approx(np.sqrt(7 / 3) / np.sqrt(3), rel=1e-14)
    assert f1.loc[2.0, "trials"] == 3
    assert np.isnan(f1.loc[5.0, "lambda_se"]) and f1.loc[5.0, "trials"] == 1
    assert f1.loc[2.0, "gamma_c_nominal"] == pytest.approx(2.0, rel=1e-15)
    assert f1.loc[2.0, "spawn_keys"] == "1-0;1-1;1-2"
    crit = out["critical"]
    np.testing.assert_allclose(crit["diff_vs_simplex_n"], [0.6 - 0.25, 0.7 - 0.25], rtol=1e-14)
    f2 = pe.eta_summary(csvs=[rows])["figure2"].set_index("gamma")
    assert f2.loc[2.0, "eta_se"] == pytest.approx(np.sqrt(7 / 3) / np.sqrt(3), rel=1e-14)
    assert f2.loc[2.0, "eta_rel_mean"] == pytest.approx(7 / 3, rel=1e-15)


# ------------------------------------------------------------------ eta (Figure 2)
@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_eta_rows_against_finite_differences(alpha):
    """Exact eta rows (n = 6, d = 3) against ||J||_F^2 / (n d) with J by central differences;
    the plateau column is [(d-1)(w2 + 2 alpha w1 + alpha^2) + alpha^2] / d at the realised
    norm moments w1 = mean 1/|x|, w2 = mean 1/|x|^2."""
    n, d, rho = 6, 3, 0.4
    draws = gaussian_draws(n, d, 2)
    df = pe.eta_rows(
        draws=draws,
        rhos=[rho],
        gammas=[0.5, 3.0],
        alpha=alpha,
        method="exact",
        probes=1,
        probe_kind="rademacher",
        root_seed=SEED,
    )
    for t, draw in enumerate(draws):
        X = ptok.tokens_at(draw, rho)["X"]
        sub = df[df["trial"] == t]
        ref = [eta_fd(X, b, alpha) for b in sub["beta"]]
        np.testing.assert_allclose(sub["eta"], ref, rtol=1e-6)
        r = np.linalg.norm(X, axis=1)
        w1, w2 = np.mean(1 / r), np.mean(1 / r**2)
        plateau = ((d - 1) * (w2 + 2 * alpha * w1 + alpha**2) + alpha**2) / d
        np.testing.assert_allclose(sub["eta_plateau"], plateau, rtol=1e-13)
        np.testing.assert_allclose(sub["eta_rel"], sub["eta"] / plateau, rtol=1e-13)
    assert (df["eta_se_within"] == 0).all() and (df["method"] == "exact").all()


def test_eta_hutchinson_rows_are_unbiased_for_the_finite_difference_value():
    """Hutchinson rows (64 Rademacher probes) within 5 of their own SEs of the dense value."""
    n, d, rho = 6, 3, 0.4
    draws = gaussian_draws(n, d, 1)
    df = pe.eta_rows(
        draws=draws,
        rhos=[rho],
        gammas=[1.0, 3.0],
        alpha=0.0,
        method="hutchinson",
        probes=64,
        probe_kind="rademacher",
        root_seed=SEED,
    )
    X = ptok.tokens_at(draws[0], rho)["X"]
    for _, row in df.iterrows():
        assert row["eta_se_within"] > 0
        assert abs(row["eta"] - eta_fd(X, row["beta"], 0.0)) < 5 * row["eta_se_within"]


# ------------------------------------------------------------------ theorem table rows
def test_theory_rows_recomputed_from_the_definition():
    """Self-weight (mean A_ii), output cosine (mean over i != j), lambda and eta of the theorem
    rows against the dense definitions (n = 7, d = 3, two draws, alpha = 0 and 0.5)."""
    n, d, rho = 7, 3, 0.5
    draws = gaussian_draws(n, d, 2)
    df = pth.theory_rows_all(draws=draws, rho=rho, gamma_factors=[0.5, 1.0, 2.0], alphas=[0.0, 0.5])
    assert len(df) == 2 * 3 * 2
    for _, row in df.iterrows():
        X = ptok.tokens_at(draws[int(row["trial"])], rho)["X"]
        rho_hat = mean_cos(X)
        assert row["gamma"] == pytest.approx(row["gamma_factor"] / (1 - rho_hat), rel=1e-13)
        beta, alpha = row["beta"], row["alpha"]
        assert beta == pytest.approx(row["gamma"] * np.log(n), rel=1e-13)
        Y = unit(X)
        A = softmax_rows(beta * Y @ Y.T)
        assert row["self_weight"] == pytest.approx(np.mean(np.diag(A)), rel=1e-10)
        assert row["cosine"] == pytest.approx(mean_cos(layer(X, beta, alpha)), rel=1e-9)
        assert row["lambda"] == pytest.approx(angle_ratio(X, beta, alpha), rel=1e-9)
        assert row["eta"] == pytest.approx(eta_fd(X, beta, alpha), rel=1e-6)
        # the limit columns are the closed forms at this draw's rho_hat, gamma, alpha and q_hat
        q_hat = np.mean(np.sum(X * X, axis=1))
        assert row["q_hat"] == pytest.approx(q_hat, rel=1e-13)
        # (rtol 1e-12: rho_hat and q_hat recomputed here differ from the table's in the last bits)
        g = row["gamma"]
        lims = {
            "cosine_limit": theory.cosine_limit(rho_hat, g, alpha, q_hat),
            "lambda_limit": theory.lambda_limit(rho_hat, g, alpha, q_hat),
            "eta_limit": theory.eta_limit(rho_hat, g, d, alpha, q_hat),
        }
        for col, want in lims.items():
            assert row[col] == pytest.approx(want, rel=1e-12, abs=1e-15), col


def test_theory_rows_on_equicorrelated_tokens_hit_every_simplex_column():
    """On the equicorrelated configuration the dense values are the finite-n simplex columns."""
    n, rho, q = 6, 0.6, 1.3
    df = pth.theory_rows_all(
        draws=[equicorrelated_draw(n, rho, q)],
        rho=rho,
        gamma_factors=[0.5, 1.0, 2.0],
        alphas=[0.0, 0.5],
    )
    X = ptok.tokens_at(equicorrelated_draw(n, rho, q), rho)["X"]
    for _, row in df.iterrows():
        beta, alpha = row["beta"], row["alpha"]
        Y = unit(X)
        assert row["self_weight_simplex_n"] == pytest.approx(
            np.mean(np.diag(softmax_rows(beta * Y @ Y.T))), rel=1e-12
        )
        assert row["cosine_simplex_n"] == pytest.approx(mean_cos(layer(X, beta, alpha)), rel=1e-9)
        assert row["lambda_simplex_n"] == pytest.approx(angle_ratio(X, beta, alpha), rel=1e-8)
        assert row["eta_simplex_n"] == pytest.approx(eta_fd(X, beta, alpha), rel=1e-6)


def test_eta_rows_on_equicorrelated_tokens_hit_both_simplex_columns():
    """Equal norms: the simplex eta with realised norm moments equals the plain one, and both
    equal the dense finite-difference eta."""
    n, rho, q = 6, 0.6, 1.3
    df = pe.eta_rows(
        draws=[equicorrelated_draw(n, rho, q)],
        rhos=[rho],
        gammas=[0.5, 2.0],
        alpha=0.5,
        method="exact",
        probes=1,
        probe_kind="rademacher",
        root_seed=SEED,
    )
    X = ptok.tokens_at(equicorrelated_draw(n, rho, q), rho)["X"]
    ref = [eta_fd(X, b, 0.5) for b in df["beta"]]
    np.testing.assert_allclose(df["eta"], ref, rtol=1e-6)
    np.testing.assert_allclose(df["eta_simplex_n"], ref, rtol=1e-6)
    np.testing.assert_allclose(df["eta_simplex_n_norms"], ref, rtol=1e-6)


def test_theorem_table_z_threshold_and_trial_counts():
    """within_2se is |z| <= 2 exactly (a row at z = 2.5 is outside); two trials give finite SEs,
    one trial gives nan z and SE and within_2se False."""
    base = dict(
        d=8,
        n=16,
        rho=0.5,
        alpha=0.0,
        gamma_factor=1.0,
        rho_hat=0.5,
        q_hat=1.0,
        gamma=2.0,
        eta_simplex_n_norms=0.0,
    )

    def rows(diffs):
        t = len(diffs)
        cols = {**base, "trial": list(range(t))}
        for q in pth.QUANTITIES:
            cols[q] = list(diffs)
            cols[f"{q}_simplex_n"] = [0.0] * t
            cols[f"{q}_limit"] = [0.0] * t
        return pd.DataFrame(cols)

    # diffs 1 +- 0.4: mean 1, SE 0.4 -> z = 2.5
    tab = pth.theorem_table_data(csvs=[rows([0.6, 1.4])]).set_index("quantity")
    assert tab.loc["eta", "z"] == pytest.approx(2.5, rel=1e-12)
    assert not tab.loc["eta", "within_2se"]
    assert tab.loc["eta", "sim_se"] == pytest.approx(0.4, rel=1e-12)
    one = pth.theorem_table_data(csvs=[rows([1.0])]).set_index("quantity")
    assert np.isnan(one.loc["eta", "z"]) and np.isnan(one.loc["eta", "sim_se"])
    assert not one.loc["eta", "within_2se"]


def test_theorem_table_paired_statistics_by_hand():
    """diff = sim - simplex per draw; z = mean(diff) / SE(diff); SE with ddof 1."""
    rows = pth.theory_rows_all(
        draws=gaussian_draws(7, 3, 3), rho=0.5, gamma_factors=[1.0], alphas=[0.0]
    )
    tab = pth.theorem_table_data(csvs=[rows]).set_index("quantity")
    for qty in pth.QUANTITIES:
        diff = rows[qty].to_numpy() - rows[f"{qty}_simplex_n"].to_numpy()
        se = diff.std(ddof=1) / np.sqrt(3)
        assert tab.loc[qty, "diff_mean"] == pytest.approx(diff.mean(), rel=1e-12, abs=1e-15)
        assert tab.loc[qty, "z"] == pytest.approx(diff.mean() / se, rel=1e-10)
        assert tab.loc[qty, "sim_se"] == pytest.approx(
            rows[qty].std(ddof=1) / np.sqrt(3), rel=1e-12
        )
        assert tab.loc[qty, "within_2se"] == (abs(diff.mean() / se) <= 2)
