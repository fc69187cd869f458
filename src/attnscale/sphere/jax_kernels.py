"""JAX kernels of Paper B (keys on the sphere; ``docs/paper-b.md``, ``docs/gpu.md#kernels``):
the top weight ``A_(1)`` over a grid of beta, the ordered softmax weights and the attention output
of many queries. Same signatures and results (up to rounding) as :mod:`attnscale.sphere.keys`, reached
through its ``backend`` keyword.

Importing this module switches JAX to float64 (``jax_enable_x64``) before any array is made.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from attnscale.backend import memory_budget, require_jax

jax = require_jax()
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

from attnscale.core.validation import check_int, check_matrix, check_real, check_vector  # noqa: E402

__all__ = [
    "top_weight_from_d2q",
    "ordered_weights_from_d2q",
    "attention_output",
]


@jax.jit
def _top_block(D, betas):
    return jax.vmap(lambda b: 1.0 / jnp.exp(-b * D).sum(axis=1), out_axes=1)(betas)


def top_weight_from_d2q(T, betas, max_entries: int | None = None) -> np.ndarray:
    """``A_(1) = 1 / sum_j exp(-beta (T_j - min T))`` per row of ``T`` and beta on JAX
    (``docs/paper-b.md``); see :func:`attnscale.sphere.keys.top_weight_from_d2q`.

    Rows go in blocks of at most ``max_entries`` entries (default: from the memory budget, one
    ``rows x n`` block per beta at once).

    Returns
    -------
    numpy.ndarray
        ``(trials, b)`` top weights.
    """
    T = np.atleast_2d(np.asarray(T, dtype=float))
    betas = check_vector("betas", betas, low=0.0)
    D = T - T.min(axis=1, keepdims=True)
    trials, n = D.shape
    if max_entries is None:
        max_entries = max(n, memory_budget()[0] // (8 * (betas.size + 2)))
    rows = int(max(1, min(trials, int(max_entries) // max(1, n))))
    out = np.empty((trials, betas.size))
    bd = jnp.asarray(betas)
    for s in range(0, trials, rows):
        blk = D[s : s + rows]
        pad = np.pad(blk, ((0, rows - blk.shape[0]), (0, 0)))  # one compiled shape
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
    (``docs/paper-b.md``); see :func:`attnscale.sphere.keys.ordered_weights_from_d2q`.

    Returns
    -------
    numpy.ndarray
        ``A_(1) >= A_(2) >= ...`` (all ``n``, or the ``k`` largest).
    """
    beta = check_real("beta", beta, low=0.0)
    T = np.asarray(T, dtype=float)
    n = T.shape[-1]
    if k is not None and k < n:
        k = check_int("k", k, minimum=1)
    else:
        k = None
    return np.asarray(_ordered(jnp.asarray(T), beta, k=k))


@jax.jit
def _attention_block(Q, K, beta):
    S = Q @ K.T
    E = jnp.exp(beta * (S - S.max(axis=1, keepdims=True)))
    return (E @ K) / E.sum(axis=1, keepdims=True)


def attention_output(Q, K, beta: float, block_entries: int | None = None) -> np.ndarray:
    """``ATT_n(q) = sum_i A_i(q) x_i`` for every row of ``Q`` on JAX (``docs/paper-b.md``); see
    :func:`attnscale.sphere.keys.attention_output` (``block_entries`` caps the score block; default from
    the memory budget).

    Returns
    -------
    numpy.ndarray
        ``(m, d)`` outputs.
    """
    Q = check_matrix("Q", Q)
    K = check_matrix("K", K)
    if Q.shape[1] != K.shape[1]:
        raise ValueError(
            f"Q and K must have the same number of columns, got {Q.shape[1]}, {K.shape[1]}"
        )
    beta = check_real("beta", beta, low=0.0)
    if block_entries is None:
        block_entries = max(K.shape[0], memory_budget()[0] // (8 * 3))
    block_entries = check_int("block_entries", block_entries, minimum=1)
    rows = int(max(1, min(Q.shape[0], block_entries // K.shape[0])))
    Kd = jnp.asarray(K)
    out = np.empty_like(Q)
    for s in range(0, Q.shape[0], rows):
        blk = Q[s : s + rows]
        pad = np.pad(blk, ((0, rows - blk.shape[0]), (0, 0)), constant_values=1.0)
        out[s : s + blk.shape[0]] = np.asarray(_attention_block(jnp.asarray(pad), Kd, beta))[
            : blk.shape[0]
        ]
    return out
