"""Findings of the sharpness figure (docs/long-context.md#transition-sharpness-against-context-length):
does the transition sharpen as n grows at fixed d, as Paper A's n -> inf limit says, or does it
saturate or move as the finite-d theory predicts?"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.experiments.findings.record import (
    PM_DELTA,
    PM_FIT_SCALED,
    Finding,
    NotAvailable,
    compute,
    pick,
    sci,
)

__all__ = ["TRANSITIONS", "TRENDS", "RHO", "NAMES", "Z_WITHIN", "sharpness_findings"]

TRANSITIONS = "sharpness/transitions.csv"
TRENDS = "sharpness/trends.csv"
#: The rho of the per-d findings (the figure's curves) [choice].
RHO = 0.5
#: How the labels name the observables.
NAMES = {"self_weight": "self-weight A_ii", "lambda": "lambda", "eta": "eta"}
#: A simulated centre or width agrees with the finite-d theory if within this many SE [choice].
Z_WITHIN = 2.0


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


def sharpness_findings(*, transitions: pd.DataFrame, trends: pd.DataFrame) -> list[Finding]:
    """The width's exponent against ``ln n``, the widths against Paper A's finite-n simplex and
    the finite-d theory, and the centres against the finite-d critical point
    (docs/long-context.md#transition-sharpness-against-context-length)."""
    src_tr, src_fit = [TRANSITIONS], [TRENDS]

    def exponent(obs):
        def fn():
            got = _per_d(trends, "exponent", "exponent_se", observable=obs)
            return {
                "label": f"{NAMES[obs]}: exponent p of its 10 %-90 % width ~ (ln n)^p at rho = "
                f"{RHO:g}, d = {' / '.join(map(str, got['ds']))}",
                "value": got["value"],
                "se": got["se"],
            }

        return fn

    def simplex_exponent():
        got = _per_d(trends, "exponent_simplex", observable="lambda")
        return {
            "label": "the same exponent for Paper A's finite-n simplex map over the same n, "
            f"d = {' / '.join(map(str, got['ds']))}",
            "value": got["value"],
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

    def z_self_weight(col, ref, ref_se=None):
        sub = pick(transitions, observable="self_weight")
        se = sub[f"{col}_se"] if ref_se is None else np.hypot(sub[f"{col}_se"], sub[ref_se])
        z = ((sub[col] - sub[ref]) / se).astype(float)
        z = z[np.isfinite(z)]
        if z.empty:
            raise NotAvailable(f"no self-weight {col} with an SE")
        return z

    def within(col, ref, ref_se, what):
        def fn():
            z = z_self_weight(col, ref, ref_se)
            return {
                "label": f"self-weight {what} within {Z_WITHIN:g} SE of the finite-d theory's "
                "(every d, rho, n)",
                "value": [int((z.abs() <= Z_WITHIN).sum()), len(z)],
            }

        return fn

    def max_z(col, ref, ref_se, what):
        def fn():
            z = z_self_weight(col, ref, ref_se)
            return {
                "label": f"largest |simulated - finite-d| / SE of the self-weight {what}",
                "value": float(z.abs().max()),
            }

        return fn

    def max_rel(col, ref, what):
        def fn():
            sub = pick(transitions, observable="self_weight")
            rel = ((sub[col] - sub[ref]).abs() / sub[ref]).astype(float)
            rel = rel[np.isfinite(rel)]
            if rel.empty:
                raise NotAvailable(f"no self-weight {col} with a finite-d value")
            return {
                "label": f"largest |simulated - finite-d| / finite-d of the self-weight {what} "
                "(every d, rho, n), %",
                "value": 100.0 * float(rel.max()),
            }

        return fn

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
        sub = pick(_largest_n(transitions), rho=RHO, observable="self_weight").sort_values("d")
        return {
            "label": "finite-d critical point x* = beta*(1 - rho_hat)/ln n of the same draws "
            f"there, d = {' / '.join(map(str, sub['d']))}",
            "value": sub["x_star"].tolist(),
            "se": sub["x_star_se"].tolist(),
        }

    def table():
        t = trends.sort_values(["observable", "rho", "d"])
        if t.empty:
            raise NotAvailable("no width trends")
        last = _largest_n(transitions).set_index(["d", "rho", "observable"])
        rows = []
        for _, r in t.iterrows():
            e = last.loc[(r["d"], r["rho"], r["observable"])]
            rows.append(
                [
                    r["observable"],
                    int(r["d"]),
                    float(r["rho"]),
                    f"{sci(r['n_min'])} .. {sci(r['n_max'])}",
                    r["exponent"],
                    r["exponent_se"],
                    r["width_n_min"],
                    r["width_n_max"],
                    float(e["width_simplex"]),
                    float(e["centre"]),
                    float(e["x_star"]),
                ]
            )
        return {
            "label": "width and centre of every transition (x = gamma / gamma_c(rho_hat); "
            "at the largest n: width, simplex width, centre, finite-d x*)",
            "value": rows,
            "columns": [
                "observable",
                "d",
                "rho",
                "n",
                "exponent p",
                "SE",
                "width (n min)",
                "width (n max)",
                "simplex width",
                "centre",
                "x*",
            ],
            "columns_fmt": ["", "d", "g", "", "+.2f", ".2f", ".3f", ".3f", ".3f", ".3f", ".3f"],
        }

    return [
        compute(
            "sharpness.width_exponent_lambda",
            "lambda width exponent",
            exponent("lambda"),
            fmt="+.2f",
            source=src_fit,
            pm=PM_FIT_SCALED,
        ),
        compute(
            "sharpness.width_exponent_eta",
            "eta width exponent",
            exponent("eta"),
            fmt="+.2f",
            source=src_fit,
            pm=PM_FIT_SCALED,
        ),
        compute(
            "sharpness.width_exponent_self_weight",
            "self-weight width exponent",
            exponent("self_weight"),
            fmt="+.2f",
            source=src_fit,
            pm=PM_FIT_SCALED,
        ),
        compute(
            "sharpness.width_exponent_simplex",
            "simplex width exponent",
            simplex_exponent,
            fmt="+.2f",
            source=src_fit,
            note="from the library: Paper A's finite-n simplex map (attnscale.layer.theory)",
        ),
        compute(
            "sharpness.width_ratio_lambda",
            "lambda width over simplex",
            ratio("lambda"),
            fmt=".2f",
            source=src_tr,
            pm=PM_DELTA.format(k="the"),
        ),
        compute(
            "sharpness.width_ratio_eta",
            "eta width over simplex",
            ratio("eta"),
            fmt=".2f",
            source=src_tr,
            pm=PM_DELTA.format(k="the"),
        ),
        compute(
            "sharpness.width_self_weight_within",
            "self-weight width vs finite d",
            within("width", "width_finite_d", None, "width"),
            kind="count",
            source=src_tr,
        ),
        compute(
            "sharpness.width_self_weight_max_z",
            "self-weight width max z",
            max_z("width", "width_finite_d", None, "width"),
            fmt=".1f",
            source=src_tr,
        ),
        compute(
            "sharpness.width_self_weight_max_rel",
            "self-weight width max relative deviation",
            max_rel("width", "width_finite_d", "width"),
            fmt=".1f",
            source=src_tr,
        ),
        compute(
            "sharpness.centre_self_weight_max_rel",
            "self-weight centre max relative deviation",
            max_rel("centre", "x_star", "centre"),
            fmt=".2f",
            source=src_tr,
        ),
        compute(
            "sharpness.centre_self_weight_within",
            "self-weight centre vs finite d",
            within("centre", "x_star", "x_star_se", "centre"),
            kind="count",
            source=src_tr,
        ),
        compute(
            "sharpness.centre_self_weight_max_z",
            "self-weight centre max z",
            max_z("centre", "x_star", "x_star_se", "centre"),
            fmt=".1f",
            source=src_tr,
        ),
        compute(
            "sharpness.centre_lambda",
            "lambda centre",
            centre("lambda"),
            fmt=".3f",
            source=src_tr,
            pm=PM_DELTA.format(k="the"),
        ),
        compute(
            "sharpness.centre_eta",
            "eta centre",
            centre("eta"),
            fmt=".3f",
            source=src_tr,
            pm=PM_DELTA.format(k="the"),
        ),
        compute(
            "sharpness.x_star",
            "finite-d x*",
            x_star,
            fmt=".3f",
            source=src_tr,
            pm="one standard error of the mean over the draws",
        ),
        compute("sharpness.table", "table", table, kind="table", source=src_tr + src_fit),
    ]
