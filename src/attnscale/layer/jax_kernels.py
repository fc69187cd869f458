"""Deprecated: the JAX kernels of :mod:`attnscale.layer` before they moved beside their numpy
modules (``docs/gpu.md#choosing-the-backend``).

The twins now live in :mod:`attnscale.layer.attention_jax` (lambda, the layer),
:mod:`attnscale.layer.causal_jax` (self-weights, query blocks), :mod:`attnscale.layer.jacobian_jax`
(Hutchinson eta), :mod:`attnscale.layer.eta_exact_jax` (exact eta),
:mod:`attnscale.layer.weight_stats_jax` (weight statistics) and
:mod:`attnscale.layer.score_attention_jax` (learned scores); they take validated arrays and are
reached through the ``backend`` keyword of the numpy kernels. The names below keep their old
signatures and results: each validates like its numpy kernel and runs it with ``backend="jax"``.
Importing this module warns (``DeprecationWarning``).
"""

from __future__ import annotations

import numpy as np

from attnscale._moved import deprecated
from attnscale.core.validation import check_layer_inputs, check_vector
from attnscale.layer import attention_jax, eta_exact, jacobian, score_attention, weight_stats
from attnscale.layer import causal as causal_kernels
from attnscale.layer.attention_jax import DTYPES
from attnscale.layer.kernel_args import beta_matrix, check_block
from attnscale.layer.near_pairs import COINCIDENT_TOL, NEAR_PAIR_TOL

__all__ = [
    "NEAR_PAIR_TOL",
    "COINCIDENT_TOL",
    "DTYPES",
    "angle_ratio_grid",
    "forward",
    "self_weights",
    "query_block",
    "eta_hutchinson_grid",
    "eta_exact_grid",
    "row_weight_stats",
    "self_weight_scores",
    "self_weight_curve",
    "self_weight_grid",
    "layer_outputs",
    "angle_ratio_outputs",
    "layer_grid",
]

deprecated(
    __name__,
    "call the numpy kernels with backend='jax'; the JAX "
    "twins moved to attnscale.layer.attention_jax, causal_jax, jacobian_jax, eta_exact_jax, "
    "weight_stats_jax and score_attention_jax",
)


def angle_ratio_grid(X, betas, alpha: float = 0.0, *, block_rows=None, output_entries=None,
                     return_diagnostics: bool = False, causal: bool = False,
                     dtype: str = "float64", centred: bool = True):  # fmt: skip
    """:func:`attnscale.layer.attention.angle_ratio_grid` on JAX, with the JAX-only ``dtype`` and
    ``centred`` of :func:`attnscale.layer.attention_jax.angle_ratio_grid`."""
    X, r, _, alpha = check_layer_inputs(X, None, alpha)
    per_row = bool(causal) or np.ndim(betas) == 2
    betas = beta_matrix(betas, X.shape[0]) if per_row else check_vector("betas", betas, low=0.0)
    return attention_jax.angle_ratio_grid(
        X, r, betas, alpha, causal=bool(causal), block_rows=check_block("block_rows", block_rows),
        output_entries=check_block("output_entries", output_entries),
        return_diagnostics=return_diagnostics, dtype=dtype, centred=centred,
    )  # fmt: skip


def forward(X, beta, alpha: float = 0.0, *, causal: bool = False, block_rows=None,
            return_self_weight: bool = False):  # fmt: skip
    """:func:`attnscale.layer.causal.forward_rows` on JAX (default without the mask)."""
    return causal_kernels.forward_rows(X, beta, alpha, causal=causal, block_rows=block_rows,
                                       return_self_weight=return_self_weight,
                                       backend="jax")  # fmt: skip


def self_weights(X, betas, *, causal: bool = True, block_rows=None):
    """:func:`attnscale.layer.causal.self_weights` on JAX."""
    return causal_kernels.self_weights(X, betas, causal=causal, block_rows=block_rows,
                                       backend="jax")  # fmt: skip


def query_block(X, betas, start: int, stop: int, *, causal: bool = True) -> dict:
    """:func:`attnscale.layer.causal.query_block` on JAX."""
    return causal_kernels.query_block(X, betas, start, stop, causal=causal, backend="jax")


def eta_hutchinson_grid(X, betas, alpha: float = 0.0, *, probes: int, rng,
                        kind: str = "rademacher", block_entries=None):  # fmt: skip
    """:func:`attnscale.layer.jacobian.eta_hutchinson_grid` on JAX (``block_entries`` unused)."""
    return jacobian.eta_hutchinson_grid(X, betas, alpha, probes=probes, rng=rng, kind=kind,
                                        backend="jax")  # fmt: skip


def eta_exact_grid(X, betas, alpha=0.0, *, block_entries=None, route: str = "auto"):
    """:func:`attnscale.layer.eta_exact.eta_exact_grid` on JAX (``block_entries`` unused)."""
    return eta_exact.eta_exact_grid(X, betas, alpha, route=route, backend="jax")


def row_weight_stats(X, betas, *, rows=None, mass: float = 0.9, block_entries=None) -> dict:
    """:func:`attnscale.layer.weight_stats.row_weight_stats` on JAX (``block_entries`` unused)."""
    return weight_stats.row_weight_stats(X, betas, rows=rows, mass=mass, backend="jax")


def self_weight_scores(X, *, rows=None, block_entries=None):
    """:func:`attnscale.layer.weight_stats.self_weight_scores` on JAX (``block_entries``
    unused)."""
    return weight_stats.self_weight_scores(X, rows=rows, backend="jax")


def self_weight_curve(gaps, beta: float):
    """:func:`attnscale.layer.weight_stats.self_weight_curve` on JAX."""
    return weight_stats.self_weight_curve(gaps, beta, backend="jax")


def self_weight_grid(Qm, Km, betas, *, col=None, block_rows=None):
    """:func:`attnscale.layer.score_attention.self_weight_grid` on JAX."""
    return score_attention.self_weight_grid(Qm, Km, betas, col=col, block_rows=block_rows,
                                            backend="jax")  # fmt: skip


def layer_outputs(X, Qm, Km, betas, alpha: float = 0.0, *, block_rows=None):
    """:func:`attnscale.layer.score_attention.layer_outputs` on JAX."""
    return score_attention.layer_outputs(X, Qm, Km, betas, alpha, block_rows=block_rows,
                                         backend="jax")  # fmt: skip


def angle_ratio_outputs(Y, Yout, keep=None, *, block_rows=None):
    """:func:`attnscale.layer.score_attention.angle_ratio_outputs` on JAX."""
    return score_attention.angle_ratio_outputs(Y, Yout, keep, block_rows=block_rows,
                                               backend="jax")  # fmt: skip


def layer_grid(X, Qm, Km, betas, alpha: float = 0.0, *, keep=None, col=None, block_rows=None,
               output_entries=None) -> dict:  # fmt: skip
    """:func:`attnscale.layer.score_attention.layer_grid` on JAX."""
    return score_attention.layer_grid(X, Qm, Km, betas, alpha, keep=keep, col=col,
                                      block_rows=block_rows, output_entries=output_entries,
                                      backend="jax")  # fmt: skip
