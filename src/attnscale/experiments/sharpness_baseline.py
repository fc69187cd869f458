"""The width's trend against ``ln n`` over a long baseline, and a joint test of the widths
against the finite-d theory's along ``n`` (docs/long-context.md#the-width-explained).

The local slopes between consecutive ``n`` (:func:`attnscale.experiments.sharpness_summary.local_slopes`)
have SEs of 0.05 to 0.13, so a test of each against the theory's tests little (issue 45). Here
the slope ``d ln(width) / d ln(ln n)`` is fitted over the last ``points`` values of ``n`` of each
``(d, rho, observable)`` (``2^16 .. 2^20`` in config/long-context.yaml) by weighted least
squares with the widths' delta-method SEs (independent draws at each ``n``) [derived], beside the
finite-d theory's slope fitted the same way to its widths; and every width of the series is
compared with the theory's at once: ``chi^2 = sum_n ((ln w_n - ln w_fd,n) / (se_n / w_n))^2`` on
as many degrees of freedom as widths [derived].
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["BASELINE_POINTS", "weighted_slope", "baseline_slopes"]

#: The values of n at the end of each series that the long-baseline slope is fitted over
#: [choice]: three, 2^16 .. 2^20 in config/long-context.yaml (a factor 16 in n).
BASELINE_POINTS = 3


def weighted_slope(t, y, se) -> tuple[float, float]:
    """Slope of ``y`` against ``t`` by weighted least squares with known SEs ``se`` of ``y``, and
    its SE ``1 / sqrt(sum w (t - t_w)^2)``, ``w = 1/se^2`` (docs/long-context.md#the-width-explained)."""
    t, y, se = (np.asarray(a, dtype=float) for a in (t, y, se))
    w = 1.0 / se**2
    tw = np.sum(w * t) / np.sum(w)
    sxx = np.sum(w * (t - tw) ** 2)
    return float(np.sum(w * (t - tw) * y) / sxx), float(1.0 / np.sqrt(sxx))


def baseline_slopes(transitions: pd.DataFrame, points: int = BASELINE_POINTS) -> pd.DataFrame:
    """One row per ``(d, rho, observable)`` with at least two finite widths in its last
    ``points`` values of ``n``: the baseline ``n_lo`` to ``n_hi``, the measured long-baseline slope
    and its SE, the finite-d theory's and the finite-n simplex map's slopes fitted with the same
    weights, ``z`` = (measured - theory) / SE, and the joint test of all the series' widths
    against the theory's (``chi2``, ``chi2_dof``, ``chi2_p``: its upper tail probability).

    Parameters
    ----------
    transitions : pandas.DataFrame
        :func:`attnscale.experiments.sharpness_summary.transition_rows` (columns ``n``,
        ``width``, ``width_se``, ``width_finite_d``, ``width_simplex``).
    points : int
        How many of the largest ``n`` the slope is fitted over (at least 2).
    """
    if int(points) < 2:
        raise ValueError(f"points must be at least 2, got {points!r}")
    out = []
    for (d, rho, obs), g in transitions.groupby(["d", "rho", "observable"], sort=True):
        g = g[np.isfinite(g["width"]) & (g["width_se"] > 0)].sort_values("n")
        if len(g) < 2:
            continue
        rel = (g["width_se"] / g["width"]).to_numpy(dtype=float)
        dev = np.log(g["width"] / g["width_finite_d"]).to_numpy(dtype=float) / rel
        b = g.iloc[-int(points) :]
        t = np.log(np.log(b["n"].to_numpy(dtype=float)))
        se = (b["width_se"] / b["width"]).to_numpy(dtype=float)
        s, s_se = weighted_slope(t, np.log(b["width"].to_numpy(dtype=float)), se)
        s_fd, _ = weighted_slope(t, np.log(b["width_finite_d"].to_numpy(dtype=float)), se)
        s_sx, _ = weighted_slope(t, np.log(b["width_simplex"].to_numpy(dtype=float)), se)
        chi2 = float(np.sum(dev[np.isfinite(dev)] ** 2))
        dof = int(np.isfinite(dev).sum())
        out.append(
            {
                "d": int(d),
                "rho": float(rho),
                "observable": obs,
                "n_lo": int(b["n"].iloc[0]),
                "n_hi": int(b["n"].iloc[-1]),
                "points": len(b),
                "slope": s,
                "slope_se": s_se,
                "slope_finite_d": s_fd,
                "slope_simplex": s_sx,
                "z": (s - s_fd) / s_se,
                "chi2": chi2,
                "chi2_dof": dof,
                "chi2_p": float(stats.chi2.sf(chi2, dof)),
            }
        )
    return pd.DataFrame(out)
