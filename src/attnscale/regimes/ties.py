"""``k`` near-ties: the query and ``k - 1`` exact or noisy copies against the rest
(docs/regimes.md#near-ties, docs/regimes.md#noisy-copies, docs/regimes.md#practical-reading).

:func:`ties_critical_beta` -- ``ln((n - k) / k) / Delta``, ``(1 - kappa) gamma_c`` for
``k = n^kappa``; :func:`copy_cosines` and :func:`copy_factor` -- noisy copies;
:func:`ties_shift` and :func:`ties_for_shift` -- the practical reading.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from scipy import optimize, special

from attnscale.core.roots import LEVEL
from attnscale.core.validation import check_int, check_real, check_rho
from attnscale.layer import finite_d
from attnscale.regimes.common import check_level, logit, n_array, out_like

__all__ = [
    "copy_cosines",
    "copy_factor",
    "copy_gap_rule",
    "ties_critical_beta",
    "ties_shift",
    "ties_for_shift",
]


def copy_cosines(noise, a, w, d: int) -> np.ndarray:
    """Cosine between a unit query ``y`` and its noisy copy ``(y + noise xi) / ||y + noise xi||``,
    ``xi ~ N(0, I_d / d)``, from the copy's statistics ``a = sqrt(d) <xi, y> ~ N(0, 1)`` and
    ``w = d ||xi - <xi, y> y||^2 ~ chi^2_{d-1}`` (docs/regimes.md#noisy-copies):
    ``(1 + noise a / sqrt d) / sqrt((1 + noise a / sqrt d)^2 + noise^2 w / d)``.
    ``noise = 0`` gives exact copies (cosine 1)."""
    noise = check_real("noise", noise, low=0.0)
    d = check_int("d", d, minimum=2)
    a = np.asarray(a, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    if noise == 0.0:
        return np.ones(np.broadcast(a, w).shape)
    p = 1.0 + noise * a / math.sqrt(d)
    return p / np.sqrt(p * p + noise * noise * w / d)


@cache
def _copy_nodes(d: int, m: int = 32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Product rule for ``(a, w)``: Gauss-Hermite in ``a`` and in the normal score of ``w``."""
    z, wz = special.roots_hermitenorm(m)
    wz = wz / wz.sum()
    a = z
    with np.errstate(under="ignore"):
        wq = special.chdtri(d - 1, special.ndtr(-z))  # chi^2_{d-1} quantile at Phi(z)
    A, W = np.meshgrid(a, wq, indexing="ij")
    P = np.outer(wz, wz)
    return A.ravel(), W.ravel(), P.ravel()


def copy_gap_rule(noise, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Quadrature rule for the law of a noisy copy's gap ``1 - cos`` (:func:`copy_cosines`): the
    product Gauss-Hermite rule of :func:`copy_factor` (32 x 32 nodes in ``a`` and in the normal
    score of ``w``), as nodes ``1 - cos`` and weights summing to 1
    (docs/regimes.md#noisy-copies). Exact copies (``noise = 0``) give the single node 0."""
    noise = check_real("noise", noise, low=0.0)
    d = check_int("d", d, minimum=2)
    if noise == 0.0:
        return np.zeros(1), np.ones(1)
    A, W, P = _copy_nodes(d)
    return 1.0 - copy_cosines(noise, A, W, d), P


def copy_factor(beta, noise, d: int):
    """``E[e^{-beta (1 - cos)}]`` over the law of a noisy copy's cosine (:func:`copy_cosines`):
    the weight one copy adds to the top group relative to the query's own
    (docs/regimes.md#noisy-copies). 1 for exact copies; at large ``d`` about
    ``exp(-beta delta)`` with ``delta = 1 - 1/sqrt(1 + noise^2)``. Product Gauss-Hermite rule
    (32 x 32 nodes; ``w`` through its normal score), vectorised over ``beta``.

    Parameters
    ----------
    beta : float or array_like
        Inverse temperature(s), ``>= 0``.
    noise : float
        Noise scale of the copies, ``>= 0``.
    d : int
        Dimension, ``>= 2``.
    """
    b = np.asarray(beta, dtype=np.float64)
    if np.any(~np.isfinite(b)) or np.any(b < 0):
        raise ValueError(f"beta must be finite and >= 0, got {beta!r}")
    noise = check_real("noise", noise, low=0.0)
    d = check_int("d", d, minimum=2)
    if noise == 0.0:
        return out_like(np.ones(b.shape), beta)
    A, W, P = _copy_nodes(d)
    gap = 1.0 - copy_cosines(noise, A, W, d)
    out = np.exp(-np.multiply.outer(b, gap)) @ P
    return out_like(out, beta)


def _ties_args(n, k, delta, s2, level):
    nn = n_array(n)
    kk = n_array(k, "k", low=1.0)
    nn, kk = np.broadcast_arrays(nn, kk)
    if np.any(kk >= nn):
        raise ValueError("k must be smaller than n (at least one token outside the top group)")
    delta = check_real("delta", delta, low=0.0, low_open=True)
    s2 = check_real("s2", s2, low=0.0)
    return nn, kk, delta, s2, check_level(level)


def _quadratic_root(L: np.ndarray, delta: float, s2: float) -> np.ndarray:
    """Smaller root of ``beta delta - beta^2 s2 / 2 = L`` (0 if ``L <= 0``, nan if none)."""
    L = np.asarray(L, dtype=np.float64)
    disc = delta * delta - 2.0 * s2 * np.maximum(L, 0.0)
    with np.errstate(invalid="ignore"):
        root = 2.0 * L / (delta + np.sqrt(disc))
    return np.where(L <= 0.0, 0.0, np.where(disc >= 0.0, root, np.nan))


def ties_critical_beta(
    n,
    k,
    delta: float,
    *,
    s2: float = 0.0,
    copy_gap: float = 0.0,
    copy_noise: float = 0.0,
    d: int | None = None,
    level: float = LEVEL,
):
    """``beta*`` of the top group of ``k`` tokens (the query and ``k - 1`` copies) against
    ``n - k`` others ``delta`` below (docs/regimes.md#near-ties).

    The group's weight is ``k_eff / (k_eff + (n - k) e^{-beta delta + beta^2 s2 / 2})`` with
    ``k_eff(beta) = 1 + (k - 1) m(beta)``; ``s2`` is the within-row variance of the others' scores
    (0: Paper A's exact ``rho``; finite ``d``: :func:`attnscale.layer.finite_d.first_order_variance`,
    the first-order Gaussian row sum of docs/finite-d.md#first-order-approximation) and ``m`` the
    copies' relative weight: 1 for exact ties, ``e^{-beta copy_gap}`` for copies at cosine
    ``1 - copy_gap``, :func:`copy_factor` for noisy copies. With exact ties and ``s2 = 0``,
    ``beta* = ln((n - k) / k) / delta``; with ``k = n^kappa`` the critical
    ``gamma = beta* / ln n -> (1 - kappa) / delta``.

    Parameters
    ----------
    n, k : float or array_like
        Tokens (``>= 2``) and group size (``1 <= k < n``); broadcast together.
    delta : float
        Gap between the group's top score and the others' mean (``1 - rho``), ``> 0``.
    s2 : float, optional
        Within-row variance of the others' scores, ``>= 0``.
    copy_gap : float, optional
        ``1 - cosine`` of every copy, ``>= 0`` (0: exact ties).
    copy_noise, d : float, int, optional
        Noisy copies ``y + copy_noise xi`` in dimension ``d`` (:func:`copy_factor`); ``d`` is
        needed when ``copy_noise > 0``. At most one of ``copy_gap``, ``copy_noise`` is non-zero.
    level : float, optional
        Level of the group weight, ``0 < level < 1``.

    Returns
    -------
    float or numpy.ndarray
        ``beta*`` (0 if the group holds ``level`` already at ``beta = 0``; nan if the annealed
        equation has no root, ``2 s2 L > delta^2``).
    """
    nn, kk, delta, s2, level = _ties_args(n, k, delta, s2, level)
    copy_gap = check_real("copy_gap", copy_gap, low=0.0)
    copy_noise = check_real("copy_noise", copy_noise, low=0.0)
    if copy_gap > 0 and copy_noise > 0:
        raise ValueError("copy_gap and copy_noise: at most one of them may be non-zero")
    if copy_noise > 0:
        if d is None:
            raise ValueError("d must be given (an integer >= 2) when copy_noise > 0")
        d = check_int("d", d, minimum=2)
    lg = logit(level)
    exact = _quadratic_root(np.log((nn - kk) / kk) + lg, delta, s2)
    if copy_gap == 0.0 and copy_noise == 0.0:
        return out_like(exact, n, k)
    one = _quadratic_root(np.log(nn - kk) + lg, delta, s2)

    def m(b):
        if copy_noise > 0:
            return copy_factor(b, copy_noise, d)
        return math.exp(-b * copy_gap)

    out = np.empty(nn.shape)
    for i in np.ndindex(nn.shape):
        lo, hi, nv, kv = exact[i], one[i], nn[i], kk[i]
        if kv == 1.0 or lo == hi:
            out[i] = lo
            continue
        if not np.isfinite(hi):
            out[i] = np.nan
            continue

        def f(b, nv=nv, kv=kv):
            return (
                b * delta - 0.5 * b * b * s2 - math.log(nv - kv) + math.log1p((kv - 1) * m(b)) - lg
            )

        out[i] = optimize.brentq(f, lo, hi, xtol=1e-13, rtol=1e-13) if f(lo) < 0 < f(hi) else lo
    return out_like(out, n, k)


def ties_shift(n, k, d: int, rho: float, *, copy_cosine: float = 1.0, level: float = LEVEL):
    """Relative drop ``1 - beta*_k / beta*_1`` of the critical scale when the query has ``k - 1``
    copies at cosine ``copy_cosine``, Gaussian tokens at ``(d, rho)`` with the first-order row sum
    (within-row variance :func:`attnscale.layer.finite_d.first_order_variance`)
    (docs/regimes.md#practical-reading). ``gamma*`` drops by the same fraction."""
    d = check_int("d", d, minimum=3)
    rho = check_rho(rho)
    c = check_real("copy_cosine", copy_cosine, low=-1.0, high=1.0)
    s2 = finite_d.first_order_variance(d, rho)
    base = ties_critical_beta(n, 1, 1.0 - rho, s2=s2, level=level)
    bk = ties_critical_beta(n, k, 1.0 - rho, s2=s2, copy_gap=1.0 - c, level=level)
    return out_like(1.0 - np.asarray(bk) / np.asarray(base), n, k)


def ties_for_shift(
    n, d: int, rho: float, *, shift: float = 0.1, copy_cosine: float = 1.0, level: float = LEVEL
):
    """The group size ``k`` (real-valued; the query and ``k - 1`` copies at cosine
    ``copy_cosine``) that lowers ``beta*`` (and ``gamma*``) by the fraction ``shift`` for Gaussian
    tokens at ``(d, rho)`` (docs/regimes.md#practical-reading).

    With the first-order row sum, ``beta_t = (1 - shift) beta*_1`` and
    ``L = beta_t (1 - rho) - beta_t^2 s2 / 2 - logit(level)``, the group equation
    ``(n - k) = e^L (1 + (k - 1) m)``, ``m = e^{-beta_t (1 - copy_cosine)}``, gives
    ``k = (n - e^L (1 - m)) / (1 + e^L m)``. ``inf`` if no ``k <= n - 1`` is enough.

    Parameters
    ----------
    n : float or array_like
        Context length(s), ``>= 3``.
    d : int
        Head dimension, ``>= 3``.
    rho : float
        Nominal correlation, ``0 <= rho < 1``.
    shift : float, optional
        Relative drop of the critical scale, ``0 < shift < 1``.
    copy_cosine : float, optional
        Cosine of the copies with the query, in ``(-1, 1]`` (1: exact near-ties).
    level : float, optional
        Level of the group weight.
    """
    nn = n_array(n, low=3.0)
    d = check_int("d", d, minimum=3)
    rho = check_rho(rho)
    shift = check_real("shift", shift, low=0.0, high=1.0, low_open=True, high_open=True)
    c = check_real("copy_cosine", copy_cosine, low=-1.0, high=1.0, low_open=True)
    level = check_level(level)
    s2 = finite_d.first_order_variance(d, rho)
    base = ties_critical_beta(nn, np.ones_like(nn), 1.0 - rho, s2=s2, level=level)
    bt = (1.0 - shift) * np.asarray(base)
    L = bt * (1.0 - rho) - 0.5 * bt * bt * s2 - logit(level)
    m = np.exp(-bt * (1.0 - c))
    eL = np.exp(L)
    k = (nn - eL * (1.0 - m)) / (1.0 + eL * m)
    k = np.where((k > nn - 1.0) | ~np.isfinite(k), np.inf, np.maximum(k, 1.0))
    return out_like(k, n)
