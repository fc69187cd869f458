"""Argument checks shared by the library: every error names the argument and the allowed range."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

__all__ = [
    "check_int",
    "check_real",
    "check_matrix",
    "check_nonzero_rows",
    "check_vector",
    "check_layer_inputs",
    "check_rhos",
    "check_integer_in",
    "check_rho",
    "check_beta_array",
    "check_positive",
    "check_rng",
]


def check_int(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as ``int`` or raise naming ``name`` and the allowed range."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_real(
    name: str,
    value,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` inside the given interval, or raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    lo_bad = low is not None and (value <= low if low_open else value < low)
    hi_bad = high is not None and (value >= high if high_open else value > high)
    if lo_bad or hi_bad:
        lb = "(" if low_open else "["
        hb = ")" if high_open else "]"
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise ValueError(f"{name} must lie in {lb}{lo}, {hi}{hb}, got {value:g}")
    return value


def check_matrix(name: str, X, *, min_rows: int = 1, min_cols: int = 1) -> np.ndarray:
    """Return ``X`` as a C-contiguous float64 2-D array with finite entries, or raise."""
    arr = np.asarray(X)
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        raise TypeError(f"{name} must be a real floating or integer array, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n, d), got shape {arr.shape}")
    if arr.shape[0] < min_rows or arr.shape[1] < min_cols:
        raise ValueError(
            f"{name} must have at least {min_rows} rows and {min_cols} columns, got shape {arr.shape}"
        )
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return arr


def check_nonzero_rows(name: str, X: np.ndarray) -> np.ndarray:
    """Return the row norms of ``X``; raise if a row is zero (it cannot be normalised)."""
    r = np.linalg.norm(X, axis=1)
    if np.any(r == 0.0):
        i = int(np.flatnonzero(r == 0.0)[0])
        raise ValueError(f"{name} has a zero row (index {i}); pre-LN normalisation needs x_i != 0")
    return r


def check_vector(
    name: str, values, *, low: float | None = None, low_open: bool = False
) -> np.ndarray:
    """Return a 1-D finite float64 array (non-empty) with entries above ``low``, or raise."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        raise TypeError(f"{name} must be real numbers, got dtype {arr.dtype}")
    arr = np.atleast_1d(arr).astype(np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values")
    if low is not None:
        bad = arr <= low if low_open else arr < low
        if np.any(bad):
            op = ">" if low_open else ">="
            raise ValueError(f"every entry of {name} must be {op} {low:g}, got {arr[bad][0]:g}")
    return arr


def check_layer_inputs(X, beta=None, alpha=0.0):
    """Checks shared by the attention layer and its Jacobian: ``X`` an ``(n, d)`` finite matrix
    with ``n >= 2`` and non-zero rows, ``beta >= 0`` (unless ``None``), ``alpha >= 0``.

    Returns ``(X as float64, row norms, beta, alpha)``.
    """
    X = check_matrix("X", X, min_rows=2)
    r = check_nonzero_rows("X", X)
    if beta is not None:
        beta = check_real("beta", beta, low=0.0)
    alpha = check_real("alpha", alpha, low=0.0)
    return X, r, beta, alpha


def check_rhos(rho) -> np.ndarray:
    """A vector of token correlations ``rho``, each in ``[0, 1)`` (Paper A's near-simplex tokens,
    docs/paper-a.md#gaussian-near-simplex-tokens)."""
    rho = check_vector("rho", rho, low=0.0)
    if np.any(rho >= 1.0):
        raise ValueError(f"every entry of rho must lie in [0, 1), got {rho[rho >= 1.0][0]:g}")
    return rho


def _bound(v: int) -> str:
    """A range bound as the messages write it (``1e+07`` from a million on)."""
    return f"{v:.0e}" if abs(v) >= 10**6 else str(v)


def check_integer_in(
    name: str, value, low: int, high: int, *, integral_floats: bool = False
) -> int:
    """Return ``value`` as an ``int`` in ``[low, high]``, or raise ``ValueError`` naming ``name``
    and the range. ``integral_floats``: a float with an integer value counts (a count written
    ``1e6`` on a command line); otherwise only integers do."""
    msg = f"{name} must be an integer in [{low}, {_bound(high)}], got"
    if isinstance(value, bool) or not isinstance(value, Integral):
        ok = integral_floats and isinstance(value, Real) and not isinstance(value, bool)
        if not ok or not math.isfinite(float(value)) or not float(value).is_integer():
            raise ValueError(f"{msg} {value!r}")
    value = int(value)
    if not low <= value <= high:
        raise ValueError(f"{msg} {value}")
    return value


def check_rho(rho) -> float:
    """One token correlation ``rho`` in ``[0, 1)`` as a float, or ``ValueError`` naming it."""
    if isinstance(rho, bool) or not isinstance(rho, Real) or not (0.0 <= float(rho) < 1.0):
        raise ValueError(f"rho must be a real number in [0, 1), got {rho!r}")
    return float(rho)


def check_beta_array(beta, name: str = "beta") -> np.ndarray:
    """``beta`` (a scalar or an array of any shape) as float64, every entry finite and ``>= 0``,
    or ``ValueError`` naming it."""
    b = np.asarray(beta)
    if b.dtype.kind not in "fiu" or b.dtype == np.bool_:
        raise ValueError(f"{name} must be real and finite, >= 0, got dtype {b.dtype}")
    b = b.astype(np.float64)
    if not np.all(np.isfinite(b)) or np.any(b < 0):
        raise ValueError(f"{name} must be finite and >= 0, got {beta!r}")
    return b


def check_positive(name: str, value) -> float:
    """A finite real number ``> 0`` as a float, or ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, Real) or not (0 < float(value) < np.inf):
        raise ValueError(f"{name} must be a finite real number > 0, got {value!r}")
    return float(value)


def check_rng(rng, purpose: str = "") -> np.random.Generator:
    """``rng`` if it is a :class:`numpy.random.Generator` (every random draw comes from one,
    docs/pipeline.md#reproducibility), else ``TypeError`` naming it (``purpose``: what it is for,
    e.g. ``" for the probe route"``)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator{purpose}, got {type(rng).__name__}")
    return rng
