"""JAX twin of :mod:`attnscale.layer.scores.weight_stats`: per-row statistics of the attention weights
(self-weight, ``N_eff``, the 90 %-mass count) and the self-weight curve from score gaps
(``docs/finite-d.md``, ``docs/gpu.md#kernels``).

Reached through the ``backend`` keyword of :func:`attnscale.layer.scores.weight_stats.row_weight_stats`,
:func:`attnscale.layer.scores.weight_stats.self_weight_scores` and
:func:`attnscale.layer.scores.weight_stats.self_weight_curve`, which validate the arguments and hand
over the validated arrays. Gram rows of the query rows, each row's other keys sorted once, all
betas in one ``vmap``; the mass counts equal numpy's exactly.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from attnscale.backend import check_memory, jax_float64
from attnscale.layer.dense.jax_tiles import budget_bytes

jax = jax_float64()

import jax.numpy as jnp  # noqa: E402

__all__ = ["row_weight_stats", "self_weight_scores", "self_weight_curve"]


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


def row_weight_stats(Y, betas, idx, mass: float) -> dict:
    """Self-weight, ``N_eff`` and the number of keys holding ``mass`` per query row and beta on
    JAX; the twin of :func:`attnscale.layer.scores.weight_stats.row_weight_stats`.

    Parameters
    ----------
    Y : numpy.ndarray, shape (n, d)
        Unit rows of validated tokens.
    betas : numpy.ndarray, shape (B,)
        Validated inverse temperatures.
    idx : numpy.ndarray of int, shape (m,)
        Validated query rows.
    mass : float
        Validated fraction of the row's mass.

    Returns
    -------
    dict
        ``self_weight``, ``n_eff``, ``n_eff_others`` and ``k_mass``, each ``(m, B)``.
    """
    n = Y.shape[0]
    m, B = idx.size, betas.size
    b = int(min(m, max(1, budget_bytes() // (8 * n * (2 * B + 4)))))
    Yd = jnp.asarray(Y)
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


@partial(jax.jit, static_argnames=("n",))
def _gaps_block(Y, idx, *, n):
    G = Y[idx] @ Y.T
    others = jnp.arange(n - 1)
    take = others[None, :] + (others[None, :] >= idx[:, None])
    return jnp.minimum(jnp.take_along_axis(G, take, axis=1) - 1.0, 0.0)


def self_weight_scores(Y, idx) -> np.ndarray:
    """Off-diagonal score gaps ``<y_i, y_j> - 1`` of the query rows ``idx`` on JAX, shape
    ``(m, n - 1)``; the twin of :func:`attnscale.layer.scores.weight_stats.self_weight_scores` (``Y``
    the unit rows of validated tokens, ``idx`` validated rows)."""
    n = Y.shape[0]
    check_memory(8 * (idx.size * n + n * Y.shape[1]), f"self_weight_scores of {idx.size} rows")
    b = int(max(1, min(idx.size, budget_bytes() // (8 * n * 3))))
    Yd = jnp.asarray(Y)
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
    """Per-row self-weight and its beta-derivative from score gaps on JAX; the twin of
    :func:`attnscale.layer.scores.weight_stats.self_weight_curve` (``beta`` validated). ``gaps`` may be
    a JAX array already on the device (no transfer per call)."""
    a, da = _curve(jnp.asarray(gaps, jnp.float64), beta)
    return np.asarray(a), np.asarray(da)
