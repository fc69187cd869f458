"""Findings of the regimes figure (docs/regimes.md): simulated against predicted beta*(n) for the
gap, near-tie, finite-d and no-gap (REM) regimes, and the practical reading for one head; the
row-set, near-tie, power-law and REM-order checks are in
:mod:`attnscale.experiments.findings.regimes_checks`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.experiments.findings.record import (
    Finding,
    NotAvailable,
    compute,
    frame,
    one,
    pick,
    sci,
)
from attnscale.experiments.findings.regimes_checks import (
    EXPONENT,
    REM_ORDERS,
    regimes_check_findings,
)

__all__ = [
    "TABLE",
    "READ_OFF",
    "SIMULATIONS",
    "EXPONENT",
    "REM_ORDERS",
    "SERIES",
    "regimes_findings",
]

TABLE = "regimes/critical_scale.csv"
READ_OFF = "regimes/read_off.csv"
SIMULATIONS = [
    "regimes/gap_ties.csv",
    "regimes/finite_d.csv",
    "regimes/rem.csv",
    "regimes/ties_finite_d.csv",
]

#: The series reported one by one (key, ``series`` of the table): the rows of the table in
#: docs/regimes.md#results [choice]; a configuration without a series reports it as not computed.
SERIES = (
    ("gap", "gap"),
    ("ties_k0p25", "ties kappa=0.25"),
    ("ties_k0p5", "ties kappa=0.5"),
    ("ties_k0p5_noisy", "ties kappa=0.5 noise=0.3"),
    ("finite_d16", "finite_d d=16"),
    ("finite_d8", "finite_d d=8"),
    ("finite_d4", "finite_d d=4"),
    ("rem", "rem"),
)

PM_ROWS = "one standard error by the delta method over the {k} independent query rows of each n"
PM_PAIRED = (
    "one standard error by the paired delta method over the same {k} query rows for every k "
    "(per-row influence values)"
)


def _describe(row: pd.Series) -> str:
    """The series with its parameters, e.g. ``gap (d = 4096, rho = 0.5)``."""
    if row["regime"] == "rem":
        return f"{row['series']} (s = {float(row['s']):g})"
    return f"{row['series']} (d = {int(row['d'])}, rho = {float(row['rho']):g})"


def regimes_findings(*, table, read_off, simulations, exponent, rem_orders) -> list[Finding]:
    """Findings of the critical-scale regimes (docs/regimes.md#results,
    docs/regimes.md#practical-reading, docs/regimes.md#simulation-and-root-finding).

    Parameters
    ----------
    table : pandas.DataFrame
        ``results/regimes/critical_scale.csv``
        (:func:`attnscale.experiments.regimes_summary.critical_scale_table`): simulated points
        (``kind = "simulation"``: ``beta``, its delta-method ``beta_se`` over contexts, the
        batch-means ``beta_se_batches``, the prediction ``beta_pred``, ``z_pred`` and
        ``beta_leading``) and the theory rows (``role = "point"`` at the simulated ``n``).
    read_off : pandas.DataFrame
        ``results/regimes/read_off.csv``: the practical reading in theory (``source = "theory"``,
        one row per copy cosine) and simulated (``source = "simulation"``, one row per ``k``).
    simulations : list of pandas.DataFrame
        The simulation tables (``rem.csv``, ``gap_ties.csv``, ``finite_d.csv``,
        ``ties_finite_d.csv``), read for the number of grid attempts per point only.
    exponent, rem_orders : pandas.DataFrame
        ``results/regimes/local_exponent.csv`` and ``results/regimes/rem_orders.csv``, for
        :func:`attnscale.experiments.findings.regimes_checks.regimes_check_findings`.

    Returns
    -------
    list of Finding
        Per series at its largest simulated ``n``: simulated ``beta*`` +- SE, the finite-n
        prediction, the leading order, ``z``, and ``gamma* = beta*/ln n`` at the smallest and the
        largest ``n``; over all points: the independent row sets, the largest ``|z|``, the batch /
        delta SE ratio, re-gridded points, the REM's truncated draws; the practical reading
        (``gamma*``, ``k`` for the configured drop, exact and noisy copies, simulated drops
        against the first-order and the exact theory); and the checks of
        :func:`attnscale.experiments.findings.regimes_checks.regimes_check_findings`.
        A series or grid point that the configuration lacks gives "not computed at this
        configuration".
    """
    T = frame(table)
    S = T[T["kind"] == "simulation"].copy()
    P = T[T["role"] == "point"]
    R = frame(read_off)
    src_t, src_r = [TABLE], [READ_OFF]

    def series_rows(name):
        rows = pick(S, series=name).sort_values("n")
        return rows, rows.iloc[-1]

    def theory_at(name, kind, n):
        return one(P, "beta", series=name, kind=kind, n=float(n))

    def at_largest(name, what):
        rows, r = series_rows(name)
        head = f"{_describe(r)}, n = {sci(r['n'])}: "
        if what == "beta_sim":
            return {
                "label": head + "simulated beta*",
                "value": r["beta"],
                "se": r["beta_se"],
                "pm": PM_ROWS.format(k=int(r["contexts"])),
            }
        if what == "beta_pred":
            return {"label": head + "finite-n prediction of beta*", "value": r["beta_pred"]}
        if what == "beta_leading":
            return {"label": head + "leading order of beta*", "value": r["beta_leading"]}
        if what == "z":
            return {"label": head + "z = (simulated - predicted) / SE", "value": r["z_pred"]}
        first = rows.iloc[0]
        return {
            "label": f"{_describe(r)}: simulated gamma* = beta*/ln n at n = {sci(first['n'])} "
            f"and at n = {sci(r['n'])}",
            "value": [first["gamma"], r["gamma"]],
            "se": [first["gamma_se"], r["gamma_se"]],
            "pm": PM_ROWS.format(k=int(r["contexts"])),
        }

    def z_all():
        z = S["z_pred"].astype(float)
        if z.empty:
            raise NotAvailable("no simulated points")
        return z

    def row_sets():
        z_all()
        return {
            "label": f"independent row sets among the {len(S)} simulated points (series drawn "
            "from the same rows, a query-alone series and its tie series at one n, count once)",
            "value": int(S[["n", "spawn_key"]].drop_duplicates().shape[0]),
        }

    def gap_over_leading():
        _, r = series_rows("gap")
        return {
            "label": f"{_describe(r)}, n = {sci(r['n'])}: exact finite-d beta* over Paper A's "
            "ln(n - 1)/(1 - rho), minus 1",
            "value": 100.0 * (float(r["beta_pred"]) / float(r["beta_leading"]) - 1.0),
        }

    def largest_z():
        z = z_all()
        r = S.loc[z.abs().idxmax()]
        return {
            "label": f"largest |z| over the simulated points: {_describe(r)} at n = {sci(r['n'])}",
            "value": r["z_pred"],
        }

    def se_ratio(stat):
        ratio = (S["beta_se_batches"] / S["beta_se"]).astype(float).dropna()
        if ratio.empty:
            raise NotAvailable("no batch-means SE")
        if stat == "range":
            return {
                "label": f"ratio of the batch-means SE to the delta-method SE, range over the "
                f"{len(ratio)} simulated points",
                "value": [ratio.min(), ratio.max()],
            }
        return {
            "label": f"ratio of the batch-means SE to the delta-method SE over the {len(ratio)} "
            "simulated points: mean and standard deviation (the scatter of the ratio, not an SE)",
            "value": [ratio.mean(), ratio.std(ddof=1)],
        }

    def regridded():
        sims = frame(simulations)
        if "attempts" not in sims.columns:
            raise NotAvailable("no column 'attempts'")
        return {
            "label": "simulated points whose root fell outside the first grid (grid moved, same "
            "rows redrawn)",
            "value": [int((sims["attempts"] > 1).sum()), len(sims)],
        }

    def rem_extra(what):
        rows, r = series_rows("rem")
        n, b, se = float(r["n"]), float(r["beta"]), float(r["beta_se"])
        head = f"{_describe(r)}, n = {sci(n)}: "
        if what == "penultimate":
            return {
                "label": head + "penultimate order w_n/(alpha_c s)",
                "value": theory_at("rem", "penultimate", n),
            }
        if what == "z_orders":
            lead, pen = theory_at("rem", "leading", n), theory_at("rem", "penultimate", n)
            return {
                "label": head + "(simulated - order) / SE, leading and penultimate order",
                "value": [(b - lead) / se, (b - pen) / se],
            }
        first = rows.iloc[0]
        law = float(first["beta"]) * np.log(n) / np.log(float(first["n"]))
        if what == "log_n_law":
            return {
                "label": f"{_describe(r)}: a log n law through the simulated point at n = "
                f"{sci(first['n'])}, evaluated at n = {sci(n)}",
                "value": law,
            }
        return {"label": head + "(simulated - that log n law) / SE", "value": (b - law) / se}

    def rem_truncation(what):
        rows, _ = series_rows("rem")
        cut = rows[rows["keys_drawn"].astype(float) < rows["n"].astype(float)]
        if cut.empty:
            raise NotAvailable("no REM point drew only the scores above a threshold")
        if what == "from_n":
            return {
                "label": "REM: smallest simulated n at which only the scores above the threshold "
                "are drawn",
                "value": float(cut["n"].min()),
            }
        r = rows.iloc[-1]
        return {
            "label": f"REM: share of the scores drawn at n = {sci(r['n'])} (mean over rows)",
            "value": 100.0 * float(r["keys_drawn"]) / float(r["n"]),
        }

    def fd_power_law():
        _, r = series_rows("finite_d d=16")
        return {
            "label": f"{_describe(r)}, n = {sci(r['n'])}: Paper B's power law n^(2/(d-1))",
            "value": theory_at("finite_d d=16", "power_law", r["n"]),
        }

    def fd_gamma_pred():
        pred = pick(P, series="finite_d d=16", kind="prediction").sort_values("n")
        lo, hi = pred.iloc[0], pred.iloc[-1]
        return {
            "label": f"{_describe(hi)}: predicted gamma* = beta*/ln n (exact finite-d theory) at "
            f"n = {sci(lo['n'])} and at n = {sci(hi['n'])}",
            "value": [lo["beta"] / np.log(lo["n"]), hi["beta"] / np.log(hi["n"])],
        }

    def noisy_gamma():
        name = "ties kappa=0.5 noise=0.3"
        _, r = series_rows(name)
        ln_n = np.log(float(r["n"]))
        return {
            "label": f"{_describe(r)}, n = {sci(r['n'])}: gamma* = beta*/ln n simulated, "
            "predicted (exact finite-d theory of k copies) and its n -> infinity asymptote "
            "(1 - kappa)/(Delta - delta)",
            "value": [
                r["gamma"],
                r["beta_pred"] / ln_n,
                theory_at(name, "asymptote", r["n"]) / ln_n,
            ],
            "se": [r["gamma_se"], None, None],
            "pm": PM_ROWS.format(k=int(r["contexts"])),
        }

    # ------------------------------------------------------------------ the practical reading
    def theory_rows():
        t = pick(R, source="theory").sort_values("copy_cosine", ascending=False)
        r = t.iloc[0]
        return t, f"d = {int(r['d'])}, n = {int(r['n'])}, rho = {float(r['rho']):g}"

    def ro_gamma():
        t, head = theory_rows()
        return {
            "label": f"{head}: exact finite-d gamma* of the head without copies",
            "value": t["gamma_star_exact"].iloc[0],
        }

    def ro_exact(what):
        t, head = theory_rows()
        r = pick(t, copy_cosine=1.0).iloc[0]
        shift = 100.0 * float(r["shift"])
        if what == "k":
            return {
                "label": f"{head}: tokens in the top group (query and exact copies) that "
                f"lower gamma* by {shift:g} % (first-order group formula)",
                "value": r["k_needed"],
            }
        lo, hi = int(np.floor(r["k_needed"])), int(r["k_ceil"])
        return {
            "label": f"{head}: drop of gamma* with k = {lo} and k = {hi} exact tokens in the top "
            "group (first-order group formula)",
            "value": [100.0 * r["shift_at_floor"], 100.0 * r["shift_at_ceil"]],
        }

    def ro_copies():
        t, head = theory_rows()
        c = t[t["copy_cosine"].astype(float) < 1.0]
        if c.empty:
            raise NotAvailable("no copy cosine below 1")
        shift = 100.0 * float(c["shift"].iloc[0])
        return {
            "label": f"{head}: tokens in the top group (query and copies at cosine "
            + " / ".join(f"{x:g}" for x in c["copy_cosine"])
            + f" with it) that lower gamma* by {shift:g} %",
            "value": c["k_needed"].tolist(),
        }

    def ro_sim(what):
        s = pick(R, source="simulation")
        s = s[s["k"].astype(float) > 1].sort_values("k")
        if s.empty:
            raise NotAvailable("no simulated copies")
        ks = " and ".join(f"k = {int(k)}" for k in s["k"])
        d, n = int(s["d"].iloc[0]), int(s["n"].iloc[0])
        head = f"d = {d}, n = {n}: relative drop of beta* with {ks}"
        pm = PM_PAIRED.format(k=int(s["contexts"].iloc[0]))
        if what == "sim":
            return {
                "label": head + ", simulated",
                "value": s["shift_sim"].tolist(),
                "se": s["shift_sim_se"].tolist(),
                "pm": pm,
            }
        if what == "formula":
            return {
                "label": head + ", first-order group formula",
                "value": s["shift_theory"].tolist(),
            }
        if what in ("exact", "exact_excess") and "shift_exact" not in s.columns:
            raise NotAvailable("no column 'shift_exact'")
        if what == "exact":
            return {
                "label": head + ", exact finite-d theory of k copies",
                "value": s["shift_exact"].tolist(),
            }
        if what == "exact_excess":
            return {
                "label": head + ": exact theory minus simulation",
                "value": (s["shift_exact"] - s["shift_sim"]).tolist(),
                "se": s["shift_sim_se"].tolist(),
                "pm": pm,
            }
        return {
            "label": head + ": formula minus simulation",
            "value": (s["shift_theory"] - s["shift_sim"]).tolist(),
            "se": s["shift_sim_se"].tolist(),
            "pm": pm,
        }

    found = []
    for key, name in SERIES:
        for what, fmt in (
            ("beta_sim", ".2f"),
            ("beta_pred", ".2f"),
            ("beta_leading", ".2f"),
            ("z", ".2f"),
            ("gamma_span", ".3f"),
        ):
            found.append(
                compute(
                    f"regimes.{key}.{what}",
                    f"{name}: {what}",
                    lambda name=name, what=what: at_largest(name, what),
                    fmt=fmt,
                    source=src_t,
                )
            )
    sims = src_t + SIMULATIONS
    return (
        found
        + [
            compute(
                "regimes.ties_k0p5_noisy.gamma",
                "noisy copies",
                noisy_gamma,
                fmt=".3f",
                source=src_t,
            ),
            compute(
                "regimes.finite_d16.beta_power_law",
                "power law",
                fd_power_law,
                fmt=".3g",
                source=src_t,
            ),
            compute(
                "regimes.finite_d16.gamma_pred",
                "predicted gamma*",
                fd_gamma_pred,
                fmt=".2f",
                source=src_t,
            ),
            compute(
                "regimes.rem.beta_penultimate",
                "penultimate",
                lambda: rem_extra("penultimate"),
                fmt=".2f",
                source=src_t,
            ),
            compute(
                "regimes.rem.z_orders",
                "z of the orders",
                lambda: rem_extra("z_orders"),
                fmt=".1f",
                source=src_t,
            ),
            compute(
                "regimes.rem.log_n_law",
                "log n law",
                lambda: rem_extra("log_n_law"),
                fmt=".3g",
                source=src_t,
            ),
            compute(
                "regimes.rem.log_n_law_z",
                "log n law z",
                lambda: rem_extra("log_n_law_z"),
                fmt=".1f",
                source=src_t,
            ),
            compute(
                "regimes.rem.truncated_from_n",
                "truncation",
                lambda: rem_truncation("from_n"),
                fmt=".3g",
                source=src_t,
            ),
            compute(
                "regimes.rem.drawn_share",
                "drawn share",
                lambda: rem_truncation("share"),
                fmt=".0f",
                unit="%",
                source=src_t,
            ),
            compute("regimes.independent_row_sets", "row sets", row_sets, fmt="d", source=src_t),
            compute(
                "regimes.gap.pred_over_leading",
                "exact over leading",
                gap_over_leading,
                fmt=".2f",
                unit="%",
                source=src_t,
            ),
            compute("regimes.largest_abs_z", "largest |z|", largest_z, fmt=".2f", source=src_t),
            compute(
                "regimes.se_ratio",
                "SE ratio",
                lambda: se_ratio("mean"),
                fmt=".2f",
                source=src_t,
                note="a batch-means SE of B batches scatters with relative sd close "
                "to 1/sqrt(2 (B - 1))",
            ),
            compute(
                "regimes.se_ratio_range",
                "SE ratio range",
                lambda: se_ratio("range"),
                kind="range",
                fmt=".2f",
                source=src_t,
            ),
            compute("regimes.regridded_points", "re-gridded", regridded, kind="count", source=sims),
            compute(
                "regimes.read_off.gamma_star", "read-off gamma*", ro_gamma, fmt=".4f", source=src_r
            ),
            compute(
                "regimes.read_off.k_exact",
                "k for exact copies",
                lambda: ro_exact("k"),
                fmt=".3g",
                source=src_r,
            ),
            compute(
                "regimes.read_off.drop_integer_k",
                "drop at integer k",
                lambda: ro_exact("drop"),
                fmt=".1f",
                unit="%",
                source=src_r,
            ),
            compute(
                "regimes.read_off.k_copies", "k for copies", ro_copies, fmt=".3g", source=src_r
            ),
            compute(
                "regimes.read_off.drop_sim",
                "simulated drop",
                lambda: ro_sim("sim"),
                fmt=".6f",
                source=src_r,
            ),
            compute(
                "regimes.read_off.drop_formula",
                "formula drop",
                lambda: ro_sim("formula"),
                fmt=".6f",
                source=src_r,
            ),
            compute(
                "regimes.read_off.formula_excess",
                "formula minus simulation",
                lambda: ro_sim("excess"),
                fmt=".2g",
                source=src_r,
            ),
            compute(
                "regimes.read_off.drop_exact",
                "exact drop",
                lambda: ro_sim("exact"),
                fmt=".6f",
                source=src_r,
            ),
            compute(
                "regimes.read_off.exact_minus_sim",
                "exact minus simulation",
                lambda: ro_sim("exact_excess"),
                fmt=".2g",
                source=src_r,
            ),
        ]
        + regimes_check_findings(table=T, exponent=exponent, rem_orders=rem_orders)
    )
