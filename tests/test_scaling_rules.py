"""Scaling rules against the reference values of docs/scaling-rules.md (3 decimals)."""

import numpy as np
import pytest

from attnscale.layer.scores import scaling_rules as sr

N = np.array([1024, 4096, 8192, 16384, 32768, 131072, 1048576], dtype=float)
REFERENCE = {
    "qwen2048": (
        lambda n: sr.qwen_logn(n, 2048.0),
        [1.000, 1.091, 1.182, 1.273, 1.364, 1.545, 1.818],
    ),
    "qwen8192": (
        lambda n: sr.qwen_logn(n, 8192.0),
        [1.000, 1.000, 1.000, 1.077, 1.154, 1.308, 1.538],
    ),
    "yarn": (sr.yarn_dynamic, [1.000, 1.000, 1.143, 1.296, 1.459, 1.813, 2.417]),
    "llama4": (sr.llama4, [1.000, 1.000, 1.069, 1.110, 1.161, 1.283, 1.486]),
    "grok2": (sr.grok2, [1.000, 1.200, 1.300, 1.400, 1.500, 1.700, 2.000]),
    "su": (sr.su_entropy, [1.111, 1.333, 1.444, 1.556, 1.667, 1.889, 2.222]),
    "infoscale": (sr.infoscale, [1.051, 1.146, 1.189, 1.231, 1.271, 1.346, 1.448]),
}


@pytest.mark.parametrize("name", list(REFERENCE))
def test_reference_values(name):
    fn, ref = REFERENCE[name]
    np.testing.assert_allclose(fn(N), ref, atol=5e-4)  # the reference table rounds to 3 decimals


def test_static_yarn_constant():
    assert sr.yarn_static(N)[0] == pytest.approx(1.813, abs=5e-4)
    assert np.ptp(sr.yarn_static(N)) == 0.0


def test_calibration_a_limits():
    """docs/scaling-rules.md#calibration-a: 1 + c ln(n/L) rules tend to c ln L (Llama 4: 0.90, Ministral-3: 0.97); log_L n
    rules are exactly critical for n >= L; static rules decay like 1/ln n."""
    rules = {r.name.split(" ")[0]: r for r in sr.RULES}
    huge = np.array([1e300])
    assert sr.gamma_ratio(rules["Llama"], huge)[0] == pytest.approx(0.1 * np.log(8192), rel=0.02)
    assert sr.gamma_ratio(rules["Ministral-3"], huge)[0] == pytest.approx(
        0.1 * np.log(16384), rel=0.02
    )
    n = np.array([8192.0, 65536.0, 1e6])
    np.testing.assert_allclose(sr.gamma_ratio(rules["Qwen"], n), 1.0, rtol=1e-12)
    np.testing.assert_allclose(sr.gamma_ratio(rules["LongRoPE"], n), 1.0, rtol=1e-12)
    by_name = {r.name: r for r in sr.RULES}
    dyn = sr.gamma_ratio(by_name["YaRN dynamic (L = 4096)"], np.array([1e4, 1e8]))
    assert 1.0 < dyn[0] < dyn[1]  # dynamic YaRN drifts super-critical
    static = sr.gamma_ratio(by_name["YaRN static (s = 32)"], np.array([1e4, 1e8]))
    assert static[1] == pytest.approx(static[0] * np.log(1e4) / np.log(1e8))  # ~ 1 / ln n


def test_bad_n():
    with pytest.raises(ValueError, match="n must be"):
        sr.qwen_logn([0.5])
    with pytest.raises(ValueError, match="n must be"):
        sr.gamma_ratio(sr.RULES[0], [1.0])
