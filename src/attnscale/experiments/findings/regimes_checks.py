"""Findings of the regimes figure beyond its results table (docs/regimes.md): the independent row
sets with their joint chi^2, the near-tie series against the exact finite-d theory of ``k``
copies and the first-order group formula (paired ratios), the power-law regime of the finite-d
series (local exponent), and the random-energy model's orders far beyond the simulated ``n``.
Called by :func:`attnscale.experiments.findings.regimes.regimes_findings`."""

from __future__ import annotations

from functools import partial

import numpy as np
from scipy import stats

from attnscale.experiments.findings.record import (
    Finding,
    NotAvailable,
    declare,
    evaluate,
    frame,
    pick,
    sci,
)

__all__ = [
    "EXPONENT",
    "REM_ORDERS",
    "EXPONENT_D",
    "PM_EXPONENT",
    "PM_PAIRED_RATIO",
    "CHECKS",
    "regimes_check_findings",
]

TABLE = "regimes/critical_scale.csv"
EXPONENT = "regimes/local_exponent.csv"
REM_ORDERS = "regimes/rem_orders.csv"

#: The finite-d series whose local exponent is reported (``regimes.finite_d<d>.*``) [choice]; a
#: configuration without one reports it as not computed.
EXPONENT_D = (4, 8, 16)

PM_EXPONENT = (
    "one standard error from the two points' delta-method SEs (independent query rows at each n)"
)
PM_PAIRED_RATIO = (
    "paired z: (simulated - predicted beta*_k / beta*_1) / SE, the SE by the paired delta method "
    "over the same query rows (per-row influence values)"
)


# --------------------------------------------------------------------------- independent row sets


def _query_alone(t):
    """z of the query-alone series, one per independent row set."""
    S = t["S"]
    if S.empty:
        raise NotAvailable("no simulated points")
    q = S[S["k"].astype(float) == 1.0]
    sets = S[["n", "spawn_key"]].drop_duplicates()
    if len(q) != len(sets) or q[["n", "spawn_key"]].duplicated().any():
        raise NotAvailable("a row set without exactly one query-alone series")
    return q["z_pred"].astype(float)


def _row_sets_within(t):
    z = _query_alone(t)
    return {
        "label": "independent row sets (the query rows of one series and n; the tie series "
        "reuse the rows of their query-alone series) whose query-alone series (gap, finite "
        "d, REM) lies within 2 SE of its finite-n prediction",
        "value": [int((z.abs() <= 2.0).sum()), len(z)],
    }


def _row_sets_chi2(t):
    z = _query_alone(t)
    chi2 = float((z**2).sum())
    return {
        "label": "chi^2 = sum of z^2 of the query-alone series over the independent row "
        "sets, its degrees of freedom (one per row set) and its p-value",
        "value": [chi2, len(z), float(stats.chi2.sf(chi2, len(z)))],
    }


# --------------------------------------------------------------------------- near-ties, paired


def _ties(t, which):
    """The tie series at the gap series' d (``which = "gap_d"``) or at another d, and the head
    of a label about them."""
    S = t["S"]
    gap = S[S["series"] == "gap"]
    if gap.empty:
        raise NotAvailable("no gap series")
    ties = S[S["regime"] == "ties"]
    same = np.isclose(ties["d"].astype(float), float(gap["d"].iloc[0]))
    ties = ties[same] if which == "gap_d" else ties[~same]
    if ties.empty:
        raise NotAvailable(
            "no tie series " + ("at the gap's d" if which == "gap_d" else "at another d")
        )
    ds = " / ".join(str(int(v)) for v in sorted(ties["d"].unique()))
    return ties, f"near-ties at d = {ds}, rho = {float(ties['rho'].iloc[0]):g}"


def _paired(t, which, col):
    """The finite paired z of column ``col``, the head, the theory it tests and over what."""
    ties, head = _ties(t, which)
    if col not in ties.columns:
        raise NotAvailable(f"no column {col!r}")
    z = ties[col].astype(float)
    fin = z[np.isfinite(z)]
    if fin.empty:
        raise NotAvailable("no finite paired z")
    theory = (
        "exact finite-d theory of k copies" if col == "z_ratio" else "first-order group formula"
    )
    over = f"the {len(fin)} simulated tie points" + (
        f" where it has a root (of {len(z)})" if len(fin) < len(z) else ""
    )
    return fin, f"{head}: ", theory, over


def _paired_count(t, which, col):
    fin, head, theory, over = _paired(t, which, col)
    return {
        "label": f"{head}paired z against the {theory} within 2, over {over}",
        "value": [int((fin.abs() <= 2.0).sum()), len(fin)],
    }


def _paired_range(t, which, col):
    fin, head, theory, over = _paired(t, which, col)
    return {
        "label": f"{head}range of the paired z against the {theory} over {over}",
        "value": [float(fin.min()), float(fin.max())],
    }


def _unpaired(t, which):
    ties, head = _ties(t, which)
    z = t["S"][t["S"]["spawn_key"].isin(ties["spawn_key"])]["z_pred"].astype(float)
    return {
        "label": f"{head}: range of z = (simulated - exact finite-d prediction) / SE "
        f"over the {len(z)} points of these rows (the query alone and its tie series)",
        "value": [float(z.min()), float(z.max())],
    }


def _first_order_excess(t, which):
    ties, head = _ties(t, which)
    if "beta_first_order" not in ties.columns:
        raise NotAvailable("no column 'beta_first_order'")
    ex = 100.0 * (ties["beta_first_order"].astype(float) / ties["beta_pred"].astype(float) - 1.0)
    fin = ex[np.isfinite(ex)]
    if fin.empty:
        raise NotAvailable("the first-order formula has no root at any tie point")
    return {
        "label": f"{head}: first-order group formula over the exact finite-d theory, minus 1, "
        f"over the {len(fin)} tie points where it has a root (of {len(ex)})",
        "value": [float(fin.min()), float(fin.max())],
    }


# --------------------------------------------------------------------------- the power-law regime


def _exponent_row(t, d):
    """The local-exponent row of the finite-d series at ``d`` and the head of a label."""
    E = frame(t["exponent"])
    if E.empty:
        raise NotAvailable("no finite-d series with two simulated n")
    r = pick(E, series=f"finite_d d={d}").iloc[0]
    head = (
        f"finite d = {d}, rho = {float(r['rho']):g}, last decade n = {sci(r['n_lo'])} "
        f"to {sci(r['n_hi'])}"
    )
    return r, head


def _local_exponent(t, d):
    r, head = _exponent_row(t, d)
    return {
        "label": f"{head}: local exponent d ln beta*/d ln n, simulated, exact finite-d "
        "theory, Paper B's 2/(d - 1), and the log n law's ln(n - 1)/(1 - rho)",
        "value": [
            r["exponent_sim"],
            r["exponent_pred"],
            r["exponent_power_law"],
            r["exponent_log_n"],
        ],
        "se": [r["exponent_sim_se"], None, None, None],
    }


def _power_law_ratio(t, d):
    r, head = _exponent_row(t, d)
    if not np.isfinite(float(r["ratio_pred_power_law"])):
        raise NotAvailable("no power law at rho > 0")
    return {
        "label": f"{head}: beta* over Paper B's power law at n = {sci(r['n_hi'])}, "
        "simulated and exact finite-d theory",
        "value": [r["ratio_sim_power_law"], r["ratio_pred_power_law"]],
        "se": [r["ratio_sim_power_law_se"], None],
    }


def _ln_n_over_d(t, d):
    r, head = _exponent_row(t, d)
    return {
        "label": f"{head}: ln n / d at the two ends",
        "value": [r["ln_n_over_d_lo"], r["ln_n_over_d_hi"]],
    }


# --------------------------------------------------------------------------- the REM's orders


def _orders(t):
    R = frame(t["rem_orders"])
    if R.empty:
        raise NotAvailable("no REM orders table")
    return R


def _rem_column(t, col, what):
    R = _orders(t).drop_duplicates("n").sort_values("n")
    ns = " / ".join(sci(v) for v in R["n"])
    return {
        "label": f"REM (s = {float(R['s'].iloc[0]):g}): {what} at n = {ns}",
        "value": R[col].tolist(),
    }


def _top_weights(t):
    """The REM orders at the largest ``n`` by factor ``c``, and the factors as text."""
    R = _orders(t)
    top = R[R["n"] == R["n"].max()].sort_values("factor")
    return top, " / ".join(f"{c:g}" for c in top["factor"])


def _top_weight(t):
    top, cs = _top_weights(t)
    return {
        "label": f"REM, n = {sci(top['n'].iloc[0])}: exact mean top weight E A_(1) at "
        f"beta = c sqrt(2 ln n)/s, c = {cs}",
        "value": top["top_weight"].tolist(),
    }


def _top_weight_pd(t):
    top, cs = _top_weights(t)
    return {
        "label": f"its n -> infinity limit, the mean top weight of PD(1/c) (0 for c <= 1), "
        f"c = {cs}",
        "value": top["top_weight_pd"].tolist(),
    }


def _alpha_c(t):
    return {
        "label": "alpha_c: the PD(alpha, 0) mean top weight equals the level",
        "value": float(_orders(t)["alpha_c"].iloc[0]),
    }


# --------------------------------------------------------------------------- the declarations


def _declare(key, label, fn, source=TABLE, **meta):
    return declare(f"regimes.{key}", label, fn, source=[source], **meta)


def _paired_z(key, label, which, col, fmt=".2f"):
    fn = partial(_paired_range, which=which, col=col)
    return _declare(key, label, fn, kind="range", fmt=fmt, pm=PM_PAIRED_RATIO)


def _within_2(key, which):
    fn = partial(_paired_count, which=which, col="z_ratio")
    return _declare(key, "paired z within 2", fn, kind="count")


#: REM orders reported at every n of the table: (key, label, column, what the column is).
_REM_COLUMNS = (
    ("beta_exact", "exact", "beta_exact", "exact beta*"),
    ("beta_penultimate", "penultimate", "beta_penultimate", "penultimate w_n/alpha_c"),
    ("beta_leading", "leading", "beta_leading", "leading order sqrt(2 ln n)/alpha_c"),
    ("beta_freezing", "freezing", "beta_freezing", "freezing point sqrt(2 ln n)"),
)

#: The checks, declared (functions of the tables ``{"S": simulated points, "exponent": the
#: local-exponent table, "rem_orders": the REM orders}``).
CHECKS = [
    _declare("row_sets_within_2se", "row sets within 2 SE", _row_sets_within, kind="count"),
    _declare(
        "row_sets_chi2",
        "chi^2 over row sets",
        _row_sets_chi2,
        fmt=".3g",
        note="one z per independent row set: the series without copies "
        "(the tie series move with it, their paired checks are separate findings)",
    ),
    _paired_z("ties.z_ratio", "paired z, exact", "gap_d", "z_ratio"),
    _within_2("ties.z_ratio_within_2", "gap_d"),
    _paired_z("ties.z_ratio_first_order", "paired z, first order", "gap_d", "z_ratio_first_order"),
    _declare(
        "ties_finite_d.z_pred",
        "unpaired z",
        partial(_unpaired, which="other_d"),
        kind="range",
        fmt=".2f",
    ),
    _paired_z("ties_finite_d.z_ratio", "paired z, exact", "other_d", "z_ratio"),
    _within_2("ties_finite_d.z_ratio_within_2", "other_d"),
    _paired_z(
        "ties_finite_d.z_ratio_first_order",
        "paired z, first order",
        "other_d",
        "z_ratio_first_order",
        fmt=".1f",
    ),
    _declare(
        "ties_finite_d.first_order_excess",
        "first order over exact",
        partial(_first_order_excess, which="other_d"),
        kind="range",
        fmt=".2g",
        unit="%",
    ),
    *(
        entry
        for d in EXPONENT_D
        for entry in (
            _declare(
                f"finite_d{d}.local_exponent",
                "local exponent",
                partial(_local_exponent, d=d),
                EXPONENT,
                fmt=".3f",
                pm=PM_EXPONENT,
            ),
            _declare(
                f"finite_d{d}.power_law_ratio",
                "over the power law",
                partial(_power_law_ratio, d=d),
                EXPONENT,
                fmt=".3f",
                pm=PM_EXPONENT.replace("from the two points'", "from the point's"),
            ),
            _declare(
                f"finite_d{d}.ln_n_over_d",
                "ln n / d",
                partial(_ln_n_over_d, d=d),
                EXPONENT,
                fmt=".2f",
            ),
        )
    ),
    _declare("rem.alpha_c", "alpha_c", _alpha_c, REM_ORDERS, fmt=".6f"),
    *(
        _declare(
            f"rem_orders.{key}",
            label,
            partial(_rem_column, col=col, what=what),
            REM_ORDERS,
            fmt=".3f",
        )
        for key, label, col, what in _REM_COLUMNS
    ),
    _declare(
        "rem_orders.penultimate_excess",
        "penultimate excess",
        partial(_rem_column, col="penultimate_excess_ln_n", what="(penultimate / exact - 1) ln n"),
        REM_ORDERS,
        fmt=".2f",
    ),
    _declare(
        "rem_orders.exact_over_sqrt_2ln",
        "exact / sqrt(2 ln n)",
        partial(_rem_column, col="exact_over_sqrt_2ln", what="exact beta* s / sqrt(2 ln n)"),
        REM_ORDERS,
        fmt=".2f",
    ),
    _declare("rem_orders.top_weight", "top weight", _top_weight, REM_ORDERS, fmt=".4f"),
    _declare("rem_orders.top_weight_pd", "PD limit", _top_weight_pd, REM_ORDERS, fmt=".4f"),
]


def regimes_check_findings(*, table, exponent, rem_orders) -> list[Finding]:
    """Findings of docs/regimes.md#results, docs/regimes.md#exact-finite-d-theory-for-k-copies,
    docs/regimes.md#finite-d-where-log-n-ends and
    docs/regimes.md#freezing-point-and-finite-n-corrections: the declarations :data:`CHECKS`.

    Parameters
    ----------
    table : pandas.DataFrame
        ``results/regimes/critical_scale.csv`` (simulated points with ``z_pred``, the paired
        ``z_ratio``, ``z_ratio_first_order`` and ``beta_first_order``).
    exponent : pandas.DataFrame
        ``results/regimes/local_exponent.csv``
        (:func:`attnscale.experiments.regimes_summary.local_exponent_table`).
    rem_orders : pandas.DataFrame
        ``results/regimes/rem_orders.csv`` (:func:`attnscale.experiments.regimes_theory.rem_orders`).
    """
    T = frame(table)
    tables = {"S": T[T["kind"] == "simulation"], "exponent": exponent, "rem_orders": rem_orders}
    return evaluate(CHECKS, tables)
