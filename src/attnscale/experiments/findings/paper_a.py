"""Findings of Paper A's figures (docs/paper-a.md, docs/scaling-rules.md): lambda at the
critical line against the finite-n simplex, the finite-size panel, the scaling rules of real
models and the z_0 spread; the theorem table's findings are in
:mod:`attnscale.experiments.findings.theorem` (their names are kept here)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd

from attnscale.experiments.findings.grid import GRID_NAMES, grid_critical
from attnscale.experiments.findings.record import (
    PM_DRAWS,
    Finding,
    NotAvailable,
    compute,
    declare,
    evaluate,
    frame,
    mean_se_count,
    pick,
    sci,
)
from attnscale.experiments.findings.theorem import THEOREM, THEOREM_POINT, theorem_findings

__all__ = [
    "CRITICAL",
    "THEOREM",
    "FINITE_SIZE",
    "RULES",
    "REPORT_RHO",
    "THEOREM_POINT",
    "critical_lambda_findings",
    "theorem_findings",
    "finite_size_findings",
    "scaling_rules_findings",
    "variance_reduction_findings",
    "FINITE_SIZE_FINDINGS",
    "SCALING_RULES_FINDINGS",
    "Z0_SPREAD",
    "VARIANCE_REDUCTION",
]

CRITICAL = "paper_a/lambda_critical_data.csv"
FINITE_SIZE = "paper_a/finite_size_data.csv"
RULES = "paper_a/scaling_rules.csv"

#: rho values at which lambda at gamma_c is reported (where the grid has them) [choice].
REPORT_RHO = (0.2, 0.5, 0.8)


def critical_lambda_findings(*, critical: pd.DataFrame) -> list[Finding]:
    """Simulated lambda at gamma_c(rho_hat) against the exact finite-n simplex value at the draw's
    rho_hat (docs/paper-a.md#gaussian-near-simplex-tokens)."""
    k = critical["trial"].nunique()
    dmax = int(critical["d"].max())

    def gap_table():
        records = []
        for d, sub in critical.groupby("d", sort=False):
            means = sub.groupby("rho")["diff_vs_simplex_n"].mean()
            records.append(
                [
                    int(d),
                    float(means.min()),
                    float(means.max()),
                    float(sub["diff_vs_simplex_n"].abs().max()),
                ]
            )
        return {
            "label": f"lambda at gamma_c(rho_hat) minus the finite-n simplex value (n = "
            f"{int(critical['n'].iloc[0])}, {k} draws per rho): range over rho of the draw means, "
            "and the largest single-draw |gap|",
            "value": records,
        }

    def at_rho(col, label):
        sub = pick(critical, d=dmax)
        rhos = [r for r in REPORT_RHO if np.isclose(sub["rho"], r).any()]
        if not rhos:
            raise NotAvailable(f"none of rho = {REPORT_RHO} on the grid")
        vals, ses = [], []
        for r in rhos:
            m, se, _ = mean_se_count(pick(sub, rho=r)[col])
            vals.append(m)
            ses.append(se)
        out = {
            "label": f"d = {dmax}, rho = " + " / ".join(f"{r:g}" for r in rhos) + ": " + label,
            "value": vals,
        }
        if col in simulated:
            out.update(se=ses, pm=PM_DRAWS.format(k=k))
        return out

    simulated = ("lambda", *GRID_NAMES)
    src = [CRITICAL]
    return [
        compute(
            "paper_a.lambda_critical_gap",
            "lambda at gamma_c against the simplex",
            gap_table,
            kind="table",
            source=src,
            columns=["d", "lowest mean gap", "highest mean gap", "largest |gap| of a draw"],
            columns_fmt=["d", "+.3f", "+.3f", ".3f"],
        ),
        compute(
            "paper_a.lambda_critical_sim",
            "simulated lambda at gamma_c",
            lambda: at_rho("lambda", "simulated lambda at gamma_c(rho_hat)"),
            fmt=".3f",
            source=src,
        ),
        compute(
            "paper_a.lambda_critical_simplex",
            "simplex lambda at gamma_c",
            lambda: at_rho(
                "lambda_simplex_n", "finite-n simplex lambda at the draws' rho_hat (mean)"
            ),
            fmt=".3f",
            source=src,
        ),
        compute(
            "paper_a.lambda_critical_rho_hat",
            "rho_hat of the draws",
            lambda: at_rho("rho_hat", "realised mean cosine rho_hat (mean over draws)"),
            fmt=".3f",
            source=src,
        ),
        *grid_critical(critical, at_rho, src),
    ]


def _self_weight_by_n(F):
    d = F["d"].max()
    s = pick(F, d=d, quantity="self_weight", gamma_factor=1.0).sort_values("n")
    s = s.iloc[[0, -1]]
    return {
        "label": f"d = {int(d)}, rho = {s['rho'].iloc[0]:g}: A_ii at gamma_c(rho_hat) at "
        f"n = {int(s['n'].iloc[0])} / {int(s['n'].iloc[-1])}",
        "value": s["sim_mean"].tolist(),
        "se": s["sim_se"].tolist(),
        "pm": PM_DRAWS.format(k=int(s["trials"].iloc[0])),
    }


#: The finding of the finite-size panel, declared (a function of its table).
FINITE_SIZE_FINDINGS = [
    declare(
        "finite_size.self_weight",
        "self-weight against n",
        _self_weight_by_n,
        fmt=".3f",
        source=[FINITE_SIZE],
    )
]


def finite_size_findings(*, finite_size: pd.DataFrame) -> list[Finding]:
    """The self-weight deficit at gamma_c(rho_hat) against n (docs/paper-a.md#gaussian-near-simplex-tokens):
    the declarations :data:`FINITE_SIZE_FINDINGS`."""
    return evaluate(FINITE_SIZE_FINDINGS, finite_size)


def _rules_table(rules):
    nmax = rules["n"].max()
    over = rules.loc[rules["is_overlay_n"].astype(bool), "n"]
    if over.empty:
        raise NotAvailable("no overlay n")
    n_o = over.iloc[0]
    records = [
        [
            rule,
            float(pick(sub, n=n_o)["gamma_ratio"].iloc[0]),
            float(pick(sub, n=nmax)["gamma_ratio"].iloc[0]),
        ]
        for rule, sub in rules.groupby("rule", sort=False)
    ]
    return {
        "label": f"gamma_eff / gamma_c at the overlay n = {int(n_o)} and at n = {sci(nmax)}",
        "value": records,
    }


#: The finding of the scaling-rules figure, declared (a function of its table).
SCALING_RULES_FINDINGS = [
    declare(
        "scaling_rules.gamma_ratio",
        "scaling rules",
        _rules_table,
        kind="table",
        columns=["rule", "at the overlay n", "at the largest n"],
        columns_fmt=["", ".3f", ".3f"],
        source=[RULES],
    )
]


def scaling_rules_findings(*, rules: pd.DataFrame) -> list[Finding]:
    """gamma_eff / gamma_c of real models' rules under calibration A (docs/scaling-rules.md):
    the declarations :data:`SCALING_RULES_FINDINGS`."""
    return evaluate(SCALING_RULES_FINDINGS, rules)


Z0_SPREAD = "paper_a/z0_spread/*.csv"


def _z0_spread(tables):
    return frame(tables).sort_values(["n", "d", "gamma"])


def _z0_row(r) -> list:
    """One point of the z_0 spread table."""
    return [
        int(r["n"]),
        int(r["d"]),
        float(r["gamma"]),
        f"{r['mean_gaussian']:.3f} ± {r['se_gaussian']:.3f}",
        float(r["sd_gaussian"]),
        float(r["r2_on_z0_norm"]),
        f"{r['mean_fixed_norm']:.3f} ± {r['se_fixed_norm']:.4f}",
        float(r["sd_fixed_norm"]),
        float(r["rms_se_within"]),
        float(r["variance_ratio"]),
    ]


def _z0_table(tables):
    Z = _z0_spread(tables)
    return {
        "label": f"lambda over draws, rho = {Z.iloc[0]['rho']:g}: Gaussian z_0 against "
        "||z_0|| = 1 (the same draws and rows in both modes)",
        "value": [_z0_row(r) for _, r in Z.iterrows()],
    }


def _z0_range(tables, col, what):
    v = _z0_spread(tables)[col].astype(float)
    return {"label": what, "value": [float(v.min()), float(v.max())]}


def _estimand_gap(tables):
    Z = _z0_spread(tables)
    g = (Z["mean_gaussian"] - Z["mean_fixed_norm"]).astype(float)
    k = int(g.abs().to_numpy().argmax())
    return {
        "label": "largest |mean with Gaussian z_0 - mean with ||z_0|| = 1| over every point, "
        "then it over the Gaussian mean's SE",
        "value": [float(abs(g.iloc[k])), float(abs(g.iloc[k]) / Z["se_gaussian"].iloc[k])],
    }


#: The findings of the z_0 spread, declared (functions of the list of its tables).
VARIANCE_REDUCTION = [
    declare(
        "variance_reduction.table",
        "z_0 spread table",
        _z0_table,
        kind="table",
        source=[Z0_SPREAD],
        columns=[
            "n",
            "d",
            "gamma",
            "Gaussian z_0: mean ± SE",
            "sd over draws",
            "R^2 on ||z_0||^2",
            "||z_0|| = 1: mean ± SE",
            "sd over draws",
            "within-draw SE (rms)",
            "variance ratio",
        ],
        columns_fmt=["d", "d", "g", "", ".4f", ".3f", "", ".4f", ".4f", ".0f"],
    ),
    declare(
        "variance_reduction.r2_range",
        "R^2 range",
        partial(
            _z0_range,
            col="r2_on_z0_norm",
            what="fraction of the Gaussian draws' variance a line in ||z_0||^2 explains, range "
            "over every point",
        ),
        kind="range",
        fmt=".3f",
        source=[Z0_SPREAD],
    ),
    declare(
        "variance_reduction.ratio_range",
        "variance ratio range",
        partial(
            _z0_range,
            col="variance_ratio",
            what="variance with Gaussian z_0 over that with ||z_0|| = 1, range over every point",
        ),
        kind="range",
        fmt=".0f",
        source=[Z0_SPREAD],
    ),
    declare(
        "variance_reduction.estimand_gap",
        "estimand gap",
        _estimand_gap,
        fmt=".3f",
        source=[Z0_SPREAD],
    ),
]


def variance_reduction_findings(*, z0_spread: list) -> list[Finding]:
    """The draw-to-draw spread of the sampled lambda with the Gaussian ``z_0`` and with
    ``||z_0|| = 1``, where the configuration measures it (rule ``paper_a_z0_spread``;
    docs/long-context.md#variance-reduction): the declarations :data:`VARIANCE_REDUCTION`."""
    return evaluate(VARIANCE_REDUCTION, z0_spread)
