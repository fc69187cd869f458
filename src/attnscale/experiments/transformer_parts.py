"""The block bootstrap calibrated on the real text: disjoint parts of the novel as replicates
(issue 43; docs/real-transformer.md#standard-errors).

The windows of one n are cut into ``parts`` runs of consecutive windows (disjoint text). Each
part gives every reported quantity (each definition's s*, the width, lambda at ``s = 1``) and its
moving-block bootstrap SE over the part's windows. The spread of the estimate over parts is an
independent measurement of the SE of one part's estimate [derived: the parts are disjoint
stretches of one text, correlated only across their borders]; the bootstrap's calibration is the
mean bootstrap SE over parts divided by that spread, per head, and its median over heads.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.pipeline.io import provenance_columns
from attnscale.transformer import bootstrap
from attnscale.transformer.library import job_rng, spawn_key

from . import transformer_definitions as tdef

__all__ = ["QUANTITIES", "COLUMNS", "split_parts", "part_calibration"]

PARTS_KEY = "transformer/parts"
#: The quantities calibrated (columns of heads.csv): s* of each definition, the width, lambda(1).
QUANTITIES = ("normalised", "paper_a", "text_keys", "width", "lambda_1")
#: The table's columns (before the provenance columns).
COLUMNS = ("n", "quantity", "layer", "parts", "windows_per_part", "heads", "se_ratio")


def split_parts(run: dict, parts: int) -> list[dict]:
    """``parts`` runs of consecutive windows of the ``transformer_heads`` output ``run`` (the
    arrays with a window axis sliced, the rest shared; trailing windows left out)."""
    W = run["lambda"].shape[0]
    w = W // int(parts)
    if parts < 2 or w < 2:
        raise ValueError(
            f"transformer.calibration_parts: {parts} parts of {W} windows leave fewer than 2 "
            "windows per part (raise transformer.windows or lower the parts)"
        )
    per_window = {k for k, v in run.items() if k != "multipliers" and getattr(v, "ndim", 0) >= 1}
    per_window = {k for k in per_window if run[k].shape[0] == W}
    return [
        {k: (v[p * w : (p + 1) * w] if k in per_window else v) for k, v in run.items()}
        for p in range(int(parts))
    ]


def _part_values(part: dict, block: int, resamples: int, rng) -> tuple[dict, dict]:
    """Each quantity's estimate and bootstrap SE, ``(L, H)`` arrays, on one part."""
    est, boot = tdef.estimates(part, block, resamples, rng, bands=False)
    k1 = int(np.argmin(np.abs(np.log(part["multipliers"]))))
    lam1 = part["lambda"][..., k1]
    vals = {q: est[q] for q in QUANTITIES if q in est}
    with np.errstate(invalid="ignore"):
        ses = {q: np.nanstd(boot[q], axis=0, ddof=1) for q in vals}
    vals["lambda_1"] = lam1.mean(0)
    ses["lambda_1"] = bootstrap.bootstrap_se(lam1, block, resamples, rng)
    return vals, ses


def part_calibration(*, heads: list, parts: int, block: int, resamples: int, root_seed: int):
    """Part of rule ``transformer_summary``'s entry (``part_calibration.csv``): per n, quantity and layer (``layer = -1``:
    all heads), the median over heads of (mean bootstrap SE over parts) / (SD of the estimate
    over parts), with the heads used (those finite in every part)."""
    records = []
    for run in sorted(heads, key=lambda r: int(r["n"])):
        n = int(run["n"])
        rng = job_rng(root_seed, spawn_key(PARTS_KEY, n))
        got = [_part_values(p, block, resamples, rng) for p in split_parts(run, parts)]
        for q in QUANTITIES:
            v = np.stack([g[0][q] for g in got])  # (P, L, H)
            se = np.stack([g[1][q] for g in got])
            ok = np.isfinite(v).all(0) & np.isfinite(se).all(0)
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = se.mean(0) / v.std(0, ddof=1)
            ok &= np.isfinite(ratio)
            for ly in [*range(v.shape[1]), -1]:
                sel = ok if ly < 0 else ok & (np.arange(v.shape[1]) == ly)[:, None]
                records.append(
                    {
                        "n": n,
                        "quantity": q,
                        "layer": ly,
                        "parts": int(parts),
                        "windows_per_part": int(run["lambda"].shape[0] // parts),
                        "heads": int(sel.sum()),
                        "se_ratio": float(np.median(ratio[sel])) if sel.any() else np.nan,
                    }
                )
    prov = provenance_columns(root_seed, spawn_key(PARTS_KEY), {"parts": parts, "block": block})
    return pd.DataFrame(records).assign(**prov)
