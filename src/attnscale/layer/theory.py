"""Closed forms of Paper A (``docs/paper-a.md``).

Labels as in ``docs/paper-a.md``: Theorem 2.1 and 2.4 (alpha = 0) are the paper's; the residual
(alpha > 0) limits and the exact finite-n simplex map are our derivations [derived].
"""

from __future__ import annotations

import numpy as np

from attnscale.core.validation import check_int, check_real, check_vector

__all__ = [
    "gamma_c",
    "self_weight_limit",
    "cosine_limit",
    "lambda_limit",
    "critical_cosine",
    "critical_lambda",
    "eta_limit",
    "simplex_terms",
    "simplex_map",
    "simplex_lambda",
    "beta_of_gamma",
    "simplex_eta",
    "simplex_self_weight",
]


def _rho(rho):
    return check_real("rho", rho, low=0.0, high=1.0, low_open=True, high_open=True)


def gamma_c(rho):
    """Critical scale ``gamma_c = 1 / (1 - rho)`` of ``beta_n = gamma log n``
    (docs/paper-a.md#the-model). The one place it is computed: a float for a scalar ``rho``, an
    array for an array. Every entry must lie in [0, 1): Paper A's tokens have ``rho > 0``; the
    finite-d theory also uses ``rho = 0`` (independent tokens, ``gamma_c = 1``)."""
    if np.ndim(rho) == 0:
        return 1.0 / (1.0 - check_real("rho", rho, low=0.0, high=1.0, high_open=True))
    r = check_vector("rho", np.ravel(rho)).reshape(np.shape(rho))
    if np.any((r < 0.0) | (r >= 1.0)):
        raise ValueError(f"rho must lie in [0, 1), got {np.asarray(rho).tolist()}")
    return 1.0 / (1.0 - r)


def self_weight_limit(rho: float, gamma: float) -> float:
    """``a = lim A_ii`` as ``n -> inf``: 0 below ``gamma_c``, 1/2 at it, 1 above (docs/paper-a.md#results-of-the-paper-that-we-use).

    ``gamma`` equal to ``gamma_c`` up to a relative 1e-9 counts as critical.
    """
    gamma = check_real("gamma", gamma, low=0.0)
    gc = gamma_c(rho)
    if abs(gamma - gc) <= 1e-9 * gc:
        return 0.5
    return 0.0 if gamma < gc else 1.0


def cosine_limit(rho: float, gamma: float, alpha: float = 0.0, q: float = 1.0) -> float:
    """``lim <y_i', y_j'>`` for simplex tokens (Theorem 2.1; residual form [derived], docs/paper-a.md#residual-limits).

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
    """``lim lambda`` for simplex tokens (docs/paper-a.md#the-angle-ratio-lambda [derived]).

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
    """Theorem 2.1 at ``gamma = gamma_c``, ``alpha = 0``: ``4 rho / (1 + 3 rho)`` (docs/paper-a.md)."""
    rho = _rho(rho)
    return 4.0 * rho / (1.0 + 3.0 * rho)


def critical_lambda(rho: float) -> float:
    """Critical angle ratio ``1 / (1 + 3 rho)`` (docs/paper-a.md)."""
    rho = _rho(rho)
    return 1.0 / (1.0 + 3.0 * rho)


def eta_limit(rho: float, gamma: float, d: int, alpha: float = 0.0, q: float = 1.0) -> float:
    """``lim eta`` (Theorem 2.4 for ``alpha = 0``; residual form [derived, unchecked], docs/paper-a.md#the-jacobian-norm-eta).

    ``[(d - 1)(a / sqrt q + alpha)^2 + alpha^2] / d``; for ``alpha = 0``:
    0 / ``(1 - 1/d) / (4 q)`` / ``(1 - 1/d) / q``.
    """
    rho = _rho(rho)
    d = check_int("d", d, minimum=1)
    alpha = check_real("alpha", alpha, low=0.0)
    q = check_real("q", q, low=0.0, low_open=True)
    a = self_weight_limit(rho, gamma)
    return float(((d - 1) * (a / np.sqrt(q) + alpha) ** 2 + alpha**2) / d)


def simplex_terms(n: int, rho: float, beta: float, alpha: float = 0.0, q: float = 1.0):
    """The terms of the exact finite-n simplex map (docs/paper-a.md#finite-n-simplex-map):
    ``e = a_n + alpha sqrt q - b_n``, ``b_n``, ``s1 = 1 + (n-1) rho`` and
    ``s2 = n + n (n-1) rho`` with ``t = e^{beta (rho - 1)}``, ``a_n = 1 / (1 + (n-1) t)``,
    ``b_n = t / (1 + (n-1) t)``; shared by :func:`simplex_map` and :func:`simplex_lambda`."""
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
    return e, bn, s1, s2, rho


def simplex_map(
    n: int, rho: float, beta: float, alpha: float = 0.0, q: float = 1.0
) -> tuple[float, float]:
    """Exact finite-n simplex map (docs/paper-a.md#finite-n-simplex-map [derived]).

    With ``t = e^{beta (rho - 1)}``, ``a_n = 1 / (1 + (n-1) t)``, ``b_n = t / (1 + (n-1) t)``,
    ``e = a_n + alpha sqrt q - b_n``, ``s1 = 1 + (n-1) rho``, ``s2 = n + n (n-1) rho``:
    ``<x_i', x_j'> = e^2 rho + 2 e b_n s1 + b_n^2 s2`` and
    ``||x_i'||^2 = e^2 + 2 e b_n s1 + b_n^2 s2``.

    Returns
    -------
    (float, float)
        ``(<y_i', y_j'>, ||x_i'||^2)``: the output cosine and squared norm.
    """
    e, bn, s1, s2, rho = simplex_terms(n, rho, beta, alpha, q)
    common = 2.0 * e * bn * s1 + bn**2 * s2
    inner = e**2 * rho + common
    norm2 = e**2 + common
    return float(inner / norm2), float(norm2)


def simplex_lambda(n: int, rho: float, beta: float, alpha: float = 0.0, q: float = 1.0) -> float:
    """Finite-n simplex lambda ``(1 - <y_i', y_j'>) / (1 - rho)`` from :func:`simplex_map`.

    Computed as ``e^2 (1 - rho) / ||x_i'||^2 / (1 - rho)`` = ``e^2 / ||x_i'||^2`` to avoid the
    cancellation in ``1 - cos``: ``||x'_i||^2 - <x'_i, x'_j> = e^2 (1 - rho)``.
    """
    e, bn, s1, s2, rho = simplex_terms(n, rho, beta, alpha, q)
    norm2 = e**2 + 2.0 * e * bn * s1 + bn**2 * s2
    return float(e**2 / norm2)


def beta_of_gamma(gamma, n: int):
    """Paper A's scaling ``beta_n = gamma log n`` (natural log, docs/paper-a.md#the-model); a
    float for a scalar ``gamma``, an array for an array."""
    n = check_int("n", n, minimum=2)
    if np.ndim(gamma) == 0:
        return float(check_real("gamma", gamma, low=0.0) * np.log(n))
    return check_vector("gamma", np.ravel(gamma), low=0.0).reshape(np.shape(gamma)) * np.log(n)


def simplex_eta(
    n: int,
    d: int,
    rho: float,
    beta: float,
    alpha: float = 0.0,
    q: float = 1.0,
    *,
    mean_inv_norm: float | None = None,
    mean_inv_sq_norm: float | None = None,
) -> float:
    """Exact finite-n eta for simplex tokens (docs/paper-a.md#simplex-eta-and-its-finite-size-bias) [derived].

    The block formula of :func:`attnscale.layer.dense.eta_exact.eta_exact_grid` evaluated on the simplex Gram
    matrix ``G = (1 - rho) I + rho 1 1^T``. With ``t = e^{beta (rho - 1)}``,
    ``a = 1 / (1 + (n-1) t)`` (= ``A_ii``), ``b = t a`` (= ``A_ij``), ``K0 = <m_i, y_i> =
    a + (n-1) b rho``, ``K1 = <m_i, y_j> = a rho + b (1 + (n-2) rho)``,
    ``mm = ||m_i||^2 = a K0 + (n-1) b K1``:

    * off-diagonal block: ``b^2 [(d-1) - 2 beta (K0 - rho K1) + beta^2 (1 - 2 K1 + mm)(1 - rho^2)]``
      (times ``1 / r_k^2``);
    * diagonal block: ``a^2 (d-1) + 2 beta a tr(CP) + beta^2 ||CP||^2`` (times ``1 / r_i^2``)
      with ``tr(CP) = 1 - mm - (a + (n-1) b rho^2 - K0^2)`` and ``||CP||^2 = s2 - 2 (a K0^2 +
      (n-1) b K1^2) + mm^2 - ||C y_i||^2``, ``s2 = s + rho^2 (1 - s)``, ``s = a^2 + (n-1) b^2``,
      ``C y_i = a (1 - K0) y_i + b (rho - K0) sum_{j != i} y_j``; its trace term
      ``a (d-1) + beta tr(CP)`` (times ``1 / r_i``) meets alpha.

    ``eta = [(diag + (n-1) off) / q + 2 alpha (a (d-1) + beta tr(CP)) / sqrt(q) + alpha^2 d] / d``.

    ``d`` enters only through ``d - 1 = tr P_i`` and ``alpha^2 d``; a simplex Gram needs
    ``d >= n``, for ``d < n`` the value is the formal extension (the same Gram matrix with the
    normalisation of dimension ``d``), which is what a near-simplex configuration in ``R^d`` is
    compared with. For ``n -> inf`` with ``d >= n`` it tends to :func:`eta_limit`.

    Parameters
    ----------
    n : int
        Number of tokens, ``n >= 2``.
    d : int
        Dimension, ``d >= 1``.
    rho : float
        Pairwise cosine, ``0 < rho < 1``.
    beta : float
        Inverse temperature, ``beta >= 0``.
    alpha : float, optional
        Residual weight, ``alpha >= 0``.
    q : float, optional
        Squared norm of every token, ``q > 0``.
    mean_inv_norm, mean_inv_sq_norm : float, optional
        For tokens with simplex directions but unequal norms, the realised ``mean_i 1/||x_i||``
        and ``mean_i 1/||x_i||^2``; they replace ``1/sqrt(q)`` and ``1/q`` (the formula stays
        exact, since ``J_ik`` depends on the norms only through a factor ``1/||x_k||``).

    Returns
    -------
    float
        eta.
    """
    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=1)
    rho = _rho(rho)
    beta = check_real("beta", beta, low=0.0)
    alpha = check_real("alpha", alpha, low=0.0)
    q = check_real("q", q, low=0.0, low_open=True)
    w1 = 1.0 / np.sqrt(q)
    w2 = 1.0 / q
    if mean_inv_norm is not None:
        w1 = check_real("mean_inv_norm", mean_inv_norm, low=0.0, low_open=True)
    if mean_inv_sq_norm is not None:
        w2 = check_real("mean_inv_sq_norm", mean_inv_sq_norm, low=0.0, low_open=True)
    t = np.exp(beta * (rho - 1.0))
    a = 1.0 / (1.0 + (n - 1) * t)
    b = t * a
    k0 = a + (n - 1) * b * rho
    k1 = a * rho + b * (1.0 + (n - 2) * rho)
    mm = a * k0 + (n - 1) * b * k1
    off = b**2 * (
        (d - 1) - 2.0 * beta * (k0 - rho * k1) + beta**2 * (1.0 - 2.0 * k1 + mm) * (1.0 - rho**2)
    )
    tr_cp = 1.0 - mm - (a + (n - 1) * b * rho**2 - k0**2)
    s = a**2 + (n - 1) * b**2
    s2 = s + rho**2 * (1.0 - s)
    msm = a * k0**2 + (n - 1) * b * k1**2
    ca = a * (1.0 - k0)
    cb = b * (rho - k0)
    cy2 = ca**2 + 2.0 * ca * cb * (n - 1) * rho + cb**2 * (n - 1) * (1.0 + (n - 2) * rho)
    cp2 = s2 - 2.0 * msm + mm**2 - cy2
    diag = a**2 * (d - 1) + 2.0 * beta * a * tr_cp + beta**2 * cp2
    lin = a * (d - 1) + beta * tr_cp
    return float(((diag + (n - 1) * off) * w2 + 2.0 * alpha * lin * w1 + alpha**2 * d) / d)


def simplex_self_weight(n: int, rho: float, beta: float) -> float:
    """Finite-n simplex self-weight ``A_ii = 1 / (1 + (n-1) e^{beta (rho - 1)})`` (docs/paper-a.md#finite-n-simplex-map).

    Tends to :func:`self_weight_limit` (0 / 1/2 / 1) as ``n -> inf`` with ``beta = gamma log n``.
    """
    n = check_int("n", n, minimum=2)
    rho = _rho(rho)
    beta = check_real("beta", beta, low=0.0)
    return float(1.0 / (1.0 + (n - 1) * np.exp(beta * (rho - 1.0))))
