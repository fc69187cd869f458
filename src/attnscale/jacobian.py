"""Jacobian of one attention layer and its mean square singular value eta (spec ``paper-a.md`` §5).

The map is ``X -> X' = A Y + alpha X`` with ``Y`` the pre-LN tokens ``y_i = x_i / ||x_i||`` and
``A = row-softmax(beta Y Y^T)`` (spec §1). ``J = dX'/dX`` is the ``nd x nd`` Jacobian with respect
to the *raw* tokens, so it includes the normalisation; ``eta = ||J||_F^2 / (n d)`` (spec §5).
Vectors ``v`` of ``R^{nd}`` are stored as ``(n, d)`` arrays, row ``i`` acting on token ``i``.

Three ways to get eta
---------------------
* :func:`eta_hutchinson` / :func:`eta_hutchinson_grid`: the paper's estimator,
  ``||J||_F^2 = E ||J v||^2`` for probes with ``E[v v^T] = I``, with a standard error over probes.
  All probes of a call go through a few large GEMMs; the probe-dependent but beta-free products
  are shared by every ``beta`` of a grid. Cost per ``beta``: ``4 n^2 d`` flops per probe (plus
  ``2 n^2 d`` per probe once per grid).
* :func:`eta_exact` / :func:`eta_exact_grid`: a closed form from the block structure of ``J``
  [derived, see :func:`eta_exact_grid`], no Monte Carlo error. Cost per ``beta``:
  ``6 n^2 d + min(2 n^3, n^2 d (d + 1))`` flops plus elementwise work, i.e. about 2 probes at
  ``n = 1024, d = 512`` (measured 118 vs 55 ms per probe), about one probe at ``d <= 8``
  (elementwise-bound: 15 vs 18 ms) and 2 probes at ``d = 32`` (42 vs 23 ms); see
  :func:`exact_cost` and :func:`hutchinson_cost`.
* :func:`jacobian` builds ``J`` column by column from :func:`jvp` (small sizes; for tests).
"""

from __future__ import annotations

import numpy as np

from .attention import softmax_rows
from .validation import check_int, check_layer_inputs, check_real, check_vector

#: Default size of one stacked ``(betas x rows, n)`` work block, in float64 entries (1 MiB:
#: small enough to stay in cache, large enough for efficient GEMMs).
DEFAULT_BLOCK_ENTRIES = 2**17

#: Default budget for the probe stack ``(probes, n, n)`` of :func:`eta_hutchinson_grid` (256 MiB).
DEFAULT_PROBE_ENTRIES = 32 * 2**20

#: Largest ``n d`` for which :func:`jacobian` builds the dense ``nd x nd`` matrix.
MAX_DENSE = 4096

PROBE_KINDS = ("rademacher", "gaussian")


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
        rows = slice(i0, min(n, i0 + tile))
        T[rows, rows] += T[rows, rows].T.copy()
        for j0 in range(i0 + tile, n, tile):
            cols = slice(j0, min(n, j0 + tile))
            upper = T[rows, cols].copy()
            T[rows, cols] += T[cols, rows].T
            T[cols, rows] += upper.T


def jvp(X: np.ndarray, V: np.ndarray, beta: float, alpha: float = 0.0) -> np.ndarray:
    """Jacobian-vector product ``J v`` of ``X -> X' = A Y + alpha X`` (spec paper-a.md §5).

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


def draw_probes(rng: np.random.Generator, probes: int, n: int, d: int, kind: str) -> np.ndarray:
    """``probes`` i.i.d. probe vectors of shape (n, d) with ``E[v v^T] = I`` (spec §5).

    ``kind`` is ``"rademacher"`` (entries +-1, the lower-variance choice when ``J^T J`` is close
    to block diagonal) or ``"gaussian"``. All probes are drawn in one call, in a fixed order.
    """
    probes = check_int("probes", probes, minimum=1)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if kind == "rademacher":
        # one random bit per sign: ~8x faster than integers(0, 2) and the same law
        size = probes * n * d
        bits = np.unpackbits(np.frombuffer(rng.bytes((size + 7) // 8), dtype=np.uint8))
        V = np.empty((probes, n, d))
        np.multiply(bits[:size].reshape(probes, n, d), 2.0, out=V)
        V -= 1.0
        return V
    if kind == "gaussian":
        return rng.standard_normal((probes, n, d))
    raise ValueError(f"kind must be one of {PROBE_KINDS}, got {kind!r}")


def eta_hutchinson(
    X: np.ndarray,
    beta: float,
    alpha: float = 0.0,
    *,
    probes: int,
    rng: np.random.Generator,
    kind: str = "rademacher",
) -> tuple[float, float]:
    """Hutchinson estimate of ``eta = ||J||_F^2 / (n d)`` for one ``beta`` (spec §5).

    See :func:`eta_hutchinson_grid` (this is the one-``beta`` case).

    Returns
    -------
    (float, float)
        The estimate and its standard error (``nan`` for one probe).
    """
    check_layer_inputs(X, beta, alpha)
    est, se = eta_hutchinson_grid(X, [beta], alpha, probes=probes, rng=rng, kind=kind)
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
) -> tuple[np.ndarray, np.ndarray]:
    """Hutchinson estimates of eta (spec paper-a.md §5) for many ``beta``, sharing beta-free work.

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
        Source of the probes (see :mod:`attnscale.seeding`).
    kind : {"rademacher", "gaussian"}, optional
        Probe distribution.
    block_entries : int, optional
        Budget for the probe stack ``(probes, n, n)`` in float64 entries; larger stacks are
        processed in groups of probes (each group redraws nothing: probes are drawn up front).
        When even one ``n x n`` matrix exceeds it, the computation runs in row blocks with
        memory ``O(block_entries + n d)`` (:func:`_hutchinson_sq_blocked`), e.g. n = 32768.

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
    Y = X / r[:, None]
    if n * n > block_entries:  # not even one probe's n x n stack fits: row blocks
        sq = _hutchinson_sq_blocked(X, Y, r, betas, alpha, V, max(1, block_entries // (4 * n)))
        return _hutchinson_summary(sq, n, d, probes, betas.size)
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
    return _hutchinson_summary(sq, n, d, probes, betas.size)


def _hutchinson_summary(sq, n, d, probes, m):
    """Mean and standard error of ``||J v_p||^2 / (n d)`` over probes, per beta."""
    scale = 1.0 / (n * d)
    est = sq.mean(axis=0) * scale
    se = sq.std(axis=0, ddof=1) / np.sqrt(probes) * scale if probes > 1 else np.full(m, np.nan)
    return est, se


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


def eta_exact(X: np.ndarray, beta: float, alpha: float = 0.0) -> float:
    """Exact ``eta = ||J||_F^2 / (n d)`` for one ``beta`` from the block formula (spec §5).

    See :func:`eta_exact_grid` for the formula and its cost.
    """
    check_layer_inputs(X, beta, alpha)
    return float(eta_exact_grid(X, [beta], alpha)[0])


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
) -> np.ndarray:
    """Exact eta (spec paper-a.md §5) for many ``beta`` from the block structure of ``J`` [derived].

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
        Budget for one stacked ``(betas x rows, n)`` block, in float64 entries.
    route : {"auto", "gram", "outer"}, optional
        How ``||S_i||^2`` is computed (see above).

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
    quad, lin = _exact_terms(Y, r, betas, route, block_entries)
    # eta(alpha) = (quad + 2 alpha lin + alpha^2 n d) / (n d)
    out = (quad[None] + 2.0 * alphas[:, None] * lin[None] + (alphas**2)[:, None] * n * d) / (n * d)
    return out[0] if scalar_alpha else out


def _exact_terms(Y, r, betas, route, block_entries):
    """``sum_ik ||J_ik||^2`` at ``alpha = 0`` and ``sum_i tr B_i`` for every beta.

    Rows are processed in blocks small enough to stay in cache (``block_entries``), each block
    stacking several betas; the off-diagonal sum is expanded into row sums so that every
    ``(rows, n)`` array is touched only a few times::

        sum_k Q_ik T_ik = (d - 1 - 2 beta K_ii) q_i + 2 beta sum_k Q_ik K_ik G_ik
                          + beta^2 [(1 + mm_i) sum_k Q_ik (1 - G_ik^2)
                                    - 2 sum_k Q_ik K_ik (1 - G_ik^2)]

    with ``Q_ik = A_ik^2 / r_k^2`` (``i != k``, zero on the diagonal) and ``q_i = sum_k Q_ik``.
    """
    n, d = Y.shape
    w = 1.0 / r**2
    rinv = 1.0 / r
    G = Y @ Y.T
    if route == "gram":
        H = G * G
    else:
        iu, ju = np.triu_indices(d)
        Z = Y[:, iu] * Y[:, ju] * np.where(iu == ju, 1.0, np.sqrt(2.0))  # ||A_i Z|| = ||S_i||_F
    m = betas.size
    quad = np.zeros(m)
    lin = np.zeros(m)
    rows = int(max(1, min(n, block_entries // n)))  # rows per block
    bb = int(max(1, min(m, block_entries // (n * rows))))  # betas stacked per block
    for start in range(0, n, rows):
        stop = min(n, start + rows)
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
            M = A2 @ Y  # m_i
            K = M @ Y.T  # K_ij = <m_i, y_j>, (k b, n)
            K3 = K.reshape(k, b, n)
            mm = np.einsum("id,id->i", M, M).reshape(k, b)
            Kd = K3[:, diag[0], diag[1]]
            a = A[:, diag[0], diag[1]]
            bcol = bs[:, None]
            # ---- off-diagonal blocks ----
            Q = A * A
            Q *= w
            Q[:, diag[0], diag[1]] = 0.0
            qs = Q.sum(axis=2)
            q1 = np.einsum("kbn,bn->kb", Q, omH)
            Q *= K3  # Q_ik K_ik
            qkg = np.einsum("kbn,bn->kb", Q, Gb)
            qkh = np.einsum("kbn,bn->kb", Q, omH)
            off = (d - 1.0 - 2.0 * bcol * Kd) * qs + 2.0 * bcol * qkg
            off += bcol**2 * ((1.0 + mm) * q1 - 2.0 * qkh)
            # ---- diagonal blocks ----
            AG = A * Gb  # A_ij G_ij
            yCy = np.einsum("kbn,bn->kb", AG, Gb) - Kd**2  # y_i^T C_i y_i
            trCP = 1.0 - mm - yCy
            if route == "gram":
                s2 = np.einsum("in,in->i", A2 @ H, A2)
            else:
                AZ = A2 @ Z
                s2 = np.einsum("iz,iz->i", AZ, AZ)
            A *= K3  # A_ij K_ij
            mSm = np.einsum("in,in->i", A2, K).reshape(k, b)
            Cy = (AG.reshape(k * b, n) @ Y).reshape(k, b, d) - Kd[:, :, None] * M.reshape(k, b, d)
            cy2 = np.einsum("kbd,kbd->kb", Cy, Cy)
            cP2 = s2.reshape(k, b) - 2.0 * mSm + mm**2 - cy2  # ||C_i P_i||_F^2
            dg = (a**2 * (d - 1.0) + 2.0 * bcol * a * trCP + bcol**2 * cP2) * w[start:stop]
            quad[b0 : b0 + k] += off.sum(axis=1) + dg.sum(axis=1)
            lin[b0 : b0 + k] += (a * (d - 1.0) + bcol * trCP) @ rinv[start:stop]
    return quad, lin
