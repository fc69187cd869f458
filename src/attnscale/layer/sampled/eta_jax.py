"""JAX twin of :mod:`attnscale.layer.sampled.eta`: every row sum that the per-row Jacobian norm
``R_i`` needs, for the sampled query rows against all their keys
(``docs/long-context.md#the-jacobian-norm-of-one-output-row``, ``docs/gpu.md#kernels``).

Reached through the ``backend`` keyword of :func:`attnscale.layer.sampled.eta.eta_sampled` and
:func:`attnscale.layer.sampled.eta.row_jacobian_norms`, which validate the arguments, draw the
rows and the tangent probes with numpy (so both backends use the same ones), and turn the sums
into ``R_i`` and the estimate with the same numpy code
(:func:`attnscale.layer.sampled.eta.jacobian_row_norms`). Here the heavy part, ``O(B m n d)``:
per key tile the Gram and probe products of the sampled rows (beta-free), then per beta the
weights ``E = exp(beta (g - 1))`` (keys padded to whole tiles and masked; causal mask) and the
sums of :func:`attnscale.layer.sampled.eta.row_sums`.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from attnscale.backend import jax_float64, memory_budget, padded
from attnscale.layer.dense.jax_tiles import pad_rows

jax = jax_float64()

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

__all__ = ["SCALARS", "row_sums"]

#: The per-row scalar sums, in the order of :func:`attnscale.layer.sampled.eta.row_sums`.
SCALARS = ("z", "e_self", "sag2", "sF", "sFom")
#: Largest key tile.
MAX_TILE = 1024


@partial(jax.jit, static_argnames=("t", "n", "causal"))
def _sums(Y, rinv2, Q, row_idx, Bq, nkt, *, t, n, causal):
    """The sums for query rows ``row_idx`` (unit rows and probes ``Q``, ``(1 + P, R, d)``) and betas
    ``Bq`` ``(B, R)`` over the first ``nkt`` key tiles of the padded unit keys ``Y``."""
    B, R = Bq.shape
    P = Q.shape[0] - 1
    d = Y.shape[1]

    def body(J, carry):
        sc, mv, cv, pv = carry
        Yk = lax.dynamic_slice_in_dim(Y, J * t, t, 0)
        ri = lax.dynamic_slice_in_dim(rinv2, J * t, t, 0)
        cols = J * t + jnp.arange(t)
        valid = cols[None, :] < n
        if causal:
            valid = valid & (cols[None, :] <= row_idx[:, None])
        own = cols[None, :] == row_idx[:, None]  # (R, t): the row's own key
        prod = jnp.einsum("prd,td->prt", Q, Yk)
        G = prod[0]
        G2 = G * G
        om = 1.0 - G2
        E = jnp.where(valid[None], jnp.exp(Bq[:, :, None] * (G - 1.0)[None]), 0.0)  # (B, R, t)
        F = jnp.where(own[None], 0.0, E * E * ri[None, None, :])  # k != i
        T = G[None] - Bq[:, :, None] * om[None]
        new = jnp.stack(
            [
                E.sum(-1),
                jnp.where(own[None], E, 0.0).sum(-1),
                (E * G2[None]).sum(-1),
                F.sum(-1),
                (F * om[None]).sum(-1),
            ]
        )
        mv = mv + jnp.einsum("brt,td->brd", E, Yk)
        cv = cv + jnp.einsum("brt,td->brd", F * T, Yk)
        pv = pv + jnp.einsum("brt,prt,td->bprd", E, prod[1:], Yk)
        return sc + new, mv, cv, pv

    init = (
        jnp.zeros((len(SCALARS), B, R)),
        jnp.zeros((B, R, d)),
        jnp.zeros((B, R, d)),
        jnp.zeros((B, P, R, d)),
    )
    return lax.fori_loop(0, nkt, body, init)


def row_sums(X, r, idx, brow, W, causal: bool) -> dict:
    """The row sums of :func:`attnscale.layer.sampled.eta.row_sums` on JAX, for the validated
    tokens ``X`` (row norms ``r``), the sampled rows ``idx`` (sorted), their betas ``brow``
    ``(B, m)`` and tangent probes ``W`` ``(P, m, d)``: a dict of numpy arrays ``z``, ``e_self``,
    ``sag2``, ``sF``, ``sFom`` ``(B, m)``, ``mv``, ``cv`` ``(B, m, d)`` and ``pv``
    ``(B, P, m, d)``. Betas go in groups that fit half the memory budget with ``4 + P`` arrays of
    ``B m t`` entries per tile."""
    n, d = X.shape
    B, m = brow.shape
    P = W.shape[0]
    t = int(min(MAX_TILE, padded(n, 8)))
    N = padded(n, t)
    budget = memory_budget()[0] // 2
    group = int(max(1, min(B, budget // max(1, 8 * (4 + P) * m * t))))
    Y = jnp.asarray(pad_rows(X / r[:, None], N, unit=True))
    rinv2 = jnp.asarray(np.pad(1.0 / r**2, (0, N - n)))
    Q = jnp.asarray(np.concatenate([(X[idx] / r[idx, None])[None], W]))
    row_idx = jnp.asarray(idx)
    nkt = (int(idx[-1]) // t + 1) if causal else N // t
    parts = []
    for g0 in range(0, B, group):
        res = _sums(
            Y,
            rinv2,
            Q,
            row_idx,
            jnp.asarray(brow[g0 : g0 + group]),
            nkt,
            t=t,
            n=n,
            causal=bool(causal),
        )
        parts.append([np.asarray(a) for a in res])
    sc, mv, cv, pv = (
        np.concatenate([p[k] for p in parts], axis=1 if k == 0 else 0) for k in range(4)
    )
    out = {key: sc[k] for k, key in enumerate(SCALARS)}
    out.update(mv=mv, cv=cv, pv=pv)
    return out
