"""Closed forms of Paper A (spec ``paper-a.md`` §1, §3, §4, §5, §8).

Labels follow the spec: Theorem 2.1 and 2.4 (alpha = 0) are the paper's; the residual
(alpha > 0) limits and the exact finite-n simplex map are our derivations [derived].
"""

from __future__ import annotations

import numpy as np

from .validation import check_int, check_real


def _rho(rho):
    return check_real("rho", rho, low=0.0, high=1.0, low_open=True, high_open=True)


def gamma_c(rho: float) -> float:
    """Critical scale ``gamma_c = 1 / (1 - rho)`` of ``beta_n = gamma log n`` (spec §1)."""
    return 1.0 / (1.0 - _rho(rho))


def self_weight_limit(rho: float, gamma: float) -> float:
    """``a = lim A_ii`` as ``n -> inf``: 0 below ``gamma_c``, 1/2 at it, 1 above (spec §3).

    ``gamma`` equal to ``gamma_c`` up to a relative 1e-9 counts as critical.
    """
    gamma = check_real("gamma", gamma, low=0.0)
    gc = gamma_c(rho)
    if abs(gamma - gc) <= 1e-9 * gc:
        return 0.5
    return 0.0 if gamma < gc else 1.0


def cosine_limit(rho: float, gamma: float, alpha: float = 0.0, q: float = 1.0) -> float:
    """``lim <y_i', y_j'>`` for simplex tokens (Theorem 2.1; residual form [derived], spec §3).

    ``rho (1 + alpha sqrt q)^2 / (c^2 + 2 rho c (1 - a) + rho (1 - a)^2)`` with
    ``a = lim A_ii`` and ``c = a + alpha sqrt q``. For ``alpha = 0`` this is 1 / ``4 rho /
    (1 + 3 rho)`` / ``rho`` below / at / above ``gamma_c``.
    """
    rho = _rho(rho)
    alpha = check_real("alpha", alpha, low=0.0)
    q = check_real("q", q, low=0.0, low_open=True)
    a = self_weight_limit(rho, gamma)
    s = alpha * np.sqrt(q)
    c = a + s
    return float(rho * (1.0 + s) ** 2 / (c**2 + 2 * rho * c * (1 - a) + rho * (1 - a) ** 2))


def lambda_limit(rho: float, gamma: float, alpha: float = 0.0, q: float = 1.0) -> float:
    """``lim lambda`` for simplex tokens (spec §4 [derived]).

    ``c^2 / (c^2 + 2 rho c (1 - a) + rho (1 - a)^2)``; for ``alpha = 0``: 0 / ``1/(1+3 rho)`` / 1.
    """
    rho = _rho(rho)
    alpha = check_real("alpha", alpha, low=0.0)
    q = check_real("q", q, low=0.0, low_open=True)
    a = self_weight_limit(rho, gamma)
    c = a + alpha * np.sqrt(q)
    den = c**2 + 2 * rho * c * (1 - a) + rho * (1 - a) ** 2
    return float(c**2 / den)


def critical_cosine(rho: float) -> float:
    """Theorem 2.1 at ``gamma = gamma_c``, ``alpha = 0``: ``4 rho / (1 + 3 rho)`` (spec §3, §8)."""
    rho = _rho(rho)
    return 4.0 * rho / (1.0 + 3.0 * rho)


def critical_lambda(rho: float) -> float:
    """Critical angle ratio ``1 / (1 + 3 rho)`` (spec §4, §8)."""
    rho = _rho(rho)
    return 1.0 / (1.0 + 3.0 * rho)


def eta_limit(rho: float, gamma: float, d: int, alpha: float = 0.0, q: float = 1.0) -> float:
    """``lim eta`` (Theorem 2.4 for ``alpha = 0``; residual form [derived, unchecked], spec §5).

    ``[(d - 1)(a / sqrt q + alpha)^2 + alpha^2] / d``; for ``alpha = 0``:
    0 / ``(1 - 1/d) / (4 q)`` / ``(1 - 1/d) / q``.
    """
    rho = _rho(rho)
    d = check_int("d", d, minimum=1)
    alpha = check_real("alpha", alpha, low=0.0)
    q = check_real("q", q, low=0.0, low_open=True)
    a = self_weight_limit(rho, gamma)
    return float(((d - 1) * (a / np.sqrt(q) + alpha) ** 2 + alpha**2) / d)


def simplex_map(
    n: int, rho: float, beta: float, alpha: float = 0.0, q: float = 1.0
) -> tuple[float, float]:
    """Exact finite-n simplex map (spec §3 [derived]).

    With ``t = e^{beta (rho - 1)}``, ``a_n = 1 / (1 + (n-1) t)``, ``b_n = t / (1 + (n-1) t)``,
    ``e = a_n + alpha sqrt q - b_n``, ``s1 = 1 + (n-1) rho``, ``s2 = n + n (n-1) rho``:
    ``<x_i', x_j'> = e^2 rho + 2 e b_n s1 + b_n^2 s2`` and
    ``||x_i'||^2 = e^2 + 2 e b_n s1 + b_n^2 s2``.

    Returns
    -------
    (float, float)
        ``(<y_i', y_j'>, ||x_i'||^2)``: the output cosine and squared norm.
    """
    n = check_int("n", n, minimum=2)
    rho = _rho(rho)
    beta = check_real("beta", beta, low=0.0)
    alpha = check_real("alpha", alpha, low=0.0)
    q = check_real("q", q, low=0.0, low_open=True)
    t = np.exp(beta * (rho - 1.0))
    an = 1.0 / (1.0 + (n - 1) * t)
    bn = t / (1.0 + (n - 1) * t)
    e = an + alpha * np.sqrt(q) - bn
    s1 = 1.0 + (n - 1) * rho
    s2 = n + n * (n - 1) * rho
    common = 2.0 * e * bn * s1 + bn**2 * s2
    inner = e**2 * rho + common
    norm2 = e**2 + common
    return float(inner / norm2), float(norm2)


def simplex_lambda(n: int, rho: float, beta: float, alpha: float = 0.0, q: float = 1.0) -> float:
    """Finite-n simplex lambda ``(1 - <y_i', y_j'>) / (1 - rho)`` from :func:`simplex_map`.

    Computed as ``e^2 (1 - rho) / ||x_i'||^2 / (1 - rho)`` = ``e^2 / ||x_i'||^2`` to avoid the
    cancellation in ``1 - cos``: ``||x'_i||^2 - <x'_i, x'_j> = e^2 (1 - rho)``.
    """
    n = check_int("n", n, minimum=2)
    rho = _rho(rho)
    beta = check_real("beta", beta, low=0.0)
    alpha = check_real("alpha", alpha, low=0.0)
    q = check_real("q", q, low=0.0, low_open=True)
    t = np.exp(beta * (rho - 1.0))
    an = 1.0 / (1.0 + (n - 1) * t)
    bn = t / (1.0 + (n - 1) * t)
    e = an + alpha * np.sqrt(q) - bn
    s1 = 1.0 + (n - 1) * rho
    s2 = n + n * (n - 1) * rho
    norm2 = e**2 + 2.0 * e * bn * s1 + bn**2 * s2
    return float(e**2 / norm2)


def beta_of_gamma(gamma: float, n: int) -> float:
    """Paper A's scaling ``beta_n = gamma log n`` (natural log, spec §1)."""
    gamma = check_real("gamma", gamma, low=0.0)
    n = check_int("n", n, minimum=2)
    return float(gamma * np.log(n))
