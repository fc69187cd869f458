"""The angle ratio lambda under a causal mask or with per-row scalings
(``docs/realistic-attention.md#causal-mask``; lambda as in ``docs/paper-a.md``: the mean over all
pairs of output tokens). The layer itself, self-weights and query blocks are in
:mod:`attnscale.layer.causal.attention`.
"""

from __future__ import annotations

import numpy as np

from attnscale.backend import uses_jax
from attnscale.core.validation import check_layer_inputs
from attnscale.layer._threads import tile_threads
from attnscale.layer.causal.blocks import RowBlock, causal_block_rows, row_blocks
from attnscale.layer.dense.kernel_args import beta_matrix, check_block
from attnscale.layer.dense.near_pairs import NEAR_PAIR_TOL, near_pair_sums, pair_ratio_mean_exact

__all__ = ["OUTPUT_ENTRIES", "pair_ratio_mean", "angle_ratio_grid_rows"]

#: Budget (float64 entries) for the outputs of one group of betas in the lambda grid.
OUTPUT_ENTRIES = 64 * 2**20


def pair_ratio_mean(Y: np.ndarray, Yp: np.ndarray) -> float:
    """Mean over pairs ``i < j`` of ``(1 - <y'_i, y'_j>) / (1 - <y_i, y_j>)`` for small sets (e.g.
    one query block); near pairs exact from differences, coincident pairs left out
    (:func:`attnscale.layer.dense.near_pairs.pair_ratio_mean_exact`)."""
    Y = np.asarray(Y, dtype=float)
    Yp = np.asarray(Yp, dtype=float)
    Y = Y / np.linalg.norm(Y, axis=1, keepdims=True)
    Yp = Yp / np.linalg.norm(Yp, axis=1, keepdims=True)
    iu, ju = np.triu_indices(Y.shape[0], k=1)
    din = 1.0 - (Y @ Y.T)[iu, ju]
    dout = 1.0 - (Yp @ Yp.T)[iu, ju]
    return pair_ratio_mean_exact(Y, Yp, iu, ju, din, dout)


def angle_ratio_grid_rows(
    X,
    betas,
    alpha: float = 0.0,
    *,
    causal: bool = True,
    block_rows=None,
    output_entries=None,
    return_diagnostics: bool = False,
    backend=None,
):
    """lambda (``docs/paper-a.md``; definition unchanged: mean over all pairs ``i < j``) for a grid
    of global or per-row scalings, with an optional causal mask
    (``docs/realistic-attention.md#causal-mask``).

    Per row block ``[s, e)`` and group of betas, the two passes are fused: the block's Gram rows
    ``Y[s:e] Y[:e]^T`` (prefix) give the shifted scores and the pair weights
    ``W_ij = 1 / (1 - <y_i, y_j>)`` for ``j < i``; pass 1 forms the block's outputs
    ``Y'`` for every beta (``exp`` + one GEMM on the visible prefix), pass 2 adds
    ``sum_{j < i} W_ij <y'_i, y'_j>`` with one GEMM ``W [Y'_1 ... Y'_B]`` over the rows already
    done (``j < e``). Work per beta: ``~n^2 d`` (causal pass 1) + ``~n^2 d`` (pass 2 on the lower
    triangle), half of the dense kernel's ``4 n^2 d``. Uses
    ``sum_{i<j} W_ij (1 - <y_i', y_j'>) = sum_{j<i} W_ij - sum_{j<i} W_ij <y_i', y_j'>``.

    Parameters
    ----------
    X : array_like, shape (n, d)
    betas : array_like, shape (m,) or (m, n)
    alpha : float, optional
    causal : bool, optional
    block_rows : int, optional
    output_entries : int, optional
        Float64 entries for the outputs of one group of betas (default 512 MiB).
    return_diagnostics : bool, optional
        Also return ``n_pairs``, ``n_near_pairs``, ``n_excluded_pairs``.
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, dict)
        ``(m,)`` lambda values.
    """
    X, r, _, alpha = check_layer_inputs(X, None, alpha)
    n, d = X.shape
    B = beta_matrix(betas, n)
    block_rows = check_block("block_rows", block_rows)
    output_entries = check_block("output_entries", output_entries)
    if uses_jax(backend):
        from attnscale.layer.dense import attention_jax

        return attention_jax.angle_ratio_grid(
            X,
            r,
            B,
            alpha,
            causal=bool(causal),
            block_rows=block_rows,
            output_entries=output_entries,
            return_diagnostics=return_diagnostics,
        )
    Y = X / r[:, None]
    m = B.shape[0]
    br = causal_block_rows(n, block_rows)
    blocks = row_blocks(n, br)
    budget = OUTPUT_ENTRIES if output_entries is None else output_entries
    group = int(max(1, min(m, budget // (n * d))))
    lam = np.empty(m)
    buf = np.empty((br, n))
    obuf = np.empty((br, d))
    n_near = n_excl = 0
    total_pairs = n * (n - 1) // 2
    threads = tile_threads(br, n)
    for g0 in range(0, m, group):
        Bg = B[g0 : g0 + group]
        num, n_pairs, near = _group_sums(Y, X, Bg, blocks, causal, threads, alpha, buf, obuf)
        if near is not None:
            n_near, n_excl = near
        lam[g0 : g0 + Bg.shape[0]] = num / n_pairs if n_pairs > 0 else np.nan
    if return_diagnostics:
        return lam, {"n_pairs": total_pairs, "n_near_pairs": n_near, "n_excluded_pairs": n_excl}
    return lam


def _group_sums(Y, X, Bg, blocks, causal, threads, alpha, buf, obuf):
    """One group of betas of :func:`angle_ratio_grid_rows`: the weighted pair sums (the two fused
    passes per row block, then the near pairs exactly), the pair count, and
    ``(n_near, n_excluded)`` where there are near pairs (else ``None``)."""
    n, d = Y.shape
    total_pairs = n * (n - 1) // 2
    G_ = Bg.shape[0]
    Yc = np.empty((n, G_, d))
    Yflat = Yc.reshape(n, G_ * d)
    num = np.zeros(G_)
    near_i, near_j = [], []
    for s, e in blocks:
        blk = RowBlock(Y, s, e, causal, threads)
        # ---- pass 1: normalised outputs of rows s..e-1 for every beta of the group ----
        for k in range(G_):
            E, z = blk.weights(Bg[k], buf[: e - s, : blk.kend])
            # contiguous GEMM output, then one copy (see attention.angle_ratio_grid: a
            # power-of-two row stride in the (token, beta, coordinate) layout is slow)
            o = obuf[: e - s]
            np.matmul(E, Y[: blk.kend], out=o)
            o /= z[:, None]
            if alpha:
                o += alpha * X[s:e]
            Yc[s:e, k, :] = o
        blkY = Yc[s:e]
        blkY /= np.sqrt(np.einsum("nkd,nkd->nk", blkY, blkY))[:, :, None]
        # ---- pass 2: pairs (i, j) with j < i, i in the block ----
        # 1 - <y_i, y_j> = (1 - rowmax) - M in one pass (upper triangle masked next)
        D = np.subtract(1.0 - blk.rowmax, blk.M[:, :e])
        tri = np.triu(np.ones((e - s, e - s), dtype=bool))  # j >= i inside the block
        D[:, s:e][tri] = np.inf
        near = np.nonzero(D < NEAR_PAIR_TOL)
        D[near] = np.inf
        np.divide(1.0, D, out=D)
        num += D.sum()
        near_i.append(near[0] + s)
        near_j.append(near[1])
        WY = (D @ Yflat[:e]).reshape(e - s, G_, d)
        num -= np.einsum("nkd,nkd->k", WY, blkY)
    ii = np.concatenate(near_i)
    jj = np.concatenate(near_j)
    n_pairs = total_pairs - ii.size
    near_counts = None
    if ii.size:
        sums, kept, n_excl = near_pair_sums(Y, Yc, ii, jj)
        near_counts = (kept + n_excl, n_excl)
        num += sums
        n_pairs += kept
    return num, n_pairs, near_counts
