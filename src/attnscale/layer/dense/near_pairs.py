"""Near-coincident and coincident token pairs in the angle ratio lambda, for every kernel and both
backends (``docs/paper-a.md#the-angle-ratio-lambda``).

``lambda`` averages ``(1 - <y_i', y_j'>) / (1 - <y_i, y_j>)`` over pairs of unit rows. Read from a
Gram matrix, ``1 - <y_i, y_j>`` loses all relative accuracy below ~1e-8 (d = 2, where n tokens
crowd a circle), so pairs with ``1 - <y_i, y_j> < NEAR_PAIR_TOL`` are recomputed exactly from
differences, ``1 - <u, v> = ||u - v||^2 / 2``, for input and output; pairs with exactly
coincident inputs (0/0) are left out of the mean and counted. The kernels find the near pairs
in their Gram blocks (numpy or JAX) and hand them to :func:`near_pair_sums`; the explicit
pairwise references use :func:`pair_ratio_mean_exact`.

The centred kernels of :mod:`attnscale.layer.scores.attention` compute distances from centred Gram
matrices instead and leave out pairs at rounding level (:data:`COINCIDENT_TOL`).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "NEAR_PAIR_TOL",
    "COINCIDENT_TOL",
    "half_squared_distance",
    "near_pair_sums",
    "pair_ratio_mean_exact",
]

#: Pairs with ``1 - <y_i, y_j>`` below this (as read from a Gram matrix) are treated exactly.
NEAR_PAIR_TOL = 1e-6

#: Relative threshold below which a pair counts as coincident in the centred formulation
#: (``||y_i - y_j||^2 <= COINCIDENT_TOL (c_i + c_j)``): about 100 float64 rounding units of the
#: centred squared norms the distance is computed from.
COINCIDENT_TOL = 100 * np.finfo(float).eps


def half_squared_distance(U: np.ndarray, ii: np.ndarray, jj: np.ndarray) -> np.ndarray:
    """``1 - <u_i, u_j> = ||u_i - u_j||^2 / 2`` of unit rows, from differences, for the pairs
    ``(ii[k], jj[k])``.

    ``U`` is ``(n, d)`` (result ``(k,)``) or a stack of outputs ``(n, B, d)``, token first
    (result ``(k, B)``).
    """
    return 0.5 * np.sum((U[ii] - U[jj]) ** 2, axis=-1)


def near_pair_sums(
    Y: np.ndarray, Yout: np.ndarray, ii: np.ndarray, jj: np.ndarray
) -> tuple[np.ndarray, int, int]:
    """The exact terms of the near pairs ``(ii[k], jj[k])`` of a lambda grid.

    Parameters
    ----------
    Y : numpy.ndarray, shape (n, d)
        Unit input rows.
    Yout : numpy.ndarray, shape (n, B, d)
        Unit outputs of ``B`` betas, token first.
    ii, jj : numpy.ndarray of int
        The near pairs (found from a Gram block: ``1 - <y_i, y_j> < NEAR_PAIR_TOL``).

    Returns
    -------
    (numpy.ndarray, int, int)
        ``sum_k (1 - <y'_i, y'_j>) / (1 - <y_i, y_j>)`` per beta (``(B,)``) over the pairs with
        distinct inputs, their number, and the number of coincident pairs left out.
    """
    din = half_squared_distance(Y, ii, jj)
    keep = din > 0.0
    ii, jj, din = ii[keep], jj[keep], din[keep]
    dout = half_squared_distance(Yout, ii, jj)  # (k, B)
    return (dout / din[:, None]).sum(axis=0), int(ii.size), int((~keep).sum())


def pair_ratio_mean_exact(
    Y: np.ndarray,
    Yout: np.ndarray,
    iu: np.ndarray,
    ju: np.ndarray,
    din: np.ndarray,
    dout: np.ndarray,
) -> float:
    """Mean of ``dout / din`` over the pairs ``(iu[k], ju[k])``, with the near pairs exact.

    ``din`` and ``dout`` hold ``1 - <y_i, y_j>`` and ``1 - <y'_i, y'_j>`` as read from Gram
    matrices; the entries with ``din < NEAR_PAIR_TOL`` are replaced in place by
    :func:`half_squared_distance` of the unit rows ``Y`` and ``Yout`` (both ``(n, d)``), and
    coincident pairs (``din = 0``) are left out. ``nan`` if every pair is coincident.
    """
    near = din < NEAR_PAIR_TOL
    if np.any(near):
        din[near] = half_squared_distance(Y, iu[near], ju[near])
        dout[near] = half_squared_distance(Yout, iu[near], ju[near])
    keep = din > 0.0
    if not np.any(keep):
        return float("nan")
    return float(np.mean(dout[keep] / din[keep]))
