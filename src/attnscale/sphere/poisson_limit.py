"""The critical Poisson limit of the ordered weights (docs/paper-b.md).

At ``beta = gamma n^alpha`` the points ``{beta T_i}`` converge to a Poisson process on
``[0, inf)`` with ``Lambda([0, y]) = C (y / gamma)^{1/alpha}`` [paper] and the weights to
``W_k = e^{-Y_k} / sum_j e^{-Y_j}`` [paper]. This module simulates the top weight of that limit
and holds its d = 3 closed form [derived].
"""

from __future__ import annotations

import numpy as np
from scipy import special

from attnscale.core.validation import check_int, check_real, check_rng
from attnscale.sphere.theory import alpha_exponent

__all__ = [
    "POISSON_Y_MAX",
    "POISSON_MAX_POINTS",
    "poisson_limit_top_weight",
    "inv_top_weight_limit_d3",
]

#: Poisson-limit simulation: points further than this above Y_(1) are replaced by their mean.
POISSON_Y_MAX = 40.0

#: Poisson-limit simulation: at most this many expected points are simulated per trial [choice].
POISSON_MAX_POINTS = 1024


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
    """Samples of the critical limit ``W_(1)`` of ``A_(1)`` at ``beta = gamma n^alpha`` (docs/paper-b.md).

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
        Source of randomness (see :mod:`attnscale.core.seeding`).
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
    check_rng(rng)

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
    """d = 3 critical closed form ``E[1 / W_(1)] = 1 + C / gamma`` (docs/paper-b.md) [derived].

    For d = 3 the limit process is homogeneous with rate ``C / gamma``; ``1/W_(1) = 1 + S`` with
    ``S = sum_{k>=2} e^{-(Y_k - Y_(1))}`` a generalised Dickman variable of mean ``C / gamma``.
    """
    gamma = check_real("gamma", gamma, low=0.0, low_open=True)
    c = check_real("c", c, low=0.0, low_open=True)
    return 1.0 + c / gamma
