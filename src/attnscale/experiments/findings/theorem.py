"""Findings of Paper A's theorem table (docs/paper-a.md, docs/finite-d.md#mean-field-for-cosine-and-lambda):
simulated self-weight, cosine, lambda and eta at gamma_c / 2, gamma_c and 2 gamma_c against the
simplex theory and the finite-d theory."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import pandas as pd

from attnscale.experiments.findings.record import (
    PM_DRAWS,
    Finding,
    NotAvailable,
    declare,
    evaluate,
    pick,
)

__all__ = ["THEOREM", "THEOREM_POINT", "THEOREM_FINDINGS", "theorem_findings"]

THEOREM = "paper_a/theorem_table.csv"

#: (d, rho) of the theorem table's self-weight quoted in docs/finite-d.md [choice].
THEOREM_POINT = (32, 0.5)

#: The finite-d criterion, in the words of the labels and notes.
_CRITERION = "|sim - theory| <= max(3 SE, 0.002)"


def _draws(T) -> int:
    """Draws per row of the theorem table."""
    return int(T["trials"].max())


def _of(mask, n) -> str:
    return f"{int(mask.sum())} of {n}"


def _agreement_row(d, sub) -> list:
    """One row of the agreement table: d, the simplex count, the finite-d counts (alpha = 0
    rows) and the largest |z| of the self-weight against the finite-d theory."""
    a0 = sub[sub["finite_d"].notna() & (sub["alpha"] == 0.0)]
    sw = a0[a0["quantity"] == "self_weight"]
    n = len(a0)
    return [
        int(d),
        _of(sub["within_2se"], len(sub)),
        _of(a0["accept_fd"], n) if n else "n/a",
        f"{int(a0['within_2se_fd'].sum())} / {_of(a0['within_3se_fd'], n)}" if n else "n/a",
        float(sw["z_fd"].abs().max()) if len(sw) else None,
    ]


def _counts(T):
    return {
        "label": f"rows of the theorem table ({_draws(T)} draws each) that agree with the theory",
        "value": [_agreement_row(d, sub) for d, sub in T.groupby("d", sort=False)],
        "note": f"finite-d criterion {_CRITERION}, alpha = 0 rows, "
        "theory conditioned on each draw's ||z_0|| (docs/finite-d.md)",
    }


def _accepted(T, quantity=None):
    fd = T[T["finite_d"].notna()]
    if quantity is None:
        fd, what = fd[fd["alpha"] == 0.0], "alpha = 0 rows"
    else:
        fd, what = fd[fd["quantity"] == quantity], f"{quantity} rows (every alpha)"
    if fd.empty:
        raise NotAvailable("no finite-d theory in the theorem table")
    return {
        "label": f"theorem-table {what} where the finite-d theory is accepted, "
        f"{_CRITERION} (every d >= 3, rho, gamma; {_draws(T)} draws each)",
        "value": [int(fd["accept_fd"].sum()), len(fd)],
    }


def _range(col: pd.Series) -> list:
    """``[min, max]`` of ``col``, ``[None, None]`` if it holds no value."""
    if not col.notna().any():
        return [None, None]
    return [float(col.min()), float(col.max())]


def _critical_self_weight(T):
    records = []
    for d, sub in T.groupby("d", sort=False):
        s = sub[
            (sub["quantity"] == "self_weight")
            & (sub["gamma_factor"] == 1.0)
            & (sub["alpha"] == 0.0)
        ]
        if not s.empty:
            records.append([int(d), *_range(s["sim_mean"]), *_range(s["finite_d"])])
    if not records:
        raise NotAvailable("no gamma_c rows")
    return {
        "label": "self-weight A_ii at gamma_c(rho_hat) (simplex value 1/2), range over rho: "
        "simulated and finite-d theory",
        "value": records,
    }


def _sim(r) -> str:
    """A simulated mean with its SE as a table cell."""
    return f"{r['sim_mean']:.4f} ± {r['sim_se']:.4f}"


def _critical_eta(T):
    d = T["d"].max()
    s = pick(T, d=d, quantity="eta", gamma_factor=1.0, alpha=0.0).sort_values("rho")
    return {
        "label": f"d = {int(d)}: eta at gamma_c(rho_hat) against the n -> infinity limit "
        "(1 - 1/d)/(4 q_hat) and the finite-n simplex value",
        "value": [[r["rho"], _sim(r), r["limit"], r["simplex_n"]] for _, r in s.iterrows()],
    }


def _residual_eta(T):
    d = T["d"].max()
    s = T[(T["d"] == d) & (T["quantity"] == "eta") & (T["alpha"] > 0)]
    if s.empty:
        raise NotAvailable("no alpha > 0 rows")
    s = s.sort_values(["alpha", "gamma_factor", "rho"])
    return {
        "label": f"d = {int(d)}, with the residual: eta simulated against our derived "
        "n -> infinity limit",
        "value": [
            [r["alpha"], r["gamma_factor"], r["rho"], _sim(r), r["limit"]] for _, r in s.iterrows()
        ],
    }


def _failing(T):
    fd = T[T["finite_d"].notna() & (T["alpha"] == 0.0) & ~T["accept_fd"].astype(bool)]
    cols = ["rho", "gamma_factor", "quantity", "sim_mean", "finite_d", "z_fd"]
    records = [[int(r["d"]), *(r[c] for c in cols)] for _, r in fd.iterrows()]
    return {"label": "rows that fail the finite-d criterion", "value": records}


def _point(T):
    """The self-weight rows at :data:`THEOREM_POINT` (alpha = 0) by gamma, and where they are."""
    d, rho = THEOREM_POINT
    s = pick(T, d=d, rho=rho, alpha=0.0, quantity="self_weight").sort_values("gamma_factor")
    at = (
        f"d = {d}, n = {int(s['n'].iloc[0])}, rho = {rho:g}, gamma = "
        + " / ".join(f"{f:g}" for f in s["gamma_factor"])
        + " gamma_c(rho_hat)"
    )
    return s, at


def _point_sim(T):
    s, at = _point(T)
    return {
        "label": f"{at}: simulated self-weight A_ii",
        "value": s["sim_mean"].tolist(),
        "se": s["sim_se"].tolist(),
    }


def _point_theory(T):
    s, at = _point(T)
    return {
        "label": f"{at}: finite-d theory of A_ii (conditioned on each draw's ||z_0||)",
        "value": s["finite_d"].tolist(),
    }


def _table(key, label, fn, columns, columns_fmt, **meta):
    return declare(
        key,
        label,
        fn,
        kind="table",
        source=[THEOREM],
        columns=columns,
        columns_fmt=columns_fmt,
        **meta,
    )


#: The findings of the theorem table, declared (functions of the table). ``pm`` holds ``{k}``,
#: filled with the table's draws per row by :func:`theorem_findings`.
THEOREM_FINDINGS = [
    declare(
        "theorem.self_weight_point_sim",
        "self-weight at one point",
        _point_sim,
        fmt=".4f",
        source=[THEOREM],
        pm=PM_DRAWS,
    ),
    declare(
        "theorem.self_weight_point_theory",
        "finite-d self-weight at one point",
        _point_theory,
        fmt=".4f",
        source=[THEOREM],
    ),
    _table(
        "theorem.agreement",
        "agreement counts",
        _counts,
        [
            "d",
            "within 2 SE of the simplex theory",
            "finite-d criterion met",
            "finite-d within 2 SE / 3 SE",
            "largest |z| of the self-weight (finite d)",
        ],
        ["d", "", "", "", ".2f"],
        pm=PM_DRAWS,
    ),
    declare(
        "theorem.finite_d_accepted",
        "finite-d rows accepted",
        _accepted,
        kind="count",
        source=[THEOREM],
    ),
    declare(
        "theorem.eta_finite_d_accepted",
        "finite-d eta rows accepted",
        partial(_accepted, quantity="eta"),
        kind="count",
        source=[THEOREM],
    ),
    _table(
        "theorem.critical_self_weight",
        "critical self-weight",
        _critical_self_weight,
        ["d", "simulated low", "simulated high", "finite-d low", "finite-d high"],
        ["d", ".3f", ".3f", ".3f", ".3f"],
    ),
    _table(
        "theorem.critical_eta",
        "critical eta",
        _critical_eta,
        ["rho", "simulated ± SE", "limit", "finite-n simplex"],
        ["g", "", ".4f", ".4f"],
        pm=PM_DRAWS,
    ),
    _table(
        "theorem.residual_eta",
        "eta with a residual",
        _residual_eta,
        ["alpha", "gamma / gamma_c", "rho", "simulated ± SE", "limit"],
        ["g", "g", "g", "", ".4f"],
        pm=PM_DRAWS,
    ),
    _table(
        "theorem.finite_d_failures",
        "finite-d failures",
        _failing,
        ["d", "rho", "gamma / gamma_c", "quantity", "simulated", "finite-d", "z"],
        ["d", "g", "g", "", ".4f", ".4f", ".2f"],
    ),
]


def theorem_findings(*, theorem: pd.DataFrame) -> list[Finding]:
    """The theorem table: simulated self-weight, cosine, lambda and eta at gamma_c / 2, gamma_c and
    2 gamma_c against the simplex theory and the finite-d theory (docs/paper-a.md,
    docs/finite-d.md#mean-field-for-cosine-and-lambda): the declarations
    :data:`THEOREM_FINDINGS`, "+-" over the table's draws per row."""
    k = _draws(theorem)
    return [replace(f, pm=f.pm.format(k=k)) for f in evaluate(THEOREM_FINDINGS, theorem)]
