"""The Laplace identity for the mean of ``1 / (1 + S)``, ``S`` a sum of ``n - 1`` conditionally
i.i.d. terms: one integral, used by the finite-d self-weight (docs/finite-d.md#exact-self-weight)
and the random-energy model's top weight (docs/regimes.md#exact-finite-n-top-weight); and its
generalisation to ``K / (K + S)`` with a random ``K`` independent of ``S`` (:func:`group_mean`, the
weight of ``k`` copies of the query, docs/regimes.md#exact-finite-d-theory-for-k-copies).

``1 / (1 + S) = int_0^inf e^{-s (1 + S)} ds`` gives
``E[1 / (1 + S)] = int_R exp(t - e^t + (n - 1) ln phi(e^t)) dt`` with ``s = e^t`` and ``phi`` the
Laplace transform of one term. The integrand is analytic in a strip of half-width ``pi / 2``, so
the trapezoid rule in ``t`` converges like ``e^{-pi^2 / h}``. ``ln phi = log1p(-psi)`` with
``psi = 1 - phi`` keeps ``(n - 1) ln phi`` precise for large ``n``; ``psi`` comes from its series
in ``s`` below ``t = T_SWITCH`` and from a direct quadrature above, both supplied by the model.
"""

from __future__ import annotations

from collections.abc import Callable
from math import factorial

import numpy as np

__all__ = [
    "T_MAX",
    "T_SWITCH",
    "SERIES_TERMS",
    "series_terms",
    "log_one_minus",
    "reciprocal_mean",
    "group_mean",
]

#: [derived] Upper end of the ``t`` grid: ``exp(-e^4.7) = 1e-48``.
T_MAX = 4.7
#: [choice] Below: ``psi`` from its series in ``s = e^t``; at and above: by direct quadrature.
T_SWITCH = -3.0
#: [derived] Terms of the series of ``psi``: ``e^{-3k} / k! < 1e-28`` beyond.
SERIES_TERMS = 14


def series_terms() -> tuple[np.ndarray, np.ndarray]:
    """The powers ``k`` (1 to ``SERIES_TERMS``) and coefficients ``(-1)^{k+1} / k!`` of the series
    ``psi(s) = 1 - E[e^{-s Y}] = sum_k (-1)^{k+1} s^k E[Y^k] / k!``
    (docs/finite-d.md#exact-self-weight).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``k`` (integers) and the coefficients (float64).
    """
    ks = np.arange(1, SERIES_TERMS + 1)
    coef = (-1.0) ** (ks + 1) / np.array([factorial(int(k)) for k in ks], dtype=float)
    return ks, coef


def log_one_minus(psi, phi=None) -> np.ndarray:
    """``ln(1 - psi)`` as ``log1p(-psi)`` where ``psi < 1/2``; elsewhere ``ln phi`` with ``phi``
    the same quantity computed directly (``phi = 1 - psi`` without cancellation), or
    ``log1p(-1/2)`` when ``phi`` is not given (docs/finite-d.md#exact-self-weight).

    Parameters
    ----------
    psi : array_like
        ``1 - phi``.
    phi : array_like, optional
        ``phi`` itself, broadcastable with ``psi`` (``0`` gives ``-inf``).
    """
    psi = np.asarray(psi)
    out = np.log1p(-np.minimum(psi, 0.5))
    if phi is None:
        return out
    with np.errstate(divide="ignore"):
        return np.where(psi < 0.5, out, np.log(phi))


def reciprocal_mean(
    n: float,
    log_phi_series: Callable[[np.ndarray], np.ndarray],
    log_phi_direct: Callable[[np.ndarray], np.ndarray],
    *,
    h: float,
    t_lo: float,
) -> np.ndarray:
    """``E[1 / (1 + S)] = int exp(t - e^t + (n - 1) ln phi(e^t)) dt`` by the trapezoid rule of
    step ``h`` from ``T_MAX`` down to above ``t_lo`` (docs/finite-d.md#exact-self-weight,
    docs/regimes.md#exact-finite-n-top-weight).

    Parameters
    ----------
    n : float
        ``1 +`` the number of terms of ``S``.
    log_phi_series, log_phi_direct : callable
        ``ln phi(e^t)`` at the grid's ``t < T_SWITCH`` (by the series, :func:`series_terms`) and
        ``t >= T_SWITCH`` (directly); each takes the increasing ``t`` values and returns an array
        whose last axis runs over them (leading axes: the model's conditioning nodes).
    h : float
        Step of the ``t`` grid, ``> 0``.
    t_lo : float
        Lower end of the grid (excluded), below ``T_MAX``: the integrand is negligible below it.

    Returns
    -------
    numpy.ndarray
        The integral at every conditioning node (the leading axes of the callables' output).
    """
    t = np.arange(T_MAX, t_lo, -h)[::-1]
    ts, td = t[t < T_SWITCH], t[t >= T_SWITCH]
    log_phi = np.concatenate([log_phi_series(ts), log_phi_direct(td)], axis=-1)
    with np.errstate(under="ignore"):
        return h * np.exp(t - np.exp(t) + (n - 1.0) * log_phi).sum(axis=-1)


def group_mean(
    n_others: float,
    log_group: Callable[[np.ndarray], np.ndarray],
    log_phi_series: Callable[[np.ndarray], np.ndarray],
    log_phi_direct: Callable[[np.ndarray], np.ndarray],
    *,
    h: float,
    t_lo: float,
) -> np.ndarray:
    """``E[K / (K + S)]`` for ``K > 0`` independent of ``S``, ``S`` a sum of ``n_others``
    conditionally i.i.d. terms with Laplace transform ``phi``
    (docs/regimes.md#exact-finite-d-theory-for-k-copies).

    ``K / (K + S) = int_0^inf K e^{-s (K + S)} ds`` gives
    ``E[K / (K + S)] = int_R exp(t + ln G(e^t) + n_others ln phi(e^t)) dt`` with
    ``G(s) = E[K e^{-s K}]`` and ``s = e^t``; trapezoid rule of step ``h`` from ``T_MAX`` down to
    above ``t_lo``, as :func:`reciprocal_mean` (which is ``K = 1``, ``ln G = -e^t``).

    Parameters
    ----------
    n_others : float
        Number of terms of ``S``.
    log_group : callable
        ``ln G(e^t)`` at the grid's ``t`` values (an array of their shape).
    log_phi_series, log_phi_direct : callable
        As in :func:`reciprocal_mean`.
    h, t_lo : float
        As in :func:`reciprocal_mean`; ``t_lo`` must lie where the integrand is negligible
        (``E[K] e^{t_lo}`` is the mass left out below it).

    Returns
    -------
    numpy.ndarray
        The integral at every conditioning node.
    """
    t = np.arange(T_MAX, t_lo, -h)[::-1]
    ts, td = t[t < T_SWITCH], t[t >= T_SWITCH]
    log_phi = np.concatenate([log_phi_series(ts), log_phi_direct(td)], axis=-1)
    with np.errstate(under="ignore"):
        return h * np.exp(t + log_group(t) + n_others * log_phi).sum(axis=-1)
