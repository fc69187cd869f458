"""Findings of the trained heads on the phase diagram beyond the language model's probes
(docs/training.md#the-retrieval-heads-on-the-phase-diagram,
docs/training.md#is-the-trained-scale-critical): the trained retrieval layer's s*(n)/s*(n_train)
per variant under both definitions of lambda and the effective-score critical multiplier
gamma_c_eff ln n, and the trained scale against the critical one at n_train for the retrieval
and the language models. Means over seeds with one SE over seeds, read from the tables of
``training_retrieval_probes_summary`` and ``training_lm_probes_summary``."""

from __future__ import annotations

import numpy as np

from attnscale.experiments.findings.record import Finding, NotAvailable, declare, evaluate, frame

__all__ = ["SUMMARY", "CRITICAL", "VARIANTS", "heads_findings"]

SUMMARY = "training/retrieval/probes_summary.csv"
CRITICAL = "training/critical.csv"
VARIANTS = ("plain", "rule", "learned", "test_rule")
PM_SEEDS = (
    "one standard error of the mean over the seeds (independently trained models) where the "
    "quantity is defined"
)


def _ratio(v, col):
    """The retrieval head's ``col`` of variant ``v`` at every probed n from n_train on (``n/a``
    where no seed defines it)."""

    def fn(t):
        S = t["S"]
        T = int(S["n_train"].iloc[0])
        sub = S[(S["variant"] == v) & (S["n"] >= T)].sort_values("n")
        if sub.empty or not np.isfinite(sub[col].astype(float)).any():
            raise NotAvailable(f"{col} of {v} defined at no n from n_train on")
        ns = ", ".join(str(int(n)) for n in sub["n"])
        return {
            "label": f"{col} of {v}'s retrieval head at n = {ns} (n_train = {T})",
            "value": sub[col].astype(float).tolist(),
            "se": sub[f"{col}_se"].astype(float).tolist(),
        }

    return fn


def _at_train(model, col, what):
    """``col`` per variant at n_train of ``model`` (``retrieval`` or ``lm``) in the critical
    table."""

    def fn(t):
        C = t["C"][t["C"]["model"] == model]
        if C.empty:
            raise NotAvailable(f"no rows of {model}")
        T = int(C["n"].iloc[0])
        sub = C.set_index("variant").reindex([v for v in VARIANTS if v in set(C["variant"])])
        return {
            "label": f"{what} at n_train = {T}, {', '.join(sub.index)}",
            "value": sub[col].astype(float).tolist(),
            "se": sub[f"{col}_se"].astype(float).tolist(),
        }

    return fn


def _lm_infinite(t):
    C = t["C"][(t["C"]["model"] == "lm") & (t["C"]["variant"] != "test_rule")]
    if C.empty:
        raise NotAvailable("no rows of lm")
    return {
        "label": "language-model heads (every trained variant, seed and layer; test_rule is the "
        "plain model there) in the band ending at "
        "n_train whose mean own score is not above the mean of the earlier keys' (gamma_c_eff "
        "infinite)",
        "value": [int(C["infinite"].sum()), int(C["heads"].sum())],
    }


def _learned(t):
    C = t["C"].set_index(["model", "variant"])
    if ("retrieval", "learned") not in C.index or ("lm", "learned") not in C.index:
        raise NotAvailable("no learned variant")
    r, lm = C.loc[("retrieval", "learned")], C.loc[("lm", "learned")]
    return {
        "label": "learned s_h ln n_train sqrt(d_h), the learned factor at n_train over the plain "
        "one (1 at initialisation): retrieval head / language model (per seed the median over "
        "heads)",
        "value": [float(r["learned_factor"]), float(lm["learned_factor"])],
        "se": [float(r["learned_factor_se"]), float(lm["learned_factor_se"])],
    }


def _declared() -> list:
    src = {"source": [SUMMARY], "pm": PM_SEEDS, "fmt": ".2f"}
    crit = {"source": [CRITICAL], "pm": PM_SEEDS, "fmt": ".2f"}
    out = [
        declare(f"training_heads.ratio_{col}_{v}", "ratio", _ratio(v, f"ratio_{col}"), **src)
        for col in ("eff", "normalised", "paper_a")
        for v in VARIANTS
    ]
    out += [
        declare(
            "training_heads.rho_pooled",
            "rho_hat",
            _rho_pooled,
            **{**src, "fmt": ".4f"},
        ),
        declare(
            "training_heads.s_eff_retrieval",
            "gamma_c_eff ln n_train",
            _at_train("retrieval", "s_eff", "gamma_c_eff ln n of the retrieval head (1: critical)"),
            **crit,
        ),
        declare(
            "training_heads.s_eff_lm",
            "gamma_c_eff ln n_train",
            _at_train("lm", "s_eff", "per seed the median over heads of gamma_c_eff ln n (LM)"),
            **crit,
        ),
        declare(
            "training_heads.lm_infinite",
            "infinite",
            _lm_infinite,
            kind="count",
            source=[CRITICAL],
        ),
        declare("training_heads.learned_factor", "learned factor", _learned, **crit),
    ]
    for name in ("normalised", "paper_a"):
        out.append(
            declare(
                f"training_heads.s_star_retrieval_{name}",
                "s*",
                _at_train("retrieval", f"s_star_{name}", f"s* ({name}) of the retrieval head"),
                **crit,
            )
        )
        out.append(
            declare(
                f"training_heads.s_star_lm_{name}",
                "s*",
                _at_train("lm", f"s_star_{name}", f"per seed the median s* ({name}) over LM heads"),
                **crit,
            )
        )
    return out


def _rho_pooled(t):
    S = t["S"]
    sub = S[S["n"] == S["n_train"]].set_index("variant")
    sub = sub.reindex([v for v in VARIANTS if v in sub.index])
    return {
        "label": "rho_hat pooled over every context and n of a checkpoint, at the retrieval "
        f"head's rows, {', '.join(sub.index)}",
        "value": sub["rho_pooled"].astype(float).tolist(),
        "se": sub["rho_pooled_se"].astype(float).tolist(),
    }


def heads_findings(*, summary, critical) -> list[Finding]:
    """Every finding of the section (docs/training.md#the-retrieval-heads-on-the-phase-diagram)."""
    return evaluate(_declared(), {"S": frame(summary), "C": frame(critical)})
