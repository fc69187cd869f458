"""Paper A backward-pass experiment steps (attnscale.experiments.paper_a_eta) and the theorem
table (attnscale.experiments.paper_a_theorem)."""

import numpy as np
import pandas as pd
import pytest

from attnscale.experiments import paper_a_eta as E
from attnscale.experiments import paper_a_theorem as pth
from attnscale.layer import tokens
from attnscale.layer.dense import eta_exact

SEED = 271828182845904523536028747135266249775


def _tok(X, rho, trial=0):
    return {
        "X": X,
        "n": X.shape[0],
        "d": X.shape[1],
        "rho": rho,
        "trial": trial,
        "rho_hat": tokens.mean_cosine(X),
        "q_hat": tokens.mean_sq_norm(X),
        "root_seed": SEED,
        "spawn_key": (1, 2, 3),
    }


@pytest.mark.parametrize("rho", [0.3, 0.7])
def test_theory_rows_on_exact_simplex_tokens_equal_the_finite_n_values(rho):
    """On exact simplex tokens every simulated quantity is its finite-n simplex value (rounding:
    the Gram matrix of simplex_exact is exact to ~1e-15, amplified by beta ~ 20 in the softmax)."""
    X = tokens.simplex_exact(48, rho, q=1.7)
    rows = pth.theory_rows(_tok(X, rho), [0.5, 1.0, 2.0], [0.0, 0.5], {})
    assert len(rows) == 6
    for q in pth.QUANTITIES:
        np.testing.assert_allclose(rows[q], rows[f"{q}_simplex_n"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(rows["eta"], rows["eta_simplex_n_norms"], rtol=1e-9)
    tab = pth.theorem_table(pd.concat([rows, rows.assign(trial=1)]))
    assert len(tab) == 3 * 2 * len(pth.QUANTITIES)
    assert np.all(np.abs(tab["diff_mean"]) < 1e-9)


def test_theorem_table_paired_z():
    """z is the mean paired difference over its standard error; within_2se follows |z| <= 2."""
    rows = pd.DataFrame(
        {
            "d": 8,
            "n": 16,
            "rho": 0.5,
            "alpha": 0.0,
            "gamma_factor": 1.0,
            "trial": [0, 1, 2],
            "rho_hat": 0.5,
            "q_hat": 1.0,
            "gamma": 2.0,
            **{q: [1.0, 2.0, 3.0] for q in pth.QUANTITIES},
            **{f"{q}_simplex_n": [0.0, 1.5, 1.5] for q in pth.QUANTITIES},
            **{f"{q}_limit": 0.0 for q in pth.QUANTITIES},
            "eta_simplex_n_norms": 2.0,
        }
    )
    tab = pth.theorem_table(rows).set_index("quantity")
    diff = np.array([1.0, 0.5, 1.5])
    se = diff.std(ddof=1) / np.sqrt(3)
    assert tab.loc["eta", "z"] == pytest.approx(diff.mean() / se)
    assert tab.loc["eta", "sim_se"] == pytest.approx(1.0 / np.sqrt(3))
    assert tab.loc["eta", "within_2se"] == bool(abs(diff.mean() / se) <= 2)
    assert tab.loc["eta", "simplex_n_norms"] == 2.0


def test_choose_method_compares_costs():
    """Exact costs ~2 probes at d = 512 (GEMM-bound) and ~1 probe at d = 2 (elementwise-bound)."""
    assert E.choose_method("auto", 1024, 512, 4) == "exact"
    assert E.choose_method("auto", 1024, 512, 1) == "hutchinson"
    assert E.choose_method("auto", 1024, 2, 1) == "exact"
    assert E.choose_method("auto", 1024, 32, 1) == "hutchinson"
    assert E.choose_method("auto", 1024, 32, 2) == "exact"
    assert E.choose_method("hutchinson", 64, 2, 1) == "hutchinson"
    with pytest.raises(ValueError, match="method must be one of"):
        E.choose_method("fast", 64, 2, 1)


def test_eta_table_exact_and_hutchinson_agree_within_their_error():
    """Both methods on one draw: the Hutchinson rows lie within 5 SE of the exact rows (16
    comparisons at 5 SE: a false alarm has probability ~1e-5)."""
    X = tokens.near_simplex(48, 6, 0.5, np.random.default_rng(0))
    tok = _tok(X, 0.5)
    gammas = np.geomspace(0.5, 8.0, 15)
    ex = E.eta_table(
        tok,
        gammas,
        0.0,
        method="exact",
        probes=64,
        probe_kind="rademacher",
        root_seed=SEED,
        params={},
    )
    hu = E.eta_table(
        tok,
        gammas,
        0.0,
        method="hutchinson",
        probes=64,
        probe_kind="rademacher",
        root_seed=SEED,
        params={},
    )
    assert list(ex["gamma_kind"]) == ["grid"] * 15 + ["critical"]
    assert (ex["eta_se_within"] == 0).all() and (hu["eta_se_within"] > 0).all()
    assert np.all(np.abs(hu["eta"] - ex["eta"]) <= 5 * hu["eta_se_within"])
    np.testing.assert_allclose(ex["eta_rel"] * ex["eta_plateau"], ex["eta"], rtol=1e-14)
    # the plateau is the super-critical limit at the realised norms, reached once every
    # off-diagonal weight is negligible: beta min_{i != j} (1 - <y_i, y_j>) > 40 makes them
    # < e^-40 relative to the self-weight
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    gap = np.min((1.0 - Y @ Y.T)[~np.eye(48, dtype=bool)])
    gamma = 41.0 / gap / np.log(48)
    big = E.eta_table(
        tok,
        [gamma],
        0.0,
        method="exact",
        probes=1,
        probe_kind="rademacher",
        root_seed=SEED,
        params={},
    )
    beta = big["beta"].iloc[0]  # rounding of the beta^2 terms: ~1e3 eps beta^2 (test_jacobian)
    assert abs(big["eta_rel"].iloc[0] - 1.0) <= 1e3 * np.finfo(float).eps * beta**2
    assert ex["eta"].iloc[-1] == pytest.approx(eta_exact.eta_exact(X, ex["beta"].iloc[-1]))


def test_draws_without_gamma_c_are_skipped():
    """A draw whose realised mean cosine is <= 0 has no gamma_c: no theorem rows, and the eta
    grid has no critical row (the theory columns are nan)."""
    X = np.array([[1.0, 0.0], [-1.0, 0.1], [0.0, 1.0], [0.1, -1.0]])
    tok = _tok(X, 0.5)
    assert tok["rho_hat"] < 0
    assert pth.theory_rows(tok, [1.0], [0.0], {}).empty
    t = E.eta_table(
        tok,
        [1.0, 2.0],
        0.0,
        method="exact",
        probes=1,
        probe_kind="rademacher",
        root_seed=SEED,
        params={},
    )
    assert list(t["gamma_kind"]) == ["grid", "grid"] and t["eta_limit"].isna().all()
