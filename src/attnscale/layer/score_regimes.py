"""What sets the order of the critical scale: predictions and samplers (issue 20, docs/regimes.md).

One query row of softmax attention, ``A_j = e^{beta c_j} / sum_l e^{beta c_l}``, and one
observable for every score model: the mean weight of the *top group*
(docs/regimes.md#the-observable), the query's own token plus its exact or noisy copies when the
model plants them, the highest-scoring key when it does not. Its critical scale ``beta*(n)`` is where
that mean crosses ``level`` (1/2 unless stated).

Predictions (vectorised over ``n``):

* :func:`gap_top_weight`, :func:`gap_critical_beta` -- self-score 1, the other ``n - 1`` scores
  ``rho`` (Paper A's simplex): ``ln(n - 1) / (1 - rho)``, order ``log n``
  (docs/regimes.md#gap-regime-paper-a).
* :func:`rem_top_weight_mean`, :func:`rem_critical_beta`, :func:`rem_freezing_beta`,
  :func:`pd_top_weight_mean`, :func:`pd_critical_alpha`, :func:`gaussian_tail_scale` -- ``n``
  i.i.d. ``N(mu, s^2)`` scores, no self-score (random-energy model): exact finite-``n`` law by
  quadrature, its Poisson-Dirichlet limit and the freezing point ``sqrt(2 ln n) / s``, order
  ``sqrt(log n) / s`` (docs/regimes.md#no-gap-the-random-energy-model).
* :func:`finite_d_critical_beta`, :func:`log_n_breakdown` -- Paper A's Gaussian tokens at finite
  ``d`` (:mod:`attnscale.layer.finite_d`), and where their ``log n`` scale ends
  (docs/regimes.md#finite-d-where-log-n-ends).
* :func:`ties_critical_beta`, :func:`copy_factor`, :func:`ties_for_shift`, :func:`ties_shift` --
  ``k`` near-ties: ``ln((n - k) / k) / Delta``, ``(1 - kappa) gamma_c`` for ``k = n^kappa``, noisy
  copies and the practical reading (docs/regimes.md#near-ties).

Samplers (random numbers only from a :class:`numpy.random.Generator` built by
:mod:`attnscale.core.seeding`; docs/regimes.md#samplers): :func:`rem_scores`,
:func:`rem_scores_above` (the keys above a threshold, exactly, with
:func:`rem_truncation_bias` / :func:`rem_truncation_threshold` bounding what the rest can
change), :func:`gaussian_token_draw` / :func:`gaussian_token_row` (one query row of Gaussian
near-simplex tokens in ``O(n)`` work, any ``d``, with optional copies of the query) and
:func:`copy_cosines`. :func:`group_weight` evaluates the observable of one row.
"""

from __future__ import annotations

import math
from functools import cache
from math import factorial

import numpy as np
from scipy import integrate, optimize, special

from attnscale.core.validation import check_int, check_real
from attnscale.layer import finite_d

__all__ = [
    "LEVEL",
    "gap_top_weight",
    "gap_critical_beta",
    "copy_cosines",
    "copy_factor",
    "ties_critical_beta",
    "ties_shift",
    "ties_for_shift",
    "gaussian_tail_scale",
    "rem_freezing_beta",
    "pd_top_weight_mean",
    "pd_critical_alpha",
    "rem_top_weight_mean",
    "rem_critical_beta",
    "rem_top_weight_slope",
    "rem_scores",
    "rem_scores_above",
    "rem_truncation_bias",
    "rem_truncation_threshold",
    "gaussian_token_draw",
    "gaussian_token_row",
    "group_weight",
    "group_weight_grid",
    "finite_d_critical_beta",
    "log_n_breakdown",
]

#: [choice] The level of the mean top-group weight that defines ``beta*``: 1/2, the simplex value
#: at Paper A's ``gamma_c`` (docs/regimes.md#the-observable).
LEVEL = 0.5

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


# =========================================================================== argument checks
def _n_array(n, name: str = "n", low: float = 2.0) -> np.ndarray:
    """``n`` as a float array (any shape), every entry finite and ``>= low``; raise naming ``name``."""
    arr = np.asarray(n)
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        raise TypeError(f"{name} must be real numbers >= {low:g}, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    bad = ~np.isfinite(arr) | (arr < low)
    if np.any(bad):
        raise ValueError(f"{name} must be finite and >= {low:g}, got {arr[bad].ravel()[0]!r}")
    return arr


def _out(arr: np.ndarray, *like):
    """A scalar when every input in ``like`` is a scalar, else the array."""
    return float(np.asarray(arr)) if all(np.ndim(x) == 0 for x in like) else np.asarray(arr)


def _level(level) -> float:
    return check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)


def _logit(level: float) -> float:
    return math.log(level / (1.0 - level))


def _rho(rho) -> float:
    return check_real("rho", rho, low=0.0, high=1.0, high_open=True)


def _beta(beta) -> float:
    return check_real("beta", beta, low=0.0)


# =========================================================================== gap regime
def gap_top_weight(n, rho, beta):
    """Self-weight with self-score 1 and every other score ``rho`` (docs/regimes.md#gap-regime-paper-a).

    ``A_self = 1 / (1 + (n - 1) e^{-beta (1 - rho)})``: deterministic, and the top weight since
    ``1 > rho``.

    Parameters
    ----------
    n : float or array_like
        Tokens, ``>= 2``.
    rho : float
        The other scores, ``0 <= rho < 1`` (the gap is ``1 - rho``).
    beta : float
        Inverse temperature, ``>= 0``.

    Returns
    -------
    float or numpy.ndarray
        ``A_self`` with the shape of ``n``.
    """
    nn = _n_array(n)
    rho, beta = _rho(rho), _beta(beta)
    return _out(1.0 / (1.0 + (nn - 1.0) * np.exp(-beta * (1.0 - rho))), n)


def gap_critical_beta(n, rho, *, level: float = LEVEL):
    """``beta*`` of the gap model: ``ln((n - 1) level / (1 - level)) / (1 - rho)``, i.e.
    ``ln(n - 1) / (1 - rho) = gamma_c ln(n - 1)`` at ``level = 1/2`` (Paper A's critical line;
    docs/regimes.md#gap-regime-paper-a). 0 where the self-weight already exceeds ``level`` at
    ``beta = 0`` (``n <= 1 / level``).

    Parameters
    ----------
    n : float or array_like
        Tokens, ``>= 2``.
    rho : float
        Other scores, ``0 <= rho < 1``.
    level : float, optional
        Level of the self-weight, ``0 < level < 1``.

    Returns
    -------
    float or numpy.ndarray
        ``beta*`` with the shape of ``n``.
    """
    nn = _n_array(n)
    rho, level = _rho(rho), _level(level)
    return _out(np.maximum(0.0, (np.log(nn - 1.0) + _logit(level)) / (1.0 - rho)), n)


# =========================================================================== near-ties
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
        return _out(np.ones(b.shape), beta)
    A, W, P = _copy_nodes(d)
    gap = 1.0 - copy_cosines(noise, A, W, d)
    out = np.exp(-np.multiply.outer(b, gap)) @ P
    return _out(out, beta)


def _ties_args(n, k, delta, s2, level):
    nn = _n_array(n)
    kk = _n_array(k, "k", low=1.0)
    nn, kk = np.broadcast_arrays(nn, kk)
    if np.any(kk >= nn):
        raise ValueError("k must be smaller than n (at least one token outside the top group)")
    delta = check_real("delta", delta, low=0.0, low_open=True)
    s2 = check_real("s2", s2, low=0.0)
    return nn, kk, delta, s2, _level(level)


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
    logit = _logit(level)
    exact = _quadratic_root(np.log((nn - kk) / kk) + logit, delta, s2)
    if copy_gap == 0.0 and copy_noise == 0.0:
        return _out(exact, n, k)
    one = _quadratic_root(np.log(nn - kk) + logit, delta, s2)

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
                b * delta
                - 0.5 * b * b * s2
                - math.log(nv - kv)
                + math.log1p((kv - 1) * m(b))
                - logit
            )

        out[i] = optimize.brentq(f, lo, hi, xtol=1e-13, rtol=1e-13) if f(lo) < 0 < f(hi) else lo
    return _out(out, n, k)


def ties_shift(n, k, d: int, rho: float, *, copy_cosine: float = 1.0, level: float = LEVEL):
    """Relative drop ``1 - beta*_k / beta*_1`` of the critical scale when the query has ``k - 1``
    copies at cosine ``copy_cosine``, Gaussian tokens at ``(d, rho)`` with the first-order row sum
    (within-row variance :func:`attnscale.layer.finite_d.first_order_variance`)
    (docs/regimes.md#practical-reading). ``gamma*`` drops by the same fraction."""
    d = check_int("d", d, minimum=3)
    rho = _rho(rho)
    c = check_real("copy_cosine", copy_cosine, low=-1.0, high=1.0)
    s2 = finite_d.first_order_variance(d, rho)
    base = ties_critical_beta(n, 1, 1.0 - rho, s2=s2, level=level)
    bk = ties_critical_beta(n, k, 1.0 - rho, s2=s2, copy_gap=1.0 - c, level=level)
    return _out(1.0 - np.asarray(bk) / np.asarray(base), n, k)


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
    nn = _n_array(n, low=3.0)
    d = check_int("d", d, minimum=3)
    rho = _rho(rho)
    shift = check_real("shift", shift, low=0.0, high=1.0, low_open=True, high_open=True)
    c = check_real("copy_cosine", copy_cosine, low=-1.0, high=1.0, low_open=True)
    level = _level(level)
    s2 = finite_d.first_order_variance(d, rho)
    base = ties_critical_beta(nn, np.ones_like(nn), 1.0 - rho, s2=s2, level=level)
    bt = (1.0 - shift) * np.asarray(base)
    L = bt * (1.0 - rho) - 0.5 * bt * bt * s2 - _logit(level)
    m = np.exp(-bt * (1.0 - c))
    eL = np.exp(L)
    k = (nn - eL * (1.0 - m)) / (1.0 + eL * m)
    k = np.where((k > nn - 1.0) | ~np.isfinite(k), np.inf, np.maximum(k, 1.0))
    return _out(k, n)


# =========================================================================== random-energy model
def gaussian_tail_scale(n):
    """``(u_n, w_n)``: the ``1/n`` upper quantile of ``N(0, 1)`` (``n Q(u_n) = 1``) and the hazard
    rate there, ``w_n = phi(u_n) / Q(u_n) = n phi(u_n)``; ``n Q(u_n + x / w_n) ~ e^{-x}``
    (docs/regimes.md#poisson-dirichlet-limit). ``w_n ~ sqrt(2 ln n)``."""
    nn = _n_array(n, low=1.0 + 1e-12)
    u = -special.ndtri(1.0 / nn)
    w = nn * np.exp(-0.5 * u * u - _LOG_SQRT_2PI)
    return _out(u, n), _out(w, n)


def rem_freezing_beta(n, s: float = 1.0):
    """The REM freezing point ``sqrt(2 ln n) / s`` (docs/regimes.md#freezing-point-and-finite-n-corrections):
    below it the largest weight tends to 0 (the softmax averages), above it the weights condense
    on the top few scores (Poisson-Dirichlet ``PD(sqrt(2 ln n) / (beta s))``)."""
    nn = _n_array(n)
    s = check_real("s", s, low=0.0, low_open=True)
    return _out(np.sqrt(2.0 * np.log(nn)) / s, n)


def _pd_g(alpha: float, t: np.ndarray) -> np.ndarray:
    """``g_alpha(t) = alpha int_0^1 (1 - e^{-t w}) w^{-alpha-1} dw
    = t^alpha Gamma(1-alpha) P(1-alpha, t) - (1 - e^{-t})``."""
    return t**alpha * special.gamma(1.0 - alpha) * special.gammainc(1.0 - alpha, t) + np.expm1(-t)


def pd_top_weight_mean(alpha):
    """``E V_1`` for the Poisson-Dirichlet law ``PD(alpha, 0)``, ``0 < alpha < 1``
    (docs/regimes.md#poisson-dirichlet-limit):
    ``E V_1 = int_0^inf e^{-t} / (1 + g_alpha(t)) dt``, ``g_alpha`` as in the docs.
    Vectorised over ``alpha`` (``scipy.integrate.quad`` per value)."""
    a = np.asarray(alpha, dtype=np.float64)
    if np.any(~np.isfinite(a)) or np.any((a <= 0) | (a >= 1)):
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    out = np.empty(a.shape)
    for i in np.ndindex(a.shape):
        al = float(a[i])
        out[i] = integrate.quad(
            lambda t, al=al: math.exp(-t) / (1.0 + float(_pd_g(al, np.float64(t)))),
            0.0,
            np.inf,
            epsabs=1e-13,
            epsrel=1e-12,
            limit=200,
        )[0]
    return _out(out, alpha)


@cache
def pd_critical_alpha(level: float = LEVEL) -> float:
    """The ``alpha`` with ``E V_1 = level`` under ``PD(alpha, 0)`` (``E V_1`` decreases from 1 to
    0 on ``(0, 1)``): ``alpha_c = 0.645496...`` at ``level = 1/2``
    (docs/regimes.md#poisson-dirichlet-limit)."""
    level = _level(level)
    return float(
        optimize.brentq(lambda a: pd_top_weight_mean(a) - level, 1e-6, 1 - 1e-9, xtol=1e-14)
    )


def _gl(k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.legendre.leggauss(k)


def _panels(a: float, b: float, width: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss-Legendre nodes and weights on ``[a, b]``, panels at most ``width`` wide."""
    m = max(1, int(math.ceil((b - a) / width)))
    e = np.linspace(a, b, m + 1)
    x, w = _gl(k)
    mid, half = (e[:-1] + e[1:]) / 2.0, (e[1:] - e[:-1]) / 2.0
    return (mid[:, None] + half[:, None] * x).ravel(), (half[:, None] * w).ravel()


_K_SERIES = 14  # terms of the small-t series of delta(t, x); e^{-3k}/k! < 1e-28 beyond
_T_SWITCH = -3.0  # below: series in t = e^tau, above: direct quadrature


def _rem_mean_standard(n: float, b: float, res: float = 1.0) -> float:
    """:func:`rem_top_weight_mean` for ``N(0, 1)`` scores at inverse temperature ``b``."""
    if n == 1.0:
        return 1.0
    if b == 0.0:
        return 1.0 / n
    lo_tail = 36.8  # P(max < x_lo) <= e^{-36.8} = 1e-16
    x_lo = (
        -special.ndtri(lo_tail / n)
        if n > 2 * lo_tail
        else max(-10.0, special.ndtri(math.exp(-lo_tail / n)))
    )
    x_hi = -special.ndtri(1e-16 / n)  # P(max > x_hi) <= 1e-16
    X, WX = _panels(x_lo, x_hi, (x_hi - x_lo) / (20 * res), 8)
    h = 0.3 / res
    tau = np.arange(4.7, -36.0, -h)[::-1]  # t = e^tau; e^{-e^4.7} = 1e-48
    ts, td = tau[tau < _T_SWITCH], tau[tau >= _T_SWITCH]
    lphi = special.log_ndtr(X)
    phi_x = np.exp(lphi)
    # t < e^-3: delta = sum_k (-1)^{k+1} t^k / k! e^{k^2 b^2 / 2 - k b x} Phi(x - k b)
    ks = np.arange(1, _K_SERIES + 1)
    lm = (ks[:, None] ** 2 * b * b / 2.0 - ks[:, None] * b * X[None, :]) + special.log_ndtr(
        X[None, :] - ks[:, None] * b
    )
    coef = (-1.0) ** (ks + 1) / np.array([factorial(int(k)) for k in ks], dtype=float)
    ds = np.einsum(
        "k,kxt->xt", coef, np.exp(ks[:, None, None] * ts[None, None, :] + lm[:, :, None])
    )
    # t >= e^-3: delta = int_0^V phi(x - v) (1 - exp(-t e^{-b v})) dv, J = Phi(x) - delta directly
    V = min(x_hi + 12.0, (4.7 + 45.0) / b)
    v, wv = _panels(0.0, V, min(0.5, 1.0 / b) / res, 8)
    ph = np.exp(-0.5 * (X[:, None] - v[None, :]) ** 2 - _LOG_SQRT_2PI) * wv
    y = b * v[None, :] - td[:, None]
    with np.errstate(over="ignore"):
        ey = np.exp(-y)
    dd = ph @ (-np.expm1(-ey)).T
    jd = ph @ np.exp(-ey).T + special.ndtr(X - V)[:, None]

    def log_j(delta, j=None):
        r = delta / phi_x[:, None]
        out = lphi[:, None] + np.log1p(-np.minimum(r, 0.5))
        if j is not None:
            with np.errstate(divide="ignore"):
                out = np.where(r < 0.5, out, np.log(np.maximum(j, 1e-300)))
        return out

    L = np.concatenate([log_j(ds), log_j(dd, jd)], axis=1)
    t = np.concatenate([ts, td])
    with np.errstate(under="ignore"):
        inner = h * np.exp(t[None, :] - np.exp(t)[None, :] + (n - 1.0) * L).sum(axis=1)
    dens = np.exp(-0.5 * X * X - _LOG_SQRT_2PI)
    return float(n * np.sum(WX * dens * inner))


def rem_top_weight_mean(n, beta, *, s: float = 1.0, resolution: float = 1.0):
    """Exact ``E[A_(1)]``, the mean largest softmax weight of ``n`` i.i.d. ``N(mu, s^2)`` scores
    (docs/regimes.md#exact-finite-n-top-weight).

    ``E A_(1) = n int phi(x) int_0^inf e^{-t} J(t, x)^{n-1} dt dx`` with
    ``J(t, x) = E[exp(-t e^{-b (x - X)}); X < x]``, ``b = beta s``: the Laplace identity
    ``1/(1 + S) = int e^{-t(1+S)} dt`` applied to the row sum given the top score ``x``. ``J`` is
    computed as ``Phi(x) - delta(t, x)``, ``delta`` by its series in ``t`` (``t < e^-3``) or by
    Gauss-Legendre panels in ``v = x - X`` (above), so that ``(n - 1) ln J`` keeps full precision
    up to ``n ~ 1e30``; ``t = e^tau`` on a trapezoid grid, ``x`` on Gauss-Legendre panels over the
    range of the maximum. Independent of any simulation. ``resolution = 2`` halves every step
    (the tests compare the two).

    Parameters
    ----------
    n : float
        Number of scores, ``>= 2`` (real values allowed: the formula is analytic in ``n``).
    beta : float or array_like
        Inverse temperature(s), ``>= 0``.
    s : float, optional
        Standard deviation of the scores, ``> 0`` (``mu`` drops out of the softmax).
    resolution : float, optional
        Quadrature refinement factor, ``>= 1``.

    Returns
    -------
    float or numpy.ndarray
        ``E[A_(1)]`` with the shape of ``beta``.
    """
    n = float(_n_array(n))
    s = check_real("s", s, low=0.0, low_open=True)
    res = check_real("resolution", resolution, low=1.0)
    b = np.asarray(beta, dtype=np.float64)
    if np.any(~np.isfinite(b)) or np.any(b < 0):
        raise ValueError(f"beta must be finite and >= 0, got {beta!r}")
    out = np.array([_rem_mean_standard(n, float(x) * s, res) for x in b.ravel()]).reshape(b.shape)
    return _out(out, beta)


def _rem_critical_standard(n: float, level: float) -> float:
    if n * level <= 1.0:
        return 0.0
    _, w = gaussian_tail_scale(n)
    guess = w / pd_critical_alpha(level)

    def f(b):
        return _rem_mean_standard(n, b) - level

    lo, hi = 0.7 * guess, 1.1 * guess
    while f(lo) > 0:
        lo *= 0.7
    while f(hi) < 0:
        hi *= 1.3
    return float(optimize.brentq(f, lo, hi, xtol=1e-10, rtol=1e-10))


def rem_critical_beta(n, *, s: float = 1.0, level: float = LEVEL, method: str = "exact"):
    """``beta*`` of the REM: ``E[A_(1)] = level`` (docs/regimes.md#no-gap-the-random-energy-model).

    Methods:

    * ``"exact"`` -- root of :func:`rem_top_weight_mean` (Brent), numerically exact at finite ``n``;
    * ``"penultimate"`` -- ``w_n / (alpha_c s)``: the Poisson-Dirichlet law ``PD(w_n / (beta s))``
      of the top weights, with ``w_n`` the Gaussian hazard at the ``1/n`` quantile
      (:func:`gaussian_tail_scale`), the first finite-``n`` correction
      (docs/regimes.md#freezing-point-and-finite-n-corrections);
    * ``"leading"`` -- ``sqrt(2 ln n) / (alpha_c s)``, the leading order;

    ``alpha_c`` = :func:`pd_critical_alpha`. Vectorised over ``n``.
    """
    nn = _n_array(n)
    s = check_real("s", s, low=0.0, low_open=True)
    level = _level(level)
    if method == "exact":
        out = np.array([_rem_critical_standard(float(v), level) for v in nn.ravel()]).reshape(
            nn.shape
        )
    elif method == "penultimate":
        out = np.asarray(gaussian_tail_scale(nn)[1]) / pd_critical_alpha(level)
    elif method == "leading":
        out = np.sqrt(2.0 * np.log(nn)) / pd_critical_alpha(level)
    else:
        raise ValueError(f"method must be one of 'exact', 'penultimate', 'leading', got {method!r}")
    return _out(out / s, n)


def rem_top_weight_slope(n, beta, *, s: float = 1.0, rel: float = 1e-3) -> float:
    """``d E[A_(1)] / d beta`` at ``beta`` by a central difference of :func:`rem_top_weight_mean`
    (used to size the simulation's beta grid; docs/regimes.md#simulation-and-root-finding)."""
    beta = check_real("beta", beta, low=0.0, low_open=True)
    h = rel * beta
    up, dn = rem_top_weight_mean(n, [beta + h, beta - h], s=s)
    return float((up - dn) / (2.0 * h))


# =========================================================================== REM samplers
def rem_scores(n: int, rng: np.random.Generator, *, mu: float = 0.0, s: float = 1.0) -> np.ndarray:
    """``n`` i.i.d. ``N(mu, s^2)`` scores (docs/regimes.md#samplers)."""
    n = check_int("n", n, minimum=1)
    mu = check_real("mu", mu)
    s = check_real("s", s, low=0.0, low_open=True)
    _check_rng(rng)
    return mu + s * rng.standard_normal(n)


def rem_scores_above(n: int, threshold: float, rng: np.random.Generator) -> np.ndarray:
    """The standard-normal scores above ``threshold`` among ``n`` i.i.d. draws, exactly in law
    (docs/regimes.md#samplers): their number is ``Binomial(n, Q(threshold))`` and, given it, they
    are i.i.d. from the tail, ``X = Q^{-1}(Q(threshold) U)`` with ``U`` uniform on ``(0, 1]``.
    Unordered; may be empty. ``threshold`` must have ``Q(threshold) <= 1/2`` (``>= 0``): below
    that, draw all ``n`` with :func:`rem_scores`."""
    n = check_int("n", n, minimum=1)
    threshold = check_real("threshold", threshold, low=0.0)
    _check_rng(rng)
    q = float(special.ndtr(-threshold))
    m = int(rng.binomial(n, q))
    u = 1.0 - rng.random(m)
    return -special.ndtri(q * u)


def _log_max_integral(n: float, t0: float, b: float) -> float:
    """``ln int_{t0}^inf phi(x) Phi(x)^{n-2} e^{-b x} dx`` by Gauss-Legendre panels."""
    hi = max(t0 + 1.0, -special.ndtri(1e-18 / n) + 2.0)
    x, w = _panels(t0, hi, 0.05, 8)
    lg = -0.5 * x * x - _LOG_SQRT_2PI + (n - 2.0) * special.log_ndtr(x) - b * x + np.log(w)
    return float(special.logsumexp(lg))


def rem_truncation_bias(n: int, threshold: float, beta_min: float) -> float:
    """Bound on the bias of the mean top weight when only the scores above ``threshold`` are kept,
    valid for every ``beta >= beta_min`` (standard-normal scores; docs/regimes.md#samplers).

    Dropping keys only raises ``A_(1)``, by at most ``R = sum_{X_j < t} e^{beta (X_j - X_(1))}``;
    by exchangeability
    ``E[R; X_(1) >= t] = n (n - 1) e^{beta^2/2} Phi(t - beta) int_t^inf phi(x) Phi(x)^{n-2} e^{-beta x} dx``,
    which decreases in ``beta``; ``P(X_(1) < t) = Phi(t)^n`` is added.
    """
    n = check_int("n", n, minimum=2)
    t0 = check_real("threshold", threshold)
    b = check_real("beta_min", beta_min, low=0.0)
    log_r = (
        math.log(n)
        + math.log(n - 1.0)
        + 0.5 * b * b
        + float(special.log_ndtr(t0 - b))
        + _log_max_integral(float(n), t0, b)
    )
    log_p = n * float(special.log_ndtr(t0))
    return float(math.exp(min(log_r, 700.0)) + math.exp(log_p))


def rem_truncation_threshold(n: int, beta_min: float, eps: float) -> float | None:
    """The largest threshold ``t >= 0`` with :func:`rem_truncation_bias` ``<= eps``, or ``None``
    when even ``t = 0`` exceeds ``eps`` (then every score must be drawn)
    (docs/regimes.md#samplers)."""
    n = check_int("n", n, minimum=2)
    b = check_real("beta_min", beta_min, low=0.0)
    eps = check_real("eps", eps, low=0.0, high=1.0, low_open=True, high_open=True)
    if rem_truncation_bias(n, 0.0, b) > eps:
        return None
    hi = float(-special.ndtri(1.0 / n))  # u_n: above it the bound is O(1)
    if rem_truncation_bias(n, hi, b) <= eps:
        return hi
    return float(
        optimize.brentq(
            lambda t: math.log(rem_truncation_bias(n, t, b)) - math.log(eps), 0.0, hi, xtol=1e-6
        )
    )


# =========================================================================== Gaussian tokens
def _check_rng(rng) -> None:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")


def gaussian_token_draw(
    n: int, d: int, rho: float, rng: np.random.Generator, *, copies: int = 0
) -> dict:
    """One query row of Paper A's Gaussian near-simplex tokens, through sufficient statistics
    (docs/regimes.md#samplers).

    Tokens ``x_i = sqrt(rho) z_0 + sqrt(1 - rho) z_i``, ``z ~ N(0, I_d / d)``; the query is token 0.
    With ``e_1 = x_0 / ||x_0||`` and ``e_2`` the direction of ``z_0`` orthogonal to it
    (``z_0 = p e_1 + q e_2``), each other token needs only ``a_j = <z_j, e_1>``,
    ``b_j = <z_j, e_2>`` (i.i.d. normal) and ``||z_j||^2 - a_j^2 - b_j^2`` (``chi^2_{d-2}``), all
    independent of ``(z_0, z_0')``: the cosine ``c_j = <x_j, e_1> / ||x_j||`` costs ``O(1)`` for
    any ``d``. At ``rho = 0`` this is ``c = a / sqrt(a^2 + chi^2_{d-1})``. Exact in law (checked
    against full tokens in tests/test_regimes.py).

    Draw order (fixed): ``z_0``, ``z_0'`` (``d`` each; skipped at ``rho = 0``), then ``a``, ``b``
    (``rho > 0``), the chi-square for the ``n - 1`` other tokens, then ``(a', w')`` of ``copies``
    noisy copies (:func:`copy_cosines`). So every number of copies up to ``copies`` shares the
    same other tokens (common random numbers): copies replace tokens ``1 .. k - 1``.

    Parameters
    ----------
    n : int
        Tokens in the row (the query included), ``>= 2``.
    d : int
        Dimension, ``>= 3``.
    rho : float
        Nominal correlation, ``0 <= rho < 1``.
    rng : numpy.random.Generator
        Source of randomness (:mod:`attnscale.core.seeding`).
    copies : int, optional
        Copy statistics to draw, ``0 <= copies <= n - 1``.

    Returns
    -------
    dict
        ``others`` (``n - 1`` cosines with the query), ``copy_a``, ``copy_w`` (``copies`` each).
    """
    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=3)
    rho = _rho(rho)
    copies = check_int("copies", copies, minimum=0, maximum=n - 1)
    _check_rng(rng)
    m = n - 1
    if rho == 0.0:
        a = rng.standard_normal(m)
        c = a / np.sqrt(a * a + rng.chisquare(d - 1, m))
    else:
        g0 = rng.standard_normal(d)
        gq = rng.standard_normal(d)
        xq = math.sqrt(rho) * g0 + math.sqrt(1.0 - rho) * gq
        e1 = xq / np.linalg.norm(xq)
        p = float(g0 @ e1)
        q = float(np.linalg.norm(g0 - p * e1))
        a = rng.standard_normal(m)
        b = rng.standard_normal(m)
        r2 = rng.chisquare(d - 2, m)
        u = math.sqrt(rho) * p + math.sqrt(1.0 - rho) * a
        v = math.sqrt(rho) * q + math.sqrt(1.0 - rho) * b
        c = u / np.sqrt(u * u + v * v + (1.0 - rho) * r2)
    return {
        "others": c,
        "copy_a": rng.standard_normal(copies),
        "copy_w": rng.chisquare(d - 1, copies),
    }


def gaussian_token_row(
    n: int,
    d: int,
    rho: float,
    rng: np.random.Generator,
    *,
    copies: int = 0,
    copy_noise: float = 0.0,
) -> np.ndarray:
    """The query's cosines with all ``n`` tokens, ``[1, copies..., others...]``: token 0 is the
    query itself, tokens ``1`` to ``copies`` its copies ``(y + copy_noise xi) / ||.||`` (cosine 1
    for exact copies), the rest Gaussian near-simplex tokens (:func:`gaussian_token_draw`;
    docs/regimes.md#samplers)."""
    draw = gaussian_token_draw(n, d, rho, rng, copies=copies)
    cc = copy_cosines(copy_noise, draw["copy_a"], draw["copy_w"], d)
    return np.concatenate([[1.0], cc, draw["others"][copies:]])


# =========================================================================== observable
def group_weight(group, others, beta: float) -> tuple[float, float]:
    """Weight of the top group and its beta-derivative for one query row
    (docs/regimes.md#the-observable).

    ``group`` and ``others`` are score *gaps* from the group's top score (``<= 0``, the group
    holding a 0): ``W = G / (G + O)``, ``G = sum_group e^{beta g}``, ``O = sum_others e^{beta g}``,
    ``dW/dbeta = (G' O - G O') / (G + O)^2`` with ``G' = sum g e^{beta g}``. No overflow: every
    exponent is ``<= 0``.
    """
    beta = _beta(beta)
    g = np.asarray(group, dtype=np.float64)
    o = np.asarray(others, dtype=np.float64)
    eg = np.exp(beta * g)
    eo = np.exp(beta * o)
    sg, sg1 = float(eg.sum()), float(g @ eg)
    so, so1 = float(eo.sum()), float(o @ eo)
    z = sg + so
    return sg / z, (sg1 * so - sg * so1) / (z * z)


def group_weight_grid(group, others, betas, *, work=None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`group_weight` at every beta of ``betas`` for one query row, in one pass per beta
    over a reused buffer (the simulation's inner loop; docs/regimes.md#simulation-and-root-finding).

    Parameters
    ----------
    group, others : array_like
        Score gaps from the group's top score, ``<= 0`` (the group holds a 0).
    betas : array_like
        Inverse temperatures, ``>= 0``.
    work : numpy.ndarray, optional
        Scratch buffer of at least ``len(others)`` float64 entries.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``W`` and ``dW/dbeta`` at each beta.
    """
    g = np.atleast_1d(np.asarray(group, dtype=np.float64))
    o = np.atleast_1d(np.ascontiguousarray(others, dtype=np.float64))
    b = np.asarray(betas, dtype=np.float64)
    if b.ndim != 1 or np.any(~np.isfinite(b)) or np.any(b < 0):
        raise ValueError(f"betas must be a 1-D array of finite values >= 0, got {betas!r}")
    buf = np.empty(o.size) if work is None or work.size < o.size else work[: o.size]
    W = np.empty(b.size)
    dW = np.empty(b.size)
    for j, beta in enumerate(b):
        eg = np.exp(beta * g)
        sg, sg1 = float(eg.sum()), float(np.einsum("i,i->", g, eg))
        np.multiply(o, beta, out=buf)
        np.exp(buf, out=buf)
        so, so1 = float(buf.sum()), float(np.einsum("i,i->", o, buf))
        z = sg + so
        W[j] = sg / z
        dW[j] = (sg1 * so - sg * so1) / (z * z)
    return W, dW


# =========================================================================== finite d
def finite_d_critical_beta(n, d: int, rho: float):
    """Exact finite-``d`` ``beta*`` of Gaussian near-simplex tokens, :func:`attnscale.layer.finite_d.critical_beta`
    (mean self-weight 1/2, docs/finite-d.md#finite-d-critical-point), vectorised over ``n``
    (rounded to integers) (docs/regimes.md#finite-d-where-log-n-ends)."""
    nn = _n_array(n, low=2.0)
    out = np.array([finite_d.critical_beta(int(round(v)), d, rho) for v in nn.ravel()])
    return _out(out.reshape(nn.shape), n)


def log_n_breakdown(d: int, rho: float) -> float:
    """``ln(n - 1)`` at which the first-order finite-``d`` equation
    ``beta (1 - rho) - beta^2 s^2 / 2 = ln(n - 1)`` stops having a root:
    ``(1 - rho)^2 / (2 s^2) = d / (2 (1 + rho - rho^2 / 2))``. Beyond it the nearest tokens, not
    the bulk, set ``beta*``, and the ``log n`` scale ends
    (docs/regimes.md#finite-d-where-log-n-ends)."""
    d = check_int("d", d, minimum=3)
    rho = _rho(rho)
    return (1.0 - rho) ** 2 / (2.0 * finite_d.first_order_variance(d, rho))
