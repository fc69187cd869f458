"""Standard errors of the crossings of a mean curve over draws: the 10 %-90 % width and the centre
(docs/long-context.md#width-centre-and-their-standard-errors) [derived].

``T`` independent draws give curves ``f_t(x_k)`` on one grid; the mean curve ``F = mean_t f_t`` is
interpolated linearly and a level ``L`` is crossed at ``x_L``. To first order ``x_L`` is a linear
combination of the mean curve at the two grid points around the crossing (and of ``L``), so every
summary ``g`` (a crossing, the width ``x_90 - x_10``, the centre) is ``g ~ sum_k c_k F_k + c_L L``
and its per-draw counterpart ``w_t = sum_k c_k f_tk + c_L L_t`` has ``Var(g) = Var(w_t) / T``: the
delta method over draws. The width's combination takes both crossings from the same draw, so the
correlation between them (the same tokens and the same row sample move both) is kept. The SE
``s(w) / (c_4(T) sqrt(T))`` divides the sample standard deviation by its mean ``c_4(T) sigma``
(Gaussian ``w``), so that the SE is unbiased for ``sigma / sqrt(T)`` at every ``T >= 2``. Each
draw's curve carries its own within-draw (row-sampling) error, so the spread over draws contains it.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

__all__ = ["crossing_gradient", "c4", "draw_se", "crossing_summary"]


def crossing_gradient(x, F, level: float):
    """First upward crossing of ``level`` by the piecewise-linear ``F(x)`` and its gradient.

    ``F_k < L <= F_{k+1}`` at the first such ``k``: ``x_L = x_k + t h``, ``t = (L - F_k)/(F_{k+1} - F_k)``,
    ``h = x_{k+1} - x_k``; ``d x_L / d F_k = -h (1 - t) / dF``, ``d x_L / d F_{k+1} = -h t / dF``,
    ``d x_L / d L = h / dF`` (``dF = F_{k+1} - F_k``).

    Parameters
    ----------
    x, F : array_like, shape (K,)
        Increasing grid and the curve on it.
    level : float
        The level ``L``.

    Returns
    -------
    tuple or None
        ``(x_L, coef, c_level)`` with ``coef`` a dict ``{k: dx_L/dF_k}``, or ``None`` when ``F``
        does not cross ``L`` upwards inside the grid (``F_0 >= L`` or no crossing).
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
    h, dF = x[k + 1] - x[k], F[k + 1] - F[k]
    t = (level - F[k]) / dF
    return float(x[k] + t * h), {k: -h * (1.0 - t) / dF, k + 1: -h * t / dF}, float(h / dF)


def c4(T: int) -> float:
    """``E[s] / sigma`` for the sample standard deviation of ``T`` Gaussian values:
    ``sqrt(2 / (T - 1)) Gamma(T/2) / Gamma((T - 1)/2)`` (0.798 at ``T = 2``, 0.921 at 4, 0.965 at 8)."""
    if T < 2:
        raise ValueError(f"T must be an integer >= 2, got {T!r}")
    return float(np.sqrt(2.0 / (T - 1.0)) * np.exp(gammaln(T / 2.0) - gammaln((T - 1.0) / 2.0)))


def draw_se(w) -> float:
    """SE of the mean of ``T`` per-draw values ``w``: ``s(w) / (c_4(T) sqrt(T))``; ``nan`` for one draw
    (module docstring)."""
    w = np.asarray(w, dtype=float)
    T = w.size
    if T < 2:
        return float("nan")
    return float(np.std(w, ddof=1) / (c4(T) * np.sqrt(T)))


def _combine(f, coef: dict, c_level: float, levels) -> np.ndarray:
    ks = np.fromiter(coef, dtype=int)
    return f[:, ks] @ np.array([coef[k] for k in ks]) + c_level * levels


def crossing_summary(x, f, levels=(0.1, 0.9), centre_level=None) -> dict:
    """Crossings of the mean curve of ``T`` draws, the width and the centre, with delta-method SEs.

    Parameters
    ----------
    x : array_like, shape (K,)
        Increasing grid.
    f : array_like, shape (T, K)
        One curve per draw.
    levels : (float, float)
        The width's lower and upper levels.
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
    for name, level in (("x_lo", levels[0]), ("x_hi", levels[1])):
        hit = crossing_gradient(x, F, level)
        out[name], out[f"{name}_se"] = nan, nan
        if hit is not None:
            per[name] = _combine(f, hit[1], 0.0, np.zeros(T))
            out[name], out[f"{name}_se"] = hit[0], draw_se(per[name])
    if len(per) == 2:
        out["width"] = out["x_hi"] - out["x_lo"]
        out["width_se"] = draw_se(per["x_hi"] - per["x_lo"])
        if T > 2 and np.std(per["x_lo"]) > 0 and np.std(per["x_hi"]) > 0:
            out["corr"] = float(np.corrcoef(per["x_lo"], per["x_hi"])[0, 1])
    else:
        out["width"], out["width_se"] = nan, nan
    if centre_level is not None:
        lv = np.broadcast_to(np.asarray(centre_level, dtype=float), (T,))
        hit = crossing_gradient(x, F, float(lv.mean()))
        out["centre"], out["centre_se"] = nan, nan
        if hit is not None:
            out["centre"] = hit[0]
            out["centre_se"] = draw_se(_combine(f, hit[1], hit[2], lv))
    return out
