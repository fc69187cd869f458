"""Jacobian of one attention layer and its mean square singular value eta (``docs/paper-a.md#the-jacobian-norm-eta``).

The map is ``X -> X' = A Y + alpha X`` with ``Y`` the pre-LN tokens ``y_i = x_i / ||x_i||`` and
``A = row-softmax(beta Y Y^T)`` (docs/paper-a.md#the-model). ``J = dX'/dX`` is the ``nd x nd`` Jacobian with respect
to the *raw* tokens, so it includes the normalisation; ``eta = ||J||_F^2 / (n d)`` (docs/paper-a.md#the-jacobian-norm-eta).
Vectors ``v`` of ``R^{nd}`` are stored as ``(n, d)`` arrays, row ``i`` acting on token ``i``.

Three ways to get eta
---------------------
* :func:`eta_hutchinson` / :func:`eta_hutchinson_grid`: the paper's estimator,
  ``||J||_F^2 = E ||J v||^2`` for probes with ``E[v v^T] = I``, with a standard error over probes.
  All probes of a call go through a few large GEMMs; the probe-dependent but beta-free products
  are shared by every ``beta`` of a grid. Cost per ``beta``: ``4 n^2 d`` flops per probe (plus
  ``2 n^2 d`` per probe once per grid).
* :func:`attnscale.layer.dense.eta_exact.eta_exact` / :func:`attnscale.layer.dense.eta_exact.eta_exact_grid`: a closed form from the block structure of ``J``
  [derived, see :func:`eta_exact_grid`], no Monte Carlo error. Cost per ``beta``:
  ``6 n^2 d + min(2 n^3, n^2 d (d + 1))`` flops plus elementwise work, i.e. about 2 probes at
  ``n = 1024, d = 512`` (measured 118 vs 55 ms per probe), about one probe at ``d <= 8``
  (elementwise-bound: 15 vs 18 ms) and 2 probes at ``d = 32`` (42 vs 23 ms); see
  :func:`attnscale.layer.dense.eta_exact.exact_cost` and :func:`attnscale.layer.dense.eta_exact.hutchinson_cost`.
* :func:`jacobian` builds ``J`` column by column from :func:`jvp` (small sizes; for tests).
"""

from __future__ import annotations

import numpy as np

from attnscale.backend import uses_jax
from attnscale.core.validation import check_int, check_layer_inputs, check_vector
from attnscale.layer.dense.attention import softmax_rows

# the exact eta stays importable from here, where it was documented (docs/paper-a.md#the-jacobian-norm-eta)
from attnscale.layer.dense.eta_exact import eta_exact, eta_exact_grid
from attnscale.layer.dense.kernel_args import PROBE_KINDS, draw_probes, hutchinson_summary

__all__ = [
    "jvp",
    "jacobian",
    "draw_probes",
    "eta_hutchinson",
    "eta_hutchinson_grid",
    "eta_exact",
    "eta_exact_grid",
]

#: Default budget for the probe stack ``(probes, n, n)`` of :func:`eta_hutchinson_grid` (256 MiB).
DEFAULT_PROBE_ENTRIES = 32 * 2**20

#: Largest ``n d`` for which :func:`jacobian` builds the dense ``nd x nd`` matrix.
MAX_DENSE = 4096


def _check_probes(V, shape) -> tuple[np.ndarray, bool]:
    """``V`` as a ``(k, n, d)`` float64 array (``single`` says whether it was ``(n, d)``)."""
    arr = np.asarray(V)
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        raise TypeError(f"V must be a real floating or integer array, got dtype {arr.dtype}")
    single = arr.ndim == 2
    if single:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[1:] != shape:
        raise ValueError(f"V must have shape {shape} or (k, *{shape}) like X, got {np.shape(V)}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("V must contain only finite values (found NaN or inf)")
    return np.ascontiguousarray(arr, dtype=np.float64), single


def _tangent(Y: np.ndarray, r: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``dy_i = P_i v_i / r_i`` with ``P_i = I - y_i y_i^T`` for a stack ``V`` of shape (k, n, d)."""
    proj = np.einsum("knd,nd->kn", V, Y)
    out = proj[:, :, None] * Y[None]
    np.subtract(V, out, out=out)
    out *= (1.0 / r)[None, :, None]
    return out


def _side_by_side(dY: np.ndarray) -> np.ndarray:
    """``[dY_1 ... dY_k]`` as one ``(n, k d)`` matrix (beta-free: built once per call)."""
    k, n, d = dY.shape
    return np.ascontiguousarray(dY.transpose(1, 0, 2)).reshape(n, k * d)


def _apply(Y, A, beta, alpha, V, dYcat, Gv, work=None) -> np.ndarray:
    """``J v`` for a probe stack, given ``dYcat = [dY_1 ... dY_k]`` and
    ``Gv = dY Y^T + Y dY^T`` (both beta-free).

    ``dS = beta Gv``, ``dA = A * (dS - rowsum(A * dS))``, ``J v = dA Y + A dY + alpha V``,
    evaluated as ``s = rowsum(A * Gv)``, ``W = A * (Gv - s)`` (three in-place passes over the
    ``(k, n, n)`` stack, in the reusable buffer ``work``) and two stacked GEMMs,
    ``W (beta Y)`` and ``A [dY_1 ... dY_k]``.
    """
    k, n, d = V.shape
    W = np.empty_like(Gv) if work is None else work
    s = np.einsum("knm,nm->kn", Gv, A)
    np.subtract(Gv, s[:, :, None], out=W)
    W *= A[None]
    out = (W.reshape(k * n, n) @ (beta * Y)).reshape(k, n, d)
    ady = A @ dYcat
    out += ady.reshape(n, k, d).transpose(1, 0, 2)
    if alpha:
        out += alpha * V
    return out


def _probe_gram(Y: np.ndarray, dY: np.ndarray) -> np.ndarray:
    """``Gv_p = dY_p Y^T + Y dY_p^T`` for every probe, shape (k, n, n) (one stacked GEMM)."""
    k, n, d = dY.shape
    T = (dY.reshape(k * n, d) @ Y.T).reshape(k, n, n)
    for p in range(k):
        _symmetrise(T[p])
    return T


def _symmetrise(T: np.ndarray, tile: int = 128) -> None:
    """``T <- T + T^T`` in place, tile pair by tile pair (cache-friendly: about twice as fast
    as ``T += T.T.copy()`` at n = 1024)."""
    n = T.shape[0]
    for i0 in range(0, n, tile):
        row_idx = slice(i0, min(n, i0 + tile))
        T[row_idx, row_idx] += T[row_idx, row_idx].T.copy()
        for j0 in range(i0 + tile, n, tile):
            cols = slice(j0, min(n, j0 + tile))
            upper = T[row_idx, cols].copy()
            T[row_idx, cols] += T[cols, row_idx].T
            T[cols, row_idx] += upper.T


def jvp(X: np.ndarray, V: np.ndarray, beta: float, alpha: float = 0.0) -> np.ndarray:
    """Jacobian-vector product ``J v`` of ``X -> X' = A Y + alpha X`` (docs/paper-a.md#the-jacobian-norm-eta).

    Closed form [derived]: ``r_i = ||x_i||``, ``P_i = I - y_i y_i^T``, ``dy_i = P_i v_i / r_i``,
    ``dS = beta (dY Y^T + Y dY^T)``, ``dA = A * (dS - rowsum(A * dS))``,
    ``J v = dA Y + A dY + alpha V``. Cost ``O(n^2 d)`` per vector; a stack of vectors shares
    every GEMM.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens (``n >= 2``, non-zero finite rows).
    V : array_like, shape (n, d) or (k, n, d)
        Tangent vector(s), one row per token.
    beta : float
        Inverse temperature, ``beta >= 0``.
    alpha : float, optional
        Residual weight, ``alpha >= 0``.

    Returns
    -------
    numpy.ndarray
        ``J v`` with the shape of ``V``.
    """
    X, r, beta, alpha = check_layer_inputs(X, beta, alpha)
    V, single = _check_probes(V, X.shape)
    Y = X / r[:, None]
    A = softmax_rows(beta * (Y @ Y.T))
    dY = _tangent(Y, r, V)
    out = _apply(Y, A, beta, alpha, V, _side_by_side(dY), _probe_gram(Y, dY))
    return out[0] if single else out


def jacobian(X: np.ndarray, beta: float, alpha: float = 0.0) -> np.ndarray:
    """The dense ``nd x nd`` Jacobian ``J = dX'/dX``, built column by column from :func:`jvp`.

    Index ``i d + a`` is coordinate ``a`` of token ``i``. Only for small sizes (``n d <=``
    :data:`MAX_DENSE`); used to check :func:`eta_exact` and :func:`jvp`.

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
    numpy.ndarray
        ``(n d, n d)`` matrix.
    """
    X, r, beta, alpha = check_layer_inputs(X, beta, alpha)
    n, d = X.shape
    if n * d > MAX_DENSE:
        raise ValueError(f"X must have n d <= {MAX_DENSE} for a dense Jacobian, got n d = {n * d}")
    E = np.eye(n * d).reshape(n * d, n, d)
    cols = jvp(X, E, beta, alpha)  # (nd, n, d): column c is J e_c
    return np.ascontiguousarray(cols.reshape(n * d, n * d).T)


def eta_hutchinson(
    X: np.ndarray,
    beta: float,
    alpha: float = 0.0,
    *,
    probes: int,
    rng: np.random.Generator,
    kind: str = "rademacher",
    backend=None,
) -> tuple[float, float]:
    """Hutchinson estimate of ``eta = ||J||_F^2 / (n d)`` for one ``beta`` (docs/paper-a.md#the-jacobian-norm-eta).

    See :func:`eta_hutchinson_grid` (this is the one-``beta`` case; ``backend`` is passed on).

    Returns
    -------
    (float, float)
        The estimate and its standard error (``nan`` for one probe).
    """
    check_layer_inputs(X, beta, alpha)
    est, se = eta_hutchinson_grid(
        X, [beta], alpha, probes=probes, rng=rng, kind=kind, backend=backend
    )
    return float(est[0]), float(se[0])


def eta_hutchinson_grid(
    X: np.ndarray,
    betas,
    alpha: float = 0.0,
    *,
    probes: int,
    rng: np.random.Generator,
    kind: str = "rademacher",
    block_entries: int = DEFAULT_PROBE_ENTRIES,
    backend=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Hutchinson estimates of eta (docs/paper-a.md#the-jacobian-norm-eta) for many ``beta``, sharing beta-free work.

    ``eta_hat = mean_p ||J v_p||^2 / (n d)`` over ``probes`` i.i.d. probes (``E[v v^T] = I``),
    standard error ``std_p(||J v_p||^2) / sqrt(probes) / (n d)`` (``ddof = 1``).

    Computed once per call: ``Y``, ``Y Y^T``, the probes, their tangents ``dY_p`` and the
    beta-free probe Gram matrices ``Gv_p = dY_p Y^T + Y dY_p^T``. Per ``beta``: the softmax
    ``A``, one elementwise pass over the ``(probes, n, n)`` stack and two stacked GEMMs
    (``dA Y`` over all probes at once, ``A [dY_1 ... dY_p]``), ``4 n^2 d`` flops per probe.
    The same probes serve every ``beta`` (common random numbers across the grid).

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens.
    betas : array_like, shape (m,)
        Inverse temperatures, each ``>= 0``.
    alpha : float, optional
        Residual weight, ``alpha >= 0``.
    probes : int
        Number of probes, ``>= 1``.
    rng : numpy.random.Generator
        Source of the probes (see :mod:`attnscale.core.seeding`).
    kind : {"rademacher", "gaussian"}, optional
        Probe distribution.
    block_entries : int, optional
        Budget for the probe stack ``(probes, n, n)`` in float64 entries; larger stacks are
        processed in groups of probes (each group redraws nothing: probes are drawn up front).
        When even one ``n x n`` matrix exceeds it, the computation runs in row blocks with
        memory ``O(block_entries + n d)`` (:func:`_hutchinson_sq_blocked`), e.g. n = 32768.
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``(m,)`` estimates and ``(m,)`` standard errors (``nan`` if ``probes == 1``).
    """
    X, r, _, alpha = check_layer_inputs(X, None, alpha)
    betas = check_vector("betas", betas, low=0.0)
    probes = check_int("probes", probes, minimum=1)
    if kind not in PROBE_KINDS:
        raise ValueError(f"kind must be one of {PROBE_KINDS}, got {kind!r}")
    block_entries = check_int("block_entries", block_entries, minimum=1)
    n, d = X.shape
    V = draw_probes(rng, probes, n, d, kind)
    if uses_jax(backend):
        from attnscale.layer.dense import jacobian_jax

        sq = jacobian_jax.hutchinson_squares(X, betas, alpha, V)
    else:
        sq = _hutchinson_squares(X, r, betas, alpha, V, block_entries)
    return hutchinson_summary(sq, n, d, probes, betas.size)


def _hutchinson_squares(X, r, betas, alpha, V, block_entries):
    """``||J v_p||^2`` for every probe of ``V`` (``(probes, n, d)``) and beta: the products of
    :func:`eta_hutchinson_grid`, in probe groups or, when even one ``n x n`` matrix exceeds
    ``block_entries``, in row blocks (:func:`_hutchinson_sq_blocked`)."""
    probes, n, d = V.shape
    Y = X / r[:, None]
    if n * n > block_entries:  # not even one probe's n x n stack fits: row blocks
        return _hutchinson_sq_blocked(X, Y, r, betas, alpha, V, max(1, block_entries // (4 * n)))
    M0 = Y @ Y.T
    M0 -= M0.max(axis=1, keepdims=True)
    group = int(max(1, min(probes, block_entries // (2 * n * n))))  # Gv and its work buffer
    sq = np.empty((probes, betas.size))
    for p0 in range(0, probes, group):
        Vg = V[p0 : p0 + group]
        dY = _tangent(Y, r, Vg)
        Gv = _probe_gram(Y, dY)
        dYcat = _side_by_side(dY)
        work = np.empty_like(Gv)
        for b, beta in enumerate(betas):
            A = np.exp(beta * M0)
            A /= A.sum(axis=1, keepdims=True)
            JV = _apply(Y, A, beta, alpha, Vg, dYcat, Gv, work)
            sq[p0 : p0 + group, b] = np.einsum("knd,knd->k", JV, JV)
    return sq


def _hutchinson_sq_blocked(X, Y, r, betas, alpha, V, block_rows):
    """``||J v_p||^2`` for every probe and beta in row blocks: memory ``O(block_rows x n + n d)``.

    Row block ``I`` of ``J v`` needs only rows ``I`` of ``A`` and of
    ``Gv = dY Y^T + Y dY^T`` (``dY_I Y^T + Y_I dY^T``, two ``b x d x n`` GEMMs), so no
    ``n x n`` matrix is formed. The beta-free ``Gv`` rows of a probe are built once per block and
    serve every beta; the softmax rows are recomputed per probe (an exp is far cheaper than the
    GEMMs it would save). Cost ``4 n^2 d`` flops per probe and beta plus ``4 n^2 d`` per probe
    (the unblocked path shares ``dY Y^T`` between ``Gv`` and its transpose and pays ``2 n^2 d``
    per probe). Same probes, same numbers as the unblocked path up to rounding.
    """
    k, n, d = V.shape
    dY = _tangent(Y, r, V)
    sq = np.zeros((k, betas.size))
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        M = Y[start:stop] @ Y.T
        M -= M.max(axis=1, keepdims=True)
        for p in range(k):
            G = dY[p, start:stop] @ Y.T  # beta-free
            G += Y[start:stop] @ dY[p].T
            for b, beta in enumerate(betas):
                A = np.exp(beta * M)
                A /= A.sum(axis=1, keepdims=True)
                s = np.einsum("ij,ij->i", A, G)
                W = G - s[:, None]
                W *= A
                out = W @ Y
                out *= beta
                out += A @ dY[p]
                if alpha:
                    out += alpha * V[p, start:stop]
                sq[p, b] += np.einsum("nd,nd->", out, out)
    return sq
