"""The critical inverse temperature ``beta*(n)`` at a fixed level of ``E A_(1)`` and the fit of its
exponent in ``n`` (docs/paper-b-beyond.md#critical-exponent-across-dimensions).

``beta*(n)`` solves ``E A_(1)(beta, n) = level`` [choice: level 1/2]. It is estimated with common
random numbers: one set of ``size`` contexts per ``n``, the sample mean ``m(beta)`` of ``A_(1)``
over these contexts (increasing in beta for every context) and Brent's method on
``m(beta) = level``. Its standard error is the delta-method value
``SE(m(beta*)) / m'(beta*)`` with the analytic slope ``dA_(1)/dbeta = A_(1) sum_j A_j D_j``.

Contexts are ragged: a flat array of D2Q values ``T`` and the context index ``owner`` of each
value (non-decreasing). Keys far from the query are dropped when their total weight is provably
below ``eps`` relative to the top key (:func:`cap_radius`, :func:`prune_flat`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import optimize, special

from attnscale.core.roots import LEVEL
from attnscale.core.stats import mean_se
from attnscale.core.validation import check_int, check_real, check_vector
from attnscale.sphere.structured_keys import sample_d2q_cap

__all__ = [
    "TAIL_EPS",
    "dense_to_flat",
    "top_weight",
    "prune_flat",
    "cap_radius",
    "tail_bound",
    "solve_critical_beta",
    "bracket_dense",
    "critical_beta_cap",
    "fit_exponent",
]

#: The default level of E A_(1) that defines beta*(n) is the target level
#: :data:`attnscale.core.roots.LEVEL` (docs/glossary.md).

#: [choice] bound on the total relative weight of dropped keys (bias of A_(1) below this).
TAIL_EPS = 1e-6

#: [choice] probability that a context's nearest key falls outside the sampled cap.
MISS_PROB = 1e-12


# --------------------------------------------------------------------------- ragged contexts
def dense_to_flat(T) -> tuple[np.ndarray, np.ndarray, int]:
    """A ``(size, n)`` D2Q matrix as ``(T_flat, owner, size)``."""
    T = np.atleast_2d(np.asarray(T, dtype=float))
    size, n = T.shape
    return T.ravel(), np.repeat(np.arange(size), n), size


def context_min(T, owner, size: int) -> np.ndarray:
    """Smallest D2Q of each context (``inf`` for an empty context)."""
    out = np.full(size, np.inf)
    counts = np.bincount(owner, minlength=size)
    nz = counts > 0
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[nz]
    if starts.size:
        out[nz] = np.minimum.reduceat(T, starts)
    return out


def top_weight(D, owner, size: int, beta: float, slope: bool = True):
    """``A_(1)`` and ``dA_(1)/dbeta`` of every context from gaps ``D = T - min T`` (>= 0).

    ``A_(1) = 1 / sum_j e^{-beta D_j}`` (the nearest key has ``D = 0``) and
    ``dA_(1)/dbeta = A_(1)^2 sum_j D_j e^{-beta D_j}`` (``None`` unless ``slope``)
    (docs/paper-b-beyond.md#critical-exponent-across-dimensions).
    """
    E = np.exp(-beta * D)
    A = 1.0 / np.bincount(owner, weights=E, minlength=size)
    if not slope:
        return A, None
    return A, A * A * np.bincount(owner, weights=D * E, minlength=size)


def prune_flat(T, owner, size: int, beta_lo: float, n: int, eps: float = TAIL_EPS):
    """Drop keys with ``beta_lo D > log(n / eps)``: together they weigh less than ``eps`` times the
    top key for every ``beta >= beta_lo`` (at most ``n`` keys, each below ``eps / n``)."""
    tmin = context_min(T, owner, size)
    keep = (T - tmin[owner]) * beta_lo <= np.log(n / eps)
    return T[keep], owner[keep]


def cap_radius(n: int, k: int, beta_lo: float, eps: float = TAIL_EPS, miss: float = MISS_PROB):
    """D2Q radius of the cap to sample for ``n`` keys uniform on ``S^{k-1}`` (ours).

    ``t_c = t_q + log(n / eps) / beta_lo`` where ``P(min T > t_q) = (1 - F_k(t_q))^n <= miss``
    (``F_k(t_q) = -log(miss) / n``). Unless the nearest key misses ``[0, t_q]`` (probability at
    most ``miss``, detected and reported by :func:`tail_bound`), each key outside the cap weighs
    at most ``e^{-beta_lo (t_c - t_q)} = eps / n`` relative to the top key for every
    ``beta >= beta_lo`` (docs/paper-b-beyond.md#critical-exponent-across-dimensions).
    """
    n = check_int("n", n, minimum=1)
    k = check_int("k", k, minimum=2)
    beta_lo = check_real("beta_lo", beta_lo, low=0.0, low_open=True)
    a = (k - 1) / 2
    u = min(1.0, -np.log(miss) / n)
    t_q = 2.0 * float(special.betaincinv(a, a, u))
    return float(min(2.0, t_q + np.log(n / eps) / beta_lo))


def tail_bound(T, owner, size: int, n: int, t_c: float, beta: float) -> np.ndarray:
    """Upper bound on the weight of the keys outside the cap relative to the top key, per context:
    ``(n - count) e^{-beta (t_c - min T)}`` (0 if the cap is the whole sphere; ``inf`` if empty)."""
    counts = np.bincount(owner, minlength=size)
    if t_c >= 2.0:
        return np.where(counts > 0, 0.0, np.inf)
    tmin = context_min(T, owner, size)
    with np.errstate(over="ignore", invalid="ignore"):
        b = (n - counts) * np.exp(-beta * (t_c - tmin))
    return np.where(counts > 0, b, np.inf)


# --------------------------------------------------------------------------- root finding
def solve_critical_beta(
    T, owner, size: int, beta_lo: float, beta_hi: float, level: float = LEVEL
) -> dict:
    """``beta*`` with ``mean_contexts A_(1)(beta*) = level`` by Brent's method on ``[beta_lo, beta_hi]``.

    Common random numbers: the same contexts at every beta, so the sample mean is increasing in
    beta and the root is unique. Returns ``status`` ``"ok"``, ``"low"`` (the mean already exceeds
    the level at ``beta_lo``: lower the bracket) or ``"high"`` (below the level at ``beta_hi``),
    and, when ``"ok"``, ``beta_star``, its delta-method standard error
    ``se = (sd(A_(1)) / sqrt(size)) / mean(dA_(1)/dbeta)``, the mean and sd of ``A_(1)`` and the
    slope at the root (docs/paper-b-beyond.md#critical-exponent-across-dimensions).
    """
    size = check_int("size", size, minimum=2)
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    beta_lo = check_real("beta_lo", beta_lo, low=0.0, low_open=True)
    beta_hi = check_real("beta_hi", beta_hi, low=beta_lo, low_open=True)
    T = np.asarray(T, dtype=float)
    tmin = context_min(T, owner, size)
    if not np.all(np.isfinite(tmin)):
        raise ValueError("every context needs at least one key (an empty cap was sampled)")
    D = T - tmin[owner]

    def g(b):
        return top_weight(D, owner, size, b, slope=False)[0].mean() - level

    g_lo, g_hi = g(beta_lo), g(beta_hi)
    if g_lo > 0:
        return {"status": "low", "g_lo": g_lo, "g_hi": g_hi}
    if g_hi < 0:
        return {"status": "high", "g_lo": g_lo, "g_hi": g_hi}
    root = optimize.brentq(g, beta_lo, beta_hi, xtol=1e-12 * beta_hi, rtol=1e-12)
    A, dA = top_weight(D, owner, size, root)
    mean_a1, se_a1 = mean_se(A)  # over the size contexts
    sd = float(A.std(ddof=1))
    slope = float(dA.mean())
    return {
        "status": "ok",
        "beta_star": float(root),
        "se": se_a1 / slope,
        "mean_a1": float(mean_a1),
        "sd_a1": sd,
        "slope": slope,
    }


def bracket_dense(T, owner, size: int, guess: float, level: float = LEVEL, factor: float = 2.0):
    """A bracket ``[lo, hi]`` (``hi = factor lo``) of ``beta*`` for contexts holding all their keys:
    start at ``guess`` and step by ``factor`` until the mean of ``A_(1)`` crosses ``level``."""
    guess = check_real("guess", guess, low=0.0, low_open=True)
    T = np.asarray(T, dtype=float)
    D = T - context_min(T, owner, size)[owner]

    def m(b):
        return top_weight(D, owner, size, b, slope=False)[0].mean()

    lo = guess
    if m(lo) > level:
        while m(lo) > level:
            lo /= factor
            if lo < 1e-12:
                raise ValueError("no bracket: E A_(1) exceeds the level at beta -> 0")
        return lo, lo * factor
    hi = lo
    while m(hi) < level:
        hi *= factor
        if hi > 1e15:
            raise ValueError("no bracket: E A_(1) stays below the level up to beta = 1e15")
    return hi / factor, hi


def critical_beta_cap(
    n: int,
    k: int,
    size: int,
    guess: float,
    rng_for_attempt: Callable[[int], np.random.Generator],
    *,
    level: float = LEVEL,
    factor: float = 1.5,
    eps: float = TAIL_EPS,
    max_attempts: int = 8,
) -> dict:
    """``beta*(n)`` for ``n`` keys uniform on ``S^{k-1}`` from exact cap samples (ours).

    Attempt ``j`` draws ``size`` contexts from ``rng_for_attempt(j)`` in the cap of
    :func:`cap_radius` for ``beta_lo = guess / factor`` and solves on
    ``[guess / factor, guess factor]``; if the root lies outside, the guess moves by
    ``factor^2`` and a fresh attempt is drawn. Reports the attempt used, the mean number of keys
    per context in the cap and the largest :func:`tail_bound` at ``beta_lo``
    (docs/paper-b-beyond.md#critical-exponent-across-dimensions).
    """
    n = check_int("n", n, minimum=1)
    guess = check_real("guess", guess, low=0.0, low_open=True)
    factor = check_real("factor", factor, low=1.0, low_open=True)
    for attempt in range(max_attempts):
        lo, hi = guess / factor, guess * factor
        t_c = cap_radius(n, k, lo, eps)
        T, owner, counts = sample_d2q_cap(size, n, k, t_c, rng_for_attempt(attempt))
        bound = tail_bound(T, owner, size, n, t_c, lo)
        if np.any(~np.isfinite(bound)):
            guess /= factor  # an empty cap (probability <= MISS_PROB): widen and redraw
            continue
        res = solve_critical_beta(T, owner, size, lo, hi, level)
        if res["status"] == "ok":
            return {
                **res,
                "attempt": attempt,
                "t_cap": t_c,
                "keys_in_cap": float(counts.mean()),
                "tail_bound": float(bound.max()),
            }
        guess = guess / factor**2 if res["status"] == "low" else guess * factor**2
    raise RuntimeError(f"no bracket of beta* found in {max_attempts} attempts (n={n}, k={k})")


# --------------------------------------------------------------------------- exponent fit
def fit_exponent(n, beta_star, se, *, correction: bool = True, n_min: float | None = None) -> dict:
    """Weighted least squares of ``log beta*`` on ``log n`` (docs/paper-b-beyond.md#critical-exponent-across-dimensions).

    Model ``log beta*_i = A + alpha log n_i [+ B / beta*_i] + e_i`` with
    ``sd(e_i) = se_i / beta*_i`` (delta method) and independent points (independent contexts per
    ``n``). The optional ``B / beta*`` term is the leading finite-n correction [derived]: with
    ``F(t) = C t^a (1 + b t + O(t^2))`` the rescaled process ``beta T`` has intensity
    ``C n beta^{-a} y^a (1 + b y / beta + ..)``, so the level condition reads
    ``a log beta* = log(C n / kappa) + O(1 / beta*)``. ``n_min`` keeps only ``n >= n_min``.

    Returns
    -------
    dict
        ``alpha``, ``se_alpha`` (from the weights), ``se_alpha_scaled`` (times
        ``max(1, sqrt(chi2 / dof))``, [choice] used for the acceptance), ``intercept``, ``b``
        (``nan`` without correction), ``chi2``, ``dof``, ``points``.
    """
    n = check_vector("n", n, low=0.0, low_open=True)
    b = check_vector("beta_star", beta_star, low=0.0, low_open=True)
    s = check_vector("se", se, low=0.0, low_open=True)
    if not (n.size == b.size == s.size):
        raise ValueError("n, beta_star and se must have the same length")
    keep = n >= (n_min if n_min is not None else 0.0)
    n, b, s = n[keep], b[keep], s[keep]
    cols = [np.ones_like(n), np.log(n)] + ([1.0 / b] if correction else [])
    X = np.column_stack(cols)
    p = X.shape[1]
    if n.size < p + 1 or n.size < 3:
        raise ValueError(f"need at least {max(3, p + 1)} points for this fit, got {n.size}")
    w = b / s  # 1 / sd(log beta*)
    coef, *_ = np.linalg.lstsq(X * w[:, None], np.log(b) * w, rcond=None)
    cov = np.linalg.inv((X * w[:, None] ** 2).T @ X)
    r = (np.log(b) - X @ coef) * w
    chi2 = float(r @ r)
    dof = n.size - p
    se_a = float(np.sqrt(cov[1, 1]))
    return {
        "alpha": float(coef[1]),
        "se_alpha": se_a,
        "se_alpha_scaled": se_a * max(1.0, np.sqrt(chi2 / dof)),
        "intercept": float(coef[0]),
        "b": float(coef[2]) if correction else float("nan"),
        "chi2": chi2,
        "dof": int(dof),
        "points": int(n.size),
    }
