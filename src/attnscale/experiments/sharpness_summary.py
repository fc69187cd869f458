"""Transition sharpness against context length (ours): mean curves over draws, the 10 %-90 % width
and the centre of each transition with their standard errors, and the references of Paper A's
n -> inf limit (docs/long-context.md#transition-sharpness-against-context-length).

For one ``(d, rho, n)`` and observable (normalised to its ``gamma -> inf`` value), the draws
``t = 1 .. T`` give curves ``f_t(x_k)`` on the shared grid ``x = gamma / gamma_c(rho_hat)``; the mean
curve ``F_k = mean_t f_t(x_k)`` is interpolated linearly between grid points:

* the crossing ``x_L`` of a level ``L`` is the first upward crossing, ``F_k < L <= F_{k+1}``,
  interpolated linearly (:func:`attnscale.core.crossings.first_crossing`);
* width ``x_{0.9} - x_{0.1}``; centre: the crossing of Paper A's critical value
  (:func:`attnscale.layer.observables.critical_level`; for lambda at the mean over draws of
  ``1/(1 + 3 rho_hat)``);
* standard error by the delta method over draws (:func:`attnscale.core.crossings.crossing_se`):
  each quantity is, to first order, a linear combination ``sum_k c_k F_k (+ c_L L)``; the same
  combination of each draw's values, ``w_t``, gives ``SE = s(w_t) / (c_4(T) sqrt(T))``; the
  width's combination takes both crossings from the same draw, which keeps their correlation
  (docs/long-context.md#width-centre-and-their-standard-errors). ``nan`` for one draw.

The references: Paper A's finite-n simplex map (:mod:`attnscale.layer.theory`) at the nominal
``rho``, whose width is a function of ``(1 - x) ln n`` and so shrinks like ``1 / ln n`` (the
n -> inf limit is a step at ``x = 1``); the finite-d critical point of each draw; and the finite-d
theory's curve of every observable on the same grid (:func:`theory_curves`: the self-weight of
each draw at its ``||z_0||``, lambda's and eta's mean field at ``||z_0|| = 1`` and the draws' mean
``rho_hat``), whose width and centre are read as the simulated ones. The width's trend is stated
as local slopes against ``ln n`` (:func:`local_slopes`), measured and the theory's side by side.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from attnscale.core.crossings import (
    WIDTH_FRACTIONS,
    crossing_gradient,
    crossing_se,
    first_crossing,
)
from attnscale.core.roots import brentq
from attnscale.layer import finite_d, theory
from attnscale.layer.observables import REGISTRY, critical_level, get
from attnscale.pipeline.io import with_job_provenance_all

__all__ = [
    "KEYS",
    "curve_summary",
    "simplex_curve",
    "SIMPLEX_X",
    "simplex_crossing",
    "theory_curves",
    "theory_crossings",
    "x10_floor",
    "transition_rows",
    "local_slopes",
    "sharpness_summary",
]

#: One curve per these keys.
KEYS = ["d", "rho", "n"]


def _merge(*parts) -> dict:
    out: dict = {}
    for sign, coef in parts:
        for k, c in coef.items():
            out[k] = out.get(k, 0.0) + sign * c
    return out


def curve_summary(table: pd.DataFrame, theory_of: dict) -> pd.DataFrame:
    """Mean curves: one row per ``(d, rho, n, observable, x)`` with the mean over draws, the SE of
    the mean (``max(spread, within-draw floor)``, module docstring), the mean within-draw SE, the
    number of draws, the finite-d theory (``theory_of[(d, rho, n)][observable]`` on the sorted
    grid, :func:`theory_curves`) and, for lambda, the tilt's floor
    (:func:`attnscale.layer.finite_d.lambda_floor` at the draws' mean ``rho_hat``)."""
    out = []
    for key, g in table.groupby(KEYS + ["x"], sort=True):
        T = g["trial"].nunique()
        d, rho, n, x = int(key[0]), float(key[1]), int(key[2]), float(key[3])
        ref = theory_of[(d, rho, n)]
        k = int(np.searchsorted(ref["x"], x))
        for o in REGISTRY.values():
            obs = o.name
            v, s = o.step(g[obs].to_numpy()), g[f"{obs}_se_within"].to_numpy()
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
                    theory=float(ref[obs][k]),
                    tilt_floor=float(ref[f"floor_{obs}"][k]) if o.floor else np.nan,
                )
            )
    return pd.DataFrame(out)


def simplex_curve(observable: str, n: int, d: int, rho: float, x):
    """Paper A's finite-n simplex value of a normalised observable at ``beta = x gamma_c ln n``
    (docs/paper-a.md#finite-n-simplex-map): the self-weight, lambda, and eta over its
    ``beta -> inf`` value ``(1 - 1/d)`` (``q = 1``)."""
    fn = get(observable).simplex
    beta = np.atleast_1d(np.asarray(x, dtype=float)) * theory.gamma_c(rho) * np.log(n)
    if fn is None:
        return np.full(beta.shape, np.nan)
    return np.array([fn(n, d, rho, b) for b in beta])


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


def theory_curves(g: pd.DataFrame, n: int, d: int, x) -> dict:
    """The finite-d theory of one ``(d, rho, n)`` on the grid ``x`` of its draws ``g``
    (docs/long-context.md#the-width-explained): ``"self_weight"``, the mean over the draws of
    ``E[A_ii | ||z_0||]`` at each draw's betas (column ``self_weight_theory``); ``"lambda"``,
    the mean field (:func:`attnscale.layer.finite_d.mean_field_given`) and ``"eta"``, its mean
    field over its ``beta -> inf`` value (:mod:`attnscale.layer.finite_d.eta`), both at
    ``||z_0|| = 1`` and the draws' mean ``rho_hat`` (a draw at ``rho`` with norm ``R_0`` is close
    to one at its ``rho_hat`` with norm 1, docs/finite-d.md#conditional-structure), at
    ``beta = x gamma_c(rho_hat) ln n``; ``"floor"``, the tilt's floor under lambda there; and
    ``"rho_hat"``."""
    x = np.asarray(x, dtype=float)
    T = g["trial"].nunique()
    rho_hat = float(g.groupby("trial")["rho_hat"].first().mean())
    beta = x * theory.gamma_c(rho_hat) * np.log(n)
    ctx = {"g": g, "T": T, "n": n, "d": d, "x": x, "rho_hat": rho_hat, "beta": beta}
    out = {"x": x, "rho_hat": rho_hat}
    for o in REGISTRY.values():
        out[o.name] = o.mean_field(ctx) if o.mean_field else np.full(x.shape, np.nan)
        if o.floor:
            out[f"floor_{o.name}"] = o.floor(beta, d, rho_hat)
    return out


def theory_crossings(x, F, centre_level: float) -> dict:
    """Width and centre of a theory curve ``F`` on the grid ``x``, read as the simulated ones
    (the same first crossings and linear interpolation): ``{"width", "centre"}``, ``nan`` where a
    level is not crossed inside the grid."""
    hits = [first_crossing(x, F, v) for v in (*WIDTH_FRACTIONS, centre_level)]
    width = hits[1][0] - hits[0][0] if hits[0] is not None and hits[1] is not None else np.nan
    return {"width": width, "centre": hits[2][0] if hits[2] is not None else np.nan}


def x10_floor(n: int, d: int, rho_hat: float) -> float:
    """Where the tilt's floor alone lifts lambda to the width's lower level:
    ``x = t_L d / ln n`` with ``t_L`` of :func:`attnscale.layer.finite_d.floor_crossing`
    (docs/long-context.md#the-width-explained)."""
    return finite_d.floor_crossing(WIDTH_FRACTIONS[0], rho_hat) * d / np.log(n)


def transition_rows(table: pd.DataFrame, theory_of: dict) -> pd.DataFrame:
    """Width and centre of every transition: one row per ``(d, rho, n, observable)`` with the
    crossings of the 10 %, 90 % and critical levels, the width, each with its delta-method SE, the
    draws' finite-d critical point (mean and SE over draws; and unconditioned), the width and
    centre of the finite-d theory's curve (``theory_of[(d, rho, n)]``, :func:`theory_crossings`),
    for lambda where the tilt's floor reaches 10 % (:func:`x10_floor`), and the same width and
    centre for Paper A's finite-n simplex map."""
    out = []
    for key, g in table.groupby(KEYS, sort=True):
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
        for o in REGISTRY.values():
            obs = o.name
            f = o.step(g[obs].to_numpy()).reshape(T, K)
            F = f.mean(axis=0)
            lv = (
                draws[f"{obs}_critical"].to_numpy()
                if o.centre_per_draw
                else np.full(T, critical_level(obs, rho))
            )
            row = dict(base, observable=obs, level_centre=float(lv.mean()))
            got = {}
            for name, level, lvls in (
                ("x10", WIDTH_FRACTIONS[0], np.full(T, WIDTH_FRACTIONS[0])),
                ("x90", WIDTH_FRACTIONS[1], np.full(T, WIDTH_FRACTIONS[1])),
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
            ref = theory_of[(d, rho, n)]
            fd = theory_crossings(x, ref[obs], float(lv.mean()))
            row["width_finite_d"] = fd["width"]
            row["centre_finite_d"] = fd["centre"]
            row["x10_floor"] = x10_floor(n, d, ref["rho_hat"]) if o.floor else np.nan
            lo, hi = (simplex_crossing(obs, n, d, rho, v) for v in WIDTH_FRACTIONS)
            row["width_simplex"] = hi - lo
            row["centre_simplex"] = simplex_crossing(obs, n, d, rho, critical_level(obs, rho))
            out.append(row)
    return pd.DataFrame(out)


def local_slopes(transitions: pd.DataFrame) -> pd.DataFrame:
    """The width's trend against ``ln n``, stated locally (docs/long-context.md#the-width-explained):
    one row per ``(d, rho, observable)`` and pair of consecutive ``n`` with a width, with
    ``ln n / d`` at the pair's geometric middle, the measured slope
    ``s = Delta ln width / Delta ln ln n`` and its SE (the two widths come from independent draws:
    ``sqrt((se_1/w_1)^2 + (se_2/w_2)^2) / Delta ln ln n``), the finite-d theory's slope and the
    finite-n simplex map's over the same pair (``-1`` for a width ``∝ 1/ln n``)."""
    out = []
    for (d, rho, obs), g in transitions.groupby(["d", "rho", "observable"], sort=True):
        g = g[np.isfinite(g["width"])].sort_values("n")
        t = np.log(np.log(g["n"].to_numpy(dtype=float)))
        w, se = g["width"].to_numpy(), g["width_se"].to_numpy()
        wf, ws = g["width_finite_d"].to_numpy(), g["width_simplex"].to_numpy()
        for k in range(len(g) - 1):
            dt = t[k + 1] - t[k]
            out.append(
                {
                    "d": int(d),
                    "rho": float(rho),
                    "observable": obs,
                    "n_lo": int(g["n"].iloc[k]),
                    "n_hi": int(g["n"].iloc[k + 1]),
                    "ln_n_over_d": float(np.exp((t[k] + t[k + 1]) / 2.0) / d),
                    "slope": float(np.log(w[k + 1] / w[k]) / dt),
                    "slope_se": float(np.hypot(se[k] / w[k], se[k + 1] / w[k + 1]) / dt),
                    "slope_finite_d": float(np.log(wf[k + 1] / wf[k]) / dt),
                    "slope_simplex": float(np.log(ws[k + 1] / ws[k]) / dt),
                }
            )
    return pd.DataFrame(out)


def sharpness_summary(*, data, finite_d_theory=None) -> dict:
    """Entry of rule ``sharpness_summary``: the figure data of the sharpness family from the
    per-``(d, n)`` tables of :func:`attnscale.experiments.sharpness.sharpness_curves`
    (docs/long-context.md#transition-sharpness-against-context-length).

    Parameters
    ----------
    data : list of pandas.DataFrame or pandas.DataFrame
        The per-``(d, n)`` tables.
    finite_d_theory : callable, optional
        ``finite_d_theory(g, n, d, x) -> dict``, the finite-d theory of the draws ``g`` of one
        ``(d, rho, n)`` on the grid ``x``; default :func:`theory_curves` (the tests pass a known
        curve).

    Returns
    -------
    dict
        ``curves`` (:func:`curve_summary`), ``transitions`` (:func:`transition_rows`) and
        ``trends`` (:func:`local_slopes`).
    """
    table = pd.concat(data, ignore_index=True) if isinstance(data, list) else data
    need = set(
        KEYS
        + [
            "x",
            "trial",
            "m",
            "x_star_given",
            "x_star_nominal",
            "rho_hat",
        ]
        + [f"{o.name}_critical" for o in REGISTRY.values() if o.centre_per_draw]
        + [c for o in REGISTRY.values() for c in o.columns]
    )
    missing = sorted(need - set(table.columns))
    if missing:
        raise ValueError(f"data must be tables of sharpness_curves; columns missing: {missing}")
    theory_of = {}
    for key, g in table.groupby(KEYS, sort=True):
        d, rho, n = int(key[0]), float(key[1]), int(key[2])
        theory_of[(d, rho, n)] = (finite_d_theory or theory_curves)(
            g, n, d, np.sort(g["x"].unique())
        )
    transitions = transition_rows(table, theory_of)
    return with_job_provenance_all(
        {
            "curves": curve_summary(table, theory_of),
            "transitions": transitions,
            "trends": local_slopes(transitions),
        }
    )
