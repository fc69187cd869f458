"""The critical output law of Paper B: a weighted average over a Poisson cloud in the tangent space
(docs/paper-b-beyond.md#critical-output-law).

At ``beta = gamma n^alpha`` (``alpha = 2/(d-1)``) the scaled displacement
``L_n = n^{1/(d-1)} P_q(ATT_n(q) - q)`` converges in law to

    ``L = sum_i W_i z_i``,  ``W_i = exp(-gamma |z_i|^2 / 2) / sum_j exp(-gamma |z_j|^2 / 2)``,

with ``{z_i}`` a Poisson process of intensity ``rho(q)`` on ``R^{d-1}`` [paper]. Writing
``Y_i = gamma |z_i|^2 / 2`` gives the Poisson process of ``beta T_i`` of the ordered-weight limit
(:mod:`attnscale.sphere.poisson_limit`, ``Lambda([0, y]) = C (y/gamma)^{1/alpha}``) and independent
directions ``z_i / |z_i|`` uniform on ``S^{d-2}`` [derived]. This module samples ``L`` (the
limit) and ``L_n`` (finite ``n``, uniform keys, exact order statistics of the nearest keys), and
computes moments of the limit by the Mecke (Palm) formula with one Laplace functional [derived].
"""

from __future__ import annotations

import numpy as np
from scipy import special

from attnscale.core.validation import check_int, check_real, check_rng
from attnscale.sphere.poisson_limit import POISSON_MAX_POINTS, POISSON_Y_MAX
from attnscale.sphere.theory import alpha_exponent, c_uniform, d2q_cdf_uniform, d2q_ppf_uniform

__all__ = [
    "tangent_intensity",
    "limit_cloud",
    "critical_output_limit",
    "critical_output_finite_n",
    "palm_weight_moment",
    "critical_output_second_moment",
]

#: Samplers work in blocks of samples holding about this many cloud points: arrays of ~8 MB at
#: d = 5, which the allocator reuses instead of page-faulting fresh ones (2^21 points per block
#: cost 7.8 s of system time in the default output-law job, 2^18 cost 2.1 s).
POINTS_PER_BLOCK = 2**18


def _check_common(gamma, d, trials, rng, y_max, max_points):
    gamma = check_real("gamma", gamma, low=0.0, low_open=True)
    d = check_int("d", d, minimum=3)
    trials = check_int("trials", trials, minimum=1)
    y_max = check_real("y_max", y_max, low=0.0, low_open=True)
    max_points = check_int("max_points", max_points, minimum=1)
    check_rng(rng)
    return gamma, d, trials, y_max, max_points


def tangent_intensity(c: float, d: int) -> float:
    """Intensity ``rho(q) = C Gamma((d+1)/2) / (2 pi)^{(d-1)/2}`` of the tangent cloud [derived]
    (docs/paper-b-beyond.md#tangent-cloud-and-the-ordered-weight-limit).

    The inverse of :func:`attnscale.sphere.theory.c_density`: the number of cloud points with
    ``gamma |z|^2 / 2 <= y`` is ``rho |B_{d-1}| (2 y / gamma)^{(d-1)/2} = C (y / gamma)^{(d-1)/2}``.
    Uniform keys: ``1 / |S^{d-1}|``.
    """
    c = check_real("c", c, low=0.0, low_open=True)
    d = check_int("d", d, minimum=2)
    return float(c * special.gamma((d + 1) / 2) / (2 * np.pi) ** ((d - 1) / 2))


def _directions(m: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``(m, k)`` i.i.d. uniform unit vectors of ``R^k`` (normalised Gaussians)."""
    Z = rng.standard_normal((m, k))
    r = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    while np.any(r == 0.0):  # probability 0; kept for exactness
        bad = r == 0.0
        Z[bad] = rng.standard_normal((int(bad.sum()), k))
        r = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    return Z / r[:, None]


def d2q_ppf_fast(u, d: int) -> np.ndarray:
    """``F^{-1}(u)`` of the D2Q of uniform keys, closed form for d = 3 and 5 [derived]
    (docs/paper-b-beyond.md#samplers).

    d = 3: ``F(t) = t/2``. d = 5: ``s = t/2`` solves ``3 s^2 - 2 s^3 = u``; the trigonometric
    root of this cubic in ``[0, 1]`` is ``s = 2 sin(theta/2) sin(2 pi/3 - theta/2)`` with
    ``theta = (2/3) arcsin(sqrt u)`` (written without cancellation, so small ``u`` keep their
    relative precision). Other d: :func:`attnscale.sphere.theory.d2q_ppf_uniform` (betaincinv,
    ~0.7 us per value, 20x slower).
    """
    u = np.asarray(u, dtype=float)
    if d == 3:
        return 2.0 * u
    if d == 5:
        half = np.arcsin(np.sqrt(u)) / 3.0
        return 4.0 * np.sin(half) * np.sin(2.0 * np.pi / 3.0 - half)
    return d2q_ppf_uniform(u, d)


def _weighted_average(m, k, z1, owner, w, z, tail) -> np.ndarray:
    """``(z1 + sum_owner w z) / (1 + sum_owner w + tail)`` per sample (weights relative to the top)."""
    num = z1.copy()
    for j in range(k):
        num[:, j] += np.bincount(owner, weights=w * z[:, j], minlength=m)
    den = 1.0 + np.bincount(owner, weights=w, minlength=m) + tail
    return num / den[:, None]


def limit_cloud(gamma, c, d, trials, rng, *, y_max=POISSON_Y_MAX, max_points=POISSON_MAX_POINTS):
    """The nearest points of the limit cloud, per sample, in the ``Y = gamma |z|^2 / 2`` scale
    (docs/paper-b-beyond.md#samplers).

    ``Y_(1) = Lambda^{-1}(E)``, ``E ~ Exp(1)``; given ``Y_(1)`` the points on ``(Y_(1), y_c]`` are
    ``Poisson(Lambda(y_c) - Lambda(Y_(1)))`` many, i.i.d. with ``Lambda``-uniform positions, where
    ``y_c = min(Y_(1) + y_max, Lambda^{-1}(Lambda(Y_(1)) + max_points))`` [choice] (as in
    :func:`attnscale.sphere.poisson_limit.poisson_limit_top_weight`).

    Returns
    -------
    dict
        ``y1`` ``(m,)``, ``owner`` (sample of each further point), ``y`` (their ``Y``), ``yc``
        ``(m,)`` and ``tail``: the mean of ``sum e^{-(Y - Y_(1))}`` over the points beyond ``y_c``,
        ``e^{Y_(1)} C gamma^{-1/alpha} Gamma(1 + 1/alpha) Q(1/alpha, y_c)``.
    """
    gamma, d, trials, y_max, max_points = _check_common(gamma, d, trials, rng, y_max, max_points)
    c = check_real("c", c, low=0.0, low_open=True)
    alpha = alpha_exponent(d)
    a = 1.0 / alpha

    def lam_inv(v):
        return gamma * (v / c) ** alpha

    v1 = rng.standard_exponential(trials)
    y1 = lam_inv(v1)
    yc = np.minimum(y1 + y_max, lam_inv(v1 + max_points))
    dlam = c * (yc / gamma) ** a - v1
    counts = rng.poisson(dlam)
    owner = np.repeat(np.arange(trials), counts)
    y = lam_inv(v1[owner] + rng.random(owner.size) * dlam[owner])
    with np.errstate(divide="ignore"):
        log_q = np.log(special.gammaincc(a, yc))
    log_const = np.log(c) - a * np.log(gamma) + special.gammaln(1.0 + a)
    tail = np.exp(y1 + log_q + log_const)
    return {"y1": y1, "owner": owner, "y": y, "yc": yc, "tail": tail}


def critical_output_limit(
    gamma: float,
    c: float,
    d: int,
    trials: int,
    rng: np.random.Generator,
    *,
    y_max: float = POISSON_Y_MAX,
    max_points: int = POISSON_MAX_POINTS,
) -> np.ndarray:
    """Samples of the limit ``L = sum_i W_i z_i`` of ``n^{1/(d-1)} P_q(ATT_n(q) - q)`` [paper; derived].

    Sampler of docs/paper-b-beyond.md#samplers. Points from :func:`limit_cloud`,
    ``|z| = sqrt(2 Y / gamma)`` with uniform directions on ``S^{d-2}``; the points beyond the truncation enter the denominator through their mean and
    the numerator not at all (their mean is 0 by symmetry). Their relative mass is below ~2e-4
    at ``d = 5, gamma = 0.3`` with the default truncation and far smaller elsewhere.

    Parameters
    ----------
    gamma : float
        Critical constant, ``beta_n = gamma n^alpha`` (> 0).
    c : float
        Local-law constant ``C(q)`` (> 0); uniform keys: :func:`attnscale.sphere.theory.c_uniform`.
    d : int
        Ambient dimension (>= 3); ``L`` lives in ``R^{d-1}``.
    trials : int
        Number of independent samples (>= 1).
    rng : numpy.random.Generator
        Source of randomness.
    y_max, max_points :
        Truncation (see :func:`limit_cloud`).

    Returns
    -------
    numpy.ndarray
        ``(trials, d - 1)`` samples of ``L``.
    """
    gamma, d, trials, y_max, max_points = _check_common(gamma, d, trials, rng, y_max, max_points)
    out = np.empty((trials, d - 1))
    step = max(1, POINTS_PER_BLOCK // max_points)
    for s in range(0, trials, step):
        m = min(step, trials - s)
        cl = limit_cloud(gamma, c, d, m, rng, y_max=y_max, max_points=max_points)
        z1 = np.sqrt(2.0 * cl["y1"] / gamma)[:, None] * _directions(m, d - 1, rng)
        z = np.sqrt(2.0 * cl["y"] / gamma)[:, None] * _directions(cl["y"].size, d - 1, rng)
        w = np.exp(-(cl["y"] - cl["y1"][cl["owner"]]))
        out[s : s + m] = _weighted_average(m, d - 1, z1, cl["owner"], w, z, cl["tail"])
    return out


def critical_output_finite_n(
    n: int,
    gamma: float,
    d: int,
    trials: int,
    rng: np.random.Generator,
    *,
    y_max: float = POISSON_Y_MAX,
    max_points: int = POISSON_MAX_POINTS,
) -> np.ndarray:
    """Samples of ``L_n = n^{1/(d-1)} P_q(ATT_n(q) - q)`` for ``n`` uniform keys, ``beta = gamma n^alpha``.

    Sampler of docs/paper-b-beyond.md#samplers, exact in law up to a neglected relative mass
    (no key of the full context is formed) [derived]:
    ``F(T_(1)) = 1 - e^{-E/n}``; the other ``n - 1`` keys are i.i.d. given ``T > T_(1)``, and those
    with ``T <= t_c`` are ``Binomial(n - 1, p)`` many with ``F(T)`` uniform on
    ``(F(T_(1)), F(t_c))``; ``t_c = min(2, T_(1) + y_max / beta, F^{-1}(F(T_(1)) + max_points
    (1 - F(T_(1))) / (n - 1)))`` [choice]. A key at distance ``T`` in direction ``omega`` (uniform
    on ``S^{d-2}``, independent of ``T``) has ``P_q x = sqrt(T (2 - T)) omega``. The keys beyond
    ``t_c`` enter the denominator through the local-law mean of their weights (as in the limit)
    and not the numerator.

    Returns
    -------
    numpy.ndarray
        ``(trials, d - 1)`` samples of ``L_n``.
    """
    n = check_int("n", n, minimum=1)
    gamma, d, trials, y_max, max_points = _check_common(gamma, d, trials, rng, y_max, max_points)
    out = np.empty((trials, d - 1))
    step = max(1, POINTS_PER_BLOCK // max_points)
    for s in range(0, trials, step):
        m = min(step, trials - s)
        out[s : s + m] = _finite_n_block(n, gamma, d, m, rng, y_max, max_points)
    return out


def _finite_n_block(n, gamma, d, trials, rng, y_max, max_points) -> np.ndarray:
    """One block of :func:`critical_output_finite_n` (arguments already checked)."""
    alpha = alpha_exponent(d)
    a = 1.0 / alpha
    c = c_uniform(d)
    beta = gamma * n**alpha
    scale = n ** (1.0 / (d - 1))
    k = d - 1
    u1 = -np.expm1(-rng.standard_exponential(trials) / n)  # F(T_(1))
    t1 = d2q_ppf_fast(u1, d)
    rest = max(n - 1, 1)
    uc_count = np.minimum(1.0, u1 + max_points * (1.0 - u1) / rest)
    tc = np.minimum.reduce([np.full(trials, 2.0), t1 + y_max / beta, d2q_ppf_fast(uc_count, d)])
    uc = np.where(tc >= 2.0, 1.0, np.minimum(np.maximum(u1, d2q_cdf_uniform(tc, d)), 1.0))
    p = np.where(u1 < 1.0, (uc - u1) / np.maximum(1.0 - u1, 1e-300), 0.0)
    counts = rng.binomial(n - 1, np.clip(p, 0.0, 1.0))
    owner = np.repeat(np.arange(trials), counts)
    t = d2q_ppf_fast(u1[owner] + rng.random(owner.size) * (uc - u1)[owner], d)
    z1 = (scale * np.sqrt(t1 * (2.0 - t1)))[:, None] * _directions(trials, k, rng)
    z = (scale * np.sqrt(t * (2.0 - t)))[:, None] * _directions(t.size, k, rng)
    w = np.exp(-beta * (t - t1[owner]))
    # keys beyond t_c: mean weight sum (n - 1) int_{t_c} e^{-beta (t - T_(1))} dF, local law
    with np.errstate(divide="ignore"):  # log 0 = -inf: no tail (n = 1, or t_c past every key)
        log_q = np.log(special.gammaincc(a, beta * tc))
        log_const = np.log(c * (n - 1) / n) - a * np.log(gamma) + special.gammaln(1.0 + a)
    tail = np.where(tc >= 2.0, 0.0, np.exp(beta * t1 + log_q + log_const))
    return _weighted_average(trials, k, z1, owner, w, z, tail)


# --------------------------------------------------------------------------- Mecke quadrature
def palm_weight_moment(gamma: float, c: float, d: int, p: int, f, *, h: float = 0.02) -> float:
    """``E sum_i W_i^p f(Y_i)`` over the critical limit by the Mecke formula [derived]
    (docs/paper-b-beyond.md#second-moment-by-the-mecke-formula).

    ``E sum_i W_i^p f(Y_i) = int Lambda(dy) f(y) e^{-p y} E[(e^{-y} + S)^{-p}]`` with
    ``S = sum_j e^{-Y_j}`` over the whole process, ``E[(a + S)^{-p}] =
    Gamma(p)^{-1} int_0^inf s^{p-1} e^{-s a} phi(s) ds`` and ``phi(s) = E e^{-s S} = exp(-psi(s))``,
    ``psi(s) = int (1 - e^{-s e^{-y}}) Lambda(dy) = C gamma^{-a} int_0^inf t^a exp(log s - t -
    e^{log s - t}) dt`` (integration by parts, ``a = (d-1)/2``). All three integrals are done with
    the trapezoid rule of step ``h`` on a grid in ``log s`` (their integrands are smooth and decay
    exponentially or faster at both ends); the grid reaches ``y_top`` with ``psi(e^{y_top}) >= 40``.

    Parameters
    ----------
    gamma, c : float
        Critical constant and local-law constant (> 0).
    d : int
        Ambient dimension (>= 3).
    p : int
        Power of the weights (>= 1).
    f : callable
        Vectorised function of ``y``.
    h : float
        Grid step (trapezoid rule with Euler-Maclaurin end corrections; 0.02 gives ~1e-7
        relative, tested against the identity ``E sum_i W_i = 1`` and against ``h / 2``).
    """
    gamma = check_real("gamma", gamma, low=0.0, low_open=True)
    c = check_real("c", c, low=0.0, low_open=True)
    d = check_int("d", d, minimum=3)
    p = check_int("p", p, minimum=1)
    h = check_real("h", h, low=0.0, high=0.5, low_open=True)
    a = (d - 1) / 2
    y_top = gamma * (40.0 / c) ** (1.0 / a) + 10.0
    lo = int(np.ceil(40.0 / h))  # log s down to -40
    x = (np.arange(-lo, int(np.ceil((y_top + 10.0) / h)) + 1)) * h
    psi = _psi_grid(x, gamma, c, a, h)
    phi = np.exp(-psi)
    i0 = lo  # index of x = 0
    iy = np.arange(i0, x.size - int(np.ceil(5.0 / h)))  # y in [0, y_top + 5]
    # G_p(y) = e^{-p y} E[(e^{-y} + S)^{-p}] = h / Gamma(p) sum_j K_p(x_j - y) phi_j
    offs = np.arange(-lo, int(np.ceil(5.0 / h)) + 1)
    kern = np.exp(p * offs * h - np.exp(offs * h))
    G = np.zeros(iy.size)
    for o, kv in zip(offs, kern, strict=True):
        G += kv * phi[iy + o]
    G *= h / special.gamma(p)
    y = x[iy]
    lam = c * a * gamma**-a * y ** (a - 1.0)
    F = lam * np.asarray(f(y), dtype=float) * G
    trapezoid = h * (F.sum() - 0.5 * F[0] - 0.5 * F[-1])
    # Euler-Maclaurin end correction at y = 0 (F decays to ~0 at the top): + h^2/12 F'(0), with a
    # one-sided second-order difference for F'(0); the rule becomes O(h^3) or better
    return float(trapezoid + h / 12.0 * (-1.5 * F[0] + 2.0 * F[1] - 0.5 * F[2]))


def _psi_grid(x, gamma, c, a, h):
    """``psi(e^x)`` on the uniform grid ``x`` (step ``h``) by a discrete convolution [derived]."""
    from scipy.signal import fftconvolve

    t = np.arange(x.size) * h
    with np.errstate(over="ignore"):
        k = np.exp(x - np.exp(x))
    # FFT convolution: absolute error ~1e-16 * sum|t^a k| (psi only enters through exp(-psi))
    conv = h * fftconvolve(t**a, k)[: x.size]
    if a == 1.0:  # Euler-Maclaurin end correction at t = 0: + h^2/12 g'(0), g'(0) = k(x)
        conv += h * h / 12.0 * k
    return c * gamma**-a * conv


def critical_output_second_moment(gamma: float, c: float, d: int, *, h: float = 0.02) -> float:
    """``E |L|^2`` of the critical output limit by the Mecke formula [derived]
    (docs/paper-b-beyond.md#second-moment-by-the-mecke-formula).

    Given the radii, the directions are independent and centred, so the cross terms vanish and
    ``E |L|^2 = E sum_i W_i^2 |z_i|^2 = E sum_i W_i^2 (2 Y_i / gamma)``
    (:func:`palm_weight_moment` with ``p = 2``).
    """
    gamma = check_real("gamma", gamma, low=0.0, low_open=True)
    return palm_weight_moment(gamma, c, d, 2, lambda y: 2.0 * y / gamma, h=h)
