"""Findings of the transformer family under each definition of s* (issue 43;
docs/real-transformer.md#findings): crossing counts with the grid's reach, medians "beyond the
grid", the heads past critical, s*(n)/s*(n_ref) with SEs, the transition widths against the
theory and s* by query position. Every number is read from the tables of
``transformer_summary`` and ``transformer_widths``."""

from __future__ import annotations

import numpy as np

from attnscale.experiments.findings.record import Finding, NotAvailable, compute, frame
from attnscale.layer.theory import critical_lambda

__all__ = ["DEFINITION_LABELS", "definition_findings"]

#: The definitions of s* (docs/real-transformer.md#three-definitions-of-s) and how they read.
DEFINITION_LABELS = {
    "paper_a": "Paper A's lambda",
    "normalised": "lambda / lambda(inf)",
    "text_keys": "lambda on text keys",
}
BEYOND = "beyond the grid"
PM = "one standard error by the moving-block bootstrap over windows"


def _rows(df, **conds):
    out = df
    for k, v in conds.items():
        out = out[out[k] == v]
    if out.empty:
        raise NotAvailable(f"no rows with {conds}")
    return out.sort_values("layer")


def _med(v, se):
    """A median with its SE, or the words 'beyond the grid' (no SE)."""
    return (BEYOND, None) if not np.isfinite(v) else (float(v), float(se))


def _per_definition(D, dfn: str, n_ref: int, n_min: int, n_max: int) -> list[Finding]:
    """Counts, medians, heads past critical and ratios of one definition."""
    name = DEFINITION_LABELS[dfn]
    lay = lambda n: _rows(D, n=n, definition=dfn).query("layer >= 0")  # noqa: E731
    tot = lambda n: _rows(D, n=n, definition=dfn, layer=-1).iloc[0]  # noqa: E731
    key = f"transformer.{dfn}"

    def crossing():
        r = tot(n_ref)
        return {
            "label": f"{name}: heads crossing on the grid, n = {n_ref}",
            "value": [int(r.crossing), int(r.heads)],
        }

    def never():
        r = tot(n_ref)
        return {
            "label": f"{name}: heads that can never cross (limit below the level), n = {n_ref}",
            "value": [int(r.never), int(r.heads)],
        }

    def by_layer():
        r = lay(n_ref)
        return {
            "label": f"{name}: heads crossing by layer, of {int(r.heads.iloc[0])}, n = {n_ref}",
            "value": r["crossing"].astype(int).tolist(),
        }

    def medians():
        pairs = [
            _med(v, s)
            for v, s in zip(
                lay(n_ref)["s_star_median"], lay(n_ref)["s_star_median_se"], strict=True
            )
        ]
        return {
            "label": f"{name}: median s* by layer ('{BEYOND}': at most half of the heads cross, a head that never crosses counted above every grid value), n = {n_ref}",
            "value": [p[0] for p in pairs],
            "se": [p[1] for p in pairs],
        }

    def past():
        r = lay(n_ref)
        return {
            "label": f"{name}: heads past critical at the trained scale (s* < 1) by layer, n = {n_ref}",
            "value": r["past_critical"].astype(int).tolist(),
            "se": r["past_critical_se"].tolist(),
        }

    def past_all():
        r = tot(n_ref)
        return {
            "label": f"{name}: heads past critical (s* < 1) of {int(r.heads)}, n = {n_ref}",
            "value": int(r.past_critical),
            "se": float(r.past_critical_se),
        }

    def ratio(n):
        def fn():
            r = lay(n)
            vals = [
                float(v) if k > 0 else "no head"
                for v, k in zip(r["ratio_median"], r["ratio_heads"], strict=True)
            ]
            return {
                "label": f"{name}: median s*({n}) / s*({n_ref}) by layer over heads crossing at both",
                "value": vals,
                "se": [
                    float(s) if k > 0 and np.isfinite(s) else None
                    for s, k in zip(r["ratio_median_se"], r["ratio_heads"], strict=True)
                ],
            }

        return fn

    def closer():
        r = tot(n_max)
        return {
            "label": f"{name}: heads whose s*({n_max}) is closer (in ln) to s*({n_ref}) than to the log n rule's value, of the heads crossing at both",
            "value": [int(r.closer_to_constant), int(r.ratio_heads)],
            "se": [float(r.closer_to_constant_se), None],
        }

    kw = {"source": ["transformer/definitions.csv"]}
    return [
        compute(f"{key}.crossing", "crossing", crossing, kind="count", **kw),
        compute(f"{key}.never", "never", never, kind="count", **kw),
        compute(f"{key}.crossing_by_layer", "crossing by layer", by_layer, fmt="d", **kw),
        compute(f"{key}.s_star_by_layer", "s* by layer", medians, fmt=".2f", pm=PM, **kw),
        compute(f"{key}.past_critical_by_layer", "past by layer", past, fmt="d", pm=PM, **kw),
        compute(f"{key}.past_critical", "past", past_all, fmt="d", pm=PM, **kw),
        compute(f"{key}.ratio_largest_n", "ratio", ratio(n_max), fmt=".2f", pm=PM, **kw),
        compute(f"{key}.ratio_smallest_n", "ratio small n", ratio(n_min), fmt=".2f", pm=PM, **kw),
        compute(f"{key}.closer_to_constant", "closer", closer, fmt="d", pm=PM, **kw),
    ]


def _head_findings(H, n_ref: int) -> list[Finding]:
    """The grid's reach, the sink heads and lambda(inf) by layer, from ``heads.csv``."""
    R = H[H["n"] == n_ref]
    if R.empty:
        raise NotAvailable(f"no heads at n = {n_ref}")
    levels = np.array([critical_lambda(r) for r in R["rho_hat"]])

    ok = R["lambda_inf"].astype(float).to_numpy() >= 0.05

    def reach():
        first = R["lambda_ratio_first"].to_numpy()[ok]
        last = R["lambda_ratio_last"].to_numpy()[ok]
        return {
            "label": f"lambda(s)/lambda(inf) at the grid's ends against the critical levels over "
            f"the {int(ok.sum())} heads with lambda(inf) >= 0.05 [choice], n = {n_ref}: the "
            "largest at the smallest s, the smallest level, the smallest at the largest s, the "
            "largest level",
            "value": [
                float(first.max()),
                float(levels.min()),
                float(last.min()),
                float(levels.max()),
            ],
        }

    def reach_paper_a():
        return {
            "label": f"Paper A's lambda at the largest s: heads below their critical level, n = {n_ref}",
            "value": [int(np.sum(R["lambda_last"].to_numpy() < levels)), len(R)],
        }

    sink = R["lambda_inf"].astype(float) < 0.2

    def sinks():
        return {
            "label": f"heads with lambda(inf) < 0.2 [choice], n = {n_ref}",
            "value": [int(sink.sum()), len(R)],
        }

    def sink_s_star():
        v = R.loc[sink, "s_star"].astype(float)
        v = v[np.isfinite(v)]
        if v.empty:
            raise NotAvailable("no sink head crosses")
        return {"label": "normalised s* of those heads", "value": [float(v.min()), float(v.max())]}

    def lam_inf():
        g = R.groupby("layer")["lambda_inf"].mean()
        return {"label": f"lambda(inf) by layer (head mean), n = {n_ref}", "value": g.tolist()}

    kw = {"source": ["transformer/heads.csv"]}
    return [
        compute("transformer.grid_reach", "grid reach", reach, fmt=".2f", **kw),
        compute(
            "transformer.paper_a.below_at_top", "below at top", reach_paper_a, kind="count", **kw
        ),
        compute("transformer.sink_heads", "sink heads", sinks, kind="count", **kw),
        compute("transformer.sink_s_star", "sink s*", sink_s_star, kind="range", fmt=".2f", **kw),
        compute("transformer.lambda_inf_by_layer", "lambda(inf)", lam_inf, fmt=".2f", **kw),
    ]


def _width_findings(Wd, n_ref: int, n_min: int, n_max: int) -> list[Finding]:
    """The measured widths against the theory's (``widths_n*.csv``)."""
    dm = Wd[Wd["dimension"] == "d_model"]
    dh = Wd[Wd["dimension"] == "d_head"]
    ns = sorted(int(x) for x in Wd["n"].unique())

    def measured(n):
        def fn():
            r = _rows(dm, n=n)
            pairs = [_med(v, s) for v, s in zip(r["width"], r["width_se"], strict=True)]
            return {
                "label": f"median width ln s_0.75 - ln s_0.25 of lambda/lambda(inf) by layer, n = {n}",
                "value": [p[0] for p in pairs],
                "se": [p[1] for p in pairs],
            }

        return fn

    def theory(n):
        def fn():
            a, b = _rows(dm, n=n), _rows(dh, n=n)
            return {
                "label": f"theory's width in ln beta at the layers' rho_hat, n = {n}: finite-d mean field at d = {int(a.d.iloc[0])}, at d = {int(b.d.iloc[0])}, finite-n simplex (median over layers)",
                "value": [
                    float(a["width_mean_field"].median()),
                    float(b["width_mean_field"].median()),
                    float(a["width_simplex"].median()),
                ],
            }

        return fn

    def ratio_range(n):
        def fn():
            a, b = _rows(dm, n=n), _rows(dh, n=n)
            va, vb = a["over_mean_field"].astype(float), b["over_mean_field"].astype(float)
            va, vb = va[np.isfinite(va)], vb[np.isfinite(vb)]
            if va.empty or vb.empty:
                raise NotAvailable(f"no finite ratio at n = {n}")
            return {
                "label": f"measured over mean-field width over layers, n = {n}: range at d_model, range at d_head",
                "value": [va.min(), va.max(), vb.min(), vb.max()],
            }

        return fn

    def trend():
        lo, hi = _rows(dm, n=ns[0]), _rows(dm, n=ns[-1])
        lh, hh = _rows(dh, n=ns[0]), _rows(dh, n=ns[-1])
        f = lambda a, b, c: float(np.nanmedian(b[c].to_numpy() / a[c].to_numpy()))  # noqa: E731
        return {
            "label": f"width at n = {ns[-1]} over width at n = {ns[0]}, median over layers: measured, mean field at d_model, at d_head, simplex",
            "value": [
                f(lo, hi, "width"),
                f(lo, hi, "width_mean_field"),
                f(lh, hh, "width_mean_field"),
                f(lo, hi, "width_simplex"),
            ],
        }

    kw = {"source": ["transformer/widths_n*.csv"]}
    out = [compute("transformer.width_trend", "width trend", trend, fmt=".2f", **kw)]
    for tag, n in (("ref", n_ref), ("max", n_max)):
        out += [
            compute(f"transformer.width_{tag}", "width", measured(n), fmt=".2f", pm=PM, **kw),
            compute(f"transformer.width_theory_{tag}", "theory width", theory(n), fmt=".2f", **kw),
            compute(
                f"transformer.width_over_theory_{tag}",
                "over theory",
                ratio_range(n),
                fmt=".1f",
                **kw,
            ),
        ]
    return out


def _position_findings(P, n_ref: int, n_max: int) -> list[Finding]:
    """s* by query position band at the longest n, and on the fixed band across n."""

    def table():
        rows = []
        for dfn in ("paper_a", "normalised"):
            sub = P[
                (P["n"] == n_max) & (P["definition"] == dfn) & (P["layer"] == -1) & (P["band"] >= 0)
            ]
            for r in sub.sort_values("band").itertuples():
                med = BEYOND if not np.isfinite(r.s_star_median) else float(r.s_star_median)
                rows.append(
                    [
                        DEFINITION_LABELS[dfn],
                        f"{r.first}-{r.last}",
                        int(r.crossing),
                        int(r.heads),
                        med,
                        r.s_star_median_se,
                        r.ratio_median,
                        r.ratio_median_se,
                    ]
                )
        if not rows:
            raise NotAvailable("no position bands")
        return {
            "label": f"s* by band of query positions at n = {n_max}, all heads: heads crossing, median s* (SE), median s*(band) / s*(first band) over heads crossing in both (SE)",
            "value": rows,
            "columns": [
                "definition",
                "positions",
                "crossing",
                "heads",
                "median s*",
                "SE",
                "ratio to first band",
                "SE",
            ],
            "columns_fmt": ["", "", "d", "d", ".2f", ".2f", ".2f", ".2f"],
        }

    def band_ratio():
        sub = _rows(P, n=n_max, definition="normalised").query("layer >= 0")
        last = sub[sub["band"] == sub["band"].max()]
        return {
            "label": f"normalised s*, last band over first band at n = {n_max}, median over heads by layer",
            "value": last["ratio_median"].tolist(),
            "se": last["ratio_median_se"].tolist(),
        }

    def fixed(dfn):
        def fn():
            sub = _rows(P, n=n_max, definition=dfn, band=-1).query("layer >= 0")
            vals = [
                float(v) if k > 0 else "no head"
                for v, k in zip(sub["ratio_median"], sub["ratio_heads"], strict=True)
            ]
            first, last = int(sub["first"].iloc[0]), int(sub["last"].iloc[0])
            return {
                "label": f"{DEFINITION_LABELS[dfn]}: s*({n_max}) / s*({n_ref}) by layer on the query positions {first} to {last} (every n), median over heads crossing at both",
                "value": vals,
                "se": [
                    float(s) if k > 0 and np.isfinite(s) else None
                    for s, k in zip(sub["ratio_median_se"], sub["ratio_heads"], strict=True)
                ],
            }

        return fn

    kw = {"source": ["transformer/positions.csv"]}
    return [
        compute("transformer.bands_table", "bands", table, kind="table", **kw),
        compute(
            "transformer.band_ratio_by_layer", "band ratio", band_ratio, fmt=".2f", pm=PM, **kw
        ),
        compute(
            "transformer.fixed_band_ratio_normalised",
            "fixed band",
            fixed("normalised"),
            fmt=".2f",
            pm=PM,
            **kw,
        ),
        compute(
            "transformer.fixed_band_ratio_paper_a",
            "fixed band A",
            fixed("paper_a"),
            fmt=".2f",
            pm=PM,
            **kw,
        ),
    ]


def definition_findings(*, heads, definitions, positions, widths) -> list[Finding]:
    """Findings of s* under each definition, the widths and the position bands
    (docs/real-transformer.md#findings)."""
    H, D, P = frame(heads), frame(definitions), frame(positions)
    ns = sorted(int(x) for x in D["n"].unique())
    n_ref = int(D.loc[np.isclose(D["log_rule"].astype(float), 1.0), "n"].iloc[0])
    out = []
    for dfn in DEFINITION_LABELS:
        out += _per_definition(D, dfn, n_ref, ns[0], ns[-1])
    out += _head_findings(H, n_ref)
    out += _position_findings(P, n_ref, ns[-1])
    try:
        Wd = frame(widths)
    except NotAvailable:
        return out
    wn = sorted(int(x) for x in Wd["n"].unique())
    return out + _width_findings(Wd, n_ref if n_ref in wn else wn[0], wn[0], wn[-1])
