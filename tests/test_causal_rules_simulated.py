"""Real models' scaling rules simulated under a causal mask
(docs/realistic-attention.md#real-models-scaling-rules-simulated): SSMax, per-position betas, the
last-block entry against a brute-force full causal pass, bad input."""

import numpy as np
import pandas as pd
import pytest

from attnscale.core.seeding import job_rng
from attnscale.experiments import causal as exp_causal
from attnscale.experiments import causal_rules_simulated as rs
from attnscale.figures.causal import plot_causal
from attnscale.figures.causal_rules_simulated import plot_rules_simulated
from attnscale.layer import theory, tokens
from attnscale.layer.causal import angle_ratio as causal_lambda
from attnscale.layer.causal import attention as causal
from attnscale.layer.scores import scaling_rules as sr


def test_ssmax_is_s_log_n():
    n = np.array([1.0, 2.0, 1024.0, 131072.0])
    np.testing.assert_allclose(sr.ssmax(n), 0.43 * np.log(n), rtol=1e-15)
    assert sr.SSMAX_S == 0.43
    rule = sr.rule_by_key("ssmax")
    assert rule.calibration == "absolute"
    # absolute: beta = m(n) whatever rho is
    np.testing.assert_allclose(sr.rule_betas(rule, n, 0.2), sr.rule_betas(rule, n, 0.8))


def test_calibration_a_is_critical_at_L():
    """beta(L) = gamma_c ln L m(L), and m(L) = 1 for Qwen / LongRoPE: exactly critical at L."""
    for key in ("qwen", "longrope"):
        rule = sr.rule_by_key(key)
        b = sr.rule_betas(rule, np.array([rule.L]), 0.5)[0]
        assert b == pytest.approx(theory.gamma_c(0.5) * np.log(rule.L), rel=1e-14)


def test_rule_table_unchanged_by_new_fields():
    """The calibration-A table keeps its seven rules (SSMax lives in ABSOLUTE_RULES)."""
    assert len(sr.RULES) == 7 and all(r.calibration == "A" for r in sr.RULES)
    assert set(sr.RULE_KEYS) == {r.key for r in sr.RULES} | {"ssmax"}


def test_unknown_rule_is_refused_before_work():
    with pytest.raises(ValueError, match=r"rules must be one of \[.*'ssmax'.*\], got 'gpt5'"):
        rs.rules_simulated(
            n=64, d=8, rhos=[0.5], rules=["qwen", "gpt5"], block=8, trials=1, root_seed=1
        )
    with pytest.raises(ValueError, match="block must be <= 64"):
        rs.rules_simulated(n=64, d=8, rhos=[0.5], rules=["qwen"], block=65, trials=1, root_seed=1)
    with pytest.raises(ValueError, match="rho must lie in"):
        sr.rule_betas(sr.rule_by_key("qwen"), [10.0], 1.0)


def test_last_block_against_full_causal_pass():
    """The entry's block quantities equal those of a full causal forward pass on the same draw
    (regenerated from the documented spawn key); 1e-10: rounding of sums of n terms <= 1."""
    n, d, block, rho = 96, 8, 16, 0.5
    keys = ["qwen", "yarn_dynamic", "ssmax"]
    df = rs.rules_simulated(n=n, d=d, rhos=[rho], rules=keys, block=block, trials=2, root_seed=7)
    assert len(df) == 2 * 3
    for trial in range(2):
        X = tokens.near_simplex(n, d, rho, job_rng(7, rs.draw_key(d, rho, trial)))
        pos = np.arange(1, n + 1, dtype=float)
        for key in keys:
            beta = sr.rule_betas(sr.rule_by_key(key), pos, rho)  # calibrated at the nominal rho
            Xp, aii = causal.forward_rows(X, beta, return_self_weight=True)
            row = df[(df.rule_key == key) & (df.trial == trial)].iloc[0]
            assert row["self_weight"] == pytest.approx(aii[-block:].mean(), abs=1e-12)
            ref = causal_lambda.pair_ratio_mean(X[-block:], Xp[-block:])
            assert row["lambda_block"] == pytest.approx(ref, abs=1e-10)
            assert row["beta_last"] == pytest.approx(beta[-1], rel=1e-14)


def test_figures_render():
    """Both plot entries run on tiny tables and return one figure each."""
    rules = rs.rules_simulated(
        n=64, d=8, rhos=[0.5], rules=list(sr.RULE_KEYS), block=8, trials=2, root_seed=3
    )
    summary = rs.rules_simulated_summary(data=[rules, rules.assign(n=128)])
    fig = plot_rules_simulated(data=summary, caption="test")
    assert len(fig.axes) == 3
    lam = exp_causal.causal_lambda(
        n=32, d=8, rhos=[0.3, 0.6], gammas=[0.5, 2.0, 6.0], trial=0, root_seed=3
    )
    sw = exp_causal.causal_self_weight(
        n=32, d=8, rhos=[0.3, 0.6], gamma_factors=[0.67, 1.0], trial=0, root_seed=3, bins=6
    )
    summary = exp_causal.causal_summary(
        data=[lam, lam.assign(trial=1)], self_weight=[sw, sw.assign(trial=1)]
    )
    fig = plot_causal(
        data=summary["lambda_summary"], self_weight=summary["self_weight_summary"], caption="t"
    )
    assert len(fig.axes) >= 6
    # what is drawn is the table: (a, b) the colour maps hold lambda_mean on the (gamma, rho)
    # grid; (c) the simulated means and the causal simplex line at the slice's rho
    from drawn import errorbars, lines

    lam = summary["lambda_summary"]
    grid = lam[lam["kind"] == "grid"]
    for ax, s in zip(fig.axes[:2], ("global", "position"), strict=True):
        sub = grid[grid["scaling"] == s]
        want = sub.pivot(index="gamma", columns="rho", values="lambda_mean").sort_index()
        mesh = ax.collections[0].get_array().reshape(want.shape)
        np.testing.assert_array_equal(mesh, want[sorted(want.columns)].to_numpy())
    rho_s = grid["rho"].unique()[np.argmin(np.abs(grid["rho"].unique() - 0.5))]
    panel = next(a for a in fig.axes if errorbars(a))
    for s in ("global", "position"):
        sub = grid[(grid["scaling"] == s) & (grid["rho"] == rho_s)].sort_values("gamma")
        x, y = errorbars(panel)[f"simulated, {s}"]
        np.testing.assert_array_equal(x, sub["gamma"].to_numpy())
        np.testing.assert_array_equal(y, sub["lambda_mean"].to_numpy())
        _, y = lines(panel)[f"causal simplex at $\\hat\\rho$, {s}"]
        np.testing.assert_array_equal(y, sub["lambda_simplex_causal_mean"].to_numpy())


def test_rules_simulated_summary_equals_plain_means_and_standard_errors():
    """The figure data of the simulated rules are the per-draw tables reduced over draws: means
    and sample SEs (ddof = 1, nan for one draw) recomputed here with numpy, rules in the order
    of the per-draw tables."""
    keys = ["ssmax", "qwen", "llama4"]
    tabs = [
        rs.rules_simulated(n=n, d=6, rhos=[0.3, 0.6], rules=keys, block=4, trials=3, root_seed=11)
        for n in (16, 32)
    ]
    out = rs.rules_simulated_summary(data=tabs)
    raw = pd.concat(tabs, ignore_index=True)
    assert len(out) == 2 * 2 * len(keys) and (out["trials"] == 3).all()
    assert list(dict.fromkeys(out["rule"])) == list(dict.fromkeys(raw["rule"]))
    for _, row in out.iterrows():
        g = raw[(raw.rho == row.rho) & (raw.rule == row.rule) & (raw.n == row.n)]
        for col in rs.SUMMARY_COLUMNS:
            v = g[col].to_numpy()
            assert row[f"{col}_mean"] == pytest.approx(v.mean(), rel=1e-14, abs=1e-300)
            se = np.std(v, ddof=1) / np.sqrt(v.size)
            assert row[f"{col}_se"] == pytest.approx(se, rel=1e-12, abs=1e-15)
    one = rs.rules_simulated_summary(data=tabs[0][tabs[0].trial == 0])
    assert one["self_weight_se"].isna().all() and (one["trials"] == 1).all()
    with pytest.raises(ValueError, match="columns missing"):
        rs.rules_simulated_summary(data=tabs[0].drop(columns="lambda_block"))


def test_causal_summary_equals_plain_means_and_standard_errors():
    """The figure data of the causal figure are the per-draw tables reduced over draws: means and
    sample SEs (ddof = 1) recomputed here with numpy; critical rows kept one per draw."""
    lams = [
        exp_causal.causal_lambda(n=24, d=6, rhos=[0.4], gammas=[0.5, 3.0], trial=t, root_seed=5)
        for t in range(3)
    ]
    sws = [
        exp_causal.causal_self_weight(
            n=24, d=6, rhos=[0.4], gamma_factors=[1.0], trial=t, root_seed=5, bins=4
        )
        for t in range(3)
    ]
    out = exp_causal.causal_summary(data=lams, self_weight=sws)
    lam = out["lambda_summary"]
    for s in ("global", "position"):
        for g in (0.5, 3.0):
            vals = np.array(
                [
                    x[(x.kind == "grid") & (x.scaling == s) & (x.gamma == g)]["lambda"].item()
                    for x in lams
                ]
            )
            row = lam[(lam.kind == "grid") & (lam.scaling == s) & (lam.gamma == g)].iloc[0]
            assert row["lambda_mean"] == pytest.approx(vals.mean(), rel=1e-14)
            assert row["lambda_se"] == pytest.approx(vals.std(ddof=1) / np.sqrt(3), rel=1e-12)
            assert row["trials"] == 3
    assert (lam.kind == "critical").sum() == sum((x.kind == "critical").sum() for x in lams)
    sw = out["self_weight_summary"]
    first = sw[(sw.scaling == "global")].sort_values("position").iloc[-1]
    vals = np.array(
        [x[(x.scaling == "global")].sort_values("position")["self_weight"].iloc[-1] for x in sws]
    )
    assert first["self_weight_mean"] == pytest.approx(vals.mean(), rel=1e-14)
    assert first["self_weight_se"] == pytest.approx(vals.std(ddof=1) / np.sqrt(3), rel=1e-12)


def test_contexts_are_prefixes_of_longer_ones():
    """Common random numbers across n: the n-token context is the first n tokens of a longer
    one drawn from the same key (z_0 first, then the rows of Z in order)."""
    key = rs.draw_key(16, 0.5, 3)
    short = tokens.near_simplex(64, 16, 0.5, job_rng(11, key))
    long = tokens.near_simplex(200, 16, 0.5, job_rng(11, key))
    assert np.array_equal(short, long[:64])


@pytest.mark.parametrize(
    "section, needle",
    [
        (
            {"rules_simulated": {"block": 2048}},
            "causal.rules_simulated.block must be <= the smallest",
        ),
        ({"self_weight": {"gamma_factors": [0.5, 2.0]}}, "causal.self_weight.gamma_factors"),
        ({"rules_simulated": {"rules": ["qwen", "gpt5"]}}, "'gpt5' is not one of"),
        (
            {"rules_simulated": {"d": 2}},
            "causal.rules_simulated.d must be one of integers in [3, 4096]",
        ),
        ({"rho": [0.5, 1.2]}, "causal.rho must be a grid of finite values in (0, 1)"),
    ],
)
def test_bad_causal_config_names_the_key(section, needle):
    """Bad values of the ``causal`` section stop the configuration check with the key's name."""
    import copy
    from pathlib import Path

    import yaml

    from attnscale.pipeline import config

    repo = Path(__file__).resolve().parents[1]
    raw = yaml.safe_load((repo / "config.yaml").read_text())
    raw = copy.deepcopy(raw)
    for k, v in section.items():
        if isinstance(v, dict):
            raw["causal"][k].update(v)
        else:
            raw["causal"][k] = v
    with pytest.raises(Exception) as err:  # ConfigError, or the schema validator's error
        config.load(raw, repo / "workflow/schemas/config.schema.yaml")
    assert needle in str(err.value)


def test_control_variate_keeps_the_mean_and_removes_the_z0_spread():
    """``self_weight_cv = self_weight - g(||z_0||) + E g``: the control ``g`` (the finite-d
    self-weight given ``||z_0||``) must average to ``E g`` over draws (within 4 SE of the mean of
    40 draws: otherwise the estimator would be biased), and the spread over draws must shrink
    (at d = 32 the z_0 part is most of it: at least a factor 2 here, far more at d = 128)."""
    df = rs.rules_simulated(
        n=256, d=32, rhos=[0.5], rules=["qwen", "yarn_dynamic"], block=16, trials=40, root_seed=7
    )
    for _, g in df.groupby("rule_key"):
        control = g["self_weight_given_finite_d"] - g["self_weight_finite_d"]
        assert abs(control.mean()) <= 4 * control.std(ddof=1) / np.sqrt(len(g))
        assert np.allclose(g["self_weight_cv"], g["self_weight"] - control, rtol=0, atol=1e-15)
        assert g["self_weight_cv"].std(ddof=1) < 0.5 * g["self_weight"].std(ddof=1)
    # the draws are those of tokens.near_simplex (bit for bit), as before the control variate
    X = tokens.near_simplex(256, 32, 0.5, job_rng(7, rs.draw_key(32, 0.5, 3)))
    row = df[(df["trial"] == 3)].iloc[0]
    assert row["rho_hat"] == tokens.mean_cosine(X)
