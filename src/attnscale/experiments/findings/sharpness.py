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
    compute,
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


def _per_d(df: pd.DataFrame, col: str, se_col: str | None = None, **conds) -> dict:
    """``value`` and ``se`` lists over the d of ``df`` (sorted), one row each, at ``rho = RHO``."""
    sub = pick(df, rho=RHO, **conds).sort_values("d")
    vals = sub[col].astype(float).tolist()
    if not np.all(np.isfinite(vals)):
        raise NotAvailable(f"{col} not computed at every d (a transition not inside the grid)")
    ses = sub[se_col].astype(float).tolist() if se_col else None
    return {"ds": sub["d"].astype(int).tolist(), "value": vals, "se": ses}


def _largest_n(tr: pd.DataFrame) -> pd.DataFrame:
    """The rows of the largest n of each d."""
    return tr[tr["n"] == tr.groupby("d")["n"].transform("max")]


def sharpness_findings(
    *, transitions: pd.DataFrame, trends: pd.DataFrame, curves: pd.DataFrame
) -> list[Finding]:
    """The widths against Paper A's finite-n simplex and the finite-d theory, their local slopes
    against ``ln n``, the tilt's floor under lambda, and the centres against the finite-d theory
    (docs/long-context.md#transition-sharpness-against-context-length,
    docs/long-context.md#the-width-explained)."""
    src_tr, src_fit, src_cur = [TRANSITIONS], [TRENDS], [CURVES]

    def last_pair(obs):
        sub = pick(trends, rho=RHO, observable=obs)
        return sub[sub["n_hi"] == sub.groupby("d")["n_hi"].transform("max")].sort_values("d")

    def slope(obs, col):
        def fn():
            sub = last_pair(obs)
            if sub.empty or not np.all(np.isfinite(sub[col])):
                raise NotAvailable(f"no local slope of {obs} at every d")
            pairs = " / ".join(
                f"{sci(a)}-{sci(b)}" for a, b in zip(sub["n_lo"], sub["n_hi"], strict=True)
            )
            lnd = " / ".join(f"{v:.3f}" for v in sub["ln_n_over_d"])
            who = {"slope": "measured", "slope_finite_d": "finite-d theory's"}[col]
            out = {
                "label": f"{NAMES[obs]}: {who} local slope d ln(width) / d ln(ln n) over the "
                f"last pair of n = {pairs} (ln n / d = {lnd}) of d = "
                f"{' / '.join(map(str, sub['d']))}, rho = {RHO:g}",
                "value": sub[col].astype(float).tolist(),
            }
            if col == "slope":
                out["se"] = sub["slope_se"].astype(float).tolist()
            return out

        return fn

    def slopes_within():
        z = (trends["slope"] - trends["slope_finite_d"]) / trends["slope_se"]
        z = z[np.isfinite(z)]
        if z.empty:
            raise NotAvailable("no local slopes with an SE")
        return {
            "label": f"measured local slopes within {Z_WITHIN:g} SE of the finite-d theory's "
            "(every d, rho, observable and pair of n)",
            "value": [int((z.abs() <= Z_WITHIN).sum()), len(z)],
        }

    def ratio(obs):
        def fn():
            sub = pick(_largest_n(transitions), rho=RHO, observable=obs).sort_values("d")
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

        return fn

    def ref_of(what, obs):
        """The theory column (and its SE column) a simulated width or centre is compared with."""
        if what == "centre" and REGISTRY[obs].centre_reference:
            return REGISTRY[obs].centre_reference
        return f"{what}_finite_d", None

    def deviations(what, obs):
        sub = pick(transitions, observable=obs)
        ref, ref_se = ref_of(what, obs)
        se = sub[f"{what}_se"] if ref_se is None else np.hypot(sub[f"{what}_se"], sub[ref_se])
        diff = (sub[what] - sub[ref]).astype(float)
        ok = np.isfinite(diff) & np.isfinite(se)
        if not ok.any():
            raise NotAvailable(f"no {obs} {what} with an SE and a finite-d value")
        return diff[ok], se[ok].astype(float), sub[ref][ok].astype(float)

    def accepts(diff, se):
        """The theorem table's rule (docs/finite-d.md#mean-field-for-eta)."""
        return diff.abs() <= np.maximum(3.0 * se, FINITE_D_ABS_TOL)

    def within(what, obs):
        def fn():
            diff, se, _ = deviations(what, obs)
            return {
                "label": f"{NAMES[obs]} {what} within {Z_WITHIN:g} SE of the finite-d theory's "
                "(every d, rho, n)",
                "value": [int((diff.abs() <= Z_WITHIN * se).sum()), len(diff)],
            }

        return fn

    def accepted(what, obs):
        def fn():
            diff, se, _ = deviations(what, obs)
            ok = accepts(diff, se)
            return {
                "label": f"{NAMES[obs]} {what} accepted by the theorem table's rule, "
                f"|simulated - finite-d| <= max(3 SE, {FINITE_D_ABS_TOL:g}) (every d, rho, n)",
                "value": [int(ok.sum()), len(diff)],
            }

        return fn

    def max_z(what, obs):
        def fn():
            diff, se, _ = deviations(what, obs)
            return {
                "label": f"largest |simulated - finite-d| / SE of the {NAMES[obs]} {what}",
                "value": float((diff.abs() / se).max()),
            }

        return fn

    def max_rel(what, obs):
        def fn():
            diff, _, ref = deviations(what, obs)
            return {
                "label": f"largest |simulated - finite-d| / finite-d of the {NAMES[obs]} {what} "
                "(every d, rho, n), %",
                "value": 100.0 * float((diff.abs() / ref).max()),
            }

        return fn

    def not_accepted():
        rows = []
        for what in ("width", "centre"):
            for obs in THEORY_OBS:
                diff, se, ref = deviations(what, obs)
                miss = ~accepts(diff, se)
                sub = transitions.loc[diff.index[miss]]
                for k, r in zip(diff.index[miss], sub.itertuples(), strict=True):
                    rows.append([obs, what, r.d, r.rho, sci(r.n), getattr(r, what), ref[k], se[k]])
        return {
            "label": "widths and centres the finite-d theory does not meet by the theorem "
            f"table's rule, |simulated - finite-d| <= max(3 SE, {FINITE_D_ABS_TOL:g})",
            "value": rows,
        }

    def centre(obs):
        def fn():
            sub = pick(_largest_n(transitions), rho=RHO, observable=obs).sort_values("d")
            vals = sub["centre"].astype(float)
            if not np.all(np.isfinite(vals)):
                raise NotAvailable("a centre not inside the grid at the largest n")
            return {
                "label": f"{NAMES[obs]}: centre x (crossing of its value at gamma_c) at the largest n "
                f"of d = {' / '.join(map(str, sub['d']))} (rho = {RHO:g})",
                "value": vals.tolist(),
                "se": sub["centre_se"].tolist(),
            }

        return fn

    def x_star():
        sub = pick(_largest_n(transitions), rho=RHO, observable=X_STAR_OBS).sort_values("d")
        return {
            "label": "finite-d critical point x* = beta*(1 - rho_hat)/ln n of the same draws "
            f"there, d = {' / '.join(map(str, sub['d']))}",
            "value": sub["x_star"].tolist(),
            "se": sub["x_star_se"].tolist(),
        }

    def smallest_d_largest_n():
        d = int(transitions["d"].min())
        sub = pick(transitions, d=d, rho=RHO, observable=FLOOR_OBS)
        return d, int(sub["n"].max())

    def floor_at_low_x():
        d, n = smallest_d_largest_n()
        c = pick(curves, d=d, rho=RHO, n=n, observable=FLOOR_OBS).sort_values("x").iloc[0]
        return {
            "label": f"lambda at the grid's smallest x = {c['x']:g}, d = {d}, n = {sci(n)}, "
            f"rho = {RHO:g}: simulated, the tilt's floor, the finite-d mean field",
            "value": [float(c["mean"]), float(c["tilt_floor"]), float(c["theory"])],
            "se": [float(c["se"]), None, None],
        }

    def x10_floor():
        d, _ = smallest_d_largest_n()
        sub = pick(transitions, d=d, rho=RHO, observable=FLOOR_OBS).sort_values("n")
        sub = sub.iloc[[0, -1]]
        return {
            "label": f"lambda's lower end x10 at d = {d}, rho = {RHO:g}, n = "
            f"{' / '.join(sci(n) for n in sub['n'])}: simulated, then where the tilt's floor "
            "alone reaches 0.1",
            "value": sub["x10"].astype(float).tolist() + sub["x10_floor"].astype(float).tolist(),
            "se": sub["x10_se"].astype(float).tolist() + [None, None],
        }

    def table():
        t = trends.sort_values(["observable", "rho", "d", "n_lo"])
        if t.empty:
            raise NotAvailable("no width trends")
        last = _largest_n(transitions).set_index(["d", "rho", "observable"])
        rows = []
        for (obs, rho, d), g in t.groupby(["observable", "rho", "d"], sort=True):
            e, r = last.loc[(d, rho, obs)], g.iloc[-1]
            rows.append(
                [
                    obs,
                    int(d),
                    float(rho),
                    f"{sci(g['n_lo'].iloc[0])} .. {sci(r['n_hi'])}",
                    float(e["width"]),
                    float(e["width_finite_d"]),
                    float(e["width_simplex"]),
                    r["slope"],
                    r["slope_se"],
                    r["slope_finite_d"],
                    float(e["centre"]),
                    float(e["centre_finite_d"]),
                ]
            )
        return {
            "label": "width and centre of every transition at the largest n, with the finite-d "
            "theory's, and the local slope of the width over the last pair of n "
            "(x = gamma / gamma_c(rho_hat))",
            "value": rows,
            "columns": [
                "observable",
                "d",
                "rho",
                "n",
                "width",
                "finite-d",
                "simplex",
                "local slope",
                "SE",
                "finite-d slope",
                "centre",
                "finite-d centre",
            ],
            "columns_fmt": [
                "",
                "d",
                "g",
                "",
                ".3f",
                ".3f",
                ".3f",
                "+.2f",
                ".2f",
                "+.2f",
                ".3f",
                ".3f",
            ],
        }

    out = []
    for obs in THEORY_OBS:
        out.append(
            compute(
                f"sharpness.local_slope_{obs}",
                f"{NAMES[obs]} local slope",
                slope(obs, "slope"),
                fmt="+.2f",
                source=src_fit,
                pm="one standard error from the two widths' delta-method SEs",
            )
        )
        out.append(
            compute(
                f"sharpness.local_slope_{obs}_finite_d",
                f"{NAMES[obs]} local slope, finite d",
                slope(obs, "slope_finite_d"),
                fmt="+.2f",
                source=src_fit,
            )
        )
    out.append(
        compute(
            "sharpness.local_slope_within",
            "local slopes vs finite d",
            slopes_within,
            kind="count",
            source=src_fit,
        )
    )
    for obs in WITH["width_ratio"]:
        out.append(
            compute(
                f"sharpness.width_ratio_{obs}",
                f"{NAMES[obs]} width over simplex",
                ratio(obs),
                fmt=".2f",
                source=src_tr,
                pm=PM_DELTA.format(k="the"),
            )
        )
    for what in ("width", "centre"):
        for obs in THEORY_OBS:
            tag = f"{obs} {what}"
            out += [
                compute(
                    f"sharpness.{what}_{obs}_within",
                    f"{tag} vs finite d",
                    within(what, obs),
                    kind="count",
                    source=src_tr,
                ),
                compute(
                    f"sharpness.{what}_{obs}_accepted",
                    f"{tag} accepted",
                    accepted(what, obs),
                    kind="count",
                    source=src_tr,
                ),
                compute(
                    f"sharpness.{what}_{obs}_max_z",
                    f"{tag} max z",
                    max_z(what, obs),
                    fmt=".1f",
                    source=src_tr,
                ),
                compute(
                    f"sharpness.{what}_{obs}_max_rel",
                    f"{tag} max relative deviation",
                    max_rel(what, obs),
                    fmt=".2f",
                    source=src_tr,
                ),
            ]
    out += [
        compute(
            "sharpness.tilt_floor",
            "lambda's floor",
            floor_at_low_x,
            fmt=".3f",
            source=src_cur,
            pm="one standard error of the mean curve (simulated only)",
        ),
        compute(
            "sharpness.x10_floor",
            "lambda's lower end and the floor's",
            x10_floor,
            fmt=".3f",
            source=src_tr,
            pm=PM_DELTA.format(k="the") + " (simulated only)",
        ),
    ]
    out += [
        compute(
            f"sharpness.centre_{obs}",
            f"{obs} centre",
            centre(obs),
            fmt=".3f",
            source=src_tr,
            pm=PM_DELTA.format(k="the"),
        )
        for obs in WITH["centre"]
    ]
    out += [
        compute(
            "sharpness.x_star",
            "finite-d x*",
            x_star,
            fmt=".3f",
            source=src_tr,
            pm="one standard error of the mean over the draws",
        ),
        compute(
            "sharpness.not_accepted",
            "finite-d misses",
            not_accepted,
            kind="table",
            source=src_tr,
            columns=["observable", "quantity", "d", "rho", "n", "simulated", "finite-d", "SE"],
            columns_fmt=["", "", "d", "g", "", ".4f", ".4f", ".2g"],
        ),
        compute("sharpness.table", "table", table, kind="table", source=src_tr + src_fit),
    ]
    return out


def calibration_findings(*, calibration: list) -> list[Finding]:
    """The calibration of the crossing SEs, where the configuration runs it (rule
    ``sharpness_calibration``; docs/long-context.md#calibration-of-the-crossing-ses): the spread
    of each width and centre over independent experiments against its mean delta-method SE."""

    def calib():
        return frame(calibration)

    def calib_table():
        c = calib()
        rows = []
        for key, g in c.groupby(
            ["d", "n", "draws", "rows", "experiments", "observable"], sort=False
        ):
            w = g[g["quantity"] == "width"].iloc[0]
            ce = g[g["quantity"] == "centre"].iloc[0]
            rows.append(
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
            "value": rows,
        }

    def calib_range(q):
        def fn():
            c = calib()
            r = c[c["quantity"] == q]["ratio"].astype(float)
            return {
                "label": f"calibration: spread / mean SE of the {q}s, range over every point and "
                "observable",
                "value": [float(r.min()), float(r.max())],
            }

        return fn

    def calib_band():
        r = calib()["ratio"].astype(float)
        return {
            "label": f"calibration ratios within [{CALIBRATION_BAND[0]:g}, "
            f"{CALIBRATION_BAND[1]:g}] (every point, observable, width and centre)",
            "value": [int(r.between(*CALIBRATION_BAND).sum()), len(r)],
        }

    return [
        compute(
            "sharpness.calibration",
            "calibration table",
            calib_table,
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
        compute(
            "sharpness.calibration_width_range",
            "calibration of the widths",
            calib_range("width"),
            kind="range",
            fmt=".2f",
            source=[CALIBRATION],
        ),
        compute(
            "sharpness.calibration_centre_range",
            "calibration of the centres",
            calib_range("centre"),
            kind="range",
            fmt=".2f",
            source=[CALIBRATION],
        ),
        compute(
            "sharpness.calibration_within_band",
            "calibration within the band",
            calib_band,
            kind="count",
            source=[CALIBRATION],
        ),
    ]
