"""The width's long-baseline slope and the joint test against the finite-d theory (issue 45;
docs/long-context.md#the-width-explained):

* the weighted slope recovers the slope of a line exactly, and over repeated noisy draws its
  mean is the slope and its stated SE the spread of the estimates (within their Monte Carlo
  error);
* on a series whose widths are ``c (ln n)^s`` the fitted slope is ``s``, the theory's and the
  simplex map's are those of their columns, and widths equal to the theory's give ``z = 0``,
  ``chi^2 = 0`` and ``p = 1``; widths 10 SE off at one n fail the joint test;
* the findings compute on such a table and say "not computed" on an empty one;
* the quadrature error of eta's mean field (finding ``finite_d.eta_quadrature_error``) is the
  library's difference of the two key grids.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnscale.experiments.findings.sharpness_baseline import baseline_findings
from attnscale.experiments.sharpness_baseline import baseline_slopes, weighted_slope


def test_the_weighted_slope_and_its_se():
    t = np.log(np.log([2.0**16, 2.0**18, 2.0**20]))
    se = np.array([0.01, 0.02, 0.015])
    s, _ = weighted_slope(t, 1.5 - 0.6 * t, se)
    assert s == pytest.approx(-0.6, abs=1e-12)
    rng = np.random.default_rng(45)
    fits = np.array(
        [weighted_slope(t, 1.5 - 0.6 * t + se * rng.standard_normal(3), se) for _ in range(4000)]
    )
    # 4000 draws: the mean within 4 of its SEs, the spread within 5 % (the sd's own SE is ~1.1 %)
    assert abs(fits[:, 0].mean() + 0.6) < 4 * fits[0, 1] / np.sqrt(len(fits))
    assert fits[:, 0].std() == pytest.approx(fits[0, 1], rel=0.05)


def _series(slope=-0.6, off=0.0):
    ns = [2**10, 2**12, 2**14, 2**16, 2**18, 2**20]
    rows = []
    for obs in ("lambda", "eta", "self_weight"):
        for n in ns:
            w = 2.0 * np.log(n) ** slope
            rows.append(
                {
                    "d": 128,
                    "rho": 0.5,
                    "observable": obs,
                    "n": n,
                    "width": w * (1 + (off if n == 2**18 else 0.0)),
                    "width_se": 0.01 * w,
                    "width_finite_d": w,
                    "width_simplex": 3.0 / np.log(n),
                }
            )
    return pd.DataFrame(rows)


def test_the_baseline_slopes_of_a_known_series():
    b = baseline_slopes(_series())
    assert len(b) == 3 and set(b["n_lo"]) == {2**16} and set(b["n_hi"]) == {2**20}
    np.testing.assert_allclose(b["slope"], -0.6, atol=1e-12)
    np.testing.assert_allclose(b["slope_finite_d"], -0.6, atol=1e-12)
    np.testing.assert_allclose(b["slope_simplex"], -1.0, atol=1e-12)
    np.testing.assert_allclose(b["z"], 0.0, atol=1e-9)
    np.testing.assert_allclose(b["chi2"], 0.0, atol=1e-18)
    assert (b["chi2_dof"] == 6).all() and (b["chi2_p"] == 1.0).all()
    off = baseline_slopes(_series(off=0.1))  # 10 % off at one n: 10 SE
    assert (off["chi2_p"] < 1e-6).all()
    with pytest.raises(ValueError, match="points"):
        baseline_slopes(_series(), points=1)


def test_the_baseline_findings():
    got = {f.key: f for f in baseline_findings(transitions=_series())}
    assert got["sharpness.baseline_slope_lambda"].value == pytest.approx([-0.6])
    assert got["sharpness.baseline_slope_within"].value == [3, 3]
    assert got["sharpness.width_joint_pass"].value == [3, 3]
    assert len(got["sharpness.baseline_table"].value) == 3
    empty = baseline_findings(transitions=_series().iloc[:0])
    assert all(f.value is None and "not computed" in f.note for f in empty)


def test_the_quadrature_finding_is_the_library_difference(monkeypatch):
    """finite_d.eta_quadrature_error (issue 45): the finding is the difference of the standard
    and the fine key grid of eta's mean field, a small fraction of eta (at one point here)."""
    from attnscale.experiments.findings import quadrature
    from attnscale.layer.finite_d.eta import eta_mean_field

    monkeypatch.setattr(quadrature, "QUADRATURE_POINTS", ((1024, 32, 0.8),))
    monkeypatch.setattr(quadrature, "QUADRATURE_X", (1.0, 2.0))
    (f,) = quadrature.quadrature_findings(theory=pd.DataFrame())
    beta = np.array([1.0, 2.0]) * np.log(1024) / 0.2
    fine = eta_mean_field(1024, 32, 0.8, beta, r0=1.0, quadrature="fine")
    std = eta_mean_field(1024, 32, 0.8, beta, r0=1.0)
    assert f.value == pytest.approx([np.max(np.abs(std - fine))])
    assert 0 < f.value[0] < 0.01 * fine.max()
