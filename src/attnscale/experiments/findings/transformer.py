"""Findings of the transformer family (docs/real-transformer.md): every head of
all-MiniLM-L6-v2 on the phase diagram, its critical multiplier, the theory's predictions and
how s* moves with n. Every number is read from the tables of ``transformer_summary``."""

from __future__ import annotations

import numpy as np

from attnscale.experiments.findings.record import Finding, NotAvailable, declare, evaluate, frame

__all__ = ["HEADS", "LAYERS", "GLOBAL", "CALIBRATION", "TRANSFORMER", "transformer_findings"]

HEADS = "transformer/heads.csv"
LAYERS = "transformer/layers.csv"
GLOBAL = "transformer/global.csv"
CALIBRATION = "transformer/bootstrap_calibration.csv"

PM_BOOT = "one standard error by the moving-block bootstrap over {k} windows"


def _at(df, n):
    sub = df[df["n"] == n]
    if sub.empty:
        raise NotAvailable(f"no rows with n = {n}")
    return sub


def _on(fn, *args):
    """``fn(t, *args)`` as a function of the tables ``t`` alone."""
    return lambda t: fn(t, *args)


def _by_layer(sub, col, fn=np.median):
    return [float(fn(g[col].astype(float))) for _, g in sub.groupby("layer")]


def _crossing_count(t):
    return {
        "label": f"heads whose lambda(s)/lambda(inf) crosses 1/(1 + 3 rho_hat) on "
        f"s in [1/16, 16], n = {t['n_ref']}",
        "value": [int(t["fin"].sum()), len(t["R"])],
    }


def _past_critical(t):
    R = t["R"]
    return {
        "label": f"heads already past their critical multiplier at the trained scale "
        f"(s* < 1), n = {t['n_ref']}",
        "value": [int((R["s_star"] < 1.0).sum()), len(R)],
    }


def _s_star_layers(t):
    R = t["R"]
    return {
        "label": f"median s* by layer 0 .. {int(R['layer'].max())}, n = {t['n_ref']} "
        "(crossing heads)",
        "value": _by_layer(R[t["fin"]], "s_star"),
    }


def _s_star_range(t):
    v = t["R"].loc[t["fin"], "s_star"].astype(float)
    return {"label": f"s* over crossing heads, n = {t['n_ref']}", "value": [v.min(), v.max()]}


def _se_typical(t):
    R, fin = t["R"], t["fin"]
    v = R.loc[fin, "s_star_se"].astype(float) / R.loc[fin, "s_star"].astype(float)
    return {
        "label": f"median relative SE of s*, n = {t['n_ref']}",
        "value": 100.0 * float(np.nanmedian(v)),
    }


def _self_max(t):
    return {
        "label": f"largest fraction of query rows whose own score is the row maximum, "
        f"over all heads, n = {t['n_ref']}",
        "value": 100.0 * float(t["R"]["self_max"].max()),
    }


def _self_weight_half(t):
    R = t["R"]
    return {
        "label": f"heads whose mean self-weight reaches 1/2 for some s <= 16, n = {t['n_ref']}",
        "value": [int(np.isfinite(R["s_half"].astype(float)).sum()), len(R)],
    }


def _self_weight_top(t):
    return {
        "label": f"largest mean self-weight over heads and s <= 16, n = {t['n_ref']}",
        "value": float(t["R"]["self_weight_max"].max()),
    }


def _no_prediction(t, col, what):
    """Heads whose prediction ``col`` is not finite (no transition predicted)."""
    R = t["R"]
    return {
        "label": f"{what}, n = {t['n_ref']}",
        "value": [int((~np.isfinite(R[col].astype(float))).sum()), len(R)],
    }


def _eff_ratio(t):
    """s* over the lambda_eff prediction at the heads with both crossings, and their mask."""
    R = t["R"]
    ok = t["fin"] & np.isfinite(R["s_star_eff"].astype(float))
    return (R.loc[ok, "s_star"] / R.loc[ok, "s_star_eff"]).astype(float), ok


def _eff_lambda_ratio(t):
    r, ok = _eff_ratio(t)
    if not ok.any():
        raise NotAvailable("no head with both crossings")
    return {
        "label": "s* over the effective-score simplex prediction (lambda_eff crossing): "
        f"median and the 10 % / 90 % quantiles over {int(ok.sum())} heads, n = {t['n_ref']}",
        "value": [float(r.median()), float(r.quantile(0.1)), float(r.quantile(0.9))],
    }


def _eff_lambda_within(t):
    r, ok = _eff_ratio(t)
    if r.empty:
        raise NotAvailable("no head with both crossings")
    return {
        "label": "heads whose s* is within a factor 1.5 of the lambda_eff prediction",
        "value": [int(((r > 1 / 1.5) & (r < 1.5)).sum()), int(ok.sum())],
    }


def _eff_lambda_none(t):
    fin = t["fin"]
    k = int((fin & ~np.isfinite(t["R"]["s_star_eff"].astype(float))).sum())
    return {
        "label": "crossing heads for which the lambda_eff prediction never crosses on the grid",
        "value": [k, int(fin.sum())],
    }


def _lambda_1(t):
    v = t["R"]["lambda_1"].astype(float)
    return {
        "label": f"lambda at the trained scale over heads, n = {t['n_ref']}",
        "value": [v.min(), v.max()],
    }


def _layers(col, what, fn=np.median):
    """The finding ``what`` by layer: ``fn`` over the heads of each layer of ``col``."""
    return lambda t: {
        "label": f"{what}, n = {t['n_ref']}",
        "value": _by_layer(t["R"], col, fn),
    }


def _never_count(t):
    Hd = t["Hd"]
    fin_all = np.isfinite(Hd["s_star"].astype(float))
    return {
        "label": f"(n, head) pairs over n = {' / '.join(str(x) for x in t['ns'])} whose "
        "lambda(s)/lambda(inf) never crosses on the grid",
        "value": [int((~fin_all).sum()), len(Hd)],
    }


#: Columns of the never-crossing table: header, the heads table's column and the format.
_NEVER_COLUMNS = [
    ("n", "n", "d"),
    ("layer", "layer", "d"),
    ("head", "head", "d"),
    ("top-key share", "top_key_share", ".2f"),
    ("lambda(inf)", "lambda_inf", ".3f"),
    ("self max", "self_max", ".2f"),
    ("[CLS]/[SEP] weight", "special_mass", ".2f"),
    ("lambda(1)", "lambda_1", ".3f"),
]


def _never_table(t):
    Hd = t["Hd"]
    nv = Hd[~np.isfinite(Hd["s_star"].astype(float))].sort_values(["n", "layer", "head"])
    records = [
        [int(v) if f == "d" else v for (_, _, f), v in zip(_NEVER_COLUMNS, r, strict=True)]
        for r in nv[[c for _, c, _ in _NEVER_COLUMNS]].itertuples(index=False)
    ]
    return {
        "label": "heads that never cross and what their attention does instead: share of "
        "queries sent to the window's most frequent top key, lambda of the argmax map, "
        "fraction of rows whose own score is the maximum, weight on [CLS]/[SEP] and "
        "lambda at s = 1",
        "value": records,
        "columns": [c for c, _, _ in _NEVER_COLUMNS],
        "columns_fmt": [f for _, _, f in _NEVER_COLUMNS],
    }


def _ratio_by_layer(t, n, label):
    """Median s*(n)/s*(n_ref) by layer over the heads crossing at both."""
    s = _at(t["Hd"], n)
    ok = np.isfinite(s["s_star_over_ref"].astype(float))
    return {"label": label, "value": _by_layer(s[ok], "s_star_over_ref")}


def _scaling(t):
    n_max, n_ref = t["n_max"], t["n_ref"]
    return _ratio_by_layer(
        t, n_max, f"median s*({n_max}) / s*({n_ref}) by layer (heads crossing at both)"
    )


def _smallest_n(t):
    n0 = t["ns"][0]
    return _ratio_by_layer(t, n0, f"median s*({n0}) / s*({t['n_ref']}) by layer")


def _log_rule(t):
    ns, n_ref, n_max = t["ns"], t["n_ref"], t["n_max"]
    return {
        "label": f"the log n rule's factors ln {ns[0]} / ln {n_ref} and ln {n_max} / ln {n_ref}",
        "value": [float(np.log(ns[0]) / np.log(n_ref)), float(np.log(n_max) / np.log(n_ref))],
    }


def _scaling_all(t):
    n_max, n_ref = t["n_max"], t["n_ref"]
    r = _at(t["Hd"], n_max)["s_star_over_ref"].astype(float)
    r = r[np.isfinite(r)]
    lr = np.log(n_max) / np.log(n_ref)
    closer = int((np.abs(np.log(r)) < np.abs(np.log(r / lr))).sum())
    return {
        "label": f"heads whose s*({n_max}) is closer (in ln) to s*({n_ref}) than to "
        "the log n rule's value",
        "value": [closer, int(r.size)],
    }


def _global_at(G, s):
    """The whole-model rows at multiplier ``s``, by layer."""
    return G[np.isclose(G["s"].astype(float), s)].sort_values("layer")


def _global_1(t):
    g = _global_at(t["G"], 1.0)
    if g.empty:
        raise NotAvailable("no s = 1 in the global grid")
    return {
        "label": "whole model at s = 1: lambda by layer (head mean)",
        "value": g["lambda"].tolist(),
        "se": g["lambda_se"].tolist(),
        "pm": PM_BOOT.format(k=t["W"]),
    }


def _global_top(t):
    smax = float(t["G"]["s"].max())
    g = _global_at(t["G"], smax)
    return {
        "label": f"whole model at s = {smax:g}: lambda by layer",
        "value": g["lambda"].tolist(),
        "se": g["lambda_se"].tolist(),
        "pm": PM_BOOT.format(k=t["W"]),
    }


def _global_rho_top(t):
    G = t["G"]
    smax, smin = float(G["s"].max()), float(G["s"].min())
    return {
        "label": f"whole model: rho_hat of the last layer's inputs at s = {smin:g} / 1 / {smax:g}",
        "value": [
            float(_global_at(G, smin)["rho_hat"].iloc[-1]),
            float(G[np.isclose(G["s"], 1.0)].sort_values("layer")["rho_hat"].iloc[-1]),
            float(_global_at(G, smax)["rho_hat"].iloc[-1]),
        ],
    }


def _calib(t):
    c = t["C"].sort_values("phi")
    return {
        "label": "block bootstrap on generated AR(1) series of "
        f"{int(c['windows'].iloc[0])} windows, block {int(c['block'].iloc[0])}: mean "
        "bootstrap SE over the true SE at lag-one correlation "
        + " / ".join(f"{p:g}" for p in c["phi"]),
        "value": c["ratio"].tolist(),
    }


def _calib_cover(t):
    return {
        "label": "coverage of mean +- 1.96 SE (nominal 95 %) at the same correlations",
        "value": (100.0 * t["C"].sort_values("phi")["coverage_95"]).tolist(),
    }


def _lag1(t):
    return {
        "label": "measured lag-one correlation of the layer-mean lambda(s = 1) between "
        "consecutive windows (mean over n)",
        "value": float(t["C"]["measured_lag1"].iloc[0]),
    }


_H = {"source": [HEADS]}

#: The findings of the transformer family, declared (functions of the tables: ``Hd`` the heads,
#: ``R`` those at the reference length ``n_ref``, ``fin`` its crossing heads, ``G`` the whole
#: model, ``C`` the bootstrap calibration; :func:`transformer_findings`).
TRANSFORMER = [
    declare("transformer.crossing_heads", "crossing heads", _crossing_count, kind="count", **_H),
    declare("transformer.past_critical", "past critical", _past_critical, kind="count", **_H),
    declare("transformer.s_star_by_layer", "s* by layer", _s_star_layers, fmt=".2f", **_H),
    declare("transformer.s_star_range", "s* range", _s_star_range, kind="range", fmt=".2f", **_H),
    declare("transformer.s_star_rel_se", "relative SE", _se_typical, fmt=".1f", unit="%", **_H),
    declare("transformer.self_max_largest", "self max", _self_max, fmt=".1f", unit="%", **_H),
    declare(
        "transformer.self_weight_half", "self-weight 1/2", _self_weight_half, kind="count", **_H
    ),
    declare(
        "transformer.self_weight_largest", "largest self-weight", _self_weight_top, fmt=".2f", **_H
    ),
    declare(
        "transformer.fluct_no_transition",
        "spread theory",
        _on(
            _no_prediction,
            "s_half_fluct",
            "heads for which the score-spread theory (gamma_c_fluct) predicts no self-weight "
            "transition",
        ),
        kind="count",
        **_H,
    ),
    declare(
        "transformer.eff_infinite",
        "mean-score theory",
        _on(
            _no_prediction,
            "s_half_eff",
            "heads whose mean self-score is not above the mean cross-score (gamma_c_eff infinite)",
        ),
        kind="count",
        **_H,
    ),
    declare("transformer.lambda_eff_ratio", "lambda_eff ratio", _eff_lambda_ratio, fmt=".2f", **_H),
    declare(
        "transformer.lambda_eff_within", "lambda_eff within", _eff_lambda_within, kind="count", **_H
    ),
    declare("transformer.lambda_eff_none", "lambda_eff none", _eff_lambda_none, kind="count", **_H),
    declare(
        "transformer.lambda_trained", "lambda at s = 1", _lambda_1, kind="range", fmt=".2f", **_H
    ),
    declare(
        "transformer.lambda_trained_by_layer",
        "lambda by layer",
        _layers("lambda_1", "median lambda at the trained scale by layer"),
        fmt=".2f",
        **_H,
    ),
    declare(
        "transformer.rho_by_layer",
        "rho_hat",
        _layers("rho_hat", "rho_hat of the normalised attention inputs by layer", np.mean),
        fmt=".3f",
        **_H,
    ),
    declare(
        "transformer.special_mass_by_layer",
        "special mass",
        _layers(
            "special_mass",
            "mean weight on [CLS] and [SEP] at the trained scale by layer (head mean)",
            np.mean,
        ),
        fmt=".2f",
        **_H,
    ),
    declare("transformer.never_crossing", "never crossing", _never_count, kind="count", **_H),
    declare("transformer.never_crossing_table", "never crossing", _never_table, kind="table", **_H),
    declare("transformer.s_star_ratio_largest_n", "s* ratio", _scaling, fmt=".2f", **_H),
    declare("transformer.log_rule_factor", "log rule", _log_rule, fmt=".3f", **_H),
    declare("transformer.closer_to_constant", "closer", _scaling_all, kind="count", **_H),
    declare(
        "transformer.s_star_ratio_smallest_n", "s* ratio small n", _smallest_n, fmt=".2f", **_H
    ),
    declare(
        "transformer.global_lambda_trained", "global s = 1", _global_1, fmt=".2f", source=[GLOBAL]
    ),
    declare("transformer.global_lambda_top", "global top", _global_top, fmt=".2f", source=[GLOBAL]),
    declare(
        "transformer.global_rho_last", "global rho", _global_rho_top, fmt=".3f", source=[GLOBAL]
    ),
    declare("transformer.bootstrap_ratio", "calibration", _calib, fmt=".2f", source=[CALIBRATION]),
    declare(
        "transformer.bootstrap_coverage",
        "coverage",
        _calib_cover,
        fmt=".0f",
        unit="%",
        source=[CALIBRATION],
    ),
    declare("transformer.window_lag1", "lag one", _lag1, fmt=".2f", source=[CALIBRATION]),
]


def _reference(Hd):
    """The reference length: the one whose s*/s*_ref is 1 for every crossing head."""
    ns = sorted(int(x) for x in Hd["n"].unique())
    ref_rows = Hd[np.isclose(Hd["s_star_over_ref"].astype(float), 1.0)]
    return int(ref_rows["n"].mode().iloc[0]) if not ref_rows.empty else ns[len(ns) // 2]


def transformer_findings(*, heads, layers, global_, calibration) -> list[Finding]:
    """Where the trained heads sit, which criterion fits them and how s* moves with n
    (docs/real-transformer.md#findings): the declarations :data:`TRANSFORMER`."""
    Hd = frame(heads)
    ns = sorted(int(x) for x in Hd["n"].unique())
    n_ref = _reference(Hd)
    R = _at(Hd, n_ref)
    tables = {
        "Hd": Hd,
        "ns": ns,
        "n_ref": n_ref,
        "n_max": ns[-1],
        "W": int(Hd["windows"].iloc[0]),
        "R": R,
        "fin": np.isfinite(R["s_star"].astype(float)),
        "G": frame(global_),
        "C": frame(calibration),
    }
    return evaluate(TRANSFORMER, tables)
