"""eta's mean field against the exact eta (rule finite_d_eta_check) and the widths on fixed-norm
tokens (rule sharpness_fixed_norm): their tables, findings and configuration checks (issue 45;
docs/finite-d.md#mean-field-eta-against-the-exact-eta,
docs/long-context.md#the-width-on-fixed-norm-tokens)."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import yaml

from attnscale.core.seeding import spawn_key
from attnscale.experiments.findings import finite_d_eta, sharpness_fixed_norm
from attnscale.experiments.findings.record import evaluate
from attnscale.experiments.finite_d_eta_check import eta_check
from attnscale.experiments.paper_a_tokens import draw_tokens, tokens_at
from attnscale.layer.dense.eta_exact import eta_exact_grid
from attnscale.layer.finite_d.eta import eta_mean_field
from attnscale.pipeline.io import params_hash


def test_eta_check_pairs_the_exact_eta_with_the_mean_field_of_each_draw():
    n, d, rho, x = 32, 8, 0.5, [1.0, 1.5]
    t = eta_check(n=n, d=d, rho=rho, x=x, draws=2, root_seed=7)
    assert len(t) == 4 and sorted(t["trial"].unique()) == [0, 1]
    beta = np.asarray(x) * np.log(n) / (1 - rho)
    draw = draw_tokens(n=n, d=d, trial=1, root_seed=7)
    r0 = float(np.linalg.norm(draw["z0"]))
    one = t[t["trial"] == 1]
    assert np.allclose(one["r0"], r0)
    assert np.allclose(one["eta_exact"], eta_exact_grid(tokens_at(draw, rho)["X"], beta))
    assert np.allclose(one["eta_mean_field"], eta_mean_field(n, d, rho, beta, r0=r0))
    assert np.allclose(t["diff"], t["eta_exact"] - t["eta_mean_field"])
    # the table's columns and provenance: the documented parameters, the draws' spawn keys
    assert list(t.columns) == [
        *("d", "n", "rho", "trial", "r0", "rho_hat", "x", "beta"),
        *("eta_exact", "eta_mean_field", "diff"),
        *("root_seed", "spawn_key", "params_hash", "attnscale_version", "git_commit"),
    ]
    params = {"n": n, "d": d, "rho": rho, "x": x, "draws": 2}
    assert (t["params_hash"] == params_hash(params)).all()
    keys = [spawn_key("paper_a/tokens", n, d, k) for k in range(2)]
    assert t["spawn_key"].iloc[0] == ";".join("-".join(map(str, k)) for k in keys)


def test_eta_check_at_rho_zero_uses_one_mean_field():
    t = eta_check(n=16, d=8, rho=0.0, x=[1.0], draws=2, root_seed=7)
    assert t["eta_mean_field"].nunique() == 1
    assert np.isclose(t["eta_mean_field"].iloc[0], eta_mean_field(16, 8, 0.0, np.log(16)))


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"rho": 1.0}, "rho"),
        ({"draws": 1}, "draws"),
        ({"x": [1.0, 0.5]}, "increasing"),
        ({"n": 10000}, "n"),
    ],
)
def test_eta_check_refuses_bad_input(kw, match):
    args = {"n": 16, "d": 8, "rho": 0.5, "x": [1.0], "draws": 2, "root_seed": 1, **kw}
    with pytest.raises(ValueError, match=match):
        eta_check(**args)


def _eta_table(diffs, mf=2.0, d=8, rho=0.5, x=1.0):
    k = len(diffs)
    return pd.DataFrame(
        {
            "d": d,
            "n": 64,
            "rho": rho,
            "trial": range(k),
            "x": x,
            "eta_exact": mf + np.asarray(diffs),
            "eta_mean_field": mf,
            "diff": diffs,
        }
    )


def test_eta_findings_are_the_paired_mean_and_its_se():
    diffs = [0.01, 0.03, -0.01, 0.05]
    data = [_eta_table(diffs), _eta_table([0.001, -0.001], d=64, rho=0.0)]
    s = finite_d_eta.summary(data)
    r = s[s["d"] == 8].iloc[0]
    se = np.std(diffs, ddof=1) / 2
    assert np.isclose(r["diff"], 0.02) and np.isclose(r["se"], se)
    assert np.isclose(r["rel"], 1.0) and np.isclose(r["rel_se"], 100 * se / 2.0)
    # every finding but the off-diagonal share (the library's, at fixed points)
    declared = [f for f in finite_d_eta.DECLARED if not f.key.endswith("off_share")]
    got = {f.key: f for f in evaluate(declared, {"data": data})}
    assert got["finite_d.eta_mean_field_within"].value == [2, 2]
    assert np.isclose(got["finite_d.eta_mean_field_small_d"].value[0], 1.0)
    assert np.isclose(got["finite_d.eta_mean_field_rho0"].value[0], 0.0)
    assert np.isclose(got["finite_d.eta_mean_field_max_rel"].value, 0.0)
    assert len(got["finite_d.eta_mean_field_table"].value) == 2


def _transitions(obs, d, rho, n, width, se, wfd):
    return pd.DataFrame(
        {
            "observable": [obs],
            "d": d,
            "rho": rho,
            "n": n,
            "trials": 4,
            "width": width,
            "width_se": se,
            "width_finite_d": wfd,
        }
    )


def test_fixed_norm_bias_is_the_inverse_variance_mean_per_rho():
    data = [
        _transitions("lambda", 128, 0.8, 1024, 0.99, 0.01, 1.0),  # -1 % +- 1 %
        _transitions("lambda", 128, 0.8, 4096, 0.97, 0.02, 1.0),  # -3 % +- 2 %
        _transitions("lambda", 128, 0.5, 1024, 1.01, 0.01, 1.0),  # +1 % +- 1 %
    ]
    got = {f.key: f for f in sharpness_fixed_norm.fixed_norm_findings(data=data)}
    bias = got["sharpness.fixed_norm_width_bias_lambda"]
    w = np.array([1.0, 0.25])
    assert np.allclose(bias.value, [1.0, (w @ [-1.0, -3.0]) / w.sum()])
    assert np.allclose(bias.se, [1.0, 1 / np.sqrt(w.sum())])
    assert got["sharpness.fixed_norm_width_bias_eta"].value is None  # no eta: not computed
    # two points of one n at one rho share their draws: not pooled
    data.append(_transitions("lambda", 128, 0.5, 1024, 1.0, 0.01, 1.0))
    got = {f.key: f for f in sharpness_fixed_norm.fixed_norm_findings(data=data)}
    assert got["sharpness.fixed_norm_width_bias_lambda"].value is None


@pytest.mark.parametrize(
    ("key", "point", "match"),
    [
        ("finite_d.eta_check.points", {"d": 2, "rho": 0.5, "draws": 4}, r"points\[0\]\.d"),
        ("finite_d.eta_check.points", {"d": 8, "rho": 1.0, "draws": 4}, r"points\[0\]\.rho"),
        ("finite_d.eta_check.points", {"d": 8, "rho": 0.5, "draws": 1}, r"points\[0\]\.draws"),
        (
            "sharpness.fixed_norm",
            {"d": 128, "n": 64, "rho": 0.5, "draws": 4, "rows": 128},
            r"fixed_norm\[0\]\.rows",
        ),
        (
            "sharpness.fixed_norm",
            {"d": 128, "n": 64, "rho": 0.0, "draws": 4, "rows": 16},
            r"fixed_norm\[0\]\.rho",
        ),
    ],
)
def test_config_refuses_bad_points(key, point, match):
    from pathlib import Path

    from attnscale.pipeline.config import ConfigError, load

    repo = Path(__file__).resolve().parents[1]
    cfg = copy.deepcopy(yaml.safe_load((repo / "config.yaml").read_text()))
    section, *rest = key.split(".")
    node = cfg[section]
    for part in rest[:-1]:
        node = node[part]
    node[rest[-1]] = [point]
    with pytest.raises(ConfigError, match=match):
        load(cfg, schema=repo / "workflow/schemas/config.schema.yaml")


def test_the_smoke_run_tables(smoke_run):
    """The smoke run's tables of both rules: one per configured point, every draw, the fixed-norm
    rows drawn from their own stream."""
    from attnscale.core.seeding import stable_id
    from attnscale.experiments.sharpness_fixed_norm import STREAM

    work = smoke_run["dir"] / "results"
    smoke = yaml.safe_load((smoke_run["dir"] / "tests/smoke.yaml").read_text())
    for p in smoke["finite_d"]["eta_check"]["points"]:
        t = pd.read_csv(work / f"finite_d/eta_check/d{p['d']}_rho{float(p['rho']):.4f}.csv")
        assert t["trial"].nunique() == p["draws"]
        assert np.allclose(t["diff"], t["eta_exact"] - t["eta_mean_field"])
    for p in smoke["sharpness"]["fixed_norm"]:
        name = f"d{p['d']}_n{p['n']}_rho{float(p['rho']):.4f}.csv"
        t = pd.read_csv(work / "sharpness/fixed_norm" / name)
        assert set(sharpness_fixed_norm.OBSERVABLES) <= set(t["observable"])
        assert (t["trials"] == p["draws"]).all()
        assert str(t["spawn_key"].iloc[0]).startswith(f"{stable_id(STREAM)}-")
