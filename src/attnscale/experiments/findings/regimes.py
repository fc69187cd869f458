"""Findings of the regimes figure (docs/regimes.md): simulated against predicted beta*(n) for the
gap, near-tie, finite-d and no-gap (REM) regimes; the practical reading for one head is in
:mod:`attnscale.experiments.findings.regimes_read_off`, the row-set, near-tie, power-law and
REM-order checks in :mod:`attnscale.experiments.findings.regimes_checks`."""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd

from attnscale.experiments.findings.record import (
    Finding,
    NotAvailable,
    declare,
    evaluate,
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
from attnscale.experiments.findings.regimes_read_off import READ_OFF, read_off_findings

__all__ = [
    "TABLE",
    "READ_OFF",
    "SIMULATIONS",
    "EXPONENT",
    "REM_ORDERS",
    "SERIES",
    "REGIMES",
    "regimes_findings",
]

TABLE = "regimes/critical_scale.csv"
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


def _describe(row: pd.Series) -> str:
    """The series with its parameters, e.g. ``gap (d = 4096, rho = 0.5)``."""
    if row["regime"] == "rem":
        return f"{row['series']} (s = {float(row['s']):g})"
    return f"{row['series']} (d = {int(row['d'])}, rho = {float(row['rho']):g})"


def _pm_rows(r) -> str:
    return PM_ROWS.format(k=int(r["contexts"]))


def _largest(t, name):
    """The simulated rows of series ``name`` by ``n``, the row at its largest ``n`` and the head
    of a label about that row."""
    table = pick(t["S"], series=name).sort_values("n")
    r = table.iloc[-1]
    return table, r, f"{_describe(r)}, n = {sci(r['n'])}: "


def _theory(t, name, kind, n) -> float:
    """The theory's ``beta`` of series ``name`` of ``kind`` at ``n``."""
    return one(t["P"], "beta", series=name, kind=kind, n=float(n))


# --------------------------------------------------------------------------- one series


def _beta_sim(t, name):
    _, r, head = _largest(t, name)
    return {
        "label": head + "simulated beta*",
        "value": r["beta"],
        "se": r["beta_se"],
        "pm": _pm_rows(r),
    }


def _column(t, name, col, what):
    _, r, head = _largest(t, name)
    return {"label": head + what, "value": r[col]}


def _gamma_span(t, name):
    table, r, _ = _largest(t, name)
    first = table.iloc[0]
    return {
        "label": f"{_describe(r)}: simulated gamma* = beta*/ln n at n = {sci(first['n'])} "
        f"and at n = {sci(r['n'])}",
        "value": [first["gamma"], r["gamma"]],
        "se": [first["gamma_se"], r["gamma_se"]],
        "pm": _pm_rows(r),
    }


#: What is reported of every series at its largest n: (name, function, format).
_AT_LARGEST = (
    ("beta_sim", _beta_sim, ".2f"),
    ("beta_pred", partial(_column, col="beta_pred", what="finite-n prediction of beta*"), ".2f"),
    ("beta_leading", partial(_column, col="beta_leading", what="leading order of beta*"), ".2f"),
    ("z", partial(_column, col="z_pred", what="z = (simulated - predicted) / SE"), ".2f"),
    ("gamma_span", _gamma_span, ".3f"),
)


def _noisy_gamma(t):
    name = "ties kappa=0.5 noise=0.3"
    _, r, head = _largest(t, name)
    ln_n = np.log(float(r["n"]))
    return {
        "label": head + "gamma* = beta*/ln n simulated, predicted (exact finite-d theory of k "
        "copies) and its n -> infinity asymptote (1 - kappa)/(Delta - delta)",
        "value": [
            r["gamma"],
            r["beta_pred"] / ln_n,
            _theory(t, name, "asymptote", r["n"]) / ln_n,
        ],
        "se": [r["gamma_se"], None, None],
        "pm": _pm_rows(r),
    }


def _fd_power_law(t):
    _, r, head = _largest(t, "finite_d d=16")
    return {
        "label": head + "Paper B's power law n^(2/(d-1))",
        "value": _theory(t, "finite_d d=16", "power_law", r["n"]),
    }


def _fd_gamma_pred(t):
    pred = pick(t["P"], series="finite_d d=16", kind="prediction").sort_values("n")
    lo, hi = pred.iloc[0], pred.iloc[-1]
    return {
        "label": f"{_describe(hi)}: predicted gamma* = beta*/ln n (exact finite-d theory) at "
        f"n = {sci(lo['n'])} and at n = {sci(hi['n'])}",
        "value": [lo["beta"] / np.log(lo["n"]), hi["beta"] / np.log(hi["n"])],
    }


# --------------------------------------------------------------------------- the REM


def _rem_penultimate(t):
    _, r, head = _largest(t, "rem")
    return {
        "label": head + "penultimate order w_n/(alpha_c s)",
        "value": _theory(t, "rem", "penultimate", float(r["n"])),
    }


def _rem_z_orders(t):
    _, r, head = _largest(t, "rem")
    n, b, se = float(r["n"]), float(r["beta"]), float(r["beta_se"])
    lead, pen = _theory(t, "rem", "leading", n), _theory(t, "rem", "penultimate", n)
    return {
        "label": head + "(simulated - order) / SE, leading and penultimate order",
        "value": [(b - lead) / se, (b - pen) / se],
    }


def _rem_log_n_law(t):
    """The REM's largest point, its head, and a log n law through its smallest point evaluated
    at its largest ``n``."""
    table, r, head = _largest(t, "rem")
    first = table.iloc[0]
    law = float(first["beta"]) * np.log(float(r["n"])) / np.log(float(first["n"]))
    return r, head, first, law


def _rem_law(t):
    r, _, first, law = _rem_log_n_law(t)
    return {
        "label": f"{_describe(r)}: a log n law through the simulated point at n = "
        f"{sci(first['n'])}, evaluated at n = {sci(r['n'])}",
        "value": law,
    }


def _rem_law_z(t):
    r, head, _, law = _rem_log_n_law(t)
    return {
        "label": head + "(simulated - that log n law) / SE",
        "value": (float(r["beta"]) - law) / float(r["beta_se"]),
    }


def _rem_truncated(t):
    """The REM's rows by ``n`` and those that drew only the scores above a threshold."""
    table, _, _ = _largest(t, "rem")
    cut = table[table["keys_drawn"].astype(float) < table["n"].astype(float)]
    if cut.empty:
        raise NotAvailable("no REM point drew only the scores above a threshold")
    return table, cut


def _rem_truncated_from(t):
    _, cut = _rem_truncated(t)
    return {
        "label": "REM: smallest simulated n at which only the scores above the threshold are drawn",
        "value": float(cut["n"].min()),
    }


def _rem_drawn_share(t):
    table, _ = _rem_truncated(t)
    r = table.iloc[-1]
    return {
        "label": f"REM: share of the scores drawn at n = {sci(r['n'])} (mean over rows)",
        "value": 100.0 * float(r["keys_drawn"]) / float(r["n"]),
    }


# --------------------------------------------------------------------------- over all points


def _z_all(S):
    z = S["z_pred"].astype(float)
    if z.empty:
        raise NotAvailable("no simulated points")
    return z


def _row_sets(t):
    S = t["S"]
    _z_all(S)
    return {
        "label": f"independent row sets among the {len(S)} simulated points (series drawn "
        "from the same rows, a query-alone series and its tie series at one n, count once)",
        "value": int(S[["n", "spawn_key"]].drop_duplicates().shape[0]),
    }


def _gap_over_leading(t):
    _, r, head = _largest(t, "gap")
    return {
        "label": head + "exact finite-d beta* over Paper A's ln(n - 1)/(1 - rho), minus 1",
        "value": 100.0 * (float(r["beta_pred"]) / float(r["beta_leading"]) - 1.0),
    }


def _largest_z(t):
    z = _z_all(t["S"])
    r = t["S"].loc[z.abs().idxmax()]
    return {
        "label": f"largest |z| over the simulated points: {_describe(r)} at n = {sci(r['n'])}",
        "value": r["z_pred"],
    }


def _se_ratios(t):
    S = t["S"]
    ratio = (S["beta_se_batches"] / S["beta_se"]).astype(float).dropna()
    if ratio.empty:
        raise NotAvailable("no batch-means SE")
    return ratio


def _se_ratio(t):
    ratio = _se_ratios(t)
    return {
        "label": f"ratio of the batch-means SE to the delta-method SE over the {len(ratio)} "
        "simulated points: mean and standard deviation (the scatter of the ratio, not an SE)",
        "value": [ratio.mean(), ratio.std(ddof=1)],
    }


def _se_ratio_range(t):
    ratio = _se_ratios(t)
    return {
        "label": f"ratio of the batch-means SE to the delta-method SE, range over the "
        f"{len(ratio)} simulated points",
        "value": [ratio.min(), ratio.max()],
    }


def _regridded(t):
    sims = frame(t["simulations"])
    if "attempts" not in sims.columns:
        raise NotAvailable("no column 'attempts'")
    return {
        "label": "simulated points whose root fell outside the first grid (grid moved, same "
        "rows redrawn)",
        "value": [int((sims["attempts"] > 1).sum()), len(sims)],
    }


def _declare(key, label, fn, fmt, **meta):
    return declare(f"regimes.{key}", label, fn, fmt=fmt, **{"source": [TABLE], **meta})


#: The findings of the regimes table, declared (functions of the tables ``{"S": simulated
#: points, "P": theory points, "simulations": the simulation tables}``).
REGIMES = [
    *(
        _declare(f"{key}.{what}", f"{name}: {what}", partial(fn, name=name), fmt)
        for key, name in SERIES
        for what, fn, fmt in _AT_LARGEST
    ),
    _declare("ties_k0p5_noisy.gamma", "noisy copies", _noisy_gamma, ".3f"),
    _declare("finite_d16.beta_power_law", "power law", _fd_power_law, ".3g"),
    _declare("finite_d16.gamma_pred", "predicted gamma*", _fd_gamma_pred, ".2f"),
    _declare("rem.beta_penultimate", "penultimate", _rem_penultimate, ".2f"),
    _declare("rem.z_orders", "z of the orders", _rem_z_orders, ".1f"),
    _declare("rem.log_n_law", "log n law", _rem_law, ".3g"),
    _declare("rem.log_n_law_z", "log n law z", _rem_law_z, ".1f"),
    _declare("rem.truncated_from_n", "truncation", _rem_truncated_from, ".3g"),
    _declare("rem.drawn_share", "drawn share", _rem_drawn_share, ".0f", unit="%"),
    _declare("independent_row_sets", "row sets", _row_sets, "d"),
    _declare("gap.pred_over_leading", "exact over leading", _gap_over_leading, ".2f", unit="%"),
    _declare("largest_abs_z", "largest |z|", _largest_z, ".2f"),
    _declare(
        "se_ratio",
        "SE ratio",
        _se_ratio,
        ".2f",
        note="a batch-means SE of B batches scatters with relative sd close to 1/sqrt(2 (B - 1))",
    ),
    _declare("se_ratio_range", "SE ratio range", _se_ratio_range, ".2f", kind="range"),
    _declare(
        "regridded_points",
        "re-gridded",
        _regridded,
        ".3g",
        kind="count",
        source=[TABLE, *SIMULATIONS],
    ),
]


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
        The declarations :data:`REGIMES` (per series at its largest simulated ``n``: simulated
        ``beta*`` +- SE, the finite-n prediction, the leading order, ``z``, and
        ``gamma* = beta*/ln n`` at the smallest and the largest ``n``; over all points: the
        independent row sets, the largest ``|z|``, the batch / delta SE ratio, re-gridded
        points, the REM's truncated draws), then the practical reading of
        :func:`attnscale.experiments.findings.regimes_read_off.read_off_findings` and the checks
        of :func:`attnscale.experiments.findings.regimes_checks.regimes_check_findings`.
        A series or grid point that the configuration lacks gives "not computed at this
        configuration".
    """
    T = frame(table)
    tables = {
        "S": T[T["kind"] == "simulation"].copy(),
        "P": T[T["role"] == "point"],
        "simulations": simulations,
    }
    return (
        evaluate(REGIMES, tables)
        + read_off_findings(read_off=read_off)
        + regimes_check_findings(table=T, exponent=exponent, rem_orders=rem_orders)
    )
