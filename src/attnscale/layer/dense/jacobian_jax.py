"""JAX twin of :mod:`attnscale.layer.dense.jacobian`: the squared Jacobian-probe products of the
Hutchinson estimator of eta through ``jax.jvp`` (``docs/paper-a.md#the-jacobian-norm-eta``,
``docs/gpu.md#kernels``).

Reached through the ``backend`` keyword of
:func:`attnscale.layer.dense.jacobian.eta_hutchinson_grid`, which validates the arguments, draws the
probes (so both backends use the same probes) and turns the squared norms into the estimate and
its standard error (:func:`attnscale.layer.dense.kernel_args.hutchinson_summary`).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from attnscale.backend import jax_float64, padded
from attnscale.layer.dense.jax_tiles import eta_plan, pad_rows

jax = jax_float64()

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

__all__ = ["hutchinson_squares"]


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


def hutchinson_squares(X, betas, alpha: float, V) -> np.ndarray:
    """``||J v_p||^2`` for every probe ``v_p`` and beta through ``jax.jvp``; the twin of the
    numpy products of :func:`attnscale.layer.dense.jacobian.eta_hutchinson_grid`.

    Parameters
    ----------
    X : numpy.ndarray, shape (n, d)
        Validated raw tokens.
    betas : numpy.ndarray, shape (m,)
        Validated inverse temperatures.
    alpha : float
        Validated residual weight.
    V : numpy.ndarray, shape (probes, n, d)
        The probes (:func:`attnscale.layer.dense.kernel_args.draw_probes`).

    Returns
    -------
    numpy.ndarray
        ``(probes, m)`` squared norms.
    """
    n, d = X.shape
    probes, m = V.shape[0], betas.size
    # per tile: (P, B, t, N) tangents of the weights (a few copies) and (P, t, N) score tangents
    t, P, B = eta_plan(n, d, probes, m, per=10)
    N = padded(n, t)
    Xd = jnp.asarray(pad_rows(X, N, unit=True))
    sq = np.empty((probes, m))
    for p0 in range(0, probes, P):
        Vd = jnp.asarray(np.stack([pad_rows(v, N) for v in V[p0 : p0 + P]]))
        for b0 in range(0, m, B):
            bs = jnp.asarray(betas[b0 : b0 + B])
            res = _hutchinson_all(Xd, Vd, bs, jnp.asarray(alpha), t=t, n=n)
            sq[p0 : p0 + Vd.shape[0], b0 : b0 + bs.shape[0]] = np.asarray(res)
    return sq
