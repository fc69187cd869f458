"""JAX twin of :mod:`attnscale.layer.causal.attention`: self-weights for a grid of scalings and the outputs
of one query block (``docs/realistic-attention.md#causal-mask``, ``docs/gpu.md#kernels``).

Reached through the ``backend`` keyword of :func:`attnscale.layer.causal.attention.self_weights` and
:func:`attnscale.layer.causal.attention.query_block`, which validate the arguments and hand over the
validated arrays. Both run pass 1 of the tiled layer (:mod:`attnscale.layer.dense.jax_tiles`); the
causal lambda grid and the layer itself are in :mod:`attnscale.layer.dense.attention_jax`.
"""

from __future__ import annotations

import numpy as np

from attnscale.backend import check_memory, jax_float64, padded
from attnscale.layer.dense.jax_tiles import pad_rows, pass1_all, pass1_rows, tile_for

jax = jax_float64()

import jax.numpy as jnp  # noqa: E402

__all__ = ["self_weights", "query_block"]


def self_weights(X, r, betas, *, causal: bool = True, block_rows=None) -> np.ndarray:
    """Self-weights ``A_ii`` for a grid of scalings on JAX; the twin of
    :func:`attnscale.layer.causal.attention.self_weights`.

    Parameters
    ----------
    X, r : numpy.ndarray
        Validated raw tokens ``(n, d)`` and their row norms.
    betas : numpy.ndarray, shape (m, n)
        Validated per-row betas (:func:`attnscale.layer.dense.kernel_args.beta_matrix`).
    causal : bool, optional
    block_rows : int, optional
        Tile size; default from the memory budget.

    Returns
    -------
    numpy.ndarray
        ``(m, n)``.
    """
    n, d = X.shape
    t, group = tile_for(n, block_rows, betas.shape[0], d)
    N = padded(n, t)
    Yd = jnp.asarray(pad_rows(X / r[:, None], N, unit=True))
    out = np.empty(betas.shape)
    for g0 in range(0, betas.shape[0], group):
        Bg = jnp.asarray(np.pad(betas[g0 : g0 + group], ((0, 0), (0, N - n))))
        _, sw = pass1_all(
            Yd,
            Yd,
            Bg,
            jnp.asarray(0.0),
            t=t,
            n=n,
            causal=bool(causal),
            outputs=False,
            selfw=True,
            normalise=False,
        )
        out[g0 : g0 + Bg.shape[0]] = np.asarray(sw[:, :n])
    return out


def query_block(X, r, betas, start: int, stop: int, *, causal: bool = True) -> dict:
    """Outputs and self-weights of the queries ``start <= i < stop`` on JAX; the twin of
    :func:`attnscale.layer.causal.attention.query_block`.

    Parameters
    ----------
    X, r : numpy.ndarray
        Validated raw tokens ``(n, d)`` and their row norms.
    betas : numpy.ndarray, shape (m, n)
        Validated per-row betas.
    start, stop : int
        Validated query rows, ``0 <= start < stop <= n``.
    causal : bool, optional

    Returns
    -------
    dict
        ``self_weight`` ``(m, b)`` and ``outputs`` ``(m, b, d)``.
    """
    n, d = X.shape
    R = stop - start
    t, _ = tile_for(n, None, betas.shape[0], d)
    check_memory(
        8 * betas.shape[0] * R * (3 * t + 2 * d) + 8 * 2 * n * d, f"query_block of {R} rows"
    )
    N = padded(n, t)
    Yd = jnp.asarray(pad_rows(X / r[:, None], N, unit=True))
    row_idx = jnp.arange(start, stop)
    nkt = -(-stop // t) if causal else N // t
    outs, sw = pass1_rows(
        Yd,
        jnp.asarray(betas[:, start:stop]),
        row_idx,
        nkt,
        t=t,
        n=n,
        causal=bool(causal),
        outputs=True,
        selfw=True,
    )
    return {"self_weight": np.asarray(sw), "outputs": np.asarray(outs)}
