"""Paper B entry functions at toy sizes: tables, provenance, determinism (docs/paper-b.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnscale.experiments import paper_b_drift as pbd
from attnscale.experiments import paper_b_fields as pbf
from attnscale.experiments import paper_b_laws as pbl
from attnscale.experiments import paper_b_output_law as pbo
from attnscale.experiments import paper_b_phase as pbp
from attnscale.sphere import theory as st
from attnscale.sphere.quadrature import heat_drift_limit_x1x2

SEED = 271828182845904523536028747135266249775


def test_phase_column_is_deterministic_and_tidy():
    kw = dict(
        n=50,
        d=5,
        betas=[0.5, 5.0, 50.0],
        line_gammas=[0.3, 1.0],
        trials=20,
        method="sphere",
        root_seed=SEED,
    )
    a, b = pbp.phase_column(**kw), pbp.phase_column(**kw)
    pd.testing.assert_frame_equal(a, b)
    assert list(a["kind"]) == ["grid"] * 3 + ["line"] * 2
    np.testing.assert_array_equal(a.loc[a["kind"] == "line", "gamma"], [0.3, 1.0])  # exact
    assert a["top_weight_mean"].between(1 / 50, 1).all()
    assert a["spawn_key"].nunique() == 1 and a["root_seed"].iloc[0] == str(SEED)
    # another root seed gives other draws
    c = pbp.phase_column(**{**kw, "root_seed": SEED + 1})
    assert not np.allclose(a["top_weight_mean"], c["top_weight_mean"])


def test_weight_profile_columns_are_consistent():
    df = pbl.weight_profile(
        n=100, d=3, beta_exponent=0.25, trials=30, method="beta", root_seed=SEED
    )
    assert df["ratio_mean"].iloc[0] == pytest.approx(1.0)
    assert np.all(np.diff(df["ratio_mean"]) <= 1e-15)
    assert df["mass_mean"].iloc[-1] == pytest.approx(1.0)
    assert df["m_n"].iloc[0] == pytest.approx(st.m_eff(100, 100**0.25, 0.5, 3))


def test_critical_laws_tables():
    out = pbl.critical_laws(
        d=3,
        n_values=[50, 200],
        gammas=[0.5, 2.0],
        trials=50,
        limit_trials=200,
        method="sphere",
        root_seed=SEED,
    )
    e, s = out["ecdf"], out["summary"]
    for _, g in e.groupby(["stat", "source", "n", "gamma"], dropna=False):
        assert np.all(np.diff(g["cdf"].to_numpy()) >= 0)
        assert g["cdf"].between(0, 1).all()
    top = s[(s["stat"] == "top_weight") & (s["source"] == "finite_n")]
    assert len(top) == 4 and top["ks_vs_limit"].between(0, 1).all()


def test_heat_drift_rows_and_neglected_mass():
    q = [1.0, 1.0, 1.0]
    df = pbd.heat_drift(
        beta=300.0,
        n=20_000,
        q=q,
        target_se=0.05,
        min_contexts=2,
        max_contexts=3,
        cut=40.0,
        root_seed=SEED,
    )
    assert len(df) == df["contexts"].iloc[0] == 3
    assert (df["t_c"] < 2).all() and (df["neglected_mass_bound"] < 1e-12).all()
    assert (df["keys_in_cap"] < 20_000).all()
    out = pbd.heat_drift_summary(csvs=[df], q=q, theory_betas=[10.0, 100.0])
    summ, curve = out["summary"], out["curve"]
    assert summ["ratio_quadrature"].iloc[0] == pytest.approx(
        heat_drift_limit_x1x2(np.ones(3) / np.sqrt(3), 300.0)["ratio"]
    )
    assert list(curve["beta"]) == [10.0, 100.0]


def test_contexts_needed_follows_the_noise_law():
    q = np.ones(3) / np.sqrt(3)
    r1 = pbd.contexts_needed(100.0, 4_000_000, q, 0.02, 1, 10**6)
    r2 = pbd.contexts_needed(200.0, 4_000_000, q, 0.02, 1, 10**6)
    assert r2 / r1 == pytest.approx(4, rel=0.05)  # SE per context grows like beta
    assert pbd.contexts_needed(1e4, 100, q, 0.02, 2, 7) == 7


def test_vector_fields_small():
    out = pbf.vector_fields(
        n=300,
        beta_exponents=[1.0, 0.25],
        n_queries=20,
        sweep_betas=[1.0, 10.0],
        sweep_contexts=2,
        root_seed=SEED,
    )
    p, s = out["panels"], out["sweep"]
    assert set(p["panel"]) == {0, 1} and len(p) == 40
    Y = p[["disp_x", "disp_y", "disp_z"]].to_numpy()
    Q = p[["qx", "qy", "qz"]].to_numpy()
    np.testing.assert_allclose(np.einsum("ij,ij->i", Y, Q), 0, atol=1e-15)  # tangential
    np.testing.assert_allclose(np.hypot(p["disp_east"], p["disp_north"]), np.linalg.norm(Y, axis=1))
    assert s["is_panel"].sum() == 2 * 2 and s["rms_dev_from_mean_field"].notna().sum() >= 4
    # two contexts per beta, with different keys (context 1 has its own spawn key)
    assert sorted(s["context"].unique()) == [0, 1] and s["spawn_key"].nunique() == 2
    by = s.pivot(index="beta", columns="context", values="rms_disp")
    assert not np.allclose(by[0], by[1])


def test_poisson_limit_table_merges_the_line_gammas():
    a = pbp.poisson_limit_table(
        d=5, gammas=[0.1, 1.0], line_gammas=[0.3, 1.0], trials=20, root_seed=SEED
    )
    assert a["gamma"].tolist() == [0.1, 0.3, 1.0]  # sorted, the shared 1.0 once
    b = pbp.poisson_limit_table(d=5, gammas=[0.1, 0.3, 1.0], trials=20, root_seed=SEED)
    pd.testing.assert_frame_equal(a, b)  # one generator per (d, gamma): same rows either way


def test_output_law_tables():
    kw = dict(
        d=5,
        n_values=[10, 1000],
        gammas=[1.0, 3.0],
        trials=60,
        limit_trials=200,
        plot_points=20,
        root_seed=SEED,
    )
    out = pbo.critical_output_law(**kw)
    pd.testing.assert_frame_equal(out["summary"], pbo.critical_output_law(**kw)["summary"])
    s, e = out["summary"], out["ecdf"]
    assert len(s) == 2 * (2 + 2)  # per gamma: limit, limit_repeat, two n
    assert set(s["source"]) == {"limit", "limit_repeat", "finite_n"}
    assert s["spawn_key"].nunique() == len(s)  # every sample has its own generator
    fin = s[s["source"] == "finite_n"]
    assert fin["ks_vs_limit"].between(0, 1).all() and (fin["samples"] == 60).all()
    np.testing.assert_allclose(fin["beta"], fin["gamma"] * fin["n"] ** 0.5)
    # the kept order statistics reproduce the sample ECDF: ranks ceil(j m / k), sorted norms
    for _, g in e.groupby(["gamma", "source", "n"]):
        m = int(g["samples"].iloc[0])
        assert len(g) == 20 and g["rank"].iloc[-1] == m
        assert np.all(np.diff(g["norm"].to_numpy()) >= 0)
    # the second moment of the ECDF table's source samples is the summary's (limit row)
    lim = s[s["source"] == "limit"].iloc[0]
    assert lim["m2_mean"] > 0 and lim["m2_mecke"] > 0


@pytest.mark.parametrize(
    "kw, name",
    [
        ({"d": 2}, "d"),
        ({"n_values": [0]}, r"n_values\[i\]"),
        ({"gammas": [-1.0]}, "gammas"),
        ({"trials": 1}, "trials"),
        ({"plot_points": 1}, "plot_points"),
    ],
)
def test_output_law_bad_input_names_the_argument(kw, name):
    base = dict(d=3, n_values=[10], gammas=[1.0], trials=10, limit_trials=10, root_seed=SEED)
    with pytest.raises(ValueError, match=name):
        pbo.critical_output_law(**{**base, **kw})


def test_output_law_figure_from_tables():
    from matplotlib.figure import Figure

    from attnscale.figures.paper_b_output_law import plot_output_law

    out = [
        pbo.critical_output_law(
            d=d,
            n_values=[10, 100],
            gammas=[1.0],
            trials=40,
            limit_trials=80,
            plot_points=10,
            root_seed=SEED,
        )
        for d in (3, 5)
    ]
    fig = plot_output_law(
        ecdf=[o["ecdf"] for o in out], summary=[o["summary"] for o in out], caption="test"
    )
    assert isinstance(fig, Figure) and len(fig.axes) == 2 * 3
