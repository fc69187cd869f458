"""Independent references for the scaling-rules table (docs/scaling-rules.md).

The floor-based rules are recomputed from integer token positions with Python integer arithmetic
at the exact context lengths where their floors step (the off-by-one conventions: Llama 4 steps
at n = 8192 since it uses floor((pos + 1) / 8192) = floor(n / 8192); Ministral-3 steps at
n = 16385 since it uses floor(pos / 16384), pos = n - 1). The table entry function is checked
row by row against gamma_eff / gamma_c = ln L m(n) / ln n (calibration A) and
gamma_eff = that ratio / (1 - rho). Tolerance: float64 rounding of a few logs (rtol 1e-14).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnscale.experiments import paper_a_scaling_rules as par
from attnscale.layer.scores import scaling_rules as sr


def ministral_ref(n: int) -> float:
    pos = n - 1  # the last token's position in a context of n tokens
    return 1.0 + 0.1 * math.log(1 + pos // 16384)


def llama4_ref(n: int) -> float:
    pos = n - 1
    return 1.0 + 0.1 * math.log(1 + (pos + 1) // 8192)


EDGES = [8191, 8192, 8193, 16383, 16384, 16385, 32768, 32769, 49152, 49153]


@pytest.mark.parametrize("n", EDGES)
def test_floor_rules_at_their_steps(n):
    assert sr.ministral3(float(n)) == pytest.approx(ministral_ref(n), rel=1e-15)
    assert sr.llama4(float(n)) == pytest.approx(llama4_ref(n), rel=1e-15)


def test_the_steps_are_where_the_conventions_put_them():
    """Ministral-3 is still 1 at n = 16384 and steps at 16385; Llama 4 steps at n = 8192."""
    assert sr.ministral3(16384.0) == 1.0
    assert sr.ministral3(16385.0) == pytest.approx(1 + 0.1 * math.log(2), rel=1e-15)
    assert sr.llama4(8191.0) == 1.0
    assert sr.llama4(8192.0) == pytest.approx(1 + 0.1 * math.log(2), rel=1e-15)
    # the dynamic rules switch on at n = L: m(L) = 1 exactly, m > 1 just above
    assert sr.yarn_dynamic(4096.0) == 1.0 and sr.yarn_dynamic(4097.0) > 1.0
    assert sr.qwen_logn(8192.0, 8192.0) == 1.0 and sr.qwen_logn(8193.0, 8192.0) > 1.0


def test_scaling_rules_table_row_by_row():
    """Every row of the entry function's table: m(n) of its rule at n, ln L m / ln n, the overlay
    flag, and gamma_eff at rho = 1/2; the grid includes both floor steps."""
    ns = [1024.0, 8192.0, 16384.0, 16385.0, 131072.0]
    df = par.scaling_rules_data(ns=ns, overlay_n=32768.0)
    assert sorted(set(df["n"])) == sorted(ns + [32768.0])
    refs = {
        "Ministral-3 (floor 16384)": lambda n: ministral_ref(int(n)),
        "Llama 4 (floor 8192)": lambda n: llama4_ref(int(n)),
        "Qwen logn (L = 8192)": lambda n: max(1.0, math.log(n) / math.log(8192)),
        "LongRoPE dynamic (L = 4096)": lambda n: math.log(n) / math.log(4096),
        "YaRN dynamic (L = 4096)": lambda n: (1 + 0.1 * math.log(max(1.0, n / 4096))) ** 2,
        "YaRN static (s = 32)": lambda n: (1 + 0.1 * math.log(32)) ** 2,
        "InfoScale (L = 512, d = 128)": lambda n: (
            math.sqrt(1 - n ** (-2 / 128)) / math.sqrt(1 - 512 ** (-2 / 128))
        ),
    }
    assert set(df["rule"]) == set(refs)
    for _, row in df.iterrows():
        m = refs[row["rule"]](row["n"])
        assert row["m"] == pytest.approx(m, rel=1e-14), (row["rule"], row["n"])
        ratio = math.log(row["L"]) * m / math.log(row["n"])
        assert row["gamma_ratio"] == pytest.approx(ratio, rel=1e-14)
        assert row["gamma_eff"] == pytest.approx(ratio / (1 - row["rho"]), rel=1e-14)
        assert row["is_overlay_n"] == (row["n"] == 32768.0)
    assert set(df["rho"]) == {0.5}
    lengths = df.groupby("rule")["L"].first()
    assert lengths["Ministral-3 (floor 16384)"] == 16384 and lengths["Llama 4 (floor 8192)"] == 8192
    # calibration A: the log_L n rules are exactly critical from their own L on
    crit = df[df["rule"].str.startswith(("Qwen", "LongRoPE")) & (df["n"] >= df["L"])]
    np.testing.assert_allclose(crit["gamma_ratio"], 1.0, rtol=1e-14)


@pytest.mark.parametrize("rule", sr.RULES, ids=lambda r: r.name.split(" ")[0])
def test_every_rule_takes_n_from_1_and_refuses_the_rest(rule):
    """m(n) is defined for n >= 1 (one token); below 1, inf and nan are refused by name."""
    got = np.asarray(rule.m(np.array([1, 2, 4096])))  # integer input is fine
    assert got.dtype == float and np.all(np.isfinite(got))
    for bad in (0.5, np.inf, np.nan):
        with pytest.raises(ValueError, match="n must be finite and >= 1"):
            rule.m(np.array([bad]))
    with pytest.raises(ValueError, match="n must be >= 2"):
        sr.gamma_ratio(rule, [1.0, 8192.0])


def test_rule_betas_are_calibration_a():
    """beta = gamma_c ln L m(n) with gamma_c = 1 / (1 - rho); rho outside (0, 1) is refused."""
    rule = next(r for r in sr.RULES if r.name.startswith("Ministral-3"))
    n = np.array([16384.0, 16385.0, 1e6])
    want = [math.log(16384) / (1 - 0.25) * ministral_ref(int(v)) for v in n]
    np.testing.assert_allclose(sr.rule_betas(rule, n, 0.25), want, rtol=1e-14)
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="rho must lie in"):
            sr.rule_betas(rule, n, bad)
