"""JAX twin of :mod:`attnscale.layer.dense.attention`: the lambda grid (dense, row blocks, causal,
per-row beta) and the layer (``docs/gpu.md#the-lambda-kernel``).

Reached through the ``backend`` keyword of :func:`attnscale.layer.dense.attention.angle_ratio_grid`,
:func:`attnscale.layer.dense.attention.forward`, :func:`attnscale.layer.causal.angle_ratio.angle_ratio_grid_rows`
and :func:`attnscale.layer.causal.attention.forward_rows`, which validate the arguments and hand over the
validated arrays (this module checks only its own JAX-only arguments). Same results as numpy,
the reference, up to rounding.

How lambda is computed
----------------------
Pass 1 (:func:`attnscale.layer.dense.jax_tiles.pass1_all`) forms the normalised outputs of a group of
``B`` betas tile by tile. Pass 2 visits the lower-triangle tiles only (lambda is a mean over
unordered pairs) and sums ``W_ij ||z_i - z_j||^2 / 2`` with ``W_ij = 1 / (1 - <y_i, y_j>)`` and
the *centred* outputs ``z_i = y_i' - mean(y')``::

    sum_{j<i} W_ij ||z_i - z_j||^2 / 2
        = sum_{j<i} W_ij (c_i + c_j) / 2 - sum_{j<i} W_ij <z_i, z_j>,   c_i = ||z_i||^2,

as two GEMMs per tile. When the outputs have nearly collapsed (lambda small), ``z`` is small and
the cancellation happens at the scale of ``||z||^2``, not at the scale 1 of
``1 - <y_i', y_j'>``: the float32 variant stays accurate where the plain formula is not
(``docs/gpu.md#float32``). Near pairs (``1 - <y_i, y_j> < NEAR_PAIR_TOL``) are found per tile,
counted on the device, and recomputed exactly on the host by
:func:`attnscale.layer.dense.near_pairs.near_pair_sums`, as numpy does. No ``n x n`` matrix is formed:
memory is ``O(N B d + B t^2)`` (:func:`attnscale.backend.lambda_bytes`).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from attnscale.backend import jax_float64, padded
from attnscale.layer.dense.jax_tiles import pad_rows, pass1_all, tile_for
from attnscale.layer.dense.near_pairs import NEAR_PAIR_TOL, near_pair_sums

jax = jax_float64()

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

__all__ = ["DTYPES", "angle_ratio_grid", "forward"]

#: Working precisions of :func:`angle_ratio_grid` (``docs/gpu.md#float32``).
DTYPES = {"float64": jnp.float64, "float32": jnp.float32}


# =========================================================================== pass 2: pair sums
def _pairs_core(Y, Z, cz, it, tol, *, t, n):
    """``sum_{j<i} W_ij ||z_i - z_j||^2 / 2`` (per beta) and the near-pair count of query tile
    ``it``; ``Z`` is ``(N, B, d)``, ``cz`` ``(N, B)``."""
    B = Z.shape[1]
    Yq = lax.dynamic_slice_in_dim(Y, it * t, t, 0)
    Zq = lax.dynamic_slice_in_dim(Z, it * t, t, 0)
    czq = lax.dynamic_slice_in_dim(cz, it * t, t, 0)
    row_idx = it * t + jnp.arange(t)

    def body(J, carry):
        acc, near_count = carry
        Yk = lax.dynamic_slice_in_dim(Y, J * t, t, 0)
        Zk = lax.dynamic_slice_in_dim(Z, J * t, t, 0)
        czk = lax.dynamic_slice_in_dim(cz, J * t, t, 0)
        cols = J * t + jnp.arange(t)
        D = 1.0 - Yq @ Yk.T
        valid = (cols[None, :] < row_idx[:, None]) & (row_idx[:, None] < n)
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
    row_idx = it * t + jnp.arange(t)
    cols = jnp.arange(Y.shape[0])
    D = 1.0 - Yq @ Y.T
    valid = (cols[None, :] < row_idx[:, None]) & (row_idx[:, None] < n)
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


def angle_ratio_grid(
    X,
    r,
    betas,
    alpha: float,
    *,
    causal: bool = False,
    block_rows=None,
    output_entries=None,
    return_diagnostics: bool = False,
    dtype: str = "float64",
    centred: bool = True,
):
    """lambda for many beta on JAX (``docs/paper-a.md#the-angle-ratio-lambda``,
    ``docs/gpu.md#the-lambda-kernel``); the twin of
    :func:`attnscale.layer.dense.attention.angle_ratio_grid` and
    :func:`attnscale.layer.causal.angle_ratio.angle_ratio_grid_rows`, which validate the arguments.

    Parameters
    ----------
    X : numpy.ndarray, shape (n, d)
        Validated raw tokens (float64, non-zero rows).
    r : numpy.ndarray, shape (n,)
        Their row norms.
    betas : numpy.ndarray, shape (m,) or (m, n)
        Validated global betas, or one beta per query row.
    alpha : float
        Validated residual weight.
    causal : bool, optional
        Causal mask (query ``i`` sees keys ``j <= i``).
    block_rows : int, optional
        Tile size ``t`` (``block_rows >= n``: one tile, the dense case); default from the memory
        budget (:func:`attnscale.backend.plan_lambda`).
    output_entries : int, optional
        Caps the betas per group at ``output_entries // (n d)`` (at least 1).
    return_diagnostics : bool, optional
        Also return ``n_pairs``, ``n_near_pairs``, ``n_excluded_pairs``.
    dtype : {"float64", "float32"}, optional
        Working precision of the tiles (float32: ``docs/gpu.md#float32``; library calls only).
    centred : bool, optional
        Centred formulation (default); ``False`` is the plain ``1 - <y_i', y_j'>`` formula,
        kept to measure its float32 error.

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, dict)
        ``(m,)`` lambda values (float64).
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {tuple(DTYPES)}, got {dtype!r}")
    dt = DTYPES[dtype]
    n, d = X.shape
    Bm = betas if betas.ndim == 2 else np.repeat(betas[:, None], n, axis=1)
    m = Bm.shape[0]
    t, group = tile_for(n, block_rows, m, d, 4 if dtype == "float32" else 8)
    if output_entries is not None:
        group = min(group, max(1, output_entries // (n * d)))
    N = padded(n, t)
    Y = X / r[:, None]
    Yd = jnp.asarray(pad_rows(Y, N, unit=True), dt)
    Xd = jnp.asarray(pad_rows(X, N), dt)
    lam = np.empty(m)
    n_near = n_excl = 0
    total = n * (n - 1) // 2
    for g0 in range(0, m, group):
        Bg = Bm[g0 : g0 + group]
        Bgd = jnp.asarray(np.pad(Bg, ((0, 0), (0, N - n))), dt)
        Yp, _ = pass1_all(
            Yd,
            Xd,
            Bgd,
            jnp.asarray(alpha, dt),
            t=t,
            n=n,
            causal=bool(causal),
            outputs=True,
            selfw=False,
            normalise=True,
        )
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
            Yh = np.asarray(Yp, dtype=np.float64).transpose(1, 0, 2)  # (N, B, d), token first
            sums, kept, n_excl = near_pair_sums(Y, Yh, np.concatenate(ii), np.concatenate(jj))
            num = num + sums
            n_near = kept + n_excl
            n_pairs = total - n_near + kept
        lam[g0 : g0 + Bg.shape[0]] = num / n_pairs if n_pairs > 0 else np.nan
    if return_diagnostics:
        return lam, {"n_pairs": total, "n_near_pairs": n_near, "n_excluded_pairs": n_excl}
    return lam


def forward(
    X,
    r,
    b,
    alpha: float,
    *,
    causal: bool = False,
    block_rows=None,
    return_self_weight: bool = False,
):
    """One attention layer on JAX (``docs/paper-a.md#the-model``); the twin of
    :func:`attnscale.layer.dense.attention.forward` and :func:`attnscale.layer.causal.attention.forward_rows`,
    which validate the arguments.

    Parameters
    ----------
    X, r : numpy.ndarray
        Validated raw tokens ``(n, d)`` and their row norms.
    b : numpy.ndarray, shape (n,)
        Validated per-row betas (a global beta repeated).
    alpha : float
        Validated residual weight.
    causal : bool, optional
        Causal mask.
    block_rows : int, optional
        Tile size; default from the memory budget.
    return_self_weight : bool, optional
        Also return ``A_ii``.

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, numpy.ndarray)
        ``X'`` of shape ``(n, d)`` (and ``A_ii`` with ``return_self_weight``).
    """
    n, d = X.shape
    t, _ = tile_for(n, block_rows, 1, d)
    N = padded(n, t)
    Yd = jnp.asarray(pad_rows(X / r[:, None], N, unit=True))
    Xd = jnp.asarray(pad_rows(X, N))
    Bd = jnp.asarray(np.pad(b, (0, N - n))[None])
    out, sw = pass1_all(
        Yd,
        Xd,
        Bd,
        jnp.asarray(alpha),
        t=t,
        n=n,
        causal=bool(causal),
        outputs=True,
        selfw=bool(return_self_weight),
        normalise=False,
    )
    out = np.asarray(out[0, :n])
    return (out, np.asarray(sw[0, :n])) if return_self_weight else out
