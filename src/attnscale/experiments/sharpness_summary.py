"""Transition sharpness against context length (ours): mean curves over draws, the 10 %-90 % width
and the centre of each transition with their standard errors, and the references of Paper A's
n -> inf limit (docs/long-context.md#transition-sharpness-against-context-length).

For one ``(d, rho, n)`` and observable (normalised to its ``gamma -> inf`` value), the draws
``t = 1 .. T`` give curves ``f_t(x_k)`` on the shared grid ``x = gamma / gamma_c(rho_hat)``; the mean
curve ``F_k = mean_t f_t(x_k)`` is interpolated linearly between grid points:

* the crossing ``x_L`` of a level ``L`` is the first upward crossing, ``F_k < L <= F_{k+1}``,
  interpolated linearly (:func:`attnscale.core.crossings.first_crossing`);
* width ``x_{0.9} - x_{0.1}``; centre: the crossing of Paper A's critical value
  (:func:`attnscale.layer.theory.critical_level`; for lambda at the mean over draws of
  ``1/(1 + 3 rho_hat)``);
* standard error by the delta method over draws (:func:`attnscale.core.crossings.crossing_se`):
  each quantity is, to first order, a linear combination ``sum_k c_k F_k (+ c_L L)``; the same
  combination of each draw's values, ``w_t``, gives ``SE = s(w_t) / (c_4(T) sqrt(T))``; the
  width's combination takes both crossings from the same draw, which keeps their correlation
  (docs/long-context.md#width-centre-and-their-standard-errors). ``nan`` for one draw.

The references: Paper A's finite-n simplex map (:mod:`attnscale.layer.theory`) at the nominal
``rho``, whose width is a function of ``(1 - x) ln n`` and so shrinks like ``1 / ln n`` (the
n -> inf limit is a step at ``x = 1``), and the finite-d critical point of each draw.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from attnscale.core.crossings import crossing_gradient, crossing_se, first_crossing
from attnscale.core.roots import LEVEL, brentq
from attnscale.layer import theory

from .sharpness import OBSERVABLES

__all__ = [
    "LEVELS",
    "KEYS",
    "curve_summary",
    "simplex_curve",
    "SIMPLEX_X",
    "simplex_crossing",
    "first_order_width",
    "finite_d_crossings",
    "transition_rows",
    "power_fit",
    "width_trends",
    "sharpness_summary",
]

#: The width's levels of a normalised observable [choice: 10 % and 90 % of the step].
LEVELS = (0.1, 0.9)
#: One curve per these keys.
KEYS = ["d", "rho", "n"]


def _merge(*parts) -> dict:
    out: dict = {}
    for sign, coef in parts:
        for k, c in coef.items():
            out[k] = out.get(k, 0.0) + sign * c
    return out


def curve_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean curves: one row per ``(d, rho, n, observable, x)`` with the mean over draws, the SE of
    the mean (``max(spread, within-draw floor)``, module docstring), the mean within-draw SE and
    the number of draws."""
    out = []
    for key, g in rows.groupby(KEYS + ["x"], sort=True):
        T = g["trial"].nunique()
        for obs in OBSERVABLES:
            v, s = g[obs].to_numpy(), g[f"{obs}_se_within"].to_numpy()
            spread = np.var(v, ddof=1) if T > 1 else np.nan
            se = np.sqrt(max(spread, np.mean(s**2)) / T) if T > 1 else np.nan
            out.append(
                dict(
                    zip(KEYS + ["x"], key, strict=True),
                    observable=obs,
                    mean=float(v.mean()),
                    se=float(se),
                    se_within=float(np.sqrt(np.mean(s**2) / T)),
                    trials=T,
                )
            )
    return pd.DataFrame(out)


def simplex_curve(observable: str, n: int, d: int, rho: float, x):
    """Paper A's finite-n simplex value of a normalised observable at ``beta = x gamma_c ln n``
    (docs/paper-a.md#finite-n-simplex-map): the self-weight, lambda, and eta over its
    ``beta -> inf`` value ``(1 - 1/d)`` (``q = 1``)."""
    beta = np.atleast_1d(np.asarray(x, dtype=float)) * theory.gamma_c(rho) * np.log(n)
    if observable == "self_weight":
        vals = [theory.simplex_self_weight(n, rho, b) for b in beta]
    elif observable == "lambda":
        vals = [theory.simplex_lambda(n, rho, b) for b in beta]
    elif observable == "eta":
        vals = [theory.simplex_eta(n, d, rho, b) * d / (d - 1.0) for b in beta]
    else:
        raise ValueError(f"observable must be one of {OBSERVABLES}, got {observable!r}")
    return np.array(vals)


#: Where :func:`simplex_crossing` looks for the first crossing (then refined by Brent's method).
SIMPLEX_X = np.geomspace(0.05, 5.0, 601)


@lru_cache(maxsize=256)
def _simplex_on_grid(observable: str, n: int, d: int, rho: float) -> np.ndarray:
    return simplex_curve(observable, n, d, rho, SIMPLEX_X)


def simplex_crossing(observable: str, n: int, d: int, rho: float, level: float) -> float:
    """First crossing of ``level`` by :func:`simplex_curve` in ``x``: the first interval of
    :data:`SIMPLEX_X` (601 log-spaced points from 0.05 to 5) that crosses, refined by Brent's
    method."""
    xs = SIMPLEX_X
    hit = first_crossing(xs, _simplex_on_grid(observable, int(n), int(d), float(rho)), level)
    if hit is None:
        return float("nan")
    _, k, _ = hit
    return brentq(
        lambda v: simplex_curve(observable, n, d, rho, v)[0] - level,
        float(xs[k]),
        float(xs[k + 1]),
        xtol=1e-12,
    )


def first_order_width(n: int, d: int, rho: float) -> float:
    """Width in ``x`` of the self-weight's transition at first order in ``1/d``
    (docs/long-context.md#transition-sharpness-against-context-length, [derived]):
    ``2 ln 9 / (ln n sqrt(1 - 4 kappa))`` with ``kappa = ln n (1 + rho - rho^2/2) / (2 d)``; ``nan``
    beyond the crossover ``4 kappa >= 1``, where the first-order root disappears."""
    ln_n = np.log(n)
    four_kappa = 2.0 * ln_n * (1.0 + rho - rho**2 / 2.0) / d
    if four_kappa >= 1.0:
        return float("nan")
    return float(2.0 * np.log(9.0) / (ln_n * np.sqrt(1.0 - four_kappa)))


def finite_d_crossings(x, g: pd.DataFrame, T: int, K: int) -> dict:
    """Width and centre (crossing of 1/2) of the finite-d theory's mean self-weight curve, the
    mean over the draws of ``E[A_ii | ||z_0||]`` at each draw's betas (column
    ``self_weight_theory``): the prediction of the simulated mean curve of the same draws."""
    F = g["self_weight_theory"].to_numpy().reshape(T, K).mean(axis=0)
    hits = [first_crossing(x, F, v) for v in (*LEVELS, LEVEL)]
    out = {}
    if hits[0] is not None and hits[1] is not None:
        out["width"] = hits[1][0] - hits[0][0]
    if hits[2] is not None:
        out["centre"] = hits[2][0]
    return out


def transition_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Width and centre of every transition: one row per ``(d, rho, n, observable)`` with the
    crossings of the 10 %, 90 % and critical levels, the width, each with its delta-method SE, the
    draws' finite-d critical point (mean and SE over draws; and unconditioned), for the self-weight
    the width and centre of the finite-d theory's curve (:func:`finite_d_crossings`), and the
    same width and centre for Paper A's finite-n simplex map."""
    out = []
    for key, g in rows.groupby(KEYS, sort=True):
        d, rho, n = int(key[0]), float(key[1]), int(key[2])
        g = g.sort_values(["trial", "x"])
        trials = np.sort(g["trial"].unique())
        x = np.sort(g["x"].unique())
        T, K = trials.size, x.size
        draws = g.groupby("trial", sort=True).first()
        xs = draws["x_star_given"].to_numpy()
        base = dict(
            d=d,
            rho=rho,
            n=n,
            trials=T,
            m=int(g["m"].iloc[0]),
            rho_hat_mean=float(draws["rho_hat"].mean()),
            x_star=float(xs.mean()),
            x_star_se=float(xs.std(ddof=1) / np.sqrt(T)) if T > 1 else np.nan,
            x_star_nominal=float(draws["x_star_nominal"].iloc[0]),
        )
        for obs in OBSERVABLES:
            f = g[obs].to_numpy().reshape(T, K)
            F = f.mean(axis=0)
            lv = (
                draws["lambda_critical"].to_numpy()
                if obs == "lambda"
                else np.full(T, theory.critical_level(obs, rho))
            )
            row = dict(base, observable=obs, level_centre=float(lv.mean()))
            got = {}
            for name, level, lvls in (
                ("x10", LEVELS[0], np.full(T, LEVELS[0])),
                ("x90", LEVELS[1], np.full(T, LEVELS[1])),
                ("centre", float(lv.mean()), lv),
            ):
                hit = first_crossing(x, F, level)
                if hit is None:
                    row[name], row[f"{name}_se"] = np.nan, np.nan
                    continue
                coef, c_level = crossing_gradient(x, F, hit)
                got[name] = (coef, c_level, lvls)
                row[name] = hit[0]
                row[f"{name}_se"] = crossing_se(coef, c_level, f, lvls)
            row["width"] = row["x90"] - row["x10"]
            if "x10" in got and "x90" in got:
                coef = _merge((1.0, got["x90"][0]), (-1.0, got["x10"][0]))
                row["width_se"] = crossing_se(coef, 0.0, f, np.zeros(T))
            else:
                row["width_se"] = np.nan
            fd = finite_d_crossings(x, g, T, K) if obs == "self_weight" else {}
            row["width_finite_d"] = fd.get("width", np.nan)
            row["width_first_order"] = (
                first_order_width(n, d, rho) if obs == "self_weight" else np.nan
            )
            row["centre_finite_d"] = fd.get("centre", np.nan)
            lo, hi = (simplex_crossing(obs, n, d, rho, v) for v in LEVELS)
            row["width_simplex"] = hi - lo
            row["centre_simplex"] = simplex_crossing(
                obs, n, d, rho, theory.critical_level(obs, rho)
            )
            out.append(row)
    return pd.DataFrame(out)


def power_fit(ln_n, width, se) -> dict:
    """Weighted least squares of ``ln width = a + p ln(ln n)`` with ``sigma = se / width`` (the delta
    method): the exponent ``p`` and its SE times ``max(1, sqrt(chi^2 / dof))``, ``chi^2`` and
    ``dof``. Paper A's finite-n simplex width is a function of ``(1 - x) ln n``: ``p = -1``."""
    t, y = np.log(np.asarray(ln_n, dtype=float)), np.log(np.asarray(width, dtype=float))
    sig = np.asarray(se, dtype=float) / np.asarray(width, dtype=float)
    ok = np.isfinite(t) & np.isfinite(y) & np.isfinite(sig) & (sig > 0)
    t, y, sig = t[ok], y[ok], sig[ok]
    if t.size < 2:
        return {"p": np.nan, "p_se": np.nan, "chi2": np.nan, "dof": int(max(t.size - 2, 0))}
    A = np.column_stack([np.ones_like(t), t]) / sig[:, None]
    coef, *_ = np.linalg.lstsq(A, y / sig, rcond=None)
    cov = np.linalg.inv(A.T @ A)
    dof = t.size - 2
    chi2 = float(np.sum(((y - coef[0] - coef[1] * t) / sig) ** 2))
    scale = max(1.0, np.sqrt(chi2 / dof)) if dof > 0 else 1.0
    return {
        "p": float(coef[1]),
        "p_se": float(np.sqrt(cov[1, 1]) * scale),
        "chi2": chi2,
        "dof": dof,
    }


def width_trends(transitions: pd.DataFrame) -> pd.DataFrame:
    """The width's trend against ``ln n``: one row per ``(d, rho, observable)`` with the exponent
    of :func:`power_fit` over every ``n`` with a width, the simplex's exponent over the same ``n``
    (unweighted), the smallest and largest ``n`` and the widths there."""
    out = []
    for (d, rho, obs), g in transitions.groupby(["d", "rho", "observable"], sort=True):
        g = g[np.isfinite(g["width"])].sort_values("n")
        if g.empty:
            continue
        ln_n = np.log(g["n"].to_numpy(dtype=float))
        fit = power_fit(ln_n, g["width"], g["width_se"])
        simp = power_fit(ln_n, g["width_simplex"], 1e-3 * g["width_simplex"])
        out.append(
            {
                "d": int(d),
                "rho": float(rho),
                "observable": obs,
                "points": len(g),
                "n_min": int(g["n"].iloc[0]),
                "n_max": int(g["n"].iloc[-1]),
                "width_n_min": float(g["width"].iloc[0]),
                "width_n_max": float(g["width"].iloc[-1]),
                "exponent": fit["p"],
                "exponent_se": fit["p_se"],
                "chi2": fit["chi2"],
                "dof": fit["dof"],
                "exponent_simplex": simp["p"],
            }
        )
    return pd.DataFrame(out)


def sharpness_summary(*, data) -> dict:
    """Entry of rule ``sharpness_summary``: the figure data of the sharpness family from the
    per-``(d, n)`` tables of :func:`attnscale.experiments.sharpness.sharpness_curves`
    (docs/long-context.md#transition-sharpness-against-context-length).

    Returns
    -------
    dict
        ``curves`` (:func:`curve_summary`), ``transitions`` (:func:`transition_rows`) and
        ``trends`` (:func:`width_trends`).
    """
    rows = pd.concat(data, ignore_index=True) if isinstance(data, list) else data
    need = set(
        KEYS
        + [
            "x",
            "trial",
            "m",
            "x_star_given",
            "x_star_nominal",
            "lambda_critical",
            "rho_hat",
            "self_weight_theory",
        ]
        + [c for o in OBSERVABLES for c in (o, f"{o}_se_within")]
    )
    missing = sorted(need - set(rows.columns))
    if missing:
        raise ValueError(f"data must be tables of sharpness_curves; columns missing: {missing}")
    transitions = transition_rows(rows)
    return {
        "curves": curve_summary(rows),
        "transitions": transitions,
        "trends": width_trends(transitions),
    }
