"""Closed forms of Paper B on the sphere S^{d-1}: scales, the exact D2Q law of uniform keys, the
density ``rho ∝ exp(x1 x2)``, and the subcritical and nearest-key limit laws (docs/paper-b.md).

Labels: the local law, the three regimes and the incomplete-gamma and Weibull limits are the
paper's [paper]; the explicit constants (``C(q)``, the normaliser ``Z``) and the finite-beta
overlays are derivations [derived]. The critical Poisson limit lives in
:mod:`attnscale.sphere.poisson_limit`, its output law in :mod:`attnscale.sphere.marked_poisson`, and the
quadrature of the ``n -> inf`` output in :mod:`attnscale.sphere.quadrature`.

Notation
--------
* ``T = 1 - <q, x>`` is the distance to the query (D2Q), ``F(t) = P(T <= t)``.
* ``alpha = 2 / (d - 1)`` and ``a = 1 / alpha = (d - 1) / 2``, so ``F(t) ~ C(q) t^a``.
* ``m_n = C(q) n beta^{-1/alpha}`` is the effective number of attended keys.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from attnscale.core.validation import check_int, check_real, check_vector

__all__ = [
    "alpha_exponent",
    "sphere_area",
    "c_density",
    "c_uniform",
    "m_eff",
    "critical_scale",
    "drift_transition_beta",
    "d2q_cdf_uniform",
    "d2q_ppf_uniform",
    "normaliser_x1x2",
    "density_x1x2",
    "c_x1x2",
    "score_x1x2",
    "unit_query",
    "tangent_frame",
    "subcritical_top_weight_limit",
    "profile_limit",
    "cumulative_mass_limit",
    "profile_finite_beta",
    "cumulative_mass_finite_beta",
    "nearest_key_sf_limit",
    "nearest_key_sf_exact_uniform",
    "drift",
    "noise_trace_d3",
    "nearest_key_tangent_ms",
]


# --------------------------------------------------------------------------- scales and constants
def _d(d, minimum: int = 2) -> int:
    return check_int("d", d, minimum=minimum)


def alpha_exponent(d: int) -> float:
    """Local-law exponent ``alpha = 2 / (d - 1)`` (docs/paper-b.md) [paper].

    Parameters
    ----------
    d : int
        Ambient dimension, keys on ``S^{d-1}``, ``d >= 2``.

    Returns
    -------
    float
        ``alpha``; ``F(t) ~ C t^{1/alpha}`` as ``t -> 0`` and the critical scale is ``n^alpha``.
    """
    return 2.0 / (_d(d) - 1)


def sphere_area(d: int) -> float:
    """Surface area ``|S^{d-1}| = 2 pi^{d/2} / Gamma(d/2)`` (``4 pi`` for d = 3) [derived]."""
    d = _d(d, 1)
    return float(2.0 * np.pi ** (d / 2) / special.gamma(d / 2))


def c_density(rho_q: float, d: int) -> float:
    """Local-law constant ``C(q) = rho(q) (2 pi)^{(d-1)/2} / Gamma((d+1)/2)`` (docs/paper-b.md) [derived].

    Parameters
    ----------
    rho_q : float
        Key density at the query, with respect to the surface measure (> 0).
    d : int
        Ambient dimension (``d >= 2``).
    """
    rho_q = check_real("rho_q", rho_q, low=0.0, low_open=True)
    d = _d(d)
    return float(rho_q * (2 * np.pi) ** ((d - 1) / 2) / special.gamma((d + 1) / 2))


def c_uniform(d: int) -> float:
    """``C_unif(d) = 2^{-a} / (a B(a, a))``, ``a = (d - 1)/2`` (docs/paper-b.md) [derived].

    Values: d = 2: sqrt(2)/pi = 0.4502; d = 3: 1/2; d = 4: 0.6002; d = 5: 3/4.
    """
    a = (_d(d) - 1) / 2
    return float(2.0**-a / (a * special.beta(a, a)))


def m_eff(n: int, beta: float, c: float, d: int) -> float:
    """Effective number of attended keys ``m_n = C n beta^{-1/alpha}`` (docs/paper-b.md) [paper].

    Parameters
    ----------
    n : int
        Number of keys (>= 1).
    beta : float
        Inverse temperature (> 0).
    c : float
        Local-law constant ``C(q)`` (> 0).
    d : int
        Ambient dimension (>= 2).
    """
    n = check_int("n", n, minimum=1)
    beta = check_real("beta", beta, low=0.0, low_open=True)
    c = check_real("c", c, low=0.0, low_open=True)
    return float(c * n * beta ** (-(_d(d) - 1) / 2))


def critical_scale(n: float, d: int, gamma: float = 1.0) -> float:
    """Paper B's critical scale ``beta = gamma n^alpha``, ``alpha = 2/(d-1)`` (docs/paper-b.md)
    [paper]. (Named ``critical_beta`` until 0.2.0.)"""
    n = check_real("n", n, low=0.0, low_open=True)
    gamma = check_real("gamma", gamma, low=0.0, low_open=True)
    return float(gamma * n ** alpha_exponent(d))


def drift_transition_beta(n: float, d: int) -> float:
    """Internal output transition ``beta ~ n^{2/(d+1)}``: drift dominates below (docs/paper-b.md) [paper]."""
    n = check_real("n", n, low=0.0, low_open=True)
    return float(n ** (2.0 / (_d(d) + 1)))


# --------------------------------------------------------------------------- the exact D2Q law
def d2q_cdf_uniform(t, d: int) -> np.ndarray:
    """Exact ``F(t) = P(T <= t)`` for uniform keys: ``T/2 ~ Beta(a, a)`` (docs/paper-b.md) [derived].

    ``t/2`` for d = 3 and ``3 (t/2)^2 - 2 (t/2)^3`` for d = 5. Values outside ``[0, 2]`` are
    clipped (``F = 0`` below 0, ``1`` above 2).
    """
    a = (_d(d) - 1) / 2
    s = np.clip(np.asarray(t, dtype=float) / 2.0, 0.0, 1.0)
    return special.betainc(a, a, s)


def d2q_ppf_uniform(u, d: int) -> np.ndarray:
    """Inverse of :func:`d2q_cdf_uniform`: ``F^{-1}(u) = 2 I^{-1}_u(a, a)`` for ``u`` in ``[0, 1]``."""
    a = (_d(d) - 1) / 2
    u = np.asarray(u, dtype=float)
    if np.any(~np.isfinite(u)) or np.any((u < 0) | (u > 1)):
        raise ValueError("u must lie in [0, 1]")
    return 2.0 * special.betaincinv(a, a, u)


# --------------------------------------------------------------------------- density exp(x1 x2)
def normaliser_x1x2(d: int = 3) -> float:
    """``Z = int_{S^{d-1}} exp(x1 x2) dsigma`` by its power series [derived].

    ``Z = |S^{d-1}| sum_k E[(x1 x2)^{2k}] / (2k)!`` with, for uniform ``x``,
    ``E[x1^{2k} x2^{2k}] = Gamma(d/2) Gamma(k + 1/2)^2 / (pi Gamma(d/2 + 2k))``. Forty terms reach
    machine precision (the terms fall faster than ``4^{-k} / (2k)!``). d = 3: ``Z = 12.9903...``
    (docs/paper-b.md).
    """
    d = _d(d)
    k = np.arange(40, dtype=float)
    log_mom = (
        special.gammaln(d / 2)
        + 2 * special.gammaln(k + 0.5)
        - np.log(np.pi)
        - special.gammaln(d / 2 + 2 * k)
    )
    terms = np.exp(log_mom - special.gammaln(2 * k + 1))
    return float(sphere_area(d) * np.sum(terms[::-1]))


def density_x1x2(X, d: int | None = None) -> np.ndarray:
    """Normalised density ``rho(x) = exp(x1 x2) / Z`` on ``S^{d-1}`` (w.r.t. surface measure) [paper]."""
    X = np.atleast_2d(np.asarray(X, dtype=float))
    d = X.shape[1] if d is None else d
    return np.exp(X[:, 0] * X[:, 1]) / normaliser_x1x2(d)


def c_x1x2(q) -> float:
    """``C(q)`` for ``rho ∝ exp(x1 x2)``: ``2 pi e^{q1 q2} / Z`` on S^2 (0.2934 .. 0.7975) [derived]."""
    q = unit_query(q)
    return c_density(float(density_x1x2(q[None, :])[0]), q.size)


def score_x1x2(X) -> np.ndarray:
    """Riemannian score ``grad_S log rho(x) = (x2, x1, 0, ...) - 2 x1 x2 x`` (docs/paper-b.md) [derived].

    Parameters
    ----------
    X : array_like, shape (m, d) or (d,)
        Unit vectors.

    Returns
    -------
    numpy.ndarray
        Same shape as ``X``; each row is tangent at its point (``<score(x), x> = 0``).
    """
    X = np.asarray(X, dtype=float)
    one = X.ndim == 1
    X = np.atleast_2d(X)
    G = np.zeros_like(X)
    G[:, 0] = X[:, 1]
    G[:, 1] = X[:, 0]
    G -= 2.0 * (X[:, 0] * X[:, 1])[:, None] * X
    return G[0] if one else G


def unit_query(q) -> np.ndarray:
    q = check_vector("q", q)
    nq = np.linalg.norm(q)
    if q.size < 2 or abs(nq - 1.0) > 1e-9:
        raise ValueError(
            f"q must be a unit vector of length >= 2, got norm {nq:g}, length {q.size}"
        )
    return q / nq


def tangent_frame(q) -> tuple[np.ndarray, np.ndarray]:
    """An orthonormal basis ``(e1, e2)`` of the tangent plane of S^2 at ``q`` (deterministic)."""
    q = unit_query(q)
    if q.size != 3:
        raise ValueError(f"tangent_frame needs q on S^2 (length 3), got length {q.size}")
    ref = np.eye(3)[int(np.argmin(np.abs(q)))]
    e1 = ref - (ref @ q) * q
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(q, e1)


def subcritical_top_weight_limit(d: int) -> float:
    """Limit of ``m_n A_(1)`` in the subcritical regime: ``1 / Gamma(1 + 1/alpha)`` (docs/paper-b.md) [derived]."""
    return float(1.0 / special.gamma(1.0 + 1.0 / alpha_exponent(d)))


def profile_limit(x, d: int) -> np.ndarray:
    """Subcritical weight profile ``A_(k)/A_(1) -> exp(-x^alpha)``, ``x = k / m_n`` (docs/paper-b.md) [paper]."""
    x = np.asarray(x, dtype=float)
    return np.exp(-(x ** alpha_exponent(d)))


def cumulative_mass_limit(x, d: int) -> np.ndarray:
    """Mass of the top ``x m_n`` weights: ``P(1/alpha, x^alpha)`` (regularised lower incomplete gamma) (docs/paper-b.md) [derived]."""
    alpha = alpha_exponent(d)
    x = np.asarray(x, dtype=float)
    return special.gammainc(1.0 / alpha, x**alpha)


def profile_finite_beta(k, n: int, beta: float, d: int, shifted: bool = False) -> np.ndarray:
    """Finite-beta overlay ``A_(k)/A_(1) ≈ exp(-beta F^{-1}(k/n))`` with the exact uniform ``F`` (docs/paper-b.md) [derived].

    With the local law ``F(t) ≈ C t^{1/alpha}`` this is ``exp(-(k/m_n)^alpha)``: the overlay only
    replaces the local law by the exact ``F`` (the quantile ``k/n`` stands in for ``T_(k)``).

    ``shifted=True`` gives ``exp(-beta (F^{-1}(k/n) - F^{-1}(1/n)))`` [derived, ours]: the ratio
    is ``exp(-beta (T_(k) - T_(1)))``, and ``T_(1)`` is not negligible when ``m_n`` is only ~100
    and ``alpha < 1`` (d = 5: ``beta F^{-1}(1/n) = 0.087`` at n = 1000). The unshifted form is
    exact for the cumulative mass (the shift cancels in the normalisation).
    """
    n = check_int("n", n, minimum=1)
    beta = check_real("beta", beta, low=0.0)
    k = np.asarray(k, dtype=float)
    if np.any((k < 0) | (k > n)):
        raise ValueError(f"k must lie in [0, n] = [0, {n}]")
    t = d2q_ppf_uniform(k / n, d)
    if shifted:
        t = t - d2q_ppf_uniform(1.0 / n, d)
    return np.exp(-beta * t)


def cumulative_mass_finite_beta(n: int, beta: float, d: int) -> np.ndarray:
    """Finite-beta mass of the top ``k`` weights, ``k = 1..n``, from :func:`profile_finite_beta` [derived].

    ``sum_{j<=k} e^{-beta F^{-1}(j/n)} / sum_{j<=n} e^{-beta F^{-1}(j/n)}``.
    """
    w = profile_finite_beta(np.arange(1, n + 1), n, beta, d)
    return np.cumsum(w) / w.sum()


def nearest_key_sf_limit(s, c: float, d: int) -> np.ndarray:
    """Weibull limit ``P(n^alpha T_(1) > s) -> exp(-C s^{1/alpha})`` (docs/paper-b.md) [paper]."""
    c = check_real("c", c, low=0.0, low_open=True)
    s = np.clip(np.asarray(s, dtype=float), 0.0, None)
    return np.exp(-c * s ** (1.0 / alpha_exponent(d)))


def nearest_key_sf_exact_uniform(s, n: int, d: int) -> np.ndarray:
    """Exact ``P(n^alpha T_(1) > s) = (1 - F(s / n^alpha))^n`` for uniform keys [derived]."""
    n = check_int("n", n, minimum=1)
    t = np.asarray(s, dtype=float) / n ** alpha_exponent(d)
    with np.errstate(divide="ignore"):  # F = 1 (s beyond the sphere): log 0 = -inf, sf = 0
        return np.exp(n * np.log1p(-d2q_cdf_uniform(t, d)))


def drift(q, score, d: int, beta: float) -> np.ndarray:
    """Subcritical drift of ``sum_i A_i x_i - q``: ``(grad_S log rho(q) - q / alpha) / beta`` (docs/paper-b.md) [paper].

    The tangential part is ``score / beta``; the normal part ``-q / (alpha beta)`` keeps the
    output inside the ball.
    """
    beta = check_real("beta", beta, low=0.0, low_open=True)
    q = np.asarray(q, dtype=float)
    return (np.asarray(score, dtype=float) - q / alpha_exponent(d)) / beta


def noise_trace_d3(n: int, rho_q) -> np.ndarray:
    """d = 3 subcritical noise ``E |P_q noise|^2 = tr(P_q) / (8 pi n rho(q)) = 1 / (4 pi n rho(q))`` (docs/paper-b.md) [derived]."""
    n = check_int("n", n, minimum=1)
    return 1.0 / (4 * np.pi * n * np.asarray(rho_q, dtype=float))


def nearest_key_tangent_ms(n: int, c, d: int) -> np.ndarray:
    """Supercritical ``E |P_q (x_(1) - q)|^2 ≈ 2 E T_(1) = 2 Gamma(1 + alpha) (C n)^{-alpha}`` [derived].

    ``|P_q (x - q)|^2 = sin^2 theta = T (2 - T) ≈ 2 T`` and ``n^alpha T_(1)`` is Weibull
    (:func:`nearest_key_sf_limit`).
    """
    n = check_int("n", n, minimum=1)
    alpha = alpha_exponent(d)
    return 2.0 * special.gamma(1.0 + alpha) * (np.asarray(c, dtype=float) * n) ** (-alpha)
