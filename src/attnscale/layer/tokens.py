"""Token generators for Paper A (``docs/paper-a.md``)."""

from __future__ import annotations

import numpy as np

from attnscale.core.validation import check_int, check_real


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
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    z0, Z = gaussian_draw(n, d, rng)
    return from_draw(z0, Z, rho)


def gaussian_draw(n: int, d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The Gaussian draw behind :func:`near_simplex`: ``z_0`` (``d``) and ``Z`` (``n x d``),
    i.i.d. ``N(0, I_d / d)``, drawn in that order (docs/paper-a.md#gaussian-near-simplex-tokens).

    One draw serves every ``rho`` (common random numbers): the workflow caches it once per
    ``(n, d, trial)`` and builds the tokens of each ``rho`` with :func:`from_draw`.
    """
    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=1)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    scale = 1.0 / np.sqrt(d)
    z0 = rng.standard_normal(d) * scale
    Z = rng.standard_normal((n, d)) * scale
    return z0, Z


def from_draw(z0: np.ndarray, Z: np.ndarray, rho: float) -> np.ndarray:
    """Near-simplex tokens ``x_i = sqrt(rho) z_0 + sqrt(1 - rho) z_i`` from a Gaussian draw
    (:func:`gaussian_draw`); bit-identical to :func:`near_simplex` with the same generator state.
    ``0 <= rho < 1``: at ``rho = 0`` the tokens are the ``z_i`` themselves (uniform in direction,
    the rho = 0 panels of the finite-d figures, docs/finite-d.md).
    """
    rho = check_real("rho", rho, low=0.0, high=1.0, high_open=True)
    if rho == 0.0:
        return np.array(Z, dtype=np.float64)
    return np.sqrt(rho) * z0[None, :] + np.sqrt(1.0 - rho) * Z


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

    Computed in O(n d) from ``||sum_i y_i||^2 = n + sum_{i != j} <y_i, y_j>``.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    s = Y.sum(axis=0)
    return float((s @ s - n) / (n * (n - 1)))


def mean_sq_norm(X: np.ndarray) -> float:
    """Realised mean squared norm ``q_hat`` = mean of ``||x_i||^2``."""
    X = np.asarray(X, dtype=np.float64)
    return float(np.mean(np.einsum("ij,ij->i", X, X)))
