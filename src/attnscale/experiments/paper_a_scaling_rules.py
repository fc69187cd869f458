"""Compute step of the scaling-rules figure (ours): rules x n table (docs/scaling-rules.md)."""

from __future__ import annotations

import pandas as pd

from attnscale.layer.scores.scaling_rules import rules_table
from attnscale.pipeline.io import provenance_columns

__all__ = ["scaling_rules_data"]


def scaling_rules_data(*, ns, overlay_n: float) -> pd.DataFrame:
    """Entry of rule ``paper_a_scaling_rules_data``: ``m(n)`` and
    ``gamma_eff / gamma_c`` (calibration A) on the ``n`` grid plus the overlay context size."""
    grid = sorted({float(n) for n in ns} | {float(overlay_n)})
    df = rules_table(grid)
    df["is_overlay_n"] = df["n"] == float(overlay_n)
    for k, v in provenance_columns(None, None, {"ns": grid, "overlay_n": float(overlay_n)}).items():
        df[k] = v
    return df
