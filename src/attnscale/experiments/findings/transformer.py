"""Findings of the transformer family (docs/real-transformer.md): every head of
all-MiniLM-L6-v2 on the phase diagram, its critical multiplier, the theory's predictions and
how s* moves with n. Every number is read from the tables of ``transformer_summary``."""

from __future__ import annotations

import numpy as np

from attnscale.experiments.findings.record import Finding, NotAvailable, compute, frame

__all__ = ["HEADS", "LAYERS", "GLOBAL", "CALIBRATION", "transformer_findings"]

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


def transformer_findings(*, heads, layers, global_, calibration) -> list[Finding]:
    """Where the trained heads sit, which criterion fits them and how s* moves with n
    (docs/real-transformer.md#findings)."""
    Hd = frame(heads)
    ns = sorted(int(x) for x in Hd["n"].unique())
    # the reference length: the one whose s*/s*_ref is 1 for every crossing head
    ref_rows = Hd[np.isclose(Hd["s_star_over_ref"].astype(float), 1.0)]
    n_ref = int(ref_rows["n"].mode().iloc[0]) if not ref_rows.empty else ns[len(ns) // 2]
    n_max = ns[-1]
    W = int(Hd["windows"].iloc[0])
    R = _at(Hd, n_ref)
    fin = np.isfinite(R["s_star"].astype(float))
    src_h = [HEADS]

    def by_layer(sub, col, fn=np.median):
        return [float(fn(g[col].astype(float))) for _, g in sub.groupby("layer")]

    def crossing_count():
        return {
            "label": f"heads whose lambda(s)/lambda(inf) crosses 1/(1 + 3 rho_hat) on "
            f"s in [1/16, 16], n = {n_ref}",
            "value": [int(fin.sum()), len(R)],
        }

    def past_critical():
        return {
            "label": f"heads already past their critical multiplier at the trained scale "
            f"(s* < 1), n = {n_ref}",
            "value": [int((R["s_star"] < 1.0).sum()), len(R)],
        }

    def s_star_layers():
        return {
            "label": f"median s* by layer 0 .. {int(R['layer'].max())}, n = {n_ref} "
            "(crossing heads)",
            "value": by_layer(R[fin], "s_star"),
        }

    def s_star_range():
        v = R.loc[fin, "s_star"].astype(float)
        return {"label": f"s* over crossing heads, n = {n_ref}", "value": [v.min(), v.max()]}

    def self_max():
        return {
            "label": f"largest fraction of query rows whose own score is the row maximum, "
            f"over all heads, n = {n_ref}",
            "value": 100.0 * float(R["self_max"].max()),
        }

    def self_weight_half():
        k = int(np.isfinite(R["s_half"].astype(float)).sum())
        return {
            "label": f"heads whose mean self-weight reaches 1/2 for some s <= 16, n = {n_ref}",
            "value": [k, len(R)],
        }

    def self_weight_top():
        return {
            "label": f"largest mean self-weight over heads and s <= 16, n = {n_ref}",
            "value": float(R["self_weight_max"].max()),
        }

    def fluct_none():
        k = int((~np.isfinite(R["s_half_fluct"].astype(float))).sum())
        return {
            "label": "heads for which the score-spread theory (gamma_c_fluct) predicts no "
            f"self-weight transition, n = {n_ref}",
            "value": [k, len(R)],
        }

    def eff_none():
        k = int((~np.isfinite(R["s_half_eff"].astype(float))).sum())
        return {
            "label": "heads whose mean self-score is not above the mean cross-score "
            f"(gamma_c_eff infinite), n = {n_ref}",
            "value": [k, len(R)],
        }

    def eff_lambda_ratio():
        ok = fin & np.isfinite(R["s_star_eff"].astype(float))
        if not ok.any():
            raise NotAvailable("no head with both crossings")
        r = (R.loc[ok, "s_star"] / R.loc[ok, "s_star_eff"]).astype(float)
        return {
            "label": "s* over the effective-score simplex prediction (lambda_eff crossing): "
            f"median and the 10 % / 90 % quantiles over {int(ok.sum())} heads, n = {n_ref}",
            "value": [float(r.median()), float(r.quantile(0.1)), float(r.quantile(0.9))],
        }

    def eff_lambda_within():
        ok = fin & np.isfinite(R["s_star_eff"].astype(float))
        r = (R.loc[ok, "s_star"] / R.loc[ok, "s_star_eff"]).astype(float)
        if r.empty:
            raise NotAvailable("no head with both crossings")
        return {
            "label": "heads whose s* is within a factor 1.5 of the lambda_eff prediction",
            "value": [int(((r > 1 / 1.5) & (r < 1.5)).sum()), int(ok.sum())],
        }

    def eff_lambda_none():
        k = int((fin & ~np.isfinite(R["s_star_eff"].astype(float))).sum())
        return {
            "label": "crossing heads for which the lambda_eff prediction never crosses on the grid",
            "value": [k, int(fin.sum())],
        }

    def lambda_1():
        v = R["lambda_1"].astype(float)
        return {
            "label": f"lambda at the trained scale over heads, n = {n_ref}",
            "value": [v.min(), v.max()],
        }

    def lambda_1_layers():
        return {
            "label": f"median lambda at the trained scale by layer, n = {n_ref}",
            "value": by_layer(R, "lambda_1"),
        }

    def rho_layers():
        return {
            "label": f"rho_hat of the normalised attention inputs by layer, n = {n_ref}",
            "value": by_layer(R, "rho_hat", np.mean),
        }

    def special_layers():
        return {
            "label": f"mean weight on [CLS] and [SEP] at the trained scale by layer (head "
            f"mean), n = {n_ref}",
            "value": by_layer(R, "special_mass", np.mean),
        }

    def never_count():
        fin_all = np.isfinite(Hd["s_star"].astype(float))
        return {
            "label": f"(n, head) pairs over n = {' / '.join(str(x) for x in ns)} whose "
            "lambda(s)/lambda(inf) never crosses on the grid",
            "value": [int((~fin_all).sum()), len(Hd)],
        }

    def never_table():
        nv = Hd[~np.isfinite(Hd["s_star"].astype(float))].sort_values(["n", "layer", "head"])
        rows = [
            [
                int(r.n),
                int(r.layer),
                int(r.head),
                r.top_key_share,
                r.lambda_inf,
                r.self_max,
                r.special_mass,
                r.lambda_1,
            ]
            for r in nv.itertuples()
        ]
        return {
            "label": "heads that never cross and what their attention does instead: share of "
            "queries sent to the window's most frequent top key, lambda of the argmax map, "
            "fraction of rows whose own score is the maximum, weight on [CLS]/[SEP] and "
            "lambda at s = 1",
            "value": rows,
            "columns": [
                "n",
                "layer",
                "head",
                "top-key share",
                "lambda(inf)",
                "self max",
                "[CLS]/[SEP] weight",
                "lambda(1)",
            ],
            "columns_fmt": ["d", "d", "d", ".2f", ".3f", ".2f", ".2f", ".3f"],
        }

    def scaling():
        big = _at(Hd, n_max)
        ok = np.isfinite(big["s_star_over_ref"].astype(float))
        return {
            "label": f"median s*({n_max}) / s*({n_ref}) by layer (heads crossing at both)",
            "value": by_layer(big[ok], "s_star_over_ref"),
        }

    def log_rule():
        return {
            "label": f"the log n rule's factors ln {ns[0]} / ln {n_ref} and ln {n_max} / ln {n_ref}",
            "value": [float(np.log(ns[0]) / np.log(n_ref)), float(np.log(n_max) / np.log(n_ref))],
        }

    def scaling_all():
        big = _at(Hd, n_max)
        r = big["s_star_over_ref"].astype(float)
        r = r[np.isfinite(r)]
        lr = np.log(n_max) / np.log(n_ref)
        closer = int((np.abs(np.log(r)) < np.abs(np.log(r / lr))).sum())
        return {
            "label": f"heads whose s*({n_max}) is closer (in ln) to s*({n_ref}) than to "
            "the log n rule's value",
            "value": [closer, int(r.size)],
        }

    def smallest_n():
        s = _at(Hd, ns[0])
        ok = np.isfinite(s["s_star_over_ref"].astype(float))
        return {
            "label": f"median s*({ns[0]}) / s*({n_ref}) by layer",
            "value": by_layer(s[ok], "s_star_over_ref"),
        }

    G = frame(global_)

    def global_1():
        g = G[np.isclose(G["s"].astype(float), 1.0)].sort_values("layer")
        if g.empty:
            raise NotAvailable("no s = 1 in the global grid")
        return {
            "label": "whole model at s = 1: lambda by layer (head mean)",
            "value": g["lambda"].tolist(),
            "se": g["lambda_se"].tolist(),
        }

    def global_top():
        smax = float(G["s"].max())
        g = G[np.isclose(G["s"].astype(float), smax)].sort_values("layer")
        return {
            "label": f"whole model at s = {smax:g}: lambda by layer",
            "value": g["lambda"].tolist(),
            "se": g["lambda_se"].tolist(),
        }

    def global_rho_top():
        smax, smin = float(G["s"].max()), float(G["s"].min())
        hi = G[np.isclose(G["s"].astype(float), smax)].sort_values("layer")
        lo = G[np.isclose(G["s"].astype(float), smin)].sort_values("layer")
        return {
            "label": f"whole model: rho_hat of the last layer's inputs at s = {smin:g} / 1 / "
            f"{smax:g}",
            "value": [
                float(lo["rho_hat"].iloc[-1]),
                float(G[np.isclose(G["s"], 1.0)].sort_values("layer")["rho_hat"].iloc[-1]),
                float(hi["rho_hat"].iloc[-1]),
            ],
        }

    C = frame(calibration)

    def calib():
        c = C.sort_values("phi")
        return {
            "label": "block bootstrap on generated AR(1) series of "
            f"{int(c['windows'].iloc[0])} windows, block {int(c['block'].iloc[0])}: mean "
            "bootstrap SE over the true SE at lag-one correlation "
            + " / ".join(f"{p:g}" for p in c["phi"]),
            "value": c["ratio"].tolist(),
        }

    def calib_cover():
        c = C.sort_values("phi")
        return {
            "label": "coverage of mean +- 1.96 SE (nominal 95 %) at the same correlations",
            "value": (100.0 * c["coverage_95"]).tolist(),
        }

    def lag1():
        return {
            "label": "measured lag-one correlation of the layer-mean lambda(s = 1) between "
            "consecutive windows (mean over n)",
            "value": float(C["measured_lag1"].iloc[0]),
        }

    def se_typical():
        v = R.loc[fin, "s_star_se"].astype(float) / R.loc[fin, "s_star"].astype(float)
        return {
            "label": f"median relative SE of s*, n = {n_ref}",
            "value": 100.0 * float(np.nanmedian(v)),
        }

    kw = {"source": src_h}
    return [
        compute("transformer.crossing_heads", "crossing heads", crossing_count, kind="count", **kw),
        compute("transformer.past_critical", "past critical", past_critical, kind="count", **kw),
        compute("transformer.s_star_by_layer", "s* by layer", s_star_layers, fmt=".2f", **kw),
        compute(
            "transformer.s_star_range", "s* range", s_star_range, kind="range", fmt=".2f", **kw
        ),
        compute("transformer.s_star_rel_se", "relative SE", se_typical, fmt=".1f", unit="%", **kw),
        compute("transformer.self_max_largest", "self max", self_max, fmt=".1f", unit="%", **kw),
        compute(
            "transformer.self_weight_half", "self-weight 1/2", self_weight_half, kind="count", **kw
        ),
        compute(
            "transformer.self_weight_largest",
            "largest self-weight",
            self_weight_top,
            fmt=".2f",
            **kw,
        ),
        compute("transformer.fluct_no_transition", "spread theory", fluct_none, kind="count", **kw),
        compute("transformer.eff_infinite", "mean-score theory", eff_none, kind="count", **kw),
        compute(
            "transformer.lambda_eff_ratio", "lambda_eff ratio", eff_lambda_ratio, fmt=".2f", **kw
        ),
        compute(
            "transformer.lambda_eff_within",
            "lambda_eff within",
            eff_lambda_within,
            kind="count",
            **kw,
        ),
        compute(
            "transformer.lambda_eff_none", "lambda_eff none", eff_lambda_none, kind="count", **kw
        ),
        compute(
            "transformer.lambda_trained", "lambda at s = 1", lambda_1, kind="range", fmt=".2f", **kw
        ),
        compute(
            "transformer.lambda_trained_by_layer",
            "lambda by layer",
            lambda_1_layers,
            fmt=".2f",
            **kw,
        ),
        compute("transformer.rho_by_layer", "rho_hat", rho_layers, fmt=".3f", **kw),
        compute(
            "transformer.special_mass_by_layer", "special mass", special_layers, fmt=".2f", **kw
        ),
        compute("transformer.never_crossing", "never crossing", never_count, kind="count", **kw),
        compute(
            "transformer.never_crossing_table", "never crossing", never_table, kind="table", **kw
        ),
        compute("transformer.s_star_ratio_largest_n", "s* ratio", scaling, fmt=".2f", **kw),
        compute("transformer.log_rule_factor", "log rule", log_rule, fmt=".3f", **kw),
        compute("transformer.closer_to_constant", "closer", scaling_all, kind="count", **kw),
        compute(
            "transformer.s_star_ratio_smallest_n", "s* ratio small n", smallest_n, fmt=".2f", **kw
        ),
        compute(
            "transformer.global_lambda_trained",
            "global s = 1",
            global_1,
            fmt=".2f",
            source=[GLOBAL],
            pm=PM_BOOT.format(k=W),
        ),
        compute(
            "transformer.global_lambda_top",
            "global top",
            global_top,
            fmt=".2f",
            source=[GLOBAL],
            pm=PM_BOOT.format(k=W),
        ),
        compute(
            "transformer.global_rho_last", "global rho", global_rho_top, fmt=".3f", source=[GLOBAL]
        ),
        compute(
            "transformer.bootstrap_ratio", "calibration", calib, fmt=".2f", source=[CALIBRATION]
        ),
        compute(
            "transformer.bootstrap_coverage",
            "coverage",
            calib_cover,
            fmt=".0f",
            unit="%",
            source=[CALIBRATION],
        ),
        compute("transformer.window_lag1", "lag one", lag1, fmt=".2f", source=[CALIBRATION]),
    ]
