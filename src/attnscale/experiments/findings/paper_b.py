"""Findings of Paper B's figures and of our limit laws (docs/paper-b.md, docs/paper-b-beyond.md):
the phase diagram of the top weight, the subcritical profile, the critical laws, the heat-equation
drift and the critical output law. One function per figure family; each reads only the tables it
names in its findings' ``source``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.experiments.findings.record import (
    PM_CONTEXTS,
    PM_SAMPLES,
    Finding,
    NotAvailable,
    compute,
    frame,
    pick,
    sci,
)

__all__ = [
    "PHASE",
    "LIMIT",
    "PROFILE",
    "LAWS",
    "DRIFT",
    "DRIFT_CURVE",
    "OUTPUT",
    "phase_findings",
    "profile_findings",
    "critical_laws_findings",
    "heat_drift_findings",
    "output_law_findings",
]

PHASE = "paper_b/phase_diagram.csv"
LIMIT = "paper_b/poisson_limit_d{d}.csv"
PROFILE = "paper_b/profile_d{d}.csv"
LAWS = "paper_b/critical_laws/d{d}_summary.csv"
DRIFT = "paper_b/heat_drift_summary.csv"
DRIFT_CURVE = "paper_b/heat_drift_theory.csv"
OUTPUT = "paper_b/output_law/d{d}_summary.csv"


def _d(df: pd.DataFrame) -> int:
    return int(df["d"].iloc[0])


def phase_findings(*, phase: pd.DataFrame, limit: pd.DataFrame) -> list[Finding]:
    """Top weight E A_(1) along the lines beta = gamma sqrt(n) at the largest n against the
    Poisson limit, and the subcritical asymptote beta^2 / (1.5 n) in the limit table
    (docs/paper-b.md#poisson-limit)."""
    d = _d(phase)
    src = [PHASE, LIMIT.format(d=d)]

    def lines():
        sub = pick(phase, kind="line")
        nmax = sub["n"].max()
        sub = sub[sub["n"] == nmax].sort_values("gamma")
        k = int(sub["trials"].iloc[0])
        return {
            "label": f"d = {d}, n = {sci(nmax)}: E A_(1) along beta = gamma sqrt(n) at gamma = "
            + " / ".join(f"{g:g}" for g in sub["gamma"]),
            "value": sub["top_weight_mean"].tolist(),
            "se": sub["top_weight_se"].tolist(),
            "pm": PM_CONTEXTS.format(k=k),
        }

    def limits():
        gam = np.sort(pick(phase, kind="line")["gamma"].unique())
        records = [pick(limit, gamma=g).iloc[0] for g in gam]
        k = int(records[0]["trials"])
        return {
            "label": f"Poisson limit of E A_(1) at the same gamma (simulated, d = {d})",
            "value": [r["top_weight_mean"] for r in records],
            "se": [r["top_weight_se"] for r in records],
            "pm": PM_SAMPLES.format(k=k),
        }

    def subcritical():
        row = limit.sort_values("gamma").iloc[0]
        ratio = row["top_weight_mean"] / row["subcritical_asymptote"]
        se = row["top_weight_se"] / row["subcritical_asymptote"]
        return {
            "label": "Poisson limit of E A_(1) over the subcritical asymptote gamma^2 / 1.5 "
            f"(beta^2 / (1.5 n)) at the smallest gamma of the limit table, gamma = {row['gamma']:g}",
            "value": ratio,
            "se": se,
            "pm": PM_SAMPLES.format(k=int(row["trials"])),
        }

    return [
        compute(
            "phase.top_weight_lines",
            "E A_(1) along the critical lines",
            lines,
            fmt=".3g",
            source=src[:1],
        ),
        compute(
            "phase.poisson_limit_lines",
            "Poisson limit of E A_(1)",
            limits,
            fmt=".3g",
            source=src[1:],
        ),
        compute(
            "phase.subcritical_ratio", "subcritical ratio", subcritical, fmt=".3f", source=src[1:]
        ),
    ]


def profile_findings(*, profiles) -> list[Finding]:
    """Mean A_(k)/A_(1) and the cumulative mass at k/m_n = 1 against the limits e^{-x^alpha}
    and P(1/alpha, x^alpha), for d = 5 and d = 3 (docs/paper-b.md#subcritical-profile)."""
    tables = {_d(t): t for t in (profiles if isinstance(profiles, list) else [profiles])}
    out = []
    for d in (5, 3):

        def at_one(d=d, col="ratio"):
            if d not in tables:
                raise NotAvailable(f"no profile at d = {d}")
            p = tables[d]
            row = p.loc[(p["x"] - 1.0).abs().idxmin()]
            return {
                "label": f"d = {d}, beta = {row['beta']:.3g} (n = {int(row['n'])}): "
                + ("A_(k)/A_(1)" if col == "ratio" else "cumulative mass")
                + f" at k/m_n = {row['x']:.3f}, simulated / limit",
                "value": [row[f"{col}_mean"], row[f"{col}_limit"]],
                "se": [row[f"{col}_se"], None],
                "pm": PM_CONTEXTS.format(k=int(row["trials"])) + " (simulated value)",
            }

        src = [PROFILE.format(d=d)]
        out.append(
            compute(f"profile.d{d}_ratio_at_1", "profile ratio", at_one, fmt=".3f", source=src)
        )
        out.append(
            compute(
                f"profile.d{d}_mass_at_1",
                "cumulative mass",
                lambda d=d: at_one(d, "mass"),
                fmt=".3f",
                source=src,
            )
        )
    return out


def critical_laws_findings(*, laws) -> list[Finding]:
    """Kolmogorov-Smirnov distance of the law of A_(1) to its Poisson limit (d = 3 and 5), and
    the limit's mean at gamma = 1, d = 5 (docs/paper-b.md#poisson-limit)."""
    tables = {_d(t): t for t in (laws if isinstance(laws, list) else [laws])}

    def d3_max():
        if 3 not in tables:
            raise NotAvailable("no critical-law table at d = 3")
        s = pick(tables[3], stat="top_weight", source="finite_n")
        nmin = s["n"].min()
        s = s[s["n"] == nmin]
        return {
            "label": f"d = 3: largest KS distance of A_(1) to its Poisson limit at the smallest "
            f"n = {int(nmin)}, over gamma",
            "value": s["ks_vs_limit"].max(),
        }

    def d5_by_n():
        if 5 not in tables:
            raise NotAvailable("no critical-law table at d = 5")
        g = tables[5]["gamma"].dropna().min()
        s = pick(tables[5], stat="top_weight", source="finite_n", gamma=g).sort_values("n")
        return {
            "label": f"d = 5, gamma = {g:g}: KS distance of A_(1) to its limit at n = "
            + " / ".join(f"{int(x)}" for x in s["n"]),
            "value": s["ks_vs_limit"].tolist(),
        }

    def d5_limit():
        if 5 not in tables:
            raise NotAvailable("no critical-law table at d = 5")
        row = pick(tables[5], stat="top_weight", source="poisson_limit", gamma=1.0).iloc[0]
        return {
            "label": "d = 5, gamma = 1: E A_(1) of the Poisson limit (simulated)",
            "value": row["mean"],
            "se": row["se"],
            "pm": PM_SAMPLES.format(k=int(row["samples"])),
        }

    return [
        compute("laws.d3_ks_max", "KS at d = 3", d3_max, fmt=".3f", source=[LAWS.format(d=3)]),
        compute("laws.d5_ks_by_n", "KS at d = 5", d5_by_n, fmt=".2g", source=[LAWS.format(d=5)]),
        compute(
            "laws.d5_limit_gamma1", "limit mean", d5_limit, fmt=".4f", source=[LAWS.format(d=5)]
        ),
    ]


def heat_drift_findings(*, summary: pd.DataFrame, curve: pd.DataFrame) -> list[Finding]:
    """The ratio <beta P_q ATT_n(q), g> / |g|^2 against the n = infinity quadrature, and the
    large-beta correction beta (ratio - 1) (docs/paper-b.md#heat-equation-drift)."""

    def table():
        s = summary.sort_values("beta")
        records = [
            [
                r["beta"],
                int(r["contexts"]),
                r["ratio_mean"],
                r["ratio_se"],
                r["ratio_quadrature"],
                (r["ratio_mean"] - r["ratio_quadrature"]) / r["ratio_se"],
            ]
            for _, r in s.iterrows()
        ]
        return {
            "label": f"n = {sci(int(s['n'].iloc[0]))}: simulated ratio (mean and SE over contexts) "
            "against the n = infinity quadrature",
            "value": records,
        }

    def correction():
        c = curve.sort_values("beta").iloc[-1]
        return {
            "label": f"beta (ratio - 1) of the quadrature at its largest beta = {sci(c['beta'])}",
            "value": c["correction_quadrature"],
            "note": "read from the quadrature, not derived",
        }

    def by_decade(col):
        c = curve.sort_values("beta")
        lo, hi = np.ceil(np.log10(c["beta"].min())), np.floor(np.log10(c["beta"].max()))
        betas = [10.0**k for k in np.arange(max(lo, 1.0), hi + 1.0)]
        if not betas:
            raise NotAvailable("no power of ten >= 10 on the quadrature's beta grid")
        records = [pick(c, beta=b).iloc[0] for b in betas]
        if col == "ratio_quadrature":
            records = records[:2]
        return {
            "label": ("beta (ratio - 1)" if col == "correction_quadrature" else "ratio")
            + " of the quadrature at beta = "
            + " / ".join(sci(r["beta"]) for r in records),
            "value": [r[col] for r in records],
        }

    return [
        compute(
            "heat_drift.correction_by_decade",
            "correction by decade",
            lambda: by_decade("correction_quadrature"),
            fmt=".6g",
            source=[DRIFT_CURVE],
        ),
        compute(
            "heat_drift.ratio_by_decade",
            "ratio at small beta",
            lambda: by_decade("ratio_quadrature"),
            fmt=".4f",
            source=[DRIFT_CURVE],
        ),
        compute(
            "heat_drift.ratio_table",
            "heat drift",
            table,
            kind="table",
            columns=["beta", "contexts", "simulated", "SE", "quadrature", "z"],
            columns_fmt=["g", "d", ".4f", ".4f", ".4f", ".2f"],
            pm="SE: one standard error of the mean over the contexts of the row",
            source=[DRIFT],
        ),
        compute("heat_drift.correction", "correction", correction, fmt=".3f", source=[DRIFT_CURVE]),
    ]


def output_law_findings(*, summaries) -> list[Finding]:
    """KS distance of n^{1/(d-1)} |P_q(ATT_n(q) - q)| to its marked-Poisson limit against n, its
    noise level, and the second moment against the Mecke value
    (docs/paper-b-beyond.md#critical-output-law)."""
    S = frame(summaries)
    src = sorted(OUTPUT.format(d=int(d)) for d in S["d"].unique())

    def table():
        fin = pick(S, source="finite_n")
        ns = sorted(fin["n"].unique())
        records = []
        for (d, g), grp in fin.groupby(["d", "gamma"], sort=True):
            ks = [grp.loc[grp["n"] == n, "ks_vs_limit"] for n in ns]
            rep = pick(S, source="limit_repeat", d=d, gamma=g)["ks_vs_limit"].iloc[0]
            records.append([int(d), g, *[float(k.iloc[0]) if len(k) else None for k in ks], rep])
        return {
            "label": "KS distance to the limit sample by n (last column: a second, independent "
            "limit sample, i.e. the noise measured directly)",
            "value": records,
            "columns": ["d", "gamma", *[f"n = {int(n)}" for n in ns], "limit vs limit"],
            "columns_fmt": ["d", "g", *[".3f"] * len(ns), ".3f"],
        }

    def noise():
        row = S.iloc[0]
        return {
            "label": "noise level of the two-sample KS distance at these sample sizes: mean / "
            "95 % point (Kolmogorov law)",
            "value": [row["ks_null_mean"], row["ks_null_q95"]],
        }

    def d3_above():
        fin = pick(S, source="finite_n", d=3)
        ns = sorted(fin["n"].unique())
        if len(ns) < 2:
            raise NotAvailable("one n only at d = 3")
        sub = fin[fin["n"] >= ns[1]]
        q95 = float(S["ks_null_q95"].iloc[0])
        return {
            "label": f"d = 3: KS values above the null's 95 % point at n >= {int(ns[1])}",
            "value": [int((sub["ks_vs_limit"] > q95).sum()), len(sub)],
        }

    def m2():
        fin = pick(S, source="finite_n")
        nmax = fin["n"].max()
        sub = fin[fin["n"] == nmax].sort_values(["d", "gamma"])
        ratio = (sub["m2_mean"] / sub["m2_mecke"]).tolist()
        se = (sub["m2_se"] / sub["m2_mecke"]).tolist()
        labels = [
            f"d = {int(d)}, gamma = {g:g}" for d, g in zip(sub["d"], sub["gamma"], strict=True)
        ]
        return {
            "label": f"n = {sci(int(nmax))}: E|L_n|^2 over its Mecke value, " + "; ".join(labels),
            "value": ratio,
            "se": se,
            "pm": PM_SAMPLES.format(k=int(sub["samples"].iloc[0])),
        }

    def mecke():
        lim = S.groupby(["d", "gamma"], sort=True)["m2_mecke"].first()
        gammas = sorted(lim.index.get_level_values("gamma").unique())
        records = [
            [int(d), *[lim.get((d, g)) for g in gammas]]
            for d in sorted(lim.index.get_level_values("d").unique())
        ]
        return {
            "label": "E|L|^2 of the limit (Mecke formula, by quadrature) by d and gamma",
            "value": records,
            "columns": ["d", *[f"gamma = {g:g}" for g in gammas]],
            "columns_fmt": ["d", *[".5g"] * len(gammas)],
        }

    return [
        compute("output_law.m2_mecke_table", "Mecke values", mecke, kind="table", source=src),
        compute("output_law.ks_table", "KS table", table, kind="table", source=src),
        compute("output_law.ks_noise", "noise", noise, fmt=".4f", source=src),
        compute("output_law.d3_above_q95", "d = 3 above q95", d3_above, kind="count", source=src),
        compute("output_law.m2_ratio", "second moment", m2, fmt=".3f", source=src),
    ]
