"""The Jacobian norm eta from a sample of query rows (docs/long-context.md#the-sampled-eta).

``eta = ||J||_F^2 / (n d) = (1 / (n d)) sum_i R_i`` with ``R_i = ||d x_i' / d X||_F^2``, the
squared norm of output row ``i``'s Jacobian with respect to all raw tokens (pre-LN normalisation
and residual included). ``R_i`` is a function of row ``i``'s attention weights only, computed here
exactly (``route="exact"``) or with one random probe for its one expensive term
(``route="probe"``, the default), at ``O(n d)`` per row and beta; the mean of ``R_i / d`` over
sampled rows estimates eta without bias (:func:`attnscale.layer.sampled.rows.stratified_mean`).

The per-row formula (docs/long-context.md#the-jacobian-norm-of-one-output-row), with
``a_j = A_ij``, ``m = sum_j a_j y_j``, ``g_j = <y_i, y_j>``, ``K_j = <m, y_j>``, ``mu = ||m||^2``,
``C = sum_j a_j y_j y_j^T - m m^T`` and ``P_i = I - y_i y_i^T``::

    R_i = sum_{k != i} (a_k / r_k)^2 [(d - 1) + 2 beta (g_k K_k - K_i) + beta^2 (1 - 2 K_k + mu)(1 - g_k^2)]
          + ||B_i||^2 + 2 alpha tr B_i + alpha^2 d,
    r_i^2 ||B_i||^2 = a_i^2 (d - 1) + 2 beta a_i tr(C P_i) + beta^2 q,   q = ||C P_i||_F^2,
    r_i tr B_i = a_i (d - 1) + beta tr(C P_i),   tr(C P_i) = 1 - mu - (sum_j a_j g_j^2 - K_i^2).

The sum over ``k`` needs only ``sum_k c_k K_k = <m, sum_k c_k y_k>``, so every term but ``q`` is a
row sum or one GEMM row. ``q`` contains ``||S||_F^2`` (``O(n d^2)`` per row); the probe route
replaces it by ``|C w|^2`` for a ``w`` uniform on the sphere of radius ``sqrt(d - 1)`` in
``y_i``'s tangent space (``E[w w^T] = P_i``, so ``E |C w|^2 = q``), whose vector ``C w`` is one
more GEMM row, stacked with the others: per beta and tile one ``exp`` and one GEMM of
``(2 + probes) b`` rows.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

from attnscale.backend import uses_jax
from attnscale.core.validation import check_int, check_rng
from attnscale.layer._threads import blas_threads, split_rows
from attnscale.layer.dense.kernel_args import beta_matrix
from attnscale.layer.sampled.angle_ratio import (
    causal_tile_rows,
    check_tokens,
    key_tile,
    tile_weights,
    unit_rows,
)
from attnscale.layer.sampled.rows import RowSample, resolve_rows, stratified_mean

__all__ = [
    "ROUTES",
    "DEFAULT_BLOCK_ROWS",
    "SampledEta",
    "tangent_probes",
    "row_sums",
    "eta_tile_pass",
    "jacobian_row_norms",
    "row_jacobian_norms",
    "eta_sampled",
    "eta_normalised",
]

ROUTES = ("probe", "exact")
#: Sampled rows per block.
DEFAULT_BLOCK_ROWS = 128


class SampledEta(NamedTuple):
    """Result of :func:`eta_sampled` (docs/long-context.md#the-sampled-eta)."""

    #: ``(B,)`` estimate of eta, one per beta
    estimate: np.ndarray
    #: ``(B,)`` within-draw standard error (row sampling and probe noise)
    se: np.ndarray
    #: number of sampled rows
    m: int
    #: ``(B, m)`` per-row ``R_i / d`` (probe route: with its probe noise), rows in sample order
    values: np.ndarray
    #: the row sample
    rows: RowSample
    #: ``"probe"`` or ``"exact"``
    route: str


def tangent_probes(rng: np.random.Generator, Ys: np.ndarray, probes: int) -> np.ndarray:
    """``probes`` vectors per row, uniform on the sphere of radius ``sqrt(d - 1)`` in the tangent
    space of ``y_i`` (``E[w w^T] = P_i``; zero for ``d = 1``): ``(probes, m, d)``, drawn as one
    standard normal array in (row, probe, coordinate) order (docs/long-context.md#the-probe-route)."""
    m, d = Ys.shape
    g = rng.standard_normal((m, probes, d)).transpose(1, 0, 2)
    w = g - np.einsum("pmd,md->pm", g, Ys)[:, :, None] * Ys[None]
    if d == 1:
        return np.zeros_like(w)
    w *= np.sqrt(d - 1.0) / np.linalg.norm(w, axis=2, keepdims=True)
    return np.ascontiguousarray(w)


def row_sums(X, r, idx, brow, W, causal, block_rows, key_block) -> dict:
    """Every row sum that ``R_i`` needs, for the sampled rows ``idx`` (sorted) and betas ``brow``
    ``(B, m)``, in one key-tiled pass (docs/long-context.md#cost-and-memory).

    With ``E_j = exp(beta (g_j - 1))`` (unnormalised weights, ``a_j = E_j / z``),
    ``F_k = E_k^2 / r_k^2`` (``k != i``) and ``T_k = g_k - beta (1 - g_k^2)``: ``z = sum E``,
    ``e_self = E_i``, ``sag2 = sum E g^2``, ``sF = sum F``, ``sFom = sum F (1 - g^2)`` and the
    vectors ``mv = sum E y``, ``cv = sum F T y``, ``pv_p = sum E <w_p, y> y``.
    """
    B, m = brow.shape
    n, d = X.shape
    P = W.shape[0]
    rinv2 = 1.0 / r**2
    out = {k: np.zeros((B, m)) for k in ("z", "e_self", "sag2", "sF", "sFom")}
    out["mv"] = np.zeros((B, m, d))
    out["cv"] = np.zeros((B, m, d))
    out["pv"] = np.zeros((B, P, m, d))
    t = key_tile(block_rows, n, key_block)
    threads = blas_threads()
    for a0 in range(0, m, block_rows):
        a1 = min(m, a0 + block_rows)
        row_idx = idx[a0:a1]
        Q = np.concatenate([unit_rows(X, r, row_idx)[None], W[:, a0:a1]])  # y_i and its probes
        kend = int(row_idx[-1]) + 1 if causal else n
        for j0 in range(0, kend, t):
            j1 = min(kend, j0 + t)
            r0, own = causal_tile_rows(row_idx, j0, j1)  # own: rows whose position is in the tile
            r0 = r0 if causal else 0
            b = a1 - a0 - r0
            Yj = unit_rows(X, r, slice(j0, j1))
            prod = (Q[:, r0:].reshape(-1, d) @ Yj.T).reshape(1 + P, b, j1 - j0)
            G = prod[0]
            ol = np.arange(own.start, own.stop) - r0  # their rows in the tile
            oc = row_idx[own.start : own.stop] - j0  # and the columns of their own positions
            tile = {
                "G": G,
                "G1": G - 1.0,
                "G2": G * G,
                "om": 1.0 - G * G,
                "rinv2": rinv2[j0:j1],
                "prod": prod[1:],
                "ol": ol,
                "oc": oc,
                "causal": causal,
            }
            stack = np.empty((2 + P, b, j1 - j0))
            tmp = np.empty((b, j1 - j0))
            sl = slice(a0 + r0, a1)
            for k in range(B):
                acc = {key: out[key][k, sl] for key in ("z", "e_self", "sag2", "sF", "sFom")}
                job = partial(eta_tile_pass, tile, brow[k, sl], stack, tmp, acc)
                split_rows(job, b, j1 - j0, threads)
                res = (stack.reshape(-1, j1 - j0) @ Yj).reshape(2 + P, b, d)
                out["mv"][k, sl] += res[0]
                out["cv"][k, sl] += res[1]
                out["pv"][k, :, sl] += res[2:]
    return out


def eta_tile_pass(tile: dict, beta_rows, stack, tmp, acc: dict, s0: int, s1: int) -> None:
    """The element-wise work of one beta on rows ``s0:s1`` of a tile (:func:`row_sums`): the
    weights ``E`` (causal mask), the row sums ``acc`` and the GEMM rows ``stack = [E; F T;
    E <w_p, y>]``; ``tile`` holds the beta-free ``G``, ``G1 = G - 1``, ``G2 = G^2``,
    ``om = 1 - G^2``, ``rinv2 = 1 / r_j^2``, the probe products ``prod`` and the rows ``ol``
    whose own position is column ``oc`` of the tile."""
    row_idx = slice(s0, s1)
    E = tile_weights(tile["G1"][row_idx], beta_rows[row_idx], stack[0, row_idx])
    inside = (tile["ol"] >= s0) & (tile["ol"] < s1)
    ol, oc = tile["ol"][inside], tile["oc"][inside]
    if tile["causal"]:
        for r, c in zip(ol - s0, oc, strict=True):
            E[r, c + 1 :] = 0.0
    acc["z"][row_idx] += E.sum(axis=1)
    acc["sag2"][row_idx] += np.einsum("bt,bt->b", E, tile["G2"][row_idx])
    acc["e_self"][ol] = E[ol - s0, oc]
    F = stack[1, row_idx]
    np.multiply(E, E, out=F)
    F *= tile["rinv2"]
    F[ol - s0, oc] = 0.0  # k != i
    acc["sF"][row_idx] += F.sum(axis=1)
    acc["sFom"][row_idx] += np.einsum("bt,bt->b", F, tile["om"][row_idx])
    T = tmp[row_idx]
    np.multiply(tile["om"][row_idx], -beta_rows[row_idx, None], out=T)
    T += tile["G"][row_idx]
    F *= T  # F_k (g_k - beta (1 - g_k^2))
    for p in range(tile["prod"].shape[0]):
        np.multiply(E, tile["prod"][p, row_idx], out=stack[2 + p, row_idx])


def jacobian_row_norms(sums, Ys, rs, W, brow, alpha, d, q=None):
    """``R_i`` from the row sums of :func:`row_sums` (docs/long-context.md#the-jacobian-norm-of-one-output-row).

    Parameters
    ----------
    sums : dict
        Output of :func:`row_sums` (arrays of shape ``(B, m)``, ``(B, m, d)``, ``(B, P, m, d)``).
    Ys : numpy.ndarray, shape (m, d)
        Unit tokens ``y_i`` of the sampled rows.
    rs : numpy.ndarray, shape (m,)
        Their norms ``r_i``.
    W : numpy.ndarray, shape (P, m, d)
        The tangent probes.
    brow : numpy.ndarray, shape (B, m)
        The rows' betas.
    alpha : float
        Residual weight.
    d : int
        Dimension.
    q : numpy.ndarray, shape (B, m), optional
        Exact ``||C P_i||_F^2``; default: its probe estimate ``mean_p |C w_p|^2``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray or None)
        ``R`` ``(B, m)`` and, with ``P >= 2`` probes and no ``q``, the unbiased estimate of each
        value's probe-noise variance (else ``None``).
    """
    z = sums["z"]
    a = sums["e_self"] / z
    mvec = sums["mv"] / z[:, :, None]
    mu = np.einsum("kmd,kmd->km", mvec, mvec)
    Ki = np.einsum("kmd,md->km", mvec, Ys)
    W0 = sums["sF"] / z**2
    W2 = sums["sFom"] / z**2
    vdot = 2.0 * brow * np.einsum("kmd,kmd->km", mvec, sums["cv"]) / z**2
    off = (d - 1.0 - 2.0 * brow * Ki) * W0 + brow**2 * (1.0 + mu) * W2 + vdot
    trcp = 1.0 - mu - (sums["sag2"] / z - Ki**2)
    noise = None
    if q is None:
        mw = np.einsum("kmd,pmd->kpm", mvec, W)  # <m, w_p>
        Cw = sums["pv"] / z[:, None, :, None] - mw[..., None] * mvec[:, None]
        qp = np.einsum("kpmd,kpmd->kpm", Cw, Cw)  # (B, P, m)
        q = qp.mean(axis=1)
        if qp.shape[1] >= 2:
            noise = (brow**2 / rs**2) ** 2 * qp.var(axis=1, ddof=1) / qp.shape[1]
    rb2 = (a**2 * (d - 1.0) + 2.0 * brow * a * trcp + brow**2 * q) / rs**2
    trb = (a * (d - 1.0) + brow * trcp) / rs
    return off + rb2 + 2.0 * alpha * trb + alpha**2 * d, noise


def _checked(X, betas, alpha, route, probes, rng, block_rows, key_block):
    """Every argument check of the eta kernels, before any work."""
    X, r, alpha = check_tokens(X, alpha)
    Bm = beta_matrix(betas, X.shape[0])
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
    return X, r, Bm, alpha, probes, br


def _norms(X, r, Bm, alpha, sample, route, probes, rng, causal, block_rows, key_block, on_jax):
    """``R_i`` of the sampled rows and, with several probes, their noise variances; the row sums
    on JAX when ``on_jax`` (:mod:`attnscale.layer.sampled.eta_jax`, same rows and probes)."""
    d = X.shape[1]
    idx = sample.rows
    Ys, rs = unit_rows(X, r, idx), r[idx]
    brow = Bm[:, idx]
    W = tangent_probes(rng, Ys, probes) if route == "probe" else np.zeros((0, sample.m, d))
    if on_jax:
        from attnscale.layer.sampled import eta_jax as sampled_eta_jax

        sums = sampled_eta_jax.row_sums(X, r, idx, brow, W, bool(causal))
    else:
        sums = row_sums(X, r, idx, brow, W, causal, min(block_rows, sample.m), key_block)
    q = None
    if route == "exact":
        from attnscale.layer.sampled.eta_exact import exact_q

        q = exact_q(X / r[:, None], idx, brow, causal)
    return jacobian_row_norms(sums, Ys, rs, W, brow, alpha, d, q)


def row_jacobian_norms(
    X,
    betas,
    alpha: float = 0.0,
    *,
    rows,
    route: str = "probe",
    probes: int = 1,
    rng=None,
    causal: bool = False,
    block_rows: int | None = None,
    key_block: int | None = None,
    backend=None,
):
    """Per-row Jacobian norms ``R_i = ||d x_i' / d X||_F^2`` of some query rows
    (docs/long-context.md#the-jacobian-norm-of-one-output-row).

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens.
    betas : array_like, shape (B,) or (B, n)
        Global or per-row betas, ``>= 0``.
    alpha : float, optional
        Residual weight, ``alpha >= 0``.
    rows : int, array_like of int or RowSample
        The query rows (sorted on output), or a number of rows to draw from ``rng``.
    route : {"probe", "exact"}, optional
        ``q = ||C P_i||^2`` from ``probes`` tangent probes per row (unbiased, ``O(n d)`` per
        probe) or exactly (``O(n d^2)`` or ``O(n^2)`` per row; checks and small sizes).
    probes : int, optional
        Probes per row (probe route), ``>= 1``.
    rng : numpy.random.Generator, optional
        Source of the row draw (when ``rows`` is a number) and of the probes (probe route).
    causal : bool, optional
        Query ``i`` sees keys ``j <= i`` only.
    block_rows, key_block : int, optional
        Rows per block (default 128) and keys per tile (numpy backend).
    backend : {"numpy", "jax"}, optional
        Backend of the row sums (:mod:`attnscale.layer.sampled.eta_jax`); ``None`` (default) is
        :func:`attnscale.backend.default` (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray or None)
        ``R`` of shape ``(B, m)`` (rows sorted) and, for the probe route with ``probes >= 2``,
        an unbiased estimate of each value's probe-noise variance.
    """
    X, r, Bm, alpha, probes, br = _checked(
        X, betas, alpha, route, probes, rng, block_rows, key_block
    )
    on_jax = uses_jax(backend)
    sample = resolve_rows(X.shape[0], rows, rng, causal=causal)
    return _norms(X, r, Bm, alpha, sample, route, probes, rng, causal, br, key_block, on_jax)


def eta_sampled(
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
    backend=None,
) -> SampledEta:
    """eta (docs/paper-a.md#the-jacobian-norm-eta) for a grid of betas from ``m`` sampled query
    rows, with its within-draw standard error (docs/long-context.md#the-sampled-eta).

    ``eta_hat = sum_l (N_l / n) mean_{S_l} R_i / d`` over the sampled rows of each position
    stratum: unbiased for the draw's eta (the value of
    :func:`attnscale.layer.dense.eta_exact.eta_exact_grid`; the probe route adds zero-mean noise). With
    every row sampled and ``route="exact"`` it is the dense value. Standard error: the stratified
    finite-population formula of :func:`attnscale.layer.sampled.rows.stratified_mean`; the
    probe noise is not reduced by the finite-population correction: with ``probes >= 2`` it is
    estimated from the spread of the probes, with one probe the correction is left out
    (conservative by at most ``1 / (1 - m_l / N_l)`` in variance). The SE is the within-draw error
    only (docs/long-context.md#within-draw-and-between-draw-variance).

    Cost per beta: ``2 (2 + probes) m n d`` flops (causal: about half) and ``m n`` exps; once for
    all betas: the Gram and probe tiles, ``2 (1 + probes) m n d``. Memory
    ``O((2 + probes) b t + B probes m d)``.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Raw tokens (``n >= 2``, non-zero finite rows).
    betas : array_like, shape (B,) or (B, n)
        Global betas, or one beta per query row; every entry ``>= 0``.
    alpha : float, optional
        Residual weight, ``alpha >= 0``.
    rows : int, array_like of int or RowSample
        Number of rows ``m`` to draw from ``rng`` (``m = n``: all rows), explicit row indices, or
        a :class:`attnscale.layer.sampled.rows.RowSample`.
    rng : numpy.random.Generator, optional
        Source of the row draw and of the probes (drawn after the rows).
    strata, head : int, optional
        Position strata of the draw and leading positions taken in full (default
        :func:`attnscale.layer.sampled.rows.default_design`); used only when ``rows`` is a number.
    causal : bool, optional
        Query ``i`` sees keys ``j <= i`` only (``docs/realistic-attention.md#causal-mask``).
    route : {"probe", "exact"}, optional
        How ``||C P_i||^2`` is computed (see :func:`row_jacobian_norms`).
    probes : int, optional
        Probes per row (probe route).
    block_rows, key_block : int, optional
        Rows per block and keys per tile (numpy backend).
    backend : {"numpy", "jax"}, optional
        Backend of the row sums, the heavy part (:mod:`attnscale.layer.sampled.eta_jax`); rows,
        probes and the statistics are the same numpy code for both. ``None`` (default) is
        :func:`attnscale.backend.default` (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    SampledEta
        ``estimate``, ``se`` (``(B,)``), ``m``, per-row ``values`` ``R_i / d``, the row sample and
        the route.
    """
    X, r, Bm, alpha, probes, br = _checked(
        X, betas, alpha, route, probes, rng, block_rows, key_block
    )
    on_jax = uses_jax(backend)
    sample = resolve_rows(X.shape[0], rows, rng, strata, head, causal)
    R, noise = _norms(X, r, Bm, alpha, sample, route, probes, rng, causal, br, key_block, on_jax)
    d = X.shape[1]
    if route == "exact":
        nv = None
    else:
        nv = "unknown" if noise is None else noise / d**2
    est, se = stratified_mean(R / d, sample, nv)
    return SampledEta(est, se, sample.m, R / d, sample, route)


def eta_normalised(eta, X, route: str):
    """eta over its ``gamma -> inf`` value on the same rows, ``(1 - 1/d) mean_S 1/r_i^2`` (the
    limit of ``R_i / d``: ``J_ii -> P_i / r_i``, the other blocks vanish), a ratio estimator with its
    linearised within-draw standard error (the stratified SE of the residuals
    ``R_i / d - ratio (1 - 1/d) / r_i^2``; probe noise counted as in
    :func:`attnscale.layer.sampled.eta.eta_sampled` with one probe;
    docs/long-context.md#transition-sharpness-against-context-length).

    Returns ``(ratio, se, limit)``, each ``(B,)`` but ``limit`` (a float)."""
    sample = eta.rows
    d = X.shape[1]
    r2 = np.einsum("ij,ij->i", X[sample.rows], X[sample.rows])
    inf = (1.0 - 1.0 / d) / r2
    lim = float(stratified_mean(inf, sample)[0][0])
    ratio = eta.estimate / lim
    resid = eta.values - ratio[:, None] * inf[None]
    _, se = stratified_mean(resid, sample, None if route == "exact" else "unknown")
    return ratio, se / lim, lim
