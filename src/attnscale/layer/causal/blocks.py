"""Row blocks of the causal (and row-scaled) kernels (``docs/realistic-attention.md#causal-mask``):
block sizes, the shifted scores of a block, and the threads of its element-wise passes.

How the kernels stay GEMM-bound (no per-row Python loop)
--------------------------------------------------------
Rows are processed in blocks ``[s, e)``. Every row of a block sees a prefix of the keys, ``j < e``,
so one GEMM ``Y[s:e] Y[:e]^T`` gives the block's scores; only the ``(e - s) x (e - s)`` diagonal
sub-block needs a mask (its strict upper triangle is zeroed after the ``exp``, by a product with
a 0/1 lower-triangular matrix). The work is
``sum_blocks (e - s) e d ~ n^2 d / 2``, half of the dense product, plus ``n b d / 2`` wasted in the
diagonal blocks (``b`` = block rows). The softmax subtracts each row's maximum over its *valid*
keys. The same kernels accept ``causal=False`` (the block then sees all ``n`` keys), which is how
row-scaled bidirectional attention is computed.

The element-wise passes between the two GEMMs of a block (scale, ``exp``, mask, row sums) run on
row slices in as many threads as BLAS may use (:mod:`attnscale.layer._threads`, shared with the
sampled kernels); results do not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np

from attnscale.core.validation import check_int
from attnscale.layer._threads import split_rows

__all__ = [
    "DEFAULT_CAUSAL_BLOCK",
    "BLOCK_ENTRIES",
    "lower_mask",
    "causal_block_rows",
    "row_blocks",
    "RowBlock",
]

#: Default row-block size: small against n (the diagonal blocks waste ``b / n`` of the causal
#: work) but large enough for efficient GEMMs; capped so a block is at most 2^24 entries.
DEFAULT_CAUSAL_BLOCK = 256
BLOCK_ENTRIES = 16 * 2**20


def lower_mask(m: int) -> np.ndarray:
    """``m x m`` float 0/1 mask of ``j <= i`` (multiplying by 1.0 leaves a weight unchanged)."""
    return np.tri(m, dtype=float)


def causal_block_rows(n: int, block_rows: int | None = None) -> int:
    """Rows per block: ``block_rows`` if given, else ``min(256, n // 8)`` (at least 32), capped so
    that ``block x n`` float64 entries fit 128 MiB."""
    if block_rows is not None:
        return check_int("block_rows", block_rows, minimum=1)
    b = min(DEFAULT_CAUSAL_BLOCK, max(32, n // 8))
    return int(max(1, min(n, b, BLOCK_ENTRIES // n)))


def row_blocks(n: int, block_rows: int) -> list[tuple[int, int]]:
    """The blocks ``[s, e)`` of ``block_rows`` rows (the last one shorter) covering ``n`` rows."""
    return [(s, min(n, s + block_rows)) for s in range(0, n, block_rows)]


class RowBlock:
    """Shifted scores of rows ``[s, e)`` against their visible keys, computed once and reused by
    every beta: ``M = G - rowmax_valid(G)``.

    Parameters
    ----------
    Y : numpy.ndarray, shape (n, d)
        Unit rows.
    s, e : int
        The block's rows.
    causal : bool
        Row ``i`` sees keys ``j <= i`` (else all ``n``).
    threads : int, optional
        Threads of the element-wise passes (:func:`attnscale.layer._threads.split_rows`).
    """

    def __init__(self, Y, s, e, causal, threads=1):
        n = Y.shape[0]
        self.threads = threads
        self.s, self.e = s, e
        self.kend = e if causal else n
        self.causal = causal
        M = Y[s:e] @ Y[: self.kend].T  # Gram rows, shifted in place below
        if causal:
            self.upper = np.triu(np.ones((e - s, e - s), dtype=bool), k=1)
            M[:, s:e][self.upper] = -np.inf  # masked keys do not count for the row maximum
        self.rowmax = M.max(axis=1, keepdims=True)
        M -= self.rowmax
        if causal:
            M[:, s:e][self.upper] = 0.0  # finite placeholder; zeroed after the exp
        self.M = M
        self.lower = lower_mask(e - s) if causal else None
        self.diag_idx = (np.arange(e - s), np.arange(s, e))

    def weights(self, beta_rows, out):
        """Unnormalised weights ``E`` (in ``out``) and row sums ``z`` for the rows' betas
        ``beta_rows`` (length ``n``)."""
        s, e = self.s, self.e
        z = np.empty(e - s)

        def weigh_rows(r0, r1):
            o = out[r0:r1]
            np.multiply(self.M[r0:r1], beta_rows[s + r0 : s + r1, None], out=o)
            np.exp(o, out=o)
            if self.causal:
                o[:, s:e] *= self.lower[r0:r1]
            z[r0:r1] = o.sum(axis=1)

        split_rows(weigh_rows, e - s, out.shape[1], self.threads)
        return out, z
