"""What the layer's JAX twins share (``docs/gpu.md#kernels``): padding to whole tiles, tile and
group sizes from the memory budget, and pass 1 of the tiled layer (softmax-weighted outputs and
self-weights of query tiles).

Tokens are padded to ``N``, a multiple of the tile size ``t`` (padded rows are unit vectors,
padded keys are masked). Pass 1 forms the outputs of a group of ``B`` betas tile by tile: for a
query tile and the key tiles ``J`` (all of them, or ``J <= it`` under the causal mask) the
``t x t`` scores ``<y_i, y_j>`` are shifted by 1 (the row maximum of unit vectors,
``<y_i, y_i> = 1``), so ``exp`` never overflows and needs no row-max pass. Per-row betas and the
causal mask are the same code. Used by :mod:`attnscale.layer.dense.attention_jax` (lambda, the layer)
and :mod:`attnscale.layer.causal.attention_jax` (self-weights, a query block).

Importing this module switches JAX to float64 (:func:`attnscale.backend.jax_float64`).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from attnscale.backend import BackendError, jax_float64, memory_budget, padded, plan_lambda

jax = jax_float64()

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

__all__ = [
    "pad_rows",
    "tile_for",
    "budget_bytes",
    "eta_plan",
    "pass1_rows",
    "pass1_all",
]


def pad_rows(A: np.ndarray, N: int, fill: float = 0.0, unit: bool = False) -> np.ndarray:
    """``A`` with ``N - len(A)`` rows appended: ``fill`` values, or the unit vector ``e_1``."""
    n = A.shape[0]
    if N == n:
        return A
    pad = np.full((N - n,) + A.shape[1:], fill, dtype=A.dtype)
    if unit:
        pad[:, 0] = 1.0
    return np.concatenate([A, pad])


def tile_for(n: int, block_rows, m: int, d: int, itemsize: int = 8) -> tuple[int, int]:
    """``(tile, betas per group)`` of the lambda-type kernels: ``block_rows`` (a validated
    ``int >= 1``) as the tile if given, else from the memory budget
    (:func:`attnscale.backend.plan_lambda`)."""
    if block_rows is not None:
        plan = plan_lambda(n, d, m, tile=min(block_rows, n), itemsize=itemsize)
    else:
        plan = plan_lambda(n, d, m, itemsize=itemsize)
    return plan["tile"], plan["betas_per_group"]


def budget_bytes() -> int:
    """Bytes of the memory budget (:func:`attnscale.backend.memory_budget`)."""
    return memory_budget()[0]


def eta_plan(n: int, d: int, probes: int, m: int, per: int) -> tuple[int, int, int]:
    """Tile rows, probes and betas per call of the eta kernels: ``per`` arrays of
    ``P B t N`` float64 entries per tile (a generous count of XLA's temporaries), plus the tokens
    and probes; at most 4 probes and 16 betas per call."""
    budget, source = memory_budget()
    for t in (256, 128, 64, 32, 16, 8):
        t = min(t, padded(n, 8))
        N = padded(n, t)
        base = 8 * (4 * N * d + 4 * t * N)
        for P, B in ((min(probes, 4), min(m, 16)), (1, min(m, 4)), (1, 1)):
            if base + 8 * (per * P * B * t * N + P * N * d) <= budget:
                return t, P, B
    raise BackendError(
        f"backend: jax: eta at n = {n}, d = {d} needs more than the budget of "
        f"{budget / 1e9:.2f} GB ({source}) even with 8-row tiles, one probe and one beta; use a "
        "device with more memory or lower n (docs/gpu.md#memory-sizing)"
    )


# =========================================================================== pass 1: outputs
def _pass1_core(Y, Bq, row_idx, nkt, *, t, n, causal, outputs, selfw):
    """Softmax-weighted outputs and self-weights of the query rows ``rows`` (shape ``(R,)``)
    with per-row betas ``Bq`` (``(B, R)``), over the key tiles ``0 .. nkt - 1`` of ``Y``."""
    B, R = Bq.shape
    d = Y.shape[1]
    Yq = Y[row_idx]

    def body(J, carry):
        z, acc, dg = carry
        Yk = lax.dynamic_slice_in_dim(Y, J * t, t, 0)
        cols = J * t + jnp.arange(t)
        valid = cols[None, :] < n
        if causal:
            valid = valid & (cols[None, :] <= row_idx[:, None])
        G = Yq @ Yk.T  # (R, t); <y_i, y_i> = 1 is the row maximum
        E = jnp.where(valid[None], jnp.exp(Bq[:, :, None] * (G - 1.0)[None]), 0.0)
        z = z + E.sum(-1)
        if outputs:
            acc = acc + jnp.einsum("brt,td->brd", E, Yk)
        if selfw:
            dg = dg + jnp.where(cols[None, None, :] == row_idx[None, :, None], E, 0.0).sum(-1)
        return z, acc, dg

    init = (
        jnp.zeros((B, R), Y.dtype),
        jnp.zeros((B, R, d if outputs else 0), Y.dtype),
        jnp.zeros((B, R), Y.dtype),
    )
    z, acc, dg = lax.fori_loop(0, nkt, body, init)
    return acc / z[..., None], dg / z


@partial(jax.jit, static_argnames=("t", "n", "causal", "outputs", "selfw"))
def pass1_rows(Y, Bq, row_idx, nkt, *, t, n, causal, outputs, selfw):
    """Pass 1 for the query rows ``rows`` only: outputs ``(B, R, d)`` and self-weights
    ``(B, R)`` over the first ``nkt`` key tiles of the padded unit rows ``Y``."""
    return _pass1_core(Y, Bq, row_idx, nkt, t=t, n=n, causal=causal, outputs=outputs, selfw=selfw)


@partial(jax.jit, static_argnames=("t", "n", "causal", "outputs", "selfw", "normalise"))
def pass1_all(Y, X, Bg, alpha, *, t, n, causal, outputs, selfw, normalise):
    """Pass 1 for every query tile: outputs ``(B, N, d)`` (``+ alpha X``, normalised if asked)
    and self-weights ``(B, N)``, for the per-row betas ``Bg`` (``(B, N)``)."""
    N, d = Y.shape
    B = Bg.shape[0]
    nI = N // t

    def body(it, carry):
        out, sw = carry
        row_idx = it * t + jnp.arange(t)
        bq = lax.dynamic_slice_in_dim(Bg, it * t, t, 1)
        nkt = it + 1 if causal else nI
        o, s = _pass1_core(
            Y, bq, row_idx, nkt, t=t, n=n, causal=causal, outputs=outputs, selfw=selfw
        )
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
