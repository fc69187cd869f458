"""Causal (and row-scaled) attention: query ``i`` sees keys ``j <= i``, row ``i`` uses ``beta_i``.

Implements ``docs/realistic-attention.md#causal-mask``. Conventions as in
:mod:`attnscale.layer.attention` (pre-LN ``y_i = x_i / ||x_i||``, scores ``beta_i <y_i, y_j>``,
``x_i' = sum_j A_ij y_j + alpha x_i``), positions are 1-indexed in the docs and 0-indexed in code:
row ``i`` (0-based) sees ``i + 1`` keys. Row 0 sees a single key, so ``A_00 = 1`` for every
``beta_0`` (with ``beta_i = gamma ln i`` the first row has ``beta = gamma ln 1 = 0``).

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
row slices in as many threads as BLAS may use at the call (``threadpoolctl``; numpy releases the
GIL in these loops), so they do not leave all but one core idle between multi-threaded GEMMs. Each
row is computed by the same operations whatever the split, so results do not depend on the
number of threads (bit for bit).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from attnscale.core.validation import check_int, check_layer_inputs, check_matrix
from attnscale.layer.kernel_args import beta_grid, row_betas

__all__ = [
    "row_betas",
    "beta_grid",
    "causal_softmax",
    "forward_rows",
    "self_weights",
    "query_block",
    "pair_ratio_mean",
    "angle_ratio_grid_rows",
]

#: Pairs with ``1 - <y_i, y_j>`` below this are recomputed exactly (as in ``attention``).
NEAR_PAIR_TOL = 1e-6

#: Default row-block size: small against n (the diagonal blocks waste ``b / n`` of the causal
#: work) but large enough for efficient GEMMs; capped so a block is at most 2^24 entries.
DEFAULT_CAUSAL_BLOCK = 256
BLOCK_ENTRIES = 16 * 2**20
#: Budget (float64 entries) for the outputs of one group of betas in the lambda grid.
OUTPUT_ENTRIES = 64 * 2**20


#: Blocks with fewer entries than this run their element-wise passes in one thread.
THREADED_ENTRIES = 2**16
_POOL: dict[int, ThreadPoolExecutor] = {}  # worker count -> pool, created on first use


def _blas_threads() -> int:
    """Threads BLAS may use at this moment (a job limited to one thread stays on one core)."""
    from threadpoolctl import threadpool_info

    counts = [i.get("num_threads", 1) for i in threadpool_info() if i.get("user_api") == "blas"]
    return max(1, min(counts, default=1))


def _row_slices(fn, rows: int, cols: int, threads: int) -> None:
    """Call ``fn(r0, r1)`` on ``threads`` consecutive row slices of a ``rows x cols`` block, in a
    shared thread pool (one slice, in this thread, for small blocks or one thread)."""
    if threads <= 1 or rows < 2 * threads or rows * cols < THREADED_ENTRIES:
        fn(0, rows)
        return
    if threads not in _POOL:
        _POOL[threads] = ThreadPoolExecutor(threads, thread_name_prefix="attnscale-rows")
    cuts = np.linspace(0, rows, threads + 1).astype(int)
    jobs = [_POOL[threads].submit(fn, int(a), int(b)) for a, b in zip(cuts, cuts[1:], strict=False)]
    for job in jobs:
        job.result()


def _lower(m: int) -> np.ndarray:
    """``m x m`` float 0/1 mask of ``j <= i`` (multiplying by 1.0 leaves a weight unchanged)."""
    return np.tri(m, dtype=float)


def causal_block_rows(n: int, block_rows: int | None = None) -> int:
    """Rows per block: ``block_rows`` if given, else ``min(256, n // 8)`` (at least 32), capped so
    that ``block x n`` float64 entries fit 128 MiB."""
    if block_rows is not None:
        return check_int("block_rows", block_rows, minimum=1)
    b = min(DEFAULT_CAUSAL_BLOCK, max(32, n // 8))
    return int(max(1, min(n, b, BLOCK_ENTRIES // n)))


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
    T = np.where(lower, T, -np.inf)
    E = np.exp(T - T.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def _prepare(X, alpha):
    X, r, _, alpha = check_layer_inputs(X, None, alpha)
    return X, X / r[:, None], alpha


class _Block:
    """Shifted scores of rows ``[s, e)`` against their visible keys, computed once and reused by
    every beta: ``M = G - rowmax_valid(G)`` and (optionally) the pair weights."""

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
        self.lower = _lower(e - s) if causal else None
        self.diag_idx = (np.arange(e - s), np.arange(s, e))

    def weights(self, beta_rows, out):
        """Unnormalised weights ``E`` (in ``out``) and row sums ``z`` for rows' betas."""
        s, e = self.s, self.e
        z = np.empty(e - s)

        def rows(r0, r1):
            o = out[r0:r1]
            np.multiply(self.M[r0:r1], beta_rows[s + r0 : s + r1, None], out=o)
            np.exp(o, out=o)
            if self.causal:
                o[:, s:e] *= self.lower[r0:r1]
            z[r0:r1] = o.sum(axis=1)

        _row_slices(rows, e - s, out.shape[1], self.threads)
        return out, z


def _blocks(n, block_rows):
    return [(s, min(n, s + block_rows)) for s in range(0, n, block_rows)]


def forward_rows(X, beta, alpha: float = 0.0, *, causal: bool = True, block_rows=None,
                 return_self_weight: bool = False, backend=None):  # fmt: skip
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
    from attnscale.layer.dispatch import jax_kernel

    if (kernel := jax_kernel(backend, "forward")) is not None:
        return kernel(
            X,
            beta,
            alpha,
            causal=causal,
            block_rows=block_rows,
            return_self_weight=return_self_weight,
        )
    X, Y, alpha = _prepare(X, alpha)
    n = X.shape[0]
    b = row_betas(beta, n)
    br = causal_block_rows(n, block_rows)
    out = np.empty_like(X)
    aii = np.empty(n)
    flat = np.empty(br * n)
    z_all = np.empty(n)
    lower = _lower(br) if causal else None
    threads = _blas_threads() if br * n >= THREADED_ENTRIES else 1
    for s, e in _blocks(n, br):
        kend = e if causal else n
        # scores beta_i <y_i, y_j> in one GEMM (beta folded into the query rows), shifted by
        # the row maximum, which is the diagonal beta_i <y_i, y_i> = beta_i (Cauchy-Schwarz; the
        # rounding of <y_i, y_i> = 1 moves the shift by ~1e-16 beta_i, harmless)
        E = flat[: (e - s) * kend].reshape(e - s, kend)
        np.matmul(Y[s:e] * b[s:e, None], Y[:kend].T, out=E)
        z = z_all[s:e]

        def rows(r0, r1, E=E, s=s, e=e, z=z):
            Er = E[r0:r1]
            Er -= b[s + r0 : s + r1, None]
            np.exp(Er, out=Er)
            if causal:
                Er[:, s:e] *= lower[r0:r1, : e - s]
            z[r0:r1] = Er.sum(axis=1)

        _row_slices(rows, e - s, kend, threads)
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
        Global betas or per-row beta vectors (see :func:`beta_grid`).
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
    from attnscale.layer.dispatch import jax_kernel

    if (kernel := jax_kernel(backend, "self_weights")) is not None:
        return kernel(X, betas, causal=causal, block_rows=block_rows)
    X, Y, _ = _prepare(X, 0.0)
    n = X.shape[0]
    B = beta_grid(betas, n)
    br = causal_block_rows(n, block_rows)
    out = np.empty(B.shape)
    buf = np.empty((br, n))
    threads = _blas_threads() if br * n >= THREADED_ENTRIES else 1
    for s, e in _blocks(n, br):
        blk = _Block(Y, s, e, causal, threads)
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
    from attnscale.layer.dispatch import jax_kernel

    if (kernel := jax_kernel(backend, "query_block")) is not None:
        return kernel(X, betas, start, stop, causal=causal)
    X, Y, _ = _prepare(X, 0.0)
    n, d = X.shape
    B = beta_grid(betas, n)
    stop = check_int("stop", stop, minimum=1, maximum=n)
    start = check_int("start", start, minimum=0, maximum=stop - 1)
    threads = _blas_threads() if (stop - start) * n >= THREADED_ENTRIES else 1
    blk = _Block(Y, start, stop, causal, threads)
    buf = np.empty((stop - start, blk.kend))
    sw = np.empty((B.shape[0], stop - start))
    outs = np.empty((B.shape[0], stop - start, d))
    for k in range(B.shape[0]):
        E, z = blk.weights(B[k], buf)
        sw[k] = E[blk.diag_idx] / z
        np.matmul(E, Y[: blk.kend], out=outs[k])
        outs[k] /= z[:, None]
    return {"self_weight": sw, "outputs": outs}


def pair_ratio_mean(Y: np.ndarray, Yp: np.ndarray) -> float:
    """Mean over pairs ``i < j`` of ``(1 - <y'_i, y'_j>) / (1 - <y_i, y_j>)`` for small sets (e.g.
    one query block); near pairs exact from differences, coincident pairs left out."""
    Y = np.asarray(Y, dtype=float)
    Yp = np.asarray(Yp, dtype=float)
    Y = Y / np.linalg.norm(Y, axis=1, keepdims=True)
    Yp = Yp / np.linalg.norm(Yp, axis=1, keepdims=True)
    iu, ju = np.triu_indices(Y.shape[0], k=1)
    din = 1.0 - (Y @ Y.T)[iu, ju]
    dout = 1.0 - (Yp @ Yp.T)[iu, ju]
    near = din < NEAR_PAIR_TOL
    if np.any(near):
        din[near] = 0.5 * np.sum((Y[iu[near]] - Y[ju[near]]) ** 2, axis=1)
        dout[near] = 0.5 * np.sum((Yp[iu[near]] - Yp[ju[near]]) ** 2, axis=1)
    keep = din > 0.0
    return float(np.mean(dout[keep] / din[keep])) if np.any(keep) else float("nan")


def angle_ratio_grid_rows(X, betas, alpha: float = 0.0, *, causal: bool = True, block_rows=None,
                          output_entries=None, return_diagnostics: bool = False, backend=None):  # fmt: skip
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
    from attnscale.layer.dispatch import jax_kernel

    if (kernel := jax_kernel(backend, "angle_ratio_grid")) is not None:
        return kernel(
            X,
            betas,
            alpha,
            causal=causal,
            block_rows=block_rows,
            output_entries=output_entries,
            return_diagnostics=return_diagnostics,
        )
    X, Y, alpha = _prepare(X, alpha)
    n, d = X.shape
    B = beta_grid(betas, n)
    m = B.shape[0]
    br = causal_block_rows(n, block_rows)
    blocks = _blocks(n, br)
    budget = OUTPUT_ENTRIES if output_entries is None else check_int(
        "output_entries", output_entries, minimum=1)  # fmt: skip
    group = int(max(1, min(m, budget // (n * d))))
    lam = np.empty(m)
    buf = np.empty((br, n))
    obuf = np.empty((br, d))
    n_near = n_excl = 0
    total_pairs = n * (n - 1) // 2
    threads = _blas_threads() if br * n >= THREADED_ENTRIES else 1
    for g0 in range(0, m, group):
        Bg = B[g0 : g0 + group]
        G_ = Bg.shape[0]
        Yc = np.empty((n, G_, d))
        Yflat = Yc.reshape(n, G_ * d)
        num = np.zeros(G_)
        near_i, near_j = [], []
        for s, e in blocks:
            blk = _Block(Y, s, e, causal, threads)
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
        if ii.size:
            din = 0.5 * np.sum((Y[ii] - Y[jj]) ** 2, axis=1)
            keep = din > 0.0
            n_near, n_excl = int(ii.size), int((~keep).sum())
            ii, jj, din = ii[keep], jj[keep], din[keep]
            dout = 0.5 * np.sum((Yc[ii] - Yc[jj]) ** 2, axis=2)
            num += (dout / din[:, None]).sum(axis=0)
            n_pairs += int(ii.size)
        lam[g0 : g0 + G_] = num / n_pairs if n_pairs > 0 else np.nan
    if return_diagnostics:
        return lam, {"n_pairs": total_pairs, "n_near_pairs": n_near, "n_excluded_pairs": n_excl}
    return lam
