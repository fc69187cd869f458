"""The random-energy model: ``n`` i.i.d. ``N(mu, s^2)`` scores, no self-score
(docs/regimes.md#no-gap-the-random-energy-model).

:func:`rem_top_weight_mean` (the exact finite-``n`` law by quadrature), :func:`rem_critical_beta`,
:func:`rem_top_weight_slope`; its Poisson-Dirichlet limit :func:`pd_top_weight_mean`,
:func:`pd_critical_alpha`; the freezing point :func:`rem_freezing_beta` ``sqrt(2 ln n) / s`` and
the Gaussian tail scale :func:`gaussian_tail_scale`: order ``sqrt(log n) / s``. The bound
:func:`rem_truncation_bias` on what the scores below a threshold can change, and the threshold
:func:`rem_truncation_threshold` that keeps it below a target, size the truncated sampler
:func:`attnscale.regimes.rem_samplers.rem_scores_above` (docs/regimes.md#samplers).
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from scipy import integrate, optimize, special

from attnscale.core import laplace
from attnscale.core.quadrature import gauss_legendre_panels, panel_edges
from attnscale.core.roots import LEVEL
from attnscale.core.validation import check_int, check_real
from attnscale.regimes.common import LOG_SQRT_2PI, check_level, n_array, out_like

__all__ = [
    "gaussian_tail_scale",
    "rem_freezing_beta",
    "pd_top_weight_mean",
    "pd_critical_alpha",
    "rem_top_weight_mean",
    "rem_critical_beta",
    "rem_top_weight_slope",
    "rem_truncation_bias",
    "rem_truncation_threshold",
]


def gaussian_tail_scale(n):
    """``(u_n, w_n)``: the ``1/n`` upper quantile of ``N(0, 1)`` (``n Q(u_n) = 1``) and the hazard
    rate there, ``w_n = phi(u_n) / Q(u_n) = n phi(u_n)``; ``n Q(u_n + x / w_n) ~ e^{-x}``
    (docs/regimes.md#poisson-dirichlet-limit). ``w_n ~ sqrt(2 ln n)``."""
    nn = n_array(n, low=1.0 + 1e-12)
    u = -special.ndtri(1.0 / nn)
    w = nn * np.exp(-0.5 * u * u - LOG_SQRT_2PI)
    return out_like(u, n), out_like(w, n)


def rem_freezing_beta(n, s: float = 1.0):
    """The REM freezing point ``sqrt(2 ln n) / s`` (docs/regimes.md#freezing-point-and-finite-n-corrections):
    below it the largest weight tends to 0 (the softmax averages), above it the weights condense
    on the top few scores (Poisson-Dirichlet ``PD(sqrt(2 ln n) / (beta s))``)."""
    nn = n_array(n)
    s = check_real("s", s, low=0.0, low_open=True)
    return out_like(np.sqrt(2.0 * np.log(nn)) / s, n)


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
    return out_like(out, alpha)


@cache
def pd_critical_alpha(level: float = LEVEL) -> float:
    """The ``alpha`` with ``E V_1 = level`` under ``PD(alpha, 0)`` (``E V_1`` decreases from 1 to
    0 on ``(0, 1)``): ``alpha_c = 0.645496...`` at ``level = 1/2``
    (docs/regimes.md#poisson-dirichlet-limit)."""
    level = check_level(level)
    return float(
        optimize.brentq(lambda a: pd_top_weight_mean(a) - level, 1e-6, 1 - 1e-9, xtol=1e-14)
    )


def _panels(a: float, b: float, width: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss-Legendre nodes and weights on ``[a, b]``, panels at most ``width`` wide
    (:func:`attnscale.core.quadrature.gauss_legendre_panels`: numpy's nodes, centred form)."""
    x, w = gauss_legendre_panels(panel_edges(a, b, width), k, routine="numpy", centred=True)
    return x.ravel(), w.ravel()


def _rem_mean_standard(n: float, b: float, res: float = 1.0) -> float:
    """:func:`rem_top_weight_mean` for ``N(0, 1)`` scores at inverse temperature ``b``: the
    Laplace identity (:func:`attnscale.core.laplace.reciprocal_mean`) at every node ``x`` of the
    top score."""
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
    lphi = special.log_ndtr(X)
    phi_x = np.exp(lphi)
    ks, coef = laplace.series_terms()
    lm = (ks[:, None] ** 2 * b * b / 2.0 - ks[:, None] * b * X[None, :]) + special.log_ndtr(
        X[None, :] - ks[:, None] * b
    )
    V = min(x_hi + 12.0, (laplace.T_MAX + 45.0) / b)
    v, wv = _panels(0.0, V, min(0.5, 1.0 / b) / res, 8)
    ph = np.exp(-0.5 * (X[:, None] - v[None, :]) ** 2 - LOG_SQRT_2PI) * wv

    def series(ts):
        # delta = sum_k (-1)^{k+1} t^k / k! e^{k^2 b^2 / 2 - k b x} Phi(x - k b)
        ds = np.einsum(
            "k,kxt->xt", coef, np.exp(ks[:, None, None] * ts[None, None, :] + lm[:, :, None])
        )
        return lphi[:, None] + laplace.log_one_minus(ds / phi_x[:, None])

    def direct(td):
        # delta = int_0^V phi(x - v) (1 - exp(-t e^{-b v})) dv, and J = Phi(x) - delta directly
        y = b * v[None, :] - td[:, None]
        with np.errstate(over="ignore"):
            ey = np.exp(-y)
        r = (ph @ (-np.expm1(-ey)).T) / phi_x[:, None]
        jd = ph @ np.exp(-ey).T + special.ndtr(X - V)[:, None]
        with np.errstate(divide="ignore"):
            return np.where(
                r < 0.5, lphi[:, None] + laplace.log_one_minus(r), np.log(np.maximum(jd, 1e-300))
            )

    inner = laplace.reciprocal_mean(n, series, direct, h=0.3 / res, t_lo=-36.0)
    dens = np.exp(-0.5 * X * X - LOG_SQRT_2PI)
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
    n = float(n_array(n))
    s = check_real("s", s, low=0.0, low_open=True)
    res = check_real("resolution", resolution, low=1.0)
    b = np.asarray(beta, dtype=np.float64)
    if np.any(~np.isfinite(b)) or np.any(b < 0):
        raise ValueError(f"beta must be finite and >= 0, got {beta!r}")
    out = np.array([_rem_mean_standard(n, float(x) * s, res) for x in b.ravel()]).reshape(b.shape)
    return out_like(out, beta)


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
    nn = n_array(n)
    s = check_real("s", s, low=0.0, low_open=True)
    level = check_level(level)
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
    return out_like(out / s, n)


def rem_top_weight_slope(n, beta, *, s: float = 1.0, rel: float = 1e-3) -> float:
    """``d E[A_(1)] / d beta`` at ``beta`` by a central difference of :func:`rem_top_weight_mean`
    (used to size the simulation's beta grid; docs/regimes.md#simulation-and-root-finding)."""
    beta = check_real("beta", beta, low=0.0, low_open=True)
    h = rel * beta
    up, dn = rem_top_weight_mean(n, [beta + h, beta - h], s=s)
    return float((up - dn) / (2.0 * h))


def _log_max_integral(n: float, t0: float, b: float) -> float:
    """``ln int_{t0}^inf phi(x) Phi(x)^{n-2} e^{-b x} dx`` by Gauss-Legendre panels."""
    hi = max(t0 + 1.0, -special.ndtri(1e-18 / n) + 2.0)
    x, w = _panels(t0, hi, 0.05, 8)
    lg = -0.5 * x * x - LOG_SQRT_2PI + (n - 2.0) * special.log_ndtr(x) - b * x + np.log(w)
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
