"""Token generators for Paper A (``docs/paper-a.md``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from attnscale.core.validation import (
    check_int,
    check_matrix,
    check_nonzero_rows,
    check_real,
    check_rng,
)

__all__ = [
    "COSINE_CHUNK",
    "near_simplex",
    "gaussian_draw",
    "from_draw",
    "simplex_exact",
    "mean_cosine",
    "mean_sq_norm",
    "TokenEstimate",
    "estimate_rho_q",
]


#: Rows of normalised tokens :func:`mean_cosine` forms at a time (``n`` beyond it: in chunks).
COSINE_CHUNK = 65536


def near_simplex(n: int, d: int, rho: float, rng: np.random.Generator) -> np.ndarray:
    """Near-simplex Gaussian tokens, docs/paper-a.md#gaussian-near-simplex-tokens.

    ``x_i = sqrt(rho) z_0 + sqrt(1 - rho) z_i`` with ``z_0, z_1, ..., z_n`` i.i.d.
    ``N(0, I_d / d)``, so that ``E||x_i||^2 = 1`` and ``E<x_i, x_j> = rho`` (i != j).

    The draws are made in a fixed order (``z_0`` first, then the ``n x d`` block), so two calls
    with generators in the same state and different ``rho`` share ``z`` (common random numbers).

    Parameters
    ----------
    n : int
        Number of tokens, ``n >= 2``.
    d : int
        Dimension, ``d >= 1``.
    rho : float
        Nominal pairwise correlation, ``0 < rho < 1``.
    rng : numpy.random.Generator
        Source of randomness (see :mod:`attnscale.core.seeding`).

    Returns
    -------
    numpy.ndarray
        ``(n, d)`` float64 token matrix ``X``.
    """
    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=1)
    rho = check_real("rho", rho, low=0.0, high=1.0, low_open=True, high_open=True)
    check_rng(rng)
    z0, Z = gaussian_draw(n, d, rng)
    return from_draw(z0, Z, rho)


def gaussian_draw(n: int, d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The Gaussian draw behind :func:`near_simplex`: ``z_0`` (``d``) and ``Z`` (``n x d``),
    i.i.d. ``N(0, I_d / d)``, drawn in that order (docs/paper-a.md#gaussian-near-simplex-tokens).

    One draw serves every ``rho`` (common random numbers): the workflow caches it once per
    ``(n, d, trial)`` and builds the tokens of each ``rho`` with :func:`from_draw`. Memory: the
    ``n x d`` block is scaled in place (peak ``n d`` floats, 1 GiB at ``n = 2^20``, ``d = 128``).
    """
    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=1)
    check_rng(rng)
    scale = 1.0 / np.sqrt(d)
    z0 = rng.standard_normal(d) * scale
    Z = rng.standard_normal((n, d))
    Z *= scale  # in place: the same numbers as rng.standard_normal((n, d)) * scale, no copy
    return z0, Z


def from_draw(z0: np.ndarray, Z: np.ndarray, rho: float, *, out=None) -> np.ndarray:
    """Near-simplex tokens ``x_i = sqrt(rho) z_0 + sqrt(1 - rho) z_i`` from a Gaussian draw
    (:func:`gaussian_draw`); bit-identical to :func:`near_simplex` with the same generator state.
    ``0 <= rho < 1``: at ``rho = 0`` the tokens are the ``z_i`` themselves (uniform in direction,
    the rho = 0 panels of the finite-d figures, docs/finite-d.md).

    Built without temporaries: ``X = sqrt(1 - rho) Z`` then ``X += sqrt(rho) z_0`` (the same
    numbers as the sum written the other way round: float addition is commutative), so the peak
    is ``Z`` and ``X``; with ``out=Z`` (a float64 ``Z`` the caller no longer needs) the tokens
    overwrite the draw and the peak is ``Z`` alone.
    """
    rho = check_real("rho", rho, low=0.0, high=1.0, high_open=True)
    if out is not None and (out.shape != np.shape(Z) or out.dtype != np.float64):
        raise ValueError(f"out must be a float64 array of shape {np.shape(Z)}")
    if rho == 0.0:
        if out is None:
            return np.array(Z, dtype=np.float64)
        out[...] = Z
        return out
    X = np.multiply(Z, np.sqrt(1.0 - rho), out=out)
    X += np.sqrt(rho) * z0[None, :]
    return X


def simplex_exact(n: int, rho: float, q: float = 1.0) -> np.ndarray:
    """Exact simplex tokens (Assumption 1, docs/paper-a.md#assumptions), built from a Cholesky factor.

    Rows of ``sqrt(q) L`` with ``L L^T = (1 - rho) I_n + rho 1 1^T``: ``||x_i||^2 = q`` and
    ``<y_i, y_j> = rho`` exactly (up to rounding), in dimension ``d = n``.

    Parameters
    ----------
    n : int
        Number of tokens (and dimension), ``n >= 2``.
    rho : float
        Pairwise cosine, ``0 < rho < 1``.
    q : float, optional
        Squared norm of every token, ``q > 0``.

    Returns
    -------
    numpy.ndarray
        ``(n, n)`` float64 token matrix.
    """
    n = check_int("n", n, minimum=2)
    rho = check_real("rho", rho, low=0.0, high=1.0, low_open=True, high_open=True)
    q = check_real("q", q, low=0.0, low_open=True)
    gram = (1.0 - rho) * np.eye(n) + rho * np.ones((n, n))
    return np.sqrt(q) * np.linalg.cholesky(gram)


def mean_cosine(X: np.ndarray) -> float:
    """Realised mean pairwise cosine ``rho_hat`` = mean of ``<y_i, y_j>`` over ``i != j`` (docs/paper-a.md#gaussian-near-simplex-tokens).

    Computed in O(n d) from ``||sum_i y_i||^2 = n + sum_{i != j} <y_i, y_j>``. Beyond
    :data:`COSINE_CHUNK` rows the normalised rows are formed that many at a time (memory
    ``O(COSINE_CHUNK d)``, not ``O(n d)``) and summed in the same order as numpy sums a whole
    ``Y`` along its rows for ``d >= 2`` (row after row), so the result is the same to the bit
    (tested).
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    if n <= COSINE_CHUNK or d == 1:
        Y = X / np.linalg.norm(X, axis=1, keepdims=True)
        s = Y.sum(axis=0)
    else:  # the same sum, row after row, COSINE_CHUNK rows of Y at a time
        s = None
        for a in range(0, n, COSINE_CHUNK):
            Y = X[a : a + COSINE_CHUNK] / np.linalg.norm(
                X[a : a + COSINE_CHUNK], axis=1, keepdims=True
            )
            s = Y.sum(axis=0) if s is None else np.concatenate([s[None], Y]).sum(axis=0)
    return float((s @ s - n) / (n * (n - 1)))


def mean_sq_norm(X: np.ndarray) -> float:
    """Realised mean squared norm ``q_hat`` = mean of ``||x_i||^2``."""
    X = np.asarray(X, dtype=np.float64)
    return float(np.mean(np.einsum("ij,ij->i", X, X)))


class TokenEstimate(NamedTuple):
    """``(rho_hat, q_hat, n, d)`` of a token matrix (:func:`estimate_rho_q`)."""

    #: mean pairwise cosine of the normalised rows (:func:`mean_cosine`)
    rho_hat: float
    #: mean squared row norm (:func:`mean_sq_norm`)
    q_hat: float
    #: number of rows (tokens)
    n: int
    #: row dimension
    d: int


def estimate_rho_q(X) -> TokenEstimate:
    """Estimate Paper A's ``rho`` and ``q`` from token vectors (docs/ask-the-theory.md#estimate-rho-from-tokens).

    The estimator the pipeline applies to every drawn configuration
    (docs/paper-a.md#gaussian-near-simplex-tokens): ``rho_hat`` is the mean of
    ``<y_i, y_j>`` over ``i != j`` with ``y_i = x_i / ||x_i||`` (:func:`mean_cosine`) and
    ``q_hat`` the mean of ``||x_i||^2`` (:func:`mean_sq_norm`); both in O(n d).

    Parameters
    ----------
    X : array_like
        ``(n, d)`` real array, one token per row (a head's keys, or the tokens before its
        pre-layer norm), ``n >= 2``, ``d >= 1``, finite, no zero row.

    Returns
    -------
    TokenEstimate
        ``(rho_hat, q_hat, n, d)``; ``rho_hat`` lies in ``[-1/(n-1), 1]``. The theory's
        ``rho`` must lie in ``[0, 1)``: a negative ``rho_hat`` means the rows are spread at
        least as evenly as uniform directions.

    Examples
    --------
    >>> import numpy as np
    >>> X = near_simplex(4096, 128, 0.5, np.random.default_rng(0))
    >>> est = estimate_rho_q(X)
    >>> round(est.rho_hat, 1), round(est.q_hat, 1), est.n, est.d
    (0.5, 1.0, 4096, 128)
    """
    X = check_matrix("tokens", X, min_rows=2)
    check_nonzero_rows("tokens", X)
    n, d = X.shape
    return TokenEstimate(mean_cosine(X), mean_sq_norm(X), int(n), int(d))
