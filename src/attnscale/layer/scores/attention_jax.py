"""JAX twin of :mod:`attnscale.layer.scores.attention`: the layer with learned scores
``beta <q_i, k_j>`` in row tiles, and the centred pair sums of lambda
(``docs/realistic-attention.md#learned-query-key-matrix``, ``docs/gpu.md#kernels``).

Reached through the ``backend`` keyword of the kernels of
:mod:`attnscale.layer.scores.attention`, which validate the arguments, normalise and centre the
rows, group the betas and hand the validated arrays to :func:`score_pass` (outputs,
self-weights, column mass) and :func:`centred_pair_sums` (the numerator of lambda).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from attnscale.backend import jax_float64, padded
from attnscale.layer.dense.jax_tiles import budget_bytes, pad_rows
from attnscale.layer.dense.near_pairs import COINCIDENT_TOL

jax = jax_float64()

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

__all__ = ["score_pass", "centred_pair_sums"]


@partial(jax.jit, static_argnames=("t", "n", "outputs"))
def _score_block(Qm, Km, Y, X, bs, alpha, it, col, *, t, n, outputs):
    N = Qm.shape[0]
    Qq = lax.dynamic_slice_in_dim(Qm, it * t, t, 0)
    Xq = lax.dynamic_slice_in_dim(X, it * t, t, 0)
    row_idx = it * t + jnp.arange(t)
    cols = jnp.arange(N)
    valid = (cols < n)[None, :]
    S = Qq @ Km.T
    M = jnp.where(valid, S - jnp.max(jnp.where(valid, S, -jnp.inf), axis=1, keepdims=True), 0.0)
    E = jnp.where(valid[None], jnp.exp(bs[:, None, None] * M[None]), 0.0)  # (B, t, N)
    z = E.sum(-1)
    sw = jnp.sum(jnp.where((cols[None, :] == row_idx[:, None])[None], E, 0.0), axis=-1) / z
    cm = E[:, :, col] / z
    if outputs:
        out = jnp.einsum("btn,nd->btd", E, Y) / z[..., None] + alpha * Xq[None]
    else:
        out = jnp.zeros((bs.shape[0], t, 0), Y.dtype)
    return out, sw, cm


def score_pass(Qm, Km, betas, *, Y=None, X=None, alpha: float = 0.0, col=None, block_rows=None):
    """Outputs ``x_i' = sum_j A_ij y_j + alpha x_i`` (with ``Y``), self-weights and the mass on
    column ``col`` of ``A = row-softmax(beta Qm Km^T)`` for every beta, on JAX.

    Parameters
    ----------
    Qm, Km : numpy.ndarray, shape (n, e)
        Validated query and key rows.
    betas : numpy.ndarray, shape (m,)
        Validated inverse temperatures.
    Y, X : numpy.ndarray, shape (n, d), optional
        Unit rows and raw tokens (validated); without them no outputs are formed.
    alpha : float, optional
        Validated residual weight.
    col : int, optional
        Validated column.
    block_rows : int, optional
        Validated tile size; default from the memory budget.

    Returns
    -------
    (numpy.ndarray or None, numpy.ndarray, numpy.ndarray or None)
        Outputs ``(m, n, d)``, self-weights ``(m, n)``, column masses ``(m, n)``.
    """
    outputs = Y is not None
    n = Qm.shape[0]
    m = betas.size
    if block_rows is not None:
        t = min(block_rows, n)
    else:
        t = int(max(1, min(n, budget_bytes() // (8 * n * (3 * m + 2)))))
    N = padded(n, t)
    if not outputs:
        Y = X = np.zeros((n, 0))
    args = [jnp.asarray(pad_rows(np.asarray(A, np.float64), N)) for A in (Qm, Km, Y, X)]
    bs = jnp.asarray(betas)
    outs, sws, cms = [], [], []
    for it in range(N // t):
        o, s, c = _score_block(
            *args, bs, alpha, it, 0 if col is None else int(col), t=t, n=n, outputs=outputs
        )
        outs.append(np.asarray(o))
        sws.append(np.asarray(s))
        cms.append(np.asarray(c))
    out = np.concatenate(outs, axis=1)[:, :n] if outputs else None
    sw = np.concatenate(sws, axis=1)[:, :n]
    cm = np.concatenate(cms, axis=1)[:, :n] if col is not None else None
    return out, sw, cm


@partial(jax.jit, static_argnames=("t", "k"))
def _centred_pairs(Zi, ci, Zflat, co, Zo, it, *, t, k):
    """Row tile ``it`` of :func:`centred_pair_sums`."""
    K = Zi.shape[0]
    m = co.shape[0]
    row_idx = it * t + jnp.arange(t)
    cols = jnp.arange(K)
    Zq = lax.dynamic_slice_in_dim(Zi, it * t, t, 0)
    cq = lax.dynamic_slice_in_dim(ci, it * t, t, 0)
    D = cq[:, None] + ci[None, :] - 2.0 * (Zq @ Zi.T)
    valid = (row_idx[:, None] < k) & (cols[None, :] < k)
    bad = (D <= COINCIDENT_TOL * (cq[:, None] + ci[None, :])) | (row_idx[:, None] == cols[None, :])
    n_bad = jnp.sum(valid & bad) - jnp.sum(row_idx < k)
    use = valid & ~bad
    W = jnp.where(use, 1.0 / jnp.where(use, D, 1.0), 0.0)
    w = W.sum(axis=1)
    WZ = (W @ Zflat).reshape(t, m, -1)
    coq = lax.dynamic_slice_in_dim(co, it * t, t, 1)
    Zoq = lax.dynamic_slice_in_dim(Zo, it * t, t, 1)
    num = 2.0 * (coq @ w) - 2.0 * jnp.einsum("imd,mid->m", WZ, Zoq)
    return num, n_bad


def centred_pair_sums(Zi, ci, Zo, co, Zflat, block_rows=None) -> tuple[np.ndarray, int]:
    """``sum_{i != j} W_ij ||z_i' - z_j'||^2`` per output stack, ``W_ij = 1 / ||z_i - z_j||^2``
    from centred rows, on JAX; the twin of the numpy loop of
    :func:`attnscale.layer.scores.attention.angle_ratio_outputs`, which centres the rows.

    Parameters
    ----------
    Zi : numpy.ndarray, shape (k, d)
        Centred unit input rows; ``ci`` their squared norms ``(k,)``.
    ci : numpy.ndarray, shape (k,)
    Zo : numpy.ndarray, shape (m, k, d)
        Centred unit outputs; ``co`` their squared norms ``(m, k)``.
    co : numpy.ndarray, shape (m, k)
    Zflat : numpy.ndarray, shape (k, m d)
        ``Zo`` token first, side by side.
    block_rows : int, optional
        Validated tile size; default from the memory budget.

    Returns
    -------
    (numpy.ndarray, int)
        The sums ``(m,)`` and the number of ordered coincident pairs ``i != j`` left out.
    """
    k = Zi.shape[0]
    m = co.shape[0]
    if block_rows is not None:
        t = min(block_rows, k)
    else:
        t = int(max(1, min(k, budget_bytes() // (8 * k * 4))))
    K = padded(k, t)
    args = (
        jnp.asarray(pad_rows(Zi, K)),
        jnp.asarray(pad_rows(ci, K)),
        jnp.asarray(pad_rows(Zflat, K)),
        jnp.asarray(np.pad(co, ((0, 0), (0, K - k)))),
        jnp.asarray(np.pad(Zo, ((0, 0), (0, K - k), (0, 0)))),
    )
    num = np.zeros(m)
    n_excl = 0
    for it in range(K // t):
        a, b = _centred_pairs(*args, it, t=t, k=k)
        num += np.asarray(a)
        n_excl += int(b)
    return num, n_excl
