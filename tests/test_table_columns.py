"""Schemas and provenance of the experiment tables (Paper A, Paper B, scaling rules).

What is pinned and why: the column names of every experiment table, its provenance columns (root
seed, spawn key, parameter hash, package version, git commit) and the keys on which tables are
merged are the contract between the compute rules, the plotting rules and anyone who reads the
CSV files. A renamed column, a parameter dict hashed wrongly or a merge on the wrong keys changes
no number that the numerical tests check, but it breaks a downstream rule or mislabels a result.

How: every entry function is called once, at tiny sizes, in module-scoped fixtures (about a second
in all). The column lists are written out here in the order they are written to the CSV.
``params_hash`` is recomputed with :func:`attnscale.pipeline.io.params_hash` from the parameter dict that
the code documents, and ``spawn_key`` with :func:`attnscale.core.seeding.spawn_key` from the stream
name and the job's ids. The finite-d columns of the theorem table (docs/finite-d.md, issue 9) are
recomputed from its rows with numpy: the mean and the ddof-1 standard error of the per-draw
differences, ``z = mean / SE``, ``|z| <= k`` and issue 9's acceptance rule. The tests also cover
the NaN/False conventions for one draw, zero SE, ``d < 3``, ``alpha > 0`` and rows with no
finite-d column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnscale import __version__
from attnscale.core.seeding import spawn_key, value_id
from attnscale.experiments import paper_a as pa
from attnscale.experiments import paper_a_eta as pe
from attnscale.experiments import paper_a_scaling_rules as par
from attnscale.experiments import paper_a_theorem as pth
from attnscale.experiments import paper_a_tokens as ptok
from attnscale.experiments import paper_b_common as pbc
from attnscale.experiments import paper_b_drift as pbd
from attnscale.experiments import paper_b_fields as pbf
from attnscale.experiments import paper_b_laws as pbl
from attnscale.experiments import paper_b_phase as pbp
from attnscale.experiments.finite_d_theory import theory_given_draw
from attnscale.layer.finite_d.eta import eta_mean_field
from attnscale.layer.observables import grid_observables
from attnscale.pipeline.io import git_commit, params_hash
from conftest import REPO

SEED = 271828182845904523536028747135266249775  # 128 bits: stored as a decimal string
PROBE_SEED = 20261130  # a different root for the Hutchinson probes, to tell the two apart

PROV = ["root_seed", "spawn_key", "params_hash", "attnscale_version", "git_commit"]
CELL = ["d", "n", "alpha", "rho", "gamma"]  # one heat-map cell of Figures 1 and 2
# provenance of a group of draws (attnscale.experiments.paper_a.cell_provenance)
CELL_PROV = ["root_seed", "spawn_keys", "params_hash", "attnscale_version", "git_commit"]
FD_NUM = ["finite_d", "diff_fd_mean", "diff_fd_se", "z_fd"]
FD_FLAGS = ["within_2se_fd", "within_3se_fd", "accept_fd"]

# the observables of the registry on Figure 1's grid: their columns (docs/pipeline.md#the-observable-registry)
GRID_ROWS = [
    c for o in grid_observables() for c in (o.name, f"{o.name}_simplex_n", f"{o.name}_limit")
]
GRID_CELLS = [
    f"{c}_{s}"
    for o in grid_observables()
    for c in (o.name, f"{o.name}_simplex_n")
    for s in ("mean", "se")
]

COLUMNS = {
    # Paper A, Figure 1 (lambda)
    "lambda_rows": [
        "d",
        "n",
        "rho",
        "rho_hat",
        "q_hat",
        "trial",
        "gamma_kind",
        "gamma",
        "gamma_over_gc_hat",
        "beta",
        "alpha",
        "lambda",
        "lambda_simplex_n",
        "lambda_limit",
        *GRID_ROWS,
        "n_near_pairs",
        "n_excluded_pairs",
        *PROV,
    ],
    "figure1": [
        *CELL,
        "lambda_mean",
        "lambda_se",
        "rho_hat_mean",
        "rho_hat_se",
        "lambda_simplex_n_mean",
        "lambda_simplex_n_se",
        *GRID_CELLS,
        "trials",
        "gamma_c_nominal",
        *CELL_PROV,
    ],
    "lambda_critical": [
        "d",
        "n",
        "alpha",
        "rho",
        "trial",
        "rho_hat",
        "q_hat",
        "gamma",
        "beta",
        "lambda",
        "lambda_simplex_n",
        "lambda_limit",
        "diff_vs_simplex_n",
        *GRID_ROWS,
        *PROV,
    ],
    # Paper A, Figure 2 (eta)
    "eta_rows": [
        "d",
        "n",
        "rho",
        "rho_hat",
        "q_hat",
        "mean_inv_sq_norm",
        "trial",
        "gamma_kind",
        "gamma",
        "gamma_over_gc_hat",
        "beta",
        "alpha",
        "method",
        "probes",
        "eta",
        "eta_se_within",
        "eta_plateau",
        "eta_rel",
        "eta_limit",
        "eta_simplex_n",
        "eta_simplex_n_norms",
        *PROV,
    ],
    "figure2": [
        *CELL,
        "eta_mean",
        "eta_se",
        "eta_rel_mean",
        "eta_rel_se",
        "eta_plateau_mean",
        "eta_plateau_se",
        "rho_hat_mean",
        "rho_hat_se",
        "eta_simplex_n_norms_mean",
        "eta_simplex_n_norms_se",
        "trials",
        "gamma_c_nominal",
        *CELL_PROV,
        "method",
        "probes",
    ],
    "eta_critical": [
        "d",
        "n",
        "alpha",
        "rho",
        "trial",
        "rho_hat",
        "q_hat",
        "mean_inv_sq_norm",
        "gamma",
        "beta",
        "method",
        "probes",
        "eta",
        "eta_se_within",
        "eta_plateau",
        "eta_limit",
        "eta_simplex_n",
        "eta_simplex_n_norms",
        *PROV,
    ],
    # Paper A, theorem table (per-draw rows, then one row per key x quantity)
    "theory_rows": [
        "d",
        "n",
        "rho",
        "trial",
        "rho_hat",
        "q_hat",
        "mean_inv_sq_norm",
        "alpha",
        "gamma_factor",
        "gamma",
        "beta",
        "self_weight",
        "self_weight_limit",
        "self_weight_simplex_n",
        "cosine",
        "cosine_limit",
        "cosine_simplex_n",
        "lambda",
        "lambda_limit",
        "lambda_simplex_n",
        "eta",
        "eta_limit",
        "eta_simplex_n",
        "eta_simplex_n_norms",
        "self_weight_finite_d",
        "cosine_finite_d",
        "lambda_finite_d",
        "eta_finite_d",
        *PROV,
    ],
    "theorem_table": [
        "d",
        "n",
        "rho",
        "alpha",
        "gamma_factor",
        "quantity",
        "trials",
        "rho_hat_mean",
        "q_hat_mean",
        "gamma_mean",
        "sim_mean",
        "sim_se",
        "simplex_n",
        "limit",
        "diff_mean",
        "diff_se",
        "z",
        "within_2se",
        "simplex_n_norms",
        "z_norms",
        "root_seed",
        "spawn_keys",
        "params_hashes",
        "attnscale_version",
        "git_commit",
        *FD_NUM,
        *FD_FLAGS,
    ],
    # the d = 2 table: every row takes the "no finite-d theory" branch
    "theorem_table_d2": "theorem_table",
    # scaling rules (no random draw: no root_seed / spawn_key)
    "scaling_rules": [
        "rule",
        "order",
        "L",
        "n",
        "m",
        "gamma_ratio",
        "rho",
        "gamma_eff",
        "is_overlay_n",
        "params_hash",
        "attnscale_version",
        "git_commit",
    ],
    # Paper B
    "heat_drift": [
        "beta",
        "n",
        "context",
        "contexts",
        "t_c",
        "keys_in_cap",
        "ratio",
        "perp",
        "normal",
        "neglected_mass_bound",
        *PROV,
    ],
    "heat_drift_summary": [
        "beta",
        "n",
        "contexts",
        "ratio_mean",
        "ratio_se",
        "perp_mean",
        "perp_se",
        "normal_mean",
        "normal_se",
        "ratio_quadrature",
        "normal_quadrature",
        "max_neglected_mass_bound",
        *PROV,
    ],
    "heat_drift_curve": [
        "beta",
        "ratio_quadrature",
        "normal_quadrature",
        "correction_quadrature",
        "params_hash",
        "attnscale_version",
        "git_commit",
    ],
    "vf_panels": [
        "panel",
        "beta_exponent",
        "beta",
        "n",
        "query",
        "qx",
        "qy",
        "qz",
        "lon",
        "lat",
        "disp_x",
        "disp_y",
        "disp_z",
        "disp_east",
        "disp_north",
        "drift_east",
        "drift_north",
        "rho",
        "m_n",
        *PROV,
    ],
    "vf_sweep": [
        "beta",
        "n",
        "context",
        "is_panel",
        "rms_disp",
        "rms_dev_from_drift",
        "rms_dev_from_mean_field",
        "mean_cos_disp_drift",
        "rms_drift_theory",
        "rms_noise_theory",
        "rms_nearest_theory",
        "beta_drift_transition",
        "beta_critical",
        *PROV,
    ],
    "laws_ecdf": ["d", "n", "gamma", "stat", "source", "x", "cdf", *PROV],
    # the first summary row (Poisson limit) fixes the order; the finite-n rows add their own
    "laws_summary": [
        "d",
        "n",
        "gamma",
        "stat",
        "source",
        "samples",
        "mean",
        "se",
        *PROV,
        "beta",
        "limit_mean",
        "limit_se",
        "ks_vs_limit",
        "ks_pvalue",
        "ks_vs_exact",
        "ks_exact_pvalue",
    ],
    "weight_profile": [
        "d",
        "n",
        "beta",
        "m_n",
        "trials",
        "method",
        "k",
        "x",
        "ratio_mean",
        "ratio_se",
        "ratio_limit",
        "ratio_finite_beta",
        "ratio_finite_beta_shifted",
        "mass_mean",
        "mass_se",
        "mass_limit",
        "mass_finite_beta",
        *PROV,
    ],
    "phase_column": [
        "d",
        "n",
        "kind",
        "beta",
        "gamma",
        "trials",
        "method",
        "top_weight_mean",
        "top_weight_se",
        "m_n",
        "subcritical_asymptote",
        *PROV,
    ],
    "poisson_limit_table": [
        "d",
        "gamma",
        "c",
        "trials",
        "top_weight_mean",
        "top_weight_se",
        "inv_top_weight_mean",
        "inv_top_weight_se",
        "inv_top_weight_closed_form",
        "subcritical_asymptote",
        *PROV,
    ],
}


def key_str(stream: str, *ids: int) -> str:
    """A spawn key as the tables store it (``-``-joined)."""
    return "-".join(str(k) for k in spawn_key(stream, *ids))


def token_key(n: int, d: int, trial: int) -> str:
    return key_str("paper_a/tokens", n, d, trial)


def assert_prov(df: pd.DataFrame, root_seed, key: str, params: dict) -> None:
    """Every row of ``df`` carries this provenance."""
    want = {
        "root_seed": str(root_seed),
        "spawn_key": key,
        "params_hash": params_hash(params),
        "attnscale_version": __version__,
        "git_commit": git_commit(),
    }
    assert len(df) > 0
    for col, value in want.items():
        assert (df[col] == value).all(), (col, df[col].unique(), value)


# ------------------------------------------------------------------ the tables, computed once
N_A, D_A, RHO_A, GAMMAS, FACTORS, ALPHAS = 6, 3, 0.5, [0.5, 2.0], [0.5, 1.0, 2.0], [0.0, 0.5]
ETA_ARGS = dict(gammas=GAMMAS, alpha=0.0, probes=1, probe_kind="rademacher", root_seed=PROBE_SEED)


def draws(n: int, d: int, trials: int = 2) -> list[dict]:
    return [ptok.draw_tokens(n=n, d=d, trial=t, root_seed=SEED) for t in range(trials)]


class Tables(dict):
    """Tables built on first access, once per test (``builders[name](tables)``).

    Not cached across tests on purpose: mutmut runs, for each mutant, only the tests during which
    the mutated function was called when it recorded coverage; a module-scoped cache would credit
    every call to the first test alone and hide the other tests from it."""

    def __init__(self, builders):
        super().__init__()
        self.builders = builders

    def __missing__(self, name):
        self[name] = value = self.builders[name](self)
        return value


def _lambda_rows(t):
    return pd.concat(
        [
            pa.lambda_rows(draws=draws(n, D_A), rhos=[0.3, RHO_A], gammas=GAMMAS, alpha=0.0)
            for n in (N_A, 8)
        ],
        ignore_index=True,
    )


def _eta_rows(t):
    return pd.concat(
        [
            pe.eta_rows(draws=draws(N_A, D_A), rhos=[RHO_A], method="exact", **ETA_ARGS),
            pe.eta_rows(draws=draws(8, D_A), rhos=[RHO_A], method="hutchinson", **ETA_ARGS),
        ],
        ignore_index=True,
    )


def _theory(d):
    return lambda t: pth.theory_rows_all(
        draws=draws(N_A, d), rho=RHO_A, gamma_factors=FACTORS, alphas=ALPHAS
    )


#: Paper A tables: two lambda jobs (n = 6 and 8, rho 0.3 and 0.5: one n = 6 draw has
#: rho_hat < 0 at rho = 0.3, so no critical row), eta by the exact formula (n = 6) and by
#: Hutchinson (n = 8), theorem rows at d = 3 (finite-d theory applies at alpha = 0) and d = 2.
PAPER_A = {
    "lambda_rows": _lambda_rows,
    "lambda_summary": lambda t: pa.lambda_summary(csvs=[t["lambda_rows"]]),
    "figure1": lambda t: t["lambda_summary"]["figure1"],
    "lambda_critical": lambda t: t["lambda_summary"]["critical"],
    "eta_rows": _eta_rows,
    "eta_summary": lambda t: pe.eta_summary(csvs=[t["eta_rows"]]),
    "figure2": lambda t: t["eta_summary"]["figure2"],
    "eta_critical": lambda t: t["eta_summary"]["critical"],
    "theory_rows": _theory(3),
    "theory_rows_d2": _theory(2),
    "theorem_table": lambda t: pth.theorem_table_data(csvs=[t["theory_rows"], t["theory_rows_d2"]]),
    "theorem_table_d2": lambda t: pth.theorem_table(t["theory_rows_d2"]),
    "scaling_rules": lambda t: par.scaling_rules_data(ns=[8192, 1024], overlay_n=4096),
}


@pytest.fixture
def paper_a() -> Tables:
    return Tables(PAPER_A)


Q = [1.0, 1.0, 1.0]
HEAT = dict(n=50, q=Q, target_se=1.0, min_contexts=2, max_contexts=3, cut=40.0, root_seed=SEED)
HEAT_BETAS = (3.0, 30.0)
THEORY_BETAS = [1.0, 10.0]
FIELDS = dict(
    n=20,
    beta_exponents=[1.0, 0.5],
    n_queries=5,
    sweep_betas=[2.0],
    root_seed=SEED,
    sweep_contexts=2,
)
LAWS = dict(
    d=3,
    n_values=[5, 10],
    gammas=[0.5, 1.0],
    trials=4,
    limit_trials=6,
    method="sphere",
    root_seed=SEED,
    grid_points=5,
)
PROFILE = dict(n=8, d=3, beta_exponent=0.25, trials=3, method="sphere", root_seed=SEED)
PHASE = dict(
    n=10, d=3, betas=[0.5, 5.0], line_gammas=[1.0], trials=3, method="sphere", root_seed=SEED
)
LIMIT = dict(d=3, gammas=[0.5, 1.0], trials=3, root_seed=SEED)


def _heat(t):
    return [pbd.heat_drift(beta=b, **HEAT) for b in HEAT_BETAS]


PAPER_B = {
    "heat_drift_by_beta": _heat,
    "heat_drift": lambda t: pd.concat(t["heat_drift_by_beta"], ignore_index=True),
    "heat_summary": lambda t: pbd.heat_drift_summary(
        csvs=t["heat_drift_by_beta"], q=Q, theory_betas=THEORY_BETAS
    ),
    "heat_drift_summary": lambda t: t["heat_summary"]["summary"],
    "heat_drift_curve": lambda t: t["heat_summary"]["curve"],
    "vf": lambda t: pbf.vector_fields(**FIELDS),
    "vf_panels": lambda t: t["vf"]["panels"],
    "vf_sweep": lambda t: t["vf"]["sweep"],
    "laws": lambda t: pbl.critical_laws(**LAWS),
    "laws_ecdf": lambda t: t["laws"]["ecdf"],
    "laws_summary": lambda t: t["laws"]["summary"],
    "weight_profile": lambda t: pbl.weight_profile(**PROFILE),
    "phase_column": lambda t: pbp.phase_column(**PHASE),
    "poisson_limit_table": lambda t: pbp.poisson_limit_table(**LIMIT),
}


@pytest.fixture
def paper_b() -> Tables:
    return Tables(PAPER_B)


# ------------------------------------------------------------------ column lists
@pytest.mark.parametrize("name", list(COLUMNS))
def test_table_columns_are_exactly_the_documented_ones(paper_a, paper_b, name):
    tables = paper_a if name in PAPER_A else paper_b
    want = COLUMNS[name]
    want = COLUMNS[want] if isinstance(want, str) else want
    assert list(tables[name].columns) == want


def test_token_draw_npz_content_and_provenance():
    """The cached draw (rule ``paper_a_tokens``) holds the Gaussians, its identity and its
    provenance: root seed as a decimal string, the spawn key of ``(n, d, trial)``."""
    draw = ptok.draw_tokens(n=5, d=3, trial=1, root_seed=SEED)
    assert set(draw) == {
        "z0",
        "Z",
        "n",
        "d",
        "trial",
        "root_seed",
        "spawn_key",
        "attnscale_version",
        "git_commit",
    }
    assert str(draw["root_seed"]) == str(SEED)
    assert "-".join(str(k) for k in draw["spawn_key"]) == token_key(5, 3, 1)
    assert (int(draw["n"]), int(draw["d"]), int(draw["trial"])) == (5, 3, 1)
    assert str(draw["attnscale_version"]) == __version__
    assert str(draw["git_commit"]) == git_commit()


# ------------------------------------------------------------------ Paper A provenance
def test_lambda_rows_provenance_is_the_token_draw_and_the_job_parameters(paper_a):
    lam = paper_a["lambda_rows"]
    assert set(lam["gamma_kind"]) == {"grid", "critical"}
    for (n, t), sub in lam.groupby(["n", "trial"]):
        params = {"gammas": GAMMAS, "alpha": 0.0, "n": int(n)}
        assert_prov(sub, SEED, token_key(int(n), D_A, int(t)), params)


def test_figure1_merges_each_cells_provenance_onto_that_cell(paper_a):
    """figure1_data joins cell_provenance on (d, n, alpha, rho, gamma): the two jobs (n = 6 and 8)
    have different parameter hashes and spawn keys, and every cell keeps its own."""
    lam, fig = paper_a["lambda_rows"], paper_a["figure1"]
    grid = lam[lam["gamma_kind"] == "grid"]
    assert len(fig) == len(grid.groupby(CELL)) == 2 * 2 * len(GAMMAS)
    assert fig[CELL_PROV].notna().all().all()
    for _, row in fig.iterrows():
        cell = grid[(grid[CELL] == row[CELL].to_numpy()).all(axis=1)]
        n = int(row["n"])
        assert row["trials"] == len(cell) == 2
        assert row["lambda_mean"] == pytest.approx(cell["lambda"].mean(), rel=1e-14)
        assert row["root_seed"] == str(SEED)
        assert row["spawn_keys"] == ";".join(sorted(token_key(n, D_A, t) for t in (0, 1)))
        assert row["params_hash"] == params_hash({"gammas": GAMMAS, "alpha": 0.0, "n": n})
        assert (row["attnscale_version"], row["git_commit"]) == (__version__, git_commit())


def test_lambda_critical_table_holds_every_critical_row(paper_a):
    lam, crit = paper_a["lambda_rows"], paper_a["lambda_critical"]
    want = lam[lam["gamma_kind"] == "critical"]
    assert len(crit) == len(want) == 2 * 2 * 2 - 1  # one n = 6 draw has rho_hat < 0 at 0.3
    for (n, t), sub in crit.groupby(["n", "trial"]):
        assert_prov(
            sub, SEED, token_key(int(n), D_A, int(t)), {"gammas": GAMMAS, "alpha": 0.0, "n": int(n)}
        )


def eta_params(n: int, method: str) -> dict:
    return {
        "gammas": GAMMAS,
        "alpha": 0.0,
        "n": n,
        "method": method,
        "probes": 1,
        "probe_kind": "rademacher",
    }


def test_eta_rows_provenance_follows_the_method(paper_a):
    """Exact eta: the token draw's root seed and key; Hutchinson: the probe generator's root seed
    and key ``(paper_a/eta_probes, n, d, rho * 1e6, trial)``. ``probes`` is 0 for the exact
    formula (no probe used)."""
    eta = paper_a["eta_rows"]
    for (n, t), sub in eta.groupby(["n", "trial"]):
        n, t = int(n), int(t)
        if n == N_A:
            assert (sub["method"] == "exact").all() and (sub["probes"] == 0).all()
            assert_prov(sub, SEED, token_key(n, D_A, t), eta_params(n, "exact"))
        else:
            assert (sub["method"] == "hutchinson").all() and (sub["probes"] == 1).all()
            key = key_str("paper_a/eta_probes", n, D_A, value_id(RHO_A), t)
            assert_prov(sub, PROBE_SEED, key, eta_params(n, "hutchinson"))


def test_figure2_merges_method_and_provenance_onto_each_cell(paper_a):
    fig = paper_a["figure2"]
    assert len(fig) == 2 * len(GAMMAS) and fig[CELL_PROV].notna().all().all()
    for _, row in fig.iterrows():
        n = int(row["n"])
        method = "exact" if n == N_A else "hutchinson"
        assert (row["method"], row["probes"]) == (method, int(method == "hutchinson"))
        assert row["params_hash"] == params_hash(eta_params(n, method))
        assert row["root_seed"] == str(SEED if method == "exact" else PROBE_SEED)
        eta = paper_a["eta_rows"]
        cell = eta[(eta[CELL] == row[CELL].to_numpy()).all(axis=1) & (eta["gamma_kind"] == "grid")]
        assert row["eta_mean"] == pytest.approx(cell["eta"].mean(), rel=1e-14)
        assert row["spawn_keys"] == ";".join(sorted(cell["spawn_key"]))


def test_eta_critical_table_holds_every_critical_row(paper_a):
    eta, crit = paper_a["eta_rows"], paper_a["eta_critical"]
    want = eta[eta["gamma_kind"] == "critical"].sort_values(["d", "rho", "trial"])
    assert len(crit) == len(want) == 4
    np.testing.assert_array_equal(crit["gamma"].to_numpy(), want["gamma"].to_numpy())
    assert crit["spawn_key"].tolist() == want["spawn_key"].tolist()


def theory_params() -> dict:
    return {"gamma_factors": FACTORS, "alphas": ALPHAS, "n": N_A}


@pytest.mark.parametrize("name", ["theory_rows", "theory_rows_d2"])
def test_theory_rows_provenance(paper_a, name):
    rows = paper_a[name]
    d = 3 if name == "theory_rows" else 2
    assert len(rows) == 2 * len(FACTORS) * len(ALPHAS)
    for t, sub in rows.groupby("trial"):
        assert_prov(sub, SEED, token_key(N_A, d, int(t)), theory_params())


def test_theorem_table_provenance_lists_the_draws_behind_each_row(paper_a):
    tab = paper_a["theorem_table"]
    assert len(tab) == 2 * len(ALPHAS) * len(FACTORS) * len(pth.QUANTITIES)
    for d, sub in tab.groupby("d"):
        keys = ";".join(sorted(token_key(N_A, int(d), t) for t in (0, 1)))
        assert (sub["root_seed"] == str(SEED)).all()
        assert (sub["spawn_keys"] == keys).all()
        assert (sub["params_hashes"] == params_hash(theory_params())).all()
        assert (sub["attnscale_version"] == __version__).all()
        assert (sub["git_commit"] == git_commit()).all()
        assert (sub["trials"] == 2).all()
        eta = sub[sub["quantity"] == "eta"]
        assert eta["z_norms"].notna().all() and sub["gamma_mean"].notna().all()


# ------------------------------------------------------------------ finite-d columns (issue 9)
def test_theory_rows_finite_d_columns_are_the_theory_of_each_draw(paper_a):
    """At d >= 3 and alpha = 0 the ``*_finite_d`` columns are ``theory_given_draw`` at the draw's
    nominal rho, its betas and its own ``||z_0||``; NaN at alpha > 0, at d = 2, without ``r0``
    (a token dict of :func:`tokens_at` alone). ``eta_finite_d`` is the mean-field eta at every
    alpha (docs/finite-d.md#mean-field-for-eta), NaN at d = 2 and without ``r0``."""
    rows, fd_cols = paper_a["theory_rows"], [f"{q}_finite_d" for q in pth.FINITE_D_QUANTITIES]
    for t, draw in enumerate(draws(N_A, 3)):
        sub = rows[(rows["trial"] == t) & (rows["alpha"] == 0.0)].sort_values("gamma_factor")
        r0 = float(np.linalg.norm(draw["z0"]))
        want = theory_given_draw(N_A, 3, RHO_A, sub["beta"].to_numpy(), r0)
        for q in pth.FINITE_D_QUANTITIES:
            assert np.isfinite(sub[f"{q}_finite_d"]).all()
            np.testing.assert_allclose(sub[f"{q}_finite_d"], want[q], rtol=1e-12)
        for alpha in ALPHAS:
            sa = rows[(rows["trial"] == t) & (rows["alpha"] == alpha)].sort_values("gamma_factor")
            want_eta = eta_mean_field(N_A, 3, RHO_A, sa["beta"].to_numpy(), alpha=alpha, r0=r0)
            np.testing.assert_allclose(sa["eta_finite_d"], want_eta, rtol=1e-12)
    assert rows.loc[rows["alpha"] > 0, fd_cols].isna().all().all()
    assert paper_a["theory_rows_d2"][[*fd_cols, "eta_finite_d"]].isna().all().all()
    no_r0 = pth.theory_rows(
        ptok.tokens_at(draws(N_A, 3)[0], RHO_A), FACTORS, [0.0], theory_params()
    )
    assert no_r0[[*fd_cols, "eta_finite_d"]].isna().all().all() and len(no_r0) == len(FACTORS)


def finite_d_reference(sim: np.ndarray, fd: np.ndarray) -> dict:
    """The finite-d columns of one theorem-table row, from the per-draw simulation ``sim`` and
    theory ``fd`` (docs/finite-d.md, issue 9): NaN and False unless every draw has a theory value;
    SE with ddof 1 (NaN for one draw); z = mean / SE (NaN unless SE > 0);
    accept = |mean| <= max(3 SE, 0.002) with 3 SE read as 0 when the SE is NaN."""
    if not np.all(np.isfinite(fd)):
        return {**dict.fromkeys(FD_NUM, np.nan), **dict.fromkeys(FD_FLAGS, False)}
    diff = sim - fd
    t, mean = len(diff), float(np.mean(diff))
    se = float(np.std(diff, ddof=1) / np.sqrt(t)) if t > 1 else np.nan
    z = mean / se if t > 1 and se > 0 else np.nan
    return {
        "finite_d": float(np.mean(fd)),
        "diff_fd_mean": mean,
        "diff_fd_se": se,
        "z_fd": z,
        "within_2se_fd": bool(abs(z) <= 2.0),  # False for NaN
        "within_3se_fd": bool(abs(z) <= 3.0),
        "accept_fd": bool(abs(mean) <= max(3.0 * se if np.isfinite(se) else 0.0, 0.002)),
    }


def check_finite_d_columns(rows: pd.DataFrame, tab: pd.DataFrame) -> None:
    """Every row of the theorem table ``tab`` against :func:`finite_d_reference` of its draws."""
    assert len(tab) == len(rows.groupby(pth.THEORY_KEYS)) * len(pth.QUANTITIES)
    for col in FD_NUM:
        assert tab[col].dtype == np.float64, col
    for col in FD_FLAGS:
        assert tab[col].dtype == bool, col
    for _, row in tab.iterrows():
        g = rows[(rows[pth.THEORY_KEYS] == row[pth.THEORY_KEYS].to_numpy()).all(axis=1)]
        qty = row["quantity"]
        fcol = f"{qty}_finite_d"
        fd = g[fcol].to_numpy(float) if fcol in g else np.full(len(g), np.nan)
        want = finite_d_reference(g[qty].to_numpy(float), fd)
        for col in FD_NUM:
            assert row[col] == pytest.approx(want[col], rel=1e-12, nan_ok=True), (qty, col)
        for col in FD_FLAGS:
            assert row[col] is want[col] or row[col] == want[col], (qty, col)
            assert isinstance(row[col], bool | np.bool_), (qty, col)


def test_theorem_table_finite_d_columns_recomputed_from_the_rows(paper_a):
    """The real d = 3 and d = 2 rows (two draws each): finite-d statistics at d = 3, alpha = 0
    for self-weight, cosine and lambda, and at d = 3 for eta at every alpha (its mean field,
    docs/finite-d.md#mean-field-for-eta); NaN/False everywhere else."""
    rows = pd.concat([paper_a["theory_rows"], paper_a["theory_rows_d2"]], ignore_index=True)
    tab = paper_a["theorem_table"]
    check_finite_d_columns(rows, tab)
    has_fd = (tab["d"] == 3) & (
        ((tab["alpha"] == 0.0) & tab["quantity"].isin(pth.FINITE_D_QUANTITIES))
        | (tab["quantity"] == "eta")
    )
    assert tab.loc[has_fd, FD_NUM].notna().all().all()  # two draws: finite SE and z
    assert tab.loc[~has_fd, FD_NUM].isna().all().all()
    assert not tab.loc[~has_fd, FD_FLAGS].any().any()
    check_finite_d_columns(paper_a["theory_rows_d2"], paper_a["theorem_table_d2"])


def synthetic_rows() -> pd.DataFrame:
    """Theorem rows with chosen per-draw differences ``sim - finite_d`` (the same for the three
    finite-d quantities), one ``gamma_factor`` per case:

    * 0.5: constant 0.25 (exact in binary): SE 0, so z is NaN, within False, accept False;
    * 1.0: 1 +- 0.1: |z| = 10, within False and accept False (|mean| > 3 SE and > 0.002);
    * 2.0: small and spread: |z| < 2, within and accept True;
    * 4.0: one draw off by 0.001: SE and z NaN, accept True (|mean| <= 0.002);
    * 8.0: one draw off by 0.01: accept False.
    """
    cases = {
        0.5: [0.25, 0.25, 0.25],
        1.0: [0.9, 1.0, 1.1],
        2.0: [0.01, -0.02, 0.015],
        4.0: [0.001],
        8.0: [0.01],
    }
    frames = []
    for f, diffs in cases.items():
        t = len(diffs)
        sim = np.array([0.5, 0.75, 0.625][:t])
        cols = {
            "d": 8,
            "n": 16,
            "rho": 0.5,
            "alpha": 0.0,
            "gamma_factor": f,
            "trial": range(t),
            "rho_hat": 0.5,
            "q_hat": 1.0,
            "gamma": 2.0 * f,
            "eta_simplex_n_norms": 0.4,
        }
        for q in pth.QUANTITIES:
            cols[q] = sim
            cols[f"{q}_simplex_n"] = 0.5
            cols[f"{q}_limit"] = 0.5
        for q in pth.FINITE_D_QUANTITIES:
            cols[f"{q}_finite_d"] = sim - np.array(diffs)
        cols["eta_finite_d"] = np.nan
        frames.append(pd.DataFrame(cols))
    return pd.concat(frames, ignore_index=True)


def test_theorem_table_finite_d_edge_cases():
    """Zero SE, |z| > 3, |z| < 2, one draw inside and outside the 0.002 tolerance."""
    rows = synthetic_rows()
    assert (rows["self_weight"] - rows["self_weight_finite_d"])[:3].tolist() == [0.25] * 3
    tab = pth.theorem_table(rows)
    check_finite_d_columns(rows, tab)
    sw = tab[tab["quantity"] == "self_weight"].set_index("gamma_factor")
    assert np.isnan(sw.loc[0.5, "z_fd"]) and sw.loc[0.5, "diff_fd_se"] == 0.0
    assert sw["accept_fd"].tolist() == [False, False, True, True, False]
    assert sw["within_3se_fd"].tolist() == [False, False, True, False, False]
    assert np.isnan(sw.loc[4.0, "diff_fd_se"]) and np.isnan(sw.loc[4.0, "z_fd"])


def test_theorem_table_without_finite_d_columns():
    """Rows written before the finite-d theory (no ``*_finite_d`` column): the same columns,
    NaN statistics and False flags."""
    rows = synthetic_rows().drop(columns=[f"{q}_finite_d" for q in pth.QUANTITIES])
    tab = pth.theorem_table(rows)
    fd_cols = COLUMNS["theorem_table"][-len(FD_NUM) - len(FD_FLAGS) :]
    assert fd_cols == [*FD_NUM, *FD_FLAGS] and list(tab.columns)[-len(fd_cols) :] == fd_cols
    check_finite_d_columns(rows, tab)


# ------------------------------------------------------------------ scaling rules
def test_scaling_rules_provenance(paper_a):
    df = paper_a["scaling_rules"]
    assert (
        df["params_hash"] == params_hash({"ns": [1024.0, 4096.0, 8192.0], "overlay_n": 4096.0})
    ).all()
    assert (df["attnscale_version"] == __version__).all()
    assert (df["git_commit"] == git_commit()).all()
    assert df.loc[df["is_overlay_n"], "n"].unique().tolist() == [4096.0]


# ------------------------------------------------------------------ Paper B provenance
def heat_params(beta: float) -> dict:
    q = np.asarray(Q) / np.linalg.norm(Q)
    return {
        "beta": beta,
        "n": HEAT["n"],
        "q": q.tolist(),
        "target_se": HEAT["target_se"],
        "min_contexts": HEAT["min_contexts"],
        "max_contexts": HEAT["max_contexts"],
        "cut": HEAT["cut"],
    }


def test_heat_drift_provenance_and_contexts(paper_b):
    for beta, df in zip(HEAT_BETAS, paper_b["heat_drift_by_beta"], strict=True):
        assert df["context"].tolist() == list(range(len(df))) and (df["contexts"] == len(df)).all()
        assert (df["keys_in_cap"] <= HEAT["n"]).all()
        key = key_str("paper_b/heat_drift", value_id(beta), HEAT["n"])
        assert_prov(df, SEED, key, heat_params(beta))


def test_heat_drift_summary_carries_each_betas_provenance(paper_b):
    summ = paper_b["heat_drift_summary"]
    assert summ["beta"].tolist() == list(HEAT_BETAS)
    for beta, df in zip(HEAT_BETAS, paper_b["heat_drift_by_beta"], strict=True):
        row = summ[summ["beta"] == beta]
        assert row["contexts"].item() == len(df)
        assert row["perp_mean"].item() == pytest.approx(df["perp"].mean(), rel=1e-14)
        assert_prov(
            row, SEED, key_str("paper_b/heat_drift", value_id(beta), HEAT["n"]), heat_params(beta)
        )
    curve = paper_b["heat_drift_curve"]
    q = (np.asarray(Q) / np.linalg.norm(Q)).tolist()
    assert curve["beta"].tolist() == THEORY_BETAS
    assert (curve["params_hash"] == params_hash({"q": q, "theory_betas": THEORY_BETAS})).all()
    assert (curve["attnscale_version"] == __version__).all()
    assert (curve["git_commit"] == git_commit()).all()


@pytest.mark.filterwarnings("ignore:One or more sample arguments is too small")  # SE of one: NaN
def test_heat_drift_summary_of_a_single_context(paper_b):
    """A beta with one context (e.g. a table cut short) still gets that context's provenance."""
    one = paper_b["heat_drift_by_beta"][0].iloc[:1]
    summ = pbd.heat_drift_summary(csvs=[one], q=Q, theory_betas=THEORY_BETAS)["summary"]
    assert summ["contexts"].item() == 1
    assert_prov(
        summ,
        SEED,
        key_str("paper_b/heat_drift", value_id(HEAT_BETAS[0]), HEAT["n"]),
        heat_params(HEAT_BETAS[0]),
    )


def test_vector_fields_provenance_per_context(paper_b):
    """Context 0 (the panels' context) has key ``(stream, n, d)``; sweep context r >= 1 has key
    ``(stream, n, d, r)`` and the job parameters plus ``context = r``."""
    n = FIELDS["n"]
    params = {
        "n": n,
        "d": 3,
        "beta_exponents": FIELDS["beta_exponents"],
        "n_queries": FIELDS["n_queries"],
        "sweep_betas": FIELDS["sweep_betas"],
    }
    panels, sweep = paper_b["vf_panels"], paper_b["vf_sweep"]
    assert (panels["n"] == n).all() and len(panels) == 2 * FIELDS["n_queries"]
    assert_prov(panels, SEED, key_str("paper_b/vector_fields", n, 3), params)
    assert sweep["context"].unique().tolist() == [0, 1] and (sweep["n"] == n).all()
    assert_prov(sweep[sweep["context"] == 0], SEED, key_str("paper_b/vector_fields", n, 3), params)
    assert_prov(
        sweep[sweep["context"] == 1],
        SEED,
        key_str("paper_b/vector_fields", n, 3, 1),
        {**params, "context": 1},
    )
    # a new context is a new draw: the displacements differ
    rms = sweep.pivot(index="beta", columns="context", values="rms_disp")
    assert (rms[0] != rms[1]).all()


def laws_base() -> dict:
    return {
        "d": LAWS["d"],
        "trials": LAWS["trials"],
        "limit_trials": LAWS["limit_trials"],
        "method": LAWS["method"],
    }


def test_critical_laws_curves_and_provenance(paper_b):
    """ECDF curves: per gamma the Poisson limit (n = 0, key of the limit stream and gamma), per
    (n, gamma) the finite-n top weight, per n the finite-n and exact nearest-key laws (key of
    ``(d, n)``), once the Weibull limit (no draw: no provenance). The summary holds the same
    provenance, and ``samples`` is ``limit_trials`` for the limit and ``trials`` otherwise."""
    d, ecdf, summ = LAWS["d"], paper_b["laws_ecdf"], paper_b["laws_summary"]
    curves = {
        (s, src, int(n), "-" if np.isnan(g) else float(g))
        for (s, src, n, g), _ in ecdf.groupby(["stat", "source", "n", "gamma"], dropna=False)
    }
    gs, ns = LAWS["gammas"], LAWS["n_values"]
    assert curves == (
        {("top_weight", "poisson_limit", 0, g) for g in gs}
        | {("top_weight", "finite_n", n, g) for n in ns for g in gs}
        | {("nearest_scaled", src, n, "-") for n in ns for src in ("finite_n", "exact_finite_n")}
        | {("nearest_scaled", "weibull_limit", 0, "-")}
    )
    assert (
        ecdf.groupby(["stat", "source", "n", "gamma"], dropna=False).size() == LAWS["grid_points"]
    ).all()
    weibull = ecdf[ecdf["source"] == "weibull_limit"]
    assert weibull[PROV].isna().all().all()
    for table in (ecdf, summ):
        assert (table["d"] == d).all()
        for g in gs:
            lim = table[(table["source"] == "poisson_limit") & (table["gamma"] == g)]
            assert (lim["n"] == 0).all()
            assert_prov(
                lim,
                SEED,
                key_str("paper_b/critical_laws/limit", d, value_id(g)),
                {**laws_base(), "gamma": g},
            )
        for n in ns:
            fin = table[table["n"] == n]
            assert_prov(
                fin,
                SEED,
                key_str("paper_b/critical_laws", d, n),
                {**laws_base(), "n": n, "gammas": gs},
            )
    assert (summ.loc[summ["source"] == "poisson_limit", "samples"] == LAWS["limit_trials"]).all()
    fin = summ[summ["source"] == "finite_n"]
    assert (fin["samples"] == LAWS["trials"]).all()
    assert len(fin) == len(ns) * (len(gs) + 1)
    assert fin.loc[fin["stat"] == "nearest_scaled", "gamma"].isna().all()
    top, near = fin[fin["stat"] == "top_weight"], fin[fin["stat"] == "nearest_scaled"]
    assert top[["ks_pvalue", "limit_se"]].notna().all().all()
    assert near[["ks_pvalue", "ks_exact_pvalue"]].notna().all().all()


@pytest.mark.parametrize(
    ("name", "key", "params"),
    [
        pytest.param(
            "weight_profile",
            ("paper_b/profile", 3, 8),
            {"n": 8, "d": 3, "beta_exponent": 0.25, "trials": 3, "method": "sphere"},
            id="weight_profile",
        ),
        pytest.param(
            "phase_column",
            ("paper_b/phase", 3, 10),
            {
                "n": 10,
                "d": 3,
                "betas": [0.5, 5.0],
                "line_gammas": [1.0],
                "trials": 3,
                "method": "sphere",
            },
            id="phase_column",
        ),
    ],
)
def test_single_job_tables_provenance(paper_b, name, key, params):
    df = paper_b[name]
    assert (df["d"] == params["d"]).all() and (df["n"] == params["n"]).all()
    assert (df["trials"] == params["trials"]).all() and (df["method"] == "sphere").all()
    assert_prov(df, SEED, key_str(*key), params)


def test_poisson_limit_table_provenance_per_gamma(paper_b):
    df = paper_b["poisson_limit_table"]
    assert df["gamma"].tolist() == LIMIT["gammas"] and (df["trials"] == LIMIT["trials"]).all()
    for g in LIMIT["gammas"]:
        assert_prov(
            df[df["gamma"] == g],
            SEED,
            key_str("paper_b/poisson_limit", 3, value_id(g)),
            {"d": 3, "gamma": g, "trials": LIMIT["trials"]},
        )


@pytest.mark.parametrize(("method", "sizes"), [("sphere", [4, 4, 2]), ("beta", [10])])
def test_d2q_blocks_bound_the_entries_drawn_per_block(monkeypatch, method, sizes):
    """A block holds at most TRIAL_BLOCK_ENTRIES floats: n d per context for full keys on the
    sphere, n for the Beta shortcut (here 60 entries, n = 5, d = 3, 10 contexts)."""
    monkeypatch.setattr(pbc, "TRIAL_BLOCK_ENTRIES", 60)
    blocks = list(pbc.d2q_blocks(10, 5, 3, np.random.default_rng(0), method))
    assert [b.shape for b in blocks] == [(s, 5) for s in sizes]


def test_phase_summary_stacks_the_columns_sorted_by_kind_n_beta(paper_b):
    """Rule ``paper_b_phase_summary``: the column tables of two n, given in the wrong order,
    stacked with a fresh 0..N-1 index and sorted by (kind, n, beta); columns unchanged."""
    small = paper_b["phase_column"]
    big = pbp.phase_column(**{**PHASE, "n": 20})
    out = pbp.phase_summary(csvs=[big, small])
    assert list(out.columns) == COLUMNS["phase_column"]
    assert list(out.index) == list(range(len(small) + len(big)))
    keys = list(zip(out["kind"], out["n"], out["beta"], strict=True))
    assert keys == sorted(keys)
    assert set(out["n"]) == {10, 20}
    pd.testing.assert_frame_equal(
        out[out["n"] == 10].reset_index(drop=True),
        small.sort_values(["kind", "n", "beta"]).reset_index(drop=True),
    )


def test_the_provenance_columns_write_spawn_key_in_one_format():
    import re

    from attnscale.pipeline.io import SPAWN_KEY_PATTERN, provenance_columns

    one = provenance_columns(7, (3, 1, 4), {"a": 1})
    assert list(one) == PROV and one["spawn_key"] == "3-1-4" and one["root_seed"] == "7"
    several = provenance_columns(7, [(3, 1, 0), (3, 1, 1)], {"a": 1})["spawn_key"]
    assert several == "3-1-0;3-1-1"
    prefix = provenance_columns(7, (3, 1), {"a": 1}, contexts=8)["spawn_key"]
    assert prefix == "3-1-{0..7}"
    for text in ("3-1-4", several, prefix):
        assert re.match(SPAWN_KEY_PATTERN, text)
    for wrong in ("[3, 1, 4]", "(3, 1)", "3,1"):
        assert not re.match(SPAWN_KEY_PATTERN, wrong)
    fixed = provenance_columns(None, None, {"a": 1})
    assert list(fixed) == ["params_hash", "attnscale_version", "git_commit"]


def test_provenance_columns_only_and_the_carried_provenance():
    """The provenance columns are written in one place (attnscale.pipeline.io): ``only`` keeps a
    subset with the same text, and a summary's carried provenance (first value, or all values
    joined under the plural name) is the same through ``provenance_of`` and the groupby
    aggregations."""
    from attnscale.pipeline.io import (
        PROVENANCE_COLUMNS,
        provenance_aggregations,
        provenance_columns,
        provenance_of,
    )

    key = spawn_key("test/stream", 3, 4)
    full = provenance_columns(7, key, {"a": 1})
    assert provenance_columns(7, key, {"a": 1}, only=("spawn_key",)) == {
        "spawn_key": full["spawn_key"]
    }
    assert provenance_columns(7, None, {}, only=("root_seed",)) == {"root_seed": "7"}
    with pytest.raises(ValueError, match="only"):
        provenance_columns(7, key, {}, only=("seed",))
    rows = pd.DataFrame(
        [provenance_columns(7, k, {"a": a}) for k, a in (((2, 1), 1), ((1, 5), 1), ((2, 1), 2))]
    ).assign(cell=[0, 0, 1])
    first = provenance_of(rows)
    assert list(first) == list(PROVENANCE_COLUMNS) and first["spawn_key"] == "2-1"
    joined = provenance_of(rows, joined=PROVENANCE_COLUMNS)
    assert joined["spawn_keys"] == "1-5;2-1" and joined["root_seed"] == "7"
    assert joined["params_hashes"] == ";".join(sorted(set(rows["params_hash"])))
    agg = rows.groupby("cell").agg(**provenance_aggregations()).reset_index()
    assert agg.loc[0, "spawn_keys"] == "1-5;2-1" and agg.loc[1, "spawn_keys"] == "2-1"
    assert {k: agg.loc[0, k] for k in provenance_of(rows, joined=("spawn_key",))} == (
        provenance_of(rows.iloc[:2], joined=("spawn_key",))
    )


def test_no_table_column_of_provenance_is_written_outside_the_pipeline():
    """The provenance columns are written by attnscale.pipeline.io alone (issue 42): no dict key
    or column assignment named after one in the rest of the library. The exceptions hold the
    identity of a token draw as read from its file, or summarise the sources a page or a findings
    file was computed from; they write no results table."""
    import ast

    from attnscale.pipeline.io import PROVENANCE_COLUMNS, PROVENANCE_JOINED

    src = REPO / "src" / "attnscale"
    readers = {
        "experiments/paper_a_tokens.py",
        "experiments/explorer/data.py",
        "experiments/findings/__init__.py",
        "experiments/findings/figures.py",
    }
    names = set(PROVENANCE_COLUMNS) | set(PROVENANCE_JOINED.values())
    bad = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        text = path.read_text()
        if rel.startswith("pipeline/") or rel in readers or not any(c in text for c in names):
            continue
        for node in ast.walk(ast.parse(text)):
            keys = node.keys if isinstance(node, ast.Dict) else []
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                keys = [node.slice]
            bad += [
                f"{rel}:{node.lineno} {k.value}"
                for k in keys
                if isinstance(k, ast.Constant) and k.value in names
            ]
    assert not bad, bad
