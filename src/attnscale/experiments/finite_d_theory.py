"""Finite-d theory for the figures and tables of issue 9 (docs/finite-d.md): the transition
figure's theory table, the critical line gamma*(n, d, rho) over a rho grid, and the theory of
one token draw conditioned on its common vector's norm (the theorem table's finite-d columns).

All values come from :mod:`attnscale.layer.finite_d`; this module only tabulates them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.validation import check_real, check_rhos, check_vector
from attnscale.layer.theory import gamma_c
from attnscale.pipeline.io import with_job_provenance

__all__ = [
    "LINE_NODES",
    "gamma_star_line",
    "eta_star_line",
    "figure_line",
    "transition_theory",
    "theory_given_draw",
]

#: Nodes in rho at which :func:`gamma_star_line` evaluates the theory (the rest is interpolated).
LINE_NODES = 6


def gamma_star_line(n: int, d: int, rho, nodes: int = LINE_NODES) -> np.ndarray:
    """The finite-d critical line ``gamma*(n, d, rho)`` at every ``rho`` of a grid.

    With more than ``nodes`` grid values, ``attnscale.layer.finite_d.critical_gamma`` is evaluated at
    ``nodes`` equally spaced values spanning the grid and the smooth, O(1) ratio
    ``gamma* / gamma_c = gamma* (1 - rho)`` is interpolated by a cubic spline (each evaluation
    costs about 0.7 CPU-s). Against direct evaluations on Figure 1's rho range (0.05 .. 0.9,
    n = 1024) the line is within 6e-4 (d = 32) and 2e-4 (d = 512) relative with 6 nodes, the
    same as with 8 or 12 (the theory's own root tolerance dominates); at the nodes it is exact
    (tests/test_finite_d_experiments.py).
    """
    from scipy.interpolate import CubicSpline

    from attnscale.layer import finite_d

    rhos = check_rhos(rho)
    if rhos.size <= nodes:
        return np.array([finite_d.critical_gamma(n, d, float(r)) for r in rhos])
    xs = np.linspace(rhos.min(), rhos.max(), nodes)
    ratio = np.array([finite_d.critical_gamma(n, d, float(x)) * (1.0 - x) for x in xs])
    return CubicSpline(xs, ratio)(rhos) / (1.0 - rhos)


def eta_star_line(n: int, d: int, rho, nodes: int = LINE_NODES) -> np.ndarray:
    """eta's finite-d critical line: the ``gamma`` where the mean-field eta over its limit is 1/4
    (:func:`attnscale.layer.finite_d.eta.eta_critical_beta`, averaged over ``||z_0||``;
    docs/finite-d.md#mean-field-for-eta) at every ``rho`` of a grid, by the nodes and spline of
    :func:`gamma_star_line` (each root costs about 3.5 CPU-s)."""
    from scipy.interpolate import CubicSpline

    from attnscale.layer.finite_d.eta import eta_critical_beta

    rhos = check_rhos(rho)

    def ratio(x):
        return eta_critical_beta(n, d, float(x)) * (1.0 - x) / np.log(n)

    if rhos.size <= nodes:
        return np.array([ratio(r) for r in rhos]) / (1.0 - rhos)
    xs = np.linspace(rhos.min(), rhos.max(), nodes)
    return CubicSpline(xs, [ratio(x) for x in xs])(rhos) / (1.0 - rhos)


def figure_line(*, data: pd.DataFrame, points: int = 200) -> pd.DataFrame:
    """The finite-d critical line drawn over Figures 1 and 2 (docs/finite-d.md): for every
    panel ``d >= 3`` of the figure data ``data`` (columns ``d``, ``n``, ``rho``),
    ``gamma*(n, d, rho)`` at ``points`` equally spaced ``rho`` spanning the panel's grid, by
    :func:`gamma_star_line` with at most :data:`LINE_NODES` theory evaluations per panel, and
    eta's line (:func:`eta_star_line`, drawn over Figure 2). One row per point: ``d``, ``n``,
    ``rho``, ``gamma_star``, ``gamma_star_eta``."""
    records = []
    for d in sorted(data["d"].unique(), reverse=True):
        if d < 3:
            continue
        sub = data[data["d"] == d]
        rhos = np.sort(sub["rho"].unique())
        n = int(sub["n"].iloc[0])
        rr = np.linspace(rhos.min(), rhos.max(), points)
        nodes = min(LINE_NODES, rhos.size)
        gs = gamma_star_line(n, int(d), rr, nodes=nodes)
        ge = eta_star_line(n, int(d), rr, nodes=nodes)
        records.append(
            pd.DataFrame({"d": int(d), "n": n, "rho": rr, "gamma_star": gs, "gamma_star_eta": ge})
        )
    cols = ["d", "n", "rho", "gamma_star", "gamma_star_eta"]
    table = pd.concat(records, ignore_index=True) if records else pd.DataFrame(columns=cols)
    return with_job_provenance(table)


def transition_theory(*, n, d, rho, read_off=None) -> pd.DataFrame:
    """The finite-d theory of the transition figure on an ``n`` grid (issue 9, item 1).

    For every ``(d, rho, n)``: the exact critical point ``beta*`` of ``attnscale.layer.finite_d``
    (``critical_beta``: the beta where ``E A_ii = 1/2``), ``gamma* = beta* / ln n``, the annealed
    and first-order approximations, Paper A's asymptote (``paper_a_asymptote_beta``,
    ``gamma_c ln n``) and at ``rho = 0`` the power-law asymptote of the ``ln n >> d`` regime.
    An approximation that is not defined somewhere (it raises ``ValueError`` or returns a
    non-finite value) is recorded as ``nan``: where it fails is a result.

    Parameters
    ----------
    n : sequence of float
        Context lengths (``2 <= n <= 1e7``), rounded to the nearest integer (duplicates dropped).
    d : sequence of int
        Dimensions (``3 <= d <= 4096``).
    rho : sequence of float
        Nominal correlations in ``[0, 1)``.
    read_off : sequence of (n, d), optional
        Extra points, marked ``kind = "read_off"`` (annotated in the figure), for every ``rho``.

    Returns
    -------
    pandas.DataFrame
        Columns ``kind, d, rho, n, beta_star, gamma_star, beta_annealed, beta_first_order,
        beta_paper_a, beta_power, gamma_c``.
    """
    from attnscale.layer import finite_d

    ns = np.unique(np.rint(check_vector("n", n, low=2.0)).astype(np.int64))  # integers
    ds = check_vector("d", d, low=3.0)
    rhos = check_rhos(rho)
    extra = [] if read_off is None else [(int(a), int(b)) for a, b in read_off]

    def safe(fn, *args):
        try:
            v = float(fn(*args))
        except ValueError:
            return np.nan
        return v if np.isfinite(v) else np.nan

    out = []
    points = [("grid", int(nn), int(dd)) for dd in ds for nn in ns]
    points += [("read_off", nn, dd) for nn, dd in extra]
    for r in rhos:
        r = float(r)
        for kind, nn, dd in points:
            b = float(finite_d.critical_beta(nn, dd, r))
            out.append(
                {
                    "kind": kind,
                    "d": dd,
                    "rho": r,
                    "n": nn,
                    "beta_star": b,
                    "gamma_star": b / np.log(nn),
                    "beta_annealed": safe(finite_d.annealed_critical_beta, nn, dd, r),
                    "beta_first_order": safe(finite_d.first_order_critical_beta, nn, dd, r),
                    "beta_paper_a": safe(finite_d.paper_a_asymptote_beta, nn, r),
                    "beta_power": safe(finite_d.power_law_beta, nn, dd) if r == 0.0 else np.nan,
                    "gamma_c": gamma_c(r),
                }
            )
    return with_job_provenance(pd.DataFrame(out))


def theory_given_draw(n: int, d: int, rho: float, betas, r0: float) -> dict:
    """Finite-d theory for one token draw, conditioned on its common vector's norm ``r0 =
    ||z_0||`` (docs/finite-d.md): the theorem table's finite-d columns.

    * ``self_weight``: ``E[A_ii | R_0 = r0]`` (``attnscale.layer.finite_d.self_weight_given``, exact up
      to quadrature);
    * ``cosine``, ``lambda``: the first-order mean field of ``attnscale.layer.finite_d.mean_field`` with
      its average over ``R_0`` replaced by the draw's own ``r0`` (the same per-row moments and
      pair quadrature; ``attnscale.layer.finite_d`` has no conditioned mean field, so it is assembled
      here from that module's building blocks). ``alpha = 0`` only.

    A draw's ``beta = f gamma_c(rho_hat) ln n`` depends on its ``rho_hat`` and hence on ``R_0``,
    so a theory averaged over ``R_0`` would be compared with draws that each sit at their own
    ``R_0``; conditioning removes that bias and most of the draw-to-draw spread.

    Returns
    -------
    dict
        Arrays shaped like ``betas``: ``self_weight``, ``cosine``, ``lambda``.
    """
    from attnscale.layer import finite_d
    from attnscale.layer.finite_d.laws import (
        QUADRATURE_PRESETS,
        normal_score_rule,
        omega_rule,
        tau_law,
    )
    from attnscale.layer.finite_d.mean_field import row_moments

    betas = check_vector("betas", betas, low=0.0)
    r0 = check_real("r0", r0, low=0.0, low_open=True)
    n, d, rho = finite_d.check_args(n, d, rho)
    a_ii = np.atleast_1d(finite_d.self_weight_given(n, d, rho, betas, r0))
    p = QUADRATURE_PRESETS["standard"]
    wn, ww = omega_rule(d, p["n_w"])
    # the nodes of attnscale.layer.finite_d.approx.anneal_nodes for one R_0 (kept in step with it by
    # tests/test_finite_d_experiments.py, which averages this over the R_0 nodes)
    _, qw, qn, _ = normal_score_rule(p["n_tau"])
    law = tau_law(d, rho, r0)
    t, cdf = law.t[::4], law.cdf[::4]
    wj = np.zeros_like(t)  # CDF increments split between neighbours (trapezoid in probability)
    wj[1:] += np.diff(cdf) / 2
    wj[:-1] += np.diff(cdf) / 2
    wj /= wj.sum()
    ti = law.quantile(qn)
    cos, lam = np.empty(betas.size), np.empty(betas.size)
    for k, beta in enumerate(betas):
        _, P, Q, D, si = row_moments(d, float(beta), n, ti, t, wj)
        norm = np.sqrt(P * P + Q * Q + D)
        num = (P[:, None] * P[None, :])[..., None] + (Q[:, None] * Q[None, :])[..., None] * wn
        cosp = num / (norm[:, None] * norm[None, :])[..., None]
        c = (ti[:, None] * ti[None, :])[..., None] + (si[:, None] * si[None, :])[..., None] * wn
        pw = (qw[:, None] * qw[None, :])[..., None] * ww
        cos[k] = float(np.sum(pw * cosp))
        lam[k] = float(np.sum(pw * (1.0 - cosp) / np.maximum(1.0 - c, 1e-12)))
    return {"self_weight": a_ii, "cosine": cos, "lambda": lam}
