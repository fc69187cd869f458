"""The first upward crossing of a level by a curve on a grid, and its standard error by the delta
method over draws (docs/long-context.md#transition-sharpness-against-context-length).

One definition for every caller: the transition widths and centres of the sharpness summary, the
finite-d critical point of learned scores (:func:`attnscale.layer.scores.attention.self_weight_critical_beta`)
and the findings of the causal family.

* The crossing of ``L`` by ``F`` on the increasing grid ``x`` is the first upward one,
  ``F_k < L <= F_{k+1}``, interpolated linearly in ``x`` (``log_x=False``) or in ``log x``:
  ``x_L = x_k + t (x_{k+1} - x_k)`` with ``t = (L - F_k) / (F_{k+1} - F_k)``. There is none
  (``None``) if ``F_0 >= L`` (the curve starts at or above the level) or ``F`` never reaches it.
* Its standard error (:func:`crossing_se`, for the linear interpolation): to first order
  ``x_L`` is a linear combination ``sum_k c_k F_k + c_L L`` (:func:`crossing_gradient`); the same
  combination of each draw's values ``w_t`` has ``Var(mean) = s^2(w_t) / T``. The within-draw
  error (the same combination of the within-draw SEs, with ``|c_k|``: errors at neighbouring
  grid points taken as fully correlated, a bound) is a floor:
  ``SE^2 = max(s^2(w_t), mean_t (sum_k |c_k| se_tk)^2) / T``; ``nan`` for one draw
  (docs/long-context.md#within-draw-and-between-draw-variance). This is the current estimate,
  conservative with two draws; a calibrated one may replace it here, for every caller at once.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Crossing", "first_crossing", "crossing_gradient", "crossing_se"]


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


def crossing_gradient(x, F, hit: Crossing) -> tuple[dict, float]:
    """``d x_L / d F_k`` for the two grid points of a crossing (linear in ``x``) and
    ``d x_L / d L``: the coefficients ``({k: c_k, k+1: c_{k+1}}, c_L)`` of :func:`crossing_se`."""
    x = np.asarray(x, dtype=float)
    F = np.asarray(F, dtype=float)
    _, k, t = hit
    h, dF = x[k + 1] - x[k], F[k + 1] - F[k]
    return {k: -h * (1.0 - t) / dF, k + 1: -h * t / dF}, h / dF


def crossing_se(coef: dict, c_level: float, f, s, levels) -> float:
    """Delta-method SE of ``sum_k coef[k] F_k + c_level L`` over ``T`` draws (module docstring):
    the larger of the spread of the draws' combinations and the within-draw floor, over ``T``.

    Parameters
    ----------
    coef : dict
        Grid index -> coefficient (:func:`crossing_gradient`, or a sum of them for a width).
    c_level : float
        Coefficient of the level (0 for a fixed level).
    f, s : numpy.ndarray, shape (T, K)
        Each draw's values and within-draw SEs on the grid.
    levels : numpy.ndarray, shape (T,)
        Each draw's level.
    """
    T = f.shape[0]
    if T < 2:
        return float("nan")
    ks = np.fromiter(coef, dtype=int)
    c = np.array([coef[k] for k in ks])
    w = f[:, ks] @ c + c_level * levels
    floor = np.mean((s[:, ks] @ np.abs(c)) ** 2)
    return float(np.sqrt(max(np.var(w, ddof=1), floor) / T))
