"""Causal (and row-scaled) attention: query ``i`` sees keys ``j <= i``, row ``i`` uses ``beta_i``.

Implements ``docs/realistic-attention.md#causal-mask``. Conventions as in
:mod:`attnscale.layer.dense.attention` (pre-LN ``y_i = x_i / ||x_i||``, scores ``beta_i <y_i, y_j>``,
``x_i' = sum_j A_ij y_j + alpha x_i``), positions are 1-indexed in the docs and 0-indexed in code:
row ``i`` (0-based) sees ``i + 1`` keys. Row 0 sees a single key, so ``A_00 = 1`` for every
``beta_0`` (with ``beta_i = gamma ln i`` the first row has ``beta = gamma ln 1 = 0``).

This module holds the layer (:func:`forward_rows`), self-weights and query blocks; the row
blocks they share, and why the kernels stay GEMM-bound, are in
:mod:`attnscale.layer.causal.blocks`; lambda (``angle_ratio_grid_rows``, ``pair_ratio_mean``)
is in :mod:`attnscale.layer.causal.angle_ratio`.
"""

from __future__ import annotations

import numpy as np

from attnscale.backend import uses_jax
from attnscale.core.softmax import softmax_rows
from attnscale.core.validation import check_int, check_layer_inputs, check_matrix
from attnscale.layer._threads import split_rows, tile_threads
from attnscale.layer.causal.blocks import RowBlock, causal_block_rows, lower_mask, row_blocks
from attnscale.layer.dense.kernel_args import beta_matrix, check_block, row_betas

__all__ = [
    "causal_softmax",
    "forward_rows",
    "self_weights",
    "query_block",
]


def causal_softmax(S: np.ndarray, beta=1.0) -> np.ndarray:
    """Reference causal row-softmax of a square score matrix, ``A_ij ∝ e^{beta_i S_ij}``, ``j <= i``
    (zero above the diagonal).

    Dense (``n x n``), for small ``n`` and for checking; ``beta`` scalar or length-``n``.
    """
    S = check_matrix("S", S)
    if S.shape[0] != S.shape[1]:
        raise ValueError(
            f"S must be a square (n x n) score matrix for a causal mask, got shape {S.shape}"
        )
    n = S.shape[0]
    b = row_betas(beta, n)
    T = b[:, None] * S
    lower = np.tril(np.ones((n, n), dtype=bool))
    return softmax_rows(np.where(lower, T, -np.inf))


def forward_rows(
    X,
    beta,
    alpha: float = 0.0,
    *,
    causal: bool = True,
    block_rows=None,
    return_self_weight: bool = False,
    backend=None,
):
    """One attention layer with per-row ``beta_i`` and an optional causal mask
    (``docs/realistic-attention.md#causal-mask``), in row blocks (memory ``O(block x n)``).

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens.
    beta : float or array_like, shape (n,)
        Global or per-row inverse temperature, ``>= 0``.
    alpha : float, optional
        Residual weight ``>= 0``.
    causal : bool, optional
        Query ``i`` attends to keys ``j <= i`` only.
    block_rows : int, optional
        Rows per block (default :func:`causal_block_rows`).
    return_self_weight : bool, optional
        Also return the diagonal ``A_ii`` (length ``n``).
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, numpy.ndarray)
        ``X'`` of shape ``(n, d)`` (and ``A_ii``).
    """
    X, r, _, alpha = check_layer_inputs(X, None, alpha)
    n = X.shape[0]
    b = row_betas(beta, n)
    block_rows = check_block("block_rows", block_rows)
    if uses_jax(backend):
        from attnscale.layer.dense import attention_jax

        return attention_jax.forward(
            X,
            r,
            b,
            alpha,
            causal=causal,
            block_rows=block_rows,
            return_self_weight=return_self_weight,
        )
    Y = X / r[:, None]
    br = causal_block_rows(n, block_rows)
    out = np.empty_like(X)
    aii = np.empty(n)
    flat = np.empty(br * n)
    z_all = np.empty(n)
    lower = lower_mask(br) if causal else None
    threads = tile_threads(br, n)
    for s, e in row_blocks(n, br):
        kend = e if causal else n
        # scores beta_i <y_i, y_j> in one GEMM (beta folded into the query rows), shifted by
        # the row maximum, which is the diagonal beta_i <y_i, y_i> = beta_i (Cauchy-Schwarz; the
        # rounding of <y_i, y_i> = 1 moves the shift by ~1e-16 beta_i, harmless)
        E = flat[: (e - s) * kend].reshape(e - s, kend)
        np.matmul(Y[s:e] * b[s:e, None], Y[:kend].T, out=E)
        z = z_all[s:e]

        def weigh_rows(r0, r1, E=E, s=s, e=e, z=z):
            Er = E[r0:r1]
            Er -= b[s + r0 : s + r1, None]
            np.exp(Er, out=Er)
            if causal:
                Er[:, s:e] *= lower[r0:r1, : e - s]
            z[r0:r1] = Er.sum(axis=1)

        split_rows(weigh_rows, e - s, kend, threads)
        aii[s:e] = E[np.arange(e - s), np.arange(s, e)] / z
        np.matmul(E, Y[:kend], out=out[s:e])
        out[s:e] /= z[:, None]
    if alpha:
        out += alpha * X
    return (out, aii) if return_self_weight else out


def self_weights(X, betas, *, causal: bool = True, block_rows=None, backend=None) -> np.ndarray:
    """Self-weights ``A_ii`` for a grid of scalings, sharing the score GEMM across them.

    Parameters
    ----------
    X : array_like, shape (n, d)
    betas : array_like, shape (m,) or (m, n)
        Global betas or per-row beta vectors (see :func:`attnscale.layer.dense.kernel_args.beta_matrix`).
    causal : bool, optional
    block_rows : int, optional
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    numpy.ndarray
        ``(m, n)``: ``A_ii`` for every scaling and row.
    """
    X, r, _, _ = check_layer_inputs(X, None, 0.0)
    n = X.shape[0]
    B = beta_matrix(betas, n)
    block_rows = check_block("block_rows", block_rows)
    if uses_jax(backend):
        from attnscale.layer.causal import attention_jax as causal_jax

        return causal_jax.self_weights(X, r, B, causal=causal, block_rows=block_rows)
    Y = X / r[:, None]
    br = causal_block_rows(n, block_rows)
    out = np.empty(B.shape)
    buf = np.empty((br, n))
    threads = tile_threads(br, n)
    for s, e in row_blocks(n, br):
        blk = RowBlock(Y, s, e, causal, threads)
        for k in range(B.shape[0]):
            E, z = blk.weights(B[k], buf[: e - s, : blk.kend])
            out[k, s:e] = E[blk.diag_idx] / z
    return out


def query_block(X, betas, start: int, stop: int, *, causal: bool = True, backend=None) -> dict:
    """Outputs and self-weights of the queries ``start <= i < stop`` only (e.g. the last block of a
    long context), for a grid of scalings sharing one score GEMM; memory ``O((stop-start) x n)``.

    Parameters
    ----------
    X : array_like, shape (n, d)
    betas : array_like, shape (m,) or (m, n)
        Global or per-row betas (only rows ``start..stop-1`` are used).
    start, stop : int
        Query rows, ``0 <= start < stop <= n``.
    causal : bool, optional
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    dict
        ``self_weight`` ``(m, b)`` and ``outputs`` ``(m, b, d)`` (``alpha = 0``, before the next
        normalisation), ``b = stop - start``.
    """
    X, r, _, _ = check_layer_inputs(X, None, 0.0)
    n, d = X.shape
    B = beta_matrix(betas, n)
    stop = check_int("stop", stop, minimum=1, maximum=n)
    start = check_int("start", start, minimum=0, maximum=stop - 1)
    if uses_jax(backend):
        from attnscale.layer.causal import attention_jax as causal_jax

        return causal_jax.query_block(X, r, B, start, stop, causal=causal)
    Y = X / r[:, None]
    threads = tile_threads(stop - start, n)
    blk = RowBlock(Y, start, stop, causal, threads)
    buf = np.empty((stop - start, blk.kend))
    sw = np.empty((B.shape[0], stop - start))
    outs = np.empty((B.shape[0], stop - start, d))
    for k in range(B.shape[0]):
        E, z = blk.weights(B[k], buf)
        sw[k] = E[blk.diag_idx] / z
        np.matmul(E, Y[: blk.kend], out=outs[k])
        outs[k] /= z[:, None]
    return {"self_weight": sw, "outputs": outs}
