"""The mean of a pair function over all pairs of rows, estimated from the pairs of a row sample
(docs/long-context.md#standard-error-of-the-sampled-lambda).

``theta = mean_{i<j} h(i, j)`` (the angle ratio lambda) is estimated by the Horvitz-Thompson
U-statistic of the sampled pairs, each weighted by the inverse probability that both its rows are
sampled (:func:`attnscale.layer.sampled.rows.inclusion_probability`; with one stratum the plain
mean over the sampled pairs), which is exactly unbiased; its variance is estimated by the unbiased
estimator of a Horvitz-Thompson total, which includes the second-order (pair) term of the
U-statistic's variance and the finite-population correction. Checked by enumerating every
sample of small designs (``tests/test_sampled.py``).

The estimator is fed block by block (:func:`pair_block_sums` on ``b x m`` blocks of the pair
matrix, concatenated, then :func:`pair_estimate_from_sums`), so that no ``m x m`` matrix needs
to exist; :func:`pair_estimate` takes a whole pair matrix.
"""

from __future__ import annotations

import numpy as np

from attnscale.layer.sampled.rows import RowSample

__all__ = [
    "pair_block_sums",
    "pair_variance_from_sums",
    "pair_estimate_from_sums",
    "pair_estimate",
]


def _pi(F: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Inclusion probabilities of row sets given by their per-stratum counts ``(..., L)``, from
    ``F[l, k] = [m_l]_k / [N_l]_k`` (:func:`attnscale.layer.sampled.rows.inclusion_probability`)."""
    L = F.shape[0]
    return np.prod(F[np.arange(L), counts], axis=-1)


def _tables(sample: RowSample):
    """Horvitz-Thompson weights of a pair by the strata of its rows, ``w[s, a] = 1 / pi``, and
    ``pi_p pi_q / pi_{p u q}`` for two pairs sharing one row (``rho3[s, a, b]``: strata of the
    shared row and of the two others) and for two disjoint pairs (``rho4[c, e]`` by strata
    classes ``c = {a <= b}``), 0 where the union cannot be sampled; and the class of each
    ordered stratum pair."""
    L = sample.edges.size - 1
    F = np.ones((L, 5))
    for k in range(1, 5):  # [m_l]_k / [N_l]_k: k given rows of stratum l all sampled
        F[:, k] = (
            F[:, k - 1] * np.maximum(sample.counts - k + 1, 0) / np.maximum(sample.sizes - k + 1, 1)
        )
    e = np.eye(L, dtype=np.int64)
    two = e[:, None] + e[None, :]  # (L, L, L): counts of the pair (s, a)
    pi2 = _pi(F, two)
    three = two[:, :, None] + e[None, None, :]  # (s, a, b)
    pi3 = _pi(F, three)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho3 = np.where(pi3 > 0, pi2[:, :, None] * pi2[:, None, :] / pi3, 0.0)
        ca, cb = np.triu_indices(L)  # classes {a <= b}
        cc = two[ca, cb]  # (nc, L)
        pi4 = _pi(F, cc[:, None] + cc[None, :])
        p = pi2[ca, cb]
        rho4 = np.where(pi4 > 0, p[:, None] * p[None, :] / pi4, 0.0)
    cls = np.empty((L, L), dtype=np.int64)
    cls[ca, cb] = np.arange(ca.size)
    cls[cb, ca] = np.arange(ca.size)
    return 1.0 / pi2, rho3, rho4, cls


def pair_block_sums(H, keep, units, sample: RowSample) -> dict:
    """Per-row, per-stratum sums of one block of the pair matrix (docs/long-context.md#standard-error-of-the-sampled-lambda).

    Parameters
    ----------
    H : numpy.ndarray, shape (k, b, m)
        Pair values ``h(u, v)`` of the ``b`` sampled rows ``units`` against all ``m`` sampled rows,
        for ``k`` grid points (entries where ``keep`` is false are ignored).
    keep : numpy.ndarray of bool, shape (b, m) or (k, b, m)
        Pairs that count: ``u != v`` and not excluded (coincident inputs, ``0/0``).
    units : numpy.ndarray of int, shape (b,)
        Positions of the block's rows in the sample (``0 <= u < m``).
    sample : RowSample

    Returns
    -------
    dict
        ``h``, ``h2`` of shape ``(k, b, L)`` (sums of ``h`` and ``h^2`` over the kept pairs with
        the other row in stratum ``l``), ``n`` of shape ``(b, L)`` or ``(k, b, L)`` (their
        number) and ``units``.
    """
    L = sample.edges.size - 1
    onehot = np.zeros((sample.m, L))
    onehot[np.arange(sample.m), sample.stratum] = 1.0
    Hk = np.where(keep if keep.ndim == 3 else keep[None], H, 0.0)
    return {
        "h": Hk @ onehot,
        "h2": (Hk * Hk) @ onehot,
        "n": keep.astype(float) @ onehot,
        "units": np.asarray(units),
    }


def pair_variance_from_sums(sums: dict, sample: RowSample) -> tuple[np.ndarray, np.ndarray]:
    """The Horvitz-Thompson U-statistic and the unbiased estimate of its variance (which can be
    negative at very small ``m``) from the block sums of :func:`pair_block_sums`
    (docs/long-context.md#standard-error-of-the-sampled-lambda).

    ``estimate = sum_p w_p h_p / sum_p w_p`` over the kept sampled pairs ``p`` (``w_p = 1 / pi_p``,
    the inverse probability that both rows are sampled; with one stratum the plain mean over the
    sampled pairs). Its variance estimator is the unbiased one of a Horvitz-Thompson total,
    ``V = sum_{p, q} (1 - pi_p pi_q / pi_{p u q}) w_p e_p w_q e_q`` over ordered pairs of sampled
    pairs (``p = q`` included), applied to the residuals ``e_p = h_p - estimate``; it includes the
    second-order (pair) term of the U-statistic's variance and the finite-population correction,
    and is exact (unbiased) when no pair is excluded. The variance of the estimate is
    ``V / (sum_p w_p)^2``: zero when every row is sampled, ``nan`` where a stratum has fewer than
    ``min(4, N_l)`` sampled rows (some terms of the variance are then not estimable).

    Parameters
    ----------
    sums : dict
        The ``h``, ``h2`` (``(k, m, L)``) and ``n`` (``(m, L)`` or ``(k, m, L)``) sums of every
        sampled row, rows in sample order. The ``k`` grid points may also be different samples
        of the same design (same strata, sizes and counts): only the design enters here.
    sample : RowSample

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Estimate and variance estimate, each of shape ``(k,)``.
    """
    L = sample.edges.size - 1
    w, rho3, rho4, cls = _tables(sample)
    ws = w[sample.stratum]  # (m, L): weight of a pair (u, v in l)
    Ay, Ay2 = sums["h"], sums["h2"]
    Ax = np.broadcast_to(sums["n"], Ay.shape)
    total_x = 0.5 * (ws[None] * Ax).sum(axis=(1, 2))  # sum_p w_p over unordered kept pairs
    with np.errstate(invalid="ignore", divide="ignore"):
        est = 0.5 * (ws[None] * Ay).sum(axis=(1, 2)) / total_x
    lam = est[:, None, None]
    Re = ws[None] * (Ay - lam * Ax)  # (k, m, L): R_u[a] = sum_{v in a} w (h - est)
    Qe = ws[None] ** 2 * (Ay2 - 2.0 * lam * Ay + lam**2 * Ax)  # Q_u[a] = sum (w (h - est))^2
    same = 0.5 * (Qe / ws[None]).sum(axis=(1, 2))  # p = q: sum_p pi_p (w_p e_p)^2
    onehot = np.zeros((sample.m, L))
    onehot[np.arange(sample.m), sample.stratum] = 1.0
    # agg[s, a, b] = sum_{u in s} (R_u[a] R_u[b] - [a = b] Q_u[a]): pairs sharing the row u
    agg = np.einsum("us,kua,kub->ksab", onehot, Re, Re, optimize=True)
    agg -= np.einsum("us,kua,ab->ksab", onehot, Qe, np.eye(L), optimize=True)
    share = np.einsum("sab,ksab->k", rho3, agg)
    nc = rho4.shape[0]
    # totals by class; a within-stratum class is counted from both of its rows
    P = np.zeros((L, L, nc))
    P[np.arange(L)[:, None], np.arange(L)[None, :], cls] = 1.0
    half = np.where(np.eye(L, dtype=bool), 0.5, 1.0)
    T = np.einsum("us,kua,sac->kc", onehot, Re, P * np.triu(half)[:, :, None], optimize=True)
    Q = np.einsum("us,kua,sac->kc", onehot, Qe, P * np.triu(half)[:, :, None], optimize=True)
    S1 = np.einsum("sac,ksab,sbe->kce", P, agg, P, optimize=True)
    D = T[:, :, None] * T[:, None, :] - S1
    D -= Q[:, :, None] * np.eye(nc)[None]
    disjoint = np.einsum("ce,kce->k", rho4, D)
    t2 = T.sum(axis=1) ** 2
    var = (t2 - same - share - disjoint) / total_x**2
    if np.all(sample.counts == sample.sizes):
        var = np.zeros_like(var)  # every row sampled: the estimate is the value itself
    elif np.any(sample.counts < np.minimum(4, sample.sizes)):
        var = np.full_like(var, np.nan)
    return est, var


def pair_estimate_from_sums(sums: dict, sample: RowSample) -> tuple[np.ndarray, np.ndarray]:
    """Estimate and standard error ``sqrt(max(var, 0))`` of :func:`pair_variance_from_sums`
    (docs/long-context.md#standard-error-of-the-sampled-lambda)."""
    est, var = pair_variance_from_sums(sums, sample)
    return est, np.sqrt(np.maximum(var, 0.0))


def pair_estimate(H, sample: RowSample, keep=None) -> tuple[np.ndarray, np.ndarray]:
    """Estimate and standard error of the mean of ``h`` over all pairs from the full ``(k, m, m)``
    pair matrix of the sampled rows (small ``m``; the kernels use the block form,
    docs/long-context.md#standard-error-of-the-sampled-lambda).

    Parameters
    ----------
    H : array_like, shape (m, m) or (k, m, m)
        Symmetric pair values of the sampled rows, in sample order (the diagonal is ignored).
    sample : RowSample
    keep : array_like of bool, shape (m, m) or (k, m, m), optional
        Pairs that count (default: all off-diagonal pairs).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Estimate and standard error, shape ``(k,)`` (scalars' arrays of shape (1,) for a 2-D ``H``).
    """
    H = np.asarray(H, dtype=float)
    H = H[None] if H.ndim == 2 else H
    m = sample.m
    if H.shape[1:] != (m, m):
        raise ValueError(f"H must have shape (m, m) or (k, m, m) with m = {m}, got {H.shape}")
    off = ~np.eye(m, dtype=bool)
    keep = off if keep is None else (np.asarray(keep, dtype=bool) & off)
    if keep.ndim == 3 and keep.shape != H.shape:
        raise ValueError(f"keep must have shape (m, m) or {H.shape}, got {keep.shape}")
    sums = pair_block_sums(H, keep, np.arange(m), sample)
    return pair_estimate_from_sums(sums, sample)
