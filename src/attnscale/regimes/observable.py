"""The observable: the top-group weight of one query row and its beta-derivative
(docs/regimes.md#the-observable, docs/regimes.md#simulation-and-root-finding)."""

from __future__ import annotations

import numpy as np

from attnscale.core.validation import check_real

__all__ = ["group_weight", "group_weight_grid"]


def group_weight(group, others, beta: float) -> tuple[float, float]:
    """Weight of the top group and its beta-derivative for one query row
    (docs/regimes.md#the-observable).

    ``group`` and ``others`` are score *gaps* from the group's top score (``<= 0``, the group
    holding a 0): ``W = G / (G + O)``, ``G = sum_group e^{beta g}``, ``O = sum_others e^{beta g}``,
    ``dW/dbeta = (G' O - G O') / (G + O)^2`` with ``G' = sum g e^{beta g}``. No overflow: every
    exponent is ``<= 0``.
    """
    beta = check_real("beta", beta, low=0.0)
    g = np.asarray(group, dtype=np.float64)
    o = np.asarray(others, dtype=np.float64)
    eg = np.exp(beta * g)
    eo = np.exp(beta * o)
    sg, sg1 = float(eg.sum()), float(g @ eg)
    so, so1 = float(eo.sum()), float(o @ eo)
    z = sg + so
    return sg / z, (sg1 * so - sg * so1) / (z * z)


def group_weight_grid(group, others, betas, *, work=None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`group_weight` at every beta of ``betas`` for one query row, in one pass per beta
    over a reused buffer (the simulation's inner loop; docs/regimes.md#simulation-and-root-finding).

    Parameters
    ----------
    group, others : array_like
        Score gaps from the group's top score, ``<= 0`` (the group holds a 0).
    betas : array_like
        Inverse temperatures, ``>= 0``.
    work : numpy.ndarray, optional
        Scratch buffer of at least ``len(others)`` float64 entries.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``W`` and ``dW/dbeta`` at each beta.
    """
    g = np.atleast_1d(np.asarray(group, dtype=np.float64))
    o = np.atleast_1d(np.ascontiguousarray(others, dtype=np.float64))
    b = np.asarray(betas, dtype=np.float64)
    if b.ndim != 1 or np.any(~np.isfinite(b)) or np.any(b < 0):
        raise ValueError(f"betas must be a 1-D array of finite values >= 0, got {betas!r}")
    buf = np.empty(o.size) if work is None or work.size < o.size else work[: o.size]
    W = np.empty(b.size)
    dW = np.empty(b.size)
    for j, beta in enumerate(b):
        eg = np.exp(beta * g)
        sg, sg1 = float(eg.sum()), float(np.einsum("i,i->", g, eg))
        np.multiply(o, beta, out=buf)
        np.exp(buf, out=buf)
        so, so1 = float(buf.sum()), float(np.einsum("i,i->", o, buf))
        z = sg + so
        W[j] = sg / z
        dW[j] = (sg1 * so - sg * so1) / (z * z)
    return W, dW
