"""Differences between variants over seeds: mean, SE, paired two-sided t-test, Holm's
correction across the variants compared (docs/training.md#statistics)."""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["holm", "paired"]


def paired(x, y) -> dict:
    """Mean and SE over seeds of x - y (paired by seed) and the two-sided paired t-test's p."""
    d = np.asarray(x, float) - np.asarray(y, float)
    k = d.size
    se = d.std(ddof=1) / np.sqrt(k) if k > 1 else np.nan
    if k < 2:
        p = np.nan
    elif se == 0:
        p = 1.0 if d.mean() == 0 else 0.0
    else:
        p = float(stats.ttest_rel(x, y).pvalue)
    return {"diff": d.mean(), "diff_se": se, "p": p, "seeds": k}


def holm(p) -> np.ndarray:
    """Holm-adjusted p-values (step-down, monotone, capped at 1; NaN kept)."""
    p = np.asarray(p, float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    order = ok[np.argsort(p[ok])]
    m = order.size
    running = 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[j]))
        out[j] = running
    return out
