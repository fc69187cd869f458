"""Standard errors over windows cut from one text: the moving-block bootstrap
(docs/real-transformer.md#standard-errors).

Consecutive windows of one text are correlated (the same chapter, the same speakers), so the
windows are resampled in blocks of ``block`` consecutive windows [choice] (Kuensch 1989's moving
blocks; blocks start anywhere in ``0 .. W - block``, as many as fill ``W`` windows, the last one
cut). :func:`ar1_calibration` checks the standard error on generated data whose true standard
error is known.
"""

from __future__ import annotations

import numpy as np

__all__ = ["block_indices", "resample", "block_bootstrap", "bootstrap_se", "ar1_calibration"]


def block_indices(W: int, block: int, resamples: int, rng) -> np.ndarray:
    """``(resamples, W)`` window indices of moving-block resamples."""
    b = int(min(max(1, block), W))
    k = -(-W // b)
    starts = rng.integers(0, W - b + 1, size=(resamples, k))
    idx = (starts[:, :, None] + np.arange(b)[None, None, :]).reshape(resamples, k * b)
    return idx[:, :W]


def resample(stat, W: int, block: int, resamples: int, rng) -> np.ndarray:
    """``stat(idx)`` of the window indices ``idx`` of each moving-block resample of ``W``
    windows, stacked over resamples (for statistics of several arrays of windows at once)."""
    return np.stack([np.asarray(stat(i)) for i in block_indices(W, block, resamples, rng)])


def block_bootstrap(values, stat, block: int, resamples: int, rng) -> np.ndarray:
    """``stat`` of each moving-block resample of ``values`` (windows along axis 0):
    ``stat(values[idx])`` stacked over resamples."""
    values = np.asarray(values)
    return resample(lambda i: stat(values[i]), values.shape[0], block, resamples, rng)


def bootstrap_se(values, block: int, resamples: int, rng) -> np.ndarray:
    """Block-bootstrap standard error of the mean over windows (axis 0), NaN-aware: the
    standard deviation of the resampled means (``ddof = 1``)."""
    values = np.asarray(values, dtype=np.float64)
    idx = block_indices(values.shape[0], block, resamples, rng)
    means = np.stack([np.nanmean(values[i], axis=0) for i in idx])
    return np.nanstd(means, axis=0, ddof=1)


def ar1_calibration(W: int, phi: float, block: int, resamples: int, replicates: int, rng):
    """Calibration on generated data: ``replicates`` AR(1) series of ``W`` values with lag-one
    correlation ``phi`` (unit marginal variance). Returns ``(mean bootstrap SE, true SE,
    coverage of mean +- 1.96 SE)``, the true SE of the mean being
    ``sqrt(sum_{|h|<W} (1 - |h|/W) phi^|h| / W)`` [derived]."""
    h = np.arange(1, W)
    true_var = (1.0 + 2.0 * np.sum((1.0 - h / W) * phi**h)) / W
    ses, cover = [], []
    for _ in range(replicates):
        e = rng.standard_normal(W)
        x = np.empty(W)
        x[0] = e[0]
        for t in range(1, W):
            x[t] = phi * x[t - 1] + np.sqrt(1.0 - phi * phi) * e[t]
        se = float(bootstrap_se(x, block, resamples, rng))
        ses.append(se)
        cover.append(abs(x.mean()) <= 1.96 * se)
    return float(np.mean(ses)), float(np.sqrt(true_var)), float(np.mean(cover))
