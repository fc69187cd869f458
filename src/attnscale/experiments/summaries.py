"""Summaries of tidy per-draw tables shared by the experiments: the mean and its standard error
over draws (docs/pipeline.md#statistics)."""

from __future__ import annotations

__all__ = ["mean_se"]


def mean_se(group, cols):
    """Mean and standard error (pandas ``sem``: sample std / sqrt(trials); nan for one trial) of
    ``cols``."""
    agg = {}
    for c in cols:
        agg[f"{c}_mean"] = (c, "mean")
        agg[f"{c}_se"] = (c, "sem")  # std(ddof=1) / sqrt(trials); nan for one trial
    agg["trials"] = ("trial", "nunique")
    return group.agg(**agg).reset_index()
