"""The exact block formula of eta for one block of query rows, written once for numpy and JAX
(``docs/paper-a.md#exact-block-formula-for-eta``).

:func:`block_terms` takes the array namespace ``xp`` (``numpy`` or ``jax.numpy``), as the array-API
code of scikit-learn and SciPy does: :func:`attnscale.layer.dense.eta_exact.eta_exact_grid` calls it with
``numpy`` on cache-sized row blocks, and its JAX twin (:mod:`attnscale.layer.dense.eta_exact_jax`) with
``jax.numpy`` inside a jitted tile. Only what the backends do differently stays with them: the
softmax weights of the block (JAX masks the padded keys), ``||S_i||_F^2`` (numpy keeps
``G * G``, JAX forms it a column tile at a time) and the sum over the block's rows (JAX masks the
padded rows).
"""

from __future__ import annotations

import numpy as np

__all__ = ["outer_features", "block_terms"]


def outer_features(Y: np.ndarray) -> np.ndarray:
    """The ``d (d + 1) / 2`` distinct entries of ``y_j y_j^T`` per row, off-diagonal ones scaled by
    ``sqrt(2)``, so that ``||sum_j A_ij Z_j||^2 = ||S_i||_F^2`` (the ``"outer"`` route)."""
    iu, ju = np.triu_indices(Y.shape[1])
    return Y[:, iu] * Y[:, ju] * np.where(iu == ju, 1.0, np.sqrt(2.0))


def _zero_diagonal(xp, Q, diag):
    """``Q`` with the entries ``Q[:, diag[0], diag[1]]`` set to 0 (in place for numpy; JAX arrays
    are immutable)."""
    if xp is np:
        Q[:, diag[0], diag[1]] = 0.0
        return Q
    return Q.at[:, diag[0], diag[1]].set(0.0)


def _times(xp, a, b):
    """``a * b``; for numpy in place, into ``a`` (a work array whose old values are not needed
    again: one ``(k, b, n)`` array less to allocate and bring into cache)."""
    if xp is np:
        a *= b
        return a
    return a * b


def block_terms(xp, Y, Gb, omH, A, s2, bs, w, wq, diag):
    """Per query row ``i`` of a block and beta: the parts of ``sum_k ||J_ik||^2`` at
    ``alpha = 0`` and ``r_i tr B_i`` (:func:`attnscale.layer.dense.eta_exact.eta_exact_grid`).

    The off-diagonal sum is expanded into row sums so that every ``(rows, n)`` array is touched
    only a few times::

        sum_k Q_ik T_ik = (d - 1 - 2 beta K_ii) q_i + 2 beta sum_k Q_ik K_ik G_ik
                          + beta^2 [(1 + mm_i) sum_k Q_ik (1 - G_ik^2)
                                    - 2 sum_k Q_ik K_ik (1 - G_ik^2)]

    with ``Q_ik = A_ik^2 / r_k^2`` (``i != k``, zero on the diagonal) and ``q_i = sum_k Q_ik``.

    Parameters
    ----------
    xp : module
        ``numpy`` or ``jax.numpy``.
    Y : array, shape (n, d)
        Unit rows (all keys).
    Gb : array, shape (b, n)
        The block's Gram rows ``G_ik = <y_i, y_k>``; ``omH = 1 - Gb**2``.
    omH : array, shape (b, n)
    A : array, shape (k, b, n)
        Softmax weights of the block's rows for ``k`` betas (numpy: overwritten).
    s2 : array, shape (k b,)
        ``||S_i||_F^2 = sum_jl A_ij A_il G_jl^2`` of each row (route-dependent).
    bs : array, shape (k,)
        The betas.
    w : array, shape (n,)
        ``1 / r_k^2`` of every key; ``wq`` the same of the block's rows, ``(b,)``.
    wq : array, shape (b,)
    diag : (array, array)
        Index pair of the block's diagonal entries in a ``(b, n)`` array:
        ``(arange(b), start + arange(b))``.

    Returns
    -------
    (array, array, array)
        ``(k, b)`` each: the off-diagonal blocks' ``sum_{k != i} ||J_ik||^2``, the diagonal
        block's ``||B_i||^2`` and ``r_i tr B_i``.
    """
    k, b, n = A.shape
    d = Y.shape[1]
    A2 = A.reshape(k * b, n)
    M = A2 @ Y  # m_i
    K = M @ Y.T  # K_ij = <m_i, y_j>, (k b, n)
    K3 = K.reshape(k, b, n)
    mm = xp.einsum("id,id->i", M, M).reshape(k, b)
    Kd = K3[:, diag[0], diag[1]]
    a = A[:, diag[0], diag[1]]
    bcol = bs[:, None]
    # ---- off-diagonal blocks ----
    Q = _zero_diagonal(xp, A * A * w, diag)
    qs = Q.sum(axis=2)
    q1 = xp.einsum("kbn,bn->kb", Q, omH)
    QK = _times(xp, Q, K3)  # Q_ik K_ik
    qkg = xp.einsum("kbn,bn->kb", QK, Gb)
    qkh = xp.einsum("kbn,bn->kb", QK, omH)
    off = (d - 1.0 - 2.0 * bcol * Kd) * qs + 2.0 * bcol * qkg
    off = off + bcol**2 * ((1.0 + mm) * q1 - 2.0 * qkh)
    # ---- diagonal blocks ----
    AG = A * Gb  # A_ij G_ij
    yCy = xp.einsum("kbn,bn->kb", AG, Gb) - Kd**2  # y_i^T C_i y_i
    trCP = 1.0 - mm - yCy
    mSm = xp.einsum("in,in->i", _times(xp, A, K3).reshape(k * b, n), K).reshape(k, b)
    Cy = (AG.reshape(k * b, n) @ Y).reshape(k, b, d) - Kd[:, :, None] * M.reshape(k, b, d)
    cy2 = xp.einsum("kbd,kbd->kb", Cy, Cy)
    cP2 = s2.reshape(k, b) - 2.0 * mSm + mm**2 - cy2  # ||C_i P_i||_F^2
    dg = (a**2 * (d - 1.0) + 2.0 * bcol * a * trCP + bcol**2 * cP2) * wq
    return off, dg, a * (d - 1.0) + bcol * trCP
