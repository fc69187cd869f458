"""One attention layer on pre-LN tokens and the angle ratio lambda (spec ``paper-a.md`` §1, §4).

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
and output. Pairs with exactly coincident inputs (0/0) are left out of the mean; their number is
reported by :func:`angle_ratio_grid` with ``return_diagnostics=True``.
"""

from __future__ import annotations

import numpy as np

from .validation import check_matrix, check_nonzero_rows, check_real, check_vector

#: Pairs with ``1 - <y_i, y_j>`` below this (as read from the Gram matrix) are treated exactly.
NEAR_PAIR_TOL = 1e-6

#: Default budget for the stacked weight blocks, in float64 entries (128 MiB).
DEFAULT_BLOCK_ENTRIES = 16 * 2**20

#: Default budget for the outputs of one group of betas, in float64 entries (512 MiB).
DEFAULT_OUTPUT_ENTRIES = 64 * 2**20


def _check_inputs(X, beta=None, alpha=0.0):
    X = check_matrix("X", X, min_rows=2)
    r = check_nonzero_rows("X", X)
    if beta is not None:
        beta = check_real("beta", beta, low=0.0)
    alpha = check_real("alpha", alpha, low=0.0)
    return X, r, beta, alpha


def normalise(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pre-LN normalisation ``y_i = x_i / ||x_i||`` (spec §1). Returns ``(Y, r)``, ``r_i = ||x_i||``."""
    X = check_matrix("X", X)
    r = check_nonzero_rows("X", X)
    return X / r[:, None], r


def softmax_rows(S: np.ndarray) -> np.ndarray:
    """Row-wise softmax of a score matrix, shifted by each row's maximum (overflow-free)."""
    E = np.exp(S - S.max(axis=1, keepdims=True))
    E /= E.sum(axis=1, keepdims=True)
    return E


def attention_weights(X: np.ndarray, beta: float) -> np.ndarray:
    """The ``n x n`` attention matrix ``A = row-softmax(beta Y Y^T)`` of spec §1."""
    X, _, beta, _ = _check_inputs(X, beta)
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    return softmax_rows(beta * (Y @ Y.T))


def forward(X: np.ndarray, beta: float, alpha: float = 0.0) -> np.ndarray:
    """One attention layer, spec paper-a.md §1: ``x_i' = sum_j A_ij y_j + alpha x_i``.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens (``n >= 2``, non-zero finite rows).
    beta : float
        Inverse temperature, ``beta >= 0`` (Paper A uses ``beta = gamma log n``).
    alpha : float, optional
        Residual weight, ``alpha >= 0``.

    Returns
    -------
    numpy.ndarray
        ``(n, d)`` outputs ``X'`` (before the next normalisation).
    """
    X, r, beta, alpha = _check_inputs(X, beta, alpha)
    Y = X / r[:, None]
    A = softmax_rows(beta * (Y @ Y.T))
    return A @ Y + alpha * X


def angle_ratio(X: np.ndarray, beta: float, alpha: float = 0.0) -> float:
    """The angle ratio lambda of spec paper-a.md §4 for one ``beta`` (reference implementation).

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
    X, r, beta, alpha = _check_inputs(X, beta, alpha)
    Y = X / r[:, None]
    Xp = forward(X, beta, alpha)
    Yp = Xp / np.linalg.norm(Xp, axis=1, keepdims=True)
    iu, ju = np.triu_indices(X.shape[0], k=1)
    din = 1.0 - np.einsum("kd,kd->k", Y[iu], Y[ju])
    dout = 1.0 - np.einsum("kd,kd->k", Yp[iu], Yp[ju])
    near = din < NEAR_PAIR_TOL
    if np.any(near):
        din[near] = 0.5 * np.sum((Y[iu[near]] - Y[ju[near]]) ** 2, axis=1)
        dout[near] = 0.5 * np.sum((Yp[iu[near]] - Yp[ju[near]]) ** 2, axis=1)
    keep = din > 0.0
    if not np.any(keep):
        return float("nan")
    return float(np.mean(dout[keep] / din[keep]))


def angle_ratio_grid(
    X: np.ndarray,
    betas,
    alpha: float = 0.0,
    *,
    block_rows: int | None = None,
    block_entries: int = DEFAULT_BLOCK_ENTRIES,
    output_entries: int = DEFAULT_OUTPUT_ENTRIES,
    return_diagnostics: bool = False,
):
    """lambda of spec paper-a.md §4 for many ``beta`` at once, sharing all beta-free work.

    Computed once: the normalisation ``Y``, the input Gram rows, the pair weights
    ``W_ij = 1 / (1 - <y_i, y_j>)`` and the near-pair list. Per ``beta`` the cost is one
    ``exp`` of the score block and two GEMMs (``A Y`` and ``W Y'``), i.e. ``4 n^2 d`` flops;
    several betas are stacked into one GEMM. Work proceeds in row blocks, so memory is
    ``O(block x n + n d x (#betas in a batch))`` and no ``n x n`` matrix is formed when
    ``block_rows < n``.

    Uses ``sum_{i != j} W_ij (1 - <y_i', y_j'>) = sum W - sum_i <y_i', (W Y')_i>``.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens.
    betas : array_like, shape (m,)
        Inverse temperatures, each ``>= 0``.
    alpha : float, optional
        Residual weight, ``alpha >= 0``.
    block_rows : int, optional
        Rows per block (default: all rows if the stacked weights fit ``block_entries``).
    block_entries : int, optional
        Budget for one stacked block of weights, in float64 entries.
    output_entries : int, optional
        Budget for the outputs ``Y'`` of one group of betas (groups are processed in turn and
        each recomputes the beta-free Gram rows), in float64 entries.
    return_diagnostics : bool, optional
        Also return a dict with ``n_pairs``, ``n_near_pairs``, ``n_excluded_pairs``.

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, dict)
        ``(m,)`` array of lambda, in the order of ``betas``.
    """
    X, r, _, alpha = _check_inputs(X, None, alpha)
    betas = check_vector("betas", betas, low=0.0)
    n, d = X.shape
    Y = X / r[:, None]
    if block_rows is None:
        block_rows = n
    block_rows = int(max(1, min(n, block_rows)))
    # betas per group: the group's outputs (group, n, d) must fit the output budget
    group = int(max(1, min(betas.size, output_entries // (n * d))))
    lam = np.empty(betas.size)
    diag = None
    for g0 in range(0, betas.size, group):
        lam[g0 : g0 + group], diag = _angle_ratio_group(
            X, Y, betas[g0 : g0 + group], alpha, block_rows, block_entries
        )
    if return_diagnostics:
        return lam, diag
    return lam


def _angle_ratio_group(X, Y, betas, alpha, block_rows, block_entries):
    """Both passes of :func:`angle_ratio_grid` for one group of betas."""
    n, d = X.shape
    m = betas.size
    # how many betas share one stacked GEMM
    per_beta = block_rows * n
    beta_batch = int(max(1, min(m, block_entries // max(per_beta, 1))))

    # ---- pass 1: outputs Y'[k] for every beta (m, n, d) ----
    Yp = np.empty((m, n, d))
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        G = Y[start:stop] @ Y.T  # (b, n), shared by all betas
        M = G - G.max(axis=1, keepdims=True)
        for b0 in range(0, m, beta_batch):
            bs = betas[b0 : b0 + beta_batch]
            E = np.exp(bs[:, None, None] * M[None, :, :])  # (B, b, n)
            E /= E.sum(axis=2, keepdims=True)
            out = (E.reshape(-1, n) @ Y).reshape(bs.size, stop - start, d)
            if alpha:
                out += alpha * X[start:stop][None]
            Yp[b0 : b0 + bs.size, start:stop] = out
    Yp /= np.linalg.norm(Yp, axis=2, keepdims=True)

    # ---- pass 2: weighted pair sums ----
    Ycat = np.ascontiguousarray(Yp.transpose(1, 0, 2).reshape(n, m * d))  # (n, m d)
    num = np.zeros(m)
    wsum = 0.0
    n_pairs = 0
    near_i, near_j = [], []
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        G = Y[start:stop] @ Y.T
        D = 1.0 - G
        rows = np.arange(start, stop)
        D[rows - start, rows] = np.inf  # diagonal: weight 0
        near = D < NEAR_PAIR_TOL
        if np.any(near):
            ii, jj = np.nonzero(near)
            near_i.append(ii + start)
            near_j.append(jj)
            D[near] = np.inf  # handled exactly below
        W = 1.0 / D
        wsum += W.sum()
        n_pairs += (stop - start) * (n - 1) - int(near.sum())
        WY = (W @ Ycat).reshape(stop - start, m, d)
        num -= np.einsum("bkd,kbd->k", WY, Yp[:, start:stop])
    num += wsum
    n_near = 0
    n_excl = 0
    if near_i:
        ii = np.concatenate(near_i)
        jj = np.concatenate(near_j)
        din = 0.5 * np.sum((Y[ii] - Y[jj]) ** 2, axis=1)
        keep = din > 0.0
        n_near = int(ii.size) // 2
        n_excl = int((~keep).sum()) // 2
        ii, jj, din = ii[keep], jj[keep], din[keep]
        dout = 0.5 * np.sum((Yp[:, ii] - Yp[:, jj]) ** 2, axis=2)  # (m, k)
        num += (dout / din[None, :]).sum(axis=1)
        n_pairs += int(ii.size)
    lam = num / n_pairs if n_pairs > 0 else np.full(m, np.nan)
    diag = {
        "n_pairs": n * (n - 1) // 2,
        "n_near_pairs": n_near,
        "n_excluded_pairs": n_excl,
    }
    return lam, diag
