"""Exact eta from the block structure of the attention Jacobian [derived]
(docs/paper-a.md#exact-block-formula-for-eta).

:func:`eta_exact_grid` evaluates ``eta = ||J||_F^2 / (n d)`` in closed form, with no Monte Carlo
error, for a grid of ``beta`` sharing every beta-free product; :func:`exact_cost` and
:func:`hutchinson_cost` say when it is cheaper than the paper's Hutchinson estimator
(:mod:`attnscale.layer.dense.jacobian`).
"""

from __future__ import annotations

import numpy as np

from attnscale.backend import uses_jax
from attnscale.core.validation import check_int, check_layer_inputs, check_real, check_vector
from attnscale.layer.dense.eta_block import block_terms, outer_features

__all__ = ["eta_exact", "exact_cost", "hutchinson_cost", "eta_exact_grid"]

#: Default size of one stacked ``(betas x rows, n)`` work block, in float64 entries (1 MiB:
#: small enough to stay in cache, large enough for efficient GEMMs).
DEFAULT_BLOCK_ENTRIES = 2**17


def eta_exact(X: np.ndarray, beta: float, alpha: float = 0.0, *, backend=None) -> float:
    """Exact ``eta = ||J||_F^2 / (n d)`` for one ``beta`` from the block formula (docs/paper-a.md#exact-block-formula-for-eta).

    See :func:`eta_exact_grid` for the formula and its cost.

    ``backend``: ``"numpy"``, ``"jax"`` or ``None`` (default: :func:`attnscale.backend.default`,
    ``docs/gpu.md#choosing-the-backend``).
    """
    check_layer_inputs(X, beta, alpha)
    return float(eta_exact_grid(X, [beta], alpha, backend=backend)[0])


#: Cost of one pass over an ``n x n`` float64 array, in flops of GEMM time (measured on the
#: development machine: ~15 ms per 2^20 entries against ~65 GFlop/s for GEMM). The elementwise
#: work (softmax, Hadamard products, row sums) dominates both methods when ``d`` is small.
ELEMENTWISE_FLOPS = 1000.0


def exact_cost(n: int, d: int) -> float:
    """Cost per ``beta`` of :func:`eta_exact_grid` in GEMM-flop equivalents:
    ``6 n^2 d + min(2 n^3, n^2 d (d + 1))`` flops plus ~1 pass-equivalent of elementwise work
    (:data:`ELEMENTWISE_FLOPS` per entry of an ``n x n`` array)."""
    n, d = float(n), float(d)
    return 6.0 * n * n * d + min(2.0 * n**3, n * n * d * (d + 1)) + ELEMENTWISE_FLOPS * n * n


def hutchinson_cost(n: int, d: int, probes: int) -> float:
    """Cost per ``beta`` of :func:`eta_hutchinson_grid` in GEMM-flop equivalents: per probe
    ``4 n^2 d`` flops plus ~1.1 pass-equivalents of elementwise work (measured)."""
    n, d = float(n), float(d)
    return probes * (4.0 * n * n * d + 1.1 * ELEMENTWISE_FLOPS * n * n)


def eta_exact_grid(
    X: np.ndarray,
    betas,
    alpha=0.0,
    *,
    block_entries: int = DEFAULT_BLOCK_ENTRIES,
    route: str = "auto",
    backend=None,
) -> np.ndarray:
    """Exact eta (docs/paper-a.md#exact-block-formula-for-eta) for many ``beta`` from the block structure of ``J`` [derived].

    Block ``(i, k)`` of ``J`` (a ``d x d`` matrix), with ``m_i = sum_j A_ij y_j`` and
    ``C_i = sum_j A_ij (y_j - m_i)(y_j - m_i)^T``::

        J_ik = [A_ik I + beta A_ik (y_k - m_i) y_i^T + [i = k] beta C_i] P_k / r_k + [i = k] alpha I

    (the ``y_i^T P_i = 0`` kills the middle term on the diagonal). With ``G = Y Y^T``,
    ``K_ik = <m_i, y_k>``, ``mm_i = ||m_i||^2``, ``a_i = A_ii``:

    * ``i != k``: ``||J_ik||^2 = (A_ik / r_k)^2 [(d - 1) - 2 beta (K_ii - K_ik G_ik)
      + beta^2 (1 - 2 K_ik + mm_i)(1 - G_ik^2)]``;
    * ``i = k``: with ``B_i = (a_i P_i + beta C_i P_i) / r_i``, ``||J_ii||^2 = ||B_i||^2
      + 2 alpha tr B_i + alpha^2 d``, ``r_i^2 ||B_i||^2 = a_i^2 (d - 1) + 2 beta a_i tr(C_i P_i)
      + beta^2 ||C_i P_i||^2``, ``r_i tr B_i = a_i (d - 1) + beta tr(C_i P_i)``,
      ``tr(C_i P_i) = 1 - mm_i - (sum_j A_ij G_ij^2 - K_ii^2)``,
      ``||C_i P_i||^2 = ||S_i||^2 - 2 sum_j A_ij K_ij^2 + mm_i^2 - ||C_i y_i||^2``,
      ``S_i = sum_j A_ij y_j y_j^T``, ``||S_i||^2 = sum_jl A_ij A_il G_jl^2``,
      ``C_i y_i = sum_j A_ij G_ij y_j - K_ii m_i``.

    Checked against the dense Jacobian (``tests/test_jacobian.py``). Everything is computed row
    block by row block, several betas stacked into each GEMM. Cost per ``beta``: ``6 n^2 d``
    (``A Y``, ``M Y^T``, ``(A * G) Y``) plus ``||S_i||^2`` for all ``i``, either as
    ``diag(A (G * G) A^T)`` (``2 n^3``, route ``"gram"``) or as ``||A Z||`` row norms with
    ``Z_j`` the ``d (d + 1) / 2`` distinct entries of ``y_j y_j^T`` (``n^2 d (d + 1)``, route
    ``"outer"``); ``"auto"`` takes the cheaper. The result is exact up to rounding: no Monte
    Carlo error. Rounding: ``||C_i P_i||^2`` is a difference of O(1) terms multiplied by
    ``beta^2``, so the absolute error grows like ``eps beta^2`` (tests bound it by
    ``1e3 eps (1 + beta)^2``, i.e. ~2e-7 at ``beta = 1e3``, ~1e-9 on the Figure 2 grid). The
    alpha-dependence is a quadratic in alpha, so many alphas cost no more than one.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens.
    betas : array_like, shape (m,)
        Inverse temperatures, each ``>= 0``.
    alpha : float or array_like of shape (k,), optional
        Residual weight(s), each ``>= 0``.
    block_entries : int, optional
        Budget for one stacked ``(betas x rows, n)`` block, in float64 entries (numpy; the JAX
        twin sizes its tiles from the memory budget).
    route : {"auto", "gram", "outer"}, optional
        How ``||S_i||^2`` is computed (see above).
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    numpy.ndarray
        ``(m,)`` eta for a scalar ``alpha``, ``(k, m)`` for a sequence of alphas.
    """
    X, r, _, _ = check_layer_inputs(X, None, 0.0)
    betas = check_vector("betas", betas, low=0.0)
    scalar_alpha = np.ndim(alpha) == 0
    alphas = (
        np.array([check_real("alpha", alpha, low=0.0)])
        if scalar_alpha
        else check_vector("alpha", alpha, low=0.0)
    )
    block_entries = check_int("block_entries", block_entries, minimum=1)
    if route not in ("auto", "gram", "outer"):
        raise ValueError(f"route must be 'auto', 'gram' or 'outer', got {route!r}")
    n, d = X.shape
    if route == "auto":
        route = "gram" if 2.0 * n**3 < float(n) * n * d * (d + 1) else "outer"
    Y = X / r[:, None]
    if uses_jax(backend):
        from attnscale.layer.dense import eta_exact_jax

        quad, lin = eta_exact_jax.exact_terms(Y, r, betas, route)
    else:
        quad, lin = _exact_terms(Y, r, betas, route, block_entries)
    # eta(alpha) = (quad + 2 alpha lin + alpha^2 n d) / (n d)
    out = (quad[None] + 2.0 * alphas[:, None] * lin[None] + (alphas**2)[:, None] * n * d) / (n * d)
    return out[0] if scalar_alpha else out


def _exact_terms(Y, r, betas, route, block_entries):
    """``sum_ik ||J_ik||^2`` at ``alpha = 0`` and ``sum_i tr B_i`` for every beta.

    Rows are processed in blocks small enough to stay in cache (``block_entries``), each block
    stacking several betas; the formula of a block is :func:`attnscale.layer.dense.eta_block.block_terms`
    (shared with the JAX twin).
    """
    n, d = Y.shape
    w = 1.0 / r**2
    rinv = 1.0 / r
    G = Y @ Y.T
    if route == "gram":
        H = G * G
    else:
        Z = outer_features(Y)  # ||A_i Z|| = ||S_i||_F
    m = betas.size
    quad = np.zeros(m)
    lin = np.zeros(m)
    block_rows = int(max(1, min(n, block_entries // n)))  # rows per block
    bb = int(max(1, min(m, block_entries // (n * block_rows))))  # betas stacked per block
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        b = stop - start
        diag = (np.arange(b), np.arange(start, stop))
        Gb = G[start:stop]  # (b, n), beta-free
        Mb = Gb - Gb.max(axis=1, keepdims=True)
        omH = 1.0 - Gb * Gb
        for b0 in range(0, m, bb):
            bs = betas[b0 : b0 + bb]
            k = bs.size
            A = np.exp(bs[:, None, None] * Mb[None])  # (k, b, n)
            A /= A.sum(axis=2, keepdims=True)
            A2 = A.reshape(k * b, n)
            if route == "gram":
                s2 = np.einsum("in,in->i", A2 @ H, A2)
            else:
                AZ = A2 @ Z
                s2 = np.einsum("iz,iz->i", AZ, AZ)
            off, dg, tr = block_terms(np, Y, Gb, omH, A, s2, bs, w, w[start:stop], diag)
            quad[b0 : b0 + k] += off.sum(axis=1) + dg.sum(axis=1)
            lin[b0 : b0 + k] += tr @ rinv[start:stop]
    return quad, lin
