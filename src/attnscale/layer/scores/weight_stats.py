"""Per-row statistics of the attention weights over a grid of beta, without an n x n matrix.

For pre-LN tokens ``y_i = x_i / ||x_i||`` and ``A = row-softmax(beta Y Y^T)`` (``docs/paper-a.md``)
this module measures, for a chosen set of query rows ``i``:

* the self-weight ``A_ii``;
* the effective number of attended keys ``N_eff,i = 1 / sum_j A_ij^2`` (1 when one key holds all
  the mass, ``n`` for uniform weights);
* ``N_eff,i`` of the other keys, ``(1 - A_ii)^2 / sum_{j != i} A_ij^2``: how many keys share the
  mass that the query does not keep (few: sparse attention on the most correlated tokens; many:
  a broad average);
* ``k_i(m)``, the number of keys holding a fraction ``m`` of the row's mass: the smallest ``k`` such
  that the ``k`` largest weights of row ``i`` sum to at least ``m``.

Used for the finite-d experiments of ``docs/finite-d.md``.

How the work is shared
----------------------
Per row block (``b`` query rows) the Gram rows ``G = Y_b Y^T`` are formed once and shared by every
beta. Because ``exp`` is increasing, the order of a row's weights is the order of its scores for
every ``beta > 0``, so each row's other keys are sorted once (descending) and ``k_i(m)`` is a
cumulative sum per beta. The self score is kept apart, so the others' mass is summed directly (no
``1 - A_ii`` cancellation when ``A_ii`` is close to 1). Scores are shifted by the row maximum
(``c_ii = 1`` up to rounding), so ``exp`` never overflows. Memory is ``O(b n)``; the block size is chosen so that ``b n`` stays below
``block_entries`` whatever ``n`` is.

The mean self-weight alone, with its beta-derivative, is what the finite-d critical point needs;
:func:`self_weight_scores` and :func:`self_weight_curve` keep only the off-diagonal scores of the
query rows and evaluate ``A_ii(beta)`` for any beta (root finding on beta, common random numbers).
"""

from __future__ import annotations

import numpy as np

from attnscale.backend import uses_jax
from attnscale.core.validation import (
    check_int,
    check_matrix,
    check_nonzero_rows,
    check_real,
    check_vector,
)
from attnscale.layer.dense.kernel_args import check_rows

__all__ = ["row_weight_stats", "self_weight_scores", "self_weight_curve"]

#: Default budget for one ``rows x n`` block, in float64 entries (16 MiB).
DEFAULT_BLOCK_ENTRIES = 2**21


def row_weight_stats(
    X,
    betas,
    *,
    rows=None,
    mass: float = 0.9,
    block_entries: int = DEFAULT_BLOCK_ENTRIES,
    backend=None,
) -> dict[str, np.ndarray]:
    """Self-weight, ``N_eff`` and the number of keys holding ``mass`` per query row and beta.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens (non-zero finite rows, ``n >= 2``); they are normalised here.
    betas : array_like, shape (B,)
        Inverse temperatures, each ``>= 0``.
    rows : array_like of int, optional
        Query rows (default: all ``n``). Every key ``j = 0 .. n-1`` enters each row's softmax.
    mass : float, optional
        Fraction of the row's mass, ``0 < mass <= 1`` (default 0.9).
    block_entries : int, optional
        Size budget of one Gram block, in float64 entries (``b = max(1, block_entries // n)``).
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    dict
        Arrays of shape ``(len(rows), B)``: ``self_weight``, ``n_eff``, ``n_eff_others``
        (``(sum_{j != i} A_ij)^2 / sum_{j != i} A_ij^2``: the effective number of *other* keys
        sharing the mass the query leaves to them, in ``[1, n - 1]``) and ``k_mass`` (integers in
        ``[1, n]``).
    """
    X = check_matrix("X", X, min_rows=2)
    r = check_nonzero_rows("X", X)
    betas = check_vector("betas", betas, low=0.0)
    mass = check_real("mass", mass, low=0.0, high=1.0, low_open=True)
    block_entries = check_int("block_entries", block_entries, minimum=1)
    n = X.shape[0]
    idx = check_rows(n, rows)
    Y = X / r[:, None]
    if uses_jax(backend):
        from attnscale.layer.scores import weight_stats_jax

        return weight_stats_jax.row_weight_stats(Y, betas, idx, mass)
    m, B = idx.size, betas.size
    self_w = np.empty((m, B))
    n_eff = np.empty((m, B))
    n_eff_oth = np.empty((m, B))
    k_mass = np.empty((m, B), dtype=np.int64)
    b = int(max(1, min(m, block_entries // n)))
    E = np.empty((b, n - 1))
    for s in range(0, m, b):
        rb = idx[s : s + b]
        nb = rb.size
        G = Y[rb] @ Y.T  # (nb, n), beta-free
        ar = np.arange(nb)
        gself = G[ar, rb].copy()
        G[ar, rb] = -np.inf  # the self score goes last after the sort, and is dropped
        G = -np.sort(-G, axis=1)[:, : n - 1]  # the other keys, descending (their order at any beta)
        gmax = np.maximum(gself, G[:, 0])
        G -= gmax[:, None]
        dself = gself - gmax
        e = E[:nb]
        for k, beta in enumerate(betas):
            np.multiply(G, beta, out=e)
            np.exp(e, out=e)
            es = np.exp(beta * dself)
            so = e.sum(axis=1)  # mass of the other keys (unnormalised), no cancellation
            sq = np.einsum("ij,ij->i", e, e)
            z = es + so
            self_w[s : s + nb, k] = es / z
            n_eff[s : s + nb, k] = z * z / (es * es + sq)
            n_eff_oth[s : s + nb, k] = so * so / sq
            # keys in decreasing weight: the query itself first (c_ii = 1 >= c_ij), then the
            # others; k = smallest count whose mass reaches mass * z. The relative slack 1e-12
            # (~1e4 ulp, far above the cumsum's rounding error) makes an exact tie (uniform
            # weights at beta = 0) count as reaching the mass.
            thr = mass * (1.0 - 1e-12) * z - es
            np.cumsum(e, axis=1, out=e)
            below = (e < thr[:, None]).sum(axis=1)
            k_mass[s : s + nb, k] = np.where(thr <= 0.0, 1, np.minimum(below + 2, n))
    return {"self_weight": self_w, "n_eff": n_eff, "n_eff_others": n_eff_oth, "k_mass": k_mass}


def self_weight_scores(
    X, *, rows=None, block_entries: int = DEFAULT_BLOCK_ENTRIES, backend=None
) -> np.ndarray:
    """Off-diagonal score gaps ``c_ij - 1 = <y_i, y_j> - 1`` of the query rows, shape (m, n - 1).

    ``A_ii = 1 / (1 + sum_{j != i} exp(beta (c_ij - 1)))`` since ``c_ii = 1``: these gaps are all a
    beta sweep of the self-weight needs. Memory ``O(m n)`` for ``m`` query rows (sub-sample the
    rows at large ``n``); computed in row blocks of at most ``block_entries`` Gram entries.

    ``backend``: ``"numpy"``, ``"jax"`` or ``None`` (default: :func:`attnscale.backend.default`,
    ``docs/gpu.md#choosing-the-backend``).
    """
    X = check_matrix("X", X, min_rows=2)
    r = check_nonzero_rows("X", X)
    block_entries = check_int("block_entries", block_entries, minimum=1)
    n = X.shape[0]
    idx = check_rows(n, rows)
    Y = X / r[:, None]
    if uses_jax(backend):
        from attnscale.layer.scores import weight_stats_jax

        return weight_stats_jax.self_weight_scores(Y, idx)
    out = np.empty((idx.size, n - 1))
    b = int(max(1, min(idx.size, block_entries // n)))
    for s in range(0, idx.size, b):
        rb = idx[s : s + b]
        G = Y[rb] @ Y.T
        keep = np.ones(G.shape, dtype=bool)
        keep[np.arange(rb.size), rb] = False
        out[s : s + rb.size] = G[keep].reshape(rb.size, n - 1)
    out -= 1.0
    np.minimum(out, 0.0, out=out)  # rounding can put a duplicate direction at 1 + 1e-16
    return out


def self_weight_curve(
    gaps: np.ndarray, beta: float, *, backend=None
) -> tuple[np.ndarray, np.ndarray]:
    """Per-row self-weight and its beta-derivative from :func:`self_weight_scores` gaps.

    ``A_ii(beta) = 1 / (1 + S_i)``, ``S_i = sum_j exp(beta g_ij)`` (``g_ij = c_ij - 1 <= 0``), and
    ``dA_ii / dbeta = -S_i' / (1 + S_i)^2 = A_ii sum_{j != i} A_ij (1 - c_ij) >= 0``: the
    self-weight increases with beta in every row, so the mean over rows and draws (common random
    numbers) is increasing too and has at most one crossing of any level.

    Parameters
    ----------
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``A_ii`` and ``dA_ii / dbeta``, each of shape ``(m,)``.
    """
    beta = check_real("beta", beta, low=0.0)
    if uses_jax(backend):
        from attnscale.layer.scores import weight_stats_jax

        return weight_stats_jax.self_weight_curve(gaps, beta)
    e = np.exp(beta * gaps)
    S = e.sum(axis=1)
    dS = np.einsum("ij,ij->i", e, gaps)  # <= 0
    a = 1.0 / (1.0 + S)
    return a, -dS * a * a
