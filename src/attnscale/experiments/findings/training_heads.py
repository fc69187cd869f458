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
from attnscale.experiments.training_retrieval_probes import lm_at_train

__all__ = ["SUMMARY", "LM_HEADS", "VARIANTS", "heads_findings"]

SUMMARY = "training/retrieval/probes_summary.csv"
LM_HEADS = "training/lm/probes_heads.csv"
VARIANTS = ("plain", "rule", "learned", "test_rule")
PM_SEEDS = (
    "one standard error of the mean over the seeds (independently trained models) where the "
    "quantity is defined"
)


def _ratio(v, col):
    """The retrieval head's ``col`` of variant ``v`` at every probed n from n_train on."""

    def fn(t):
        S = t["S"]
        T = int(S["n_train"].iloc[0])
        sub = S[(S["variant"] == v) & (S["n"] >= T)].sort_values("n")
        if sub.empty or not np.isfinite(sub[col].astype(float)).all():
            raise NotAvailable(f"{col} of {v} not defined at every n")
        ns = ", ".join(str(int(n)) for n in sub["n"])
        return {
            "label": f"{col} of {v}'s retrieval head at n = {ns} (n_train = {T})",
            "value": sub[col].astype(float).tolist(),
            "se": sub[f"{col}_se"].astype(float).tolist(),
        }

    return fn


def _at_train(table, col, what):
    """``col`` per variant at n_train (retrieval summary ``S`` or the language model's ``L``)."""

    def fn(t):
        S = t[table]
        T = int(S["n"].max()) if table == "L" else int(t["S"]["n_train"].iloc[0])
        sub = (
            S[S["n"] == T]
            .set_index("variant")
            .reindex([v for v in VARIANTS if v in set(S["variant"])])
        )
        if sub.empty:
            raise NotAvailable(f"no rows at n_train = {T}")
        return {
            "label": f"{what} at n_train = {T}, {', '.join(sub.index)}",
            "value": sub[col].astype(float).tolist(),
            "se": sub[f"{col}_se"].astype(float).tolist(),
        }

    return fn


def _lm_infinite(t):
    H = t["H"]
    H = H[H["hi"] == H["n_train"]]
    inf = int((~np.isfinite(H["s_eff"].astype(float))).sum())
    return {
        "label": "language-model heads (every variant, seed and layer) in the band ending at "
        "n_train whose mean own score is not above the mean of the earlier keys' (gamma_c_eff "
        "infinite)",
        "value": [inf, len(H)],
    }


def _learned(t):
    S, L = t["S"], t["L"]
    r = S[(S["variant"] == "learned") & (S["n"] == S["n_train"])]
    lm = L[L["variant"] == "learned"]
    if r.empty or lm.empty:
        raise NotAvailable("no learned variant")
    return {
        "label": "learned s_h ln n_train sqrt(d_h), the learned factor at n_train over the plain "
        "one (1 at initialisation): retrieval head / language model (per seed the median over "
        "heads)",
        "value": [float(r["learned_factor"].iloc[0]), float(lm["learned_factor"].iloc[0])],
        "se": [float(r["learned_factor_se"].iloc[0]), float(lm["learned_factor_se"].iloc[0])],
    }


def _declared() -> list:
    src = {"source": [SUMMARY], "pm": PM_SEEDS, "fmt": ".2f"}
    both = {"source": [SUMMARY, LM_HEADS], "pm": PM_SEEDS, "fmt": ".2f"}
    out = [
        declare(f"training_heads.ratio_{col}_{v}", "ratio", _ratio(v, f"ratio_{col}"), **src)
        for col in ("eff", "normalised", "paper_a")
        for v in VARIANTS
    ]
    out += [
        declare(
            "training_heads.rho_pooled",
            "rho_hat",
            _at_train("S", "rho_pooled", "the retrieval head's pooled rho_hat"),
            **{**src, "fmt": ".4f"},
        ),
        declare(
            "training_heads.s_eff_retrieval",
            "gamma_c_eff ln n_train",
            _at_train("S", "s_eff", "gamma_c_eff ln n of the retrieval head (1: critical)"),
            **src,
        ),
        declare(
            "training_heads.s_eff_lm",
            "gamma_c_eff ln n_train",
            _at_train("L", "s_eff", "per seed the median over heads of gamma_c_eff ln n (LM)"),
            **{**both, "source": [LM_HEADS]},
        ),
        declare(
            "training_heads.lm_infinite",
            "infinite",
            _lm_infinite,
            kind="count",
            source=[LM_HEADS],
        ),
        declare("training_heads.learned_factor", "learned factor", _learned, **both),
    ]
    for name in ("normalised", "paper_a"):
        out.append(
            declare(
                f"training_heads.s_star_retrieval_{name}",
                "s*",
                _at_train("S", f"s_star_{name}", f"s* ({name} lambda) of the retrieval head"),
                **src,
            )
        )
        out.append(
            declare(
                f"training_heads.s_star_lm_{name}",
                "s*",
                _at_train("L", f"s_star_{name}", f"per seed the median s* ({name}) over LM heads"),
                **{**both, "source": [LM_HEADS]},
            )
        )
    return out


def heads_findings(*, summary, lm_heads) -> list[Finding]:
    """Every finding of the section (docs/training.md#the-retrieval-heads-on-the-phase-diagram)."""
    H = frame(lm_heads)
    return evaluate(_declared(), {"S": frame(summary), "H": H, "L": lm_at_train(H)})
