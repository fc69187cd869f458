"""Mean self-weight by the Laplace identity (docs/finite-d.md#exact-self-weight); the identity's
integral is :func:`attnscale.core.laplace.reciprocal_mean`, shared with the random-energy model.
The Laplace transform of one off-diagonal term (:func:`row_term_transform`) also serves the top
group of ``k`` copies of the query (:mod:`attnscale.regimes.ties_exact`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attnscale.core import laplace

from .laws import QUADRATURE_PRESETS, Table

__all__ = ["row_term_transform", "conditional_self_weight", "mean_self_weight"]


def row_term_transform(
    tab: Table, beta: float
) -> tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray], float]:
    """``ln phi(e^t)`` of one off-diagonal term at every node of ``tab``, with
    ``phi(s) = E[exp(-s e^{-beta y})]``, ``y = 1 - c`` (docs/finite-d.md#exact-self-weight).

    Returns
    -------
    (callable, callable, float)
        ``series(ts)`` for ``t < T_SWITCH`` (``psi = 1 - phi`` from its series
        ``sum_k (-1)^{k+1} e^{k t} E[e^{-k beta y}] / k!``), ``direct(td)`` above (direct
        quadrature; ``ln phi = log1p(-psi)`` while ``psi < 1/2``), each of shape
        ``(nodes, len(t))``, and ``max E[e^{-beta y}]`` over the nodes (for the grid's lower end).
    """
    x = -beta * tab.y  # (nodes, n_v), <= 0
    vw = tab.v_weight
    ks, coef = laplace.series_terms()
    mk = np.exp(x[:, :, None] * ks).transpose(0, 2, 1) @ vw  # (nodes, K)
    m1max = float(np.max(mk[:, 0]))

    def series(ts):
        return laplace.log_one_minus((mk * coef) @ np.exp(np.outer(ks, ts)))

    def direct(td):
        z = np.exp(td[None, :, None] + x[:, None, :])  # (nodes, len(td), n_v)
        return laplace.log_one_minus(-np.expm1(-z) @ vw, np.exp(-z) @ vw)

    return series, direct, m1max


def conditional_self_weight(
    tab: Table, n: int, beta: float, quadrature: str = "standard"
) -> np.ndarray:
    """``E[A_ii | R_0, tau_i]`` at every node of ``tab`` (array of shape ``(nodes,)``).

    ``E[A_ii | .] = int_R exp(t - e^t + (n-1) ln phi(e^t)) dt`` with ``s = e^t`` and
    ``phi(s) = E[exp(-s e^{-beta y})]``, ``y = 1 - c`` (:func:`attnscale.core.laplace.reciprocal_mean`,
    ``ln phi`` from :func:`row_term_transform`). The grid starts at
    ``t = -ln(1 + (n - 1) max E[e^{-beta y}]) - 34`` (at most ``-4``), where the integrand is below
    ``e^{-34}``.
    """
    h = QUADRATURE_PRESETS[quadrature]["t_step"]
    series, direct, m1max = row_term_transform(tab, beta)
    t_lo = min(-np.log1p((n - 1) * m1max) - 34.0, laplace.T_SWITCH - 1.0)
    return laplace.reciprocal_mean(n, series, direct, h=h, t_lo=t_lo)


def mean_self_weight(tab: Table, n: int, beta: float, quadrature: str = "standard") -> float:
    """``E[A_ii]``: the node average of :func:`conditional_self_weight`."""
    return float(tab.weight @ conditional_self_weight(tab, n, beta, quadrature))
