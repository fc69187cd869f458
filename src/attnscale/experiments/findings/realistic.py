"""Findings of the realistic-attention figures (docs/realistic-attention.md): learned query-key
matrices, the attention sink and depth. One function per figure; each reads the tables of its
figure only."""

from __future__ import annotations

import numpy as np

from attnscale.experiments.findings.record import (
    Finding,
    NotAvailable,
    declare,
    evaluate,
    frame,
    pick,
)

__all__ = [
    "LEARNED",
    "SINK",
    "DEPTH",
    "SINK_TOL_PCT",
    "LEARNED_QK",
    "SINK_FINDINGS",
    "DEPTH_FINDINGS",
    "learned_qk_findings",
    "sink_findings",
    "depth_findings",
]

LEARNED = "realistic/learned_qk/trial*_{part}.csv"
SINK = "realistic/sink/trial*_{part}.csv"
DEPTH = "realistic/depth/trial*.csv"

#: Relative agreement called "exact" for the sink's spread-corrected line [choice].
SINK_TOL_PCT = 0.01


def _variant(kind: str, value: float) -> str:
    if kind == "identity":
        return "W = I"
    if kind == "perturbed":
        return f"W = I + eps G, eps = {value:g}"
    return f"rank {int(value)} projection"


def _learned_table(C):
    records = []
    for (kind, value), g in C.groupby(["kind", "value"], sort=False):
        g = g.sort_values("trial")
        records.append(
            [_variant(kind, value), *g["gamma_half_sim"], *g["sim_over_eff"], *g["sim_over_fluct"]]
        )
    k = C["trial"].nunique()
    cols = [
        "W",
        *[f"gamma* draw {t}" for t in range(k)],
        *[f"gamma*/gamma_c,eff draw {t}" for t in range(k)],
        *[f"gamma*/gamma_c,sigma draw {t}" for t in range(k)],
    ]
    return {
        "label": f"simulated critical gamma (mean A_ii = 1/2; n = {int(C['n'].iloc[0])}, "
        f"d = {int(C['d'].iloc[0])}, rho = {C['rho'].iloc[0]:g}) and its ratio to the "
        "mean-score prediction 1/(s_self - s_cross) and to the prediction with the score "
        "spread sigma",
        "value": records,
        "columns": cols,
        "columns_fmt": ["", *[".4f"] * (3 * k)],
    }


def _near_identity(C, col):
    sub = C[C["kind"].isin(["identity", "perturbed"])]
    if sub.empty:
        raise NotAvailable("no identity or perturbed W")
    return sub[col].astype(float)


def _eff_range(C):
    v = _near_identity(C, "sim_over_eff")
    return {
        "label": "W = I and its perturbations: simulated critical gamma over the mean-score "
        "prediction, range over variants and draws",
        "value": [v.min(), v.max()],
    }


def _fluct_error(C):
    v = _near_identity(C, "sim_over_fluct")
    return {
        "label": "W = I and its perturbations: largest relative error of the prediction with "
        "the score spread",
        "value": 100.0 * float((v - 1.0).abs().max()),
    }


def _learned_no_transition(C):
    sub = C[C["gamma_half_sim"].isna()]
    ranks = sorted({int(v) for v in sub.loc[sub["kind"] == "projected", "value"]})
    if not ranks:
        raise NotAvailable("every projection has a transition on this grid")
    return {
        "label": "projection ranks whose mean self-weight never reaches 1/2 in the search range",
        "value": ranks,
        "fmt": "d",
    }


def _low_rank_at_top(curves, col):
    """Mean over draws of ``col`` by projection rank at the grid's largest gamma."""
    G = pick(frame(curves), gamma_kind="grid", kind="projected")
    gmax = G["gamma"].max()
    return gmax, G[G["gamma"] == gmax].groupby("value")[col].mean()


def _low_rank_self_weight(t):
    gmax, top = _low_rank_at_top(t["curves"], "self_weight")
    return {
        "label": f"projections, gamma = {gmax:g} (mean over draws): self-weight by rank "
        + " / ".join(str(int(r)) for r in top.index),
        "value": top.tolist(),
    }


def _low_rank_lambda(t):
    gmax, top = _low_rank_at_top(t["curves"], "lambda")
    return {
        "label": f"projections, gamma = {gmax:g}: lambda by rank "
        + " / ".join(str(int(r)) for r in top.index),
        "value": top.tolist(),
    }


def _r_min(C):
    n, rho = float(C["n"].iloc[0]), float(C["rho"].iloc[0])
    return {
        "label": "smallest rank with a transition by the spread criterion, "
        "r_min = 2 ln(n-1)/(1 - rho)",
        "value": 2.0 * np.log(n - 1.0) / (1.0 - rho),
        "note": "from the table's n and rho (docs/realistic-attention.md#score-spread)",
    }


def _of_critical(fn):
    """``fn`` of the critical-point table ``C`` alone."""
    return lambda t: fn(t["C"])


_LEARNED_C, _LEARNED_G = [LEARNED.format(part="critical")], [LEARNED.format(part="curves")]

#: The findings of the learned-Q^T K figure, declared (functions of the tables ``{"C": critical
#: points, "curves": the curves}``).
LEARNED_QK = [
    declare(
        "learned_qk.table",
        "learned Q^T K critical points",
        _of_critical(_learned_table),
        kind="table",
        source=_LEARNED_C,
    ),
    declare(
        "learned_qk.mean_score_ratio",
        "mean-score prediction",
        _of_critical(_eff_range),
        kind="range",
        fmt=".3f",
        source=_LEARNED_C,
    ),
    declare(
        "learned_qk.spread_error",
        "spread prediction",
        _of_critical(_fluct_error),
        fmt=".2f",
        unit="%",
        source=_LEARNED_C,
    ),
    declare(
        "learned_qk.no_transition_ranks",
        "ranks without a transition",
        _of_critical(_learned_no_transition),
        source=_LEARNED_C,
    ),
    declare(
        "learned_qk.low_rank_self_weight",
        "low-rank self-weight",
        _low_rank_self_weight,
        fmt=".2g",
        source=_LEARNED_G,
    ),
    declare(
        "learned_qk.low_rank_lambda",
        "low-rank lambda",
        _low_rank_lambda,
        fmt=".2f",
        source=_LEARNED_G,
    ),
    declare("learned_qk.r_min", "r_min", _of_critical(_r_min), fmt=".1f", source=_LEARNED_C),
]


def learned_qk_findings(*, curves, critical) -> list[Finding]:
    """Where the transition sits for W = I + eps G and rank-r projections, and how well the
    mean-score and spread predictions place it (docs/realistic-attention.md#learned-query-key-matrix):
    the declarations :data:`LEARNED_QK`."""
    return evaluate(LEARNED_QK, {"C": frame(critical), "curves": curves})


#: Columns of the sink table: header, the critical-point table's column and the format.
_SINK_COLUMNS = [
    ("kappa c_s", "kc", ".3g"),
    ("c_s", "c_s", "g"),
    ("kappa", "kappa", "g"),
    ("gamma* sim", "gamma_half_sim", ".4f"),
    ("shift %", "shift_pct", "+.2f"),
    ("gamma* simplex", "gamma_half_simplex", ".4f"),
    ("gamma* simplex + spread", "gamma_half_fluct", ".4f"),
    ("spread error %", "spread_err_pct", "+.3f"),
    ("sink mass at gamma_c", "sink_mass_at_gc", ".2g"),
    ("sink mass, simplex", "sink_mass_at_gc_simplex", ".2g"),
]


def _sink_table(C):
    records = [
        [r[col] for _, col, _ in _SINK_COLUMNS]
        for _, r in C.sort_values(["kc", "kappa"]).iterrows()
    ]
    return {
        "label": f"critical gamma with a sink (n = {int(C['n'].iloc[0])}, d = "
        f"{int(C['d'].iloc[0])}, rho = {C['rho'].iloc[0]:g}, one draw), by kappa c_s",
        "value": records,
    }


def _harmless(C):
    return {
        "label": "kappa = 1 (Paper A's K = I): largest sink mass at gamma_c(rho_hat) over c_s",
        "value": pick(C, kappa=1.0)["sink_mass_at_gc"].max(),
    }


def _harmless_shift(C):
    return {
        "label": "kappa = 1: largest shift of the simulated critical gamma over c_s",
        "value": pick(C, kappa=1.0)["shift_pct"].max(),
    }


def _strong(C):
    s = C[
        (C["kappa"] > 1.0)
        & np.isfinite(C["gamma_half_sim"])
        & (C["kc"] > C.loc[C["kappa"] == 1.0, "kc"].max())
    ].sort_values("kc")
    if s.empty:
        raise NotAvailable("no kappa c_s beyond the kappa = 1 rows with a transition")
    return {
        "label": "shift of the simulated critical gamma at kappa c_s = "
        + " / ".join(f"{x:.3g}" for x in s["kc"]),
        "value": s["shift_pct"].tolist(),
    }


def _sink_no_transition(C):
    s = C[~np.isfinite(C["gamma_half_sim"])].sort_values("kc")
    if s.empty:
        raise NotAvailable("every kappa c_s of the grid has a transition")
    return {
        "label": "kappa c_s without a transition (self-weight never 1/2), and the sink mass "
        "at gamma_c there: kappa c_s = " + " / ".join(f"{x:.3g}" for x in s["kc"]),
        "value": s["sink_mass_at_gc"].tolist(),
    }


def _simplex_offset(C):
    s = C[np.isfinite(C["gamma_half_sim"]) & np.isfinite(C["gamma_half_simplex"])]
    v = 100.0 * (s["gamma_half_sim"] / s["gamma_half_simplex"] - 1.0)
    return {
        "label": "simulated critical gamma above the exact simplex-with-sink value (no "
        "spread), range over the grid",
        "value": [v.min(), v.max()],
    }


def _spread_split(C):
    """The grid points with a spread error, sorted by kappa c_s, and those beyond the tolerance."""
    s = C[np.isfinite(C["spread_err_pct"])].sort_values("kc")
    return s, s[s["spread_err_pct"].abs() > SINK_TOL_PCT]


def _spread_exact_up_to(C):
    s, bad = _spread_split(C)
    ok = s if bad.empty else s[s["kc"] < bad["kc"].min()]
    if ok.empty:
        raise NotAvailable("no kappa c_s within the tolerance")
    return {
        "label": f"largest kappa c_s up to which the spread-corrected line is within "
        f"{SINK_TOL_PCT:g} % of the simulated critical gamma (every grid point up to it)",
        "value": ok["kc"].max(),
    }


def _spread_beyond(C):
    _, bad = _spread_split(C)
    if bad.empty:
        raise NotAvailable(f"the spread correction is within {SINK_TOL_PCT:g} % everywhere")
    return {
        "label": "relative error of the spread-corrected line beyond that, at kappa c_s = "
        + " / ".join(f"{x:.3g}" for x in bad["kc"]),
        "value": bad["spread_err_pct"].tolist(),
    }


_SINK_C = [SINK.format(part="critical")]

#: The findings of the sink figure, declared (functions of the critical-point table with the
#: columns ``kc``, ``shift_pct`` and ``spread_err_pct`` added; :func:`sink_findings`).
SINK_FINDINGS = [
    declare(
        "sink.table",
        "sink table",
        _sink_table,
        kind="table",
        source=_SINK_C,
        columns=[c for c, _, _ in _SINK_COLUMNS],
        columns_fmt=[f for _, _, f in _SINK_COLUMNS],
    ),
    declare("sink.kappa1_max_mass", "sink mass at kappa = 1", _harmless, fmt=".2g", source=_SINK_C),
    declare(
        "sink.kappa1_max_shift",
        "shift at kappa = 1",
        _harmless_shift,
        fmt=".2f",
        unit="%",
        source=_SINK_C,
    ),
    declare(
        "sink.strong_shift",
        "shift with a strong sink key",
        _strong,
        fmt="+.1f",
        unit="%",
        source=_SINK_C,
    ),
    declare(
        "sink.no_transition_mass", "no transition", _sink_no_transition, fmt=".2f", source=_SINK_C
    ),
    declare(
        "sink.simplex_offset",
        "simplex offset",
        _simplex_offset,
        kind="range",
        fmt=".2f",
        unit="%",
        source=_SINK_C,
    ),
    declare(
        "sink.spread_exact_up_to",
        "spread correction exact up to",
        _spread_exact_up_to,
        fmt=".3g",
        source=_SINK_C,
    ),
    declare(
        "sink.spread_error_beyond",
        "spread correction error beyond",
        _spread_beyond,
        fmt="+.2f",
        unit="%",
        source=_SINK_C,
    ),
]


def sink_findings(*, curves, critical) -> list[Finding]:
    """How a sink token moves the critical line, and how well the simplex-with-sink theory
    (with and without the score spread) predicts it (docs/realistic-attention.md#attention-sink):
    the declarations :data:`SINK_FINDINGS`."""
    C = frame(critical).copy()
    C["kc"] = C["kappa"] * C["c_s"]
    C["shift_pct"] = 100.0 * (C["gamma_half_sim"] / C["gamma_half_nosink_sim"] - 1.0)
    C["spread_err_pct"] = 100.0 * (C["gamma_half_fluct"] / C["gamma_half_sim"] - 1.0)
    return evaluate(SINK_FINDINGS, C)


def _alpha0_critical(D):
    s = pick(D, alpha=0.0, gamma_factor=1.0).sort_values("layer")
    return s[np.isfinite(s["delta"])]


def _critical_alpha0(D):
    s = _alpha0_critical(D)
    return {
        "label": "alpha = 0, gamma = gamma_c(rho_hat_0): 1 - rho by layer "
        + " / ".join(str(int(x)) for x in s["layer"])
        + " (simulated)",
        "value": s["delta"].tolist(),
    }


def _critical_alpha0_map(D):
    return {
        "label": "the same layers by the iterated simplex map",
        "value": _alpha0_critical(D)["delta_simplex"].tolist(),
    }


def _layer2(D):
    r = pick(D, alpha=0.0, gamma_factor=1.0, layer=2).iloc[0]
    return {
        "label": "alpha = 0: gamma / gamma_c(rho_1) of the second layer",
        "value": r["gamma_over_gc_input"],
    }


def _layers_to_collapse(D):
    out, labels = [], []
    for f, g in pick(D, alpha=0.0).groupby("gamma_factor"):
        labels.append(f"{f:g}")
        out.append(int(g.loc[np.isfinite(g["delta"]), "layer"].max()))
    return {
        "label": f"alpha = 0: last of the {int(D['layer'].max())} layers at which the tokens are "
        "still apart (1 - rho >= 1e-24; below, the simulation stops), at gamma / gamma_c = "
        + " / ".join(labels),
        "value": out,
        "fmt": "d",
    }


def _twice(D):
    s = pick(D, alpha=0.0, gamma_factor=2.0).sort_values("layer")
    L = int(s["layer"].max())
    layers = sorted({L // 4, L // 2, 3 * L // 4, L - 4, L - 2, L})
    records = [
        [int(r["layer"]), r["delta"], r["delta_simplex"], r["gamma_over_gc_input"]]
        for _, r in s[s["layer"].isin(layers)].iterrows()
    ]
    return {"label": "alpha = 0, gamma = 2 gamma_c(rho_hat_0): 1 - rho by layer", "value": records}


def _residual_last(D):
    """The rows of alpha = 1 at the last layer, by gamma factor, and that layer."""
    s = pick(D, alpha=1.0)
    L = s["layer"].max()
    return s[s["layer"] == L].sort_values("gamma_factor"), L


def _residual(D):
    s, L = _residual_last(D)
    return {
        "label": f"alpha = 1: 1 - rho after {int(L)} layers at gamma / gamma_c = "
        + " / ".join(f"{f:g}" for f in s["gamma_factor"])
        + " (simulated)",
        "value": s["delta"].tolist(),
    }


def _residual_map(D):
    s, _ = _residual_last(D)
    return {"label": "the same by the iterated simplex map", "value": s["delta_simplex"].tolist()}


#: The findings of the depth figure, declared (functions of the per-layer rows ``D``).
DEPTH_FINDINGS = [
    declare(
        "depth.alpha0_critical", "collapse at gamma_c", _critical_alpha0, fmt=".2g", source=[DEPTH]
    ),
    declare(
        "depth.alpha0_critical_map",
        "simplex map at gamma_c",
        _critical_alpha0_map,
        fmt=".2g",
        source=[DEPTH],
    ),
    declare("depth.alpha0_layer2_ratio", "second layer", _layer2, fmt=".2f", source=[DEPTH]),
    declare(
        "depth.alpha0_collapse_layer", "layers to collapse", _layers_to_collapse, source=[DEPTH]
    ),
    declare(
        "depth.alpha0_twice_critical",
        "twice critical",
        _twice,
        kind="table",
        columns=["layer", "1 - rho simulated", "1 - rho simplex map", "gamma / gamma_c(rho_l)"],
        columns_fmt=["d", ".3g", ".3g", ".3f"],
        source=[DEPTH],
    ),
    declare("depth.alpha1_final", "residual", _residual, fmt=".3g", source=[DEPTH]),
    declare("depth.alpha1_final_map", "residual, map", _residual_map, fmt=".3g", source=[DEPTH]),
]


def depth_findings(*, data) -> list[Finding]:
    """Iterating Paper A's layer: collapse without residual, the power law with it
    (docs/realistic-attention.md#depth): the declarations :data:`DEPTH_FINDINGS`."""
    return evaluate(DEPTH_FINDINGS, frame(data))
