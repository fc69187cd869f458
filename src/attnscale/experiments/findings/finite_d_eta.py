"""Findings of eta's mean field against the exact eta of single draws (rule
``finite_d_eta_check``; docs/finite-d.md#mean-field-eta-against-the-exact-eta).

Every number is a paired difference, exact minus mean field, per token draw (the mean field
conditioned on the draw's ``||z_0||``), averaged over the draws of one ``(n, d, rho, x)`` with the
standard error of that mean; relative differences are that mean and SE over the mean of the mean
field (the table's ``mean field`` column), in percent.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.experiments.findings.record import (
    NotAvailable,
    declare,
    evaluate,
    frame,
    pick,
)

__all__ = [
    "DECLARED",
    "SOURCE",
    "Z_WITHIN",
    "D_AGREE",
    "OFF_SHARE_POINT",
    "OFF_SHARE_X",
    "summary",
    "eta_check_findings",
]

#: The per-point tables of rule ``finite_d_eta_check``.
SOURCE = ["finite_d/eta_check/d*_rho*.csv"]
#: A point agrees where ``|z| <= Z_WITHIN`` [choice].
Z_WITHIN = 2.0
#: The head dimensions from which on the page states agreement [choice].
D_AGREE = 32
PM = "one standard error of the mean paired difference over the point's draws"


def summary(data) -> pd.DataFrame:
    """One row per ``(d, rho, x)``: draws, mean exact eta, mean mean field, the mean paired
    difference and its SE (absolute and in % of the mean field) and ``z = diff / SE``."""
    df = frame(data)
    records = []
    for (d, rho, x), g in df.groupby(["d", "rho", "x"], sort=True):
        diff = g["diff"].to_numpy(float)
        k = diff.size
        se = float(np.std(diff, ddof=1) / np.sqrt(k)) if k > 1 else np.nan
        mf = float(g["eta_mean_field"].mean())
        mean = float(diff.mean())
        records.append(
            {
                "d": int(d),
                "rho": float(rho),
                "x": float(x),
                "n": int(g["n"].iloc[0]),
                "draws": k,
                "exact": float(g["eta_exact"].mean()),
                "mean_field": mf,
                "diff": mean,
                "se": se,
                "rel": 100.0 * mean / mf,
                "rel_se": 100.0 * se / mf,
                "z": mean / se if se > 0 else np.nan,
            }
        )
    return pd.DataFrame(records)


def _table(t):
    s = summary(t["data"])
    cols = ["d", "rho", "x", "draws", "exact", "mean_field", "rel", "rel_se", "z"]
    return {
        "label": f"eta's mean field against the exact eta, n = {int(s['n'].iloc[0])}, "
        "beta = x ln n / (1 - rho): mean over draws of the exact eta and of the mean field at "
        "each draw's ||z_0||, and their paired difference (exact minus mean field) in % of the "
        "mean field, with its SE and z = difference / SE",
        "value": s[cols].to_numpy(object).tolist(),
    }


def _within(t):
    s = summary(t["data"])
    return {"value": [int((s["z"].abs() <= Z_WITHIN).sum()), len(s)]}


def _max_agree(t):
    s = summary(t["data"])
    s = s[s["d"] >= D_AGREE]
    if s.empty:
        raise NotAvailable(f"no point with d >= {D_AGREE}")
    r = s.loc[s["rel"].abs().idxmax()]
    return {
        "label": f"eta's mean field at d >= {D_AGREE}: the largest relative difference (exact "
        f"minus mean field) over the points, at d = {r['d']:g}, rho = {r['rho']:g}, "
        f"x = {r['x']:g}",
        "value": float(r["rel"]),
        "se": float(r["rel_se"]),
    }


def _per_x(d=None, rho_zero=False):
    """The relative difference over ``x`` at the smallest ``d`` with ``rho > 0`` (``d=None``), or
    at the largest ``d`` with ``rho = 0`` (``rho_zero``)."""

    def fn(t):
        s = summary(t["data"])
        sub = s[s["rho"] == 0.0] if rho_zero else s[s["rho"] > 0.0]
        if sub.empty:
            raise NotAvailable("no point with rho = 0" if rho_zero else "no point with rho > 0")
        dd = sub["d"].max() if rho_zero else sub["d"].min()
        sub = pick(sub, d=dd)
        rho = float(sub["rho"].iloc[0])
        sub = sub[sub["rho"] == rho].sort_values("x")
        return {
            "label": f"eta's mean field at d = {dd:g}, rho = {rho:g} "
            f"({int(sub['draws'].iloc[0])} draws): relative difference (exact minus mean field) "
            f"at x = {', '.join(f'{v:g}' for v in sub['x'])}",
            "value": sub["rel"].tolist(),
            "se": sub["rel_se"].tolist(),
        }

    return fn


#: (n, d, rho) and the x (below and above the transition) of the off-diagonal share [choice].
OFF_SHARE_POINT = (1024, 512, 0.5)
OFF_SHARE_X = (0.5, 1.5)


def _off_share(t):
    """The off-diagonal blocks' share of eta's mean field (the library's, at fixed points)."""
    from attnscale.layer.finite_d.eta import eta_mean_field

    n, d, rho = OFF_SHARE_POINT
    out = []
    for x in OFF_SHARE_X:
        p = eta_mean_field(n, d, rho, x * np.log(n) / (1.0 - rho), parts=True)
        out.append(p["off"] / p["eta"])
    return {
        "label": "eta's mean field: share of the off-diagonal blocks in eta at "
        f"n = {n}, d = {d}, rho = {rho:g}, x = {' / '.join(f'{x:g}' for x in OFF_SHARE_X)} "
        "(beta = x ln n / (1 - rho), averaged over ||z_0||)",
        "value": out,
    }


DECLARED = [
    declare(
        "finite_d.eta_mean_field_table",
        "eta's mean field against the exact eta",
        _table,
        kind="table",
        columns=[
            "d",
            "rho",
            "x",
            "draws",
            "exact",
            "mean field",
            "difference (%)",
            "SE (%)",
            "z",
        ],
        columns_fmt=["d", ".1f", ".2f", "d", ".4f", ".4f", "+.2f", ".2f", "+.1f"],
        pm=PM,
        source=SOURCE,
    ),
    declare(
        "finite_d.eta_mean_field_within",
        f"eta's mean field against the exact eta: points within {Z_WITHIN:g} SE",
        _within,
        kind="count",
        source=SOURCE,
    ),
    declare(
        "finite_d.eta_mean_field_max_rel",
        f"eta's mean field at d >= {D_AGREE}: the largest relative difference",
        _max_agree,
        fmt="+.2f",
        unit="%",
        pm=PM,
        source=SOURCE,
    ),
    declare(
        "finite_d.eta_mean_field_small_d",
        "eta's mean field at the smallest d: relative difference",
        _per_x(),
        fmt="+.1f",
        unit="%",
        pm=PM,
        source=SOURCE,
    ),
    declare(
        "finite_d.eta_mean_field_rho0",
        "eta's mean field at rho = 0: relative difference",
        _per_x(rho_zero=True),
        fmt="+.2f",
        unit="%",
        pm=PM,
        source=SOURCE,
    ),
    declare(
        "finite_d.eta_mean_field_off_share",
        "eta's mean field: share of the off-diagonal blocks",
        _off_share,
        fmt=".2f",
        source=["attnscale.layer.finite_d.eta.eta_mean_field"],
    ),
]


def eta_check_findings(*, data) -> list:
    """The findings of :data:`DECLARED` from the per-point tables of rule ``finite_d_eta_check``
    (docs/finite-d.md#mean-field-eta-against-the-exact-eta)."""
    return evaluate(DECLARED, {"data": data})
