"""The exponent fits of the critical-exponent experiments (ours): weighted least squares of
``log beta*`` on ``log n`` for every curve of ``beta*(n)`` points, under four models
(docs/paper-b-beyond.md#critical-exponent-across-dimensions). Entry of rule
``paper_b_exponent_fits``: the points of every curve in one table and their fits, the figure data
of both exponent figures.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.validation import check_real
from attnscale.pipeline.io import provenance_columns, with_job_provenance
from attnscale.sphere import critical_exponent as ce

__all__ = ["exponent_tables", "exponent_fits"]

FIT_MODELS = ("correction", "plain", "upper", "top3")


def exponent_tables(*, points, upper_n_min: float) -> dict:
    """All points in one table and their fits: ``{"points": ..., "fits": ...}``
    (docs/paper-b-beyond.md#critical-exponent-across-dimensions)."""
    P = pd.concat(points, ignore_index=True) if isinstance(points, list) else points
    return {
        "points": P,
        "fits": with_job_provenance(exponent_fits(points=P, upper_n_min=upper_n_min)),
    }


def exponent_fits(*, points, upper_n_min: float) -> pd.DataFrame:
    """Exponent fits of ``log beta*`` on ``log n`` for every curve in ``points`` (one table or a list)
    (docs/paper-b-beyond.md#critical-exponent-across-dimensions).

    Models (:func:`attnscale.sphere.critical_exponent.fit_exponent`): ``correction`` (all ``n``, with the
    ``B / beta*`` finite-n term; the primary fit), ``plain`` (all ``n``, no correction) and
    ``upper`` (``n >= upper_n_min``, no correction), ``top3`` (the three largest ``n``, no
    correction: the local slope at the end of the range). ``z = (alpha - alpha_theory) / se_scaled``.
    """
    upper_n_min = check_real("upper_n_min", upper_n_min, low=0.0)
    P = pd.concat(points, ignore_index=True) if isinstance(points, list) else points
    keys_ = ["family", "method", "d", "k", "kappa", "base"]
    out = []
    for gkey, g in P.groupby(keys_, dropna=False, sort=True):
        g = g.sort_values("n")
        for model in FIT_MODELS:
            kw = {"correction": model == "correction"}
            if model == "upper":
                kw["n_min"] = upper_n_min
            elif model == "top3":
                kw["n_min"] = float(g["n"].iloc[-3]) if len(g) >= 3 else np.inf
            try:
                f = ce.fit_exponent(g["n"], g["beta_star"], g["se"], **kw)
            except ValueError:
                continue  # too few points for this model
            used = g[g["n"] >= kw.get("n_min", 0.0)]
            at = float(g["alpha_theory"].iloc[0])
            out.append(
                {
                    **dict(zip(keys_, gkey, strict=True)),
                    "model": model,
                    **f,
                    "n_min": float(used["n"].min()),
                    "n_max": float(used["n"].max()),
                    "alpha_theory": at,
                    "z": (f["alpha"] - at) / f["se_alpha_scaled"],
                    "within_2se": bool(abs(f["alpha"] - at) <= 2 * f["se_alpha_scaled"]),
                    **provenance_columns(
                        None, None, {"points": sorted(g["params_hash"])}, only=("params_hash",)
                    ),
                }
            )
    return pd.DataFrame(out)
