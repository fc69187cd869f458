"""One attention layer on pre-LN tokens and the angle ratio lambda (``docs/paper-a.md#the-model``,
``docs/paper-a.md#the-angle-ratio-lambda``).

Conventions
-----------
* ``y_i = x_i / ||x_i||`` (pre-layer-norm), scores ``beta <y_i, y_j>``, ``A = row-softmax``.
* ``x_i' = sum_j A_ij y_j + alpha x_i`` and ``y_i' = x_i' / ||x_i'||``.
* The softmax subtracts each row's maximum score before exponentiating, so it stays finite for
  any finite ``beta`` (tested up to ``1e6``).

How lambda treats (near-)coincident input pairs
-----------------------------------------------
``lambda`` averages ``(1 - <y_i', y_j'>) / (1 - <y_i, y_j>)`` over pairs. Through a Gram matrix,
``1 - <y_i, y_j>`` loses all relative accuracy when it is below ~1e-8 (this happens at d = 2,
where n tokens crowd a circle). Pairs whose Gram value gives ``1 - <y_i, y_j> < NEAR_PAIR_TOL``
are therefore recomputed exactly from differences, ``1 - <u, v> = ||u - v||^2 / 2``, for both input
and output (:mod:`attnscale.layer.dense.near_pairs`, shared by every lambda kernel and both backends).
Pairs with exactly coincident inputs (0/0) are left out of the mean; their number is reported by
:func:`angle_ratio_grid` with ``return_diagnostics=True``.
"""

from __future__ import annotations

import numpy as np

from attnscale.backend import uses_jax
from attnscale.core.softmax import softmax_rows
from attnscale.core.validation import (
    check_layer_inputs,
    check_vector,
)
from attnscale.layer.dense.kernel_args import RowPass, check_block, normalise
from attnscale.layer.dense.near_pairs import NEAR_PAIR_TOL, near_pair_sums, pair_ratio_mean_exact

__all__ = [
    "NEAR_PAIR_TOL",
    "normalise",
    "softmax_rows",
    "attention_weights",
    "forward",
    "angle_ratio",
    "angle_ratio_grid",
]

#: Default budget for the outputs of one group of betas, in float64 entries: 16 MiB when the
#: n x n matrices are kept (smaller groups stay cache- and TLB-friendly: at n = 1024, d = 512,
#: 49 betas, one thread, 3.00 s against 3.23 s with 64 MiB, and 3.0-3.3 s against 3.6-3.8 s
#: when two such jobs share the machine; two threads: 51 against 40 GFLOP/s), 512 MiB in
#: row-block mode (each group recomputes the Gram rows, so larger groups amortise them).
DEFAULT_OUTPUT_ENTRIES = 2 * 2**20
DEFAULT_OUTPUT_ENTRIES_BLOCKED = 64 * 2**20

#: Default budget for one row block of an ``n x n`` matrix, in float64 entries (128 MiB):
#: up to n = 4096 the whole matrix is one block; beyond, blocks of ``2^24 // n`` rows.
DEFAULT_BLOCK_ENTRIES = 16 * 2**20


def default_block_rows(n: int, block_entries: int = DEFAULT_BLOCK_ENTRIES) -> int:
    """Rows per block so that a ``rows x n`` float64 matrix fits ``block_entries``."""
    return int(max(1, min(n, block_entries // n)))


def attention_weights(X: np.ndarray, beta: float) -> np.ndarray:
    """The ``n x n`` attention matrix ``A = row-softmax(beta Y Y^T)`` of ``docs/paper-a.md#the-model``."""
    X, _, beta, _ = check_layer_inputs(X, beta)
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    return softmax_rows(beta * (Y @ Y.T))


def forward(
    X: np.ndarray, beta, alpha: float = 0.0, *, causal: bool = False, backend=None
) -> np.ndarray:
    """One attention layer (``docs/paper-a.md#the-model``): ``x_i' = sum_j A_ij y_j + alpha x_i``.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens (``n >= 2``, non-zero finite rows).
    beta : float or array_like, shape (n,)
        Inverse temperature, ``beta >= 0`` (Paper A uses ``beta = gamma log n``); a length-n
        vector scales row ``i`` by ``beta_i`` (``docs/realistic-attention.md#causal-mask``).
    alpha : float, optional
        Residual weight, ``alpha >= 0``.
    causal : bool, optional
        Query ``i`` attends to keys ``j <= i`` only (row blocks, :mod:`attnscale.layer.causal.attention`). With
        ``causal=False`` and a scalar ``beta`` the original dense path below runs unchanged.
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    numpy.ndarray
        ``(n, d)`` outputs ``X'`` (before the next normalisation).
    """
    if causal or np.ndim(beta) != 0:
        from attnscale.layer.causal.attention import forward_rows

        return forward_rows(X, beta, alpha, causal=bool(causal), backend=backend)
    X, r, beta, alpha = check_layer_inputs(X, beta, alpha)
    if uses_jax(backend):
        from attnscale.layer.dense import attention_jax

        return attention_jax.forward(X, r, np.full(X.shape[0], beta), alpha)
    Y = X / r[:, None]
    A = softmax_rows(beta * (Y @ Y.T))
    return A @ Y + alpha * X


def angle_ratio(X: np.ndarray, beta: float, alpha: float = 0.0) -> float:
    """The angle ratio lambda (``docs/paper-a.md#the-angle-ratio-lambda``) for one ``beta`` (reference implementation).

    ``lambda = 2 / (n (n-1)) sum_{i<j} (1 - <y_i', y_j'>) / (1 - <y_i, y_j>)``.
    Near-coincident pairs are handled as described in the module docstring; this function builds
    the ``n x n`` matrices explicitly and is meant for clarity and small ``n``. Use
    :func:`angle_ratio_grid` for many ``beta`` or large ``n``.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens.
    beta : float
        Inverse temperature, ``beta >= 0``.
    alpha : float, optional
        Residual weight, ``alpha >= 0``.

    Returns
    -------
    float
        lambda (``nan`` if every pair is coincident).
    """
    X, r, beta, alpha = check_layer_inputs(X, beta, alpha)
    Y = X / r[:, None]
    Xp = forward(X, beta, alpha)
    Yp = Xp / np.linalg.norm(Xp, axis=1, keepdims=True)
    iu, ju = np.triu_indices(X.shape[0], k=1)
    din = 1.0 - np.einsum("kd,kd->k", Y[iu], Y[ju])
    dout = 1.0 - np.einsum("kd,kd->k", Yp[iu], Yp[ju])
    return pair_ratio_mean_exact(Y, Yp, iu, ju, din, dout)


def angle_ratio_grid(
    X: np.ndarray,
    betas,
    alpha: float = 0.0,
    *,
    block_rows: int | None = None,
    output_entries: int | None = None,
    return_diagnostics: bool = False,
    causal: bool = False,
    backend=None,
    observables=(),
):
    """lambda (``docs/paper-a.md#the-angle-ratio-lambda``) for many ``beta`` at once, sharing all beta-free work.

    Computed once (per row block): the normalisation ``Y``, the input Gram rows, the pair
    weights ``W_ij = 1 / (1 - <y_i, y_j>)`` and the near-pair list. Per ``beta`` the cost is one
    ``exp`` of the score block and two large GEMMs, ``A Y`` (``2 n^2 d`` flops) and the share of
    ``W [Y'_1 ... Y'_B]`` (``2 n^2 d``), i.e. ``4 n^2 d`` flops; the outputs of a group of betas
    are laid out side by side as an ``n x (B d)`` matrix so that the second product is one GEMM.
    The exp runs in place in a reusable buffer (fresh allocations page-fault and cost more than
    the exp itself).

    With ``block_rows < n`` the work proceeds in row blocks and memory is
    ``O(block_rows x n + n d B)``: no ``n x n`` matrix is formed (Gram rows are then recomputed
    per group of betas). Uses
    ``sum_{i != j} W_ij (1 - <y_i', y_j'>) = sum W - sum_i <y_i', (W Y')_i>``.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens.
    betas : array_like, shape (m,)
        Inverse temperatures, each ``>= 0``.
    alpha : float, optional
        Residual weight, ``alpha >= 0``.
    block_rows : int, optional
        Rows per block (default :func:`default_block_rows`: one block, with the ``n x n``
        matrices kept across groups, up to ``n = 4096``; row blocks beyond).
    output_entries : int, optional
        Budget, in float64 entries, for the outputs ``Y'`` of one group of betas
        (``B = max(1, output_entries // (n d))`` betas per group); default
        :data:`DEFAULT_OUTPUT_ENTRIES` with one block, :data:`DEFAULT_OUTPUT_ENTRIES_BLOCKED`
        with row blocks.
    return_diagnostics : bool, optional
        Also return a dict with ``n_pairs``, ``n_near_pairs``, ``n_excluded_pairs``.
    causal : bool, optional
        Causal mask (query ``i`` sees keys ``j <= i``); then, or when ``betas`` has shape
        ``(m, n)`` (one beta per query row), the fused row-block kernel
        :func:`attnscale.layer.causal.angle_ratio.angle_ratio_grid_rows` runs
        (``docs/realistic-attention.md#causal-mask``). lambda keeps its definition: the mean over
        all pairs of output tokens.
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).
    observables : sequence of Observable, optional
        Observables of the registry with a per-row accumulator (``name`` and ``row``,
        :data:`attnscale.layer.observables.REGISTRY`) to average over the rows in the same pass
        (docs/pipeline.md#the-observable-registry); returned in the diagnostics under
        ``"observables"``, ``{name: (m,) array}``. The numpy dense kernel only: on the other
        routes (causal or per-row betas, the JAX twin) they are ``nan``, with a warning.

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, dict)
        ``(m,)`` array of lambda, in the order of ``betas``.
    """
    row_obs = list(observables)
    if row_obs and (causal or np.ndim(betas) == 2 or uses_jax(backend)):
        kw = dict(block_rows=block_rows, output_entries=output_entries, causal=causal)
        return _without_accumulators(X, betas, alpha, row_obs, return_diagnostics, backend, kw)
    if causal or np.ndim(betas) == 2:
        from attnscale.layer.causal.angle_ratio import angle_ratio_grid_rows

        return angle_ratio_grid_rows(
            X,
            betas,
            alpha,
            causal=bool(causal),
            block_rows=block_rows,
            output_entries=output_entries,
            return_diagnostics=return_diagnostics,
            backend=backend,
        )
    X, r, _, alpha = check_layer_inputs(X, None, alpha)
    betas = check_vector("betas", betas, low=0.0)
    block_rows = check_block("block_rows", block_rows)
    output_entries = check_block("output_entries", output_entries)
    if uses_jax(backend):
        from attnscale.layer.dense import attention_jax

        return attention_jax.angle_ratio_grid(
            X,
            r,
            betas,
            alpha,
            block_rows=block_rows,
            output_entries=output_entries,
            return_diagnostics=return_diagnostics,
        )
    return _grid_numpy(X, r, betas, alpha, block_rows, output_entries, return_diagnostics, row_obs)


def _without_accumulators(X, betas, alpha, row_obs, return_diagnostics, backend, kw):
    """:func:`angle_ratio_grid` on a route without the row observables' accumulators (causal,
    per-row betas, JAX): lambda as there, the observables ``nan``, with a warning."""
    import warnings

    warnings.warn(
        f"observables {[o.name for o in row_obs]} have no accumulator on this route of "
        "angle_ratio_grid (causal, per-row betas or JAX): nan",
        stacklevel=3,
    )
    lam, diag = angle_ratio_grid(X, betas, alpha, return_diagnostics=True, backend=backend, **kw)
    nan = {o.name: np.full(np.shape(betas)[0], np.nan) for o in row_obs}
    return (lam, {**diag, "observables": nan}) if return_diagnostics else lam


def _grid_numpy(X, r, betas, alpha, block_rows, output_entries, return_diagnostics, row_obs):
    """The numpy kernel of :func:`angle_ratio_grid` (validated arguments; its docstring)."""
    n, d = X.shape
    m = betas.size
    Y = X / r[:, None]
    block_rows = default_block_rows(n) if block_rows is None else min(n, block_rows)
    blocks = [(s, min(n, s + block_rows)) for s in range(0, n, block_rows)]
    if output_entries is None:
        output_entries = (
            DEFAULT_OUTPUT_ENTRIES if len(blocks) == 1 else DEFAULT_OUTPUT_ENTRIES_BLOCKED
        )
    group = int(max(1, min(m, output_entries // (n * d))))
    cache = {} if len(blocks) == 1 else None  # one block: keep its Gram-derived matrices

    def block_mats(start, stop):
        if cache is not None and cache:
            return cache["M"], cache["W"], cache["near"], cache["gmax"]
        G = Y[start:stop] @ Y.T  # (b, n)
        gmax = G.max(axis=1, keepdims=True)
        M = G - gmax  # shifted scores / beta (row max 0)
        D = 1.0 - G
        row_idx = np.arange(start, stop)
        D[row_idx - start, row_idx] = np.inf  # diagonal: weight 0
        near = np.nonzero(D < NEAR_PAIR_TOL)
        D[near] = np.inf  # near pairs are handled exactly, outside the GEMM
        np.divide(1.0, D, out=D)
        out = (M, D, (near[0] + start, near[1]), gmax[:, 0])
        if cache is not None:
            cache.update(M=M, W=D, near=out[2], gmax=out[3])
        return out

    lam = np.empty(m)
    obs_sums = {o.name: np.zeros(m) for o in row_obs}  # the row observables' sums over rows
    ebuf = np.empty((block_rows, n))
    obuf = np.empty((block_rows, d))
    n_pairs = n_near = n_excl = 0
    for g0 in range(0, m, group):
        bs = betas[g0 : g0 + group]
        B = bs.size
        Yc = np.empty((n, B, d))  # outputs, layout (token, beta, coordinate)
        # ---- pass 1: Y'_k = normalise(softmax(beta_k M) Y + alpha X) ----
        for start, stop in blocks:
            M, _, _, gmax = block_mats(start, stop)
            E = ebuf[: stop - start]
            for k, beta in enumerate(bs):
                np.multiply(M, beta, out=E)
                np.exp(E, out=E)
                z = E.sum(axis=1)  # softmax denominators (>= 1)
                # contiguous GEMM output, then one copy: writing the GEMM straight into the
                # (token, beta, coordinate) layout strides its rows by B*d*8 bytes, a power of
                # two for the usual d, and ran ~1.5x slower (cache-set conflicts)
                o = obuf[: stop - start]
                np.matmul(E, Y, out=o)
                o /= z[:, None]
                if row_obs:
                    _row_sums(obs_sums, row_obs, E, z, o, Y, gmax, beta, start, stop, g0 + k)
                if alpha:
                    o += alpha * X[start:stop]
                Yc[start:stop, k, :] = o
        Yc /= np.sqrt(np.einsum("nkd,nkd->nk", Yc, Yc))[:, :, None]
        # ---- pass 2: sum_ij W_ij (1 - <y_i', y_j'>) for every beta of the group ----
        num = np.zeros(B)
        ws = 0.0
        n_pairs = 0
        near_i, near_j = [], []
        Yflat = Yc.reshape(n, B * d)
        for start, stop in blocks:
            _, W, (ii, jj), _ = block_mats(start, stop)
            ws += W.sum()
            n_pairs += (stop - start) * (n - 1) - ii.size
            near_i.append(ii)
            near_j.append(jj)
            WY = (W @ Yflat).reshape(stop - start, B, d)
            num -= np.einsum("nkd,nkd->k", WY, Yc[start:stop])
        num += ws
        ii = np.concatenate(near_i)
        jj = np.concatenate(near_j)
        if ii.size:  # both orders (i, j) and (j, i) of each near pair
            sums, kept, excluded = near_pair_sums(Y, Yc, ii, jj)
            n_near = (kept + excluded) // 2
            n_excl = excluded // 2
            num += sums
            n_pairs += kept
        lam[g0 : g0 + B] = num / n_pairs if n_pairs > 0 else np.nan
    if return_diagnostics:
        diag = {"n_pairs": n * (n - 1) // 2, "n_near_pairs": n_near, "n_excluded_pairs": n_excl}
        if row_obs:
            diag["observables"] = {name: v / n for name, v in obs_sums.items()}
        return lam, diag
    return lam


def _row_sums(sums, row_obs, E, z, o, Y, gmax, beta, start, stop, k) -> None:
    """Add the rows ``start:stop`` of every row observable at beta ``k`` to ``sums``
    (:class:`attnscale.layer.observables.RowPass` of the block: ``E = exp(beta (g - gmax))``,
    ``z``, the normalised outputs ``o = sum_j A_ij y_j``)."""
    idx = np.arange(stop - start)
    p = RowPass(
        E[idx, idx + start] / z,
        np.log(z),
        np.einsum("bd,bd->b", o, Y[start:stop]),
        gmax,
        beta,
        Y.shape[0],
    )
    for ob in row_obs:
        sums[ob.name][k] += ob.row(p).sum()
