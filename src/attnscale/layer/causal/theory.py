"""Exact simplex predictions under a causal mask with per-position scaling.

Implements ``docs/realistic-attention.md#simplex-tokens-under-a-causal-mask``. Simplex tokens
(``||x_i||^2 = q``, ``<y_i, y_j> = rho`` for ``i != j``); query ``i`` (1-indexed) sees the ``i``
keys ``j <= i`` with inverse temperature ``beta_i``. With ``t_i = e^{beta_i (rho - 1)}``:

* ``A_ii = a_i = 1 / (1 + (i - 1) t_i)`` and ``A_ij = b_i = t_i a_i`` for ``j < i``;
* ``x_i' = e_i y_i + b_i sum_{k<i} y_k`` with ``e_i = a_i + alpha sqrt(q)``;
* in the Gram metric ``<y_k, y_l> = rho + (1 - rho) delta_kl`` a combination ``sum_k u_k y_k`` has
  squared norm ``rho (sum u)^2 + (1 - rho) ||u||^2``, so
  ``N_i = ||x_i'||^2 = rho S^2 + (1 - rho) (e_i^2 + (i - 1) b_i^2)`` with
  ``S = sum u = 1 + alpha sqrt(q)`` for every row, and for ``i < j``
  ``1 - <y_i', y_j'> = [(1 - rho) ||u_i/sqrt(N_i) - u_j/sqrt(N_j)||^2
  + rho S^2 (1/sqrt(N_i) - 1/sqrt(N_j))^2] / 2`` (a sum of squares: no cancellation).
"""

from __future__ import annotations

import numpy as np

from attnscale.core.validation import check_real
from attnscale.layer.dense.kernel_args import row_betas

__all__ = [
    "causal_simplex_weights",
    "causal_simplex_self_weight",
    "causal_simplex_pair_gap",
    "causal_simplex_lambda",
]


def _rho(rho):
    return check_real("rho", rho, low=0.0, high=1.0, low_open=True, high_open=True)


def _positions(positions, n: int) -> np.ndarray:
    """1-indexed increasing positions in ``[1, n]`` (default all ``1..n``), checked."""
    pos = np.arange(1, n + 1) if positions is None else np.asarray(positions, dtype=int)
    if pos.ndim != 1 or np.any(np.diff(pos) <= 0) or pos.min() < 1 or pos.max() > n:
        raise ValueError(f"positions must be increasing integers in [1, {n}]")
    return pos


def causal_simplex_weights(rho: float, beta) -> tuple[np.ndarray, np.ndarray]:
    """``(a_i, b_i)`` for positions ``i = 1..n``: the self-weight and the weight of each earlier
    key (``docs/realistic-attention.md#simplex-tokens-under-a-causal-mask``).

    Parameters
    ----------
    rho : float
        Pairwise cosine, ``0 < rho < 1``.
    beta : array_like, shape (n,)
        Per-position inverse temperatures (a scalar needs ``n``: pass ``np.full(n, beta)``).
    """
    rho = _rho(rho)
    beta = np.asarray(beta, dtype=float)
    if beta.ndim != 1 or beta.size < 1:
        raise ValueError(f"beta must be a 1-D vector with one entry per position, got {beta.shape}")
    beta = row_betas(beta, beta.size)
    i = np.arange(1, beta.size + 1, dtype=float)
    t = np.exp(beta * (rho - 1.0))
    a = 1.0 / (1.0 + (i - 1.0) * t)
    return a, t * a


def causal_simplex_self_weight(rho: float, beta) -> np.ndarray:
    """``A_ii = 1 / (1 + (i - 1) e^{beta_i (rho - 1)})`` for ``i = 1..n``."""
    return causal_simplex_weights(rho, beta)[0]


def causal_simplex_pair_gap(
    rho: float, beta, alpha: float = 0.0, q: float = 1.0, *, positions=None
) -> np.ndarray:
    """``1 - <y_i', y_j'>`` for every pair ``i < j`` of ``positions`` (1-indexed, increasing;
    default all ``1..n``), as an upper-triangular matrix (zeros on and below the diagonal)."""
    rho = _rho(rho)
    alpha = check_real("alpha", alpha, low=0.0)
    q = check_real("q", q, low=0.0, low_open=True)
    a, b = causal_simplex_weights(rho, beta)
    n = a.size
    pos = _positions(positions, n)
    k = pos - 1
    e = a[k] + alpha * np.sqrt(q)
    bb = b[k]
    S = 1.0 + alpha * np.sqrt(q)
    cnt = pos.astype(float) - 1.0  # number of earlier keys of each row
    N = rho * S**2 + (1.0 - rho) * (e**2 + cnt * bb**2)
    rs = 1.0 / np.sqrt(N)
    bh, eh = bb * rs, e * rs  # normalised coefficients
    # ||u_i/sqrt(N_i) - u_j/sqrt(N_j)||^2 for i < j: the i - 1 keys before i carry bh_i vs bh_j,
    # key i carries eh_i vs bh_j, the j - i - 1 keys strictly between carry 0 vs bh_j, key j
    # carries 0 vs eh_j.
    ii, jj = np.meshgrid(np.arange(pos.size), np.arange(pos.size), indexing="ij")
    diff2 = (
        cnt[ii] * (bh[ii] - bh[jj]) ** 2
        + (eh[ii] - bh[jj]) ** 2
        + (pos[jj] - pos[ii] - 1.0) * bh[jj] ** 2
        + eh[jj] ** 2
    )
    gap = 0.5 * ((1.0 - rho) * diff2 + rho * S**2 * (rs[ii] - rs[jj]) ** 2)
    return np.where(jj > ii, gap, 0.0)


def causal_simplex_lambda(
    rho: float, beta, alpha: float = 0.0, q: float = 1.0, *, positions=None
) -> float:
    """Exact simplex lambda under a causal mask: mean over pairs ``i < j`` of ``positions``
    (default all ``1..n``) of ``(1 - <y_i', y_j'>) / (1 - rho)``
    (``docs/realistic-attention.md#simplex-tokens-under-a-causal-mask``).

    ``O(n)``: the squares in :func:`causal_simplex_pair_gap` are expanded and the sums over
    ``i < j`` become exclusive cumulative sums. The expansion cancels to absolute accuracy about
    ``1e-16`` relative to the O(1) terms, i.e. lambda to ~1e-13 (tested against the pairwise
    form).
    """
    rho = _rho(rho)
    alpha = check_real("alpha", alpha, low=0.0)
    q = check_real("q", q, low=0.0, low_open=True)
    a, b = causal_simplex_weights(rho, beta)
    n = a.size
    pos = _positions(positions, n)
    if pos.size < 2:
        raise ValueError("positions must contain at least two positions")
    k = pos - 1
    S = 1.0 + alpha * np.sqrt(q)
    e = a[k] + alpha * np.sqrt(q)
    c = pos.astype(float) - 1.0
    N = rho * S**2 + (1.0 - rho) * (e**2 + c * b[k] ** 2)
    rs = 1.0 / np.sqrt(N)
    bh, eh = b[k] * rs, e * rs
    cnt = np.arange(pos.size, dtype=float)  # number of earlier positions in the set

    def before(f):  # exclusive cumulative sum: sum over earlier positions of the set
        return np.cumsum(f) - f

    t1 = before(c * bh**2) - 2.0 * bh * before(c * bh) + bh**2 * before(c)
    t2 = before(eh**2) - 2.0 * bh * before(eh) + cnt * bh**2
    t3 = bh**2 * (cnt * (pos - 1.0) - before(pos.astype(float)))
    t4 = cnt * eh**2
    t5 = before(rs**2) - 2.0 * rs * before(rs) + cnt * rs**2
    total = 0.5 * ((1.0 - rho) * np.sum(t1 + t2 + t3 + t4) + rho * S**2 * np.sum(t5))
    return float(total / (pos.size * (pos.size - 1) / 2) / (1.0 - rho))
