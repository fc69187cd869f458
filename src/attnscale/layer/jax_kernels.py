"""JAX kernels of one attention layer on pre-LN tokens (Paper A side; ``docs/gpu.md#kernels``).

One code path for CPU and GPU. Each function has the signature and the results of its numpy
counterpart (the reference) up to rounding, and is reached through the ``backend`` keyword of
that counterpart:

* lambda grid (:func:`angle_ratio_grid`; dense, row blocks, causal, per-row beta),
  the layer (:func:`forward`), self-weights (:func:`self_weights`, :func:`query_block`);
* eta: the exact block formula (:func:`eta_exact_grid`) and Hutchinson through ``jax.jvp``
  (:func:`eta_hutchinson_grid`, the same probes as numpy);
* weight statistics of query rows (:func:`row_weight_stats`, :func:`self_weight_scores`,
  :func:`self_weight_curve`);
* learned ``Q^T K`` scores (:func:`self_weight_grid`, :func:`layer_outputs`,
  :func:`angle_ratio_outputs`, :func:`layer_grid`).

Importing this module switches JAX to float64 (``jax_enable_x64``) before any array is made.

How lambda is computed (``docs/gpu.md#the-lambda-kernel``)
----------------------------------------------------------
Tokens are padded to ``N``, a multiple of the tile size ``t``. Pass 1 forms the outputs of a
group of ``B`` betas tile by tile: for query tile ``it`` and key tiles ``J`` (all of them, or
``J <= it`` under the causal mask) the ``t x t`` scores ``<y_i, y_j>`` are shifted by 1 (the row
maximum of unit vectors, ``<y_i, y_i> = 1``), so ``exp`` never overflows and needs no row-max
pass. Pass 2 visits the lower-triangle tiles only (lambda is a mean over unordered pairs) and
sums ``W_ij ||z_i - z_j||^2 / 2`` with ``W_ij = 1 / (1 - <y_i, y_j>)`` and the *centred* outputs
``z_i = y_i' - mean(y')``::

    sum_{j<i} W_ij ||z_i - z_j||^2 / 2
        = sum_{j<i} W_ij (c_i + c_j) / 2 - sum_{j<i} W_ij <z_i, z_j>,   c_i = ||z_i||^2,

as two GEMMs per tile. When the outputs have nearly collapsed (lambda small), ``z`` is small and
the cancellation happens at the scale of ``||z||^2``, not at the scale 1 of
``1 - <y_i', y_j'>``: the float32 variant stays accurate where the plain formula is not
(``tests/test_backend_jax.py::test_float32_centred_lambda_error``). Near pairs
(``1 - <y_i, y_j> < NEAR_PAIR_TOL``) are found per tile, counted on the device, and recomputed
exactly from differences on the host, as in :mod:`attnscale.layer.attention`. No ``n x n`` matrix is
formed: memory is ``O(N B d + B t^2)`` (:func:`attnscale.backend.lambda_bytes`).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from attnscale.backend import check_memory, plan_lambda, require_jax

jax = require_jax()
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

from attnscale.core.validation import (  # noqa: E402
    check_int,
    check_layer_inputs,
    check_matrix,
    check_nonzero_rows,
    check_real,
    check_vector,
)

__all__ = [
    "NEAR_PAIR_TOL",
    "COINCIDENT_TOL",
    "DTYPES",
    "angle_ratio_grid",
    "forward",
    "self_weights",
    "query_block",
    "eta_hutchinson_grid",
    "eta_exact_grid",
    "row_weight_stats",
    "self_weight_scores",
    "self_weight_curve",
    "self_weight_grid",
    "layer_outputs",
    "angle_ratio_outputs",
    "layer_grid",
]

#: Pairs with ``1 - <y_i, y_j>`` below this are recomputed exactly (as in ``attention``).
NEAR_PAIR_TOL = 1e-6

#: Relative threshold of a coincident pair in the centred formulation (as in
#: :mod:`attnscale.layer.score_attention`).
COINCIDENT_TOL = 100 * np.finfo(float).eps

DTYPES = {"float64": jnp.float64, "float32": jnp.float32}


def _dtype(dtype: str):
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {tuple(DTYPES)}, got {dtype!r}")
    return DTYPES[dtype]


def _ceil_to(n: int, t: int) -> int:
    return -(-n // t) * t


def _pad_rows(A: np.ndarray, N: int, fill: float = 0.0, unit: bool = False) -> np.ndarray:
    """``A`` with ``N - len(A)`` rows appended: ``fill`` values, or the unit vector ``e_1``."""
    n = A.shape[0]
    if N == n:
        return A
    pad = np.full((N - n,) + A.shape[1:], fill, dtype=A.dtype)
    if unit:
        pad[:, 0] = 1.0
    return np.concatenate([A, pad])


def _tile_for(n: int, block_rows, m: int, d: int, itemsize: int = 8) -> tuple[int, int]:
    """``(tile, betas per group)``: ``block_rows`` as the tile if given, else from the budget."""
    if block_rows is not None:
        t = check_int("block_rows", block_rows, minimum=1)
        plan = plan_lambda(n, d, m, tile=min(t, n), itemsize=itemsize)
    else:
        plan = plan_lambda(n, d, m, itemsize=itemsize)
    return plan["tile"], plan["betas_per_group"]


# =========================================================================== pass 1: outputs
def _pass1_core(Y, Bq, rows, nkt, *, t, n, causal, outputs, selfw):
    """Softmax-weighted outputs and self-weights of the query rows ``rows`` (shape ``(R,)``)
    with per-row betas ``Bq`` (``(B, R)``), over the key tiles ``0 .. nkt - 1`` of ``Y``."""
    B, R = Bq.shape
    d = Y.shape[1]
    Yq = Y[rows]

    def body(J, carry):
        z, acc, dg = carry
        Yk = lax.dynamic_slice_in_dim(Y, J * t, t, 0)
        cols = J * t + jnp.arange(t)
        valid = cols[None, :] < n
        if causal:
            valid = valid & (cols[None, :] <= rows[:, None])
        G = Yq @ Yk.T  # (R, t); <y_i, y_i> = 1 is the row maximum
        E = jnp.where(valid[None], jnp.exp(Bq[:, :, None] * (G - 1.0)[None]), 0.0)
        z = z + E.sum(-1)
        if outputs:
            acc = acc + jnp.einsum("brt,td->brd", E, Yk)
        if selfw:
            dg = dg + jnp.where(cols[None, None, :] == rows[None, :, None], E, 0.0).sum(-1)
        return z, acc, dg

    init = (
        jnp.zeros((B, R), Y.dtype),
        jnp.zeros((B, R, d if outputs else 0), Y.dtype),
        jnp.zeros((B, R), Y.dtype),
    )
    z, acc, dg = lax.fori_loop(0, nkt, body, init)
    return acc / z[..., None], dg / z


@partial(jax.jit, static_argnames=("t", "n", "causal", "outputs", "selfw"))
def _pass1_rows(Y, Bq, rows, nkt, *, t, n, causal, outputs, selfw):
    return _pass1_core(Y, Bq, rows, nkt, t=t, n=n, causal=causal, outputs=outputs, selfw=selfw)


@partial(jax.jit, static_argnames=("t", "n", "causal", "outputs", "selfw", "normalise"))
def _pass1_all(Y, X, Bg, alpha, *, t, n, causal, outputs, selfw, normalise):
    """Every query tile: outputs ``(B, N, d)`` (``+ alpha X``, normalised if asked) and
    self-weights ``(B, N)``."""
    N, d = Y.shape
    B = Bg.shape[0]
    nI = N // t

    def body(it, carry):
        out, sw = carry
        rows = it * t + jnp.arange(t)
        bq = lax.dynamic_slice_in_dim(Bg, it * t, t, 1)
        nkt = it + 1 if causal else nI
        o, s = _pass1_core(Y, bq, rows, nkt, t=t, n=n, causal=causal, outputs=outputs,
                           selfw=selfw)  # fmt: skip
        if outputs:
            out = lax.dynamic_update_slice_in_dim(out, o, it * t, 1)
        if selfw:
            sw = lax.dynamic_update_slice_in_dim(sw, s, it * t, 1)
        return out, sw

    init = (
        jnp.zeros((B, N, d if outputs else 0), Y.dtype),
        jnp.zeros((B, N if selfw else 0), Y.dtype),
    )
    out, sw = lax.fori_loop(0, nI, body, init)
    if outputs:
        out = out + alpha * X[None]
        if normalise:
            out = out / jnp.sqrt(jnp.sum(out * out, axis=-1, keepdims=True))
    return out, sw


# =========================================================================== pass 2: pair sums
def _pairs_core(Y, Z, cz, it, tol, *, t, n):
    """``sum_{j<i} W_ij ||z_i - z_j||^2 / 2`` (per beta) and the near-pair count of query tile
    ``it``; ``Z`` is ``(N, B, d)``, ``cz`` ``(N, B)``."""
    B = Z.shape[1]
    Yq = lax.dynamic_slice_in_dim(Y, it * t, t, 0)
    Zq = lax.dynamic_slice_in_dim(Z, it * t, t, 0)
    czq = lax.dynamic_slice_in_dim(cz, it * t, t, 0)
    rows = it * t + jnp.arange(t)

    def body(J, carry):
        acc, near_count = carry
        Yk = lax.dynamic_slice_in_dim(Y, J * t, t, 0)
        Zk = lax.dynamic_slice_in_dim(Z, J * t, t, 0)
        czk = lax.dynamic_slice_in_dim(cz, J * t, t, 0)
        cols = J * t + jnp.arange(t)
        D = 1.0 - Yq @ Yk.T
        valid = (cols[None, :] < rows[:, None]) & (rows[:, None] < n)
        near = valid & (D < tol)
        use = valid & ~near
        W = jnp.where(use, 1.0 / jnp.where(use, D, 1.0), 0.0)
        WZ = jnp.einsum("ij,jbd->ibd", W, Zk)
        cross = jnp.einsum("ibd,ibd->b", WZ, Zq)
        part = 0.5 * (W.sum(1) @ czq + W.sum(0) @ czk) - cross
        return acc + part.astype(jnp.float64), near_count + near.sum()

    return lax.fori_loop(0, it + 1, body, (jnp.zeros(B, jnp.float64), jnp.zeros((), jnp.int64)))


@partial(jax.jit, static_argnames=("t", "n"))
def _pairs_all(Y, Z, cz, tol, *, t, n):
    N = Y.shape[0]
    nI = N // t

    def body(it, carry):
        acc, counts = carry
        a, c = _pairs_core(Y, Z, cz, it, tol, t=t, n=n)
        return acc + a, counts.at[it].set(c)

    init = (jnp.zeros(Z.shape[1], jnp.float64), jnp.zeros(nI, jnp.int64))
    return lax.fori_loop(0, nI, body, init)


@partial(jax.jit, static_argnames=("t", "n"))
def _near_rows(Y, it, tol, *, t, n):
    """Near pairs ``j < i`` of query tile ``it`` over all keys, as a ``(t, N)`` mask."""
    Yq = lax.dynamic_slice_in_dim(Y, it * t, t, 0)
    rows = it * t + jnp.arange(t)
    cols = jnp.arange(Y.shape[0])
    D = 1.0 - Yq @ Y.T
    valid = (cols[None, :] < rows[:, None]) & (rows[:, None] < n)
    return valid & (D < tol)


@partial(jax.jit, static_argnames=("n", "centred"))
def _centre(Yp, *, n, centred):
    """``(N, B, d)`` centred outputs (zero on padded rows) and their squared norms ``(N, B)``;
    without centring the outputs themselves and ``c = 1`` (the plain formula)."""
    N = Yp.shape[1]
    rowmask = (jnp.arange(N) < n)[None, :, None]
    if centred:
        c = jnp.sum(jnp.where(rowmask, Yp, 0.0), axis=1, keepdims=True) / n
        Z = jnp.where(rowmask, Yp - c, 0.0)
        cz = jnp.sum(Z * Z, axis=-1)
    else:
        Z = jnp.where(rowmask, Yp, 0.0)
        cz = jnp.where(rowmask[..., 0], 1.0, 0.0).astype(Yp.dtype)
    return jnp.transpose(Z, (1, 0, 2)), cz.T


# =========================================================================== public: layer
def _beta_matrix(betas, n: int, per_row: bool) -> np.ndarray:
    from attnscale.layer.kernel_args import beta_grid

    if per_row:
        return beta_grid(betas, n)
    b = check_vector("betas", betas, low=0.0)
    return np.repeat(b[:, None], n, axis=1)


def angle_ratio_grid(X, betas, alpha: float = 0.0, *, block_rows=None, output_entries=None,
                     return_diagnostics: bool = False, causal: bool = False,
                     dtype: str = "float64", centred: bool = True):  # fmt: skip
    """lambda for many beta on JAX (``docs/paper-a.md#the-angle-ratio-lambda``,
    ``docs/gpu.md#the-lambda-kernel``); see :func:`attnscale.layer.attention.angle_ratio_grid`.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens.
    betas : array_like, shape (m,) or (m, n)
        Global betas, or one beta per query row (then, or with ``causal``, the per-row path).
    alpha : float, optional
        Residual weight ``>= 0``.
    block_rows : int, optional
        Tile size ``t`` (``block_rows >= n``: one tile, the dense case); default from the memory
        budget (:func:`attnscale.backend.plan_lambda`).
    output_entries : int, optional
        Caps the betas per group at ``output_entries // (n d)`` (at least 1).
    return_diagnostics : bool, optional
        Also return ``n_pairs``, ``n_near_pairs``, ``n_excluded_pairs``.
    causal : bool, optional
        Causal mask (query ``i`` sees keys ``j <= i``).
    dtype : {"float64", "float32"}, optional
        Working precision of the tiles (float32: ``docs/gpu.md#float32``).
    centred : bool, optional
        Centred formulation (default); ``False`` is the plain ``1 - <y_i', y_j'>`` formula,
        kept to measure its float32 error.

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, dict)
        ``(m,)`` lambda values (float64).
    """
    X, r, _, alpha = check_layer_inputs(X, None, alpha)
    n, d = X.shape
    per_row = bool(causal) or np.ndim(betas) == 2
    Bm = _beta_matrix(betas, n, per_row)
    m = Bm.shape[0]
    dt = _dtype(dtype)
    itemsize = 4 if dtype == "float32" else 8
    t, group = _tile_for(n, block_rows, m, d, itemsize)
    if output_entries is not None:
        group = min(
            group, max(1, check_int("output_entries", output_entries, minimum=1) // (n * d))
        )
    N = _ceil_to(n, t)
    Y = X / r[:, None]
    Yd = jnp.asarray(_pad_rows(Y, N, unit=True), dt)
    Xd = jnp.asarray(_pad_rows(X, N), dt)
    lam = np.empty(m)
    n_near = n_excl = 0
    total = n * (n - 1) // 2
    for g0 in range(0, m, group):
        Bg = Bm[g0 : g0 + group]
        Bgd = jnp.asarray(np.pad(Bg, ((0, 0), (0, N - n))), dt)
        Yp, _ = _pass1_all(Yd, Xd, Bgd, jnp.asarray(alpha, dt), t=t, n=n, causal=bool(causal),
                           outputs=True, selfw=False, normalise=True)  # fmt: skip
        Z, cz = _centre(Yp, n=n, centred=bool(centred))
        acc, counts = _pairs_all(Yd, Z, cz, NEAR_PAIR_TOL, t=t, n=n)
        num = np.asarray(acc, dtype=np.float64)
        counts = np.asarray(counts)
        n_pairs = total
        if counts.sum():
            ii, jj = [], []
            for it in np.flatnonzero(counts):
                a, b = np.nonzero(np.asarray(_near_rows(Yd, int(it), NEAR_PAIR_TOL, t=t, n=n)))
                ii.append(a + int(it) * t)
                jj.append(b)
            ii, jj = np.concatenate(ii), np.concatenate(jj)
            din = 0.5 * np.sum((Y[ii] - Y[jj]) ** 2, axis=1)
            keep = din > 0.0
            n_near, n_excl = int(ii.size), int((~keep).sum())
            ii, jj, din = ii[keep], jj[keep], din[keep]
            Yh = np.asarray(Yp, dtype=np.float64)  # (B, N, d)
            dout = 0.5 * np.sum((Yh[:, ii] - Yh[:, jj]) ** 2, axis=2)  # (B, k)
            num = num + (dout / din[None]).sum(axis=1)
            n_pairs = total - n_near + int(ii.size)
        lam[g0 : g0 + Bg.shape[0]] = num / n_pairs if n_pairs > 0 else np.nan
    if return_diagnostics:
        return lam, {"n_pairs": total, "n_near_pairs": n_near, "n_excluded_pairs": n_excl}
    return lam


def forward(X, beta, alpha: float = 0.0, *, causal: bool = False, block_rows=None,
            return_self_weight: bool = False):  # fmt: skip
    """One attention layer on JAX (``docs/paper-a.md#the-model``); see
    :func:`attnscale.layer.attention.forward` and :func:`attnscale.layer.causal.forward_rows`.

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, numpy.ndarray)
        ``X'`` of shape ``(n, d)`` (and ``A_ii`` with ``return_self_weight``).
    """
    from attnscale.layer.kernel_args import row_betas

    X, r, _, alpha = check_layer_inputs(X, None, alpha)
    n, d = X.shape
    b = row_betas(beta, n)
    t, _ = _tile_for(n, block_rows, 1, d)
    N = _ceil_to(n, t)
    Yd = jnp.asarray(_pad_rows(X / r[:, None], N, unit=True))
    Xd = jnp.asarray(_pad_rows(X, N))
    Bd = jnp.asarray(np.pad(b, (0, N - n))[None])
    out, sw = _pass1_all(Yd, Xd, Bd, jnp.asarray(alpha), t=t, n=n, causal=bool(causal),
                         outputs=True, selfw=bool(return_self_weight), normalise=False)  # fmt: skip
    out = np.asarray(out[0, :n])
    return (out, np.asarray(sw[0, :n])) if return_self_weight else out


def self_weights(X, betas, *, causal: bool = True, block_rows=None) -> np.ndarray:
    """Self-weights ``A_ii`` for a grid of scalings on JAX
    (``docs/realistic-attention.md#causal-mask``); see :func:`attnscale.layer.causal.self_weights`.

    Returns
    -------
    numpy.ndarray
        ``(m, n)``.
    """
    from attnscale.layer.kernel_args import beta_grid

    X, r, _, _ = check_layer_inputs(X, None, 0.0)
    n, d = X.shape
    Bm = beta_grid(betas, n)
    t, group = _tile_for(n, block_rows, Bm.shape[0], d)
    N = _ceil_to(n, t)
    Yd = jnp.asarray(_pad_rows(X / r[:, None], N, unit=True))
    out = np.empty(Bm.shape)
    for g0 in range(0, Bm.shape[0], group):
        Bg = jnp.asarray(np.pad(Bm[g0 : g0 + group], ((0, 0), (0, N - n))))
        _, sw = _pass1_all(Yd, Yd, Bg, jnp.asarray(0.0), t=t, n=n, causal=bool(causal),
                           outputs=False, selfw=True, normalise=False)  # fmt: skip
        out[g0 : g0 + Bg.shape[0]] = np.asarray(sw[:, :n])
    return out


def query_block(X, betas, start: int, stop: int, *, causal: bool = True) -> dict:
    """Outputs and self-weights of the queries ``start <= i < stop`` on JAX
    (``docs/realistic-attention.md#causal-mask``); see :func:`attnscale.layer.causal.query_block`.

    Returns
    -------
    dict
        ``self_weight`` ``(m, b)`` and ``outputs`` ``(m, b, d)``.
    """
    from attnscale.layer.kernel_args import beta_grid

    X, r, _, _ = check_layer_inputs(X, None, 0.0)
    n, d = X.shape
    Bm = beta_grid(betas, n)
    stop = check_int("stop", stop, minimum=1, maximum=n)
    start = check_int("start", start, minimum=0, maximum=stop - 1)
    R = stop - start
    t, _ = _tile_for(n, None, Bm.shape[0], d)
    check_memory(8 * Bm.shape[0] * R * (3 * t + 2 * d) + 8 * 2 * n * d, f"query_block of {R} rows")
    N = _ceil_to(n, t)
    Yd = jnp.asarray(_pad_rows(X / r[:, None], N, unit=True))
    rows = jnp.arange(start, stop)
    nkt = -(-stop // t) if causal else N // t
    outs, sw = _pass1_rows(Yd, jnp.asarray(Bm[:, start:stop]), rows, nkt, t=t, n=n,
                           causal=bool(causal), outputs=True, selfw=True)  # fmt: skip
    return {"self_weight": np.asarray(sw), "outputs": np.asarray(outs)}


# =========================================================================== eta: Hutchinson
def _layer_rows(X, it, beta, alpha, *, t, n):
    """Rows ``it t .. it t + t - 1`` of ``X' = softmax(beta Y Y^T) Y + alpha X`` (``X`` padded
    with unit rows; keys beyond ``n`` masked)."""
    Y = X / jnp.sqrt(jnp.sum(X * X, axis=1, keepdims=True))
    Yq = lax.dynamic_slice_in_dim(Y, it * t, t, 0)
    Xq = lax.dynamic_slice_in_dim(X, it * t, t, 0)
    valid = (jnp.arange(X.shape[0]) < n)[None, :]
    E = jnp.where(valid, jnp.exp(beta * (Yq @ Y.T - 1.0)), 0.0)
    return (E @ Y) / E.sum(1)[:, None] + alpha * Xq


@partial(jax.jit, static_argnames=("t", "n"))
def _hutchinson_all(X, V, bs, alpha, *, t, n):
    """``||J v_p||^2`` for every probe ``p`` of ``V`` (``(P, N, d)``) and beta of ``bs``, as
    ``(P, B)``: per query tile, ``jax.jvp`` of the tile's rows of the layer (betas batched with
    ``vmap``; the beta-free tangent of the scores is shared by every beta)."""
    N = X.shape[0]

    def body(it, acc):
        def rows_all_betas(Xv):
            return jax.vmap(lambda b: _layer_rows(Xv, it, b, alpha, t=t, n=n))(bs)

        def tangent(v):
            return jax.jvp(rows_all_betas, (X,), (v,))[1]  # (B, t, d)

        T = jax.vmap(tangent)(V)  # (P, B, t, d)
        rowmask = (it * t + jnp.arange(t)) < n
        return acc + jnp.sum(jnp.where(rowmask[None, None, :, None], T * T, 0.0), axis=(2, 3))

    return lax.fori_loop(0, N // t, body, jnp.zeros((V.shape[0], bs.shape[0]), X.dtype))


def eta_hutchinson_grid(X, betas, alpha: float = 0.0, *, probes: int, rng, kind: str = "rademacher",
                        block_entries: int | None = None):  # fmt: skip
    """Hutchinson estimates of eta through ``jax.jvp`` (``docs/paper-a.md#the-jacobian-norm-eta``,
    ``docs/gpu.md#kernels``); the probes are drawn exactly as by
    :func:`attnscale.layer.jacobian.eta_hutchinson_grid`, so both give the same estimate.

    ``block_entries`` is accepted for signature compatibility; the tile size comes from the
    memory budget.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``(m,)`` estimates and standard errors (``nan`` for one probe).
    """
    from attnscale.layer.kernel_args import PROBE_KINDS, draw_probes, hutchinson_summary

    X, r, _, alpha = check_layer_inputs(X, None, alpha)
    betas = check_vector("betas", betas, low=0.0)
    probes = check_int("probes", probes, minimum=1)
    if kind not in PROBE_KINDS:
        raise ValueError(f"kind must be one of {PROBE_KINDS}, got {kind!r}")
    n, d = X.shape
    V = draw_probes(rng, probes, n, d, kind)
    m = betas.size
    # per tile: (P, B, t, N) tangents of the weights (a few copies) and (P, t, N) score tangents
    t, P, B = _eta_plan(n, d, probes, m, per=10)
    N = _ceil_to(n, t)
    Xd = jnp.asarray(_pad_rows(X, N, unit=True))
    sq = np.empty((probes, m))
    for p0 in range(0, probes, P):
        Vd = jnp.asarray(np.stack([_pad_rows(v, N) for v in V[p0 : p0 + P]]))
        for b0 in range(0, m, B):
            bs = jnp.asarray(betas[b0 : b0 + B])
            res = _hutchinson_all(Xd, Vd, bs, jnp.asarray(alpha), t=t, n=n)
            sq[p0 : p0 + Vd.shape[0], b0 : b0 + bs.shape[0]] = np.asarray(res)
    return hutchinson_summary(sq, n, d, probes, m)


def _eta_plan(n: int, d: int, probes: int, m: int, per: int) -> tuple[int, int, int]:
    """Tile rows, probes and betas per call for the eta kernels: ``per`` arrays of
    ``P B t N`` float64 entries per tile (a generous count of XLA's temporaries), plus the tokens
    and probes; at most 4 probes and 16 betas per call."""
    from attnscale.backend import BackendError, memory_budget

    budget, source = memory_budget()
    for t in (256, 128, 64, 32, 16, 8):
        t = min(t, _ceil_to(n, 8))
        N = _ceil_to(n, t)
        base = 8 * (4 * N * d + 4 * t * N)
        for P, B in ((min(probes, 4), min(m, 16)), (1, min(m, 4)), (1, 1)):
            if base + 8 * (per * P * B * t * N + P * N * d) <= budget:
                return t, P, B
    raise BackendError(
        f"backend: jax: eta at n = {n}, d = {d} needs more than the budget of "
        f"{budget / 1e9:.2f} GB ({source}) even with 8-row tiles, one probe and one beta; use a "
        "device with more memory or lower n (docs/gpu.md#memory-sizing)"
    )


# =========================================================================== eta: exact
@partial(jax.jit, static_argnames=("t", "n", "route", "tc"))
def _exact_block(Y, w, rinv, Zf, bs, it, *, t, n, route, tc):
    """``sum_{i in tile} sum_k ||J_ik||^2`` at ``alpha = 0`` and ``sum_{i in tile} tr B_i`` per
    beta (the block formula of :func:`attnscale.layer.eta_exact.eta_exact_grid`)."""
    N, d = Y.shape
    k = bs.shape[0]
    Yq = lax.dynamic_slice_in_dim(Y, it * t, t, 0)
    wq = lax.dynamic_slice_in_dim(w, it * t, t, 0)
    rq = lax.dynamic_slice_in_dim(rinv, it * t, t, 0)
    rows = it * t + jnp.arange(t)
    cols = jnp.arange(N)
    cvalid = (cols < n)[None, :]
    rvalid = rows < n
    diag = cols[None, :] == rows[:, None]  # (t, N)
    Gb = Yq @ Y.T
    Mb = Gb - jnp.max(jnp.where(cvalid, Gb, -jnp.inf), axis=1, keepdims=True)
    omH = 1.0 - Gb * Gb
    A = jnp.where(cvalid[None], jnp.exp(bs[:, None, None] * Mb[None]), 0.0)
    A = A / A.sum(axis=2, keepdims=True)
    A2 = A.reshape(k * t, N)
    M = A2 @ Y
    K = M @ Y.T
    K3 = K.reshape(k, t, N)
    mm = jnp.sum(M * M, axis=1).reshape(k, t)
    Kd = jnp.sum(jnp.where(diag[None], K3, 0.0), axis=2)
    a = jnp.sum(jnp.where(diag[None], A, 0.0), axis=2)
    bcol = bs[:, None]
    Q = jnp.where(diag[None], 0.0, A * A * w[None, None, :])
    qs = Q.sum(axis=2)
    q1 = jnp.einsum("kbn,bn->kb", Q, omH)
    QK = Q * K3
    qkg = jnp.einsum("kbn,bn->kb", QK, Gb)
    qkh = jnp.einsum("kbn,bn->kb", QK, omH)
    off = (d - 1.0 - 2.0 * bcol * Kd) * qs + 2.0 * bcol * qkg
    off = off + bcol**2 * ((1.0 + mm) * q1 - 2.0 * qkh)
    AG = A * Gb
    yCy = jnp.einsum("kbn,bn->kb", AG, Gb) - Kd**2
    trCP = 1.0 - mm - yCy
    if route == "gram":  # ||S_i||^2 = sum_jl A_ij A_il G_jl^2, G^2 formed tc columns at a time

        def body(L, s2):
            YL = lax.dynamic_slice_in_dim(Y, L * tc, tc, 0)
            HL = (Y @ YL.T) ** 2  # (N, tc)
            AL = lax.dynamic_slice_in_dim(A2, L * tc, tc, 1)
            return s2 + jnp.sum((A2 @ HL) * AL, axis=1)

        s2 = lax.fori_loop(0, N // tc, body, jnp.zeros(k * t, Y.dtype))
    else:
        AZ = A2 @ Zf
        s2 = jnp.sum(AZ * AZ, axis=1)
    mSm = jnp.sum((A * K3).reshape(k * t, N) * K, axis=1).reshape(k, t)
    Cy = (AG.reshape(k * t, N) @ Y).reshape(k, t, d) - Kd[:, :, None] * M.reshape(k, t, d)
    cy2 = jnp.sum(Cy * Cy, axis=2)
    cP2 = s2.reshape(k, t) - 2.0 * mSm + mm**2 - cy2
    dg = (a**2 * (d - 1.0) + 2.0 * bcol * a * trCP + bcol**2 * cP2) * wq
    quad = jnp.sum(jnp.where(rvalid[None], off + dg, 0.0), axis=1)
    lin = (a * (d - 1.0) + bcol * trCP) @ jnp.where(rvalid, rq, 0.0)
    return quad, lin


def eta_exact_grid(X, betas, alpha=0.0, *, block_entries=None, route: str = "auto") -> np.ndarray:
    """Exact eta from the block formula on JAX (``docs/paper-a.md#exact-block-formula-for-eta``);
    see :func:`attnscale.layer.eta_exact.eta_exact_grid` (``block_entries`` is accepted for signature
    compatibility; tiles come from the memory budget).

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
    if route not in ("auto", "gram", "outer"):
        raise ValueError(f"route must be 'auto', 'gram' or 'outer', got {route!r}")
    n, d = X.shape
    if route == "auto":
        route = "gram" if 2.0 * n**3 < float(n) * n * d * (d + 1) else "outer"
    F = d * (d + 1) // 2
    m = betas.size
    t, _, B = _eta_plan(n, d, 1, m, per=16)
    N = _ceil_to(n, t)
    tc = t
    Y = X / r[:, None]
    if route == "outer":
        check_memory(8 * (N * F + B * t * F * 2), f"eta (outer route) at n = {n}, d = {d}")
        iu, ju = np.triu_indices(d)
        Zf = Y[:, iu] * Y[:, ju] * np.where(iu == ju, 1.0, np.sqrt(2.0))
        Zf = jnp.asarray(_pad_rows(Zf, N))
    else:
        Zf = jnp.zeros((N, 0))
    Yd = jnp.asarray(_pad_rows(Y, N, unit=True))
    w = jnp.asarray(np.pad(1.0 / r**2, (0, N - n)))
    rinv = jnp.asarray(np.pad(1.0 / r, (0, N - n)))
    quad = np.zeros(m)
    lin = np.zeros(m)
    for b0 in range(0, m, B):
        bs = jnp.asarray(betas[b0 : b0 + B])
        q = jnp.zeros(bs.shape[0])
        li = jnp.zeros(bs.shape[0])
        for it in range(N // t):
            qi, lii = _exact_block(Yd, w, rinv, Zf, bs, it, t=t, n=n, route=route, tc=tc)
            q, li = q + qi, li + lii
        quad[b0 : b0 + bs.shape[0]] = np.asarray(q)
        lin[b0 : b0 + bs.shape[0]] = np.asarray(li)
    out = (quad[None] + 2.0 * alphas[:, None] * lin[None] + (alphas**2)[:, None] * n * d) / (n * d)
    return out[0] if scalar_alpha else out


# =========================================================================== weight statistics
def _rows_arg(n: int, rows) -> np.ndarray:
    from attnscale.layer.kernel_args import check_rows

    return check_rows(n, rows)


@partial(jax.jit, static_argnames=("n",))
def _row_stats_block(Y, idx, betas, mass, *, n):
    G = Y[idx] @ Y.T  # (b, n)
    b = idx.shape[0]
    ar = jnp.arange(b)
    gself = G[ar, idx]
    others = jnp.arange(n - 1)
    take = others[None, :] + (others[None, :] >= idx[:, None])  # every column but the query's
    Go = jnp.take_along_axis(G, take, axis=1)
    Go = -jnp.sort(-Go, axis=1)  # the other keys, descending
    gmax = jnp.maximum(gself, Go[:, 0])
    Go = Go - gmax[:, None]
    dself = gself - gmax

    def one(beta):
        e = jnp.exp(beta * Go)
        es = jnp.exp(beta * dself)
        so = e.sum(axis=1)
        sq = jnp.sum(e * e, axis=1)
        z = es + so
        thr = mass * (1.0 - 1e-12) * z - es
        below = jnp.sum(jnp.cumsum(e, axis=1) < thr[:, None], axis=1)
        k = jnp.where(thr <= 0.0, 1, jnp.minimum(below + 2, n))
        return es / z, z * z / (es * es + sq), so * so / sq, k

    return jax.vmap(one, out_axes=1)(betas)


def row_weight_stats(X, betas, *, rows=None, mass: float = 0.9, block_entries=None) -> dict:
    """Self-weight, ``N_eff`` and the number of keys holding ``mass`` per query row and beta on
    JAX (``docs/finite-d.md``); see :func:`attnscale.layer.weight_stats.row_weight_stats`.

    Returns
    -------
    dict
        ``self_weight``, ``n_eff``, ``n_eff_others`` and ``k_mass``, each ``(len(rows), B)``.
    """
    X = check_matrix("X", X, min_rows=2)
    r = check_nonzero_rows("X", X)
    betas = check_vector("betas", betas, low=0.0)
    mass = check_real("mass", mass, low=0.0, high=1.0, low_open=True)
    n = X.shape[0]
    idx = _rows_arg(n, rows)
    m, B = idx.size, betas.size
    budget_rows = max(1, _budget_bytes() // (8 * n * (2 * B + 4)))
    b = int(min(m, budget_rows))
    Yd = jnp.asarray(X / r[:, None])
    bd = jnp.asarray(betas)
    parts = {k: [] for k in ("self_weight", "n_eff", "n_eff_others", "k_mass")}
    for s in range(0, m, b):
        rb = idx[s : s + b]
        rb_pad = np.pad(rb, (0, b - rb.size), mode="edge")  # one compiled shape
        res = _row_stats_block(Yd, jnp.asarray(rb_pad), bd, mass, n=n)
        for key, v in zip(parts, res, strict=True):
            parts[key].append(np.asarray(v)[: rb.size])
    out = {k: np.concatenate(v) for k, v in parts.items()}
    out["k_mass"] = out["k_mass"].astype(np.int64)
    return out


def _budget_bytes() -> int:
    """Bytes of the memory budget (:func:`attnscale.backend.memory_budget`)."""
    from attnscale.backend import memory_budget

    return memory_budget()[0]


@partial(jax.jit, static_argnames=("n",))
def _gaps_block(Y, idx, *, n):
    G = Y[idx] @ Y.T
    others = jnp.arange(n - 1)
    take = others[None, :] + (others[None, :] >= idx[:, None])
    return jnp.minimum(jnp.take_along_axis(G, take, axis=1) - 1.0, 0.0)


def self_weight_scores(X, *, rows=None, block_entries=None) -> np.ndarray:
    """Off-diagonal score gaps ``<y_i, y_j> - 1`` of the query rows on JAX, shape ``(m, n - 1)``
    (``docs/finite-d.md``); see :func:`attnscale.layer.weight_stats.self_weight_scores`."""
    X = check_matrix("X", X, min_rows=2)
    r = check_nonzero_rows("X", X)
    n = X.shape[0]
    idx = _rows_arg(n, rows)
    check_memory(8 * (idx.size * n + n * X.shape[1]), f"self_weight_scores of {idx.size} rows")
    b = int(max(1, min(idx.size, _budget_bytes() // (8 * n * 3))))
    Yd = jnp.asarray(X / r[:, None])
    out = np.empty((idx.size, n - 1))
    for s in range(0, idx.size, b):
        rb = idx[s : s + b]
        rb_pad = np.pad(rb, (0, b - rb.size), mode="edge")
        out[s : s + rb.size] = np.asarray(_gaps_block(Yd, jnp.asarray(rb_pad), n=n))[: rb.size]
    return out


@jax.jit
def _curve(gaps, beta):
    e = jnp.exp(beta * gaps)
    S = e.sum(axis=1)
    dS = jnp.sum(e * gaps, axis=1)
    a = 1.0 / (1.0 + S)
    return a, -dS * a * a


def self_weight_curve(gaps, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-row self-weight and its beta-derivative from score gaps on JAX (``docs/finite-d.md``);
    see :func:`attnscale.layer.weight_stats.self_weight_curve`. ``gaps`` may be a JAX array already on
    the device (no transfer per call)."""
    beta = check_real("beta", beta, low=0.0)
    a, da = _curve(jnp.asarray(gaps, jnp.float64), beta)
    return np.asarray(a), np.asarray(da)


# =========================================================================== learned scores
@partial(jax.jit, static_argnames=("t", "n", "outputs"))
def _score_block(Qm, Km, Y, X, bs, alpha, it, col, *, t, n, outputs):
    N = Qm.shape[0]
    Qq = lax.dynamic_slice_in_dim(Qm, it * t, t, 0)
    Xq = lax.dynamic_slice_in_dim(X, it * t, t, 0)
    rows = it * t + jnp.arange(t)
    cols = jnp.arange(N)
    valid = (cols < n)[None, :]
    S = Qq @ Km.T
    M = jnp.where(valid, S - jnp.max(jnp.where(valid, S, -jnp.inf), axis=1, keepdims=True), 0.0)
    E = jnp.where(valid[None], jnp.exp(bs[:, None, None] * M[None]), 0.0)  # (B, t, N)
    z = E.sum(-1)
    sw = jnp.sum(jnp.where((cols[None, :] == rows[:, None])[None], E, 0.0), axis=-1) / z
    cm = E[:, :, col] / z
    if outputs:
        out = jnp.einsum("btn,nd->btd", E, Y) / z[..., None] + alpha * Xq[None]
    else:
        out = jnp.zeros((bs.shape[0], t, 0), Y.dtype)
    return out, sw, cm


def _score_pass1(X, Qm, Km, betas, alpha, block_rows, *, outputs=True, col=None):
    from attnscale.layer.kernel_args import normalise

    Y = normalise(X)[0] if outputs else np.zeros((X.shape[0], 0))
    n, d = Y.shape
    m = betas.size
    if block_rows is not None:
        t = min(check_int("block_rows", block_rows, minimum=1), n)
    else:
        t = int(max(1, min(n, _budget_bytes() // (8 * n * (3 * m + 2)))))
    N = _ceil_to(n, t)
    Xo = X if outputs else Y
    args = [jnp.asarray(_pad_rows(np.asarray(A, np.float64), N)) for A in (Qm, Km, Y, Xo)]
    bs = jnp.asarray(betas)
    outs, sws, cms = [], [], []
    for it in range(N // t):
        o, s, c = _score_block(*args, bs, alpha, it, 0 if col is None else int(col), t=t, n=n,
                               outputs=outputs)  # fmt: skip
        outs.append(np.asarray(o))
        sws.append(np.asarray(s))
        cms.append(np.asarray(c))
    out = np.concatenate(outs, axis=1)[:, :n] if outputs else None
    sw = np.concatenate(sws, axis=1)[:, :n]
    cm = np.concatenate(cms, axis=1)[:, :n] if col is not None else None
    return out, sw, cm


def self_weight_grid(Qm, Km, betas, *, col=None, block_rows=None):
    """Self-weights (and the mass on column ``col``) for scores ``beta <q_i, k_j>`` on JAX
    (``docs/realistic-attention.md#learned-query-key-matrix``); see
    :func:`attnscale.layer.score_attention.self_weight_grid`."""
    from attnscale.layer.kernel_args import check_qk

    Qm, Km = check_qk(Qm, Km)
    betas = check_vector("betas", betas, low=0.0)
    n = Qm.shape[0]
    if col is not None:
        col = check_int("col", col, minimum=0, maximum=n - 1)
    _, sw, cm = _score_pass1(Km, Qm, Km, betas, 0.0, block_rows, outputs=False, col=col)
    return sw, cm


def layer_outputs(X, Qm, Km, betas, alpha: float = 0.0, *, block_rows=None):
    """Outputs of the layer with scores ``beta <q_i, k_j>`` for every beta on JAX, ``(m, n, d)``
    (``docs/realistic-attention.md#learned-query-key-matrix``); see
    :func:`attnscale.layer.score_attention.layer_outputs`."""
    from attnscale.layer.kernel_args import check_qk

    X = check_matrix("X", X, min_rows=2)
    n = X.shape[0]
    Qm, Km = check_qk(Qm, Km, n)
    betas = check_vector("betas", betas, low=0.0)
    alpha = check_real("alpha", alpha, low=0.0)
    return _score_pass1(X, Qm, Km, betas, alpha, block_rows)[0]


@partial(jax.jit, static_argnames=("t", "k"))
def _centred_pairs(Zi, ci, Zflat, co, Zo, it, *, t, k):
    """Row tile ``it`` of the centred pair sum of :func:`angle_ratio_outputs`."""
    K = Zi.shape[0]
    m = co.shape[0]
    rows = it * t + jnp.arange(t)
    cols = jnp.arange(K)
    Zq = lax.dynamic_slice_in_dim(Zi, it * t, t, 0)
    cq = lax.dynamic_slice_in_dim(ci, it * t, t, 0)
    D = cq[:, None] + ci[None, :] - 2.0 * (Zq @ Zi.T)
    valid = (rows[:, None] < k) & (cols[None, :] < k)
    bad = (D <= COINCIDENT_TOL * (cq[:, None] + ci[None, :])) | (rows[:, None] == cols[None, :])
    n_bad = jnp.sum(valid & bad) - jnp.sum(rows < k)
    use = valid & ~bad
    W = jnp.where(use, 1.0 / jnp.where(use, D, 1.0), 0.0)
    w = W.sum(axis=1)
    WZ = (W @ Zflat).reshape(t, m, -1)
    coq = lax.dynamic_slice_in_dim(co, it * t, t, 1)
    Zoq = lax.dynamic_slice_in_dim(Zo, it * t, t, 1)
    num = 2.0 * (coq @ w) - 2.0 * jnp.einsum("imd,mid->m", WZ, Zoq)
    return num, n_bad


def angle_ratio_outputs(Y, Yout, keep=None, *, block_rows=None):
    """lambda of a stack of outputs from centred Gram matrices on JAX
    (``docs/paper-a.md#the-angle-ratio-lambda``); see
    :func:`attnscale.layer.score_attention.angle_ratio_outputs`.

    Returns
    -------
    (numpy.ndarray, int, int)
        ``(m,)`` lambda, pairs used, coincident pairs left out.
    """
    from attnscale.layer.kernel_args import rows_mask

    Y = check_matrix("Y", Y, min_rows=2)
    n, d = Y.shape
    Yout = np.asarray(Yout, dtype=np.float64)
    if Yout.ndim != 3 or Yout.shape[1:] != (n, d):
        raise ValueError(f"Yout must have shape (m, {n}, {d}), got {Yout.shape}")
    keep = rows_mask(n, keep)
    idx = np.flatnonzero(keep)
    k = idx.size
    m = Yout.shape[0]
    Yk = Y[idx] / np.linalg.norm(Y[idx], axis=1, keepdims=True)
    Zi = Yk - Yk.mean(axis=0)
    ci = np.einsum("id,id->i", Zi, Zi)
    Yo = Yout[:, idx, :]
    Yo = Yo / np.linalg.norm(Yo, axis=2, keepdims=True)
    Zo = Yo - Yo.mean(axis=1, keepdims=True)
    co = np.einsum("mkd,mkd->mk", Zo, Zo)
    if block_rows is not None:
        t = min(check_int("block_rows", block_rows, minimum=1), k)
    else:
        t = int(max(1, min(k, _budget_bytes() // (8 * k * 4))))
    K = _ceil_to(k, t)
    Zflat = np.ascontiguousarray(Zo.transpose(1, 0, 2)).reshape(k, m * d)
    args = (
        jnp.asarray(_pad_rows(Zi, K)),
        jnp.asarray(_pad_rows(ci, K)),
        jnp.asarray(_pad_rows(Zflat, K)),
        jnp.asarray(np.pad(co, ((0, 0), (0, K - k)))),
        jnp.asarray(np.pad(Zo, ((0, 0), (0, K - k), (0, 0)))),
    )
    num = np.zeros(m)
    n_excl = 0
    for it in range(K // t):
        a, b = _centred_pairs(*args, it, t=t, k=k)
        num += np.asarray(a)
        n_excl += int(b)
    n_pairs = (k * (k - 1) - n_excl) // 2
    lam = num / (2.0 * n_pairs) if n_pairs > 0 else np.full(m, np.nan)
    return lam, n_pairs, n_excl // 2


def layer_grid(X, Qm, Km, betas, alpha: float = 0.0, *, keep=None, col=None, block_rows=None,
               output_entries=None) -> dict:  # fmt: skip
    """One layer with scores ``beta <q_i, k_j>`` for many beta on JAX: lambda, self-weights and
    the mass on column ``col`` (``docs/realistic-attention.md#learned-query-key-matrix``); see
    :func:`attnscale.layer.score_attention.layer_grid`.

    Returns
    -------
    dict
        ``lambda``, ``self_weight``, ``col_mass``, ``n_pairs``, ``n_excluded_pairs``.
    """
    from attnscale.layer.kernel_args import SCORE_OUTPUT_ENTRIES, check_qk, rows_mask

    X = check_matrix("X", X, min_rows=2)
    n, d = X.shape
    Qm, Km = check_qk(Qm, Km, n)
    betas = check_vector("betas", betas, low=0.0)
    alpha = check_real("alpha", alpha, low=0.0)
    keep = rows_mask(n, keep)
    if col is not None:
        col = check_int("col", col, minimum=0, maximum=n - 1)
    budget = SCORE_OUTPUT_ENTRIES if output_entries is None else output_entries
    group = int(max(1, min(betas.size, budget // (n * d))))
    lam = np.empty(betas.size)
    selfw = np.empty((betas.size, n))
    colm = np.empty((betas.size, n)) if col is not None else None
    n_pairs = n_excl = 0
    for g in range(0, betas.size, group):
        sl = slice(g, g + group)
        out, sw, cm = _score_pass1(X, Qm, Km, betas[sl], alpha, block_rows, col=col)
        selfw[sl] = sw
        if colm is not None:
            colm[sl] = cm
        Y = X / np.linalg.norm(X, axis=1, keepdims=True)
        lam[sl], n_pairs, n_excl = angle_ratio_outputs(Y, out, keep, block_rows=block_rows)
    return {"lambda": lam, "self_weight": selfw, "col_mass": colm, "n_pairs": n_pairs,
            "n_excluded_pairs": n_excl}  # fmt: skip
