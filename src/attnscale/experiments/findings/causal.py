"""Findings of the causal-mask figures (docs/realistic-attention.md#causal-mask,
docs/realistic-attention.md#real-models-scaling-rules-simulated): global against per-position
scaling, and real models' rules simulated under a causal mask."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core import stats
from attnscale.core.crossings import WIDTH_FRACTIONS, crossing_x
from attnscale.experiments.findings.record import (
    PM_DRAWS,
    Finding,
    NotAvailable,
    declare,
    evaluate,
    frame,
    mean_se_count,
    pick,
)
from attnscale.layer.theory import critical_lambda

__all__ = [
    "LAMBDA",
    "SELF",
    "RULES",
    "LATE_POSITION",
    "REPORT_RHO",
    "causal_findings",
    "rules_simulated_findings",
]

LAMBDA = "realistic/causal/lambda/trial*.csv"
SELF = "realistic/causal/self_weight/trial*.csv"
RULES = "realistic/rules_simulated/n*.csv"

#: Positions counted as "late" for the per-position self-weight [choice].
LATE_POSITION = 64
#: rho values at which lambda at gamma_c is reported (where the grid has them) [choice].
REPORT_RHO = (0.2, 0.5, 0.8)


def _grid(L: pd.DataFrame, scaling: str, col: str = "lambda") -> pd.DataFrame:
    """Draw means of ``col`` and rho_hat per (rho, gamma) on the grid of one scaling."""
    g = pick(L, kind="grid", scaling=scaling)
    return g.groupby(["rho", "gamma"], as_index=False)[[col, "rho_hat"]].mean()


def _bins(t, scaling, factor):
    s = pick(t["S"], scaling=scaling, gamma_factor=factor)
    return (
        s.groupby(["pos_lo", "pos_hi"], as_index=False)[["self_weight", "self_weight_simplex"]]
        .mean()
        .sort_values("pos_lo")
    )


def _global_above(t):
    b = _bins(t, "global", 1.0)
    below = b[b["self_weight"] <= 0.9]
    last = b["pos_hi"].max() if below.empty else below["pos_lo"].min() - 1
    return {
        "label": f"global scaling at gamma_c(rho_hat), n = {int(t['S']['n'].iloc[0])}: mean A_ii "
        "above 0.9 at every position up to i =",
        "value": int(last),
        "fmt": "d",
    }


def _global_average(t):
    b = _bins(t, "global", 1.0)
    w = b["pos_hi"] - b["pos_lo"] + 1
    return {
        "label": "global scaling at gamma_c(rho_hat): A_ii averaged over positions, "
        "simulated / causal simplex",
        "value": [
            float(np.average(b["self_weight"], weights=w)),
            float(np.average(b["self_weight_simplex"], weights=w)),
        ],
    }


def _position_critical(t):
    b = _bins(t, "position", 1.0)
    b = b[b["pos_lo"] >= LATE_POSITION]
    if b.empty:
        raise NotAvailable(f"no positions >= {LATE_POSITION}")
    w = b["pos_hi"] - b["pos_lo"] + 1
    return {
        "label": f"per-position scaling at gamma_c(rho_hat): A_ii averaged over positions "
        f"i >= {LATE_POSITION}, simulated / simplex i/(2i-1)",
        "value": [
            float(np.average(b["self_weight"], weights=w)),
            float(np.average(b["self_weight_simplex"], weights=w)),
        ],
    }


def _position_last_bin(t):
    factors = sorted(pick(t["S"], scaling="position")["gamma_factor"].unique())
    return {
        "label": "per-position scaling: A_ii in the last position bin at gamma / gamma_c = "
        + " / ".join(f"{f:.3g}" for f in factors),
        "value": [float(_bins(t, "position", f)["self_weight"].iloc[-1]) for f in factors],
    }


def _critical_rhos(t):
    c = pick(t["L"], kind="critical", scaling=t["scaling"])
    rhos = [r for r in REPORT_RHO if np.isclose(c["rho"], r).any()]
    if not rhos:
        raise NotAvailable(f"none of rho = {REPORT_RHO} on the grid")
    return c, rhos


def _lambda_at_critical(t, scaling):
    c, rhos = _critical_rhos(dict(t, scaling=scaling))
    vals, ses = [], []
    for r in rhos:
        m, se, _ = mean_se_count(pick(c, rho=r)["lambda"])
        vals.append(m)
        ses.append(se)
    return {
        "label": f"{scaling} scaling: lambda at gamma_c(rho_hat) for rho = "
        + " / ".join(f"{r:g}" for r in rhos),
        "value": vals,
        "se": ses,
        "pm": PM_DRAWS.format(k=t["L"]["trial"].nunique()),
    }


def _bidirectional(t):
    c, rhos = _critical_rhos(dict(t, scaling="position"))
    return {
        "label": "Paper A's bidirectional finite-n simplex lambda at the same rho_hat",
        "value": [float(pick(c, rho=r)["lambda_simplex_bidirectional"].mean()) for r in rhos],
    }


def _turnover(t, scaling):
    out = []
    for _, sub in _grid(t["L"], scaling).groupby("rho"):
        sub = sub.sort_values("gamma")
        rh = sub["rho_hat"].mean()
        gam = crossing_x(sub["gamma"], sub["lambda"], critical_lambda(rh), log_x=True)
        out.append(gam * (1.0 - rh))
    out = np.asarray(out)
    if not np.isfinite(out).any():
        raise NotAvailable("lambda never reaches 1/(1 + 3 rho_hat) on the grid")
    return {
        "label": f"{scaling} scaling: gamma / gamma_c(rho_hat) at which lambda reaches Paper "
        "A's critical value 1/(1 + 3 rho_hat), range over the rho grid",
        "value": [float(np.nanmin(out)), float(np.nanmax(out))],
    }


def _sharpness(t, scaling, col="lambda"):
    ratios = []
    for _, sub in _grid(t["L"], scaling, col).groupby("rho"):
        sub = sub.sort_values("gamma")
        lo, hi = (crossing_x(sub["gamma"], sub[col], lev, log_x=True) for lev in WIDTH_FRACTIONS)
        ratios.append(hi / lo)
    ratios = np.asarray(ratios)
    if not np.isfinite(ratios).any():
        raise NotAvailable("lambda does not cross both levels on the grid")
    what = "the bidirectional finite-n simplex" if col != "lambda" else f"{scaling} scaling"
    return {
        "label": f"{what}: gamma ratio between lambda = {WIDTH_FRACTIONS[0]:g} and "
        f"{WIDTH_FRACTIONS[1]:g}, range over the rho grid",
        "value": [float(np.nanmin(ratios)), float(np.nanmax(ratios))],
    }


def _on(fn, *args):
    return lambda t: fn(t, *args)


#: The findings of the causal figure, declared: key, label, computing function of the tables
#: ``{"L": lambda rows, "S": self-weight rows}``, metadata.
CAUSAL = [
    declare(
        "causal.global_above_0p9_up_to",
        "global scaling, early positions",
        _global_above,
        source=[SELF],
    ),
    declare(
        "causal.global_average",
        "global scaling, position average",
        _global_average,
        fmt=".3f",
        source=[SELF],
    ),
    declare(
        "causal.position_critical",
        "per-position scaling at gamma_c",
        _position_critical,
        fmt=".3f",
        source=[SELF],
    ),
    declare(
        "causal.position_last_bin",
        "per-position scaling, last bin",
        _position_last_bin,
        fmt=".2f",
        source=[SELF],
    ),
    *(
        declare(
            f"causal.lambda_{s}",
            f"{w} lambda at gamma_c",
            _on(_lambda_at_critical, s),
            fmt=".3f",
            source=[LAMBDA],
        )
        for s, w in (("global", "global"), ("position", "per-position"))
    ),
    declare(
        "causal.lambda_bidirectional",
        "bidirectional simplex lambda",
        _bidirectional,
        fmt=".3f",
        source=[LAMBDA],
    ),
    *(
        declare(
            f"causal.{what}_{s}",
            f"{w} {what}",
            _on(fn, s),
            kind="range",
            fmt=".2f",
            source=[LAMBDA],
        )
        for what, fn in (("turnover", _turnover), ("sharpness", _sharpness))
        for s, w in (("global", "global"), ("position", "per-position"))
    ),
    declare(
        "causal.sharpness_bidirectional",
        "bidirectional sharpness",
        _on(_sharpness, "position", "lambda_simplex_bidirectional"),
        kind="range",
        fmt=".2f",
        source=[LAMBDA],
    ),
]


def causal_findings(*, data, self_weight) -> list[Finding]:
    """Self-weight against position and lambda maps for the global beta = gamma ln n and the
    per-position beta_i = gamma ln i (docs/realistic-attention.md#global-versus-per-position-scaling):
    the declarations :data:`CAUSAL`."""
    return evaluate(CAUSAL, {"L": frame(data), "S": frame(self_weight)})


def _per_rule_n(R):
    g = R.groupby(["rule_key", "n"], sort=False)
    m, se = stats.mean_se(g[["self_weight", "lambda_block"]])
    out = g.agg(
        fd=("self_weight_finite_d", "mean"),
        sx=("self_weight_simplex", "mean"),
        ratio=("gamma_ratio", "mean"),
        rule=("rule", "first"),
    )
    return out.assign(
        sim=m["self_weight"],
        sim_se=se["self_weight"],
        lam=m["lambda_block"],
        lam_se=se["lambda_block"],
    ).reset_index()


def _pm(R):
    return PM_DRAWS.format(k=R["trial"].nunique())


def _rules_table(R):
    t = _per_rule_n(R)
    t = t[t["n"] == t["n"].max()]
    records = [
        [
            r["rule"],
            r["ratio"],
            f"{r['sim']:.3g} ± {r['sim_se']:.2g}",
            r["fd"],
            r["sx"],
            f"{r['lam']:.3g} ± {r['lam_se']:.2g}",
        ]
        for _, r in t.iterrows()
    ]
    return {
        "label": f"n = {int(t['n'].iloc[0])}, d = {int(R['d'].iloc[0])}, rho = "
        f"{R['rho'].iloc[0]:g}: mean A_ii of the last {int(R['block'].iloc[0])} queries",
        "value": records,
        "pm": _pm(R),
    }


def _beta_ratio(R):
    t = R.groupby("n")[["beta_critical_finite_d", "beta_critical_simplex"]].mean()
    r = t["beta_critical_finite_d"] / t["beta_critical_simplex"]
    return {
        "label": f"finite-d critical beta over gamma_c ln n at n = {int(r.index[0])} / "
        f"{int(r.index[-1])}",
        "value": [float(r.iloc[0]), float(r.iloc[-1])],
    }


def _max_z(R):
    t = _per_rule_n(R)
    z = ((t["sim"] - t["fd"]) / t["sim_se"]).abs()
    z = z[np.isfinite(z)]
    if z.empty:
        raise NotAvailable("one draw: no standard error")
    return {
        "label": "largest |simulated - finite-d theory| over its SE, over every rule and n",
        "value": float(z.max()),
        "unit": "SE",
    }


def _simplex_excess(R):
    t = _per_rule_n(R)
    t = t[(t["sim"] > 0.1) & (t["sim"] < 0.9)]
    if t.empty:
        raise NotAvailable("no rule near the transition")
    v = t["sx"] - t["sim"]
    return {
        "label": "simplex A_ii minus the simulated one near the transition (0.1 < A_ii < "
        "0.9), range over rules and n",
        "value": [float(v.min()), float(v.max())],
    }


def _se_max(R):
    g = R.groupby(["rule_key", "n"], sort=False)
    _, se = stats.mean_se(g[["self_weight_cv", "self_weight"]])
    if not np.isfinite(se.to_numpy()).any():
        raise NotAvailable("one draw: no standard error")
    return {
        "label": "largest SE of the block's mean A_ii over every rule and n: with the "
        "||z_0|| control variate (the figure's), then the plain mean over draws",
        "value": [float(se["self_weight_cv"].max()), float(se["self_weight"].max())],
        "note": f"SE of the mean over {R['trial'].nunique()} draws",
    }


def _longrope(R):
    t = _per_rule_n(R)
    t = t[t["rule_key"] == "longrope"].sort_values("n")
    if t.empty:
        raise NotAvailable("LongRoPE is not simulated")
    return {
        "label": f"LongRoPE: mean A_ii at n = {int(t['n'].iloc[0])} / {int(t['n'].iloc[-1])}",
        "value": [float(t["sim"].iloc[0]), float(t["sim"].iloc[-1])],
        "se": [float(t["sim_se"].iloc[0]), float(t["sim_se"].iloc[-1])],
        "pm": _pm(R),
    }


#: The findings of the rules-simulated figure, declared (functions of the rows ``R``).
RULES_SIMULATED = [
    declare(
        "rules_simulated.table",
        "rules at the largest n",
        _rules_table,
        kind="table",
        columns=[
            "rule",
            "beta_n / (gamma_c ln n)",
            "A_ii simulated ± SE",
            "finite-d E A_ii",
            "simplex A_ii",
            "lambda in the block ± SE",
        ],
        columns_fmt=["", ".3f", "", ".3g", ".3g", ""],
        source=[RULES],
    ),
    declare(
        "rules_simulated.finite_d_beta_ratio",
        "finite-d critical beta",
        _beta_ratio,
        fmt=".4f",
        source=[RULES],
    ),
    declare(
        "rules_simulated.max_z",
        "finite-d theory against simulation",
        _max_z,
        fmt=".2f",
        source=[RULES],
        note="SE over draws; the draws are shared by rules and n",
    ),
    declare(
        "rules_simulated.simplex_excess",
        "simplex excess",
        _simplex_excess,
        kind="range",
        fmt=".2f",
        source=[RULES],
    ),
    declare(
        "rules_simulated.self_weight_se_max",
        "largest SE of A_ii",
        _se_max,
        fmt=".3f",
        source=[RULES],
    ),
    declare("rules_simulated.longrope", "LongRoPE drift", _longrope, fmt=".3f", source=[RULES]),
]


def rules_simulated_findings(*, data) -> list[Finding]:
    """Real models' scaling rules at d_head = 128 under a causal mask: self-weight against the
    finite-d theory and the simplex (docs/realistic-attention.md#real-models-scaling-rules-simulated):
    the declarations :data:`RULES_SIMULATED`."""
    return evaluate(RULES_SIMULATED, frame(data))
