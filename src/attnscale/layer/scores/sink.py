"""An attention sink in Paper A's layer (issue 10, item 4).

Theory: ``docs/realistic-attention.md#attention-sink``.

Token 0 (position 1) is the sink; tokens ``1 .. m`` are the ordinary tokens (``n = m + 1`` in
all, ``beta = gamma ln n``). The sink's direction ``y_s`` has cosine ``c_s`` with the ordinary
tokens, its key is scaled by ``kappa`` (scores ``beta kappa <y_i, y_s>``; ``kappa = 1`` is Paper
A's ``K = I``), its value is ``y_s``. Under pre-LN the raw norm of the sink token enters only
through its own residual, never the ordinary tokens' outputs.
"""

from __future__ import annotations

import numpy as np

from attnscale.core.validation import check_int, check_matrix, check_real
from attnscale.layer.dense.attention import normalise

__all__ = [
    "max_sink_cosine",
    "add_sink",
    "sink_keys",
    "simplex_sink_weights",
    "simplex_sink_map",
    "simplex_sink_critical_beta",
    "simplex_with_sink_tokens",
]


def _c_s(c_s):
    return check_real("c_s", c_s, low=-1.0, high=1.0)


def _kappa(kappa):
    return check_real("kappa", kappa, low=0.0)


def max_sink_cosine(m: int, rho: float) -> float:
    """Largest ``|c_s|`` a unit vector can have as *common* cosine with ``m`` unit vectors of
    pairwise cosine ``rho``: ``sqrt(rho + (1 - rho) / m)`` (the norm of their mean; the Gram
    matrix of the ``m + 1`` vectors is positive semi-definite exactly up to it).
    ``docs/realistic-attention.md#attention-sink``."""
    m = check_int("m", m, minimum=1)
    rho = check_real("rho", rho, low=0.0, high=1.0, high_open=True)
    return float(np.sqrt(rho + (1.0 - rho) / m))


def add_sink(X, c_s: float, rng: np.random.Generator, *, norm: float | None = None) -> np.ndarray:
    """Prepend a sink token with mean cosine exactly ``c_s`` to the rows of ``X``.

    ``y_s = (c_s / ||ybar||) u + sqrt(1 - c_s^2 / ||ybar||^2) v`` with ``ybar`` the mean of the
    normalised rows, ``u = ybar / ||ybar||`` and ``v`` a uniformly random unit vector orthogonal
    to ``u``: then ``mean_i <y_s, y_i> = <y_s, ybar> = c_s``. The per-token cosines scatter
    around ``c_s`` as the ordinary tokens' own cosines do. ``|c_s| <= ||ybar||`` is required (no
    unit vector has a larger mean cosine); for near-simplex tokens ``||ybar|| ~ sqrt(rho)``.

    Parameters
    ----------
    X : array_like, shape (m, d)
        Ordinary tokens, ``d >= 2``.
    c_s : float
        Mean cosine of the sink with the ordinary tokens, ``|c_s| <= min(1, ||ybar||)``.
    rng : numpy.random.Generator
        Draws ``v``.
    norm : float, optional
        ``||x_s||`` (default: the root mean square norm of ``X``'s rows) [choice].

    Returns
    -------
    numpy.ndarray
        ``(m + 1, d)``: the sink in row 0, then ``X``.
    """
    c_s = _c_s(c_s)
    X = check_matrix("X", X, min_rows=2, min_cols=2)
    Y, r = normalise(X)
    ybar = Y.mean(axis=0)
    nb = float(np.linalg.norm(ybar))
    if abs(c_s) > nb:
        raise ValueError(
            f"c_s must lie in [-{nb:.4f}, {nb:.4f}] for these tokens (the norm of their mean "
            f"direction), got {c_s:g}"
        )
    if norm is None:
        norm = float(np.sqrt(np.mean(r**2)))
    norm = check_real("norm", norm, low=0.0, low_open=True)
    u = ybar / nb
    v = rng.standard_normal(X.shape[1])
    v -= (v @ u) * u
    v /= np.linalg.norm(v)
    a = c_s / nb
    ys = a * u + np.sqrt(max(0.0, 1.0 - a * a)) * v
    return np.vstack([norm * ys[None, :], X])


def sink_keys(Y, kappa: float) -> np.ndarray:
    """Key rows for a sink in row 0: ``Y`` with row 0 multiplied by ``kappa``."""
    kappa = _kappa(kappa)
    K = np.array(Y, dtype=np.float64, copy=True)
    K[0] *= kappa
    return K


def simplex_sink_weights(n: int, rho: float, c_s: float, beta: float, kappa: float = 1.0):
    """Exact weights of an ordinary row for simplex tokens with a sink
    (``docs/realistic-attention.md#attention-sink``).

    ``m = n - 1`` ordinary tokens with pairwise cosine ``rho``, the sink at cosine ``c_s``
    with key factor ``kappa``. With ``t = e^{beta (rho - 1)}`` and
    ``t_s = e^{beta (kappa c_s - 1)}``: ``A_ii = 1 / (1 + (m - 1) t + t_s)``, ``A_ij = t A_ii``,
    ``A_is = t_s A_ii``.

    Returns
    -------
    (float, float, float)
        ``(A_ii, A_ij, A_is)``.
    """
    n = check_int("n", n, minimum=3)
    rho = check_real("rho", rho, low=-1.0, high=1.0)
    c_s = _c_s(c_s)
    beta = check_real("beta", beta, low=0.0)
    kappa = _kappa(kappa)
    m = n - 1
    # divide through by the largest of the three exponentials: finite for any beta
    lead = max(0.0, rho - 1.0, kappa * c_s - 1.0)
    e0 = np.exp(-beta * lead)
    t = np.exp(beta * (rho - 1.0 - lead))
    ts = np.exp(beta * (kappa * c_s - 1.0 - lead))
    z = e0 + (m - 1) * t + ts
    return float(e0 / z), float(t / z), float(ts / z)


def simplex_sink_map(
    n: int,
    rho: float,
    c_s: float,
    beta: float,
    alpha: float = 0.0,
    q: float = 1.0,
    kappa: float = 1.0,
):
    """Exact finite-n map of an ordinary pair for simplex tokens with a sink
    (``docs/realistic-attention.md#attention-sink``).

    With ``(a, b, c) = (A_ii, A_ij, A_is)`` of :func:`simplex_sink_weights`, ``e = a - b +
    alpha sqrt q``, ``s1 = 1 + (m-1) rho``, ``s2 = m + m (m-1) rho``:
    ``x_i' = e y_i + b sum_k y_k + c y_s`` and

    ``||x_i'||^2 = e^2 + 2 e b s1 + b^2 s2 + 2 c c_s (e + b m) + c^2``,
    ``<x_i', x_j'> = ||x_i'||^2 - e^2 (1 - rho)``.

    Returns
    -------
    (float, float, float)
        ``(<y_i', y_j'>, ||x_i'||^2, lambda)`` with ``lambda = e^2 / ||x_i'||^2`` the ratio
        ``(1 - <y_i', y_j'>) / (1 - rho)``.
    """
    alpha = check_real("alpha", alpha, low=0.0)
    q = check_real("q", q, low=0.0, low_open=True)
    a, b, c = simplex_sink_weights(n, rho, c_s, beta, kappa)
    m = n - 1
    e = a - b + alpha * np.sqrt(q)
    s1 = 1.0 + (m - 1) * rho
    s2 = m + m * (m - 1) * rho
    norm2 = e * e + 2.0 * e * b * s1 + b * b * s2 + 2.0 * c * c_s * (e + b * m) + c * c
    lam = e * e / norm2
    return float(1.0 - lam * (1.0 - rho)), float(norm2), float(lam)


def simplex_sink_critical_beta(
    n: int, rho: float, c_s: float, kappa: float = 1.0, sd_cross: float = 0.0
) -> float:
    """``beta`` at which ``A_ii = 1/2`` for simplex tokens with a sink: the first root of
    ``(m - 1) e^{beta (rho - 1) + beta^2 sd^2 / 2} + e^{beta (kappa c_s - 1)} = 1``
    (``docs/realistic-attention.md#attention-sink``).

    ``sd_cross = 0`` (default) is the exact simplex; ``sd_cross > 0`` adds the annealed
    correction for cross-scores that scatter with that standard deviation (as
    :func:`attnscale.layer.scores.learned.gamma_c_fluct`). For ``kappa c_s >= 1`` the sink term alone
    is ``>= 1`` and there is no critical point (``inf``: the self-weight never reaches 1/2);
    ``inf`` also when the left side never drops below 1.
    """
    from scipy.optimize import brentq

    n = check_int("n", n, minimum=3)
    rho = check_real("rho", rho, low=-1.0, high=1.0, high_open=True)
    c_s = _c_s(c_s)
    kappa = _kappa(kappa)
    sd = check_real("sd_cross", sd_cross, low=0.0)
    if kappa * c_s >= 1.0:
        return float("inf")
    m = n - 1

    def f(lb):  # in log beta, for a well-scaled bracket
        b = np.exp(lb)
        with np.errstate(over="ignore"):
            return (
                (m - 1) * np.exp(b * (rho - 1.0) + 0.5 * b * b * sd * sd)
                + np.exp(b * (kappa * c_s - 1.0))
                - 1.0
            )

    # f(0) = m > 0. A log grid of beta finds the first sign change (f is a sum of
    # exponentials in beta: convex, so at most two roots; the first is the critical point).
    lbs = np.linspace(np.log(1e-6), np.log(1e5), 4000)
    below = np.flatnonzero(f(lbs) <= 0.0)
    if below.size == 0:
        return float("inf")
    j = int(below[0])
    if j == 0:
        return float(np.exp(lbs[0]))
    return float(np.exp(brentq(f, lbs[j - 1], lbs[j], xtol=1e-14, rtol=1e-15)))


def simplex_with_sink_tokens(m: int, rho: float, c_s: float) -> np.ndarray:
    """Exact tokens (dimension ``m + 1``): a sink in row 0 with cosine ``c_s`` to each of ``m``
    unit rows of pairwise cosine ``rho``; Cholesky factor of the Gram matrix. Needs
    ``|c_s| <= max_sink_cosine(m, rho)`` (strictly, for a non-singular Gram matrix)."""
    m = check_int("m", m, minimum=2)
    rho = check_real("rho", rho, low=0.0, high=1.0, low_open=True, high_open=True)
    c_s = _c_s(c_s)
    lim = max_sink_cosine(m, rho)
    if abs(c_s) >= lim:
        raise ValueError(f"c_s must satisfy |c_s| < {lim:.6f} for m = {m}, rho = {rho}")
    G = (1.0 - rho) * np.eye(m + 1) + rho * np.ones((m + 1, m + 1))
    G[0, :] = c_s
    G[:, 0] = c_s
    G[0, 0] = 1.0
    return np.linalg.cholesky(G)
