"""Findings of the transformer family under each definition of s* (issue 43;
docs/real-transformer.md#findings): crossing counts with the grid's reach, medians "beyond the
grid", the heads past critical, s*(n)/s*(n_ref) with SEs, the transition widths against the
theory and s* by query position. Every number is read from the tables of
``transformer_summary`` and ``transformer_widths``."""

from __future__ import annotations

import numpy as np

from attnscale.experiments.findings.record import Finding, NotAvailable, declare, evaluate, frame
from attnscale.layer.theory import critical_lambda

__all__ = [
    "DEFINITION_LABELS",
    "PER_DEFINITION",
    "HEAD_FINDINGS",
    "WIDTH_FINDINGS",
    "POSITION_FINDINGS",
    "definition_findings",
]

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


def _on(fn, *args):
    """``fn(t, *args)`` as a function of the tables ``t`` alone."""
    return lambda t: fn(t, *args)


def _layers(t, dfn, n):
    """The per-layer rows of definition ``dfn`` at ``n``."""
    return _rows(t["D"], n=n, definition=dfn).query("layer >= 0")


def _total(t, dfn, n):
    """The all-heads row of definition ``dfn`` at ``n``."""
    return _rows(t["D"], n=n, definition=dfn, layer=-1).iloc[0]


def _crossing(t, dfn):
    r, n_ref = _total(t, dfn, t["n_ref"]), t["n_ref"]
    return {
        "label": f"{DEFINITION_LABELS[dfn]}: heads crossing on the grid, n = {n_ref}",
        "value": [int(r.crossing), int(r.heads)],
    }


def _never(t, dfn):
    r, n_ref = _total(t, dfn, t["n_ref"]), t["n_ref"]
    return {
        "label": f"{DEFINITION_LABELS[dfn]}: heads that can never cross (limit below the level), "
        f"n = {n_ref}",
        "value": [int(r.never), int(r.heads)],
    }


def _crossing_by_layer(t, dfn):
    r, n_ref = _layers(t, dfn, t["n_ref"]), t["n_ref"]
    return {
        "label": f"{DEFINITION_LABELS[dfn]}: heads crossing by layer, of {int(r.heads.iloc[0])}, "
        f"n = {n_ref}",
        "value": r["crossing"].astype(int).tolist(),
    }


def _medians(t, dfn):
    r, n_ref = _layers(t, dfn, t["n_ref"]), t["n_ref"]
    pairs = [_med(v, s) for v, s in zip(r["s_star_median"], r["s_star_median_se"], strict=True)]
    return {
        "label": f"{DEFINITION_LABELS[dfn]}: median s* by layer ('{BEYOND}': at most half of the "
        "heads cross, a head that never crosses counted above every grid value), "
        f"n = {n_ref}",
        "value": [p[0] for p in pairs],
        "se": [p[1] for p in pairs],
    }


def _past(t, dfn):
    r, n_ref = _layers(t, dfn, t["n_ref"]), t["n_ref"]
    return {
        "label": f"{DEFINITION_LABELS[dfn]}: heads past critical at the trained scale (s* < 1) "
        f"by layer, n = {n_ref}",
        "value": r["past_critical"].astype(int).tolist(),
        "se": r["past_critical_se"].tolist(),
    }


def _past_all(t, dfn):
    r, n_ref = _total(t, dfn, t["n_ref"]), t["n_ref"]
    return {
        "label": f"{DEFINITION_LABELS[dfn]}: heads past critical (s* < 1) of {int(r.heads)}, "
        f"n = {n_ref}",
        "value": int(r.past_critical),
        "se": float(r.past_critical_se),
    }


def _ratios(r):
    """Median ratios by layer ("no head" where none crosses at both) and their SEs."""
    vals = [
        float(v) if k > 0 else "no head"
        for v, k in zip(r["ratio_median"], r["ratio_heads"], strict=True)
    ]
    ses = [
        float(s) if k > 0 and np.isfinite(s) else None
        for s, k in zip(r["ratio_median_se"], r["ratio_heads"], strict=True)
    ]
    return {"value": vals, "se": ses}


def _ratio(t, dfn, which):
    n, n_ref = t[which], t["n_ref"]
    return {
        "label": f"{DEFINITION_LABELS[dfn]}: median s*({n}) / s*({n_ref}) by layer over heads "
        "crossing at both",
        **_ratios(_layers(t, dfn, n)),
    }


def _closer(t, dfn):
    n_max, n_ref = t["n_max"], t["n_ref"]
    r = _total(t, dfn, n_max)
    return {
        "label": f"{DEFINITION_LABELS[dfn]}: heads whose s*({n_max}) is closer (in ln) to "
        f"s*({n_ref}) than to the log n rule's value, of the heads crossing at both",
        "value": [int(r.closer_to_constant), int(r.ratio_heads)],
        "se": [float(r.closer_to_constant_se), None],
    }


_DEF = {"source": ["transformer/definitions.csv"]}

#: Counts, medians, heads past critical and ratios of each definition, declared (functions of
#: ``{"D": definitions table, "n_ref", "n_min", "n_max"}``).
PER_DEFINITION = [
    entry
    for dfn in DEFINITION_LABELS
    for entry in (
        declare(
            f"transformer.{dfn}.crossing", "crossing", _on(_crossing, dfn), kind="count", **_DEF
        ),
        declare(f"transformer.{dfn}.never", "never", _on(_never, dfn), kind="count", **_DEF),
        declare(
            f"transformer.{dfn}.crossing_by_layer",
            "crossing by layer",
            _on(_crossing_by_layer, dfn),
            fmt="d",
            **_DEF,
        ),
        declare(
            f"transformer.{dfn}.s_star_by_layer",
            "s* by layer",
            _on(_medians, dfn),
            fmt=".2f",
            pm=PM,
            **_DEF,
        ),
        declare(
            f"transformer.{dfn}.past_critical_by_layer",
            "past by layer",
            _on(_past, dfn),
            fmt="d",
            pm=PM,
            **_DEF,
        ),
        declare(
            f"transformer.{dfn}.past_critical", "past", _on(_past_all, dfn), fmt="d", pm=PM, **_DEF
        ),
        declare(
            f"transformer.{dfn}.ratio_largest_n",
            "ratio",
            _on(_ratio, dfn, "n_max"),
            fmt=".2f",
            pm=PM,
            **_DEF,
        ),
        declare(
            f"transformer.{dfn}.ratio_smallest_n",
            "ratio small n",
            _on(_ratio, dfn, "n_min"),
            fmt=".2f",
            pm=PM,
            **_DEF,
        ),
        declare(
            f"transformer.{dfn}.closer_to_constant",
            "closer",
            _on(_closer, dfn),
            fmt="d",
            pm=PM,
            **_DEF,
        ),
    )
]


def _reach(t):
    R, ok, critical = t["R"], t["ok"], t["critical"]
    first = R["lambda_ratio_first"].to_numpy()[ok]
    last = R["lambda_ratio_last"].to_numpy()[ok]
    return {
        "label": f"lambda(s)/lambda(inf) at the grid's ends against the critical levels over "
        f"the {int(ok.sum())} heads with lambda(inf) >= 0.05 [choice], n = {t['n_ref']}: the "
        "largest at the smallest s, the smallest level, the smallest at the largest s, the "
        "largest level",
        "value": [
            float(first.max()),
            float(critical.min()),
            float(last.min()),
            float(critical.max()),
        ],
    }


def _reach_paper_a(t):
    R = t["R"]
    return {
        "label": "Paper A's lambda at the largest s: heads below their critical level, "
        f"n = {t['n_ref']}",
        "value": [int(np.sum(R["lambda_last"].to_numpy() < t["critical"])), len(R)],
    }


def _sink(R):
    return R["lambda_inf"].astype(float) < 0.2


def _sinks(t):
    return {
        "label": f"heads with lambda(inf) < 0.2 [choice], n = {t['n_ref']}",
        "value": [int(_sink(t["R"]).sum()), len(t["R"])],
    }


def _sink_s_star(t):
    v = t["R"].loc[_sink(t["R"]), "s_star"].astype(float)
    v = v[np.isfinite(v)]
    if v.empty:
        raise NotAvailable("no sink head crosses")
    return {"label": "normalised s* of those heads", "value": [float(v.min()), float(v.max())]}


def _lam_inf(t):
    g = t["R"].groupby("layer")["lambda_inf"].mean()
    return {"label": f"lambda(inf) by layer (head mean), n = {t['n_ref']}", "value": g.tolist()}


_HEADS = {"source": ["transformer/heads.csv"]}

#: The grid's reach, the sink heads and lambda(inf) by layer, declared (functions of ``{"R": the
#: heads at n_ref, "critical": their critical levels, "ok": lambda(inf) >= 0.05, "n_ref"}``).
HEAD_FINDINGS = [
    declare("transformer.grid_reach", "grid reach", _reach, fmt=".2f", **_HEADS),
    declare(
        "transformer.paper_a.below_at_top", "below at top", _reach_paper_a, kind="count", **_HEADS
    ),
    declare("transformer.sink_heads", "sink heads", _sinks, kind="count", **_HEADS),
    declare("transformer.sink_s_star", "sink s*", _sink_s_star, kind="range", fmt=".2f", **_HEADS),
    declare("transformer.lambda_inf_by_layer", "lambda(inf)", _lam_inf, fmt=".2f", **_HEADS),
]


def _measured(t, tag):
    n = t[tag]
    r = _rows(t["dm"], n=n)
    pairs = [_med(v, s) for v, s in zip(r["width"], r["width_se"], strict=True)]
    return {
        "label": f"median width ln s_0.75 - ln s_0.25 of lambda/lambda(inf) by layer, n = {n}",
        "value": [p[0] for p in pairs],
        "se": [p[1] for p in pairs],
    }


def _theory(t, tag):
    n = t[tag]
    a, b = _rows(t["dm"], n=n), _rows(t["dh"], n=n)
    return {
        "label": f"theory's width in ln beta at the layers' rho_hat, n = {n}: finite-d mean "
        f"field at d = {int(a.d.iloc[0])}, at d = {int(b.d.iloc[0])}, finite-n simplex "
        "(median over layers)",
        "value": [
            float(a["width_mean_field"].median()),
            float(b["width_mean_field"].median()),
            float(a["width_simplex"].median()),
        ],
    }


def _ratio_range(t, tag):
    n = t[tag]
    a, b = _rows(t["dm"], n=n), _rows(t["dh"], n=n)
    va, vb = a["over_mean_field"].astype(float), b["over_mean_field"].astype(float)
    va, vb = va[np.isfinite(va)], vb[np.isfinite(vb)]
    if va.empty or vb.empty:
        raise NotAvailable(f"no finite ratio at n = {n}")
    return {
        "label": f"measured over mean-field width over layers, n = {n}: range at d_model, "
        "range at d_head",
        "value": [va.min(), va.max(), vb.min(), vb.max()],
    }


def _trend(t):
    dm, dh, n0, n1 = t["dm"], t["dh"], t["n_min"], t["n_max"]
    lo, hi = _rows(dm, n=n0), _rows(dm, n=n1)
    lh, hh = _rows(dh, n=n0), _rows(dh, n=n1)
    f = lambda a, b, c: float(np.nanmedian(b[c].to_numpy() / a[c].to_numpy()))  # noqa: E731
    return {
        "label": f"width at n = {n1} over width at n = {n0}, median over layers: measured, mean "
        "field at d_model, at d_head, simplex",
        "value": [
            f(lo, hi, "width"),
            f(lo, hi, "width_mean_field"),
            f(lh, hh, "width_mean_field"),
            f(lo, hi, "width_simplex"),
        ],
    }


_WIDTHS = {"source": ["transformer/widths_n*.csv"]}

#: The measured widths against the theory's, declared (functions of ``{"dm", "dh": the widths at
#: d_model and d_head, "ref", "max": the lengths reported, "n_min", "n_max": the widths' range}``).
WIDTH_FINDINGS = [
    declare("transformer.width_trend", "width trend", _trend, fmt=".2f", **_WIDTHS),
    *(
        entry
        for tag in ("ref", "max")
        for entry in (
            declare(
                f"transformer.width_{tag}",
                "width",
                _on(_measured, tag),
                fmt=".2f",
                pm=PM,
                **_WIDTHS,
            ),
            declare(
                f"transformer.width_theory_{tag}",
                "theory width",
                _on(_theory, tag),
                fmt=".2f",
                **_WIDTHS,
            ),
            declare(
                f"transformer.width_over_theory_{tag}",
                "over theory",
                _on(_ratio_range, tag),
                fmt=".1f",
                **_WIDTHS,
            ),
        )
    ),
]


#: Columns of the bands table: header, format.
_BANDS_COLUMNS = [
    ("definition", ""),
    ("positions", ""),
    ("crossing", "d"),
    ("heads", "d"),
    ("median s*", ".2f"),
    ("SE", ".2f"),
    ("ratio to first band", ".2f"),
    ("SE", ".2f"),
]


def _bands_table(t):
    P, n_max, records = t["P"], t["n_max"], []
    for dfn in ("paper_a", "normalised"):
        sub = P[
            (P["n"] == n_max) & (P["definition"] == dfn) & (P["layer"] == -1) & (P["band"] >= 0)
        ]
        for r in sub.sort_values("band").itertuples():
            med = BEYOND if not np.isfinite(r.s_star_median) else float(r.s_star_median)
            records.append(
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
    if not records:
        raise NotAvailable("no position bands")
    return {
        "label": f"s* by band of query positions at n = {n_max}, all heads: heads crossing, "
        "median s* (SE), median s*(band) / s*(first band) over heads crossing in both (SE)",
        "value": records,
        "columns": [c for c, _ in _BANDS_COLUMNS],
        "columns_fmt": [f for _, f in _BANDS_COLUMNS],
    }


def _band_ratio(t):
    n_max = t["n_max"]
    sub = _rows(t["P"], n=n_max, definition="normalised").query("layer >= 0")
    last = sub[sub["band"] == sub["band"].max()]
    return {
        "label": f"normalised s*, last band over first band at n = {n_max}, median over heads "
        "by layer",
        "value": last["ratio_median"].tolist(),
        "se": last["ratio_median_se"].tolist(),
    }


def _fixed(t, dfn):
    n_max = t["n_max"]
    sub = _rows(t["P"], n=n_max, definition=dfn, band=-1).query("layer >= 0")
    first, last = int(sub["first"].iloc[0]), int(sub["last"].iloc[0])
    return {
        "label": f"{DEFINITION_LABELS[dfn]}: s*({n_max}) / s*({t['n_ref']}) by layer on the "
        f"query positions {first} to {last} (every n), median over heads crossing at both",
        **_ratios(sub),
    }


_POS = {"source": ["transformer/positions.csv"]}

#: s* by query position band at the longest n, and on the fixed band across n, declared
#: (functions of ``{"P": positions table, "n_ref", "n_max"}``).
POSITION_FINDINGS = [
    declare("transformer.bands_table", "bands", _bands_table, kind="table", **_POS),
    declare("transformer.band_ratio_by_layer", "band ratio", _band_ratio, fmt=".2f", pm=PM, **_POS),
    declare(
        "transformer.fixed_band_ratio_normalised",
        "fixed band",
        _on(_fixed, "normalised"),
        fmt=".2f",
        pm=PM,
        **_POS,
    ),
    declare(
        "transformer.fixed_band_ratio_paper_a",
        "fixed band A",
        _on(_fixed, "paper_a"),
        fmt=".2f",
        pm=PM,
        **_POS,
    ),
]


def _heads_at(H, n_ref: int) -> dict:
    """The tables of :data:`HEAD_FINDINGS`: the heads at ``n_ref`` and their critical levels."""
    R = H[H["n"] == n_ref]
    if R.empty:
        raise NotAvailable(f"no heads at n = {n_ref}")
    critical = np.array([critical_lambda(r) for r in R["rho_hat"]])
    return {"R": R, "critical": critical, "ok": R["lambda_inf"].astype(float).to_numpy() >= 0.05}


def _widths_tables(Wd, n_ref: int) -> dict:
    """The tables of :data:`WIDTH_FINDINGS` (``n_ref``, or the widths' smallest n if absent)."""
    wn = sorted(int(x) for x in Wd["n"].unique())
    return {
        "dm": Wd[Wd["dimension"] == "d_model"],
        "dh": Wd[Wd["dimension"] == "d_head"],
        "ref": n_ref if n_ref in wn else wn[0],
        "max": wn[-1],
        "n_min": wn[0],
        "n_max": wn[-1],
    }


def definition_findings(*, heads, definitions, positions, widths) -> list[Finding]:
    """Findings of s* under each definition, the widths and the position bands
    (docs/real-transformer.md#findings): the declarations :data:`PER_DEFINITION`,
    :data:`HEAD_FINDINGS`, :data:`POSITION_FINDINGS` and, where the run has widths,
    :data:`WIDTH_FINDINGS`."""
    H, D, P = frame(heads), frame(definitions), frame(positions)
    ns = sorted(int(x) for x in D["n"].unique())
    n_ref = int(D.loc[np.isclose(D["log_rule"].astype(float), 1.0), "n"].iloc[0])
    ref = {"n_ref": n_ref, "n_min": ns[0], "n_max": ns[-1]}
    out = evaluate(PER_DEFINITION, {"D": D, **ref})
    out += evaluate(HEAD_FINDINGS, {**_heads_at(H, n_ref), "n_ref": n_ref})
    out += evaluate(POSITION_FINDINGS, {"P": P, **ref})
    try:
        Wd = frame(widths)
    except NotAvailable:
        return out
    return out + evaluate(WIDTH_FINDINGS, _widths_tables(Wd, n_ref))
