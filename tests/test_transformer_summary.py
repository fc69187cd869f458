"""The transformer family's summary tables against the library's one copy of each fact
(docs/real-transformer.md#what-is-measured): the critical level of ``attnscale.layer.theory``,
the project's crossing function, the three definitions of s* and the layer aggregates."""

from __future__ import annotations

import numpy as np
import pytest

from attnscale.core.crossings import first_crossing
from attnscale.experiments import transformer_definitions as tdef
from attnscale.experiments.transformer_summary import summaries
from attnscale.layer import theory
from attnscale.layer.observables import critical_level
from attnscale.transformer import probes

MS = np.geomspace(1 / 16, 16, 9)


def _curve(s0, top, width=1.0):
    """A logistic step in ln s from 0 to ``top``, centred at ``s0``."""
    return top / (1.0 + np.exp(-(np.log(MS) - np.log(s0)) * 4.4 / width))


def _run(n, rng, W=6, L=2, H=3, B=2):
    """A synthetic ``transformer_heads`` output: every head a logistic step, with noise."""
    s0 = np.exp(rng.uniform(-1, 1, (L, H)))
    top = rng.uniform(0.3, 1.0, (L, H))
    lam = np.stack([[[_curve(s0[ly, h], top[ly, h]) for h in range(H)] for ly in range(L)]] * W)
    lam = lam + 0.01 * rng.standard_normal(lam.shape)
    run = {
        "n": np.int64(n),
        "multipliers": MS,
        "lambda": lam,
        "lambda_inf": np.broadcast_to(top, (W, L, H)) + 0.0,
        "lambda_text": lam * 1.1,
        "lambda_text_inf": np.broadcast_to(top * 1.1, (W, L, H)) + 0.0,
        "lambda_band": np.repeat(lam[:, :, :, None, :], B, axis=3),
        "lambda_band_inf": np.repeat(np.broadcast_to(top, (W, L, H))[..., None], B, axis=3) + 0.0,
        "lambda_fixed": lam,
        "lambda_fixed_inf": np.broadcast_to(top, (W, L, H)) + 0.0,
        "self_weight": 0.05 + 0.0 * lam,
        "rho_hat": rng.uniform(0.1, 0.3, (W, L)),
        "d_model": np.int64(16),
        "d_head": np.int64(4),
    }
    for k in ("self_max", "top_key_share", "special_mass", "sd_self", "sd_cross", "rho_q", "rho_k"):
        run[k] = rng.uniform(0, 0.5, (W, L, H))
    run["s_self"], run["s_cross"] = 1.0 + run["rho_q"], run["rho_k"]
    return run


@pytest.fixture(scope="module")
def tables():
    rng = np.random.default_rng(5)
    heads = [_run(n, rng) for n in (16, 32)]
    g = {
        "multipliers": np.array([0.5, 1.0, 2.0]),
        "lambda": rng.uniform(0, 1, (4, 3, 2, 3)),
        "self_weight": rng.uniform(0, 1, (4, 3, 2, 3)),
        "rho_hat": rng.uniform(0.05, 0.4, (4, 3, 2)),
        "n": np.int64(16),
    }
    kw = {"block": 2, "resamples": 12, "n_ref": 16, "n_train": 24, "calibration_replicates": 2}
    return heads, summaries(heads=heads, global_run=g, root_seed=1, position_band=6, **kw)


def test_critical_levels_are_the_theory_modules(tables):
    """A planted copy of the level (say 1/(1 + 2.9 rho)) in any column fails here."""
    _, out = tables
    g = out["global_"]
    want = [theory.critical_lambda(r) for r in g["rho_hat"]]
    np.testing.assert_allclose(g["critical_lambda"], want, rtol=1e-13)
    lay = out["layers"]
    H = out["heads"]
    rho = H.groupby(["n", "layer"])["rho_hat"].first()
    got = lay.groupby(["n", "layer"])["critical_ratio"].first()
    want = [critical_level("lambda", rho[k]) for k in got.index]
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-13)


def test_each_definition_is_the_crossing_of_its_curve(tables):
    heads, out = tables
    H = out["heads"]
    for run in heads:
        n = int(run["n"])
        rho = run["rho_hat"].mean(0)
        for (ly, h), row in H[H["n"] == n].set_index(["layer", "head"]).iterrows():
            lev = theory.critical_lambda(rho[ly])
            lam = run["lambda"][:, ly, h].mean(0)
            inf = run["lambda_inf"][:, ly, h].mean()
            cases = {
                "s_star": lam / inf,
                "s_star_paper_a": lam,
                "s_star_text_keys": run["lambda_text"][:, ly, h].mean(0),
            }
            for col, curve in cases.items():
                hit = first_crossing(MS, curve, lev, log_x=True)
                want = np.nan if hit is None else hit.x
                np.testing.assert_allclose(row[col], want, rtol=1e-12, equal_nan=True)
            lo, hi = (first_crossing(MS, lam / inf, v, log_x=True) for v in tdef.WIDTH_QUARTILES)
            want = np.log(hi.x / lo.x) if lo and hi else np.nan
            np.testing.assert_allclose(row["width"], want, rtol=1e-12, equal_nan=True)


def test_layer_aggregates_count_and_median_with_never_above_the_grid(tables):
    _, out = tables
    D, H = out["definitions"], out["heads"]
    for (n, ly), row in D[D["definition"] == "paper_a"].set_index(["n", "layer"]).iterrows():
        sub = H[(H["n"] == n) & ((H["layer"] == ly) | (ly < 0))]
        s = sub["s_star_paper_a"].to_numpy()
        assert row["crossing"] == np.isfinite(s).sum()
        assert row["crossing"] + row["never"] + row["beyond_grid"] == len(sub)
        med = np.median(np.where(np.isfinite(s), s, np.inf))
        assert row["s_star_median"] == pytest.approx(med) or (
            np.isinf(med) and np.isinf(row["s_star_median"])
        )
        assert row["past_critical"] == np.sum(s < 1)


def test_layer_rows_ratio_and_closer_count():
    est = np.array([[1.0, 2.0, np.nan, 4.0]])
    ref = np.array([[1.0, 1.0, 1.0, 2.0]])
    boot = np.stack([est, est * 1.1, est * 0.9])
    rb = np.stack([ref] * 3)
    rows = tdef.layer_rows(est, boot, ref, rb, np.array([[False, False, True, False]]), 2.0)
    r = rows[0]
    assert (r["crossing"], r["never"], r["beyond_grid"]) == (3, 1, 0)
    assert r["ratio_median"] == pytest.approx(2.0)  # ratios 1, 2, 2
    assert r["closer_to_constant"] == 1  # only the ratio 1 is nearer 1 than the rule's 2
    assert r["s_star_median"] == pytest.approx(3.0)  # 1, 2, 4, inf
    assert r["ratio_median_se"] > 0


def test_band_masks_cut_the_text_positions_relative_to_n():
    rows = np.arange(1, 31)
    m = probes.band_masks(32, rows, 3)
    assert m.shape == (3, 30) and (m.sum(0) == 1).all()
    assert [int(rows[k].min()) for k in m] == [1, 11, 21]


def test_parts_are_disjoint_runs_of_windows_and_the_calibration_is_a_ratio():
    from attnscale.experiments.transformer_parts import part_calibration, split_parts

    run = _run(16, np.random.default_rng(2), W=6)
    parts = split_parts(run, 3)
    assert len(parts) == 3 and all(p["lambda"].shape[0] == 2 for p in parts)
    np.testing.assert_array_equal(parts[1]["lambda"], run["lambda"][2:4])
    assert parts[0]["multipliers"] is run["multipliers"]
    with pytest.raises(ValueError, match="transformer.calibration_parts"):
        split_parts(run, 4)  # one window per part
    out = part_calibration(heads=[run], parts=3, block=1, resamples=12, root_seed=1)
    lam = out[(out["quantity"] == "lambda_1") & (out["layer"] == -1)].iloc[0]
    assert lam["heads"] > 0 and lam["se_ratio"] > 0
