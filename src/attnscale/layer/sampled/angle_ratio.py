"""The angle ratio lambda from a sample of query rows (docs/long-context.md#the-sampled-lambda).

Each sampled row's output ``y_a'`` is computed exactly, against all its keys (all ``n``, or
``j <= a`` under the causal mask), with the conventions of the dense kernels
(:mod:`attnscale.layer.dense.attention`, :mod:`attnscale.layer.causal.attention`): pre-LN ``y_i = x_i / ||x_i||``,
scores ``beta_a <y_a, y_j>``, ``x_a' = sum_j A_aj y_j + alpha x_a``. lambda, the mean over all
pairs of ``(1 - <y_i', y_j'>) / (1 - <y_i, y_j>)``, is then estimated by the U-statistic of the
sampled pairs (:func:`attnscale.layer.sampled.pairs.pair_estimate_from_sums`), near pairs and
coincident pairs treated as in :func:`attnscale.layer.dense.attention.angle_ratio_grid`.

How the kernel runs (docs/long-context.md#cost-and-memory)
-----------------------------------------------------------
Sampled rows are processed in blocks of ``b`` rows and keys in tiles of ``t`` keys. Per block and
tile the Gram tile ``Y_b Y_J^T`` is formed once (shared by every beta); per beta one ``exp`` of the
``b x t`` tile and one GEMM ``E Y_J`` accumulate the softmax denominators and numerators. The
softmax is shifted by the self-score ``<y_a, y_a> = 1``, the row maximum of unit vectors
(Cauchy-Schwarz; the dense kernel subtracts the computed row maximum, equal to it up to
rounding), so no row-maximum pass is needed and ``exp`` never overflows. Memory is
``O(b t + B m d)`` besides the tokens: no ``m x n`` (let alone ``n x n``) matrix is formed, and
no normalised copy of the tokens (:func:`unit_rows` forms a tile's rows where they are used).
Under the causal mask a tile is visited only by the rows that see it (rows sorted by position),
and only the tile holding a row's own position needs a mask.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

from attnscale.backend import uses_jax
from attnscale.core.validation import check_int, check_matrix, check_real
from attnscale.layer._threads import blas_threads, split_rows
from attnscale.layer.dense.attention import NEAR_PAIR_TOL
from attnscale.layer.dense.kernel_args import beta_matrix
from attnscale.layer.sampled.pairs import pair_block_sums, pair_estimate_from_sums
from attnscale.layer.sampled.rows import RowSample, resolve_rows

__all__ = [
    "DEFAULT_BLOCK_ROWS",
    "DEFAULT_TILE_ENTRIES",
    "SampledLambda",
    "check_tokens",
    "unit_rows",
    "key_tile",
    "causal_tile_rows",
    "weights_pass",
    "tile_weights",
    "sampled_outputs",
    "pair_ratio_block",
    "angle_ratio_sampled",
    "pair_statistics",
]

#: Sampled rows per block (all of them up to this many).
DEFAULT_BLOCK_ROWS = 256
#: Entries of one ``b x t`` score tile (2 MiB of float64: stays in cache while every beta uses it).
DEFAULT_TILE_ENTRIES = 2**18
#: Budget, in float64 entries, for the outputs ``(betas, m, d)`` of one group of betas (256 MiB).
DEFAULT_OUTPUT_ENTRIES = 32 * 2**20


class SampledLambda(NamedTuple):
    """Result of :func:`angle_ratio_sampled` (docs/long-context.md#the-sampled-lambda)."""

    #: ``(B,)`` estimate of lambda, one per beta
    estimate: np.ndarray
    #: ``(B,)`` within-draw standard error (sampling of rows; 0 when every row is sampled)
    se: np.ndarray
    #: number of sampled rows
    m: int
    #: pairs of sampled rows, ``m (m - 1) / 2`` (as the dense kernel's ``n_pairs``)
    n_pairs: int
    #: sampled pairs recomputed exactly from differences (``1 - <y_i, y_j> < NEAR_PAIR_TOL``)
    n_near_pairs: int
    #: sampled pairs left out (coincident inputs, ``0/0``)
    n_excluded_pairs: int
    #: the row sample
    rows: RowSample


def check_tokens(X, alpha):
    """``X`` as a finite float64 ``(n, d)`` matrix with ``n >= 2`` and non-zero rows, its row norms
    ``r`` and ``alpha >= 0``, with the errors of :func:`attnscale.core.validation.check_layer_inputs`
    but without an ``n x d`` temporary (the norms by ``einsum``; at ``n = 2^20`` a copy of the
    tokens is a GiB)."""
    X = check_matrix("X", X, min_rows=2)
    r = np.sqrt(np.einsum("ij,ij->i", X, X))
    if np.any(r == 0.0):
        i = int(np.flatnonzero(r == 0.0)[0])
        raise ValueError(f"X has a zero row (index {i}); pre-LN normalisation needs x_i != 0")
    return X, r, check_real("alpha", alpha, low=0.0)


def unit_rows(X, r, row_idx):
    """The pre-LN tokens ``y_i = x_i / r_i`` of some rows (an index array or a slice), formed
    where they are needed: the kernels keep no normalised copy of all ``n`` tokens."""
    return X[row_idx] / r[row_idx, None]


def key_tile(block_rows: int, n: int, key_block: int | None = None) -> int:
    """Keys per tile: ``key_block`` if given, else ``DEFAULT_TILE_ENTRIES // block_rows`` (at
    least 256, at most ``n``)."""
    if key_block is not None:
        return check_int("key_block", key_block, minimum=1)
    return int(min(n, max(256, DEFAULT_TILE_ENTRIES // max(1, block_rows))))


def _check_blocks(block_rows, m):
    if block_rows is None:
        return min(m, DEFAULT_BLOCK_ROWS)
    return min(m, check_int("block_rows", block_rows, minimum=1))


def causal_tile_rows(idx: np.ndarray, j0: int, j1: int):
    """For sorted query positions ``idx`` and the key tile ``[j0, j1)``: the first row that sees
    the tile (``idx >= j0``) and the rows whose own position lies inside it (they need a mask)."""
    r0 = int(np.searchsorted(idx, j0, side="left"))
    r1 = int(np.searchsorted(idx, j1, side="left"))
    return r0, range(r0, r1)


def weights_pass(G1, beta_rows, E, z, mask_rows, mask_cols, s0: int, s1: int) -> None:
    """Rows ``s0:s1`` of a tile: weights ``E = exp(beta (<y_a, y_j> - 1))``
    (:func:`tile_weights`), the keys after a row's own position zeroed (``mask_rows`` and the
    column of their own position, ``mask_cols``; causal mask), and the row sums added to ``z``."""
    tile_weights(G1[s0:s1], beta_rows[s0:s1], E[s0:s1])
    for r, c in zip(mask_rows, mask_cols, strict=True):
        if s0 <= r < s1:
            E[r, c + 1 :] = 0.0
    z[s0:s1] += E[s0:s1].sum(axis=1)


def tile_weights(G1, beta_rows, out):
    """Unnormalised softmax weights of a tile, ``exp(beta_a (<y_a, y_j> - 1))``, into ``out``.

    ``G1`` holds ``<y_a, y_j> - 1`` (``b x t``), ``beta_rows`` the ``b`` rows' betas."""
    np.multiply(G1, beta_rows[:, None], out=out)
    np.exp(out, out=out)
    return out


def _outputs(X, r, idx, brow, alpha, causal, block_rows, key_block):
    """Outputs ``x_a'`` ``(B, m, d)`` of the sampled rows ``idx`` (sorted) for betas ``brow``
    ``(B, m)``: key-tiled, one Gram tile shared by every beta."""
    B, m = brow.shape
    n, d = X.shape
    out = np.empty((B, m, d))
    t = key_tile(block_rows, n, key_block)
    ebuf = np.empty(block_rows * t)
    obuf = np.empty(block_rows * d)
    threads = blas_threads()
    for a0 in range(0, m, block_rows):
        a1 = min(m, a0 + block_rows)
        row_idx = idx[a0:a1]
        Yb = unit_rows(X, r, row_idx)
        z = np.zeros((B, a1 - a0))
        acc = np.zeros((B, a1 - a0, d))
        kend = int(row_idx[-1]) + 1 if causal else n
        for j0 in range(0, kend, t):
            j1 = min(kend, j0 + t)
            r0, own = causal_tile_rows(row_idx, j0, j1) if causal else (0, range(0))
            Yj = unit_rows(X, r, slice(j0, j1))
            G1 = Yb[r0:] @ Yj.T
            G1 -= 1.0
            E = ebuf[: G1.size].reshape(G1.shape)
            o = obuf[: G1.shape[0] * d].reshape(G1.shape[0], d)
            ol = np.arange(own.start, own.stop) - r0  # rows (in the tile) needing a mask
            oc = row_idx[own.start : own.stop] - j0  # and their own positions' columns
            for k in range(B):
                job = partial(weights_pass, G1, brow[k, a0 + r0 : a1], E, z[k, r0:], ol, oc)
                split_rows(job, E.shape[0], E.shape[1], threads)
                np.matmul(E, Yj, out=o)
                acc[k, r0:] += o
        out[:, a0:a1] = acc / z[:, :, None]
        if alpha:
            out[:, a0:a1] += alpha * X[row_idx][None]
    return out


def sampled_outputs(
    X,
    betas,
    alpha: float = 0.0,
    *,
    rows,
    causal: bool = False,
    block_rows: int | None = None,
    key_block: int | None = None,
    backend=None,
) -> np.ndarray:
    """Exact outputs ``x_a' = sum_j A_aj y_j + alpha x_a`` of some query rows against all their
    keys (docs/long-context.md#the-sampled-lambda), key-tiled (memory ``O(b t)``).

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens.
    betas : array_like, shape (B,) or (B, n)
        Global betas or per-row beta vectors (``docs/realistic-attention.md#causal-mask``).
    alpha : float, optional
        Residual weight, ``alpha >= 0``.
    rows : RowSample or array_like of int
        The query rows (indices are sorted).
    causal : bool, optional
        Query ``a`` sees keys ``j <= a`` only.
    block_rows, key_block : int, optional
        Rows per block and keys per tile (numpy backend).
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    numpy.ndarray
        ``(B, m, d)`` outputs (before the next normalisation), rows in sorted order.
    """
    X, r, alpha = check_tokens(X, alpha)
    n = X.shape[0]
    B = beta_matrix(betas, n)
    sample = resolve_rows(n, rows)
    br = _check_blocks(block_rows, sample.m)
    if key_block is not None:
        check_int("key_block", key_block, minimum=1)
    if uses_jax(backend):
        from attnscale.layer.sampled import angle_ratio_jax as sampled_lambda_jax

        return sampled_lambda_jax.sampled_outputs(
            X, r, sample.rows, B[:, sample.rows], alpha, bool(causal)
        )
    return _outputs(X, r, sample.rows, B[:, sample.rows], alpha, causal, br, key_block)


def pair_ratio_block(Ya, Yb, Ypa, Ypb, self_cols=None):
    """Pair ratios ``(1 - <y_u', y_v'>) / (1 - <y_u, y_v>)`` of a block of rows ``u`` against rows
    ``v`` (docs/paper-a.md#the-angle-ratio-lambda), near pairs exact from differences.

    Pairs whose Gram value gives ``1 - <y_u, y_v> < NEAR_PAIR_TOL`` are recomputed from
    ``||y_u - y_v||^2 / 2`` for input and output; exactly coincident inputs (``0/0``) and the pairs
    listed in ``self_cols`` (a row with itself) are not kept.

    Parameters
    ----------
    Ya, Yb : numpy.ndarray, shapes (b, d) and (m, d)
        Unit input tokens of the block and of all rows.
    Ypa, Ypb : numpy.ndarray, shapes (B, b, d) and (B, m, d)
        Unit outputs, per beta.
    self_cols : numpy.ndarray of int, shape (b,), optional
        Column of each block row in ``Yb`` (its pair with itself), or ``None``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        Ratios ``(B, b, m)`` (0 where not kept), ``keep`` ``(b, m)`` and the near-pair mask
        ``(b, m)``.
    """
    din = 1.0 - Ya @ Yb.T
    selfmask = np.zeros(din.shape, dtype=bool)
    if self_cols is not None:
        selfmask[np.arange(din.shape[0]), self_cols] = True
    near = (din < NEAR_PAIR_TOL) & ~selfmask
    ii, jj = np.nonzero(near)
    if ii.size:
        din[ii, jj] = 0.5 * np.sum((Ya[ii] - Yb[jj]) ** 2, axis=1)
    keep = ~selfmask & (din > 0.0)
    W = np.divide(1.0, din, out=np.zeros_like(din), where=keep)
    H = 1.0 - np.matmul(Ypa, Ypb.transpose(0, 2, 1))
    if ii.size:
        H[:, ii, jj] = 0.5 * np.sum((Ypa[:, ii] - Ypb[:, jj]) ** 2, axis=2)
    H *= W[None]
    return H, keep, near


def angle_ratio_sampled(
    X,
    betas,
    alpha: float = 0.0,
    *,
    rows,
    rng=None,
    strata: int | None = None,
    head: int | None = None,
    causal: bool = False,
    block_rows: int | None = None,
    key_block: int | None = None,
    output_entries: int | None = None,
    backend=None,
) -> SampledLambda:
    """lambda (docs/paper-a.md#the-angle-ratio-lambda) for a grid of betas from ``m`` sampled query
    rows, with its within-draw standard error (docs/long-context.md#the-sampled-lambda).

    Each sampled row's output is exact (all its keys, the dense kernel's normalisation, residual
    and softmax); lambda is estimated by the U-statistic of the sampled pairs, exactly unbiased
    for the draw's lambda (the value :func:`attnscale.layer.dense.attention.angle_ratio_grid` gives),
    with the unbiased estimate of its variance under the row sampling
    (docs/long-context.md#standard-error-of-the-sampled-lambda). With every row sampled it is the
    dense value (to rounding) with ``se = 0``. The SE is the within-draw error only: over token
    draws, the spread of the estimates includes it (docs/long-context.md#within-draw-and-between-draw-variance).

    Cost per beta: ``2 m n d`` flops (causal: about half) and ``m n`` exps, plus ``2 m^2 d`` for the
    pairs; once for all betas: the Gram tiles, ``2 m n d``. Memory ``O(b t + B m d)``.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens (``n >= 2``, non-zero finite rows).
    betas : array_like, shape (B,) or (B, n)
        Global betas, or one beta per query row (``docs/realistic-attention.md#causal-mask``);
        every entry ``>= 0``.
    alpha : float, optional
        Residual weight, ``alpha >= 0``.
    rows : int, array_like of int or RowSample
        Number of rows ``m`` to draw from ``rng`` (``2 <= m <= n``; ``m = n``: all rows), explicit
        row indices, or a :class:`attnscale.layer.sampled.rows.RowSample`.
    rng : numpy.random.Generator, optional
        Source of the row draw (the job's :func:`attnscale.core.seeding.job_rng`); needed when
        ``rows`` is a number smaller than ``n``.
    strata, head : int, optional
        Position strata of the draw and leading positions taken in full
        (:func:`attnscale.layer.sampled.rows.sample_rows`; default
        :func:`attnscale.layer.sampled.rows.default_design`: 1 and 0, causal 8 and 8 for
        ``m >= 128``); used only when ``rows`` is a number.
    causal : bool, optional
        Query ``i`` sees keys ``j <= i`` only (``docs/realistic-attention.md#causal-mask``).
    block_rows, key_block : int, optional
        Sampled rows per block (default 256) and keys per tile (default ``2^18 / block_rows``).
    output_entries : int, optional
        Budget, in float64 entries, for the outputs of one group of betas (default ``2^25``).
    backend : {"numpy", "jax"}, optional
        Kernel backend of the outputs (the heavy part, :mod:`attnscale.layer.sampled.angle_ratio_jax`);
        the pair statistics are the same numpy code for both. ``None`` (default) is
        :func:`attnscale.backend.default` (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    SampledLambda
        ``estimate``, ``se`` (each ``(B,)``), ``m``, the diagnostics ``n_pairs``,
        ``n_near_pairs``, ``n_excluded_pairs`` (among the sampled pairs) and the row sample.
    """
    X, r, alpha = check_tokens(X, alpha)
    n, d = X.shape
    Bm = beta_matrix(betas, n)
    br = _check_blocks(block_rows, n)
    if key_block is not None:
        check_int("key_block", key_block, minimum=1)
    budget = (
        DEFAULT_OUTPUT_ENTRIES
        if output_entries is None
        else check_int("output_entries", output_entries, minimum=1)
    )
    on_jax = uses_jax(backend)
    sample = resolve_rows(n, rows, rng, strata, head, causal)
    idx, m = sample.rows, sample.m
    br = min(br, m)
    outputs = _outputs_of(X, r, idx, alpha, causal, br, key_block, on_jax)
    Ys = unit_rows(X, r, idx)
    group = int(max(1, min(Bm.shape[0], budget // (m * d))))
    ests, ses = [], []
    for g0 in range(0, Bm.shape[0], group):
        Yp = outputs(Bm[g0 : g0 + group][:, idx])
        Yp /= np.linalg.norm(Yp, axis=2, keepdims=True)
        est, se, n_near, n_excl = pair_statistics(Ys, Yp, sample, br)
        ests.append(est)
        ses.append(se)
    return SampledLambda(
        np.concatenate(ests), np.concatenate(ses), m, m * (m - 1) // 2, n_near, n_excl, sample
    )


def _outputs_of(X, r, idx, alpha, causal, br, key_block, on_jax: bool):
    """The function ``beta rows -> outputs of the sampled rows`` of the chosen backend."""
    if on_jax:
        from attnscale.layer.sampled import angle_ratio_jax as sampled_lambda_jax

        def outputs(brow):
            return sampled_lambda_jax.sampled_outputs(X, r, idx, brow, alpha, bool(causal))
    else:

        def outputs(brow):
            return _outputs(X, r, idx, brow, alpha, causal, br, key_block)

    return outputs


def pair_statistics(Ys, Yp, sample: RowSample, block_rows: int):
    """lambda's U-statistic over the pairs of the sampled rows and its within-draw standard error
    (docs/long-context.md#standard-error-of-the-sampled-lambda), from their unit inputs ``Ys``
    ``(m, d)`` and unit outputs ``Yp`` ``(B, m, d)``, in blocks of ``block_rows`` rows (no
    ``m x m`` matrix per beta is kept).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, int, int)
        Estimate and SE ``(B,)``, and the near and excluded pairs among the sampled pairs.
    """
    m = sample.m
    parts = []
    n_near = n_excl = 0
    for a0 in range(0, m, block_rows):
        a1 = min(m, a0 + block_rows)
        units = np.arange(a0, a1)
        H, keep, near = pair_ratio_block(Ys[a0:a1], Ys, Yp[:, a0:a1], Yp, units)
        parts.append(pair_block_sums(H, keep, units, sample))
        upper = units[:, None] < np.arange(m)[None, :]
        n_near += int((near & upper).sum())
        n_excl += int((near & upper & ~keep).sum())
    sums = {key: np.concatenate([p[key] for p in parts], axis=-2) for key in ("h", "h2", "n")}
    est, se = pair_estimate_from_sums(sums, sample)
    return est, se, n_near, n_excl
