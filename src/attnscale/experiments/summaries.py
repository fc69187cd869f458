"""Summaries of tidy per-draw tables shared by the experiments: the mean and its standard error
over draws per group (docs/pipeline.md#statistics; the statistic itself is
:func:`attnscale.core.stats.mean_se`)."""

from __future__ import annotations

import pandas as pd

from attnscale.core import stats

__all__ = ["mean_se_table", "se_components", "insert_after", "columns_after"]


def mean_se_table(group, cols):
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


def se_components(group, col: str, within: str) -> pd.DataFrame:
    """The two parts of the standard error of a cell mean over draws whose values are estimates
    from sampled rows (docs/long-context.md#within-draw-and-between-draw-variance).

    The draws of a cell are independent and each estimate ``theta_t`` is unbiased for its draw's
    value with within-draw standard error ``s_t`` (column ``within``), so the usual SE of the
    mean, ``sd(theta_t) / sqrt(T)`` (:func:`mean_se_table`), already holds both parts. Returned per
    group: ``<col>_se_within = sqrt(sum_t s_t^2) / T``, the row sampling's share (an unbiased
    estimate of its variance), and ``<col>_se_between = sqrt(max(se^2 - se_within^2, 0))``, the
    draw-to-draw share, with ``se`` the SE of the mean.
    """
    import numpy as np

    T = group["trial"].nunique()
    total = stats.mean_se(group[[col]])[1][col]
    w = np.sqrt(group[within].agg(lambda s: float(np.sum(np.square(s))))) / T
    out = pd.DataFrame(
        {f"{col}_se_within": w, f"{col}_se_between": np.sqrt(np.maximum(total**2 - w**2, 0.0))}
    )
    return out.reset_index()


def insert_after(table: pd.DataFrame, column: str, extra: dict) -> pd.DataFrame:
    """``table`` with the columns of ``extra`` inserted after ``column``, in order (an empty
    ``extra`` leaves the table as it is: the dense tables keep their columns)."""
    at = table.columns.get_loc(column) + 1
    for k, (name, values) in enumerate(extra.items()):
        table.insert(at + k, name, values)
    return table


def columns_after(columns: list, column: str, moved: list) -> list:
    """``columns`` with ``moved`` placed right after ``column``."""
    rest = [c for c in columns if c not in moved]
    at = rest.index(column) + 1
    return rest[:at] + moved + rest[at:]


#: ``mean_se`` was this function's name; :func:`attnscale.core.stats.mean_se` is the statistic itself.
