"""The first upward crossing of a level by a curve on a grid, and the standard errors of crossings
by the delta method over draws (docs/long-context.md#width-centre-and-their-standard-errors).

One definition for every caller: the transition widths and centres of the sharpness summary, the
finite-d critical point of learned scores (:func:`attnscale.layer.scores.attention.self_weight_critical_beta`),
the findings of the causal family and the real transformer's critical multipliers.

* The crossing of ``L`` by ``F`` on the increasing grid ``x`` is the first upward one,
  ``F_k < L <= F_{k+1}``, interpolated linearly in ``x`` (``log_x=False``) or in ``log x``:
  ``x_L = x_k + t (x_{k+1} - x_k)`` with ``t = (L - F_k) / (F_{k+1} - F_k)``. There is none
  (``None``) if ``F_0 >= L`` (the curve starts at or above the level) or ``F`` never reaches it.
* Its standard error [derived]: ``T`` independent draws give curves ``f_t(x_k)``, the mean curve
  ``F = mean_t f_t`` is crossed. To first order ``x_L`` is a linear combination
  ``sum_k c_k F_k + c_L L`` of the mean curve at the two grid points around the crossing
  (:func:`crossing_gradient`), so every summary ``g`` (a crossing, the width ``x_90 - x_10``, the
  centre) has a per-draw counterpart ``w_t = sum_k c_k f_tk + c_L L_t`` with
  ``Var(g) = Var(w_t) / T``. The width's combination takes both crossings from the same draw, so
  the correlation between them (the same tokens and the same row sample move both) is kept. The SE
  ``s(w) / (c_4(T) sqrt(T))`` divides the sample standard deviation by its mean ``c_4(T) sigma``
  (Gaussian ``w``), unbiased for ``sigma / sqrt(T)`` at every ``T >= 2`` (:func:`draw_se`); each
  draw's curve carries its own within-draw (row-sampling) error, so the spread over draws
  contains it. Calibrated in tests/test_crossing_se.py.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import gammaln

__all__ = [
    "Crossing",
    "first_crossing",
    "crossing_x",
    "crossing_gradient",
    "c4",
    "draw_se",
    "crossing_se",
    "crossing_summary",
    "WIDTH_FRACTIONS",
]

#: The fractions of a normalised step between whose crossings a transition's width is read
#: [choice: 10 % and 90 % of the step] (docs/long-context.md#transition-sharpness-against-context-length).
WIDTH_FRACTIONS = (0.1, 0.9)


class Crossing(NamedTuple):
    """Result of :func:`first_crossing`: ``x = x_k + t (x_{k+1} - x_k)`` (or in ``log x``)."""

    #: where the curve crosses the level
    x: float
    #: the grid interval ``[x_k, x_{k+1}]`` that holds the crossing
    k: int
    #: the fraction of that interval (in ``x`` or ``log x``)
    t: float


def first_crossing(x, F, level: float, *, log_x: bool = False) -> Crossing | None:
    """The first upward crossing of ``level`` by the piecewise-linear curve ``F(x)`` (module
    docstring), or ``None`` if there is none inside the grid.

    Parameters
    ----------
    x : array_like, shape (K,)
        Increasing grid (positive for ``log_x``).
    F : array_like, shape (K,)
        The curve on the grid.
    level : float
        The level ``L``.
    log_x : bool, optional
        Interpolate in ``log x`` (for a grid of scalings spaced geometrically) instead of ``x``.
    """
    x = np.asarray(x, dtype=float)
    F = np.asarray(F, dtype=float)
    below = F < level
    if not below[0]:
        return None
    up = np.flatnonzero(below[:-1] & ~below[1:])
    if up.size == 0:
        return None
    k = int(up[0])
    t = (level - F[k]) / (F[k + 1] - F[k])
    if log_x:
        lx0, lx1 = np.log(x[k]), np.log(x[k + 1])
        return Crossing(float(np.exp(lx0 + t * (lx1 - lx0))), k, float(t))
    return Crossing(float(x[k] + t * (x[k + 1] - x[k])), k, float(t))


def crossing_x(x, F, level: float, *, log_x: bool = False) -> float:
    """Where :func:`first_crossing` crosses (its ``x``), ``nan`` if it does not: the one
    "crossing or nan" of every caller that reads only the place."""
    hit = first_crossing(x, F, level, log_x=log_x)
    return float("nan") if hit is None else hit.x


def crossing_gradient(x, F, hit: Crossing) -> tuple[dict, float]:
    """``d x_L / d F_k`` for the two grid points of a crossing (linear in ``x``) and
    ``d x_L / d L``: the coefficients ``({k: c_k, k+1: c_{k+1}}, c_L)`` of :func:`crossing_se`."""
    x = np.asarray(x, dtype=float)
    F = np.asarray(F, dtype=float)
    _, k, t = hit
    h, dF = x[k + 1] - x[k], F[k + 1] - F[k]
    return {k: -h * (1.0 - t) / dF, k + 1: -h * t / dF}, h / dF


def c4(T: int) -> float:
    """``E[s] / sigma`` for the sample standard deviation of ``T`` Gaussian values:
    ``sqrt(2 / (T - 1)) Gamma(T/2) / Gamma((T - 1)/2)`` (0.798 at ``T = 2``, 0.921 at 4, 0.965 at
    8)."""
    if T < 2:
        raise ValueError(f"T must be an integer >= 2, got {T!r}")
    return float(np.sqrt(2.0 / (T - 1.0)) * np.exp(gammaln(T / 2.0) - gammaln((T - 1.0) / 2.0)))


def draw_se(w) -> float:
    """SE of the mean of ``T`` per-draw values ``w``: ``s(w) / (c_4(T) sqrt(T))``; ``nan`` for one
    draw (module docstring)."""
    w = np.asarray(w, dtype=float)
    T = w.size
    if T < 2:
        return float("nan")
    return float(np.std(w, ddof=1) / (c4(T) * np.sqrt(T)))


def crossing_se(coef: dict, c_level: float, f, levels) -> float:
    """Delta-method SE of ``sum_k coef[k] F_k + c_level L`` over ``T`` draws (module docstring):
    :func:`draw_se` of the draws' combinations.

    Parameters
    ----------
    coef : dict
        Grid index -> coefficient (:func:`crossing_gradient`, or a sum of them for a width).
    c_level : float
        Coefficient of the level (0 for a fixed level).
    f : numpy.ndarray, shape (T, K)
        Each draw's values on the grid.
    levels : numpy.ndarray, shape (T,)
        Each draw's level.
    """
    f = np.atleast_2d(np.asarray(f, dtype=float))
    ks = np.fromiter(coef, dtype=int)
    w = f[:, ks] @ np.array([coef[k] for k in ks]) + c_level * np.asarray(levels, dtype=float)
    return draw_se(w)


def crossing_summary(x, f, fractions=WIDTH_FRACTIONS, centre_level=None) -> dict:
    """Crossings of the mean curve of ``T`` draws, the width and the centre, with delta-method SEs.

    Parameters
    ----------
    x : array_like, shape (K,)
        Increasing grid.
    f : array_like, shape (T, K)
        One curve per draw.
    fractions : (float, float)
        The width's lower and upper levels, fractions of the step (:data:`WIDTH_FRACTIONS`).
    centre_level : float or array_like of shape (T,), optional
        The centre's level, one per draw when it is itself estimated from each draw (its mean is
        crossed and its spread enters the SE); no centre when ``None``.

    Returns
    -------
    dict
        ``x_lo``, ``x_hi``, ``width``, ``centre`` and each ``*_se``, ``corr`` (the correlation over
        draws of the two crossings' per-draw values) and ``trials``; ``nan`` where a level is not
        crossed.
    """
    x = np.asarray(x, dtype=float)
    f = np.atleast_2d(np.asarray(f, dtype=float))
    if f.shape[1] != x.size:
        raise ValueError(f"f must have shape (T, {x.size}) for the grid x, got {f.shape}")
    T = f.shape[0]
    F = f.mean(axis=0)
    nan = float("nan")
    out = {"trials": T, "corr": nan}
    per = {}
    for name, level in (("x_lo", fractions[0]), ("x_hi", fractions[1])):
        hit = first_crossing(x, F, level)
        out[name], out[f"{name}_se"] = nan, nan
        if hit is not None:
            coef, _ = crossing_gradient(x, F, hit)
            ks = np.fromiter(coef, dtype=int)
            per[name] = f[:, ks] @ np.array([coef[k] for k in ks])
            out[name], out[f"{name}_se"] = hit.x, draw_se(per[name])
    if len(per) == 2:
        out["width"] = out["x_hi"] - out["x_lo"]
        out["width_se"] = draw_se(per["x_hi"] - per["x_lo"])
        if T > 2 and np.std(per["x_lo"]) > 0 and np.std(per["x_hi"]) > 0:
            out["corr"] = float(np.corrcoef(per["x_lo"], per["x_hi"])[0, 1])
    else:
        out["width"], out["width_se"] = nan, nan
    if centre_level is not None:
        lv = np.broadcast_to(np.asarray(centre_level, dtype=float), (T,))
        hit = first_crossing(x, F, float(lv.mean()))
        out["centre"], out["centre_se"] = nan, nan
        if hit is not None:
            coef, c_level = crossing_gradient(x, F, hit)
            out["centre"] = hit.x
            out["centre_se"] = crossing_se(coef, c_level, f, lv)
    return out
