"""The mean over independent draws and its standard error, defined once for the whole library
(docs/pipeline.md#statistics): every "±" of a table, a finding or a Hutchinson estimate comes
from :func:`mean_se`."""

from __future__ import annotations

import numpy as np

__all__ = ["mean_se"]


def mean_se(values, axis: int = 0):
    """Mean over draws and its standard error, the sample standard deviation (``ddof = 1``) over
    the square root of the number of draws; ``nan`` for a single draw (docs/pipeline.md#statistics).

    Parameters
    ----------
    values : array_like or pandas GroupBy
        The draws, along ``axis`` of an array. A pandas ``GroupBy`` (e.g.
        ``table.groupby(keys)[cols]``) is reduced group by group with pandas' grouped ``mean`` and
        ``sem``: the same statistic, accumulated in one compensated pass per group, so its last
        digit can differ from the array route (the tables keep the digits they always had).
    axis : int, optional
        The axis of the draws (arrays only).

    Returns
    -------
    mean, se
        Arrays (scalars for 1-d input) over the remaining axes; for a ``GroupBy``, two tables (or
        series) indexed by the group keys.

    Raises
    ------
    ValueError
        If ``values`` holds no draw along ``axis``.
    """
    if hasattr(values, "ngroups"):  # a pandas GroupBy
        return values.mean(), values.sem()
    v = np.asarray(values, dtype=np.float64)
    n = v.shape[axis] if v.ndim else 0
    if n == 0:
        raise ValueError(
            f"values must hold at least one draw along axis {axis}, got shape {v.shape}"
        )
    mean = v.mean(axis=axis)
    se = v.std(axis=axis, ddof=1) / np.sqrt(n) if n > 1 else np.full(np.shape(mean), np.nan)[()]
    return mean, se
