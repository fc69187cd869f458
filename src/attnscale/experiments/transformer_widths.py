"""The width of a real head's transition against the theory's (issue 43;
docs/real-transformer.md#the-width-against-the-theory).

The head's width is ``ln s_0.75 - ln s_0.25`` of ``lambda(s) / lambda(inf)`` (column ``width``
of ``heads.csv``); the theory's, ``ln beta_0.75 - ln beta_0.25`` of lambda at the same levels
(:data:`attnscale.experiments.transformer_definitions.WIDTH_QUARTILES`), for the finite-d mean field
(:func:`attnscale.layer.finite_d.mean_field`, ``alpha = 0``) and the finite-n simplex map
(:func:`attnscale.experiments.sharpness_summary.simplex_crossing`), at the layer's ``rho_hat``
and ``n``. Multiplying the scores by ``s`` is multiplying ``beta`` by ``s``, so widths in
``ln s`` and in ``ln beta`` are the same variable [derived]; centres are not (the head's score
scale at ``s = 1`` is not a ``beta``), so the theory's centre is reported in ``ln beta`` only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.roots import brentq
from attnscale.layer import finite_d, theory
from attnscale.layer.observables import critical_level
from attnscale.pipeline.io import provenance_columns

from .sharpness_summary import simplex_crossing
from .transformer_definitions import WIDTH_QUARTILES

__all__ = ["mean_field_levels", "simplex_levels", "widths"]

#: Step in ln beta of the search for a bracket, from the simplex's crossing [choice].
STEP = 0.5
#: Tolerance of Brent's method in ln beta [choice: a thousandth of a width of ~0.3].
XTOL = 1e-3


def simplex_levels(n: int, d: int, rho: float) -> list[float]:
    """``ln beta`` where the finite-n simplex lambda crosses the width's two levels and the critical level
    (its centre)."""
    scale = theory.gamma_c(rho) * np.log(n)
    values = (*WIDTH_QUARTILES, critical_level("lambda", rho))
    return [float(np.log(simplex_crossing("lambda", n, d, rho, v) * scale)) for v in values]


def _bracketed_root(f, x0: float) -> float:
    """The root of the increasing ``f`` nearest ``x0``: steps of :data:`STEP` from ``x0`` until
    the sign changes (at most 8), then Brent's method; ``nan`` if none is found."""
    f0 = f(x0)
    step = -STEP if f0 > 0 else STEP
    a, fa = x0, f0
    for _ in range(8):
        b = a + step
        fb = f(b)
        if np.sign(fb) != np.sign(fa):
            lo, hi = min(a, b), max(a, b)
            return float(brentq(f, lo, hi, xtol=XTOL))
        a, fa = b, fb
    return float("nan")


def mean_field_levels(n: int, d: int, rho: float) -> list[float]:
    """``ln beta`` where the finite-d mean field's lambda crosses the width's two levels: each found from
    the simplex's crossing of the same level by :func:`_bracketed_root` (the mean field's lambda
    increases with beta, docs/finite-d.md#mean-field-for-cosine-and-lambda)."""
    sx = simplex_levels(n, d, rho)

    def lam(lb):
        return float(finite_d.mean_field(n, d, rho, [np.exp(lb)])["lambda"][0])

    return [
        _bracketed_root(lambda x, v=v: lam(x) - v, x0)
        for v, x0 in zip(WIDTH_QUARTILES, sx, strict=False)
    ]


def widths(
    *, heads: pd.DataFrame, definitions: pd.DataFrame, n: int, root_seed: int
) -> pd.DataFrame:
    """Entry of rule ``transformer_widths``: per layer at window length ``n`` and per theory
    dimension (the model width ``d_model``, where rho_hat is measured, and the head dimension
    ``d_head``, where the scores live), the measured median width over heads with its SE (from
    ``definitions.csv``, a head without a width counting as wider than the grid) and the
    theory's widths in ``ln beta`` (and the simplex's centre)."""
    H = heads[heads["n"] == n]
    D = definitions[(definitions["n"] == n) & (definitions["definition"] == "width")]
    records = []
    for ly, g in H.groupby("layer"):
        rho = float(g["rho_hat"].iloc[0])
        m = D[D["layer"] == ly].iloc[0]
        sx = simplex_levels(n, int(g["d_model"].iloc[0]), rho)
        for which in ("d_model", "d_head"):
            d = int(g[which].iloc[0])
            mf = mean_field_levels(n, d, rho)
            records.append(
                {
                    "n": n,
                    "layer": int(ly),
                    "rho_hat": rho,
                    "dimension": which,
                    "d": d,
                    "width": float(m["s_star_median"]),
                    "width_se": float(m["s_star_median_se"]),
                    "heads_with_width": int(m["crossing"]),
                    "heads": int(m["heads"]),
                    "width_mean_field": mf[1] - mf[0],
                    "width_simplex": sx[1] - sx[0],
                    "centre_simplex": sx[2],
                }
            )
    out = pd.DataFrame(records)
    out["over_mean_field"] = out["width"] / out["width_mean_field"]
    out["over_simplex"] = out["width"] / out["width_simplex"]
    return out.assign(**provenance_columns(root_seed, (n,), {"n": int(n)}))
