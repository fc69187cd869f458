"""Mean field for the Jacobian norm eta (docs/finite-d.md#mean-field-for-eta).

Gaussian near-simplex tokens (docs/finite-d.md#conditional-structure); ``eta = ||J||_F^2 / (n d)``
with the block formula of docs/paper-a.md#exact-block-formula-for-eta. Given ``R_0 = ||z_0||`` and
a query's ``tau_i`` the keys are i.i.d.; the row's attention measure ``nu = sum_j A_ij delta_{y_j}``
is replaced by its mean field ``a delta_{y_i} + (1 - a) t_beta`` (``t_beta`` the key law tilted by
``e^{beta c}``) and its fluctuation is kept to first order in ``delta = sum_{j != i} A_ij^2`` by the
second-order delta method of a self-normalised sum. Everything is [derived] (ours).

Coordinates. The row lives in the span of ``u`` (the common direction), ``e_i`` (the query's
direction orthogonal to ``u``) and one more unit vector ``e_3``; a key is
``y = (tau, sigma omega, sigma sqrt(1 - omega^2))`` in that basis, ``sigma = sqrt(1 - tau^2)``,
``omega`` one coordinate of a uniform point of ``S^{d-2}``; second-moment matrices are a
``3 x 3`` block plus an isotropic part on the remaining ``d - 3`` directions.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from .approx import log_vmf
from .laws import QUADRATURE_PRESETS, log_j, normal_score_rule, r0_nodes, tau_law

__all__ = [
    "omega_moments",
    "omega_weights",
    "inverse_norm_moments",
    "row_functional",
    "off_diagonal_kernel",
    "key_nodes",
    "row_eta",
    "eta_mean_field",
    "eta_limit",
    "eta_critical_beta",
]

#: The five omega nodes of the exact quartic rule of :func:`omega_weights` (Chebyshev extrema).
OMEGA_NODES = np.cos(np.pi * np.arange(5) / 4.0)
#: Every how many points of the fine grid of the key's ``tau`` law a key node is taken, per
#: quadrature preset [choice]: the trapezoid in probability converges like the step squared;
#: "standard" against "fine" differs by at most 2e-4 in eta (d = 32, rho = 0.8; 5e-5 at
#: d >= 128; n = 1024, rho = 0.2 / 0.5 / 0.8, beta = 0.5 ... 2 gamma_c ln n).
KEY_STRIDE = {"standard": 8, "fine": 4}
#: Perturbation sizes of the exact five-point derivatives of a quartic in epsilon.
EPS = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])


def omega_moments(nu: float, k: np.ndarray) -> np.ndarray:
    """``E[omega^p e^{k omega}] / E[e^{k omega}]`` for ``p = 0..4`` (docs/finite-d.md#mean-field-for-eta).

    ``omega`` has density ``∝ (1 - omega^2)^{nu - 1/2}`` on ``[-1, 1]`` (one coordinate of a
    uniform point of ``S^{2 nu + 1}``; here ``nu = (d - 3)/2``). With ``g_nu(k) = k^{-nu} I_nu(k)``,
    ``g_nu' = k g_{nu+1}``, the tilted moments are the derivatives of the normaliser divided by it:
    ``m1 = I_{nu+1}/I_nu``, ``m2 = I_{nu+1}/(k I_nu) + I_{nu+2}/I_nu``,
    ``m3 = 3 I_{nu+2}/(k I_nu) + I_{nu+3}/I_nu``,
    ``m4 = 3 I_{nu+2}/(k^2 I_nu) + 6 I_{nu+3}/(k I_nu) + I_{nu+4}/I_nu``.

    Parameters
    ----------
    nu : float
        Order ``(d - 3)/2 >= 0``.
    k : array_like
        Tilts ``>= 0``.

    Returns
    -------
    numpy.ndarray
        Shape ``k.shape + (5,)``.
    """
    k = np.maximum(np.asarray(k, dtype=np.float64), 1e-150)
    lk = np.log(k)
    # log I_{nu+j}(k) up to a common term, each order evaluated once
    li = [
        log_vmf(nu + j, k) - gammaln(nu + j + 1.0) - (nu + j) * (np.log(2.0) - lk) for j in range(5)
    ]

    def ratio(j, p):  # I_{nu+j}(k) / (k^p I_nu(k))
        return np.exp(li[j] - li[0] - p * lk)

    m1 = ratio(1, 1) * k
    m2 = ratio(1, 1) + ratio(2, 0)
    m3 = 3.0 * ratio(2, 1) + ratio(3, 0)
    m4 = 3.0 * ratio(2, 2) + 6.0 * ratio(3, 1) + ratio(4, 0)
    return np.stack([np.ones_like(k), m1, m2, m3, m4], axis=-1)


def omega_weights(nu: float, k: np.ndarray) -> np.ndarray:
    """Weights ``W_l`` on :data:`OMEGA_NODES` with ``sum_l W_l p(omega_l) = E_k[p(omega)]`` for every
    polynomial ``p`` of degree ``<= 4`` (the tilted mean of :func:`omega_moments`): ``W = V^{-T} m``
    with ``V`` the Vandermonde matrix of the nodes. Shape ``k.shape + (5,)``."""
    V = np.vander(OMEGA_NODES, 5, increasing=True)  # V[l, p] = omega_l^p
    return omega_moments(nu, k) @ np.linalg.inv(V)


def inverse_norm_moments(d: int, rho: float, r0: float, tau: np.ndarray) -> tuple[np.ndarray, ...]:
    """``E[1/r^2 | tau]`` and ``E[1/r | tau]`` of a token's norm ``r = ||x||`` given its direction.

    Given ``z_0``, ``x = m u + sqrt(v) g`` with ``v = (1 - rho)/d``; in polar coordinates the radius
    ``r = sqrt(v) s`` has density ``∝ s^{d-1} exp(-s^2/2 + kappa tau s)``, so
    ``E[r^{-p} | tau] = v^{-p/2} J_{d-1-p}(kappa tau) / J_{d-1}(kappa tau)``
    (docs/finite-d.md#mean-field-for-eta; ``J_k`` as in docs/finite-d.md#conditional-structure).
    Needs ``d >= 3``.
    """
    v = (1.0 - rho) / d
    kappa = np.sqrt(rho) * r0 / np.sqrt(v)
    a = kappa * np.asarray(tau, dtype=np.float64)
    l1 = log_j(d - 1, a)
    inv2 = np.exp(log_j(d - 3, a) - l1) / v
    inv1 = np.exp(log_j(d - 2, a) - l1) / np.sqrt(v)
    return inv2, inv1


def row_functional(a, m, S, iso, yi, d: int, beta: float):
    """``Q = r_i^2 ||B_i||_F^2`` and ``L = r_i tr B_i`` of a row as functions of its attention measure.

    With ``C = S - m m^T`` (``S = sum_j A_ij y_j y_j^T``, ``m = sum_j A_ij y_j``) and ``P_i`` the
    projection orthogonal to ``y_i`` (docs/paper-a.md#exact-block-formula-for-eta, step 4):
    ``Q = a^2 (d - 1) + 2 beta a tr(C P_i) + beta^2 ||C P_i||_F^2``, ``L = a (d - 1) + beta tr(C P_i)``,
    ``tr(C P_i) = tr C - y_i^T C y_i``, ``||C P_i||_F^2 = ||C||_F^2 - ||C y_i||^2``.

    Parameters
    ----------
    a : array_like
        Self-weight.
    m : array_like, shape (..., 3)
        Attention output in the basis ``(u, e_i, e_3)``.
    S : array_like, shape (..., 3, 3)
        Second moment ``S`` on that block; ``iso`` its value on each of the other ``d - 3``
        directions.
    yi : array_like, shape (..., 3)
        The query.
    d : int
        Dimension.
    beta : float
        Inverse temperature.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``Q`` and ``L``.
    """
    C = S - m[..., :, None] * m[..., None, :]
    trC = np.trace(C, axis1=-2, axis2=-1) + (d - 3) * iso
    Cy = np.einsum("...ab,...b->...a", C, yi)
    yCy = np.einsum("...a,...a->...", yi, Cy)
    t1 = trC - yCy
    t2 = np.sum(C * C, axis=(-2, -1)) + (d - 3) * iso * iso - np.sum(Cy * Cy, axis=-1)
    q = a * a * (d - 1.0) + 2.0 * beta * a * t1 + beta * beta * t2
    return q, a * (d - 1.0) + beta * t1


def off_diagonal_kernel(M, yi, y, d: int, beta: float):
    """``r_k^2 ||J_ik||_F^2 / A_ik^2`` of an off-diagonal block with ``m_i`` at its mean field ``M``.

    ``(d - 1) - 2 beta (K_ii - K_ik c) + beta^2 (1 - 2 K_ik + ||M||^2)(1 - c^2)`` with
    ``c = <y_i, y>``, ``K_ii = <M, y_i>``, ``K_ik = <M, y>``
    (docs/paper-a.md#exact-block-formula-for-eta, step 3; docs/finite-d.md#mean-field-for-eta).
    ``M``, ``yi`` and ``y`` broadcast over leading axes, last axis 3.
    """
    c = np.sum(yi * y, axis=-1)
    kii = np.sum(M * yi, axis=-1)
    kik = np.sum(M * y, axis=-1)
    mu = np.sum(M * M, axis=-1)
    return (
        (d - 1.0)
        - 2.0 * beta * (kii - kik * c)
        + beta * beta * (1.0 - 2.0 * kik + mu) * (1.0 - c * c)
    )


def key_nodes(d: int, rho: float, quadrature: str = "standard", r0: float | None = None):
    """Quadrature of one draw's law: ``(w_r, r0, tau_i, w_i, tau_j, w_j)`` per ``R_0`` node.

    ``R_0`` on normal-score nodes (or the single ``r0``), the query's ``tau_i`` on normal-score
    nodes, a key's ``tau_j`` on every :data:`KEY_STRIDE`-th point of the fine grid of its law with
    trapezoid-in-probability weights (the rule of the mean field of lambda,
    docs/finite-d.md#mean-field-for-cosine-and-lambda, which takes every fourth).
    """
    p = QUADRATURE_PRESETS[quadrature]
    if r0 is None:
        r0s, r0w = r0_nodes(d, p["n_r0"])
    else:
        r0s, r0w = np.array([float(r0)]), np.ones(1)
    _, qw, qn, _ = normal_score_rule(p["n_tau"])
    out = []
    for r, wr in zip(r0s, r0w, strict=True):
        law = tau_law(d, rho, float(r))
        t, cdf = law.t[:: KEY_STRIDE[quadrature]], law.cdf[:: KEY_STRIDE[quadrature]]
        wj = np.zeros_like(t)
        wj[1:] += np.diff(cdf) / 2
        wj[:-1] += np.diff(cdf) / 2
        out.append((float(wr), float(r), law.quantile(qn), qw, t, wj / wj.sum()))
    return tuple(out)


def _tilted(d, beta, ti, tj, wj):
    """Per query ``tau_i`` (axis 0): ``log Phi = log E[e^{beta (c - 1)}]`` and the weights of the
    tilted key law on the ``(tau_j, omega_l)`` nodes (axes 1, 2), exact for quartics in omega."""
    si = np.sqrt(np.clip(1 - ti * ti, 0, None))
    sj = np.sqrt(np.clip(1 - tj * tj, 0, None))
    nu0 = (d - 3) / 2.0
    k = beta * np.outer(si, sj)
    le = beta * (np.outer(ti, tj) - 1.0) + log_vmf(nu0, k)
    mx = le.max(axis=1, keepdims=True)
    w = np.exp(le - mx) * wj
    z = w.sum(axis=1, keepdims=True)
    return mx[:, 0] + np.log(z[:, 0]), (w / z)[..., None] * omega_weights(nu0, k)


def _delta_terms(ae, me, Se, ie, yi, d: int, beta: float):
    """``Q''(0)/2 - Q'(0)`` and the same for ``L`` along one perturbation of the row measure.

    ``(ae, me, Se, ie)`` are the row summaries of :func:`row_functional` at the five
    perturbation sizes :data:`EPS` (leading axis); ``Q`` and ``L`` are polynomials of degree at most
    4 in ``eps``, so the five-point differences are exact (docs/finite-d.md#mean-field-for-eta).
    """
    q, l_ = row_functional(ae, me, Se, ie, yi, d, beta)
    st1 = np.array([1.0, -8.0, 0.0, 8.0, -1.0]) / 12.0  # exact first derivative of a quartic
    st2 = np.array([-1.0, 16.0, -30.0, 16.0, -1.0]) / 12.0  # exact second derivative
    w = 0.5 * st2 - st1
    return np.tensordot(w, q, axes=(0, 0)), np.tensordot(w, l_, axes=(0, 0))


def row_eta(d: int, rho: float, r0: float, n: int, beta: float, ti, tj, wj, alpha: float = 0.0):
    """Mean-field ``E[R_i | R_0, tau_i] / d`` per query node (docs/finite-d.md#mean-field-for-eta).

    Returns a dict of arrays over ``ti``: ``eta`` (the row's ``E R_i / d``), ``a``, ``delta``,
    ``diag0`` (the diagonal block at the mean-field measure), ``diag1`` (its first-order
    dispersion correction), ``off`` (the off-diagonal blocks) and ``tr_b`` (``E tr B_i``, the
    coefficient of ``2 alpha``), each divided by ``d``.
    """
    ti = np.asarray(ti, dtype=np.float64)
    si = np.sqrt(np.clip(1 - ti * ti, 0, None))
    sj = np.sqrt(np.clip(1 - tj * tj, 0, None))
    om = OMEGA_NODES
    # a key on the (tau_j, omega_l) nodes, in the basis (u, e_i, e_3) of each query: (i, j, l, 3)
    y = np.empty((ti.size, tj.size, om.size, 3))
    y[..., 0] = tj[None, :, None]
    y[..., 1] = sj[None, :, None] * om[None, None, :]
    y[..., 2] = sj[None, :, None] * np.sqrt(np.clip(1 - om * om, 0, None))[None, None, :]
    yi = np.stack([ti, si, np.zeros_like(ti)], axis=-1)  # (i, 3)
    lphi1, w1 = _tilted(d, beta, ti, tj, wj)
    lphi2, w2 = _tilted(d, 2.0 * beta, ti, tj, wj)
    a = 1.0 / (1.0 + (n - 1.0) * np.exp(lphi1))
    b = 1.0 - a
    delta = (n - 1.0) * a * a * np.exp(lphi2)
    # mean-field measure: a delta_{y_i} + b t_beta
    m_t = np.einsum("ijl,ijla->ia", w1, y)
    m_t[:, 2] = 0.0  # the e_3 component has a random sign: its mean is 0
    T_t = np.einsum("ijl,ijla,ijlb->iab", w1, y, y)
    perp = 1.0 - T_t[:, 0, 0] - T_t[:, 1, 1]  # key mass outside span(u, e_i)
    iso = b * perp / (d - 2.0) if d > 2 else 0.0 * b
    M = a[:, None] * yi + b[:, None] * m_t
    S = a[:, None, None] * yi[:, :, None] * yi[:, None, :] + b[:, None, None] * T_t
    S[:, 2, 2] = iso  # the e_3 direction is one of the d - 2 isotropic ones
    S[:, 0, 2] = S[:, 2, 0] = S[:, 1, 2] = S[:, 2, 1] = 0.0
    q0, l0 = row_functional(a, M, S, iso, yi, d, beta)
    yy = yi[None, :, None, None, :]
    # one-key perturbations nu_bar + eps h_y, h_y = delta_y - nu_bar (quartic in eps)
    e = EPS[:, None, None, None]
    qy, ly = _delta_terms(
        (1.0 - e) * a[None, :, None, None],
        (1.0 - e)[..., None] * M[None, :, None, None, :] + e[..., None] * y[None],
        (1.0 - e)[..., None, None] * S[None, :, None, None]
        + e[..., None, None] * (y[None, ..., :, None] * y[None, ..., None, :]),
        (1.0 - e) * iso[None, :, None, None],
        yy,
        d,
        beta,
    )
    # the mean perturbation E_beta[h_y] = a (t_beta - delta_{y_i}) (eps, i)
    e1 = EPS[:, None]
    S_t = T_t.copy()
    S_t[:, 2, 2] = perp / (d - 2.0) if d > 2 else 0.0
    S_t[:, 0, 2] = S_t[:, 2, 0] = S_t[:, 1, 2] = S_t[:, 2, 1] = 0.0
    dS = a[:, None, None] * (S_t - yi[:, :, None] * yi[:, None, :])
    qg, lg = _delta_terms(
        (1.0 - e1) * a,
        M + e1[..., None] * (a[:, None] * (m_t - yi)),
        S + e1[..., None, None] * dS,
        iso + e1 * a * (perp / (d - 2.0) if d > 2 else 0.0),
        yi,
        d,
        beta,
    )
    # covariance of the self-normalised row: delta E_2[h h] - (b^2 / (n - 1)) E_1[h] E_1[h]
    c2 = b * b / (n - 1.0)
    corr_q = delta * np.einsum("ijl,ijl->i", w2, qy) - c2 * qg
    corr_l = delta * np.einsum("ijl,ijl->i", w2, ly) - c2 * lg
    inv2_i, inv1_i = inverse_norm_moments(d, rho, r0, ti)
    inv2_j, _ = inverse_norm_moments(d, rho, r0, tj)
    diag0 = inv2_i * q0
    diag1 = inv2_i * corr_q
    g = off_diagonal_kernel(M[:, None, None, :], yi[:, None, None, :], y, d, beta)
    off = delta * np.einsum("ijl,ijl->i", w2, inv2_j[None, :, None] * g)
    trb = inv1_i * (l0 + corr_l)
    r = diag0 + diag1 + off + 2.0 * alpha * trb + alpha * alpha * d
    return {
        "eta": r / d,
        "a": a,
        "delta": delta,
        "diag0": diag0 / d,
        "diag1": diag1 / d,
        "off": off / d,
        "tr_b": trb / d,
    }


def eta_mean_field(
    n: int,
    d: int,
    rho: float,
    beta,
    *,
    alpha=0.0,
    r0: float | None = None,
    quadrature: str = "standard",
    parts: bool = False,
):
    """Mean-field eta (docs/finite-d.md#mean-field-for-eta) of Gaussian near-simplex tokens.

    Averaged over ``tau_i`` and ``R_0 = ||z_0||``, or conditioned on ``R_0 = r0`` (to compare with
    one draw). ``eta`` is a quadratic in ``alpha``, ``eta_0 + 2 alpha E tr B_i / d + alpha^2``, so
    every ``alpha`` costs nothing more.

    Parameters
    ----------
    n, d : int
        Tokens ``2 <= n <= 1e7`` and dimension ``3 <= d <= 4096``.
    rho : float
        Nominal correlation ``0 <= rho < 1``.
    beta : float or array_like
        Inverse temperature(s) ``>= 0``.
    alpha : float or array_like, optional
        Residual weight(s) ``>= 0``.
    r0 : float, optional
        Condition on ``||z_0|| = r0 > 0``.
    quadrature : {"standard", "fine"}
        Quadrature resolution (docs/finite-d.md#exact-self-weight).
    parts : bool
        Return the averaged parts of :func:`row_eta` at scalar ``beta`` and ``alpha = 0``.

    Returns
    -------
    float or numpy.ndarray
        eta, shaped ``alpha.shape + beta.shape`` (a float for scalars); or the dict of parts.
    """
    from attnscale.layer.finite_d import check_args

    n, d, rho, b = check_args(n, d, rho, beta)
    a = np.asarray(alpha, dtype=np.float64)
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f"alpha must be finite and >= 0, got {alpha!r}")
    if r0 is not None and not (np.isfinite(r0) and r0 > 0):
        raise ValueError(f"r0 must be a finite real number > 0, got {r0!r}")
    if quadrature not in QUADRATURE_PRESETS:
        raise ValueError(
            f"quadrature must be one of {sorted(QUADRATURE_PRESETS)}, got {quadrature!r}"
        )
    nodes = key_nodes(d, rho, quadrature, r0)
    acc = [
        dict.fromkeys(("eta", "a", "delta", "diag0", "diag1", "off", "tr_b"), 0.0)
        for _ in range(b.size)
    ]
    for k, bk in enumerate(b.ravel()):
        for wr, r, ti, wi, tj, wj in nodes:
            for key, v in row_eta(d, rho, r, n, float(bk), ti, tj, wj).items():
                acc[k][key] += wr * float(wi @ v)
    if parts:
        if b.ndim or a.ndim or float(a) != 0.0:
            raise ValueError("parts=True needs a scalar beta and alpha = 0")
        return acc[0]
    eta0 = np.array([p["eta"] for p in acc]).reshape(b.shape)
    trb = np.array([p["tr_b"] for p in acc]).reshape(b.shape)
    ax = a.reshape(a.shape + (1,) * b.ndim)
    out = eta0 + 2.0 * ax * trb + ax * ax
    return float(out) if np.ndim(out) == 0 else out


def eta_limit(
    d: int, rho: float, *, r0: float | None = None, quadrature: str = "standard"
) -> float:
    """eta's ``beta -> inf`` value in the same quadrature as :func:`eta_mean_field`:
    ``(1 - 1/d) E[1/r_i^2]`` (``J_ii -> P_i / r_i``, every other block vanishes;
    docs/finite-d.md#mean-field-for-eta), averaged over ``R_0`` or given ``R_0 = r0``. The
    normaliser of a mean-field eta curve (docs/long-context.md#width-centre-and-their-standard-errors).

    Parameters
    ----------
    d : int
        Dimension ``3 <= d <= 4096``.
    rho : float
        Nominal correlation ``0 <= rho < 1``.
    r0 : float, optional
        Condition on ``||z_0|| = r0 > 0``.
    quadrature : {"standard", "fine"}
        Quadrature resolution.

    Returns
    -------
    float
    """
    from attnscale.layer.finite_d import check_args

    _, d, rho = check_args(2, d, rho)
    if r0 is not None and not (np.isfinite(r0) and r0 > 0):
        raise ValueError(f"r0 must be a finite real number > 0, got {r0!r}")
    if quadrature not in QUADRATURE_PRESETS:
        raise ValueError(
            f"quadrature must be one of {sorted(QUADRATURE_PRESETS)}, got {quadrature!r}"
        )
    total = 0.0
    for wr, r, ti, wi, _, _ in key_nodes(d, rho, quadrature, r0):
        total += wr * float(wi @ inverse_norm_moments(d, rho, r, ti)[0])
    return (1.0 - 1.0 / d) * total


def eta_critical_beta(
    n: int,
    d: int,
    rho: float,
    *,
    r0: float | None = None,
    quadrature: str = "standard",
    rtol: float = 1e-4,
) -> float:
    """eta's finite-d critical point: the ``beta`` where the mean-field eta over its limit,
    ``eta_mean_field / eta_limit``, reaches Paper A's critical value 1/4
    (docs/finite-d.md#mean-field-for-eta; the counterpart for eta of the self-weight's
    ``beta*``), bracketed around ``ln(n - 1)/(1 - rho)`` by
    :func:`attnscale.core.roots.increasing_root`.

    Parameters
    ----------
    n, d : int
        Tokens ``3 <= n <= 1e7`` and dimension ``3 <= d <= 4096``.
    rho : float
        Nominal correlation ``0 <= rho < 1``.
    r0 : float, optional
        Condition on ``||z_0|| = r0 > 0`` (else averaged over ``R_0``).
    quadrature : {"standard", "fine"}
        Quadrature resolution.
    rtol : float
        Relative tolerance of the root (each evaluation costs about 0.4 CPU-s averaged over
        ``R_0``, 0.07 given it).

    Returns
    -------
    float
    """
    from attnscale.core.roots import increasing_root
    from attnscale.layer.finite_d import check_args

    n, d, rho = check_args(n, d, rho)
    if n < 3:
        raise ValueError(f"n must be >= 3 for eta's critical point, got {n}")
    limit = eta_limit(d, rho, r0=r0, quadrature=quadrature)

    def f(b):
        return eta_mean_field(n, d, rho, b, r0=r0, quadrature=quadrature) / limit - 0.25

    guess = np.log(n - 1.0) / (1.0 - rho)
    return increasing_root(f, 0.9 * guess, 1.2 * guess, rtol=rtol)
