"""The theorem table's four quantities from one sample of query rows
(docs/long-context.md#the-theorem-table-from-sampled-rows).

Paper A's theorem table compares, per token draw, the mean self-weight ``A_ii``, the mean output
cosine ``<y_i', y_j'>`` (over ``i != j``), lambda and eta with their theory
(:mod:`attnscale.experiments.paper_a_theorem`). All four are averages over rows or pairs of rows,
so the rows sampled for eta (:func:`attnscale.layer.sampled.eta.row_sums`, one pass over the keys
per beta) give all of them at once: ``A_ii = E_i / z`` and the outputs ``x_i' = m_i + alpha x_i``
(``m_i = mv / z``) are by-products of the sums that ``R_i`` needs, and ``alpha`` enters only
after the pass. Each estimator is unbiased for the draw's dense value, with its within-draw
standard error: the stratified mean for ``A_ii`` and eta
(:func:`attnscale.layer.sampled.rows.stratified_mean`), the pair U-statistic for the cosine and
lambda (:mod:`attnscale.layer.sampled.pairs`).
"""

from __future__ import annotations

import numpy as np

from attnscale.backend import uses_jax
from attnscale.core.validation import check_int, check_rng, check_vector
from attnscale.layer.dense.kernel_args import beta_matrix
from attnscale.layer.sampled.angle_ratio import DEFAULT_BLOCK_ROWS as PAIR_BLOCK_ROWS
from attnscale.layer.sampled.angle_ratio import check_tokens, pair_statistics, unit_rows
from attnscale.layer.sampled.eta import (
    DEFAULT_BLOCK_ROWS,
    jacobian_row_norms,
    row_sums,
    tangent_probes,
)
from attnscale.layer.sampled.pairs import pair_estimate
from attnscale.layer.sampled.rows import resolve_rows, stratified_mean

__all__ = ["QUANTITIES", "layer_statistics_sampled"]

#: The quantities, in the order of the theorem table.
QUANTITIES = ("self_weight", "cosine", "lambda", "eta")


def layer_statistics_sampled(X, betas, alphas, *, rows, rng, probes: int = 1, backend=None) -> dict:
    """Self-weight, output cosine, lambda and eta of one token draw for each beta and residual
    weight, from ``m`` sampled query rows, with within-draw standard errors
    (docs/long-context.md#the-theorem-table-from-sampled-rows).

    One pass over the keys per beta (:func:`attnscale.layer.sampled.eta.row_sums`, the probe
    route of the sampled eta): ``2 (2 + probes) m n d`` flops per beta and
    ``2 (1 + probes) m n d`` once; then, per alpha, the pairs of the sampled outputs
    (``4 m^2 d`` per beta). The self-weight does not depend on alpha.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens (``n >= 2``, non-zero finite rows).
    betas : array_like, shape (B,) or (B, n)
        Global betas or one beta per query row, each ``>= 0``.
    alphas : array_like, shape (A,)
        Residual weights, each ``>= 0``.
    rows : int, array_like of int or RowSample
        Number of rows to draw from ``rng`` (one stratum), explicit rows, or a sample.
    rng : numpy.random.Generator
        Source of the row draw and of the tangent probes (drawn after the rows).
    probes : int, optional
        Tangent probes per row (``>= 1``).
    backend : {"numpy", "jax"}, optional
        Backend of the pass over the keys (:mod:`attnscale.layer.sampled.eta_jax`); ``None``
        (default) is :func:`attnscale.backend.default`.

    Returns
    -------
    dict
        ``"m"`` (rows sampled) and, for each quantity of :data:`QUANTITIES`, ``(A, B)`` arrays
        ``<q>`` (estimate) and ``<q>_se`` (within-draw standard error).
    """
    X, r, _ = check_tokens(X, 0.0)
    Bm = beta_matrix(betas, X.shape[0])
    alphas = check_vector("alphas", alphas, low=0.0)
    probes = check_int("probes", probes, minimum=1)
    check_rng(rng)
    on_jax = uses_jax(backend)
    n, d = X.shape
    sample = resolve_rows(n, rows, rng)
    idx, m = sample.rows, sample.m
    Ys, rs = unit_rows(X, r, idx), r[idx]
    brow = Bm[:, idx]
    W = tangent_probes(rng, Ys, probes)
    if on_jax:
        from attnscale.layer.sampled import eta_jax as sampled_eta_jax

        sums = sampled_eta_jax.row_sums(X, r, idx, brow, W, False)
    else:
        sums = row_sums(X, r, idx, brow, W, False, min(DEFAULT_BLOCK_ROWS, m), None)
    z = sums["z"]
    sw, sw_se = stratified_mean(sums["e_self"] / z, sample)
    A, B = alphas.size, Bm.shape[0]
    out = {"m": m, **{k: np.empty((A, B)) for q in QUANTITIES for k in (q, f"{q}_se")}}
    attn = sums["mv"] / z[:, :, None]  # (B, m, d)
    for ia, alpha in enumerate(alphas):
        out["self_weight"][ia], out["self_weight_se"][ia] = sw, sw_se
        Yp = attn + alpha * X[idx][None]
        Yp /= np.linalg.norm(Yp, axis=2, keepdims=True)
        out["cosine"][ia], out["cosine_se"][ia] = pair_estimate(
            np.matmul(Yp, Yp.transpose(0, 2, 1)), sample
        )
        out["lambda"][ia], out["lambda_se"][ia], _, _ = pair_statistics(
            Ys, Yp, sample, PAIR_BLOCK_ROWS
        )
        R, noise = jacobian_row_norms(sums, Ys, rs, W, brow, alpha, d)
        nv = "unknown" if noise is None else noise / d**2
        out["eta"][ia], out["eta_se"][ia] = stratified_mean(R / d, sample, nv)
    return out
