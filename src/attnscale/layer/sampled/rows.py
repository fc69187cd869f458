"""Row samples: the design behind the row-sampled lambda and eta (docs/long-context.md#sampling-rows).

A :class:`RowSample` is a set of ``m`` distinct query rows of an ``n``-token context, drawn without
replacement within position strata (one stratum by default; under a causal mask several, after a
head of leading positions taken in full, so that early and late positions are represented in
fixed proportions). :func:`inclusion_probability` is the probability that a given set of rows is
sampled, which weights both estimators: :func:`stratified_mean` here (the mean of a row function
over all rows, eta; docs/long-context.md#standard-error-of-the-sampled-eta) and the U-statistic
of :mod:`attnscale.layer.sampled.pairs` (the mean of a pair function over all pairs, lambda).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from attnscale.core.validation import check_int, check_rng

__all__ = [
    "RowSample",
    "sample_rows",
    "row_sample",
    "default_design",
    "resolve_rows",
    "inclusion_probability",
    "stratified_mean",
]


class RowSample(NamedTuple):
    """``m`` distinct query rows of an ``n``-token context, sampled within position strata
    (docs/long-context.md#sampling-rows)."""

    #: ``(m,)`` sorted distinct row indices (0-based positions)
    rows: np.ndarray
    #: ``(m,)`` stratum of each sampled row
    stratum: np.ndarray
    #: ``(L + 1,)`` stratum boundaries: stratum ``l`` holds the positions ``edges[l] <= i < edges[l + 1]``
    edges: np.ndarray
    #: number of tokens of the context
    n: int

    @property
    def m(self) -> int:
        """Number of sampled rows."""
        return int(self.rows.size)

    @property
    def sizes(self) -> np.ndarray:
        """``(L,)`` rows per stratum in the context, ``N_l``."""
        return np.diff(self.edges)

    @property
    def counts(self) -> np.ndarray:
        """``(L,)`` sampled rows per stratum, ``m_l``."""
        return np.bincount(self.stratum, minlength=self.edges.size - 1)


def _equal_edges(n: int, strata: int) -> np.ndarray:
    return np.round(np.linspace(0, n, strata + 1)).astype(np.int64)


def sample_rows(
    n: int, m: int, rng: np.random.Generator | None = None, *, strata: int = 1, head: int = 0
) -> RowSample:
    """Draw ``m`` query rows without replacement, an equal share from each of ``strata``
    equal-width position ranges, after the first ``head`` positions, which are all taken
    (docs/long-context.md#sampling-rows).

    The first ``head`` positions form a stratum of their own, sampled completely (under a causal
    mask the first rows see few keys and their values differ most from the rest). The remaining
    ``n - head`` positions are cut into ``L = strata`` equal-width ranges, stratum ``l`` covering
    ``head + round(l (n - head) / L) <= i < head + round((l + 1) (n - head) / L)``; each gets
    ``(m - head) // L`` rows, the first ``(m - head) % L`` one more. The draw is one
    ``rng.choice(N_l, m_l, replace=False)`` per stratum, in stratum order. When every stratum is
    sampled completely (e.g. ``m = n``) the sample is all rows and ``rng`` is not used.

    Parameters
    ----------
    n : int
        Context length, ``n >= 2``.
    m : int
        Number of rows, ``2 <= m <= n``; every stratum must get at least 2 rows and at most its
        size.
    rng : numpy.random.Generator, optional
        Source of randomness (the job's :func:`attnscale.core.seeding.job_rng`); required unless
        the sample is all rows.
    strata : int, optional
        Number of position strata ``L >= 1`` after the head (``2 L <= m - head``).
    head : int, optional
        Leading positions taken in full, ``0 <= head <= m - 2``.

    Returns
    -------
    RowSample
    """
    n = check_int("n", n, minimum=2)
    m = check_int("m", m, minimum=2, maximum=n)
    head = check_int("head", head, minimum=0, maximum=m - 2)
    strata = check_int("strata", strata, minimum=1, maximum=(m - head) // 2)
    edges = head + _equal_edges(n - head, strata)
    counts = np.full(strata, (m - head) // strata)
    counts[: (m - head) % strata] += 1
    if head:
        edges = np.concatenate([[0], edges])
        counts = np.concatenate([[head], counts])
        strata += 1
    sizes = np.diff(edges)
    if np.any(counts > sizes):
        s = int(np.argmax(counts > sizes))
        raise ValueError(
            f"m = {m} rows do not fit: stratum {s} has {sizes[s]} positions and "
            f"would get {counts[s]} rows; choose a smaller m or fewer strata"
        )
    if np.all(counts == sizes):
        return RowSample(
            np.arange(n, dtype=np.int64), np.repeat(np.arange(strata), sizes), edges, n
        )
    check_rng(rng)
    row_idx = np.concatenate(
        [edges[s] + np.sort(rng.choice(sizes[s], counts[s], replace=False)) for s in range(strata)]
    )
    return RowSample(row_idx.astype(np.int64), np.repeat(np.arange(strata), counts), edges, n)


def row_sample(n: int, rows, edges=None) -> RowSample:
    """A :class:`RowSample` from given row indices (treated as drawn without replacement, uniformly
    within each stratum; docs/long-context.md#sampling-rows).

    Parameters
    ----------
    n : int
        Context length, ``n >= 2``.
    rows : array_like of int, shape (m,)
        Distinct row indices in ``[0, n)``, at least 2 in every stratum.
    edges : array_like of int, optional
        Stratum boundaries ``0 = e_0 < e_1 < ... < e_L = n`` (default: one stratum).

    Returns
    -------
    RowSample
    """
    n = check_int("n", n, minimum=2)
    idx = np.asarray(rows)
    if idx.dtype.kind not in "iu" or idx.ndim != 1 or idx.size < 2:
        raise ValueError(
            f"rows must be a 1-D integer array of at least 2 row indices, got {rows!r}"
        )
    if idx.min() < 0 or idx.max() >= n:
        raise ValueError(f"rows must lie in [0, {n - 1}], got range [{idx.min()}, {idx.max()}]")
    idx = np.sort(idx.astype(np.int64))
    if np.any(np.diff(idx) == 0):
        raise ValueError("rows must be distinct (rows are sampled without replacement)")
    e = np.array([0, n]) if edges is None else np.asarray(edges)
    if (
        e.dtype.kind not in "iu"
        or e.ndim != 1
        or e.size < 2
        or e[0] != 0
        or e[-1] != n
        or np.any(np.diff(e) <= 0)
    ):
        raise ValueError(f"edges must be increasing integers from 0 to n = {n}, got {edges!r}")
    e = e.astype(np.int64)
    stratum = np.searchsorted(e, idx, side="right") - 1
    counts = np.bincount(stratum, minlength=e.size - 1)
    if np.any(counts < np.minimum(2, np.diff(e))):
        raise ValueError(
            "every stratum needs at least 2 sampled rows (or all of its rows), got "
            f"counts {counts.tolist()}"
        )
    return RowSample(idx, stratum, e, n)


def default_design(m: int, causal: bool) -> tuple[int, int]:
    """``(strata, head)`` of a kernel's row draw when the caller gives none [choice]: one stratum
    without head for bidirectional attention (rows are exchangeable there); under a causal mask
    ``min(8, m // 16)`` equal-width strata after a head of as many leading positions taken in full
    (docs/long-context.md#sampling-rows)."""
    if not causal:
        return 1, 0
    s = min(8, m // 16)
    return (s, s) if s >= 2 else (1, 0)


def resolve_rows(
    n: int, rows, rng=None, strata: int | None = None, head: int | None = None, causal: bool = False
) -> RowSample:
    """The row sample of a kernel call: ``rows`` is a number of rows (drawn with
    :func:`sample_rows` from ``rng``, with ``strata`` and ``head`` defaulting to
    :func:`default_design`), explicit row indices (:func:`row_sample`, one stratum) or a
    :class:`RowSample` of a context of ``n`` tokens (docs/long-context.md#sampling-rows)."""
    if isinstance(rows, RowSample):
        if rows.n != n:
            raise ValueError(f"rows is a sample of n = {rows.n} tokens, but X has n = {n} rows")
        return rows
    if isinstance(rows, (int, np.integer)) and not isinstance(rows, bool):
        m = check_int("rows", int(rows), minimum=2, maximum=n)
        s0, h0 = default_design(m, causal)
        strata = s0 if strata is None else strata
        head = h0 if head is None else head
        return sample_rows(n, m, rng, strata=strata, head=head)
    if isinstance(rows, bool) or np.ndim(rows) != 1:
        raise TypeError(
            "rows must be a number of rows (int), an array of row indices or a "
            f"RowSample, got {type(rows).__name__}"
        )
    return row_sample(n, rows)


def _falling_ratio(m_l: np.ndarray, n_l: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``[m_l]_{k_l} / [N_l]_{k_l}``: probability that ``k_l`` given rows of stratum ``l`` are all
    sampled (``k_l <= 4`` here)."""
    out = np.ones(m_l.shape)
    for t in range(int(k.max(initial=0))):
        step = np.maximum(m_l - t, 0) / np.maximum(n_l - t, 1)
        out = out * np.where(k > t, step, 1.0)
    return out


def inclusion_probability(sample: RowSample, per_stratum) -> float:
    """Probability that a set of rows, ``per_stratum[l]`` of them in stratum ``l``, is contained in
    the sample: ``prod_l [m_l]_{k_l} / [N_l]_{k_l}`` (falling factorials; strata are sampled
    independently, each without replacement; docs/long-context.md#sampling-rows)."""
    k = np.asarray(per_stratum, dtype=np.int64)
    ratios = _falling_ratio(sample.counts.astype(float), sample.sizes.astype(float), k)
    return float(np.prod(ratios))


def stratified_mean(values, sample: RowSample, noise_var=None) -> tuple[np.ndarray, np.ndarray]:
    """Estimate and standard error of the mean of a row function over all ``n`` rows from its
    values on the sampled rows (docs/long-context.md#standard-error-of-the-sampled-eta).

    ``estimate = sum_l (N_l / n) mean_{S_l} v``. Each value may carry independent zero-mean noise
    of its own (the probe of the sampled eta), which the finite-population correction does not
    remove::

        Var = sum_l (N_l / n)^2 [(1 - f_l) s_l^2 / m_l + f_l nu_l / m_l],   f_l = m_l / N_l,

    with ``s_l^2`` the sample variance of the values in stratum ``l`` and ``nu_l`` the mean of
    ``noise_var`` over its rows (an unbiased estimate of each value's noise variance). Without
    ``noise_var`` the values are taken as exact (``nu_l = 0``). With ``noise_var="unknown"`` (noisy
    values, one probe each, so their noise cannot be told from the spread between rows) ``s_l^2``
    takes the place of ``nu_l``: no finite-population correction, an overestimate of the variance
    by ``f_l (s_l^2 - nu_l) / m_l``, at most a factor ``1 / (1 - f_l)``.

    Parameters
    ----------
    values : array_like, shape (m,) or (k, m)
        Row values in sample order.
    sample : RowSample
    noise_var : array_like, shape like ``values``, or "unknown", optional
        Unbiased estimates of each value's noise variance, or ``"unknown"`` (noisy values whose
        noise variance cannot be estimated), or ``None`` (exact values).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Estimate and standard error, shape ``(k,)``.
    """
    v = np.asarray(values, dtype=float)
    v = v[None] if v.ndim == 1 else v
    if v.shape[-1] != sample.m:
        raise ValueError(f"values must have m = {sample.m} entries per row, got shape {v.shape}")
    L = sample.edges.size - 1
    n_l, m_l = sample.sizes.astype(float), sample.counts.astype(float)
    onehot = np.zeros((sample.m, L))
    onehot[np.arange(sample.m), sample.stratum] = 1.0
    means = (v @ onehot) / m_l  # (k, L)
    est = means @ (n_l / sample.n)
    dev = v - means[:, sample.stratum]
    s2 = ((dev * dev) @ onehot) / (m_l - 1.0)
    f = m_l / n_l
    if isinstance(noise_var, str):
        if noise_var != "unknown":
            raise ValueError(f"noise_var must be an array, 'unknown' or None, got {noise_var!r}")
        nu = s2
    elif noise_var is None:
        nu = np.zeros_like(s2)
    else:
        nv = np.broadcast_to(np.asarray(noise_var, dtype=float), v.shape)
        nu = (nv @ onehot) / m_l
    var = ((n_l / sample.n) ** 2 * ((1.0 - f) * s2 + f * nu) / m_l).sum(axis=1)
    return est, np.sqrt(var)
