"""The tilt of the attention output towards the query, and the floor it puts under lambda below
the transition (docs/finite-d.md#the-tilt-floor-of-lambda). Everything is [derived] (ours).

Gaussian near-simplex tokens ``x_i = sqrt(rho) z_0 + sqrt(1 - rho) z_i``, ``z ~ N(0, I_d / d)``,
``||z_0|| = 1``, at large ``d`` (``y_i ~ x_i``). Far below the transition the self-weight is
negligible and row ``i``'s output is the key law tilted by ``e^{beta <y_i, y_j>}``; tilting the
Gaussian ``z_j`` shifts its mean by ``beta (sqrt(rho (1 - rho)) z_0 + (1 - rho) z_i) / d``, so the
output is ``sqrt(rho) (1 + t) z_0 + sqrt(1 - rho) t z_i`` with the tilt

    t = beta (1 - rho) / d          (= x ln n / d at beta = x gamma_c ln n).

Two outputs then have cosine ``rho (1 + t)^2 / (rho (1 + t)^2 + (1 - rho) t^2)`` against the
inputs' ``rho``: lambda, the ratio of ``1 - cos``, is lifted from 0 to :func:`lambda_floor`.
"""

from __future__ import annotations

import numpy as np

from attnscale.core.validation import check_beta_array, check_rho

__all__ = ["tilt", "lambda_floor", "floor_crossing"]


def tilt(beta, d: int, rho: float):
    """``t = beta (1 - rho) / d``: the mean shift of a key's own component towards the query per
    unit of that component (docs/finite-d.md#the-tilt-floor-of-lambda).

    Parameters
    ----------
    beta : float or array_like
        Inverse temperature(s) ``>= 0``.
    d : int
        Dimension ``>= 1``.
    rho : float
        Token correlation ``0 <= rho < 1``.

    Returns
    -------
    float or numpy.ndarray
        ``t`` with the shape of ``beta``.
    """
    b = check_beta_array(beta)
    rho = check_rho(rho)
    if int(d) != d or d < 1:
        raise ValueError(f"d must be an integer >= 1, got {d!r}")
    out = b * (1.0 - rho) / d
    return out if out.ndim else float(out)


def lambda_floor(beta, d: int, rho: float):
    """lambda of the tilted outputs with no self-weight,
    ``t^2 / (rho (1 + t)^2 + (1 - rho) t^2)`` (docs/finite-d.md#the-tilt-floor-of-lambda): the
    value lambda keeps below the transition at finite ``d``, where Paper A's limit is 0.

    Parameters
    ----------
    beta : float or array_like
        Inverse temperature(s) ``>= 0``.
    d : int
        Dimension ``>= 1``.
    rho : float
        Token correlation ``0 <= rho < 1``.

    Returns
    -------
    float or numpy.ndarray
        The floor, with the shape of ``beta``.
    """
    t = np.asarray(tilt(beta, d, rho))
    out = t * t / (rho * (1.0 + t) ** 2 + (1.0 - rho) * t * t)
    return out if out.ndim else float(out)


def floor_crossing(level: float, rho: float) -> float:
    """The tilt ``t_L`` at which :func:`lambda_floor` reaches ``level``
    (docs/finite-d.md#the-tilt-floor-of-lambda): with ``q = sqrt(L rho / (1 - L (1 - rho)))``,
    ``t_L = q / (1 - q)``. At ``beta = x gamma_c ln n`` the floor reaches ``L`` at
    ``x = t_L d / ln n``, which falls below Paper A's ``x = 1`` once ``ln n / d > t_L``.

    Parameters
    ----------
    level : float
        Level ``0 < L < 1``.
    rho : float
        Token correlation ``0 < rho < 1``.

    Returns
    -------
    float
        ``t_L``; ``inf`` where the floor never reaches ``L`` (``q >= 1``).
    """
    if not (0.0 < level < 1.0):
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    rho = check_rho(rho)
    if rho <= 0.0:
        raise ValueError(f"rho must be in (0, 1) for floor_crossing, got {rho!r}")
    q = np.sqrt(level * rho / (1.0 - level * (1.0 - rho)))
    return float("inf") if q >= 1.0 else float(q / (1.0 - q))
