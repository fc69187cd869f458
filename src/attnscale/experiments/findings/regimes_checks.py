"""Findings of the regimes figure beyond its results table (docs/regimes.md): the independent row
sets with their joint chi^2, the near-tie series against the exact finite-d theory of ``k``
copies and the first-order group formula (paired ratios), the power-law regime of the finite-d
series (local exponent), and the random-energy model's orders far beyond the simulated ``n``.
Called by :func:`attnscale.experiments.findings.regimes.regimes_findings`."""

from __future__ import annotations

import numpy as np
from scipy import stats

from attnscale.experiments.findings.record import (
    Finding,
    NotAvailable,
    compute,
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
    "regimes_check_findings",
]

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


def regimes_check_findings(*, table, exponent, rem_orders) -> list[Finding]:
    """Findings of docs/regimes.md#results, docs/regimes.md#exact-finite-d-theory-for-k-copies,
    docs/regimes.md#finite-d-where-log-n-ends and
    docs/regimes.md#freezing-point-and-finite-n-corrections.

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
    S = T[T["kind"] == "simulation"]
    src_t = ["regimes/critical_scale.csv"]

    # ------------------------------------------------------------------ independent row sets
    def query_alone():
        if S.empty:
            raise NotAvailable("no simulated points")
        q = S[S["k"].astype(float) == 1.0]
        sets = S[["n", "spawn_key"]].drop_duplicates()
        if len(q) != len(sets) or q[["n", "spawn_key"]].duplicated().any():
            raise NotAvailable("a row set without exactly one query-alone series")
        return q["z_pred"].astype(float)

    def row_sets_within():
        z = query_alone()
        return {
            "label": "independent row sets (the query rows of one series and n; the tie series "
            "reuse the rows of their query-alone series) whose query-alone series (gap, finite "
            "d, REM) lies within 2 SE of its finite-n prediction",
            "value": [int((z.abs() <= 2.0).sum()), len(z)],
        }

    def row_sets_chi2():
        z = query_alone()
        chi2 = float((z**2).sum())
        return {
            "label": "chi^2 = sum of z^2 of the query-alone series over the independent row "
            "sets, its degrees of freedom (one per row set) and its p-value",
            "value": [chi2, len(z), float(stats.chi2.sf(chi2, len(z)))],
        }

    # ------------------------------------------------------------------ near-ties, paired
    def tie_rows(which):
        gap = S[S["series"] == "gap"]
        if gap.empty:
            raise NotAvailable("no gap series")
        t = S[S["regime"] == "ties"]
        same = np.isclose(t["d"].astype(float), float(gap["d"].iloc[0]))
        t = t[same] if which == "gap_d" else t[~same]
        if t.empty:
            raise NotAvailable(
                "no tie series " + ("at the gap's d" if which == "gap_d" else "at another d")
            )
        return t

    def where(t):
        ds = " / ".join(str(int(v)) for v in sorted(t["d"].unique()))
        return f"near-ties at d = {ds}, rho = {float(t['rho'].iloc[0]):g}"

    def paired(which, col, stat):
        t = tie_rows(which)
        if col not in t.columns:
            raise NotAvailable(f"no column {col!r}")
        z = t[col].astype(float)
        fin = z[np.isfinite(z)]
        if fin.empty:
            raise NotAvailable("no finite paired z")
        theory = (
            "exact finite-d theory of k copies"
            if col == "z_ratio"
            else ("first-order group formula")
        )
        over = f"the {len(fin)} simulated tie points" + (
            f" where it has a root (of {len(z)})" if len(fin) < len(z) else ""
        )
        if stat == "count":
            return {
                "label": f"{where(t)}: paired z against the {theory} within 2, over {over}",
                "value": [int((fin.abs() <= 2.0).sum()), len(fin)],
            }
        return {
            "label": f"{where(t)}: range of the paired z against the {theory} over {over}",
            "value": [float(fin.min()), float(fin.max())],
        }

    def unpaired(which):
        t = tie_rows(which)
        rows = S[S["spawn_key"].isin(t["spawn_key"])]
        z = rows["z_pred"].astype(float)
        return {
            "label": f"{where(t)}: range of z = (simulated - exact finite-d prediction) / SE "
            f"over the {len(z)} points of these rows (the query alone and its tie series)",
            "value": [float(z.min()), float(z.max())],
        }

    def first_order_excess(which):
        t = tie_rows(which)
        if "beta_first_order" not in t.columns:
            raise NotAvailable("no column 'beta_first_order'")
        ex = 100.0 * (t["beta_first_order"].astype(float) / t["beta_pred"].astype(float) - 1.0)
        fin = ex[np.isfinite(ex)]
        if fin.empty:
            raise NotAvailable("the first-order formula has no root at any tie point")
        return {
            "label": f"{where(t)}: first-order group formula over the exact finite-d "
            f"theory, minus 1, over the {len(fin)} tie points where it has a root (of "
            f"{len(ex)})",
            "value": [float(fin.min()), float(fin.max())],
        }

    # ------------------------------------------------------------------ the power-law regime
    def exp_row(d):
        E = frame(exponent)
        if E.empty:
            raise NotAvailable("no finite-d series with two simulated n")
        r = pick(E, series=f"finite_d d={d}").iloc[0]
        head = (
            f"finite d = {d}, rho = {float(r['rho']):g}, last decade n = {sci(r['n_lo'])} "
            f"to {sci(r['n_hi'])}"
        )
        return r, head

    def local_exponent(d):
        r, head = exp_row(d)
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

    def power_law_ratio(d):
        r, head = exp_row(d)
        if not np.isfinite(float(r["ratio_pred_power_law"])):
            raise NotAvailable("no power law at rho > 0")
        return {
            "label": f"{head}: beta* over Paper B's power law at n = {sci(r['n_hi'])}, "
            "simulated and exact finite-d theory",
            "value": [r["ratio_sim_power_law"], r["ratio_pred_power_law"]],
            "se": [r["ratio_sim_power_law_se"], None],
        }

    def ln_n_over_d(d):
        r, head = exp_row(d)
        return {
            "label": f"{head}: ln n / d at the two ends",
            "value": [r["ln_n_over_d_lo"], r["ln_n_over_d_hi"]],
        }

    # ------------------------------------------------------------------ the REM's orders
    def orders():
        R = frame(rem_orders)
        if R.empty:
            raise NotAvailable("no REM orders table")
        return R

    def rem_col(col, what):
        R = orders().drop_duplicates("n").sort_values("n")
        ns = " / ".join(sci(v) for v in R["n"])
        return {
            "label": f"REM (s = {float(R['s'].iloc[0]):g}): {what} at n = {ns}",
            "value": R[col].tolist(),
        }

    def rem_weights(col):
        R = orders()
        top = R[R["n"] == R["n"].max()].sort_values("factor")
        cs = " / ".join(f"{c:g}" for c in top["factor"])
        if col == "top_weight":
            return {
                "label": f"REM, n = {sci(top['n'].iloc[0])}: exact mean top weight E A_(1) at "
                f"beta = c sqrt(2 ln n)/s, c = {cs}",
                "value": top[col].tolist(),
            }
        return {
            "label": f"its n -> infinity limit, the mean top weight of PD(1/c) (0 for c <= 1), "
            f"c = {cs}",
            "value": top[col].tolist(),
        }

    def alpha_c():
        R = orders()
        return {
            "label": "alpha_c: the PD(alpha, 0) mean top weight equals the level",
            "value": float(R["alpha_c"].iloc[0]),
        }

    found = [
        compute(
            "regimes.row_sets_within_2se",
            "row sets within 2 SE",
            row_sets_within,
            kind="count",
            source=src_t,
        ),
        compute(
            "regimes.row_sets_chi2",
            "chi^2 over row sets",
            row_sets_chi2,
            fmt=".3g",
            source=src_t,
            note="one z per independent row set: the series without copies "
            "(the tie series move with it, their paired checks are separate findings)",
        ),
        compute(
            "regimes.ties.z_ratio",
            "paired z, exact",
            lambda: paired("gap_d", "z_ratio", "range"),
            kind="range",
            fmt=".2f",
            source=src_t,
            pm=PM_PAIRED_RATIO,
        ),
        compute(
            "regimes.ties.z_ratio_within_2",
            "paired z within 2",
            lambda: paired("gap_d", "z_ratio", "count"),
            kind="count",
            source=src_t,
        ),
        compute(
            "regimes.ties.z_ratio_first_order",
            "paired z, first order",
            lambda: paired("gap_d", "z_ratio_first_order", "range"),
            kind="range",
            fmt=".2f",
            source=src_t,
            pm=PM_PAIRED_RATIO,
        ),
        compute(
            "regimes.ties_finite_d.z_pred",
            "unpaired z",
            lambda: unpaired("other_d"),
            kind="range",
            fmt=".2f",
            source=src_t,
        ),
        compute(
            "regimes.ties_finite_d.z_ratio",
            "paired z, exact",
            lambda: paired("other_d", "z_ratio", "range"),
            kind="range",
            fmt=".2f",
            source=src_t,
            pm=PM_PAIRED_RATIO,
        ),
        compute(
            "regimes.ties_finite_d.z_ratio_within_2",
            "paired z within 2",
            lambda: paired("other_d", "z_ratio", "count"),
            kind="count",
            source=src_t,
        ),
        compute(
            "regimes.ties_finite_d.z_ratio_first_order",
            "paired z, first order",
            lambda: paired("other_d", "z_ratio_first_order", "range"),
            kind="range",
            fmt=".1f",
            source=src_t,
            pm=PM_PAIRED_RATIO,
        ),
        compute(
            "regimes.ties_finite_d.first_order_excess",
            "first order over exact",
            lambda: first_order_excess("other_d"),
            kind="range",
            fmt=".2g",
            unit="%",
            source=src_t,
        ),
    ]
    for d in EXPONENT_D:
        found += [
            compute(
                f"regimes.finite_d{d}.local_exponent",
                "local exponent",
                lambda d=d: local_exponent(d),
                fmt=".3f",
                source=[EXPONENT],
                pm=PM_EXPONENT,
            ),
            compute(
                f"regimes.finite_d{d}.power_law_ratio",
                "over the power law",
                lambda d=d: power_law_ratio(d),
                fmt=".3f",
                source=[EXPONENT],
                pm=PM_EXPONENT.replace("from the two points'", "from the point's"),
            ),
            compute(
                f"regimes.finite_d{d}.ln_n_over_d",
                "ln n / d",
                lambda d=d: ln_n_over_d(d),
                fmt=".2f",
                source=[EXPONENT],
            ),
        ]
    src_r = [REM_ORDERS]
    return found + [
        compute("regimes.rem.alpha_c", "alpha_c", alpha_c, fmt=".6f", source=src_r),
        compute(
            "regimes.rem_orders.beta_exact",
            "exact",
            lambda: rem_col("beta_exact", "exact beta*"),
            fmt=".3f",
            source=src_r,
        ),
        compute(
            "regimes.rem_orders.beta_penultimate",
            "penultimate",
            lambda: rem_col("beta_penultimate", "penultimate w_n/alpha_c"),
            fmt=".3f",
            source=src_r,
        ),
        compute(
            "regimes.rem_orders.beta_leading",
            "leading",
            lambda: rem_col("beta_leading", "leading order sqrt(2 ln n)/alpha_c"),
            fmt=".3f",
            source=src_r,
        ),
        compute(
            "regimes.rem_orders.beta_freezing",
            "freezing",
            lambda: rem_col("beta_freezing", "freezing point sqrt(2 ln n)"),
            fmt=".3f",
            source=src_r,
        ),
        compute(
            "regimes.rem_orders.penultimate_excess",
            "penultimate excess",
            lambda: rem_col("penultimate_excess_ln_n", "(penultimate / exact - 1) ln n"),
            fmt=".2f",
            source=src_r,
        ),
        compute(
            "regimes.rem_orders.exact_over_sqrt_2ln",
            "exact / sqrt(2 ln n)",
            lambda: rem_col("exact_over_sqrt_2ln", "exact beta* s / sqrt(2 ln n)"),
            fmt=".2f",
            source=src_r,
        ),
        compute(
            "regimes.rem_orders.top_weight",
            "top weight",
            lambda: rem_weights("top_weight"),
            fmt=".4f",
            source=src_r,
        ),
        compute(
            "regimes.rem_orders.top_weight_pd",
            "PD limit",
            lambda: rem_weights("top_weight_pd"),
            fmt=".4f",
            source=src_r,
        ),
    ]
