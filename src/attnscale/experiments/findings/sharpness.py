"""Findings of the sharpness figure (docs/long-context.md#transition-sharpness-against-context-length):
does the transition sharpen as n grows at fixed d, as Paper A's n -> inf limit says, or does it
saturate or move as the finite-d theory predicts?"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.experiments.findings.record import (
    PM_DELTA,
    Finding,
    NotAvailable,
    declare,
    evaluate,
    frame,
    pick,
    sci,
)
from attnscale.experiments.paper_a_theorem import FINITE_D_ABS_TOL
from attnscale.layer.observables import REGISTRY

__all__ = [
    "TRANSITIONS",
    "TRENDS",
    "CURVES",
    "CALIBRATION",
    "CALIBRATION_BAND",
    "RHO",
    "NAMES",
    "Z_WITHIN",
    "SHARPNESS",
    "CALIBRATION_FINDINGS",
    "slope_finding",
    "sharpness_findings",
    "calibration_findings",
]

TRANSITIONS = "sharpness/transitions.csv"
TRENDS = "sharpness/trends.csv"
CURVES = "sharpness/curves.csv"
CALIBRATION = "sharpness/calibration/*.csv"
#: The acceptance band of the calibration ratio (issue 37) [choice].
CALIBRATION_BAND = (0.85, 1.15)
#: The rho of the per-d findings (the figure's curves) [choice].
RHO = 0.5
#: How the labels name the observables (the registry's).
NAMES = {o.name: o.label for o in REGISTRY.values()}
#: A simulated centre, width or local slope agrees with the finite-d theory if within this many
#: SE [choice]; "accepted" is the theorem table's rule, within ``max(3 SE, FINITE_D_ABS_TOL)``.
Z_WITHIN = 2.0
#: The observables with a finite-d theory, in the order of the findings.
THEORY_OBS = tuple(o.name for o in REGISTRY.values() if o.mean_field is not None)
#: The observable with a finite-d floor (lambda's tilt) and the one whose centre is x* (the registry's).
FLOOR_OBS = next(o.name for o in REGISTRY.values() if o.floor is not None)
X_STAR_OBS = next(o.name for o in REGISTRY.values() if o.centre_reference)
#: The observables of each per-observable finding beyond the finite-d ones (the registry's).
WITH = {
    f: tuple(o.name for o in REGISTRY.values() if f in o.findings)
    for f in ("width_ratio", "centre")
}


def _largest_n(tr: pd.DataFrame) -> pd.DataFrame:
    """The rows of the largest n of each d."""
    return tr[tr["n"] == tr.groupby("d")["n"].transform("max")]


def _on(fn, *args):
    """``fn(t, *args)`` as a function of the tables ``t`` alone."""
    return lambda t: fn(t, *args)


def slope_finding(sub: pd.DataFrame, obs: str, col: str, over) -> dict:
    """The finding of the width's slope d ln(width) / d ln(ln n) per ``d`` at rho = :data:`RHO`
    (docs/long-context.md#the-width-explained): the local slope's and the long baseline's.

    Parameters
    ----------
    sub : DataFrame
        One row per ``d`` (sorted) with the columns ``d``, ``n_lo``, ``n_hi`` (the n the slope
        spans), ``col`` and, for the measured slope, ``slope_se``.
    obs : str
        The observable (its label from :data:`NAMES`).
    col : str
        ``"slope"`` (measured, with its SE) or ``"slope_finite_d"`` (the finite-d theory's).
    over : callable
        ``over(sub, spans)``: the words saying over which n the slope is taken.

    Returns
    -------
    dict
        ``label``, ``value`` and, for the measured slope, ``se`` (as a declared finding's
        function returns them).
    """
    spans = " / ".join(f"{sci(a)}-{sci(b)}" for a, b in zip(sub["n_lo"], sub["n_hi"], strict=True))
    who = {"slope": "measured", "slope_finite_d": "finite-d theory's"}[col]
    out = {
        "label": f"{NAMES[obs]}: {who} {over(sub, spans)} of d = "
        f"{' / '.join(map(str, sub['d']))}, rho = {RHO:g}",
        "value": sub[col].astype(float).tolist(),
    }
    if col == "slope":
        out["se"] = sub["slope_se"].astype(float).tolist()
    return out


def _last_pair(sub, spans):
    lnd = " / ".join(f"{v:.3f}" for v in sub["ln_n_over_d"])
    return (
        f"local slope d ln(width) / d ln(ln n) over the last pair of n = {spans} (ln n / d = {lnd})"
    )


def _slope(t, obs, col):
    sub = pick(t["trends"], rho=RHO, observable=obs)
    sub = sub[sub["n_hi"] == sub.groupby("d")["n_hi"].transform("max")].sort_values("d")
    if sub.empty or not np.all(np.isfinite(sub[col])):
        raise NotAvailable(f"no local slope of {obs} at every d")
    return slope_finding(sub, obs, col, _last_pair)


def _slopes_within(t):
    trends = t["trends"]
    z = (trends["slope"] - trends["slope_finite_d"]) / trends["slope_se"]
    z = z[np.isfinite(z)]
    if z.empty:
        raise NotAvailable("no local slopes with an SE")
    return {
        "label": f"measured local slopes within {Z_WITHIN:g} SE of the finite-d theory's "
        "(every d, rho, observable and pair of n)",
        "value": [int((z.abs() <= Z_WITHIN).sum()), len(z)],
    }


def _at_largest_n(t, obs):
    """The transitions of ``obs`` at the largest n of each d, rho = :data:`RHO`, by d."""
    return pick(_largest_n(t["transitions"]), rho=RHO, observable=obs).sort_values("d")


def _ratio(t, obs):
    sub = _at_largest_n(t, obs)
    r = (sub["width"] / sub["width_simplex"]).astype(float)
    if not np.all(np.isfinite(r)):
        raise NotAvailable("a width not computed at the largest n")
    ns = " / ".join(sci(n) for n in sub["n"])
    return {
        "label": f"{NAMES[obs]}: width over Paper A's finite-n simplex width at the largest "
        f"n = {ns} of d = {' / '.join(map(str, sub['d']))} (rho = {RHO:g})",
        "value": r.tolist(),
        "se": (sub["width_se"] / sub["width_simplex"]).tolist(),
    }


def _deviations(transitions, what, obs):
    """Simulated minus theory of the widths or centres of ``obs`` with a finite difference and
    SE, their SEs (combined with the reference's where it has one) and the theory values."""
    sub = pick(transitions, observable=obs)
    ref, ref_se = f"{what}_finite_d", None
    if what == "centre" and REGISTRY[obs].centre_reference:
        ref, ref_se = REGISTRY[obs].centre_reference
    se = sub[f"{what}_se"] if ref_se is None else np.hypot(sub[f"{what}_se"], sub[ref_se])
    diff = (sub[what] - sub[ref]).astype(float)
    ok = np.isfinite(diff) & np.isfinite(se)
    if not ok.any():
        raise NotAvailable(f"no {obs} {what} with an SE and a finite-d value")
    return diff[ok], se[ok].astype(float), sub[ref][ok].astype(float)


def _accepts(diff, se):
    """The theorem table's rule (docs/finite-d.md#mean-field-for-eta)."""
    return diff.abs() <= np.maximum(3.0 * se, FINITE_D_ABS_TOL)


def _within(t, what, obs):
    diff, se, _ = _deviations(t["transitions"], what, obs)
    return {
        "label": f"{NAMES[obs]} {what} within {Z_WITHIN:g} SE of the finite-d theory's "
        "(every d, rho, n)",
        "value": [int((diff.abs() <= Z_WITHIN * se).sum()), len(diff)],
    }


def _accepted(t, what, obs):
    diff, se, _ = _deviations(t["transitions"], what, obs)
    return {
        "label": f"{NAMES[obs]} {what} accepted by the theorem table's rule, "
        f"|simulated - finite-d| <= max(3 SE, {FINITE_D_ABS_TOL:g}) (every d, rho, n)",
        "value": [int(_accepts(diff, se).sum()), len(diff)],
    }


def _max_z(t, what, obs):
    diff, se, _ = _deviations(t["transitions"], what, obs)
    return {
        "label": f"largest |simulated - finite-d| / SE of the {NAMES[obs]} {what}",
        "value": float((diff.abs() / se).max()),
    }


def _max_rel(t, what, obs):
    diff, _, ref = _deviations(t["transitions"], what, obs)
    return {
        "label": f"largest |simulated - finite-d| / finite-d of the {NAMES[obs]} {what} "
        "(every d, rho, n), %",
        "value": 100.0 * float((diff.abs() / ref).max()),
    }


def _not_accepted(t):
    transitions, records = t["transitions"], []
    for what in ("width", "centre"):
        for obs in THEORY_OBS:
            diff, se, ref = _deviations(transitions, what, obs)
            miss = ~_accepts(diff, se)
            sub = transitions.loc[diff.index[miss]]
            for k, r in zip(diff.index[miss], sub.itertuples(), strict=True):
                records.append([obs, what, r.d, r.rho, sci(r.n), getattr(r, what), ref[k], se[k]])
    return {
        "label": "widths and centres the finite-d theory does not meet by the theorem "
        f"table's rule, |simulated - finite-d| <= max(3 SE, {FINITE_D_ABS_TOL:g})",
        "value": records,
    }


def _centre(t, obs):
    sub = _at_largest_n(t, obs)
    vals = sub["centre"].astype(float)
    if not np.all(np.isfinite(vals)):
        raise NotAvailable("a centre not inside the grid at the largest n")
    return {
        "label": f"{NAMES[obs]}: centre x (crossing of its value at gamma_c) at the largest n "
        f"of d = {' / '.join(map(str, sub['d']))} (rho = {RHO:g})",
        "value": vals.tolist(),
        "se": sub["centre_se"].tolist(),
    }


def _x_star(t):
    sub = _at_largest_n(t, X_STAR_OBS)
    return {
        "label": "finite-d critical point x* = beta*(1 - rho_hat)/ln n of the same draws "
        f"there, d = {' / '.join(map(str, sub['d']))}",
        "value": sub["x_star"].tolist(),
        "se": sub["x_star_se"].tolist(),
    }


def _floor_rows(transitions):
    """The smallest d and the transitions of the floor's observable there, rho = :data:`RHO`."""
    d = int(transitions["d"].min())
    return d, pick(transitions, d=d, rho=RHO, observable=FLOOR_OBS)


def _floor_at_low_x(t):
    d, sub = _floor_rows(t["transitions"])
    n = int(sub["n"].max())
    c = pick(t["curves"], d=d, rho=RHO, n=n, observable=FLOOR_OBS).sort_values("x").iloc[0]
    return {
        "label": f"lambda at the grid's smallest x = {c['x']:g}, d = {d}, n = {sci(n)}, "
        f"rho = {RHO:g}: simulated, the tilt's floor, the finite-d mean field",
        "value": [float(c["mean"]), float(c["tilt_floor"]), float(c["theory"])],
        "se": [float(c["se"]), None, None],
    }


def _x10_floor(t):
    d, sub = _floor_rows(t["transitions"])
    sub = sub.sort_values("n").iloc[[0, -1]]
    return {
        "label": f"lambda's lower end x10 at d = {d}, rho = {RHO:g}, n = "
        f"{' / '.join(sci(n) for n in sub['n'])}: simulated, then where the tilt's floor "
        "alone reaches 0.1",
        "value": sub["x10"].astype(float).tolist() + sub["x10_floor"].astype(float).tolist(),
        "se": sub["x10_se"].astype(float).tolist() + [None, None],
    }


#: Columns of the sharpness table: header, format, and where the value comes from (``e``: the
#: transition at the largest n, ``r``: the last pair of n's trend).
_TABLE = [
    ("width", ".3f", "e", "width"),
    ("finite-d", ".3f", "e", "width_finite_d"),
    ("simplex", ".3f", "e", "width_simplex"),
    ("local slope", "+.2f", "r", "slope"),
    ("SE", ".2f", "r", "slope_se"),
    ("finite-d slope", "+.2f", "r", "slope_finite_d"),
    ("centre", ".3f", "e", "centre"),
    ("finite-d centre", ".3f", "e", "centre_finite_d"),
]


def _table(t):
    trends = t["trends"].sort_values(["observable", "rho", "d", "n_lo"])
    if trends.empty:
        raise NotAvailable("no width trends")
    last = _largest_n(t["transitions"]).set_index(["d", "rho", "observable"])
    records = []
    for (obs, rho, d), g in trends.groupby(["observable", "rho", "d"], sort=True):
        got = {"e": last.loc[(d, rho, obs)], "r": g.iloc[-1]}
        n = f"{sci(g['n_lo'].iloc[0])} .. {sci(got['r']['n_hi'])}"
        cells = [float(got[w][c]) if w == "e" else got[w][c] for _, _, w, c in _TABLE]
        records.append([obs, int(d), float(rho), n, *cells])
    return {
        "label": "width and centre of every transition at the largest n, with the finite-d "
        "theory's, and the local slope of the width over the last pair of n "
        "(x = gamma / gamma_c(rho_hat))",
        "value": records,
        "columns": ["observable", "d", "rho", "n", *[h for h, _, _, _ in _TABLE]],
        "columns_fmt": ["", "d", "g", "", *[f for _, f, _, _ in _TABLE]],
    }


_TR, _FIT = [TRANSITIONS], [TRENDS]

#: The four tests of a series of widths or centres against the finite-d theory: key suffix,
#: label suffix, function, metadata.
_AGAINST_THEORY = [
    ("within", "vs finite d", _within, {"kind": "count"}),
    ("accepted", "accepted", _accepted, {"kind": "count"}),
    ("max_z", "max z", _max_z, {"fmt": ".1f"}),
    ("max_rel", "max relative deviation", _max_rel, {"fmt": ".2f"}),
]

#: The findings of the sharpness figure, declared (functions of the tables ``{"transitions",
#: "trends", "curves"}``; :func:`sharpness_findings`).
SHARPNESS = [
    *(
        entry
        for obs in THEORY_OBS
        for entry in (
            declare(
                f"sharpness.local_slope_{obs}",
                f"{NAMES[obs]} local slope",
                _on(_slope, obs, "slope"),
                fmt="+.2f",
                source=_FIT,
                pm="one standard error from the two widths' delta-method SEs",
            ),
            declare(
                f"sharpness.local_slope_{obs}_finite_d",
                f"{NAMES[obs]} local slope, finite d",
                _on(_slope, obs, "slope_finite_d"),
                fmt="+.2f",
                source=_FIT,
            ),
        )
    ),
    declare(
        "sharpness.local_slope_within",
        "local slopes vs finite d",
        _slopes_within,
        kind="count",
        source=_FIT,
    ),
    *(
        declare(
            f"sharpness.width_ratio_{obs}",
            f"{NAMES[obs]} width over simplex",
            _on(_ratio, obs),
            fmt=".2f",
            source=_TR,
            pm=PM_DELTA.format(k="the"),
        )
        for obs in WITH["width_ratio"]
    ),
    *(
        declare(
            f"sharpness.{what}_{obs}_{suffix}",
            f"{obs} {what} {label}",
            _on(fn, what, obs),
            source=_TR,
            **meta,
        )
        for what in ("width", "centre")
        for obs in THEORY_OBS
        for suffix, label, fn, meta in _AGAINST_THEORY
    ),
    declare(
        "sharpness.tilt_floor",
        "lambda's floor",
        _floor_at_low_x,
        fmt=".3f",
        source=[CURVES],
        pm="one standard error of the mean curve (simulated only)",
    ),
    declare(
        "sharpness.x10_floor",
        "lambda's lower end and the floor's",
        _x10_floor,
        fmt=".3f",
        source=_TR,
        pm=PM_DELTA.format(k="the") + " (simulated only)",
    ),
    *(
        declare(
            f"sharpness.centre_{obs}",
            f"{obs} centre",
            _on(_centre, obs),
            fmt=".3f",
            source=_TR,
            pm=PM_DELTA.format(k="the"),
        )
        for obs in WITH["centre"]
    ),
    declare(
        "sharpness.x_star",
        "finite-d x*",
        _x_star,
        fmt=".3f",
        source=_TR,
        pm="one standard error of the mean over the draws",
    ),
    declare(
        "sharpness.not_accepted",
        "finite-d misses",
        _not_accepted,
        kind="table",
        source=_TR,
        columns=["observable", "quantity", "d", "rho", "n", "simulated", "finite-d", "SE"],
        columns_fmt=["", "", "d", "g", "", ".4f", ".4f", ".2g"],
    ),
    declare("sharpness.table", "table", _table, kind="table", source=_TR + _FIT),
]


def sharpness_findings(
    *, transitions: pd.DataFrame, trends: pd.DataFrame, curves: pd.DataFrame
) -> list[Finding]:
    """The widths against Paper A's finite-n simplex and the finite-d theory, their local slopes
    against ``ln n``, the tilt's floor under lambda, and the centres against the finite-d theory
    (docs/long-context.md#transition-sharpness-against-context-length,
    docs/long-context.md#the-width-explained): the declarations :data:`SHARPNESS`."""
    return evaluate(SHARPNESS, {"transitions": transitions, "trends": trends, "curves": curves})


def _calib_table(c):
    records = []
    for key, g in c.groupby(["d", "n", "draws", "rows", "experiments", "observable"], sort=False):
        w = g[g["quantity"] == "width"].iloc[0]
        ce = g[g["quantity"] == "centre"].iloc[0]
        records.append(
            [
                *[int(v) for v in key[:5]],
                key[5],
                f"{w['ratio']:.3f} ± {w['ratio_se']:.3f}",
                f"{ce['ratio']:.3f} ± {ce['ratio_se']:.3f}",
                float(w["corr_mean"]),
            ]
        )
    return {
        "label": "calibration of the crossing SEs: spread over independent experiments / mean "
        "delta-method SE (± its own SE), and the mean correlation of a width's two crossings",
        "value": records,
    }


def _calib_range(c, q):
    r = c[c["quantity"] == q]["ratio"].astype(float)
    return {
        "label": f"calibration: spread / mean SE of the {q}s, range over every point and "
        "observable",
        "value": [float(r.min()), float(r.max())],
    }


def _calib_band(c):
    r = c["ratio"].astype(float)
    return {
        "label": f"calibration ratios within [{CALIBRATION_BAND[0]:g}, "
        f"{CALIBRATION_BAND[1]:g}] (every point, observable, width and centre)",
        "value": [int(r.between(*CALIBRATION_BAND).sum()), len(r)],
    }


def _calibration(fn, *args):
    """``fn`` of the calibration rows (the tables concatenated; none is :class:`NotAvailable`)."""
    return lambda tables: fn(frame(tables), *args)


#: The calibration findings, declared (functions of the list of calibration tables).
CALIBRATION_FINDINGS = [
    declare(
        "sharpness.calibration",
        "calibration table",
        _calibration(_calib_table),
        kind="table",
        source=[CALIBRATION],
        columns=[
            "d",
            "n",
            "draws",
            "rows",
            "experiments",
            "observable",
            "width: spread / mean SE",
            "centre: spread / mean SE",
            "corr(x10, x90)",
        ],
        columns_fmt=["d", "d", "d", "d", "d", "", "", "", "+.2f"],
    ),
    *(
        declare(
            f"sharpness.calibration_{q}_range",
            f"calibration of the {q}s",
            _calibration(_calib_range, q),
            kind="range",
            fmt=".2f",
            source=[CALIBRATION],
        )
        for q in ("width", "centre")
    ),
    declare(
        "sharpness.calibration_within_band",
        "calibration within the band",
        _calibration(_calib_band),
        kind="count",
        source=[CALIBRATION],
    ),
]


def calibration_findings(*, calibration: list) -> list[Finding]:
    """The calibration of the crossing SEs, where the configuration runs it (rule
    ``sharpness_calibration``; docs/long-context.md#calibration-of-the-crossing-ses): the spread
    of each width and centre over independent experiments against its mean delta-method SE; the
    declarations :data:`CALIBRATION_FINDINGS`."""
    return evaluate(CALIBRATION_FINDINGS, calibration)
