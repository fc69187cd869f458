"""Means over seeds with SEs, paired comparisons with the plain model, and the theory against
the measurement (docs/training.md#statistics)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.training.stats import holm, paired

__all__ = ["over_seeds", "comparisons"]


def over_seeds(df: pd.DataFrame, by: list, metrics: list) -> pd.DataFrame:
    """Mean, SE over seeds and number of seeds of each metric per group ``by``."""
    records = []
    for key, g in df.groupby(by, sort=True):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        row["seeds"] = g["seed"].nunique()
        for m in metrics:
            x = g[m].astype(float).to_numpy()
            row[m] = x.mean()
            row[f"{m}_se"] = x.std(ddof=1) / np.sqrt(x.size) if x.size > 1 else np.nan
        records.append(row)
    return pd.DataFrame(records)


def comparisons(df: pd.DataFrame, at: str, metrics: list, base: str = "plain") -> pd.DataFrame:
    """Every variant against ``base`` per point ``at`` (n or position band) and metric: the
    difference paired by seed, its SE, the two-sided paired t-test's p and Holm's p across the
    variants compared at that point and metric."""
    records = []
    others = [v for v in df["variant"].unique() if v != base]
    for point, g in df.groupby(at, sort=True):
        b = g[g["variant"] == base].set_index("seed")
        for m in metrics:
            block = []
            for v in others:
                o = g[g["variant"] == v].set_index("seed")
                seeds = sorted(set(b.index) & set(o.index))
                r = paired(o.loc[seeds, m].to_numpy(), b.loc[seeds, m].to_numpy())
                block.append({at: point, "metric": m, "variant": v, "base": base, **r})
            adj = holm([r["p"] for r in block])
            for r, a in zip(block, adj, strict=True):
                r["p_holm"] = a
            records += block
    return pd.DataFrame(records)
