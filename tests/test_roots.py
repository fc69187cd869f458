"""``attnscale.core.roots.brentq`` is SciPy's Brent method, bit for bit
(docs/ask-the-theory.md#start-up-time): the same root for the same function, bracket and
tolerances, so replacing ``scipy.optimize.brentq`` by it changes no number of the pipeline."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from attnscale.core.roots import RTOL, brentq


def _functions(c, s):
    return [
        lambda x: math.tanh(s * (x - c[0])) + 0.1 * c[1],
        lambda x: x**3 - c[0] * x + c[1],
        lambda x: math.exp(s * x) - math.exp(c[0]),
        lambda x: math.log1p(math.exp(x)) - abs(c[0]) - 0.01,
        lambda x: (x - c[0]) * abs(x - c[0]) ** 0.3,  # not smooth at the root
    ]


def test_same_root_as_scipy_bit_for_bit():
    rng = np.random.default_rng(20261201)
    compared = 0
    for _ in range(300):
        c, s = rng.normal(size=2), rng.uniform(0.1, 10.0)
        a, b = sorted(rng.uniform(-5.0, 5.0, size=2))
        xtol = 10.0 ** rng.uniform(-15, -4)
        rtol = max(RTOL, 10.0 ** rng.uniform(-15, -6))
        for f in _functions(c, s):
            if not f(a) * f(b) < 0:
                continue
            ours = brentq(f, a, b, xtol=xtol, rtol=rtol)
            assert ours == optimize.brentq(f, a, b, xtol=xtol, rtol=rtol), (a, b, xtol, rtol)
            compared += 1
    assert compared > 400


def test_defaults_are_scipys():
    f = lambda x: math.cos(x) - x  # noqa: E731
    assert brentq(f, 0.0, 1.0) == optimize.brentq(f, 0.0, 1.0)
    assert brentq(f, 0.0, 1.0, maxiter=5, xtol=1e-3) == optimize.brentq(
        f, 0.0, 1.0, maxiter=5, xtol=1e-3
    )


def test_an_endpoint_root_is_returned_as_is():
    assert brentq(lambda x: x - 1.0, 1.0, 3.0) == 1.0
    assert brentq(lambda x: x - 3.0, 1.0, 3.0) == 3.0


@pytest.mark.parametrize(
    "kwargs, f, error, message",
    [
        ({"xtol": 0.0}, lambda x: x, ValueError, "xtol too small"),
        ({"rtol": 1e-17}, lambda x: x, ValueError, "rtol too small"),
        ({}, lambda x: x * x + 1.0, ValueError, "f(a) and f(b) must have different signs"),
        ({}, lambda x: math.nan if x > 0 else -1.0, ValueError, "is NaN"),
        (
            {"maxiter": 2, "xtol": 1e-15},
            lambda x: math.tanh(20 * (x - 0.123)),
            RuntimeError,
            "Failed to converge",
        ),
    ],
)
def test_bad_calls_raise_like_scipy(kwargs, f, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        brentq(f, -1.0, 1.0, **kwargs)
    with pytest.raises(error):
        optimize.brentq(f, -1.0, 1.0, **kwargs)
