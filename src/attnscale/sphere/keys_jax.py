"""JAX twin of :mod:`attnscale.sphere.keys` (Paper B, keys on the sphere; ``docs/paper-b.md``,
``docs/gpu.md#kernels``): the top weight ``A_(1)`` over a grid of beta, the ordered softmax
weights and the attention output of many queries.

Reached through the ``backend`` keyword of :func:`attnscale.sphere.keys.top_weight_from_d2q`,
:func:`attnscale.sphere.keys.ordered_weights_from_d2q` (and so
:func:`attnscale.sphere.keys.ordered_weights`) and :func:`attnscale.sphere.keys.attention_output`,
which validate the arguments and hand over the validated arrays. Same results as numpy, the
reference, up to rounding. Importing this module switches JAX to float64
(:func:`attnscale.backend.jax_float64`).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from attnscale.backend import jax_float64, memory_budget

jax = jax_float64()

import jax.numpy as jnp  # noqa: E402

__all__ = [
    "top_weight_from_d2q",
    "ordered_weights_from_d2q",
    "attention_output",
]


@jax.jit
def _top_block(D, betas):
    return jax.vmap(lambda b: 1.0 / jnp.exp(-b * D).sum(axis=1), out_axes=1)(betas)


def top_weight_from_d2q(D, betas, max_entries: int | None = None) -> np.ndarray:
    """``A_(1) = 1 / sum_j exp(-beta D_j)`` per row of ``D = T - min T`` and beta on JAX
    (``docs/paper-b.md``); the twin of :func:`attnscale.sphere.keys.top_weight_from_d2q`, which
    validates ``betas`` and shifts ``T``.

    Rows go in blocks of at most ``max_entries`` entries (default: from the memory budget, one
    ``rows x n`` block per beta at once).

    Returns
    -------
    numpy.ndarray
        ``(trials, b)`` top weights.
    """
    trials, n = D.shape
    if max_entries is None:
        max_entries = max(n, memory_budget()[0] // (8 * (betas.size + 2)))
    block_rows = int(max(1, min(trials, int(max_entries) // max(1, n))))
    out = np.empty((trials, betas.size))
    bd = jnp.asarray(betas)
    for s in range(0, trials, block_rows):
        blk = D[s : s + block_rows]
        pad = np.pad(blk, ((0, block_rows - blk.shape[0]), (0, 0)))  # one compiled shape
        out[s : s + blk.shape[0]] = np.asarray(_top_block(jnp.asarray(pad), bd))[: blk.shape[0]]
    return out


@partial(jax.jit, static_argnames=("k",))
def _ordered(T, beta, *, k):
    E = jnp.exp(-beta * (T - T.min(axis=-1, keepdims=True)))
    W = E / E.sum(axis=-1, keepdims=True)
    if k is None:
        return -jnp.sort(-W, axis=-1)
    return jax.lax.top_k(W, k)[0]


def ordered_weights_from_d2q(T, beta: float, k: int | None = None) -> np.ndarray:
    """Descending softmax weights ``exp(-beta T_i) / sum`` along the last axis on JAX
    (``docs/paper-b.md``); the twin of :func:`attnscale.sphere.keys.ordered_weights_from_d2q`,
    which validates ``beta`` and ``k`` (``None``: all ``n`` weights).

    Returns
    -------
    numpy.ndarray
        ``A_(1) >= A_(2) >= ...`` (all ``n``, or the ``k`` largest).
    """
    return np.asarray(_ordered(jnp.asarray(T), beta, k=k))


@jax.jit
def _attention_block(Q, K, beta):
    S = Q @ K.T
    E = jnp.exp(beta * (S - S.max(axis=1, keepdims=True)))
    return (E @ K) / E.sum(axis=1, keepdims=True)


def attention_output(Q, K, beta: float, block_entries: int | None = None) -> np.ndarray:
    """``ATT_n(q) = sum_i A_i(q) x_i`` for every row of ``Q`` on JAX (``docs/paper-b.md``); the
    twin of :func:`attnscale.sphere.keys.attention_output`, which validates the arguments
    (``block_entries`` caps the score block; default from the memory budget).

    Returns
    -------
    numpy.ndarray
        ``(m, d)`` outputs.
    """
    if block_entries is None:
        block_entries = max(K.shape[0], memory_budget()[0] // (8 * 3))
    block_rows = int(max(1, min(Q.shape[0], block_entries // K.shape[0])))
    Kd = jnp.asarray(K)
    out = np.empty_like(Q)
    for s in range(0, Q.shape[0], block_rows):
        blk = Q[s : s + block_rows]
        pad = np.pad(blk, ((0, block_rows - blk.shape[0]), (0, 0)), constant_values=1.0)
        out[s : s + blk.shape[0]] = np.asarray(_attention_block(jnp.asarray(pad), Kd, beta))[
            : blk.shape[0]
        ]
    return out
