"""The exact route of the sampled eta: ``q = ||C P_i||_F^2`` of each sampled row without a probe
(docs/long-context.md#the-exact-route).

``q = ||S||_F^2 - 2 sum_j a_j K_j^2 + mu^2 - ||C y_i||^2`` with ``S = sum_j a_j y_j y_j^T``,
``K_j = <m, y_j>``, ``mu = ||m||^2`` and ``C y_i = sum_j a_j g_j y_j - K_i m`` (the expansion of
``docs/paper-a.md#exact-block-formula-for-eta``, row by row). ``||S||_F^2 = sum_{j,l} a_j a_l
<y_j, y_l>^2`` is not a function of per-key scalars; it costs ``2 n^2`` per row with the squared
Gram matrix (``"gram"``, ``n x n`` memory) or ``2 n d^2`` per row from ``S`` itself (``"outer"``).
This route is for checks and small sizes: the rows' weights are materialised (``b x n`` per
block).
"""

from __future__ import annotations

import numpy as np

__all__ = ["GRAM_MAX_N", "BLOCK_ENTRIES", "exact_q"]

#: Largest ``n`` for which the ``"gram"`` way keeps the ``n x n`` squared Gram matrix (128 MiB).
GRAM_MAX_N = 4096
#: Budget of one block of materialised weight rows, in float64 entries.
BLOCK_ENTRIES = 2**21


def exact_q(Y: np.ndarray, idx: np.ndarray, brow: np.ndarray, causal: bool) -> np.ndarray:
    """Exact ``q_i = ||C P_i||_F^2`` of the sampled rows ``idx`` (sorted) for betas ``brow``
    ``(B, m)`` (docs/long-context.md#the-exact-route).

    Parameters
    ----------
    Y : numpy.ndarray, shape (n, d)
        Unit tokens.
    idx : numpy.ndarray of int, shape (m,)
        Sampled rows, sorted.
    brow : numpy.ndarray, shape (B, m)
        Their betas.
    causal : bool
        Row ``i`` sees keys ``j <= i`` only.

    Returns
    -------
    numpy.ndarray
        ``(B, m)``.
    """
    n, d = Y.shape
    B, m = brow.shape
    gram = n <= GRAM_MAX_N and n < d * d
    H = None
    if gram:
        H = Y @ Y.T
        H *= H
    per_row = n if gram else n + d * d
    b = int(max(1, min(m, BLOCK_ENTRIES // per_row)))
    q = np.empty((B, m))
    for a0 in range(0, m, b):
        a1 = min(m, a0 + b)
        row_idx = idx[a0:a1]
        G = Y[row_idx] @ Y.T
        mask = np.arange(n)[None, :] > row_idx[:, None] if causal else None
        for k in range(B):
            A = np.exp(brow[k, a0:a1, None] * (G - 1.0))
            if causal:
                A[mask] = 0.0
            A /= A.sum(axis=1, keepdims=True)
            M = A @ Y
            K = M @ Y.T
            mSm = np.einsum("bn,bn->b", A, K * K)
            mu = np.einsum("bd,bd->b", M, M)
            Ki = np.einsum("bd,bd->b", M, Y[row_idx])
            Cy = (A * G) @ Y - Ki[:, None] * M
            if gram:
                s2 = np.einsum("bn,bn->b", A @ H, A)
            else:
                S = np.einsum("bn,nd,ne->bde", A, Y, Y, optimize=True)
                s2 = np.einsum("bde,bde->b", S, S)
            q[k, a0:a1] = s2 - 2.0 * mSm + mu**2 - np.einsum("bd,bd->b", Cy, Cy)
    return q
