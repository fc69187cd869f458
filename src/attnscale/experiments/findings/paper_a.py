"""Findings of Paper A's figures (docs/paper-a.md, docs/scaling-rules.md): lambda at the
critical line against the finite-n simplex, the theorem table (simplex and finite-d theory), the
finite-size panel and the scaling rules of real models."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.experiments.findings.grid import GRID_NAMES, grid_critical
from attnscale.experiments.findings.record import (
    PM_DRAWS,
    Finding,
    NotAvailable,
    compute,
    frame,
    mean_se_count,
    pick,
    sci,
)

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
]

CRITICAL = "paper_a/lambda_critical_data.csv"
THEOREM = "paper_a/theorem_table.csv"
FINITE_SIZE = "paper_a/finite_size_data.csv"
RULES = "paper_a/scaling_rules.csv"

#: rho values at which lambda at gamma_c is reported (where the grid has them) [choice].
REPORT_RHO = (0.2, 0.5, 0.8)
#: (d, rho) of the theorem table's self-weight quoted in docs/finite-d.md [choice].
THEOREM_POINT = (32, 0.5)


def critical_lambda_findings(*, critical: pd.DataFrame) -> list[Finding]:
    """Simulated lambda at gamma_c(rho_hat) against the exact finite-n simplex value at the draw's
    rho_hat (docs/paper-a.md#gaussian-near-simplex-tokens)."""
    k = critical["trial"].nunique()
    dmax = int(critical["d"].max())

    def gap_table():
        rows = []
        for d, sub in critical.groupby("d", sort=False):
            means = sub.groupby("rho")["diff_vs_simplex_n"].mean()
            rows.append(
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
            "value": rows,
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


def theorem_findings(*, theorem: pd.DataFrame) -> list[Finding]:
    """The theorem table: simulated self-weight, cosine, lambda and eta at gamma_c / 2, gamma_c and
    2 gamma_c against the simplex theory and the finite-d theory (docs/paper-a.md,
    docs/finite-d.md#mean-field-for-cosine-and-lambda)."""
    T = theorem
    k = int(T["trials"].max())
    src = [THEOREM]

    def counts():
        rows = []
        for d, sub in T.groupby("d", sort=False):
            fd = sub[sub["finite_d"].notna()]
            a0 = fd[fd["alpha"] == 0.0]
            sw = a0[a0["quantity"] == "self_weight"]
            rows.append(
                [
                    int(d),
                    f"{int(sub['within_2se'].sum())} of {len(sub)}",
                    f"{int(a0['accept_fd'].sum())} of {len(a0)}" if len(a0) else "n/a",
                    f"{int(a0['within_2se_fd'].sum())} / {int(a0['within_3se_fd'].sum())} of "
                    f"{len(a0)}"
                    if len(a0)
                    else "n/a",
                    float(sw["z_fd"].abs().max()) if len(sw) else None,
                ]
            )
        return {
            "label": f"rows of the theorem table ({k} draws each) that agree with the theory",
            "value": rows,
            "note": "finite-d criterion |sim - theory| <= max(3 SE, 0.002), alpha = 0 rows, "
            "theory conditioned on each draw's ||z_0|| (docs/finite-d.md)",
        }

    def accepted(quantity=None):
        def fn():
            fd = T[T["finite_d"].notna()]
            if quantity is None:
                fd, what = fd[fd["alpha"] == 0.0], "alpha = 0 rows"
            else:
                fd, what = fd[fd["quantity"] == quantity], f"{quantity} rows (every alpha)"
            if fd.empty:
                raise NotAvailable("no finite-d theory in the theorem table")
            return {
                "label": f"theorem-table {what} where the finite-d theory is accepted, "
                f"|sim - theory| <= max(3 SE, 0.002) (every d >= 3, rho, gamma; {k} draws each)",
                "value": [int(fd["accept_fd"].sum()), len(fd)],
            }

        return fn

    def critical_self_weight():
        rows = []
        for d, sub in T.groupby("d", sort=False):
            s = sub[
                (sub["quantity"] == "self_weight")
                & (sub["gamma_factor"] == 1.0)
                & (sub["alpha"] == 0.0)
            ]
            if s.empty:
                continue
            rows.append(
                [
                    int(d),
                    float(s["sim_mean"].min()),
                    float(s["sim_mean"].max()),
                    float(s["finite_d"].min()) if s["finite_d"].notna().any() else None,
                    float(s["finite_d"].max()) if s["finite_d"].notna().any() else None,
                ]
            )
        if not rows:
            raise NotAvailable("no gamma_c rows")
        return {
            "label": "self-weight A_ii at gamma_c(rho_hat) (simplex value 1/2), range over rho: "
            "simulated and finite-d theory",
            "value": rows,
        }

    def critical_eta():
        d = T["d"].max()
        s = pick(T, d=d, quantity="eta", gamma_factor=1.0, alpha=0.0).sort_values("rho")
        rows = [
            [r["rho"], f"{r['sim_mean']:.4f} ± {r['sim_se']:.4f}", r["limit"], r["simplex_n"]]
            for _, r in s.iterrows()
        ]
        return {
            "label": f"d = {int(d)}: eta at gamma_c(rho_hat) against the n -> infinity limit "
            "(1 - 1/d)/(4 q_hat) and the finite-n simplex value",
            "value": rows,
        }

    def residual_eta():
        d = T["d"].max()
        s = T[(T["d"] == d) & (T["quantity"] == "eta") & (T["alpha"] > 0)]
        if s.empty:
            raise NotAvailable("no alpha > 0 rows")
        s = s.sort_values(["alpha", "gamma_factor", "rho"])
        rows = [
            [
                r["alpha"],
                r["gamma_factor"],
                r["rho"],
                f"{r['sim_mean']:.4f} ± {r['sim_se']:.4f}",
                r["limit"],
            ]
            for _, r in s.iterrows()
        ]
        return {
            "label": f"d = {int(d)}, with the residual: eta simulated against our derived "
            "n -> infinity limit",
            "value": rows,
        }

    def failing():
        fd = T[T["finite_d"].notna() & (T["alpha"] == 0.0) & ~T["accept_fd"].astype(bool)]
        rows = [
            [
                int(r["d"]),
                r["rho"],
                r["gamma_factor"],
                r["quantity"],
                r["sim_mean"],
                r["finite_d"],
                r["z_fd"],
            ]
            for _, r in fd.iterrows()
        ]
        return {"label": "rows that fail the finite-d criterion", "value": rows}

    def point(simulated):
        d, rho = THEOREM_POINT
        s = pick(T, d=d, rho=rho, alpha=0.0, quantity="self_weight").sort_values("gamma_factor")
        at = (
            f"d = {d}, n = {int(s['n'].iloc[0])}, rho = {rho:g}, gamma = "
            + " / ".join(f"{f:g}" for f in s["gamma_factor"])
            + " gamma_c(rho_hat)"
        )
        if simulated:
            return {
                "label": f"{at}: simulated self-weight A_ii",
                "value": s["sim_mean"].tolist(),
                "se": s["sim_se"].tolist(),
            }
        return {
            "label": f"{at}: finite-d theory of A_ii (conditioned on each draw's ||z_0||)",
            "value": s["finite_d"].tolist(),
        }

    return [
        compute(
            "theorem.self_weight_point_sim",
            "self-weight at one point",
            lambda: point(True),
            fmt=".4f",
            source=src,
            pm=PM_DRAWS.format(k=k),
        ),
        compute(
            "theorem.self_weight_point_theory",
            "finite-d self-weight at one point",
            lambda: point(False),
            fmt=".4f",
            source=src,
        ),
        compute(
            "theorem.agreement",
            "agreement counts",
            counts,
            kind="table",
            source=src,
            columns=[
                "d",
                "within 2 SE of the simplex theory",
                "finite-d criterion met",
                "finite-d within 2 SE / 3 SE",
                "largest |z| of the self-weight (finite d)",
            ],
            columns_fmt=["d", "", "", "", ".2f"],
            pm=PM_DRAWS.format(k=k),
        ),
        compute(
            "theorem.finite_d_accepted",
            "finite-d rows accepted",
            accepted(),
            kind="count",
            source=src,
        ),
        compute(
            "theorem.eta_finite_d_accepted",
            "finite-d eta rows accepted",
            accepted("eta"),
            kind="count",
            source=src,
        ),
        compute(
            "theorem.critical_self_weight",
            "critical self-weight",
            critical_self_weight,
            kind="table",
            source=src,
            columns=["d", "simulated low", "simulated high", "finite-d low", "finite-d high"],
            columns_fmt=["d", ".3f", ".3f", ".3f", ".3f"],
        ),
        compute(
            "theorem.critical_eta",
            "critical eta",
            critical_eta,
            kind="table",
            source=src,
            columns=["rho", "simulated ± SE", "limit", "finite-n simplex"],
            columns_fmt=["g", "", ".4f", ".4f"],
            pm=PM_DRAWS.format(k=k),
        ),
        compute(
            "theorem.residual_eta",
            "eta with a residual",
            residual_eta,
            kind="table",
            source=src,
            columns=["alpha", "gamma / gamma_c", "rho", "simulated ± SE", "limit"],
            columns_fmt=["g", "g", "g", "", ".4f"],
            pm=PM_DRAWS.format(k=k),
        ),
        compute(
            "theorem.finite_d_failures",
            "finite-d failures",
            failing,
            kind="table",
            source=src,
            columns=["d", "rho", "gamma / gamma_c", "quantity", "simulated", "finite-d", "z"],
            columns_fmt=["d", "g", "g", "", ".4f", ".4f", ".2f"],
        ),
    ]


def finite_size_findings(*, finite_size: pd.DataFrame) -> list[Finding]:
    """The self-weight deficit at gamma_c(rho_hat) against n (docs/paper-a.md#gaussian-near-simplex-tokens)."""

    def by_n():
        d = finite_size["d"].max()
        s = pick(finite_size, d=d, quantity="self_weight", gamma_factor=1.0).sort_values("n")
        s = s.iloc[[0, -1]]
        return {
            "label": f"d = {int(d)}, rho = {s['rho'].iloc[0]:g}: A_ii at gamma_c(rho_hat) at "
            f"n = {int(s['n'].iloc[0])} / {int(s['n'].iloc[-1])}",
            "value": s["sim_mean"].tolist(),
            "se": s["sim_se"].tolist(),
            "pm": PM_DRAWS.format(k=int(s["trials"].iloc[0])),
        }

    return [
        compute(
            "finite_size.self_weight",
            "self-weight against n",
            by_n,
            fmt=".3f",
            source=[FINITE_SIZE],
        )
    ]


def scaling_rules_findings(*, rules: pd.DataFrame) -> list[Finding]:
    """gamma_eff / gamma_c of real models' rules under calibration A (docs/scaling-rules.md)."""

    def table():
        nmax = rules["n"].max()
        over = rules.loc[rules["is_overlay_n"].astype(bool), "n"]
        if over.empty:
            raise NotAvailable("no overlay n")
        n_o = over.iloc[0]
        rows = []
        for rule, sub in rules.groupby("rule", sort=False):
            rows.append(
                [
                    rule,
                    float(pick(sub, n=n_o)["gamma_ratio"].iloc[0]),
                    float(pick(sub, n=nmax)["gamma_ratio"].iloc[0]),
                ]
            )
        return {
            "label": f"gamma_eff / gamma_c at the overlay n = {int(n_o)} and at n = {sci(nmax)}",
            "value": rows,
        }

    return [
        compute(
            "scaling_rules.gamma_ratio",
            "scaling rules",
            table,
            kind="table",
            columns=["rule", "at the overlay n", "at the largest n"],
            columns_fmt=["", ".3f", ".3f"],
            source=[RULES],
        )
    ]


def variance_reduction_findings(*, z0_spread: list) -> list[Finding]:
    """The draw-to-draw spread of the sampled lambda with the Gaussian ``z_0`` and with
    ``||z_0|| = 1``, where the configuration measures it (rule ``paper_a_z0_spread``;
    docs/long-context.md#variance-reduction)."""
    src = ["paper_a/z0_spread/*.csv"]

    def data():
        return frame(z0_spread).sort_values(["n", "d", "gamma"])

    def table():
        Z = data()
        rows = [
            [
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
            for _, r in Z.iterrows()
        ]
        first = Z.iloc[0]
        return {
            "label": f"lambda over draws, rho = {first['rho']:g}: Gaussian z_0 against ||z_0|| = 1 "
            "(the same draws and rows in both modes)",
            "value": rows,
        }

    def rng(col, what):
        def fn():
            v = data()[col].astype(float)
            return {"label": what, "value": [float(v.min()), float(v.max())]}

        return fn

    def gap():
        Z = data()
        g = (Z["mean_gaussian"] - Z["mean_fixed_norm"]).astype(float)
        k = int(g.abs().to_numpy().argmax())
        return {
            "label": "largest |mean with Gaussian z_0 - mean with ||z_0|| = 1| over every point, "
            "then it over the Gaussian mean's SE",
            "value": [float(abs(g.iloc[k])), float(abs(g.iloc[k]) / Z["se_gaussian"].iloc[k])],
        }

    return [
        compute(
            "variance_reduction.table",
            "z_0 spread table",
            table,
            kind="table",
            source=src,
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
        compute(
            "variance_reduction.r2_range",
            "R^2 range",
            rng(
                "r2_on_z0_norm",
                "fraction of the Gaussian draws' variance a line in ||z_0||^2 "
                "explains, range over every point",
            ),
            kind="range",
            fmt=".3f",
            source=src,
        ),
        compute(
            "variance_reduction.ratio_range",
            "variance ratio range",
            rng(
                "variance_ratio",
                "variance with Gaussian z_0 over that with ||z_0|| = 1, range over every point",
            ),
            kind="range",
            fmt=".0f",
            source=src,
        ),
        compute(
            "variance_reduction.estimand_gap",
            "estimand gap",
            gap,
            fmt=".3f",
            source=src,
        ),
    ]
