"""Findings of the finite-d figures (docs/finite-d.md): where the transition sits at finite
(n, d), how the approximations of the theory fail, and the intermediate phase."""

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
    pick,
    sci,
)

__all__ = [
    "POINTS",
    "THEORY",
    "INTERMEDIATE",
    "POWER_TOL",
    "TABLE_N_MIN",
    "TABLE_D",
    "GAMMA_TABLE_D",
    "GAMMA_TABLE_LOG10_N",
    "INTERMEDIATE_FACTORS",
    "INTERMEDIATE_RHO",
    "TRANSITION",
    "INTERMEDIATE_FINDINGS",
    "transition_findings",
    "intermediate_findings",
]

POINTS = "finite_d/transition/d*.csv"
THEORY = "finite_d/transition_theory.csv"
INTERMEDIATE = "finite_d/intermediate/n*/d*.csv"

#: Relative agreement for "the power law is the asymptote" [choice].
POWER_TOL = 1e-3
#: Smallest n of the theory grid shown in the gamma*/gamma_c table [choice].
TABLE_N_MIN = 1000
#: Dimensions of the gamma*/gamma_c table ("typical heads") [choice].
TABLE_D = (64, 128)
#: Dimensions and decades of n of the rho = 0 beta*/ln n table in
#: docs/finite-d.md#asymptotic-regimes [choice].
GAMMA_TABLE_D = (4, 8, 16, 32, 64, 128)
GAMMA_TABLE_LOG10_N = (2, 3, 4, 5, 6, 7)
#: gamma / gamma_c multiples at which the intermediate-phase table is read [choice].
INTERMEDIATE_FACTORS = (0.5, 1.0, 1.5, 2.0, 4.0, 8.0)
#: rho at which the intermediate-phase table is read (the nearest grid value) [choice].
INTERMEDIATE_RHO = 0.2


def _z_scores(t):
    P = frame(t["data"])
    if "a_at_theory" not in P.columns:
        raise NotAvailable(
            "the simulation was not evaluated at the theory's beta* "
            "(finite_d.transition.theory_check is off)"
        )
    z = (P["a_at_theory"] - 0.5) / P["a_at_theory_se"]
    return z[np.isfinite(z)]


def _within(t, k):
    z = _z_scores(t)
    return {
        "label": f"simulated mean A_ii at the theory's beta* within {k} SE of 1/2",
        "value": [int((z.abs() <= k).sum()), len(z)],
    }


def _chi2(t):
    z = _z_scores(t)
    return {
        "label": f"chi^2 of those {len(z)} deviations, and the largest |z|",
        "value": [float((z**2).sum()), float(z.abs().max())],
    }


def _read_off(t, ratio):
    r = pick(t["theory"], kind="read_off").sort_values("rho")
    n, d = int(r["n"].iloc[0]), int(r["d"].iloc[0])
    vals = r["gamma_star"] / (r["gamma_c"] if ratio else 1.0)
    return {
        "label": f"d = {d}, n = {n}: "
        + ("gamma*/gamma_c" if ratio else "gamma* = beta*/ln n")
        + " at rho = "
        + " / ".join(f"{x:g}" for x in r["rho"]),
        "value": vals.tolist(),
    }


def _ratio_table(t):
    g = pick(t["theory"], kind="grid")
    g = g[g["n"] >= TABLE_N_MIN]
    ns = sorted(g["n"].unique())
    records = []
    for d in TABLE_D:
        for rho in sorted(g["rho"].unique()):
            sub = g[(g["d"] == d) & np.isclose(g["rho"], rho)].set_index("n")
            if sub.empty:
                continue
            records.append(
                [d, rho, *[float(sub.loc[n, "gamma_star"] / sub.loc[n, "gamma_c"]) for n in ns]]
            )
    if not records:
        raise NotAvailable(f"no theory at d = {TABLE_D}")
    return {
        "label": "exact gamma*/gamma_c of typical heads on the theory grid",
        "value": records,
        "columns": ["d", "rho", *[f"n = {sci(n)}" for n in ns]],
        "columns_fmt": ["d", "g", *[".3f"] * len(ns)],
    }


def _no_root(sub: pd.DataFrame) -> pd.Series:
    """The grid n of one (d, rho) where the first-order equation has no root (nan in the table)."""
    return sub.loc[sub["beta_first_order"].isna(), "n"]


def _approx_table(t):
    g = pick(t["theory"], kind="grid")
    records = []
    for (d, rho), sub in g.groupby(["d", "rho"], sort=True):
        ann = 100.0 * (sub["beta_annealed"] / sub["beta_star"] - 1.0)
        fo = 100.0 * (sub["beta_first_order"] / sub["beta_star"] - 1.0)
        nan_n = _no_root(sub)
        records.append(
            [
                int(d),
                rho,
                _span(ann),
                _span(fo),
                "none" if nan_n.empty else f"{int(nan_n.min())} ({len(nan_n)} of {len(sub)})",
            ]
        )
    ns = g["n"]
    return {
        "label": f"relative error of the approximations to the exact beta* over n = "
        f"{ns.min():.0f} .. {sci(ns.max())} (%)",
        "value": records,
    }


def _first_order_roots(t):
    from attnscale.layer import finite_d

    g = pick(t["theory"], kind="grid")
    records = []
    for (d, rho), sub in g.groupby(["d", "rho"], sort=True):
        nan_n = _no_root(sub)
        if nan_n.empty or len(nan_n) == len(sub):
            continue  # a root everywhere, or nowhere: no crossover inside the grid
        s2 = finite_d.first_order_variance(int(d), float(rho))
        n_x = int(np.ceil(1.0 + np.exp((1.0 - rho) ** 2 / (2.0 * s2))))  # first integer n
        records.append([int(d), rho, n_x, int(nan_n.min())])
    if not records:
        raise NotAvailable("the first-order root is lost nowhere inside the grid")
    return {
        "label": "first-order equation beta (1 - rho) - beta^2 s^2 / 2 = ln(n - 1): first n "
        "without a root, against the first grid n where the table has nan",
        "value": records,
        "note": "the crossover n is computed from the library "
        "(attnscale.layer.finite_d.first_order_variance: 2 s^2 ln(n - 1) = (1 - rho)^2), "
        "not read from the table; d where the root exists everywhere or nowhere on the "
        "grid are left out",
    }


def _within_tolerance_from(sub: pd.DataFrame, err: np.ndarray):
    """The first grid n (of ``sub``, by n) from which ``err`` stays within :data:`POWER_TOL`;
    ``None`` if it ends outside."""
    ok = np.nonzero(err > POWER_TOL)[0]
    if ok.size == 0:
        return int(sub["n"].iloc[0])
    if ok[-1] == len(err) - 1:
        return None
    return int(sub["n"].iloc[ok[-1] + 1])


def _power_table(t):
    g = pick(t["theory"], kind="grid", rho=0.0)
    records = []
    for d, sub in g.groupby("d", sort=True):
        sub = sub.sort_values("n")
        rel = sub["beta_power"] / sub["beta_star"]
        first = _within_tolerance_from(sub, (rel - 1.0).abs().to_numpy())
        records.append(
            [
                int(d),
                float(rel.min()),
                float(rel.max()),
                float(rel.iloc[-1]),
                "never" if first is None else first,
            ]
        )
    return {
        "label": f"rho = 0: power law n^(2/(d-1)) over the exact beta* (range over n, at the "
        f"largest n), and the first grid n from which it stays within {POWER_TOL:g}",
        "value": records,
    }


def _gamma_row(t, d):
    from attnscale.layer import finite_d

    pick(t["theory"], kind="grid", rho=0.0)  # the configuration has the rho = 0 transition
    ns = [10**k for k in GAMMA_TABLE_LOG10_N]
    return {
        "label": f"rho = 0, d = {d}: exact beta*/ln n at n = " + " / ".join(sci(n) for n in ns),
        "value": [finite_d.critical_beta(n, d, 0.0) / np.log(n) for n in ns],
        "note": "computed from the library (attnscale.layer.finite_d.critical_beta) at these n, "
        "which the theory grid need not hold; the table only says that rho = 0 is configured",
    }


def _power_at_largest(t):
    g = pick(t["theory"], kind="grid", rho=0.0)
    top = g[g["n"] == g["n"].max()].sort_values("d")
    return {
        "label": f"rho = 0, n = {sci(top['n'].iloc[0])}: power law n^(2/(d-1)) over the exact "
        "beta* at d = " + " / ".join(str(int(d)) for d in top["d"]),
        "value": (top["beta_power"] / top["beta_star"]).tolist(),
    }


#: The findings of the transition figure, declared (functions of the tables ``{"data": the
#: simulated points, "theory": the theory table}``).
TRANSITION = [
    *(
        declare(
            f"finite_d.points_within_{k}se",
            f"points within {k} SE",
            partial(_within, k=k),
            kind="count",
            source=[POINTS],
        )
        for k in (2, 3)
    ),
    declare(
        "finite_d.points_chi2",
        "chi^2 and largest |z|",
        _chi2,
        fmt=".3g",
        source=[POINTS],
        note="z = (mean A_ii at the theory's beta* - 1/2) / its SE over draws",
    ),
    declare(
        "finite_d.read_off_gamma_star",
        "read-off gamma*",
        partial(_read_off, ratio=False),
        fmt=".3f",
        source=[THEORY],
    ),
    declare(
        "finite_d.read_off_over_gamma_c",
        "read-off gamma*/gamma_c",
        partial(_read_off, ratio=True),
        fmt=".3f",
        source=[THEORY],
    ),
    declare(
        "finite_d.gamma_ratio_table",
        "gamma*/gamma_c of typical heads",
        _ratio_table,
        kind="table",
        source=[THEORY],
    ),
    declare(
        "finite_d.approximation_table",
        "approximations",
        _approx_table,
        kind="table",
        columns=["d", "rho", "annealed", "first order", "first grid n without a first-order root"],
        columns_fmt=["d", "g", "", "", ""],
        source=[THEORY],
    ),
    declare(
        "finite_d.first_order_crossover",
        "first-order crossover",
        _first_order_roots,
        kind="table",
        columns=["d", "rho", "first n without a root", "first nan on the grid"],
        columns_fmt=["d", "g", "d", "d"],
        source=[THEORY],
    ),
    declare(
        "finite_d.power_law_table",
        "power law",
        _power_table,
        kind="table",
        columns=[
            "d",
            "min ratio",
            "max ratio",
            "ratio at the largest n",
            "within tolerance from n",
        ],
        columns_fmt=["d", ".4g", ".4g", ".4g", ""],
        source=[THEORY],
    ),
    declare(
        "finite_d.power_law_over_exact",
        "power law at the largest n",
        _power_at_largest,
        fmt=".4f",
        source=[THEORY],
    ),
    *(
        declare(
            f"finite_d.gamma_star_rho0_d{d}",
            f"beta*/ln n at d = {d}",
            partial(_gamma_row, d=d),
            fmt=".4g",
            source=[THEORY],
        )
        for d in GAMMA_TABLE_D
    ),
]


def transition_findings(*, data, theory: pd.DataFrame) -> list[Finding]:
    """Simulated critical points against the exact finite-d theory, and the theory's read-offs
    and approximations (docs/finite-d.md#finite-d-critical-point,
    docs/finite-d.md#where-each-approximation-fails): the declarations :data:`TRANSITION`."""
    return evaluate(TRANSITION, {"data": data, "theory": theory})


def _span(v: pd.Series) -> str:
    """``lo .. hi`` of the finite values (``n/a`` if none), signed, two significant digits."""
    v = v[np.isfinite(v)]
    if v.empty:
        return "n/a"
    lo, hi = float(v.min()), float(v.max())
    return f"{lo:+.2g} .. {hi:+.2g}" if not np.isclose(lo, hi) else f"{lo:+.2g}"


def _star_offset(D):
    records = []
    for d, sub in D.groupby("d", sort=False):
        per_rho = sub.groupby("rho")[["gamma_star", "gamma_c"]].first()
        v = 100.0 * (per_rho["gamma_star"] / per_rho["gamma_c"] - 1.0)
        records.append([int(d), _span(v)])
    return {
        "label": "finite-d critical gamma* above gamma_c, range over the rho grid (%)",
        "value": records,
    }


def _nearest_gammas(sub: pd.DataFrame, gc: float) -> list[float]:
    """The grid gammas of ``sub`` nearest (in log) to :data:`INTERMEDIATE_FACTORS` times
    ``gc``, each once, sorted."""
    gammas = np.sort(sub["gamma"].unique())
    return sorted(
        {float(gammas[np.argmin(np.abs(np.log(gammas / (f * gc))))]) for f in INTERMEDIATE_FACTORS}
    )


def _intermediate_table(D):
    rhos = np.sort(D["rho"].unique())
    rho = float(rhos[np.argmin(np.abs(rhos - INTERMEDIATE_RHO))])
    cols = ["self_weight_mean", "n_eff_mean", "n_eff_others_mean", "k_mass_mean"]
    records = []
    for d, sub in D[np.isclose(D["rho"], rho)].groupby("d", sort=False):
        gc = float(sub["gamma_c"].iloc[0])
        for g in _nearest_gammas(sub, gc):
            r = sub[np.isclose(sub["gamma"], g)].iloc[0]
            records.append([int(d), g, g / gc, *(r[c] for c in cols)])
    mass = float(D["mass"].iloc[0])
    return {
        "label": f"rho = {rho:g}, n = {int(D['n'].iloc[0])}: self-weight, N_eff = "
        f"1/sum_j A_ij^2, N_eff of the other keys and the number of keys holding "
        f"{100 * mass:g} % of the mass (means over draws and query rows)",
        "value": records,
    }


def _low_d(D):
    d = D["d"].min()
    sub = D[D["d"] == d]
    return {
        "label": f"d = {int(d)}: N_eff range over the whole grid, and the largest mean self-weight",
        "value": [
            float(sub["n_eff_mean"].min()),
            float(sub["n_eff_mean"].max()),
            float(sub["self_weight_mean"].max()),
        ],
    }


#: The findings of the intermediate phase, declared (functions of the concatenated table).
INTERMEDIATE_FINDINGS = [
    declare(
        "intermediate.gamma_star_offset",
        "gamma* above gamma_c",
        _star_offset,
        kind="table",
        columns=["d", "gamma*/gamma_c - 1 (%)"],
        columns_fmt=["d", ""],
        source=[INTERMEDIATE],
    ),
    declare(
        "intermediate.table",
        "intermediate phase",
        _intermediate_table,
        kind="table",
        columns=[
            "d",
            "gamma",
            "gamma/gamma_c",
            "A_ii",
            "N_eff",
            "N_eff others",
            "keys for the mass",
        ],
        columns_fmt=["d", ".3g", ".2f", ".3f", ".3g", ".3g", ".3g"],
        source=[INTERMEDIATE],
    ),
    declare("intermediate.low_d", "lowest d", _low_d, fmt=".3g", source=[INTERMEDIATE]),
]


def intermediate_findings(*, data) -> list[Finding]:
    """How many keys a query attends to around and above the transition
    (docs/finite-d.md, the intermediate phase of Paper A's Theorem C.2): the declarations
    :data:`INTERMEDIATE_FINDINGS`."""
    return evaluate(INTERMEDIATE_FINDINGS, frame(data))
