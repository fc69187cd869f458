"""Summaries of tidy per-draw tables shared by the experiments: the mean and its standard error
over draws per group (docs/pipeline.md#statistics; the statistic itself is
:func:`attnscale.core.stats.mean_se`)."""

from __future__ import annotations

import pandas as pd

from attnscale.core import stats

__all__ = ["mean_se"]


def mean_se(group, cols):
    """Mean and standard error over draws of each column of ``cols``, per group
    (:func:`attnscale.core.stats.mean_se`: sample sd / sqrt(trials), nan for one trial).

    Parameters
    ----------
    group : pandas.core.groupby.DataFrameGroupBy
        A per-draw table grouped by its cell keys; it has a ``trial`` column.
    cols : list of str
        The columns to reduce.

    Returns
    -------
    pandas.DataFrame
        The group keys, then ``<col>_mean`` and ``<col>_se`` for each column, then ``trials``
        (the number of distinct draws of the group).
    """
    means, ses = stats.mean_se(group[list(cols)])
    out = {}
    for c in cols:
        out[f"{c}_mean"] = means[c]
        out[f"{c}_se"] = ses[c]
    out["trials"] = group["trial"].nunique()
    return pd.DataFrame(out).reset_index()
