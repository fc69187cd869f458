"""Theory values at the points the theory pages discuss (docs/pipeline.md#numbers-in-the-prose).

The pages compare the library's theory with simple limits and with the numbers of the derivations
we started from at a few points of (n, d, rho). Those values are results of the library, so they
are findings too: each function here belongs to a figure family, reads that family's table
(which says that the family is configured and, where it holds them, gives the sizes), and
computes the values from the library at the points below, which are [choice]s of the pages;
each finding's note says that it comes from the library.

* :func:`finite_d_points_findings` (docs/finite-d.md): the exact and the annealed beta* at the
  points of the derivation we started from, the draw-averaged and the conditioned self-weight at
  one point, the first-order and the exact shift above gamma_c ln n, and the constant of the
  power law.
* :func:`simplex_findings` (docs/paper-a.md): the finite-n simplex lambda at gamma_c and the
  finite-size bias of the simplex eta.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.experiments.findings.paper_a import REPORT_RHO
from attnscale.experiments.findings.record import (
    Finding,
    NotAvailable,
    compute,
    near,
    pick,
    sci,
)

__all__ = [
    "START_POINTS",
    "SELF_WEIGHT_POINT",
    "SHIFT_POINT",
    "INTENSITY_D",
    "ETA_SIZES",
    "ETA_LARGE_N",
    "finite_d_points_findings",
    "simplex_findings",
]

THEORY = "finite_d/transition_theory.csv"
CRITICAL = "paper_a/lambda_critical_data.csv"
THEOREM = "paper_a/theorem_table.csv"

#: rho = 0 points (d, n) of the derivation we started from (docs/finite-d.md) [choice].
START_POINTS = (
    (64, 256),
    (64, 2048),
    (16, 256),
    (16, 2048),
    (8, 256),
    (8, 2048),
    (4, 256),
    (4, 2048),
)
#: (d, n, rho, gamma/gamma_c factors) of the self-weight comparison in docs/finite-d.md [choice].
SELF_WEIGHT_POINT = (32, 1024, 0.5, (0.5, 1.0, 2.0))
#: (n, rho, d values) of the first-order shift in docs/finite-d.md [choice].
SHIFT_POINT = (1024, 0.5, (512, 128))
#: Dimensions at which the power law's constant Lambda*_d is quoted [choice].
INTENSITY_D = (3, 4, 8)
#: n = d of the simplex-eta table in docs/paper-a.md (rho = 0.5, q = 1, gamma_c) [choice].
ETA_SIZES = (48, 256, 1024, 4096, 16384)
#: n = d at which the exact bias is compared with its leading order [choice].
ETA_LARGE_N = 2**20

_LIB = "computed from the library ({}) at these points, which the table need not hold"


def _pairs(points) -> str:
    return " / ".join(f"({d}, {n})" for d, n in points)


def finite_d_points_findings(*, theory: pd.DataFrame) -> list[Finding]:
    """The finite-d theory at the points of docs/finite-d.md (exact critical point, annealed and
    first-order approximations, the Poisson constant of the power law)."""
    from attnscale.layer import finite_d
    from attnscale.layer.finite_d import approx

    src = [THEORY]

    def configured(rho):
        pick(theory, kind="grid", rho=rho)  # the transition theory is configured at this rho

    def start_points(fn):
        configured(0.0)
        return {"value": [fn(n, d, 0.0) for d, n in START_POINTS]}

    def self_weight(given):
        d, n, rho, factors = SELF_WEIGHT_POINT
        configured(rho)
        betas = [f * np.log(n) / (1.0 - rho) for f in factors]
        if given:
            vals = [finite_d.self_weight_given(n, d, rho, b, 1.0) for b in betas]
        else:
            vals = [finite_d.self_weight(n, d, rho, b) for b in betas]
        return {"value": vals}

    def shift(fn):
        n, rho, dims = SHIFT_POINT
        configured(rho)
        line = np.log(n) / (1.0 - rho)
        return {"value": [100.0 * (fn(n, d, rho) / line - 1.0) for d in dims]}

    def intensity():
        configured(0.0)
        return {"value": [approx.poisson_critical_intensity(d) for d in INTENSITY_D]}

    d, n, rho, factors = SELF_WEIGHT_POINT
    n1, rho1, dims = SHIFT_POINT
    at = f"d = {d}, n = {n}, rho = {rho:g}, gamma = " + " / ".join(f"{f:g}" for f in factors)
    shift_at = f"n = {n1}, rho = {rho1:g}, d = " + " / ".join(str(x) for x in dims)
    return [
        compute(
            "finite_d.start_points_beta_star",
            f"rho = 0, (d, n) = {_pairs(START_POINTS)}: exact beta*",
            lambda: start_points(finite_d.critical_beta),
            fmt=".4g",
            source=src,
            note=_LIB.format("attnscale.layer.finite_d.critical_beta"),
        ),
        compute(
            "finite_d.start_points_annealed",
            f"rho = 0, (d, n) = {_pairs(START_POINTS)}: annealed beta*",
            lambda: start_points(finite_d.annealed_critical_beta),
            fmt=".4g",
            source=src,
            note=_LIB.format("attnscale.layer.finite_d.annealed_critical_beta"),
        ),
        compute(
            "finite_d.start_point_self_weight",
            f"{at} gamma_c: E[A_ii] averaged over the draw",
            lambda: self_weight(False),
            fmt=".4f",
            source=src,
            note=_LIB.format("attnscale.layer.finite_d.self_weight"),
        ),
        compute(
            "finite_d.start_point_self_weight_given",
            f"{at} gamma_c: E[A_ii] conditioned on ||z_0|| = 1",
            lambda: self_weight(True),
            fmt=".4f",
            source=src,
            note=_LIB.format("attnscale.layer.finite_d.self_weight_given"),
        ),
        compute(
            "finite_d.first_order_above_gamma_c",
            f"{shift_at}: first-order beta*_1 over gamma_c ln n, minus 1",
            lambda: shift(finite_d.first_order_critical_beta),
            fmt=".2f",
            unit="%",
            source=src,
            note=_LIB.format("attnscale.layer.finite_d.first_order_critical_beta"),
        ),
        compute(
            "finite_d.exact_above_gamma_c",
            f"{shift_at}: exact beta* over gamma_c ln n, minus 1",
            lambda: shift(finite_d.critical_beta),
            fmt=".2f",
            unit="%",
            source=src,
            note=_LIB.format("attnscale.layer.finite_d.critical_beta"),
        ),
        compute(
            "finite_d.poisson_critical_intensity",
            "Lambda*_d, the Poisson intensity at which E[A_ii] = 1/2, at d = "
            + " / ".join(str(x) for x in INTENSITY_D),
            intensity,
            fmt=".3g",
            source=src,
            note=_LIB.format("attnscale.layer.finite_d.approx.poisson_critical_intensity"),
        ),
    ]


def simplex_findings(*, critical: pd.DataFrame, theorem: pd.DataFrame) -> list[Finding]:
    """The finite-n simplex map of docs/paper-a.md at the run's n: lambda at gamma_c against its
    limit, and the finite-size bias of eta at criticality."""
    from attnscale.layer import theory

    def lambda_at_gamma_c():
        n = int(critical["n"].iloc[0])
        rhos = [r for r in REPORT_RHO if near(critical["rho"], r).any()]
        if not rhos:
            raise NotAvailable(f"no rho of {REPORT_RHO} in the table")
        return {
            "label": f"n = {n}, gamma = gamma_c: finite-n simplex lambda at rho = "
            + " / ".join(f"{r:g}" for r in rhos),
            "value": [theory.simplex_lambda(n, r, theory.gamma_c(r) * np.log(n)) for r in rhos],
        }

    def bias(n, d):
        beta = theory.gamma_c(0.5) * np.log(n)
        return theory.simplex_eta(n, d, 0.5, beta) - theory.eta_limit(0.5, theory.gamma_c(0.5), d)

    def eta_table():
        pick(theorem, quantity="eta")  # the theorem table has eta rows
        records = []
        for n in ETA_SIZES:
            beta = theory.gamma_c(0.5) * np.log(n)
            lim = theory.eta_limit(0.5, theory.gamma_c(0.5), n)
            records.append([n, lim + bias(n, n), lim, bias(n, n) * n / beta])
        return {"value": records}

    def bias_large():
        pick(theorem, quantity="eta")
        n = ETA_LARGE_N
        return {"value": bias(n, n) * n / (theory.gamma_c(0.5) * np.log(n))}

    def bias_run():
        s = pick(theorem, quantity="eta")
        n, d = int(s["n"].iloc[0]), int(s["d"].max())
        return {
            "label": f"n = {n}, d = {d}, rho = 0.5, gamma = gamma_c: simplex eta minus its limit "
            "(1 - 1/d)/4",
            "value": bias(n, d),
        }

    lib = _LIB.format("attnscale.layer.theory.simplex_lambda")
    lib_eta = _LIB.format("attnscale.layer.theory.simplex_eta and eta_limit")
    return [
        compute(
            "paper_a.simplex_lambda_at_gamma_c",
            "simplex lambda at gamma_c",
            lambda_at_gamma_c,
            fmt=".4f",
            source=[CRITICAL],
            note=lib,
        ),
        compute(
            "paper_a.simplex_eta_table",
            "n = d, rho = 0.5, q = 1, beta = gamma_c ln n: finite-n simplex eta, its limit "
            "and the bias times d / beta",
            eta_table,
            kind="table",
            source=[THEOREM],
            columns=["n = d", "simplex eta", "limit (1 - 1/d)/4", "bias x d / beta"],
            columns_fmt=["d", ".4f", ".4f", ".2f"],
            note=lib_eta,
        ),
        compute(
            "paper_a.simplex_eta_bias_large",
            f"n = d = {sci(ETA_LARGE_N)}, rho = 0.5, gamma = gamma_c: exact bias of the "
            "simplex eta times d / beta",
            bias_large,
            fmt=".3f",
            source=[THEOREM],
            note=lib_eta,
        ),
        compute(
            "paper_a.simplex_eta_bias_run",
            "simplex eta bias at the run's n and d",
            bias_run,
            fmt=".3g",
            source=[THEOREM],
            note=lib_eta,
        ),
    ]
