"""Attention-logit scaling rules of real models, placed on Paper A's phase diagram.

Formulas as in ``docs/scaling-rules.md#the-rules`` (read from the models' public code;
"unverified" marks the two we could not read). Each rule is a logit multiplier ``m(n)``, ``n`` the
number of keys a query sees. The constants are the models' own; nothing here is fitted.

Placement on the phase diagram (``docs/scaling-rules.md#calibration-a``):

* Calibration A [choice]: ``beta_n = beta_0 m(n)`` with ``beta_0 = gamma_c ln L``
  (critical at the model's own length ``L``), so ``gamma_eff(n) / gamma_c = ln L m(n) / ln n``.
* Absolute rules (SSMax, Chiang & Cholak) need no calibration: ``gamma_eff = beta_n / ln n``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "yarn_dynamic",
    "qwen_logn",
    "llama4",
    "ministral3",
    "grok2",
    "su_entropy",
    "longrope_dynamic",
    "infoscale",
    "yarn_static",
    "SSMAX_S",
    "ssmax",
    "Rule",
    "RULES",
    "ABSOLUTE_RULES",
    "RULE_KEYS",
    "rule_by_key",
    "rule_betas",
    "gamma_ratio",
    "rules_table",
]


def _n(n) -> np.ndarray:
    n = np.asarray(n, dtype=float)
    if np.any(~np.isfinite(n)) or np.any(n < 1):
        raise ValueError("n must be finite and >= 1")
    return n


def yarn_dynamic(n, L: float = 4096.0) -> np.ndarray:
    """YaRN, dynamic: ``(1 + 0.1 ln max(1, n / L))^2`` (q and k both scaled, hence the square)."""
    return (1.0 + 0.1 * np.log(np.maximum(1.0, _n(n) / L))) ** 2


def qwen_logn(n, L: float = 2048.0) -> np.ndarray:
    """Qwen ``use_logn_attn``: ``max(1, ln n / ln L)`` (q only)."""
    return np.maximum(1.0, np.log(_n(n)) / np.log(L))


def llama4(n) -> np.ndarray:
    """Llama 4 temperature tuning: ``1 + 0.1 ln(1 + floor(n / 8192))`` with ``n = pos + 1``."""
    return 1.0 + 0.1 * np.log1p(np.floor(_n(n) / 8192.0))


def ministral3(n) -> np.ndarray:
    """Ministral-3 / Devstral-2: ``1 + 0.1 ln(1 + floor(pos / 16384))`` with ``pos = n - 1``."""
    return 1.0 + 0.1 * np.log1p(np.floor((_n(n) - 1.0) / 16384.0))


def grok2(n) -> np.ndarray:
    """Grok-2: ``max(1, log_1024 n)``."""
    return np.maximum(1.0, np.log(_n(n)) / np.log(1024.0))


def su_entropy(n, base: float = 512.0) -> np.ndarray:
    """Su's entropy-invariant scaling (GAU-alpha): ``ln n / ln 512``."""
    return np.log(_n(n)) / np.log(base)


def longrope_dynamic(n, L: float = 4096.0) -> np.ndarray:
    """LongRoPE / Phi-3 "su", dynamic form: ``log_L n`` (``1 + ln s / ln L`` with ``s = n / L``)."""
    return np.log(_n(n)) / np.log(L)


def infoscale(n, L: float = 512.0, d: int = 128) -> np.ndarray:
    """InfoScale: ``sqrt(1 - n^{-2/d}) / sqrt(1 - L^{-2/d})`` (bounded)."""
    n = _n(n)
    return np.sqrt(1.0 - n ** (-2.0 / d)) / np.sqrt(1.0 - L ** (-2.0 / d))


def yarn_static(n, s: float = 32.0) -> np.ndarray:
    """YaRN, static (HF ``rope_type=yarn``, gpt-oss): ``(1 + 0.1 ln s)^2``, independent of n."""
    return np.full_like(_n(n), (1.0 + 0.1 * np.log(s)) ** 2)


#: SSMax's illustration value of its learned per-head constant s [choice: the SSMax paper's
#: illustration, not a value of any trained model].
SSMAX_S = 0.43


def ssmax(n, s: float = SSMAX_S) -> np.ndarray:
    """SSMax (scalable softmax): the softmax base is ``n^{s z}``, i.e. logits times ``s ln n``.

    An *absolute* rule (no calibration): ``beta_n = s ln n``, so ``gamma_eff = s`` on Paper A's
    unit-norm scores. ``s`` is learned per head in SSMax; ``s = 0.43`` is the illustration value of
    its paper [choice] (``docs/scaling-rules.md``).
    """
    return float(s) * np.log(_n(n))


@dataclass(frozen=True)
class Rule:
    """A scaling rule: its multiplier ``m(n)``, the training length ``L`` used for calibration A,
    its order in n, a short ``key`` (config name) and its calibration (``"A"``: beta_n =
    gamma_c ln L m(n); ``"absolute"``: beta_n = m(n))."""

    name: str
    m: object
    L: float
    order: str
    key: str = ""
    calibration: str = "A"


#: Rules placed with calibration A (docs/scaling-rules.md#calibration-a); L is the length at which each is
#: calibrated to be critical (its own constant where it has one).
RULES = (
    Rule("Qwen logn (L = 8192)", lambda n: qwen_logn(n, 8192.0), 8192.0, "log n", "qwen"),
    Rule("LongRoPE dynamic (L = 4096)", longrope_dynamic, 4096.0, "log n", "longrope"),
    Rule("Llama 4 (floor 8192)", llama4, 8192.0, "~1 + 0.1 ln(n/8192)", "llama4"),
    Rule("Ministral-3 (floor 16384)", ministral3, 16384.0, "~1 + 0.1 ln(n/16384)", "ministral3"),
    Rule("YaRN dynamic (L = 4096)", yarn_dynamic, 4096.0, "(log n)^2", "yarn_dynamic"),
    Rule("YaRN static (s = 32)", yarn_static, 4096.0, "constant", "yarn_static"),
    Rule("InfoScale (L = 512, d = 128)", infoscale, 512.0, "bounded", "infoscale"),
)

#: Absolute rules (no calibration): beta_n = m(n) on unit-norm scores.
ABSOLUTE_RULES = (Rule("SSMax (s = 0.43)", ssmax, float("nan"), "log n", "ssmax", "absolute"),)

#: Every rule by its short key (the names used in the config).
RULE_KEYS = {r.key: r for r in RULES + ABSOLUTE_RULES}


def rule_by_key(key: str, name: str = "rule") -> Rule:
    """The rule with short key ``key``; a ``ValueError`` naming ``name`` and the known keys."""
    if key not in RULE_KEYS:
        raise ValueError(f"{name} must be one of {sorted(RULE_KEYS)}, got {key!r}")
    return RULE_KEYS[key]


def rule_betas(rule: Rule, n_keys, rho: float) -> np.ndarray:
    """Inverse temperatures of a rule for queries that see ``n_keys`` keys
    (``docs/realistic-attention.md#real-models-scaling-rules-simulated``).

    Calibration A: ``beta = gamma_c ln L m(n_keys)`` with ``gamma_c = 1 / (1 - rho)``;
    absolute rules: ``beta = m(n_keys)``. Under a causal mask the query at 1-indexed position
    ``i`` sees ``n_keys = i`` keys (convention ``n_i = pos + 1`` of docs/scaling-rules.md#the-rules).
    """
    if not 0.0 < float(rho) < 1.0:
        raise ValueError(f"rho must lie in (0, 1), got {rho}")
    m = np.asarray(rule.m(_n(n_keys)), dtype=float)
    if rule.calibration == "absolute":
        return m
    return np.log(rule.L) / (1.0 - float(rho)) * m


def gamma_ratio(rule: Rule, n) -> np.ndarray:
    """``gamma_eff(n) / gamma_c = ln L m(n) / ln n`` under calibration A
    (``docs/scaling-rules.md#calibration-a``: ``beta_n = beta_0 m(n)``, ``beta_0 = gamma_c ln L``).

    Rules with ``m(L) = 1`` are exactly critical at ``n = L``; rules of the form
    ``1 + c ln(n / L)`` tend to ``c ln L`` (Llama 4: 0.90, Ministral-3: 0.97); static and bounded
    rules decay like ``1 / ln n``.
    """
    n = _n(n)
    if np.any(n < 2):
        raise ValueError("n must be >= 2 (ln n = 0 at n = 1)")
    return np.log(rule.L) * np.asarray(rule.m(n)) / np.log(n)


def rules_table(ns, rhos_overlay=(0.5,)):
    """Tidy table: for every rule and n, ``m(n)`` and ``gamma_eff / gamma_c`` (calibration A),
    and ``gamma_eff`` itself at each overlay ``rho`` (``gamma_c = 1 / (1 - rho)``)."""
    import pandas as pd

    ns = _n(ns)
    records = []
    for rule in RULES:
        ratio = gamma_ratio(rule, ns)
        for rho in rhos_overlay:
            for n, m, r in zip(ns, np.asarray(rule.m(ns)), ratio, strict=True):
                records.append(
                    {
                        "rule": rule.name,
                        "order": rule.order,
                        "L": rule.L,
                        "n": n,
                        "m": float(m),
                        "gamma_ratio": float(r),
                        "rho": float(rho),
                        "gamma_eff": float(r) / (1.0 - rho),
                    }
                )
    return pd.DataFrame(records)
