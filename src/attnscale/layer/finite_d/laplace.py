"""Mean self-weight by the Laplace identity (docs/finite-d.md#exact-self-weight)."""

from __future__ import annotations

from math import factorial

import numpy as np

from .laws import LEVELS, Table

__all__ = ["conditional_self_weight", "mean_self_weight"]

_K_SERIES = 14  # terms of the small-s series of psi; e^{-3 k}/k! < 1e-28 beyond
_T_SWITCH = -3.0  # below: series in e^t, above: direct sums


def conditional_self_weight(tab: Table, n: int, beta: float, level: str = "standard") -> np.ndarray:
    """``E[A_ii | R_0, tau_i]`` at every node of ``tab`` (array of shape ``(nodes,)``).

    ``E[A_ii | .] = int_R exp(t - e^t + (n-1) ln phi(e^t)) dt`` with ``s = e^t`` and
    ``phi(s) = E[exp(-s e^{-beta y})]``, ``y = 1 - c``. ``psi = 1 - phi`` is evaluated from the
    series ``sum_k (-1)^{k+1} e^{k t} E[e^{-k beta y}] / k!`` for ``t < -3`` and directly above;
    ``ln phi = log1p(-psi)`` while ``psi < 1/2``. The trapezoid rule in ``t`` converges
    exponentially (the integrand is analytic in a strip of half-width pi/2).
    """
    h = LEVELS[level]["t_step"]
    x = -beta * tab.y  # (nodes, n_v), <= 0
    vw = tab.v_weight
    ks = np.arange(1, _K_SERIES + 1)
    mk = np.exp(x[:, :, None] * ks).transpose(0, 2, 1) @ vw  # (nodes, K)
    m1max = float(np.max(mk[:, 0]))
    t_lo = min(-np.log1p((n - 1) * m1max) - 34.0, _T_SWITCH - 1.0)
    t_hi = 4.7  # exp(-e^4.7) = 1e-48
    t = np.arange(t_hi, t_lo, -h)[::-1]
    ts = t[t < _T_SWITCH]
    td = t[t >= _T_SWITCH]
    coef = (-1.0) ** (ks + 1) / np.array([factorial(k) for k in ks], dtype=float)
    psi_s = (mk * coef) @ np.exp(np.outer(ks, ts))  # (nodes, len(ts))
    lphi_s = np.log1p(-psi_s)
    z = np.exp(td[None, :, None] + x[:, None, :])  # (nodes, len(td), n_v)
    psi_d = -np.expm1(-z) @ vw
    phi_d = np.exp(-z) @ vw
    with np.errstate(divide="ignore"):
        lphi_d = np.where(psi_d < 0.5, np.log1p(-np.minimum(psi_d, 0.5)), np.log(phi_d))
    lphi = np.concatenate([lphi_s, lphi_d], axis=1)
    integrand = np.exp(t - np.exp(t) + (n - 1.0) * lphi)
    return h * integrand.sum(axis=1)


def mean_self_weight(tab: Table, n: int, beta: float, level: str = "standard") -> float:
    """``E[A_ii]``: the node average of :func:`conditional_self_weight`."""
    return float(tab.weight @ conditional_self_weight(tab, n, beta, level))
