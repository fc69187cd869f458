"""Closed forms and limit laws of Paper B on the sphere S^{d-1} (spec ``paper-b.md`` §2-§4).

Labels follow the spec: the local law, the three regimes, the Poisson and incomplete-gamma limits
and the heat-equation limit are the paper's [paper]; the explicit constants (``C(q)``, the
normaliser ``Z``), the simulation of the Poisson limit, the d = 3 closed form, the finite-beta
overlays and the quadrature of the ``n -> inf`` output at fixed beta are derivations [derived];
numerical knobs (truncation levels, quadrature orders) are this project's choices [choice].

Notation
--------
* ``T = 1 - <q, x>`` is the distance to the query (D2Q), ``F(t) = P(T <= t)``.
* ``alpha = 2 / (d - 1)`` and ``a = 1 / alpha = (d - 1) / 2``, so ``F(t) ~ C(q) t^a``.
* ``m_n = C(q) n beta^{-1/alpha}`` is the effective number of attended keys.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from .validation import check_int, check_real, check_vector

#: Poisson-limit simulation: points further than this above Y_(1) are replaced by their mean.
POISSON_Y_MAX = 40.0

#: Poisson-limit simulation: at most this many expected points are simulated per trial [choice].
POISSON_MAX_POINTS = 1024


# --------------------------------------------------------------------------- scales and constants
def _d(d, minimum: int = 2) -> int:
    return check_int("d", d, minimum=minimum)


def alpha_exponent(d: int) -> float:
    """Local-law exponent ``alpha = 2 / (d - 1)`` (paper-b.md §2) [paper].

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
    """Local-law constant ``C(q) = rho(q) (2 pi)^{(d-1)/2} / Gamma((d+1)/2)`` (paper-b.md §2) [derived].

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
    """``C_unif(d) = 2^{-a} / (a B(a, a))``, ``a = (d - 1)/2`` (paper-b.md §2) [derived].

    Values: d = 2: sqrt(2)/pi = 0.4502; d = 3: 1/2; d = 4: 0.6002; d = 5: 3/4.
    """
    a = (_d(d) - 1) / 2
    return float(2.0**-a / (a * special.beta(a, a)))


def m_eff(n: int, beta: float, c: float, d: int) -> float:
    """Effective number of attended keys ``m_n = C n beta^{-1/alpha}`` (paper-b.md §2) [paper].

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


def critical_beta(n: float, d: int, gamma: float = 1.0) -> float:
    """Critical scale ``beta = gamma n^alpha`` (paper-b.md §2) [paper]."""
    n = check_real("n", n, low=0.0, low_open=True)
    gamma = check_real("gamma", gamma, low=0.0, low_open=True)
    return float(gamma * n ** alpha_exponent(d))


def drift_transition_beta(n: float, d: int) -> float:
    """Internal output transition ``beta ~ n^{2/(d+1)}``: drift dominates below (paper-b.md §2, §4) [paper]."""
    n = check_real("n", n, low=0.0, low_open=True)
    return float(n ** (2.0 / (_d(d) + 1)))


# --------------------------------------------------------------------------- the exact D2Q law
def d2q_cdf_uniform(t, d: int) -> np.ndarray:
    """Exact ``F(t) = P(T <= t)`` for uniform keys: ``T/2 ~ Beta(a, a)`` (paper-b.md §2) [derived].

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
    (paper-b.md §2).
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
    q = _unit(q)
    return c_density(float(density_x1x2(q[None, :])[0]), q.size)


def score_x1x2(X) -> np.ndarray:
    """Riemannian score ``grad_S log rho(x) = (x2, x1, 0, ...) - 2 x1 x2 x`` (paper-b.md §2) [derived].

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


def _unit(q) -> np.ndarray:
    q = check_vector("q", q)
    nq = np.linalg.norm(q)
    if q.size < 2 or abs(nq - 1.0) > 1e-9:
        raise ValueError(
            f"q must be a unit vector of length >= 2, got norm {nq:g}, length {q.size}"
        )
    return q / nq


def tangent_frame(q) -> tuple[np.ndarray, np.ndarray]:
    """An orthonormal basis ``(e1, e2)`` of the tangent plane of S^2 at ``q`` (deterministic)."""
    q = _unit(q)
    if q.size != 3:
        raise ValueError(f"tangent_frame needs q on S^2 (length 3), got length {q.size}")
    ref = np.eye(3)[int(np.argmin(np.abs(q)))]
    e1 = ref - (ref @ q) * q
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(q, e1)


# --------------------------------------------------------------------------- quadrature on S^2
def _cap_nodes(q, beta: float, t_max: float, n_theta: int, n_phi: int):
    """Nodes and weights of ``int_{T <= t_max} f(x) e^{-beta T} dsigma`` on S^2 around ``q``.

    Polar angle ``theta`` around ``q`` (``T = 1 - cos theta``, ``dsigma = sin theta dtheta dphi``):
    Gauss-Legendre in ``theta`` on ``[0, theta_1]`` and ``[theta_1, theta_max]`` with
    ``1 - cos theta_1 = min(t_max, 60/beta)`` (the weight ``e^{-beta T}`` is below e^{-60} beyond),
    trapezoid (spectrally accurate for periodic integrands) in ``phi`` [choice].
    """
    q = _unit(q)
    e1, e2 = tangent_frame(q)
    th_max = float(np.arccos(1.0 - t_max))
    t1 = min(t_max, 60.0 / beta) if beta > 0 else t_max
    th1 = float(np.arccos(1.0 - t1))
    g, gw = np.polynomial.legendre.leggauss(n_theta)
    pieces = [(0.0, th1)] + ([(th1, th_max)] if th_max > th1 * (1 + 1e-12) else [])
    th, tw = [], []
    for lo, hi in pieces:
        th.append(lo + (hi - lo) * (g + 1) / 2)
        tw.append(gw * (hi - lo) / 2)
    th, tw = np.concatenate(th), np.concatenate(tw)
    phi = 2 * np.pi * np.arange(n_phi) / n_phi
    TH, PH = np.meshgrid(th, phi, indexing="ij")
    X = (
        np.cos(TH)[..., None] * q
        + (np.sin(TH) * np.cos(PH))[..., None] * e1
        + (np.sin(TH) * np.sin(PH))[..., None] * e2
    ).reshape(-1, 3)
    T = (1.0 - np.cos(TH)).reshape(-1)
    W = (np.sin(TH) * tw[:, None] * (2 * np.pi / n_phi)).reshape(-1) * np.exp(-beta * T)
    return X, W


def cap_probability_x1x2(q, t_c: float, n_theta: int = 96, n_phi: int = 96) -> float:
    """``P(T <= t_c)`` for one key from ``rho ∝ exp(x1 x2)`` on S^2 by quadrature [derived].

    Used by the cap sampler of :mod:`attnscale.keys` (the number of keys in the cap is
    ``Binomial(n, P)``). Relative accuracy ~1e-14 (checked against ``t_c = 2``, where P = 1).
    """
    t_c = check_real("t_c", t_c, low=0.0, high=2.0, low_open=True)
    X, W = _cap_nodes(q, 0.0, t_c, n_theta, n_phi)
    return float(np.sum(W * np.exp(X[:, 0] * X[:, 1])) / normaliser_x1x2(3))


def heat_drift_limit_x1x2(q, beta: float, n_theta: int = 96, n_phi: int = 96) -> dict:
    """The ``n -> inf`` output at fixed beta for ``rho ∝ exp(x1 x2)`` on S^2, by quadrature [derived].

    ``ATT_inf(q) = int x e^{beta <q,x>} rho dsigma / int e^{beta <q,x>} rho dsigma`` (the law of
    large numbers of ``ATT_n``), and its tangential part scaled by beta, to be compared with
    ``grad_S log rho(q)`` (paper-b.md §4, backward heat equation [paper]).

    Returns
    -------
    dict
        ``beta_tangential`` (``beta P_q ATT_inf``, length 3), ``score`` (``grad_S log rho(q)``),
        ``ratio`` (``<beta P_q ATT, score> / |score|^2``), ``perp`` (component orthogonal to the
        score within the tangent plane, over ``|score|``) and ``normal`` (``beta (<ATT, q> - 1)``,
        which tends to ``-1/alpha = -1`` for d = 3).
    """
    q = _unit(q)
    beta = check_real("beta", beta, low=0.0, low_open=True)
    X, W = _cap_nodes(q, beta, 2.0, n_theta, n_phi)
    W = W * np.exp(X[:, 0] * X[:, 1])
    att = (W[:, None] * X).sum(axis=0) / W.sum()
    tang = beta * (att - (att @ q) * q)
    g = score_x1x2(q)
    g2 = float(g @ g)
    ratio = float(tang @ g) / g2
    perp = float(np.linalg.norm(tang - ratio * g)) / np.sqrt(g2)
    return {
        "beta_tangential": tang,
        "score": g,
        "ratio": ratio,
        "perp": perp,
        "normal": float(beta * (att @ q - 1.0)),
    }


def mean_field_x1x2(Q, beta: float, n_theta: int = 32, n_phi: int = 48) -> np.ndarray:
    """``ATT_inf(q)`` (the ``n -> inf`` output at fixed beta, :func:`heat_drift_limit_x1x2`) for
    every row of ``Q`` on S^2, ``rho ∝ exp(x1 x2)``, by the same quadrature (vectorised) [derived].

    The default orders give ~1e-10 absolute accuracy of ``beta P_q ATT`` for
    ``1 <= beta <= 1e4`` (checked against :func:`heat_drift_limit_x1x2` at 96 x 96 nodes).

    Returns
    -------
    numpy.ndarray
        ``(m, 3)`` outputs; their tangential parts are the mean field of the vector-field panels.
    """
    Q = np.atleast_2d(np.asarray(Q, dtype=float))
    if Q.shape[1] != 3:
        raise ValueError(f"Q must have 3 columns (queries on S^2), got {Q.shape[1]}")
    beta = check_real("beta", beta, low=0.0, low_open=True)
    ref = np.eye(3)[np.argmin(np.abs(Q), axis=1)]
    E1 = ref - np.einsum("ij,ij->i", ref, Q)[:, None] * Q
    E1 /= np.linalg.norm(E1, axis=1, keepdims=True)
    E2 = np.cross(Q, E1)
    # nodes in the frame (q, e1, e2): local coordinates (cos th, sin th cos ph, sin th sin ph)
    Xl, W = _cap_nodes(np.array([1.0, 0.0, 0.0]), beta, 2.0, n_theta, n_phi)
    out = np.empty_like(Q)
    for s in range(0, Q.shape[0], 64):
        F = np.stack([Q[s : s + 64], E1[s : s + 64], E2[s : s + 64]], axis=1)  # (b, 3, 3)
        X = np.einsum("nk,bkj->bnj", Xl, F)
        w = W * np.exp(X[..., 0] * X[..., 1])
        out[s : s + 64] = np.einsum("bn,bnj->bj", w, X) / w.sum(axis=1)[:, None]
    return out


# --------------------------------------------------------------------------- ordered-weight limits
def poisson_limit_top_weight(
    gamma: float,
    c: float,
    d: int,
    trials: int,
    rng: np.random.Generator,
    *,
    y_max: float = POISSON_Y_MAX,
    max_points: int = POISSON_MAX_POINTS,
) -> np.ndarray:
    """Samples of the critical limit ``W_(1)`` of ``A_(1)`` at ``beta = gamma n^alpha`` (paper-b.md §3).

    The limit points ``Y_k`` form a Poisson process with ``Lambda([0, y]) = C (y / gamma)^{1/alpha}``
    [paper]; ``W_(1) = e^{-Y_(1)} / sum_k e^{-Y_k}`` [paper]. Simulation [derived]:
    ``Y_(1) = gamma (E / C)^alpha`` with ``E ~ Exp(1)``; given ``Y_(1)``, the other points on
    ``(Y_(1), y_c]`` are ``Poisson(Lambda(y_c) - Lambda(Y_(1)))`` many, placed by the inverse of
    ``Lambda``; beyond ``y_c`` their contribution ``sum e^{-(Y - Y_(1))}`` is replaced by its mean
    ``e^{Y_(1)} C gamma^{-1/alpha} Gamma(1 + 1/alpha) Q(1/alpha, y_c)``.
    ``y_c = min(Y_(1) + y_max, Lambda^{-1}(Lambda(Y_(1)) + max_points))`` [choice]: either the rest
    weighs less than ``e^{-y_max}`` each, or more than ``max_points`` points precede it and its
    relative fluctuation is below ~1e-3 (effect on the mean below ~1e-5).

    Parameters
    ----------
    gamma : float
        Critical constant, ``beta_n = gamma n^alpha`` (> 0).
    c : float
        Local-law constant ``C(q)`` (> 0), e.g. :func:`c_uniform`.
    d : int
        Ambient dimension (>= 2).
    trials : int
        Number of independent samples (>= 1).
    rng : numpy.random.Generator
        Source of randomness (see :mod:`attnscale.seeding`).
    y_max, max_points :
        Truncation levels (see above).

    Returns
    -------
    numpy.ndarray
        ``(trials,)`` samples of ``W_(1)`` in ``(0, 1]``.
    """
    gamma = check_real("gamma", gamma, low=0.0, low_open=True)
    c = check_real("c", c, low=0.0, low_open=True)
    alpha = alpha_exponent(d)
    a = 1.0 / alpha
    trials = check_int("trials", trials, minimum=1)
    y_max = check_real("y_max", y_max, low=0.0, low_open=True)
    max_points = check_int("max_points", max_points, minimum=1)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")

    def lam(y):
        return c * (y / gamma) ** a

    def lam_inv(v):
        return gamma * (v / c) ** alpha

    log_tail_const = np.log(c) - a * np.log(gamma) + special.gammaln(1.0 + a)
    out = np.empty(trials)
    chunk = max(1, min(trials, 4_000_000 // max_points))
    for s in range(0, trials, chunk):
        m = min(chunk, trials - s)
        v1 = rng.standard_exponential(m)
        y1 = lam_inv(v1)
        yc = np.minimum(y1 + y_max, lam_inv(v1 + max_points))
        dlam = lam(yc) - v1
        counts = rng.poisson(dlam)
        owner = np.repeat(np.arange(m), counts)
        u = rng.random(counts.sum())
        y = lam_inv(v1[owner] + u * dlam[owner])
        s_pts = np.bincount(owner, weights=np.exp(-(y - y1[owner])), minlength=m)
        with np.errstate(divide="ignore"):
            log_q = np.log(special.gammaincc(a, yc))
        tail = np.exp(y1 + log_q + log_tail_const)
        out[s : s + m] = 1.0 / (1.0 + s_pts + tail)
    return out


def inv_top_weight_limit_d3(gamma: float, c: float) -> float:
    """d = 3 critical closed form ``E[1 / W_(1)] = 1 + C / gamma`` (paper-b.md §3) [derived].

    For d = 3 the limit process is homogeneous with rate ``C / gamma``; ``1/W_(1) = 1 + S`` with
    ``S = sum_{k>=2} e^{-(Y_k - Y_(1))}`` a generalised Dickman variable of mean ``C / gamma``.
    """
    gamma = check_real("gamma", gamma, low=0.0, low_open=True)
    c = check_real("c", c, low=0.0, low_open=True)
    return 1.0 + c / gamma


def subcritical_top_weight_limit(d: int) -> float:
    """Limit of ``m_n A_(1)`` in the subcritical regime: ``1 / Gamma(1 + 1/alpha)`` (paper-b.md §3) [derived]."""
    return float(1.0 / special.gamma(1.0 + 1.0 / alpha_exponent(d)))


def profile_limit(x, d: int) -> np.ndarray:
    """Subcritical weight profile ``A_(k)/A_(1) -> exp(-x^alpha)``, ``x = k / m_n`` (paper-b.md §3) [paper]."""
    x = np.asarray(x, dtype=float)
    return np.exp(-(x ** alpha_exponent(d)))


def cumulative_mass_limit(x, d: int) -> np.ndarray:
    """Mass of the top ``x m_n`` weights: ``P(1/alpha, x^alpha)`` (regularised lower incomplete gamma) (paper-b.md §3) [derived]."""
    alpha = alpha_exponent(d)
    x = np.asarray(x, dtype=float)
    return special.gammainc(1.0 / alpha, x**alpha)


def profile_finite_beta(k, n: int, beta: float, d: int, shifted: bool = False) -> np.ndarray:
    """Finite-beta overlay ``A_(k)/A_(1) ≈ exp(-beta F^{-1}(k/n))`` with the exact uniform ``F`` (paper-b.md §3) [derived].

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
    """Weibull limit ``P(n^alpha T_(1) > s) -> exp(-C s^{1/alpha})`` (paper-b.md §4) [paper]."""
    c = check_real("c", c, low=0.0, low_open=True)
    s = np.clip(np.asarray(s, dtype=float), 0.0, None)
    return np.exp(-c * s ** (1.0 / alpha_exponent(d)))


def nearest_key_sf_exact_uniform(s, n: int, d: int) -> np.ndarray:
    """Exact ``P(n^alpha T_(1) > s) = (1 - F(s / n^alpha))^n`` for uniform keys [derived]."""
    n = check_int("n", n, minimum=1)
    t = np.asarray(s, dtype=float) / n ** alpha_exponent(d)
    return np.exp(n * np.log1p(-np.minimum(d2q_cdf_uniform(t, d), 1.0 - 1e-300)))


def drift(q, score, d: int, beta: float) -> np.ndarray:
    """Subcritical drift of ``sum_i A_i x_i - q``: ``(grad_S log rho(q) - q / alpha) / beta`` (paper-b.md §4) [paper].

    The tangential part is ``score / beta``; the normal part ``-q / (alpha beta)`` keeps the
    output inside the ball.
    """
    beta = check_real("beta", beta, low=0.0, low_open=True)
    q = np.asarray(q, dtype=float)
    return (np.asarray(score, dtype=float) - q / alpha_exponent(d)) / beta


def noise_trace_d3(n: int, rho_q) -> np.ndarray:
    """d = 3 subcritical noise ``E |P_q noise|^2 = tr(P_q) / (8 pi n rho(q)) = 1 / (4 pi n rho(q))`` (paper-b.md §4) [derived]."""
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
