"""JAX twin of :mod:`attnscale.layer.dense.eta_exact`: the exact block formula of eta in query tiles,
betas stacked (``docs/paper-a.md#exact-block-formula-for-eta``, ``docs/gpu.md#kernels``).

Reached through the ``backend`` keyword of :func:`attnscale.layer.dense.eta_exact.eta_exact_grid`,
which validates the arguments, picks the route and turns the two sums into eta for every alpha.
The formula of a tile is :func:`attnscale.layer.dense.eta_block.block_terms`, the same code as numpy's;
here it runs on ``jax.numpy`` inside a jitted tile whose padded keys and rows are masked. The
Gram route forms ``G * G`` ``t`` columns at a time (no ``n x n`` matrix), the outer route keeps
the ``n x d (d + 1) / 2`` features.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from attnscale.backend import check_memory, jax_float64, padded
from attnscale.layer.dense.eta_block import block_terms, outer_features
from attnscale.layer.dense.jax_tiles import eta_plan, pad_rows

jax = jax_float64()

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

__all__ = ["exact_terms"]


@partial(jax.jit, static_argnames=("t", "n", "route", "tc"))
def _exact_tile(Y, w, rinv, Zf, bs, it, *, t, n, route, tc):
    """``sum_{i in tile} sum_k ||J_ik||^2`` at ``alpha = 0`` and ``sum_{i in tile} tr B_i`` per
    beta of ``bs`` for query tile ``it``."""
    N = Y.shape[0]
    k = bs.shape[0]
    Yq = lax.dynamic_slice_in_dim(Y, it * t, t, 0)
    wq = lax.dynamic_slice_in_dim(w, it * t, t, 0)
    rq = lax.dynamic_slice_in_dim(rinv, it * t, t, 0)
    row_idx = it * t + jnp.arange(t)
    cvalid = (jnp.arange(N) < n)[None, :]
    rvalid = row_idx < n
    Gb = Yq @ Y.T
    Mb = Gb - jnp.max(jnp.where(cvalid, Gb, -jnp.inf), axis=1, keepdims=True)
    A = jnp.where(cvalid[None], jnp.exp(bs[:, None, None] * Mb[None]), 0.0)
    A = A / A.sum(axis=2, keepdims=True)
    A2 = A.reshape(k * t, N)
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
    off, dg, tr = block_terms(jnp, Y, Gb, 1.0 - Gb * Gb, A, s2, bs, w, wq, (jnp.arange(t), row_idx))
    quad = jnp.sum(jnp.where(rvalid[None], off + dg, 0.0), axis=1)
    return quad, tr @ jnp.where(rvalid, rq, 0.0)


def exact_terms(Y, r, betas, route: str) -> tuple[np.ndarray, np.ndarray]:
    """``sum_ik ||J_ik||^2`` at ``alpha = 0`` and ``sum_i tr B_i`` for every beta on JAX; the twin
    of the numpy sums of :func:`attnscale.layer.dense.eta_exact.eta_exact_grid` (tiles from the memory
    budget).

    Parameters
    ----------
    Y : numpy.ndarray, shape (n, d)
        Unit rows of validated tokens.
    r : numpy.ndarray, shape (n,)
        Their row norms.
    betas : numpy.ndarray, shape (m,)
        Validated inverse temperatures.
    route : {"gram", "outer"}
        How ``||S_i||^2`` is computed.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``(m,)`` each.
    """
    n, d = Y.shape
    F = d * (d + 1) // 2
    m = betas.size
    t, _, B = eta_plan(n, d, 1, m, per=16)
    N = padded(n, t)
    if route == "outer":
        check_memory(8 * (N * F + B * t * F * 2), f"eta (outer route) at n = {n}, d = {d}")
        Zf = jnp.asarray(pad_rows(outer_features(Y), N))
    else:
        Zf = jnp.zeros((N, 0))
    Yd = jnp.asarray(pad_rows(Y, N, unit=True))
    w = jnp.asarray(np.pad(1.0 / r**2, (0, N - n)))
    rinv = jnp.asarray(np.pad(1.0 / r, (0, N - n)))
    quad = np.zeros(m)
    lin = np.zeros(m)
    for b0 in range(0, m, B):
        bs = jnp.asarray(betas[b0 : b0 + B])
        q = jnp.zeros(bs.shape[0])
        li = jnp.zeros(bs.shape[0])
        for it in range(N // t):
            qi, lii = _exact_tile(Yd, w, rinv, Zf, bs, it, t=t, n=n, route=route, tc=t)
            q, li = q + qi, li + lii
        quad[b0 : b0 + bs.shape[0]] = np.asarray(q)
        lin[b0 : b0 + bs.shape[0]] = np.asarray(li)
    return quad, lin
