"""The level of the observable and the argument checks shared by the score models of
:mod:`attnscale.regimes` (docs/regimes.md#the-observable)."""

from __future__ import annotations

import math

import numpy as np

from attnscale.core.validation import check_real

__all__ = [
    "LOG_SQRT_2PI",
    "n_array",
    "out_like",
    "check_level",
    "logit",
]


#: ``ln sqrt(2 pi)``, the constant of the log standard normal density.
LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def n_array(n, name: str = "n", low: float = 2.0) -> np.ndarray:
    """``n`` as a float array (any shape), every entry finite and ``>= low``; raise naming ``name``."""
    arr = np.asarray(n)
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        raise TypeError(f"{name} must be real numbers >= {low:g}, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    bad = ~np.isfinite(arr) | (arr < low)
    if np.any(bad):
        raise ValueError(f"{name} must be finite and >= {low:g}, got {arr[bad].ravel()[0]!r}")
    return arr


def out_like(arr: np.ndarray, *like):
    """A scalar when every input in ``like`` is a scalar, else the array."""
    return float(np.asarray(arr)) if all(np.ndim(x) == 0 for x in like) else np.asarray(arr)


def check_level(level) -> float:
    """``level`` as a float in ``(0, 1)``, or raise naming it."""
    return check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)


def logit(level: float) -> float:
    """``ln(level / (1 - level))``."""
    return math.log(level / (1.0 - level))
