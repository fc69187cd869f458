"""These tests pin the argument validation of the experiment and numerical functions (the
bounds and the argument named in the message): a value just outside each bound is refused with
a ``ValueError`` that names the argument as the code spells it, and the bound itself is accepted
or refused as documented (open bounds refuse it, closed bounds accept it). Accepted calls use
the smallest sizes the checks allow, so each runs in milliseconds. Two output checks at the same
sizes close the file: the heat-drift neglected-mass bound and the set of ECDF curves of the
critical-laws table.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from attnscale.experiments import paper_a_eta as pae
from attnscale.experiments import paper_a_theorem as pth
from attnscale.experiments import paper_b_drift as pbd
from attnscale.experiments import paper_b_fields as pbf
from attnscale.experiments import paper_b_laws as pbl
from attnscale.experiments import paper_b_phase as pbp
from attnscale.experiments.paper_a_tokens import check_draws, draw_tokens, tokens_at
from attnscale.sphere import poisson_limit as pl
from attnscale.sphere import theory as st

SEED = 20261130


def _draw(Z, z0=None) -> dict:
    """A cached-draw dict (as :func:`attnscale.experiments.paper_a_tokens.draw_tokens` gives)."""
    Z = np.asarray(Z, dtype=float)
    n, d = Z.shape
    z0 = np.zeros(d) if z0 is None else np.asarray(z0, dtype=float)
    return {"z0": z0, "Z": Z, "n": n, "d": d, "trial": 0, "root_seed": SEED, "spawn_key": (1, 2)}


# Valid calls at the smallest sizes; every bounded argument sits at (or, for an open bound, just
# inside) its bound, so a mutant that raises a minimum or drops ``low_open`` breaks them.
HEAT = dict(
    beta=1e-3,
    n=2,
    q=[1.0, 1.0, 1.0],
    target_se=1e-3,
    min_contexts=2,
    max_contexts=2,
    cut=1e-3,
    root_seed=SEED,
)
HEAT_SUMMARY = dict(csvs=[pd.DataFrame({"beta": []})], q=[1.0, 1.0, 1.0], theory_betas=[1e-3])
FIELDS = dict(n=2, beta_exponents=[1.0], n_queries=1, sweep_betas=[2.0], root_seed=SEED)
LAWS = dict(
    d=3,
    n_values=[1],
    gammas=[1e-3],
    trials=2,
    limit_trials=2,
    method="sphere",
    root_seed=SEED,
    grid_points=3,
)
PROFILE = dict(n=2, d=2, beta_exponent=1e-3, trials=2, method="sphere", root_seed=SEED)
PHASE = dict(n=1, d=2, betas=[1e-3], line_gammas=[1e-3], trials=2, method="sphere", root_seed=SEED)
LIMIT_TABLE = dict(d=2, gammas=[1e-3], trials=2, root_seed=SEED, line_gammas=[2e-3])
ETA = dict(
    tok=tokens_at(_draw([[1.0, 0.0], [0.8, 0.6]]), 0.5),
    gammas=[1e-3],
    alpha=0.0,
    method="hutchinson",
    probes=1,
    probe_kind="rademacher",
    root_seed=SEED,
    params={},
)
TOP_WEIGHT = dict(
    gamma=1e-3, c=1e-3, d=3, trials=1, rng=np.random.default_rng(0), y_max=1e-3, max_points=1
)
INV_D3 = dict(gamma=1e-3, c=1e-3)
CRIT_BETA = dict(n=1e-3, d=3, gamma=1e-3)
DRIFT_TR = dict(n=0.5, d=3)
DRIFT = dict(q=[1.0, 0.0, 0.0], score=[0.0, 1.0, 0.0], d=3, beta=0.5)
M_EFF = dict(n=1, beta=1e-3, c=1e-3, d=3)
PROFILE_FB = dict(k=[1.0], n=1, beta=0.0, d=3)
UNIT = dict(q=[1.0, 0.0])


def _case(func, base, change, name):
    return pytest.param(func, base, change, name, id=f"{func.__name__}-{name}")


REFUSED = [
    # paper_b_drift.heat_drift
    _case(pbd.heat_drift, HEAT, {"beta": 0.0}, "beta"),
    _case(pbd.heat_drift, HEAT, {"n": 1}, "n"),
    _case(pbd.heat_drift, HEAT, {"q": []}, "q"),
    _case(pbd.heat_drift, HEAT, {"cut": 0.0}, "cut"),
    _case(pbd.heat_drift, HEAT, {"target_se": 0.0}, "target_se"),
    _case(pbd.heat_drift, HEAT, {"min_contexts": 1}, "min_contexts"),
    _case(pbd.heat_drift, HEAT, {"max_contexts": 1}, "max_contexts"),
    # paper_b_drift.heat_drift_summary
    _case(pbd.heat_drift_summary, HEAT_SUMMARY, {"theory_betas": [1.0, 0.0]}, "theory_betas"),
    # paper_b_fields.vector_fields
    _case(pbf.vector_fields, FIELDS, {"n": 1}, "n"),
    _case(pbf.vector_fields, FIELDS, {"beta_exponents": [0.0]}, "beta_exponents"),
    _case(pbf.vector_fields, FIELDS, {"n_queries": 0}, "n_queries"),
    _case(pbf.vector_fields, FIELDS, {"sweep_betas": [0.0]}, "sweep_betas"),
    # paper_b_laws.critical_laws
    _case(pbl.critical_laws, LAWS, {"d": 1}, "d"),
    _case(pbl.critical_laws, LAWS, {"n_values": [1, 0]}, "n_values[i]"),
    _case(pbl.critical_laws, LAWS, {"gammas": [0.0]}, "gammas"),
    _case(pbl.critical_laws, LAWS, {"trials": 1}, "trials"),
    _case(pbl.critical_laws, LAWS, {"limit_trials": 1}, "limit_trials"),
    # paper_b_laws.weight_profile
    _case(pbl.weight_profile, PROFILE, {"n": 1}, "n"),
    _case(pbl.weight_profile, PROFILE, {"d": 1}, "d"),
    _case(pbl.weight_profile, PROFILE, {"beta_exponent": 0.0}, "beta_exponent"),
    _case(pbl.weight_profile, PROFILE, {"trials": 1}, "trials"),
    # paper_b_phase.phase_column
    _case(pbp.phase_column, PHASE, {"n": 0}, "n"),
    _case(pbp.phase_column, PHASE, {"d": 1}, "d"),
    _case(pbp.phase_column, PHASE, {"betas": [0.0]}, "betas"),
    _case(pbp.phase_column, PHASE, {"line_gammas": [0.0]}, "line_gammas"),
    _case(pbp.phase_column, PHASE, {"trials": 1}, "trials"),
    # paper_b_phase.poisson_limit_table
    _case(pbp.poisson_limit_table, LIMIT_TABLE, {"d": 1}, "d"),
    _case(pbp.poisson_limit_table, LIMIT_TABLE, {"gammas": [0.0]}, "gammas"),
    _case(pbp.poisson_limit_table, LIMIT_TABLE, {"line_gammas": [0.0]}, "line_gammas"),
    _case(pbp.poisson_limit_table, LIMIT_TABLE, {"trials": 1}, "trials"),
    # paper_a_eta.eta_table
    _case(pae.eta_table, ETA, {"gammas": [0.0]}, "gammas"),
    _case(pae.eta_table, ETA, {"alpha": -1e-3}, "alpha"),
    # method="exact" never uses the probes: only eta_table's own check can refuse 0
    _case(pae.eta_table, ETA, {"probes": 0, "method": "exact"}, "probes"),
    # poisson_limit
    _case(pl.poisson_limit_top_weight, TOP_WEIGHT, {"gamma": 0.0}, "gamma"),
    _case(pl.poisson_limit_top_weight, TOP_WEIGHT, {"c": 0.0}, "c"),
    _case(pl.poisson_limit_top_weight, TOP_WEIGHT, {"trials": 0}, "trials"),
    _case(pl.poisson_limit_top_weight, TOP_WEIGHT, {"y_max": 0.0}, "y_max"),
    _case(pl.poisson_limit_top_weight, TOP_WEIGHT, {"max_points": 0}, "max_points"),
    _case(pl.inv_top_weight_limit_d3, INV_D3, {"gamma": 0.0}, "gamma"),
    _case(pl.inv_top_weight_limit_d3, INV_D3, {"c": 0.0}, "c"),
    # sphere_theory
    _case(st.critical_scale, CRIT_BETA, {"n": 0.0}, "n"),
    _case(st.critical_scale, CRIT_BETA, {"gamma": 0.0}, "gamma"),
    _case(st.drift_transition_beta, DRIFT_TR, {"n": 0.0}, "n"),
    _case(st.drift, DRIFT, {"beta": 0.0}, "beta"),
    _case(st.m_eff, M_EFF, {"n": 0}, "n"),
    _case(st.m_eff, M_EFF, {"beta": 0.0}, "beta"),
    _case(st.m_eff, M_EFF, {"c": 0.0}, "c"),
    _case(st.profile_finite_beta, PROFILE_FB, {"n": 0}, "n"),
    _case(st.profile_finite_beta, PROFILE_FB, {"beta": -1e-3}, "beta"),
    _case(st.unit_query, UNIT, {"q": []}, "q"),
]


@pytest.mark.parametrize(("func", "base", "change", "name"), REFUSED)
def test_value_outside_bound_is_refused_naming_the_argument(func, base, change, name):
    # the message starts with the argument ("n must be >= 2, ...") or, for a vector entry,
    # "every entry of gammas must be > 0, ...": a renamed argument ("Q", "XXdXX", None) fails
    pattern = rf"(?:^|\bevery entry of ){re.escape(name)} must "
    with pytest.raises(ValueError, match=pattern):
        func(**{**base, **change})


ACCEPTED = [
    pytest.param(func, base, id=func.__name__)
    for func, base in [
        (pbd.heat_drift, HEAT),
        (pbd.heat_drift_summary, HEAT_SUMMARY),
        (pbf.vector_fields, FIELDS),
        (pbl.critical_laws, LAWS),
        (pbl.weight_profile, PROFILE),
        (pbp.phase_column, PHASE),
        (pbp.poisson_limit_table, LIMIT_TABLE),
        (pae.eta_table, ETA),
        (pl.poisson_limit_top_weight, TOP_WEIGHT),
        (pl.inv_top_weight_limit_d3, INV_D3),
        (st.critical_scale, CRIT_BETA),
        (st.drift_transition_beta, DRIFT_TR),
        (st.drift, DRIFT),
        (st.m_eff, M_EFF),
        (st.profile_finite_beta, PROFILE_FB),
        (st.unit_query, UNIT),
    ]
]


@pytest.mark.parametrize(("func", "base"), ACCEPTED)
def test_values_at_the_bounds_are_accepted(func, base):
    """Closed bounds at their value (``n = 2`` for ``minimum=2``, ``beta = 0`` for ``low=0``),
    open bounds just inside (``1e-3`` for ``> 0``); ``max_contexts = min_contexts``."""
    out = func(**base)
    assert out is not None


def test_accepted_boundary_values_give_the_documented_results():
    """Spot values at the accepted bounds (so an accepted call cannot be a silent no-op)."""
    assert st.drift_transition_beta(0.5, 3) == pytest.approx(0.5**0.5)
    np.testing.assert_allclose(st.drift([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], 3, 0.5), [-2, 2, 0])
    np.testing.assert_array_equal(st.profile_finite_beta([0.0, 1.0], 1, 0.0, 3), [1.0, 1.0])
    np.testing.assert_array_equal(st.unit_query([0.0, 1.0]), [0.0, 1.0])  # length 2 is enough
    assert pl.inv_top_weight_limit_d3(1e-3, 1e-3) == pytest.approx(2.0)
    assert len(pbd.heat_drift(**HEAT)) == 2  # min_contexts = max_contexts = 2 contexts
    assert pbf.vector_fields(**FIELDS)["panels"]["n"].tolist() == [2]
    assert len(pae.eta_table(**ETA)) == 2 and pae.eta_table(**ETA)["probes"].iloc[0] == 1


@pytest.mark.parametrize(
    "q",
    [pytest.param([1.0], id="length_1"), pytest.param([0.6, 0.6], id="not_unit")],
)
def test_unit_refuses_short_or_non_unit_q_naming_q(q):
    with pytest.raises(ValueError, match=r"^q must be a unit vector of length >= 2, got norm"):
        st.unit_query(q)


def test_poisson_limit_top_weight_refuses_a_non_generator_rng():
    with pytest.raises(TypeError, match=r"^rng must be a numpy\.random\.Generator, got int"):
        pl.poisson_limit_top_weight(**{**TOP_WEIGHT, "rng": 0})


def test_theory_rows_all_without_usable_draw_names_d_and_rho():
    """One draw whose tokens are antipodal (rho_hat = -1): no rows, and the error names the d of
    the first (here the only) draw and the rho."""
    draw = _draw([[1.0, 0.0], [-1.0, 0.0]])
    assert tokens_at(draw, 0.5)["rho_hat"] == pytest.approx(-1.0)
    msg = r"^no token draw of d = 2 at rho = 0\.5 has rho_hat in \(0, 1\)$"
    with pytest.raises(ValueError, match=msg):
        pth.theory_rows_all(draws=[draw], rho=0.5, gamma_factors=[1.0], alphas=[0.0])


def test_token_draws_of_another_job_are_refused_with_the_size_named():
    """A rule passes its wildcards n, d (docs/pipeline.md#rule-anatomy): draws of another size,
    e.g. read from the wrong file, are an error naming the size, before any work."""
    draws = [draw_tokens(n=6, d=3, trial=t, root_seed=1) for t in range(2)]
    assert check_draws(draws, 6, 3) == check_draws(draws) == (6, 3)
    with pytest.raises(ValueError, match=r"^n = 7 but the draws have n = 6 \(Z of shape"):
        pth.theory_rows_all(draws=draws, rho=0.5, gamma_factors=[1.0], alphas=[0.0], n=7, d=3)
    with pytest.raises(ValueError, match=r"^d = 4 but the draws have d = 3"):
        check_draws(draws, 6, 4)
    with pytest.raises(ValueError, match=r"^draws\[1\] has Z of shape \(5, 3\)"):
        check_draws([draws[0], draw_tokens(n=5, d=3, trial=0, root_seed=1)])
    with pytest.raises(ValueError, match="^draws must hold at least one"):
        check_draws([], 6, 3)


# Two output checks at the same toy sizes (mutation survivors beside the argument checks).


def test_heat_drift_neglected_mass_bound_is_zero_when_every_key_is_in_the_cap():
    """``t_c = (cut + log n) / beta = 1.99 < 2``, so keys beyond the cap could exist; with this
    seed both keys of both contexts fall inside it and nothing is neglected: the bound on the
    neglected mass (``n - keys_in_cap`` keys, each below the cap's weight) is exactly 0."""
    df = pbd.heat_drift(**{**HEAT, "beta": 1.0, "cut": 1.99 - np.log(2), "target_se": 1.0})
    assert np.allclose(df["t_c"], 1.99) and (df["keys_in_cap"] == 2).all()
    assert (df["neglected_mass_bound"] == 0.0).all()


def test_critical_laws_ecdf_holds_every_curve():
    """Per gamma the Poisson-limit and the finite-n ``A_(1)`` curves; per n the finite-n and the
    exact nearest-key curves; once the Weibull limit (``n = 0`` marks a limit)."""
    e = pbl.critical_laws(**LAWS)["ecdf"]
    curves = {
        (s, src, int(n), "-" if np.isnan(g) else float(g))
        for (s, src, n, g), _ in e.groupby(["stat", "source", "n", "gamma"], dropna=False)
    }
    assert curves == {
        ("top_weight", "poisson_limit", 0, 1e-3),
        ("top_weight", "finite_n", 1, 1e-3),
        ("nearest_scaled", "weibull_limit", 0, "-"),
        ("nearest_scaled", "finite_n", 1, "-"),
        ("nearest_scaled", "exact_finite_n", 1, "-"),
    }
    assert (e.groupby(["stat", "source", "n"], dropna=False).size() == LAWS["grid_points"]).all()


def test_sphere_area_accepts_every_dimension_from_one():
    """|S^0| = 2 (two points) and |S^1| = 2 pi: the smallest dimensions the formula covers; 0 is
    refused naming ``d``."""
    assert st.sphere_area(1) == pytest.approx(2.0, rel=1e-15)
    assert st.sphere_area(2) == pytest.approx(2.0 * np.pi, rel=1e-15)
    with pytest.raises(ValueError, match=r"\bd\b"):
        st.sphere_area(0)
