"""Approximations to the finite-d critical point and the two asymptotic regimes.

docs/finite-d.md#annealed-approximation, docs/finite-d.md#first-order-approximation,
docs/finite-d.md#asymptotic-regimes.
"""

from __future__ import annotations

from functools import cache, lru_cache

import numpy as np
from scipy.special import gammaln, ive

from attnscale.core.quadrature import gauss_legendre_panels
from attnscale.core.roots import brentq

from .laws import QUADRATURE_PRESETS, normal_score_rule, r0_nodes, tau_law

__all__ = [
    "log_vmf",
    "vmf_mean",
    "log_annealed_mgf",
    "anneal_nodes",
    "annealed_beta",
    "within_row_variance",
    "total_variance",
    "first_order_crossover_log_n",
    "first_order_beta",
    "uniform_cap_constant",
    "log_poisson_critical_intensity",
    "poisson_critical_intensity",
    "power_law_beta",
]


def log_vmf(nu: float, k: np.ndarray) -> np.ndarray:
    """``log[Gamma(nu+1) (2/k)^nu I_nu(k)]``, the log moment generating function
    ``log E[e^{k w}]`` of one coordinate ``w`` of a uniform point on ``S^{2 nu + 1}``.

    Direct through ``scipy.special.ive`` wherever it does not underflow (series
    ``k^2 / (4 (nu + 1))`` below ``k = 1e-6``); elsewhere (large ``nu``, ``k << nu``) the uniform
    (Debye) expansion of ``I_nu(nu z)`` with three correction terms (it underflows only for
    ``nu > ~100``, where the neglected ``O(nu^-4)`` term is below ``1e-8``).
    """
    k = np.asarray(k, dtype=np.float64)
    out = np.empty_like(k)
    small = k < 1e-6
    out[small] = k[small] ** 2 / (4.0 * (nu + 1.0))
    kk = k[~small]
    with np.errstate(divide="ignore", under="ignore"):
        r = ive(nu, kk)
    safe = np.isfinite(r) & (r > 1e-250)
    val = np.empty_like(kk)
    val[safe] = gammaln(nu + 1.0) + nu * np.log(2.0 / kk[safe]) + np.log(r[safe]) + kk[safe]
    if not np.all(safe):
        kb = kk[~safe]
        z = kb / nu
        rt = np.sqrt(1.0 + z * z)
        eta = rt + np.log(z / (1.0 + rt))
        p = 1.0 / rt
        u1 = (3 * p - 5 * p**3) / 24.0
        u2 = (81 * p**2 - 462 * p**4 + 385 * p**6) / 1152.0
        u3 = (30375 * p**3 - 369603 * p**5 + 765765 * p**7 - 425425 * p**9) / 414720.0
        log_i = nu * eta - 0.5 * np.log(2 * np.pi * nu) - 0.5 * np.log(rt)
        log_i += np.log1p(u1 / nu + u2 / nu**2 + u3 / nu**3)
        val[~safe] = gammaln(nu + 1.0) + nu * np.log(2.0 / kb) + log_i
    out[~small] = val
    return out


def vmf_mean(nu: float, k: np.ndarray) -> np.ndarray:
    """``E[w e^{k w}] / E[e^{k w}] = I_{nu+1}(k) / I_nu(k)`` (same ``w`` as :func:`log_vmf`)."""
    k = np.asarray(k, dtype=np.float64)
    return np.exp(
        log_vmf(nu + 1.0, k)
        - log_vmf(nu, k)
        + np.log(np.maximum(k, 1e-300))
        - np.log(2.0 * (nu + 1.0))
    )


def log_annealed_mgf(d: int, rho: float, beta: float, quadrature: str = "standard") -> float:
    """``log E[e^{beta (c - 1)}]`` over the whole draw (docs/finite-d.md#annealed-approximation).

    ``rho = 0``: the uniform-sphere formula ``Gamma(d/2) (2/beta)^{d/2-1} I_{d/2-1}(beta)``.
    ``rho > 0``: ``E_{R_0, tau_i, tau_j}[e^{beta (tau_i tau_j - 1)} M(beta sigma_i sigma_j)]`` with
    ``M`` the von Mises-Fisher normaliser on ``S^{d-2}`` (:func:`log_vmf` with ``nu = (d-3)/2``);
    ``tau_i`` on Gauss-Legendre quantile nodes, ``tau_j`` on the fine grid of its law.
    """
    if rho == 0.0:
        return float(log_vmf((d - 2) / 2.0, np.array([beta]))[0] - beta)
    tables = anneal_nodes(d, rho, quadrature)
    vals, wts = [], []
    for wr, ti, wi, tj, wj in tables:
        si = np.sqrt(np.clip(1 - ti * ti, 0, None))
        sj = np.sqrt(np.clip(1 - tj * tj, 0, None))
        e = beta * (np.outer(ti, tj) - 1.0) + log_vmf((d - 3) / 2.0, beta * np.outer(si, sj))
        m = e.max()
        vals.append(m + np.log(wi @ np.exp(e - m) @ wj))
        wts.append(wr)
    vals = np.array(vals)
    m = vals.max()
    return float(m + np.log(np.array(wts) @ np.exp(vals - m)))


@lru_cache(maxsize=64)
def anneal_nodes(d: int, rho: float, quadrature: str):
    p = QUADRATURE_PRESETS[quadrature]
    r0s, r0w = r0_nodes(d, p["n_r0"])
    _, qw, qn, _ = normal_score_rule(p["n_tau"])
    out = []
    for r0, wr in zip(r0s, r0w, strict=False):
        law = tau_law(d, rho, float(r0))
        t = law.t[::4]
        cdf = law.cdf[::4]
        # weights from CDF increments split between neighbours (trapezoid in probability)
        dc = np.diff(cdf)
        wj = np.zeros_like(t)
        wj[1:] += dc / 2
        wj[:-1] += dc / 2
        out.append((wr, law.quantile(qn), qw, t, wj / wj.sum()))
    return tuple(out)


def annealed_beta(n: int, d: int, rho: float, quadrature: str = "standard") -> float:
    """Root of ``ln(n-1) + log E[e^{beta (c-1)}] = 0`` (decreasing in ``beta``)."""
    if n == 2:
        return 0.0
    target = np.log(n - 1.0)

    def f(b):
        return target + log_annealed_mgf(d, rho, b, quadrature)

    hi = max(1.0, 2.0 * np.log(n) / (1.0 - rho))
    while f(hi) > 0:
        hi *= 2.0
    return float(brentq(f, 0.0, hi, xtol=1e-10, rtol=1e-10))


def within_row_variance(d: int, rho: float) -> float:
    """First-order variance of ``c_ij`` over ``j`` at fixed ``z_0`` and ``i``:
    ``(1-rho)^2 (1 + rho - rho^2/2) / d`` (docs/finite-d.md#first-order-approximation)."""
    return (1.0 - rho) ** 2 * (1.0 + rho - rho**2 / 2.0) / d


def total_variance(d: int, rho: float) -> float:
    """First-order variance of ``c_ij`` over everything: ``(1 - rho^2)^2 / d``."""
    return (1.0 - rho**2) ** 2 / d


def first_order_crossover_log_n(d: int, rho: float) -> float:
    """``ln(n - 1)`` beyond which the first-order equation has no root:
    ``(1 - rho)^2 / (2 s^2) = d / (2 (1 + rho - rho^2/2))`` (docs/finite-d.md#asymptotic-regimes)."""
    return (1.0 - rho) ** 2 / (2.0 * within_row_variance(d, rho))


def first_order_beta(n: int, d: int, rho: float) -> float:
    """Smaller root of ``beta (1 - rho) - beta^2 s^2 / 2 = ln(n - 1)``; ``nan`` without a root."""
    L = np.log(n - 1.0)
    s2 = within_row_variance(d, rho)
    disc = (1.0 - rho) ** 2 - 2.0 * s2 * L
    if disc < 0:
        return float("nan")
    return float(2.0 * L / ((1.0 - rho) + np.sqrt(disc)))


def _log_cap_constant(d: int) -> float:
    log_cd = gammaln(d / 2.0) - 0.5 * np.log(np.pi) - gammaln((d - 1) / 2.0)
    return float(log_cd + (d - 3) / 2.0 * np.log(2.0) + np.log(2.0 / (d - 1)))


def uniform_cap_constant(d: int) -> float:
    """``K_d`` in ``P(1 - c < y) ~ K_d y^{(d-1)/2}`` (``y -> 0``) for uniform tokens on ``S^{d-1}``:
    ``K_d = C_d 2^{(d-3)/2} 2 / (d - 1)``, ``C_d = Gamma(d/2) / (sqrt(pi) Gamma((d-1)/2))``."""
    return float(np.exp(_log_cap_constant(d)))


def _log_poisson_g(a: float) -> tuple[np.ndarray, np.ndarray]:
    """``t = ln s`` grid and ``ln g_a(e^t)``, ``g_a(s) = int_0^inf (1 - e^{-s e^{-x}}) d(x^a)``.

    In ``x = e^u`` the measure is ``a e^{a u} du``; Gauss-Legendre panels of width 1/4 in ``u``
    from ``-30`` to ``ln(3 a + 100)`` (beyond, ``s e^{-x} < e^{-90}`` for every ``s`` used).
    Everything is kept in logs (``x^a`` overflows for ``a > ~100``).
    """
    edges = np.arange(-30.0, max(6.0, np.log(3.0 * a + 100.0)) + 0.25, 0.25)
    u, wu = (v.ravel() for v in gauss_legendre_panels(edges, 8))
    lw = np.log(wu) + np.log(a) + a * u
    t = np.arange(-40.0, 4.7, 0.2)
    with np.errstate(divide="ignore"):
        lh = np.log(-np.expm1(-np.exp(t[:, None] - np.exp(u)[None, :])))
    z = lh + lw
    m = z.max(axis=1, keepdims=True)
    return t, m[:, 0] + np.log(np.exp(z - m).sum(axis=1))


def _poisson_self_weight(log_lam: float, a: float) -> float:
    """``int_0^inf e^{-s} exp(-Lambda g_a(s)) ds`` (trapezoid in ``t = ln s``, step 0.2)."""
    t, lg = _log_poisson_g_cached(a)
    with np.errstate(over="ignore"):
        return float(0.2 * np.sum(np.exp(t - np.exp(t) - np.exp(log_lam + lg))))


@cache
def _log_poisson_g_cached(a: float):
    return _log_poisson_g(a)


@cache
def log_poisson_critical_intensity(d: int) -> float:
    """``ln Lambda*_d``: the Poisson-limit mean self-weight equals 1/2 at intensity ``Lambda*_d``.

    Near-neighbour limit (docs/finite-d.md#asymptotic-regimes): the points ``beta (1 - c_j)``
    form a Poisson process with mean measure ``Lambda x^{(d-1)/2}``.
    """
    a = (d - 1) / 2.0
    f = lambda ll: _poisson_self_weight(ll, a) - 0.5  # noqa: E731
    lo, hi = -50.0, 10.0
    while f(lo) < 0:
        lo *= 2.0
    return float(brentq(f, lo, hi, xtol=1e-12))


def poisson_critical_intensity(d: int) -> float:
    """``Lambda*_d`` (may underflow to 0 for large d; use :func:`log_poisson_critical_intensity`)."""
    return float(np.exp(log_poisson_critical_intensity(d)))


def power_law_beta(n, d: int) -> np.ndarray:
    """``rho = 0`` large-``n`` asymptote ``beta* ~ (K_d (n - 1) / Lambda*_d)^{2/(d-1)}``."""
    n = np.asarray(n, dtype=np.float64)
    log_k = _log_cap_constant(d)
    return np.exp((log_k + np.log(n - 1.0) - log_poisson_critical_intensity(d)) * 2.0 / (d - 1))
