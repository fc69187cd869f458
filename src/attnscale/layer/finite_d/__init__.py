"""Finite-d theory of the self-weight and the critical scale (issue 9; docs/finite-d.md).

Gaussian near-simplex tokens ``x_i = sqrt(rho) z_0 + sqrt(1 - rho) z_i``, ``z ~ N(0, I_d / d)``,
``y = x / ||x||``, ``A = softmax(beta <y_i, y_j>)``. Public functions:

* :func:`self_weight`, :func:`self_weight_given` — ``E[A_ii]`` by the Laplace identity
  (docs/finite-d.md#exact-self-weight), exact up to quadrature.
* :func:`critical_beta`, :func:`critical_gamma` — where ``E[A_ii] = 1/2``
  (docs/finite-d.md#finite-d-critical-point); :func:`critical_beta_given` the same given
  ``||z_0||``.
* :func:`annealed_critical_beta` (docs/finite-d.md#annealed-approximation),
  :func:`first_order_critical_beta` (docs/finite-d.md#first-order-approximation) and where it
  loses its root, :func:`first_order_crossover_log_n` (docs/finite-d.md#asymptotic-regimes).
* :func:`mean_field`, :func:`mean_field_given` — ``a_ii``, output cosine, lambda
  (docs/finite-d.md#mean-field-for-cosine-and-lambda).
* :func:`lambda_floor`, :func:`tilt`, :func:`floor_crossing` — the floor the output's tilt towards
  the query puts under lambda below the transition (docs/finite-d.md#the-tilt-floor-of-lambda).
* :func:`paper_a_asymptote_beta`, :func:`power_law_beta` — the two regimes
  (docs/finite-d.md#asymptotic-regimes).
* :func:`check_args` — argument validation.
"""

from __future__ import annotations

import numpy as np

from attnscale.core.roots import LEVEL, increasing_root
from attnscale.core.validation import check_beta_array, check_integer_in, check_positive, check_rho
from attnscale.layer import theory
from attnscale.layer.finite_d import approx, laplace, laws
from attnscale.layer.finite_d.mean_field import mean_field_values
from attnscale.layer.finite_d.output_tilt import floor_crossing, lambda_floor, tilt

__all__ = [
    "check_args",
    "self_weight",
    "self_weight_given",
    "critical_beta",
    "critical_beta_given",
    "critical_gamma",
    "annealed_critical_beta",
    "first_order_critical_beta",
    "first_order_variance",
    "first_order_crossover_log_n",
    "mean_field",
    "mean_field_given",
    "tilt",
    "lambda_floor",
    "floor_crossing",
    "paper_a_asymptote_beta",
    "power_law_beta",
]

D_MIN, D_MAX = 3, 4096
N_MIN, N_MAX = 2, 10**7


def check_args(n, d, rho, beta=None):
    """Validate ``(n, d, rho[, beta])`` before any work (with :mod:`attnscale.core.validation`);
    return them normalised.

    Allowed: integer ``3 <= d <= 4096``, integer ``2 <= n <= 1e7``, real ``0 <= rho < 1``,
    ``beta`` finite and ``>= 0`` (scalar or array). Raises ``ValueError`` naming the argument and
    its allowed range. Returns ``(n, d, rho)`` or ``(n, d, rho, beta_array)``.
    """
    out = (
        check_integer_in("n", n, N_MIN, N_MAX, integral_floats=True),
        check_integer_in("d", d, D_MIN, D_MAX),
        check_rho(rho),
    )
    if beta is None:
        return out
    return out + (check_beta_array(beta),)


def _quadrature(quadrature: str) -> str:
    if quadrature not in laws.QUADRATURE_PRESETS:
        presets = sorted(laws.QUADRATURE_PRESETS)
        raise ValueError(f"quadrature must be one of {presets}, got {quadrature!r}")
    return quadrature


def self_weight(n, d, rho, beta, *, quadrature: str = "standard"):
    """Mean self-weight ``E[A_ii]`` for Gaussian near-simplex tokens at nominal ``rho``.

    Averaged over the law of the whole draw (``z_0`` included); exact up to quadrature
    (docs/finite-d.md#exact-self-weight): ``E[A_ii | R_0, tau_i] = int_0^inf e^{-s} phi(s)^{n-1} ds``
    with ``phi(s) = E[exp(-s e^{beta (c - 1)}) | R_0, tau_i]``, then averaged over ``tau_i``
    and ``R_0 = ||z_0||``. The quadrature error is below ``1e-4`` (checked against
    ``quadrature="fine"`` in tests/test_finite_d.py).

    Parameters
    ----------
    n, d : int
        Tokens ``2 <= n <= 1e7`` and dimension ``3 <= d <= 4096``.
    rho : float
        Nominal correlation ``0 <= rho < 1``.
    beta : float or array_like
        Inverse temperature(s) ``>= 0``.
    quadrature : {"standard", "fine"}
        Quadrature resolution.

    Returns
    -------
    float or numpy.ndarray
        ``E[A_ii]`` with the shape of ``beta``.
    """
    n, d, rho, b = check_args(n, d, rho, beta)
    tab = laws.table(d, rho, _quadrature(quadrature))
    out = np.array([laplace.mean_self_weight(tab, n, float(x), quadrature) for x in b.ravel()])
    return out.reshape(b.shape) if b.ndim else float(out[0])


def self_weight_given(n, d, rho, beta, r0, *, quadrature: str = "standard"):
    """``E[A_ii | ||z_0|| = r0]``: :func:`self_weight` conditioned on the common vector's norm.

    One simulated draw has one ``z_0``; its realised mean cosine ``rho_hat`` is close to
    ``rho R_0^2 / (rho R_0^2 + 1 - rho)`` (docs/finite-d.md#conditional-structure), so a draw
    can be compared with theory at its own ``R_0`` (``||z_0||`` is known to the simulator).
    ``r0 > 0`` finite.
    """
    n, d, rho, b = check_args(n, d, rho, beta)
    r0 = check_positive("r0", r0)
    tab = laws.table_given_r0(d, rho, float(r0), _quadrature(quadrature))
    out = np.array([laplace.mean_self_weight(tab, n, float(x), quadrature) for x in b.ravel()])
    return out.reshape(b.shape) if b.ndim else float(out[0])


def critical_beta(n, d, rho, *, quadrature: str = "standard", xtol: float = 1e-6) -> float:
    """``beta*(n, d, rho)``: the ``beta`` with :func:`self_weight` ``= 1/2``.

    ``E[A_ii]`` increases in ``beta`` (every off-diagonal term ``e^{beta (c - 1)}``, ``c <= 1``,
    decreases), so a bracket from the first-order / annealed guesses plus ``brentq``
    (relative tolerance ``xtol``) finds the unique root. ``n = 2`` gives 0 (``A_ii >= 1/2``).
    docs/finite-d.md#finite-d-critical-point.
    """
    n, d, rho = check_args(n, d, rho)
    if n == 2:
        return 0.0
    return _critical(laws.table(d, rho, _quadrature(quadrature)), n, d, rho, quadrature, xtol)


def critical_beta_given(
    n, d, rho, r0, *, quadrature: str = "standard", xtol: float = 1e-6
) -> float:
    """``beta*`` of one draw: the ``beta`` with :func:`self_weight_given` ``= 1/2``, the critical
    point conditioned on the common vector's norm ``||z_0|| = r0``
    (docs/finite-d.md#finite-d-critical-point; the root as in :func:`critical_beta`). A draw's
    simulated transition is compared with it at its own ``r0`` (docs/long-context.md#transition-sharpness-against-context-length).
    """
    n, d, rho = check_args(n, d, rho)
    r0 = check_positive("r0", r0)
    if n == 2:
        return 0.0
    tab = laws.table_given_r0(d, rho, float(r0), _quadrature(quadrature))
    return _critical(tab, n, d, rho, quadrature, xtol)


def _critical(tab, n: int, d: int, rho: float, quadrature: str, xtol: float) -> float:
    """Root of ``mean_self_weight(tab, n, beta) = LEVEL`` in ``beta``, bracketed from the
    first-order guess (or ``ln(n - 1)/(1 - rho)``) by :func:`attnscale.core.roots.increasing_root`."""

    def f(b):
        return laplace.mean_self_weight(tab, n, b, quadrature) - LEVEL

    guess = np.log(n - 1.0) / (1.0 - rho)
    fo = approx.first_order_beta(n, d, rho)
    if np.isfinite(fo):
        guess = fo
    return increasing_root(f, 0.9 * guess, 1.1 * guess, rtol=xtol)


def critical_gamma(n, d, rho, **kw) -> float:
    """``gamma* = beta* / ln n`` (docs/finite-d.md#finite-d-critical-point)."""
    n, d, rho = check_args(n, d, rho)
    return critical_beta(n, d, rho, **kw) / np.log(n)


def annealed_critical_beta(n, d, rho) -> float:
    """Annealed critical point: ``(n - 1) E[e^{beta (c - 1)}] = 1`` (docs/finite-d.md#annealed-approximation)."""
    n, d, rho = check_args(n, d, rho)
    return approx.annealed_beta(n, d, rho)


def first_order_variance(d, rho) -> float:
    """``s^2 = (1-rho)^2 (1 + rho - rho^2/2) / d``: within-row score variance at first order in 1/d."""
    _, d, rho = check_args(2, d, rho)
    return approx.within_row_variance(d, rho)


def first_order_critical_beta(n, d, rho) -> float:
    """Smaller root of ``beta (1 - rho) - beta^2 s^2 / 2 = ln(n - 1)``; ``nan`` if none exists
    (``2 s^2 ln(n-1) > (1 - rho)^2``: the first-order theory has broken down).
    docs/finite-d.md#first-order-approximation."""
    n, d, rho = check_args(n, d, rho)
    return approx.first_order_beta(n, d, rho)


def first_order_crossover_log_n(d, rho) -> float:
    """``ln(n - 1)`` beyond which :func:`first_order_critical_beta` has no root.

    The root exists while ``2 s^2 ln(n - 1) <= (1 - rho)^2``, i.e. up to
    ``ln(n - 1) = d / (2 (1 + rho - rho^2/2))`` (``d / 2`` at ``rho = 0``); beyond it the bulk's
    maximum reaches the self-score and extreme values take over
    (docs/finite-d.md#asymptotic-regimes). Same ``d`` and ``rho`` ranges as :func:`check_args`.
    """
    _, d, rho = check_args(2, d, rho)
    return approx.first_order_crossover_log_n(d, rho)


def mean_field(n, d, rho, beta, *, alpha: float = 0.0) -> dict:
    """Mean field (law of large numbers within each softmax row) for ``alpha = 0``.

    Returns a dict of arrays shaped like ``beta``: ``'a_ii'`` (mean self-weight), ``'cos'``
    (mean over pairs of ``<y_i', y_j'>``) and ``'lambda'`` (mean over pairs of
    ``(1 - cos'_ij) / (1 - cos_ij)``). Valid for ``ln n << d`` (docs/finite-d.md#mean-field-for-cosine-and-lambda,
    docs/finite-d.md#where-each-approximation-fails). Only ``alpha = 0`` is implemented.
    """
    n, d, rho, b = check_args(n, d, rho, beta)
    if alpha != 0.0:
        raise ValueError(f"alpha must be 0 (only alpha = 0 is implemented), got {alpha!r}")
    vals = [mean_field_values(n, d, rho, float(x)) for x in b.ravel()]
    return {k: np.array([v[k] for v in vals]).reshape(b.shape) for k in ("a_ii", "cos", "lambda")}


def mean_field_given(n, d, rho, beta, r0) -> dict:
    """:func:`mean_field` conditioned on ``||z_0|| = r0`` (compare with one draw; see
    :func:`self_weight_given`). Same keys and validity (docs/finite-d.md#mean-field-for-cosine-and-lambda)."""
    n, d, rho, b = check_args(n, d, rho, beta)
    r0 = check_positive("r0", r0)
    vals = [mean_field_values(n, d, rho, float(x), r0=float(r0)) for x in b.ravel()]
    return {k: np.array([v[k] for v in vals]).reshape(b.shape) for k in ("a_ii", "cos", "lambda")}


def paper_a_asymptote_beta(n, rho):
    """Paper A's critical line ``beta = gamma_c ln n = ln n / (1 - rho)`` (``ln n << d``)."""
    n_arr = np.asarray(n, dtype=np.float64)
    rho = check_rho(rho)
    gc = 1.0 if rho == 0.0 else theory.gamma_c(rho)
    return gc * np.log(n_arr)


def power_law_beta(n, d):
    """``rho = 0``, ``ln n >> d``: ``beta* ~ (K_d (n - 1) / Lambda*_d)^{2/(d-1)}``.

    ``K_d`` is the uniform cap constant (``P(1 - c < y) ~ K_d y^{(d-1)/2}``) and ``Lambda*_d``
    the critical intensity of the Poisson near-neighbour limit (docs/finite-d.md#asymptotic-regimes).
    """
    d = check_integer_in("d", d, D_MIN, D_MAX)
    return approx.power_law_beta(n, d)
