"""The self-weight, lambda and eta of one token draw from one sample of query rows, in one pass over
the keys (docs/long-context.md#one-pass-for-three-observables).

:func:`attnscale.layer.sampled.eta.row_sums` already accumulates, for every sampled row and beta,
the softmax denominator ``z``, the unnormalised self-weight ``e_self`` and the attention output
``sum_j E_j y_j``: so the mean self-weight ``A_ii`` (the quantity that defines the finite-d
critical point, docs/finite-d.md#finite-d-critical-point) and the outputs that the sampled lambda
needs come with the eta pass at no extra cost. :func:`observables_sampled` returns the three
estimates of one row sample, each with its within-draw standard error:

* the self-weight and eta by :func:`attnscale.layer.sampled.rows.stratified_mean` (eta exactly as
  :func:`attnscale.layer.sampled.eta.eta_sampled`, the same numbers for the same generator state);
* lambda by the pair U-statistic of :mod:`attnscale.layer.sampled.pairs`, on the same outputs as
  :func:`attnscale.layer.sampled.angle_ratio.angle_ratio_sampled` (equal to rounding: the keys are
  summed in other tiles).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from attnscale.core.validation import check_int, check_rng
from attnscale.layer.dense.kernel_args import beta_matrix
from attnscale.layer.observables import RowPass, row_observables
from attnscale.layer.sampled.angle_ratio import (
    SampledLambda,
    check_tokens,
    pair_statistics,
    unit_rows,
)
from attnscale.layer.sampled.eta import (
    ROUTES,
    SampledEta,
    eta_normalised,
    jacobian_row_norms,
    row_sums,
    tangent_probes,
)
from attnscale.layer.sampled.rows import RowSample, resolve_rows, stratified_mean

__all__ = [
    "DEFAULT_BLOCK_ROWS",
    "SampledObservables",
    "lambda_from_outputs",
    "observables_sampled",
    "eta_normalised",
]

#: Sampled rows per block (as the sampled eta's).
DEFAULT_BLOCK_ROWS = 128


class SampledObservables(NamedTuple):
    """Result of :func:`observables_sampled` (docs/long-context.md#one-pass-for-three-observables)."""

    #: ``(B,)`` estimate of the mean self-weight ``A_ii`` over all rows, one per beta
    self_weight: np.ndarray
    #: ``(B,)`` its within-draw standard error
    self_weight_se: np.ndarray
    #: the sampled lambda (as :func:`attnscale.layer.sampled.angle_ratio.angle_ratio_sampled` returns it)
    lam: SampledLambda
    #: the sampled eta (as :func:`attnscale.layer.sampled.eta.eta_sampled` returns it)
    eta: SampledEta
    #: ``{name: (estimate, se)}``, each ``(B,)``, of every observable of the registry with a
    #: per-row accumulator (:func:`attnscale.layer.observables.row_observables`)
    means: dict = {}


def lambda_from_outputs(Ys, Yp, sample: RowSample, block_rows: int) -> SampledLambda:
    """The sampled lambda from the unit inputs ``Ys`` ``(m, d)`` and unit outputs ``Yp``
    ``(B, m, d)`` of the sampled rows (in sample order): the pair U-statistic and its standard
    error (docs/long-context.md#the-sampled-lambda), near pairs and coincident pairs as in
    :func:`attnscale.layer.sampled.angle_ratio.pair_ratio_block`, by
    :func:`attnscale.layer.sampled.angle_ratio.pair_statistics` in blocks of ``block_rows`` rows
    (no ``m x m`` matrix per beta)."""
    m = sample.m
    est, se, n_near, n_excl = pair_statistics(Ys, Yp, sample, block_rows)
    return SampledLambda(est, se, m, m * (m - 1) // 2, n_near, n_excl, sample)


def observables_sampled(
    X,
    betas,
    alpha: float = 0.0,
    *,
    rows,
    rng=None,
    strata: int | None = None,
    head: int | None = None,
    causal: bool = False,
    route: str = "probe",
    probes: int = 1,
    block_rows: int | None = None,
    key_block: int | None = None,
) -> SampledObservables:
    """Mean self-weight, lambda and eta for a grid of betas from one sample of ``m`` query rows,
    each with its within-draw standard error, in one key-tiled pass
    (docs/long-context.md#one-pass-for-three-observables).

    The rows are drawn first, then the probes (the order of
    :func:`attnscale.layer.sampled.eta.eta_sampled`): with a generator in the same state the row
    sample and eta are those of ``eta_sampled``, and lambda is that of
    :func:`attnscale.layer.sampled.angle_ratio.angle_ratio_sampled` on the same rows to rounding. The
    self-weight estimate is the stratified mean of ``A_ii`` over the sampled rows (exact values,
    exactly unbiased). Cost: that of ``eta_sampled`` plus ``2 m^2 d`` per beta for the pairs.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens (``n >= 2``, non-zero finite rows).
    betas : array_like, shape (B,) or (B, n)
        Global betas, or one beta per query row; every entry ``>= 0``.
    alpha : float, optional
        Residual weight, ``alpha >= 0``.
    rows : int, array_like of int or RowSample
        Number of rows ``m`` to draw from ``rng`` (``m = n``: all rows), explicit row indices, or a
        :class:`attnscale.layer.sampled.rows.RowSample`.
    rng : numpy.random.Generator, optional
        Source of the row draw and of the probes (drawn after the rows).
    strata, head : int, optional
        Position strata and leading positions taken in full
        (:func:`attnscale.layer.sampled.rows.default_design` by default).
    causal : bool, optional
        Query ``i`` sees keys ``j <= i`` only.
    route : {"probe", "exact"}, optional
        How eta's ``||C P_i||^2`` is computed (:func:`attnscale.layer.sampled.eta.row_jacobian_norms`).
    probes : int, optional
        Probes per row (probe route), ``>= 1``.
    block_rows, key_block : int, optional
        Rows per block (default 128) and keys per tile.

    Returns
    -------
    SampledObservables
    """
    X, r, alpha = check_tokens(X, alpha)
    n, d = X.shape
    Bm = beta_matrix(betas, n)
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
    probes = check_int("probes", probes, minimum=1)
    if route == "probe":
        check_rng(rng, " for the probe route")
    br = (
        DEFAULT_BLOCK_ROWS if block_rows is None else check_int("block_rows", block_rows, minimum=1)
    )
    if key_block is not None:
        check_int("key_block", key_block, minimum=1)
    sample = resolve_rows(n, rows, rng, strata, head, causal)
    idx, m = sample.rows, sample.m
    br = min(br, m)
    Ys, rs = unit_rows(X, r, idx), r[idx]
    brow = Bm[:, idx]
    W = tangent_probes(rng, Ys, probes) if route == "probe" else np.zeros((0, m, d))
    sums = row_sums(X, r, idx, brow, W, causal, br, key_block)
    q = None
    if route == "exact":
        from attnscale.layer.sampled.eta_exact import exact_q

        q = exact_q(X / r[:, None], idx, brow, causal)
    R, noise = jacobian_row_norms(sums, Ys, rs, W, brow, alpha, d, q)
    nv = None if route == "exact" else ("unknown" if noise is None else noise / d**2)
    eta_est, eta_se = stratified_mean(R / d, sample, nv)
    eta = SampledEta(eta_est, eta_se, m, R / d, sample, route)
    z = sums["z"]
    Yp = sums["mv"] / z[:, :, None]
    p = RowPass(
        sums["e_self"] / z, np.log(z), np.einsum("kmd,md->km", Yp, Ys), 1.0, brow, n
    )  # the weights of row_sums are exp(beta (g - 1))
    means = {o.name: stratified_mean(o.row(p), sample) for o in row_observables()}
    sw, sw_se = means["self_weight"]
    if alpha:
        Yp += alpha * X[idx][None]
    Yp /= np.linalg.norm(Yp, axis=2, keepdims=True)
    lam = lambda_from_outputs(Ys, Yp, sample, br)
    return SampledObservables(sw, sw_se, lam, eta, means)
