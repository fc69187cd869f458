"""Findings of the width's long-baseline slope and the joint test of the widths against the
finite-d theory (docs/long-context.md#the-width-explained; issue 45): the slope per ``d`` over
the last values of ``n`` with its SE beside the theory's, instead of a test of each local slope
between consecutive ``n``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.experiments.findings.record import (
    Finding,
    NotAvailable,
    declare,
    evaluate,
    pick,
    sci,
)
from attnscale.experiments.findings.sharpness import (
    NAMES,
    RHO,
    TRANSITIONS,
    Z_WITHIN,
    slope_finding,
)
from attnscale.experiments.sharpness_baseline import baseline_slopes

__all__ = ["P_JOINT", "OBSERVABLES", "BASELINE", "baseline_findings"]

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


def _baseline(sub, spans):
    return (
        f"slope d ln(width) / d ln(ln n), weighted least squares over the last "
        f"{int(sub['points'].max())} n, n = {spans}"
    )


def _slope(table: pd.DataFrame, obs: str, col: str) -> dict:
    return slope_finding(_rows(table, obs), obs, col, _baseline)


def _nonempty(table: pd.DataFrame) -> pd.DataFrame:
    if table.empty:
        raise NotAvailable("no widths")
    return table


def _within(table: pd.DataFrame) -> dict:
    z = _nonempty(table)["z"]
    z = z[np.isfinite(z)]
    return {
        "label": f"long-baseline slopes within {Z_WITHIN:g} SE of the finite-d theory's "
        "(every d, rho and observable)",
        "value": [int((z.abs() <= Z_WITHIN).sum()), len(z)],
    }


def _joint(table: pd.DataFrame) -> dict:
    p = _nonempty(table)["chi2_p"]
    return {
        "label": "series of widths against n (every d, rho and observable) whose widths "
        f"all agree with the finite-d theory's: chi^2 upper tail probability above {P_JOINT:g}",
        "value": [int((p > P_JOINT).sum()), len(table)],
    }


#: Columns of the table finding: header, format and the column of the slopes table.
_COLUMNS = [
    ("observable", "", "observable"),
    ("d", "d", "d"),
    ("rho", "g", "rho"),
    ("n", "", None),
    ("slope", "+.2f", "slope"),
    ("SE", ".2f", "slope_se"),
    ("finite-d slope", "+.2f", "slope_finite_d"),
    ("simplex slope", "+.2f", "slope_simplex"),
    ("chi^2", ".1f", "chi2"),
    ("dof", "d", "chi2_dof"),
    ("p", ".2g", "chi2_p"),
]


def _cell(r, fmt: str, col: str | None):
    """One cell of the table: the span of n, an integer, a float or the value as it is."""
    if col is None:
        return f"{sci(r.n_lo)} .. {sci(r.n_hi)}"
    v = getattr(r, col)
    return int(v) if fmt == "d" else float(v) if fmt == "g" else v


def _table(table: pd.DataFrame) -> dict:
    t = _nonempty(table).sort_values(["observable", "rho", "d"])
    records = [[_cell(r, f, c) for _, f, c in _COLUMNS] for r in t.itertuples()]
    return {
        "label": "long-baseline slope of every width series with its SE, the finite-d "
        "theory's and the simplex map's, and the joint chi^2 test of the series' widths "
        "against the finite-d theory's",
        "value": records,
        "columns": [h for h, _, _ in _COLUMNS],
        "columns_fmt": [f for _, f, _ in _COLUMNS],
    }


_SRC = [TRANSITIONS]

#: The findings of the long baseline, declared (functions of the table of
#: :func:`attnscale.experiments.sharpness_baseline.baseline_slopes`; :func:`baseline_findings`).
BASELINE = [
    *(
        entry
        for obs in OBSERVABLES
        for entry in (
            declare(
                f"sharpness.baseline_slope_{obs}",
                f"{NAMES[obs]} long-baseline slope",
                lambda t, obs=obs: _slope(t, obs, "slope"),
                fmt="+.2f",
                source=_SRC,
                pm="one standard error of the weighted fit (the widths' delta-method SEs)",
            ),
            declare(
                f"sharpness.baseline_slope_{obs}_finite_d",
                f"{NAMES[obs]} long-baseline slope, finite d",
                lambda t, obs=obs: _slope(t, obs, "slope_finite_d"),
                fmt="+.2f",
                source=_SRC,
            ),
        )
    ),
    declare(
        "sharpness.baseline_slope_within",
        "long-baseline slopes vs finite d",
        _within,
        kind="count",
        source=_SRC,
    ),
    declare(
        "sharpness.width_joint_pass", "widths vs finite d, joint", _joint, kind="count", source=_SRC
    ),
    declare("sharpness.baseline_table", "long-baseline slopes", _table, kind="table", source=_SRC),
]


def baseline_findings(*, transitions: pd.DataFrame) -> list[Finding]:
    """Per observable the long-baseline slope per ``d`` (rho = :data:`RHO`) with its SE, the
    finite-d theory's, how many slopes lie within :data:`Z_WITHIN` SE of the theory's, how many
    series pass the joint test, and the table of every series
    (:func:`attnscale.experiments.sharpness_baseline.baseline_slopes`): the declarations
    :data:`BASELINE`."""
    table = baseline_slopes(transitions) if not transitions.empty else pd.DataFrame()
    return evaluate(BASELINE, table)
