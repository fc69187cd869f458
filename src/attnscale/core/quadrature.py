"""Gauss-Legendre rules, the one source of the library's Gauss-Legendre nodes and weights: on
``[-1, 1]``, on ``[0, 1]`` and on panels (docs/finite-d.md#exact-self-weight,
docs/regimes.md#exact-finite-n-top-weight, docs/paper-b.md).

Two routines compute the nodes: :func:`scipy.special.roots_legendre` (``"scipy"``, the default)
and :func:`numpy.polynomial.legendre.leggauss` (``"numpy"``). They agree to rounding (nodes to
``1e-16``, weights to ``1e-12`` relative at 96 nodes) but not bit for bit, so a caller whose
published numbers were computed with numpy's routine names it (the random-energy model of
:mod:`attnscale.regimes.rem`, the quadrature on S^2 of :mod:`attnscale.sphere.quadrature`); new
code takes the default. Rules are cached and returned read-only.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from scipy.special import roots_legendre

from attnscale.core.validation import check_int, check_real

__all__ = [
    "ROUTINES",
    "gauss_legendre",
    "gauss_legendre_01",
    "panel_edges",
    "gauss_legendre_panels",
]

#: The routines that compute Gauss-Legendre nodes and weights (see the module docstring).
ROUTINES = ("scipy", "numpy")


def _routine(routine: str) -> str:
    if routine not in ROUTINES:
        raise ValueError(f"routine must be one of {ROUTINES}, got {routine!r}")
    return routine


def _frozen(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    for a in arrays:
        a.flags.writeable = False
    return arrays


@cache
def _rule(k: int, routine: str) -> tuple[np.ndarray, np.ndarray]:
    x, w = roots_legendre(k) if routine == "scipy" else np.polynomial.legendre.leggauss(k)
    return _frozen(np.asarray(x, dtype=np.float64), np.asarray(w, dtype=np.float64))


@cache
def _rule_01(k: int, routine: str) -> tuple[np.ndarray, np.ndarray]:
    x, w = _rule(k, routine)
    return _frozen((x + 1.0) / 2.0, w / 2.0)


def gauss_legendre(k: int, *, routine: str = "scipy") -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on ``[-1, 1]``: exact for polynomials of degree
    ``<= 2k - 1`` (docs/finite-d.md#exact-self-weight).

    Parameters
    ----------
    k : int
        Number of nodes, ``>= 1``.
    routine : {"scipy", "numpy"}, optional
        Routine that computes them (:data:`ROUTINES`).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Nodes (increasing) and weights, ``k`` each, read-only.
    """
    return _rule(check_int("k", k, minimum=1), _routine(routine))


def gauss_legendre_01(k: int, *, routine: str = "scipy") -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on ``[0, 1]``: ``(x + 1) / 2`` and ``w / 2`` of
    :func:`gauss_legendre` (docs/finite-d.md#exact-self-weight).

    Parameters
    ----------
    k : int
        Number of nodes, ``>= 1``.
    routine : {"scipy", "numpy"}, optional
        Routine that computes them (:data:`ROUTINES`).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Nodes and weights, ``k`` each, read-only.
    """
    return _rule_01(check_int("k", k, minimum=1), _routine(routine))


def panel_edges(a: float, b: float, width: float) -> np.ndarray:
    """Edges of ``m = max(1, ceil((b - a) / width))`` equal panels on ``[a, b]``, each at most
    ``width`` wide (``numpy.linspace(a, b, m + 1)``; docs/regimes.md#exact-finite-n-top-weight).

    Parameters
    ----------
    a, b : float
        Interval, ``a < b``.
    width : float
        Largest panel width, ``> 0``.
    """
    a = check_real("a", a)
    b = check_real("b", b)
    width = check_real("width", width, low=0.0, low_open=True)
    if not a < b:
        raise ValueError(f"a must be smaller than b, got a={a!r}, b={b!r}")
    m = max(1, int(math.ceil((b - a) / width)))
    return np.linspace(a, b, m + 1)


def gauss_legendre_panels(
    edges, k: int, *, routine: str = "scipy", centred: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss-Legendre rule: ``k`` nodes on each panel ``[e_i, e_{i+1}]`` of ``edges``
    (docs/finite-d.md#exact-self-weight, docs/regimes.md#exact-finite-n-top-weight).

    The nodes are ``e_i + (e_{i+1} - e_i) x`` with ``x`` the nodes on ``[0, 1]``
    (:func:`gauss_legendre_01`), the weights ``(e_{i+1} - e_i) w``; with ``centred=True``
    ``m_i + h_i x`` and ``h_i w`` instead, from the midpoints ``m_i`` and half-widths ``h_i`` and
    the rule on ``[-1, 1]``. Both are the same rule; they differ in rounding only, and each
    caller keeps the form its published numbers were computed with.

    Parameters
    ----------
    edges : array_like, shape (m + 1,)
        Increasing panel edges (e.g. :func:`panel_edges`).
    k : int
        Nodes per panel, ``>= 1``.
    routine : {"scipy", "numpy"}, optional
        Routine that computes the nodes (:data:`ROUTINES`).
    centred : bool, optional
        Map the nodes from the panels' midpoints (see above).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Nodes and weights, shape ``(m, k)`` (one row per panel).
    """
    e = np.asarray(edges, dtype=np.float64)
    if e.ndim != 1 or e.size < 2 or not np.all(np.isfinite(e)):
        raise ValueError(f"edges must be a 1-D array of at least 2 finite values, got {edges!r}")
    if centred:
        x, w = gauss_legendre(k, routine=routine)
        mid, half = (e[:-1] + e[1:]) / 2.0, (e[1:] - e[:-1]) / 2.0
        return mid[:, None] + half[:, None] * x, half[:, None] * w
    x, w = gauss_legendre_01(k, routine=routine)
    width = np.diff(e)
    return e[:-1, None] + width[:, None] * x, width[:, None] * w
