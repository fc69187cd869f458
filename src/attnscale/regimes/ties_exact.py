"""Exact finite-``d`` theory of ``k`` copies of the query among Paper A's Gaussian tokens
(docs/regimes.md#exact-finite-d-theory-for-k-copies).

The query and ``k - 1`` exact or noisy copies form the top group; the other ``n - k`` tokens have
the finite-``d`` score law of :mod:`attnscale.layer.finite_d`, conditionally i.i.d. given the
common vector's norm ``R_0`` and the query's ``tau_i``, and the copies' cosines are independent of
everything else. The mean group weight ``E[K / (K + S)]`` is then one Laplace integral per
conditioning node (:func:`attnscale.core.laplace.group_mean`), exact up to quadrature like the
self-weight of docs/finite-d.md#exact-self-weight.

* :func:`ties_group_weight` -- the mean weight of the group at ``beta``;
* :func:`ties_exact_critical_beta` -- the ``beta`` where it equals ``level``.
"""

from __future__ import annotations

import math

import numpy as np

from attnscale.core import laplace
from attnscale.core.roots import LEVEL, increasing_root
from attnscale.core.validation import check_real
from attnscale.layer import finite_d
from attnscale.layer.finite_d import laplace as fd_laplace
from attnscale.layer.finite_d import laws
from attnscale.regimes.common import check_level
from attnscale.regimes.ties import copy_gap_rule, ties_critical_beta

__all__ = ["group_transform", "ties_group_weight", "ties_exact_critical_beta"]


def _check(n, k, d, rho, copy_noise, quadrature):
    n, d, rho = finite_d.check_args(n, d, rho)
    k = check_real("k", k, low=1.0, high=n - 1.0, low_open=False, high_open=False)
    copy_noise = check_real("copy_noise", copy_noise, low=0.0)
    if quadrature not in laws.QUADRATURE_PRESETS:
        presets = sorted(laws.QUADRATURE_PRESETS)
        raise ValueError(f"quadrature must be one of {presets}, got {quadrature!r}")
    return n, k, d, rho, copy_noise


def group_transform(k: float, beta: float, gaps: np.ndarray, weights: np.ndarray):
    """``t -> ln G(e^t)``, ``G(s) = E[K e^{-s K}]``, for the group ``K = 1 + sum_{j<k} X_j`` of the
    query (weight 1) and ``k - 1`` copies with i.i.d. relative weights ``X = e^{-beta gap}``
    (docs/regimes.md#exact-finite-d-theory-for-k-copies).

    With ``chi(s) = E e^{-s X}`` and ``mu(s) = E[X e^{-s X}]``,
    ``G = -d/ds (e^{-s} chi^{k-1}) = e^{-s} chi^{k-1} (1 + (k - 1) mu / chi)``; exact copies
    (``gap = 0``) give ``G = k e^{-k s}``.

    Parameters
    ----------
    k : float
        Group size (the query included), ``>= 1``; a real ``k`` continues the formula between
        integers (a group of weight ``k`` for exact copies).
    beta : float
        Inverse temperature.
    gaps, weights : numpy.ndarray
        Quadrature rule of a copy's gap ``1 - cos`` (:func:`attnscale.regimes.ties.copy_gap_rule`).
    """
    x = np.exp(-beta * np.asarray(gaps, dtype=np.float64))
    w = np.asarray(weights, dtype=np.float64)
    if k == 1 or np.all(x == 1.0):

        def exact(t):
            return math.log(k) - k * np.exp(t)

        return exact

    def noisy(t):
        sx = np.exp(t)[:, None] * x[None, :]
        e = np.exp(-sx)
        chi = e @ w
        log_chi = laplace.log_one_minus(-np.expm1(-sx) @ w, chi)
        mu = (e * x) @ w
        return -np.exp(t) + (k - 1) * log_chi + np.log1p((k - 1) * mu / chi)

    return noisy


def ties_group_weight(n, k, d, rho, beta, *, copy_noise: float = 0.0, quadrature: str = "standard"):
    """Mean weight of the top group (the query and ``k - 1`` copies) among Gaussian near-simplex
    tokens, exact up to quadrature (docs/regimes.md#exact-finite-d-theory-for-k-copies).

    ``E[W | R_0, tau_i] = int_0^inf G(s) phi(s)^{n-k} ds`` with ``G`` of :func:`group_transform`
    and ``phi`` the Laplace transform of one other token's term ``e^{beta (c - 1)}``
    (:func:`attnscale.layer.finite_d.laplace.row_term_transform`), averaged over the nodes of
    ``(R_0, tau_i)``. ``k = 1`` is :func:`attnscale.layer.finite_d.self_weight`.

    Parameters
    ----------
    n, d : int
        Tokens ``2 <= n <= 1e7`` (the query, its copies and the others) and dimension
        ``3 <= d <= 4096``.
    k : float
        Group size, ``1 <= k <= n - 1`` (an integer for a real group; real values continue the
        formula between integers, as for the lines of the regimes figure).
    rho : float
        Nominal correlation ``0 <= rho < 1``.
    beta : float or array_like
        Inverse temperature(s) ``>= 0``.
    copy_noise : float, optional
        Noise scale of the copies ``(y + copy_noise xi) / ||.||``, ``xi ~ N(0, I_d / d)``
        (0: exact copies).
    quadrature : {"standard", "fine"}
        Quadrature preset (:data:`attnscale.layer.finite_d.laws.QUADRATURE_PRESETS`).

    Returns
    -------
    float or numpy.ndarray
        ``E[W]`` with the shape of ``beta``.
    """
    n, k, d, rho, copy_noise = _check(n, k, d, rho, copy_noise, quadrature)
    b = np.asarray(beta, dtype=np.float64)
    if not np.all(np.isfinite(b)) or np.any(b < 0):
        raise ValueError(f"beta must be finite and >= 0, got {beta!r}")
    tab = laws.table(d, rho, quadrature)
    gaps, weights = copy_gap_rule(copy_noise, d)
    out = np.array([_mean(tab, n, k, float(x), gaps, weights, quadrature) for x in b.ravel()])
    return out.reshape(b.shape) if b.ndim else float(out[0])


def _mean(tab, n, k, beta, gaps, weights, quadrature) -> float:
    h = laws.QUADRATURE_PRESETS[quadrature]["t_step"]
    series, direct, m1max = fd_laplace.row_term_transform(tab, beta)
    t_lo = min(-math.log(k + (n - k) * m1max) - 34.0, laplace.T_SWITCH - 1.0)
    log_g = group_transform(k, beta, gaps, weights)
    cond = laplace.group_mean(n - k, log_g, series, direct, h=h, t_lo=t_lo)
    return float(tab.weight @ cond)


def ties_exact_critical_beta(
    n, k, d, rho, *, copy_noise: float = 0.0, level: float = LEVEL, xtol: float = 1e-6
) -> float:
    """``beta*`` where :func:`ties_group_weight` equals ``level``
    (docs/regimes.md#exact-finite-d-theory-for-k-copies).

    The bracket starts at the first-order group formula
    (:func:`attnscale.regimes.ties.ties_critical_beta` with the within-row variance) where it has
    a root, at ``ln((n - k) / k) / (1 - rho)`` otherwise, and is widened by halving / doubling;
    ``brentq`` (relative tolerance ``xtol``) finds the root
    (:func:`attnscale.core.roots.increasing_root`). 0 if the group already holds
    ``level`` at ``beta = 0`` (``k / n >= level``).

    Parameters
    ----------
    n, k, d, rho, copy_noise
        As in :func:`ties_group_weight`.
    level : float, optional
        Level of the mean group weight, ``0 < level < 1``.
    xtol : float, optional
        Relative tolerance of the root.
    """
    n, k, d, rho, copy_noise = _check(n, k, d, rho, copy_noise, "standard")
    level = check_level(level)
    if k / n >= level:
        return 0.0
    tab = laws.table(d, rho, "standard")
    gaps, weights = copy_gap_rule(copy_noise, d)

    def f(b):
        return _mean(tab, n, k, b, gaps, weights, "standard") - level

    s2 = finite_d.first_order_variance(d, rho)
    guess = float(
        ties_critical_beta(n, k, 1.0 - rho, s2=s2, copy_noise=copy_noise, d=d, level=level)
    )
    if not math.isfinite(guess) or guess <= 0.0:
        guess = max(math.log((n - k) / k), 1.0) / (1.0 - rho)
    return increasing_root(f, 0.95 * guess, 1.05 * guess, rtol=xtol)
