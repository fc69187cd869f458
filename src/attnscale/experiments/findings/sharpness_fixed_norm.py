"""Findings of the widths on fixed-norm tokens against the finite-d theory's (rule
``sharpness_fixed_norm``; docs/long-context.md#the-width-on-fixed-norm-tokens).

A point's relative difference is ``width / width_finite_d - 1`` with the SE ``width_se /
width_finite_d`` (the theory's width has no Monte Carlo error: it is the mean field at the same
norm and the draws' mean ``rho_hat``); the bias at one ``rho`` is the inverse-variance weighted
mean of its points' differences, which are independent (each ``n`` its own token draws).
"""

from __future__ import annotations

import numpy as np

from attnscale.experiments.findings.record import NotAvailable, declare, evaluate, frame

__all__ = ["DECLARED", "SOURCE", "OBSERVABLES", "transitions", "fixed_norm_findings"]

#: The per-point tables of rule ``sharpness_fixed_norm``.
SOURCE = ["sharpness/fixed_norm/d*_n*_rho*.csv"]
#: The observables whose width has a finite-d theory.
OBSERVABLES = ("lambda", "eta", "self_weight")
PM_POINT = "one standard error by the delta method over the point's draws"
PM_POOLED = "one standard error of the inverse-variance weighted mean over the points of each rho"


def transitions(data):
    """The transitions of every point with a finite-d width, sorted, with the relative
    difference ``rel`` and its SE ``rel_se`` in percent."""
    df = frame(data)
    df = df[df["observable"].isin(OBSERVABLES) & df["width_finite_d"].notna()].copy()
    if df.empty:
        raise NotAvailable("no width with a finite-d theory")
    df["rel"] = 100.0 * (df["width"] / df["width_finite_d"] - 1.0)
    df["rel_se"] = 100.0 * df["width_se"] / df["width_finite_d"]
    return df.sort_values(["observable", "d", "rho", "n"])


def _table(t):
    df = transitions(t["data"])
    cols = ["observable", "d", "rho", "n", "trials", "width", "width_se", "width_finite_d"]
    return {"value": df[[*cols, "rel", "rel_se"]].to_numpy(object).tolist()}


def _bias(observable):
    def fn(t):
        df = transitions(t["data"])
        df = df[(df["observable"] == observable) & (df["rel_se"] > 0)]
        if df.empty:
            raise NotAvailable(f"no {observable} width with an SE")
        if df["d"].nunique() > 1:
            raise NotAvailable(f"points of several d {sorted(df['d'].unique())}")
        vals, ses, where = [], [], []
        for rho, g in df.groupby("rho", sort=True):
            if g["n"].duplicated().any():
                raise NotAvailable(f"two points of one n at rho = {rho:g} (shared draws)")
            w = 1.0 / g["rel_se"].to_numpy(float) ** 2
            vals.append(float(np.sum(w * g["rel"].to_numpy(float)) / w.sum()))
            ses.append(float(1.0 / np.sqrt(w.sum())))
            where.append(f"rho = {rho:g} (n = {', '.join(str(int(v)) for v in g['n'])})")
        return {
            "label": f"{observable}'s width on fixed-norm tokens (||z_0|| = 1) against the "
            f"finite-d theory's, d = {int(df['d'].iloc[0])}: simulated / theory - 1, "
            f"pooled over n, at {' / '.join(where)}",
            "value": vals,
            "se": ses,
        }

    return fn


DECLARED = [
    declare(
        "sharpness.fixed_norm_widths",
        "Widths on fixed-norm tokens (||z_0|| = 1) against the finite-d theory's: the "
        "simulated width with its delta-method SE, the theory's, and their relative difference "
        "(simulated / theory - 1) with its SE",
        _table,
        kind="table",
        columns=[
            "observable",
            "d",
            "rho",
            "n",
            "draws",
            "width",
            "SE",
            "finite-d width",
            "difference (%)",
            "SE (%)",
        ],
        columns_fmt=["", "d", ".1f", "d", "d", ".4f", ".4f", ".4f", "+.2f", ".2f"],
        pm=PM_POINT,
        source=SOURCE,
    ),
    *(
        declare(
            f"sharpness.fixed_norm_width_bias_{o}",
            f"{o}'s width on fixed-norm tokens against the finite-d theory's",
            _bias(o),
            fmt="+.2f",
            unit="%",
            pm=PM_POOLED,
            source=SOURCE,
        )
        for o in OBSERVABLES
    ),
]


def fixed_norm_findings(*, data) -> list:
    """The findings of :data:`DECLARED` from the per-point tables of rule
    ``sharpness_fixed_norm`` (docs/long-context.md#the-width-on-fixed-norm-tokens)."""
    return evaluate(DECLARED, {"data": data})
