"""Findings of the width's long-baseline slope and the joint test of the widths against the
finite-d theory (docs/long-context.md#the-width-explained; issue 45): the slope per ``d`` over
the last values of ``n`` with its SE beside the theory's, instead of a test of each local slope
between consecutive ``n``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.experiments.findings.record import Finding, NotAvailable, compute, pick, sci
from attnscale.experiments.findings.sharpness import NAMES, RHO, TRANSITIONS, Z_WITHIN
from attnscale.experiments.sharpness_baseline import baseline_slopes

__all__ = ["P_JOINT", "OBSERVABLES", "baseline_findings"]

#: The observables with a finite-d theory, in the order of the findings.
OBSERVABLES = ("self_weight", "lambda", "eta")

#: The joint test of a series of widths against the theory's passes at this upper tail
#: probability of its chi^2 [choice].
P_JOINT = 0.05


def _rows(table: pd.DataFrame, obs: str) -> pd.DataFrame:
    if table.empty:
        raise NotAvailable("no widths")
    sub = pick(table, rho=RHO, observable=obs).sort_values("d")
    if not np.all(np.isfinite(sub["slope"])):
        raise NotAvailable(f"no long-baseline slope of {obs} at every d")
    return sub


def _slope(table: pd.DataFrame, obs: str, col: str):
    def fn():
        sub = _rows(table, obs)
        spans = " / ".join(
            f"{sci(a)}-{sci(b)}" for a, b in zip(sub["n_lo"], sub["n_hi"], strict=True)
        )
        who = {"slope": "measured", "slope_finite_d": "finite-d theory's"}[col]
        out = {
            "label": f"{NAMES[obs]}: {who} slope d ln(width) / d ln(ln n), weighted least "
            f"squares over the last {int(sub['points'].max())} n, n = {spans} of d = "
            f"{' / '.join(map(str, sub['d']))}, rho = {RHO:g}",
            "value": sub[col].astype(float).tolist(),
        }
        if col == "slope":
            out["se"] = sub["slope_se"].astype(float).tolist()
        return out

    return fn


def _counts(table: pd.DataFrame, what: str):
    def fn():
        if table.empty:
            raise NotAvailable("no widths")
        if what == "within":
            z = table["z"][np.isfinite(table["z"])]
            return {
                "label": f"long-baseline slopes within {Z_WITHIN:g} SE of the finite-d theory's "
                "(every d, rho and observable)",
                "value": [int((z.abs() <= Z_WITHIN).sum()), len(z)],
            }
        return {
            "label": "series of widths against n (every d, rho and observable) whose widths "
            f"all agree with the finite-d theory's: chi^2 upper tail probability above {P_JOINT:g}",
            "value": [int((table["chi2_p"] > P_JOINT).sum()), len(table)],
        }

    return fn


#: Columns of the table finding and their formats.
_COLUMNS = {
    "observable": "",
    "d": "d",
    "rho": "g",
    "n": "",
    "slope": "+.2f",
    "SE": ".2f",
    "finite-d slope": "+.2f",
    "simplex slope": "+.2f",
    "chi^2": ".1f",
    "dof": "d",
    "p": ".2g",
}


def _table(table: pd.DataFrame):
    def fn():
        if table.empty:
            raise NotAvailable("no widths")
        t = table.sort_values(["observable", "rho", "d"])
        rows = [
            [
                r.observable,
                int(r.d),
                float(r.rho),
                f"{sci(r.n_lo)} .. {sci(r.n_hi)}",
                r.slope,
                r.slope_se,
                r.slope_finite_d,
                r.slope_simplex,
                r.chi2,
                int(r.chi2_dof),
                r.chi2_p,
            ]
            for r in t.itertuples()
        ]
        return {
            "label": "long-baseline slope of every width series with its SE, the finite-d "
            "theory's and the simplex map's, and the joint chi^2 test of the series' widths "
            "against the finite-d theory's",
            "value": rows,
            "columns": list(_COLUMNS),
            "columns_fmt": list(_COLUMNS.values()),
        }

    return fn


def baseline_findings(*, transitions: pd.DataFrame) -> list[Finding]:
    """Per observable the long-baseline slope per ``d`` (rho = :data:`RHO`) with its SE, the
    finite-d theory's, how many slopes lie within :data:`Z_WITHIN` SE of the theory's, how many
    series pass the joint test, and the table of every series
    (:func:`attnscale.experiments.sharpness_baseline.baseline_slopes`)."""
    table = baseline_slopes(transitions) if not transitions.empty else pd.DataFrame()
    src = [TRANSITIONS]
    out = []
    for obs in OBSERVABLES:
        out.append(
            compute(
                f"sharpness.baseline_slope_{obs}",
                f"{NAMES[obs]} long-baseline slope",
                _slope(table, obs, "slope"),
                fmt="+.2f",
                source=src,
                pm="one standard error of the weighted fit (the widths' delta-method SEs)",
            )
        )
        out.append(
            compute(
                f"sharpness.baseline_slope_{obs}_finite_d",
                f"{NAMES[obs]} long-baseline slope, finite d",
                _slope(table, obs, "slope_finite_d"),
                fmt="+.2f",
                source=src,
            )
        )
    out.append(
        compute(
            "sharpness.baseline_slope_within",
            "long-baseline slopes vs finite d",
            _counts(table, "within"),
            kind="count",
            source=src,
        )
    )
    out.append(
        compute(
            "sharpness.width_joint_pass",
            "widths vs finite d, joint",
            _counts(table, "joint"),
            kind="count",
            source=src,
        )
    )
    out.append(
        compute(
            "sharpness.baseline_table",
            "long-baseline slopes",
            _table(table),
            kind="table",
            source=src,
        )
    )
    return out
