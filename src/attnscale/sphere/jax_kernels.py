"""Deprecated: the JAX kernels of Paper B, now :mod:`attnscale.sphere.keys_jax` beside the module
they mirror (``docs/gpu.md#choosing-the-backend``).

The twin takes validated arrays and is reached through the ``backend`` keyword of
:mod:`attnscale.sphere.keys`. The names below keep their old signatures and results: each runs
its numpy kernel with ``backend="jax"``. Importing this module warns (``DeprecationWarning``).
"""

from __future__ import annotations

from attnscale._moved import deprecated
from attnscale.sphere import keys

__all__ = [
    "top_weight_from_d2q",
    "ordered_weights_from_d2q",
    "attention_output",
]

deprecated(
    __name__,
    "call attnscale.sphere.keys with backend='jax'; "
    "the JAX twin moved to attnscale.sphere.keys_jax",
)


def top_weight_from_d2q(T, betas, max_entries: int | None = None):
    """:func:`attnscale.sphere.keys.top_weight_from_d2q` on JAX (``max_entries=None``: its
    default)."""
    if max_entries is None:
        return keys.top_weight_from_d2q(T, betas, backend="jax")
    return keys.top_weight_from_d2q(T, betas, max_entries, backend="jax")


def ordered_weights_from_d2q(T, beta: float, k: int | None = None):
    """:func:`attnscale.sphere.keys.ordered_weights_from_d2q` on JAX."""
    return keys.ordered_weights_from_d2q(T, beta, k, backend="jax")


def attention_output(Q, K, beta: float, block_entries: int | None = None):
    """:func:`attnscale.sphere.keys.attention_output` on JAX (``block_entries=None``: its
    default)."""
    if block_entries is None:
        return keys.attention_output(Q, K, beta, backend="jax")
    return keys.attention_output(Q, K, beta, block_entries, backend="jax")
