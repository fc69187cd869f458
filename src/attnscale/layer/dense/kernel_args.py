"""Argument checks, probe draws and small reductions shared by the numpy kernels and their JAX
twins (docs/gpu.md#choosing-the-backend), in one place so that neither imports the other.

The public kernels validate their arguments with these checks (and those of
:mod:`attnscale.core.validation`) once, before they dispatch; the JAX twins receive the
validated arrays and check nothing again.

:func:`beta_matrix` was named ``beta_grid`` until 0.2.0; that name is the regimes' grid around a
guess (:func:`attnscale.experiments.regimes_simulation.beta_grid`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from attnscale.core.stats import mean_se
from attnscale.core.validation import check_int, check_matrix, check_nonzero_rows, check_rng

__all__ = [
    "RowPass",
    "PROBE_KINDS",
    "SCORE_OUTPUT_ENTRIES",
    "beta_matrix",
    "row_betas",
    "normalise",
    "draw_probes",
    "hutchinson_summary",
    "check_block",
    "check_rows",
    "check_qk",
    "rows_mask",
]


class RowPass(NamedTuple):
    """What a key-tiled pass holds for every query row ``i`` and beta, with the unnormalised
    weights ``E_ij = exp(beta (g_ij - shift_i))`` and ``z_i = sum_j E_ij``: the self-weight
    ``a_self = E_ii / z_i``, ``log_z = ln z_i``, ``mean_g = sum_j A_ij g_ij`` (``g_ij = <y_i,
    y_j>``), ``shift`` (a row's, or a scalar), ``beta`` (a row's) and ``n``; the argument of an
    observable's per-row accumulator (docs/pipeline.md#the-observable-registry)."""

    a_self: np.ndarray
    log_z: np.ndarray
    mean_g: np.ndarray
    shift: np.ndarray | float
    beta: np.ndarray
    n: int


PROBE_KINDS = ("rademacher", "gaussian")


#: Default output budget (float64 entries) of the learned-score layer kernels, numpy and JAX.
SCORE_OUTPUT_ENTRIES = 8 * 2**20


def beta_matrix(betas, n: int, name: str = "betas") -> np.ndarray:
    """A grid of scalings as an ``(m, n)`` matrix: ``(m,)`` scalars or ``(m, n)`` row vectors."""
    arr = np.asarray(betas)
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        raise TypeError(f"{name} must be real numbers, got dtype {arr.dtype}")
    arr = np.atleast_1d(arr).astype(np.float64)
    if arr.ndim == 1:
        arr = np.repeat(arr[:, None], n, axis=1)
    if arr.ndim != 2 or arr.shape[1] != n or arr.shape[0] == 0:
        raise ValueError(
            f"{name} must have shape (m,) (one global beta each) or (m, n) with n = {n} "
            f"(one beta per query row), got shape {np.shape(betas)}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"every entry of {name} must be finite and >= 0")
    return arr


def row_betas(beta, n: int, name: str = "beta") -> np.ndarray:
    """``beta`` as a length-``n`` vector of per-row inverse temperatures.

    A scalar is broadcast (global scaling); a vector must have exactly ``n`` entries (one per query
    row). Every entry must be finite and ``>= 0``. Raises a ``ValueError`` naming ``name``.
    """
    arr = np.asarray(beta)
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        raise TypeError(f"{name} must be a real scalar or vector, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    elif arr.ndim != 1 or arr.size != n:
        raise ValueError(
            f"{name} must be a scalar or a vector of length n = {n} (one beta per query row), "
            f"got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"every entry of {name} must be finite and >= 0")
    return arr


def normalise(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pre-LN normalisation ``y_i = x_i / ||x_i||`` (docs/paper-a.md#the-model). Returns ``(Y, r)``, ``r_i = ||x_i||``."""
    X = check_matrix("X", X)
    r = check_nonzero_rows("X", X)
    return X / r[:, None], r


def draw_probes(rng: np.random.Generator, probes: int, n: int, d: int, kind: str) -> np.ndarray:
    """``probes`` i.i.d. probe vectors of shape (n, d) with ``E[v v^T] = I`` (docs/paper-a.md#the-jacobian-norm-eta).

    ``kind`` is ``"rademacher"`` (entries +-1, the lower-variance choice when ``J^T J`` is close
    to block diagonal) or ``"gaussian"``. All probes are drawn in one call, in a fixed order.
    """
    probes = check_int("probes", probes, minimum=1)
    check_rng(rng)
    if kind == "rademacher":
        # one random bit per sign: ~8x faster than integers(0, 2) and the same law
        size = probes * n * d
        bits = np.unpackbits(np.frombuffer(rng.bytes((size + 7) // 8), dtype=np.uint8))
        V = np.empty((probes, n, d))
        np.multiply(bits[:size].reshape(probes, n, d), 2.0, out=V)
        V -= 1.0
        return V
    if kind == "gaussian":
        return rng.standard_normal((probes, n, d))
    raise ValueError(f"kind must be one of {PROBE_KINDS}, got {kind!r}")


def hutchinson_summary(sq, n, d, probes, m):
    """Mean and standard error (:func:`attnscale.core.stats.mean_se`) of ``||J v_p||^2 / (n d)``
    over the ``probes`` rows of ``sq``, per beta (its ``m`` columns)."""
    if np.shape(sq) != (probes, m):
        raise ValueError(f"sq must have shape (probes, m) = {(probes, m)}, got {np.shape(sq)}")
    scale = 1.0 / (n * d)
    est, se = mean_se(sq, axis=0)
    return est * scale, se * scale


def check_block(name: str, value) -> int | None:
    """A block size or work budget (``block_rows``, ``output_entries``): ``None`` (the kernel's
    default) or an integer ``>= 1``, else an error naming ``name``."""
    return None if value is None else check_int(name, value, minimum=1)


def check_rows(n: int, rows) -> np.ndarray:
    """Query row indices: ``None`` (all ``n`` rows) or a non-empty 1-D integer array of indices
    in ``[0, n - 1]``, as ``int64``."""
    if rows is None:
        return np.arange(n)
    idx = np.asarray(rows)
    if idx.dtype.kind not in "iu" or idx.ndim != 1 or idx.size == 0:
        raise ValueError(f"rows must be a non-empty 1-D integer array of row indices, got {rows!r}")
    if idx.min() < 0 or idx.max() >= n:
        raise ValueError(
            f"rows must be row indices in [0, {n - 1}], got range [{idx.min()}, {idx.max()}]"
        )
    return idx.astype(np.int64)


def check_qk(Qm, Km, n_expected=None):
    """Query and key rows of a learned score matrix: two finite matrices of one shape with
    ``>= 2`` rows (``n_expected`` rows, one per token, if given)."""
    Qm = check_matrix("Qm", Qm, min_rows=2)
    Km = check_matrix("Km", Km, min_rows=2)
    if Qm.shape != Km.shape:
        raise ValueError(f"Qm and Km must have the same shape, got {Qm.shape} and {Km.shape}")
    if n_expected is not None and Qm.shape[0] != n_expected:
        raise ValueError(f"Qm must have {n_expected} rows (one per token), got {Qm.shape[0]}")
    return Qm, Km


def rows_mask(n: int, keep) -> np.ndarray:
    """The rows that count: ``None`` (all ``n``) or a boolean array of shape ``(n,)`` with at
    least two ``True`` entries."""
    if keep is None:
        return np.ones(n, dtype=bool)
    keep = np.asarray(keep, dtype=bool)
    if keep.shape != (n,) or keep.sum() < 2:
        raise ValueError(f"keep must be a boolean array of shape ({n},) with >= 2 True entries")
    return keep
