"""Findings of the training family (docs/training.md): trained retrieval models with and without
the log n rule, per variant with SEs over seeds, their differences from the plain model (paired
by seed, Holm-corrected) and the theory against the measurement. Every number is read from the
tables of ``training_retrieval_summary``."""

from __future__ import annotations

import math

from attnscale.experiments.findings.record import (
    Finding,
    NotAvailable,
    declare,
    evaluate,
    frame,
)

__all__ = [
    "SUMMARY",
    "COMPARISONS",
    "THEORY",
    "PROBES_SUMMARY",
    "RETRIEVAL",
    "LM",
    "PROBE_RATIO",
    "PROBES",
    "retrieval_findings",
    "lm_findings",
    "probe_findings",
]

SUMMARY = "training/retrieval/summary.csv"
COMPARISONS = "training/retrieval/comparisons.csv"
THEORY = "training/retrieval/theory.csv"
VARIANTS = ("plain", "rule", "learned", "test_rule")
PM_SEEDS = "one standard error of the mean over {k} seeds (independently trained models)"
PM_PAIRED = "one standard error of the seed-paired difference over {k} seeds"
#: The level of the Holm-corrected paired tests [choice].
ALPHA = 0.05


def _variant(df, v):
    sub = df[df["variant"] == v].sort_values("n")
    if sub.empty:
        raise NotAvailable(f"no rows of variant {v}")
    return sub


def _on(fn, *args):
    """``fn(t, *args)`` as a function of the tables ``t`` alone."""
    return lambda t: fn(t, *args)


def _pm(fn, template):
    """``fn``'s finding with "+-" meaning ``template`` at the tables' number of seeds ``k``."""
    return lambda t: {**fn(t), "pm": template.format(k=t["k"])}


def _curve(t, v, col):
    sub = _variant(t["S"], v)
    return {
        "label": f"{col} of variant {v} at n = {', '.join(str(n) for n in t['ns'])} "
        f"(n_train = {t['n_train']})",
        "value": sub[col].astype(float).tolist(),
        "se": sub[f"{col}_se"].astype(float).tolist(),
    }


def _diff(t, v, metric):
    C, n_max = t["C"], t["n_max"]
    r = C[(C["variant"] == v) & (C["metric"] == metric) & (C["n"] == n_max)]
    if r.empty:
        raise NotAvailable(f"no comparison of {v} at n = {n_max}")
    r = r.iloc[0]
    return {
        "label": f"{metric} of {v} minus plain at n = {n_max} = {n_max // t['n_train']} "
        f"n_train, paired by seed (Holm-adjusted two-sided p = {r['p_holm']:.2g})",
        "value": float(r["diff"]),
        "se": float(r["diff_se"]),
    }


def _significant(t, metric):
    C, n_max = t["C"], t["n_max"]
    r = C[(C["metric"] == metric) & (C["n"] == n_max)]
    if r.empty:
        raise NotAvailable(f"no comparisons at n = {n_max}")
    better = (r["diff"] > 0) & (r["p_holm"] < ALPHA)
    return {
        "label": f"variants whose {metric} at n = {n_max} exceeds plain's at Holm-adjusted "
        f"p < {ALPHA} ({', '.join(r.loc[better, 'variant']) or 'none'})",
        "value": [int(better.sum()), len(r)],
    }


def _theory_vs(t, v):
    n_max = t["n_max"]
    r = _variant(t["T"], v)
    r = r[r["n"] == n_max]
    if r.empty:
        raise NotAvailable(f"no theory row at n = {n_max}")
    r = r.iloc[0]
    return {
        "label": f"right-key weight of {v} at n = {n_max}: measured, predicted from the "
        "trained scores at n_train (iid distractors), gap-regime mean field",
        "value": [float(r["weight_right"]), float(r["weight_iid"]), float(r["weight_gap"])],
        "se": [float(r["weight_right_se"]), float(r["weight_iid_se"]), None],
    }


def _tail(t):
    p = _variant(t["S"], "plain")
    return {
        "label": "n at which the best Gaussian distractor reaches the right key's mean score "
        "(mu + sigma sqrt(2 ln n) = mean right score), plain models: mean over seeds",
        "value": float(p["n_tail"].astype(float).iloc[0]),
        "se": float(p["n_tail_se"].iloc[0]),
    }


def _err(t, col_m, col_p):
    return {
        "label": f"largest |measured - predicted| of {col_m} over variants and n (iid theory)",
        "value": float((t["T"][col_m] - t["T"][col_p]).abs().max()),
    }


_METRICS = ("accuracy", "weight_right")

#: The findings of the retrieval figure, declared (functions of the tables ``{"S": summary,
#: "C": comparisons, "T": theory}`` with the test lengths ``ns``, ``n_max``, ``n_train`` and the
#: number of seeds ``k``; :func:`retrieval_findings`).
RETRIEVAL = [
    *(
        declare(
            f"training.{name}_{v}",
            name,
            _pm(_on(_curve, v, col), PM_SEEDS),
            fmt=".2f",
            source=[SUMMARY],
        )
        for v in VARIANTS
        for name, col in (("accuracy", "accuracy"), ("weight", "weight_right"))
    ),
    *(
        declare(
            f"training.diff_{m}_{v}",
            "difference",
            _pm(_on(_diff, v, m), PM_PAIRED),
            fmt=".3f",
            source=[COMPARISONS],
        )
        for v in VARIANTS[1:]
        for m in _METRICS
    ),
    *(
        declare(
            f"training.better_{m}",
            "better",
            _on(_significant, m),
            kind="count",
            source=[COMPARISONS],
        )
        for m in _METRICS
    ),
    *(
        declare(
            f"training.theory_weight_{v}",
            "theory",
            _pm(_on(_theory_vs, v), PM_SEEDS),
            fmt=".2f",
            source=[THEORY],
        )
        for v in VARIANTS
    ),
    declare(
        "training.n_tail_plain", "tail length", _pm(_tail, PM_SEEDS), fmt=".3g", source=[SUMMARY]
    ),
    declare(
        "training.theory_weight_error",
        "error",
        _on(_err, "weight_right", "weight_iid"),
        fmt=".2f",
        source=[THEORY],
    ),
    declare(
        "training.theory_accuracy_error",
        "error",
        _on(_err, "accuracy", "accuracy_iid"),
        fmt=".2f",
        source=[THEORY],
    ),
]


def retrieval_findings(*, summary, comparisons, theory) -> list[Finding]:
    """Per variant: accuracy and right-key weight at every test n; the difference from plain at
    the largest n with its paired test; the theory against the measurement
    (docs/training.md#findings): the declarations :data:`RETRIEVAL`."""
    S = frame(summary)
    ns = sorted(int(x) for x in S["n"].unique())
    tables = {
        "S": S,
        "C": frame(comparisons),
        "T": frame(theory),
        "ns": ns,
        "n_max": ns[-1],
        "n_train": int(S["n_train"].iloc[0]),
        "k": int(S["seeds"].min()),
    }
    return evaluate(RETRIEVAL, tables)


LM_SUMMARY = "training/lm/summary.csv"
LM_COMPARISONS = "training/lm/comparisons.csv"


def _lm_curve(t, v):
    sub = _variant(t["S"].rename(columns={"lo": "n"}), v)
    return {
        "label": f"held-out loss (nats per character) of {v} in the position bands "
        + ", ".join(f"{a}-{b}" for a, b in zip(sub["n"], sub["hi"], strict=True))
        + f" (training context {t['context']})",
        "value": sub["loss"].astype(float).tolist(),
        "se": sub["loss_se"].astype(float).tolist(),
    }


def _lm_diff(t, v):
    C, lo, T = t["C"], t["los"][-1], t["context"]
    r = C[(C["variant"] == v) & (C["lo"] == lo)]
    if r.empty:
        raise NotAvailable(f"no comparison of {v}")
    r = r.iloc[0]
    hi = int(t["S"]["hi"].max())
    return {
        "label": f"held-out loss of {v} minus plain at positions {lo}-{hi} "
        f"({hi // T} x the training context), paired by seed (Holm-adjusted p = "
        f"{r['p_holm']:.2g})",
        "value": float(r["diff"]),
        "se": float(r["diff_se"]),
    }


#: The findings of the language model, declared (functions of the tables ``{"S": summary,
#: "C": comparisons}`` with the training ``context``, the bands' starts ``los`` and the number
#: of seeds ``k``; :func:`lm_findings`).
LM = [
    *(
        declare(
            f"training.lm_loss_{v}",
            "loss",
            _pm(_on(_lm_curve, v), PM_SEEDS),
            fmt=".3f",
            source=[LM_SUMMARY],
        )
        for v in VARIANTS
    ),
    *(
        declare(
            f"training.lm_diff_{v}",
            "difference",
            _pm(_on(_lm_diff, v), PM_PAIRED),
            fmt=".3f",
            source=[LM_COMPARISONS],
        )
        for v in VARIANTS[1:]
    ),
]


def lm_findings(*, summary, comparisons) -> list[Finding]:
    """The language model's held-out loss beyond its training context per variant, and each
    variant minus plain in the last band (docs/training.md#findings): the declarations
    :data:`LM`."""
    S = frame(summary)
    tables = {
        "S": S,
        "C": frame(comparisons),
        "context": int(S["context"].iloc[0]),
        "k": int(S["seeds"].min()),
        "los": sorted(int(x) for x in S["lo"].unique()),
    }
    return evaluate(LM, tables)


PROBES_SUMMARY = "training/lm/probes_summary.csv"
PM_HEADS = "median over the heads of every layer and seed ({k} seeds); no SE: a spread, see the figure's quartiles"


def _finite(values, what):
    vals = [float(x) for x in values]
    if not vals or not all(math.isfinite(x) for x in vals):
        raise NotAvailable(f"{what}: no head crosses the critical level in some band")
    return vals


def _probe_ratio(t, v, name):
    sub = _variant(t["after"].rename(columns={"band": "n"}), v)
    bands = ", ".join(f"{a}-{b}" for a, b in zip(sub["lo"], sub["hi"], strict=True))
    return {
        "label": f"median s*(n)/s*(n_train) ({name} lambda) of {v}'s heads, query "
        f"positions {bands} (n_train = {t['n_train']})",
        "value": _finite(sub[f"ratio_{name}_median"], v),
    }


def _probe_at(t, hi, col, what):
    """``what`` (the column ``col``) of every variant in the band ending at ``hi``
    (``"train"``: n_train, ``"last"``: the last band)."""
    hi = {"train": t["n_train"], "last": t["last"]}[hi]
    sub = t["S"][t["S"]["hi"] == hi].set_index("variant").reindex(t["variants"])
    return {
        "label": f"{what} of {', '.join(t['variants'])} at query positions up to {hi} "
        f"(n_train = {t['n_train']})",
        "value": _finite(sub[col], what),
    }


def _probe_learned(t):
    S = t["S"]
    sub = S[(S["hi"] == t["n_train"]) & (S["variant"] == "learned")]
    return {
        "label": "median over heads and seeds of the learned s_h ln n_train sqrt(d_h), the "
        "learned factor at n_train over the plain one",
        "value": _finite(sub["learned_factor"], "learned factor")[0],
    }


_PROBES = {"source": [PROBES_SUMMARY]}

#: The per-variant ratio finding of the trained heads, declared for every variant (a run reports
#: those of the variants it trained).
PROBE_RATIO = {
    v: declare(
        f"training.probe_ratio_{v}",
        "ratio",
        _pm(_on(_probe_ratio, v, "normalised"), PM_HEADS),
        fmt=".2f",
        **_PROBES,
    )
    for v in VARIANTS
}

#: The other findings of the trained heads, declared (functions of the tables of
#: :func:`probe_findings`).
PROBES = [
    declare(
        "training.probe_ratio_paper_a_last",
        "ratio",
        _pm(
            _on(
                _probe_at,
                "last",
                "ratio_paper_a_median",
                "median s*(n)/s*(n_train) under Paper A's lambda",
            ),
            PM_HEADS,
        ),
        fmt=".2f",
        **_PROBES,
    ),
    *(
        declare(
            f"training.probe_sstar_train_{name}",
            "s*",
            _pm(
                _on(
                    _probe_at,
                    "train",
                    f"s_star_{name}",
                    f"median s* ({name} lambda), 1 = the trained scale",
                ),
                PM_HEADS,
            ),
            fmt=".2f",
            **_PROBES,
        )
        for name in ("normalised", "paper_a")
    ),
    *(
        declare(
            f"training.probe_crossing_paper_a_{hi}",
            "share",
            _on(_probe_at, hi, "crossing_paper_a", "share of heads whose Paper-A lambda crosses"),
            fmt=".2f",
            **_PROBES,
        )
        for hi in ("train", "last")
    ),
    declare(
        "training.probe_learned_factor",
        "learned factor",
        _pm(_probe_learned, PM_HEADS),
        fmt=".2f",
        **_PROBES,
    ),
]


def probe_findings(*, summary) -> list[Finding]:
    """The trained language model's heads on the phase diagram: per variant, the median
    s*(n)/s*(n_train) per position band from n_train on, s* at n_train (1 = the trained scale),
    the share of heads whose Paper-A lambda crosses, and the learned factor
    (docs/training.md#the-trained-heads-on-the-phase-diagram): the declarations
    :data:`PROBE_RATIO` (of the variants trained) and :data:`PROBES`."""
    S = frame(summary)
    T = int(S["n_train"].iloc[0])
    variants = [v for v in VARIANTS if v in set(S["variant"])]
    tables = {
        "S": S,
        "n_train": T,
        "k": int(S["seeds"].min()),
        "after": S[S["hi"] >= T],
        "last": int(S["hi"].max()),
        "variants": variants,
    }
    return evaluate([PROBE_RATIO[v] for v in variants] + PROBES, tables)
