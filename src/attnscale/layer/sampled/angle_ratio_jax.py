"""JAX twin of :mod:`attnscale.layer.sampled.angle_ratio`: the exact outputs of the sampled query rows
against all their keys (``docs/long-context.md#the-sampled-lambda``, ``docs/gpu.md#kernels``).

Reached through the ``backend`` keyword of :func:`attnscale.layer.sampled.angle_ratio.sampled_outputs`
and :func:`attnscale.layer.sampled.angle_ratio.angle_ratio_sampled`, which validate the arguments and
draw the row sample, hand over the validated arrays, and keep the statistics of the sample (the
pair ratios and their U-statistic, ``O(B m^2 d)``) as one numpy routine for both backends. The
heavy part, ``O(B m n d)``, runs here: pass 1 of the tiled layer
(:func:`attnscale.layer.dense.jax_tiles.pass1_rows`) for the sampled rows only, keys padded to whole
tiles and masked, scores shifted by 1 (the row maximum of unit vectors).
"""

from __future__ import annotations

import numpy as np

from attnscale.backend import jax_float64, memory_budget, padded
from attnscale.layer.dense.jax_tiles import pad_rows, pass1_rows

jax = jax_float64()

import jax.numpy as jnp  # noqa: E402

__all__ = ["plan", "sampled_outputs"]

#: Largest key tile.
MAX_TILE = 2048


def plan(n: int, m: int, B: int, per: int = 3) -> tuple[int, int]:
    """``(tile, betas per call)``: the key tile (at most :data:`MAX_TILE`, at least 8) and as
    many betas as fit ``per`` arrays of ``B m t`` float64 entries in half the memory budget
    (:func:`attnscale.backend.memory_budget`; the tokens and outputs take the rest)."""
    t = int(min(MAX_TILE, padded(n, 8)))
    budget = memory_budget()[0] // 2
    group = int(max(1, min(B, budget // max(1, 8 * per * m * t))))
    return t, group


def sampled_outputs(X, r, idx, brow, alpha: float, causal: bool, selfw: bool = False):
    """Outputs ``x_a' = sum_j A_aj y_j + alpha x_a`` ``(B, m, d)`` of the sampled rows ``idx``
    (sorted) for betas ``brow`` ``(B, m)``; the twin of
    :func:`attnscale.layer.sampled.angle_ratio.sampled_outputs` (validated arrays: ``X`` float64
    ``(n, d)`` with row norms ``r``). With ``selfw`` also the self-weights ``A_aa`` ``(B, m)``."""
    n, d = X.shape
    B, m = brow.shape
    t, group = plan(n, m, B)
    N = padded(n, t)
    Y = jnp.asarray(pad_rows(X / r[:, None], N, unit=True))
    row_idx = jnp.asarray(idx)
    nkt = (int(idx[-1]) // t + 1) if causal else N // t
    out = np.empty((B, m, d))
    sw = np.empty((B, m))
    for g0 in range(0, B, group):
        o, s = pass1_rows(
            Y,
            jnp.asarray(brow[g0 : g0 + group]),
            row_idx,
            nkt,
            t=t,
            n=n,
            causal=bool(causal),
            outputs=True,
            selfw=bool(selfw),
        )
        out[g0 : g0 + group] = np.asarray(o)
        if selfw:
            sw[g0 : g0 + group] = np.asarray(s)
    if alpha:
        out += alpha * X[idx][None]
    return (out, sw) if selfw else out
