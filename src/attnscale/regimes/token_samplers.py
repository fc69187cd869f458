"""Sampler of one query row of Paper A's Gaussian near-simplex tokens, through sufficient
statistics, in ``O(n)`` work for any ``d`` and with optional exact or noisy copies of the query
(:func:`gaussian_token_draw`, :func:`gaussian_token_row`; docs/regimes.md#samplers). Random
numbers only from a :class:`numpy.random.Generator` built by :mod:`attnscale.core.seeding`.
"""

from __future__ import annotations

import math

import numpy as np

from attnscale.core.validation import check_int, check_rho, check_rng
from attnscale.regimes.ties import copy_cosines

__all__ = ["gaussian_token_draw", "gaussian_token_row"]


def gaussian_token_draw(
    n: int, d: int, rho: float, rng: np.random.Generator, *, copies: int = 0
) -> dict:
    """One query row of Paper A's Gaussian near-simplex tokens, through sufficient statistics
    (docs/regimes.md#samplers).

    Tokens ``x_i = sqrt(rho) z_0 + sqrt(1 - rho) z_i``, ``z ~ N(0, I_d / d)``; the query is token 0.
    With ``e_1 = x_0 / ||x_0||`` and ``e_2`` the direction of ``z_0`` orthogonal to it
    (``z_0 = p e_1 + q e_2``), each other token needs only ``a_j = <z_j, e_1>``,
    ``b_j = <z_j, e_2>`` (i.i.d. normal) and ``||z_j||^2 - a_j^2 - b_j^2`` (``chi^2_{d-2}``), all
    independent of ``(z_0, z_0')``: the cosine ``c_j = <x_j, e_1> / ||x_j||`` costs ``O(1)`` for
    any ``d``. At ``rho = 0`` this is ``c = a / sqrt(a^2 + chi^2_{d-1})``. Exact in law (checked
    against full tokens in tests/test_regimes.py).

    Draw order (fixed): ``z_0``, ``z_0'`` (``d`` each; skipped at ``rho = 0``), then ``a``, ``b``
    (``rho > 0``), the chi-square for the ``n - 1`` other tokens, then ``(a', w')`` of ``copies``
    noisy copies (:func:`attnscale.regimes.ties.copy_cosines`). So every number of copies up to
    ``copies`` shares the same other tokens (common random numbers): copies replace tokens
    ``1 .. k - 1``.

    Parameters
    ----------
    n : int
        Tokens in the row (the query included), ``>= 2``.
    d : int
        Dimension, ``>= 3``.
    rho : float
        Nominal correlation, ``0 <= rho < 1``.
    rng : numpy.random.Generator
        Source of randomness (:mod:`attnscale.core.seeding`).
    copies : int, optional
        Copy statistics to draw, ``0 <= copies <= n - 1``.

    Returns
    -------
    dict
        ``others`` (``n - 1`` cosines with the query), ``copy_a``, ``copy_w`` (``copies`` each).
    """
    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=3)
    rho = check_rho(rho)
    copies = check_int("copies", copies, minimum=0, maximum=n - 1)
    check_rng(rng)
    m = n - 1
    if rho == 0.0:
        a = rng.standard_normal(m)
        c = a / np.sqrt(a * a + rng.chisquare(d - 1, m))
    else:
        g0 = rng.standard_normal(d)
        gq = rng.standard_normal(d)
        xq = math.sqrt(rho) * g0 + math.sqrt(1.0 - rho) * gq
        e1 = xq / np.linalg.norm(xq)
        p = float(g0 @ e1)
        q = float(np.linalg.norm(g0 - p * e1))
        a = rng.standard_normal(m)
        b = rng.standard_normal(m)
        r2 = rng.chisquare(d - 2, m)
        u = math.sqrt(rho) * p + math.sqrt(1.0 - rho) * a
        v = math.sqrt(rho) * q + math.sqrt(1.0 - rho) * b
        c = u / np.sqrt(u * u + v * v + (1.0 - rho) * r2)
    return {
        "others": c,
        "copy_a": rng.standard_normal(copies),
        "copy_w": rng.chisquare(d - 1, copies),
    }


def gaussian_token_row(
    n: int,
    d: int,
    rho: float,
    rng: np.random.Generator,
    *,
    copies: int = 0,
    copy_noise: float = 0.0,
) -> np.ndarray:
    """The query's cosines with all ``n`` tokens, ``[1, copies..., others...]``: token 0 is the
    query itself, tokens ``1`` to ``copies`` its copies ``(y + copy_noise xi) / ||.||`` (cosine 1
    for exact copies), the rest Gaussian near-simplex tokens (:func:`gaussian_token_draw`;
    docs/regimes.md#samplers)."""
    draw = gaussian_token_draw(n, d, rho, rng, copies=copies)
    cc = copy_cosines(copy_noise, draw["copy_a"], draw["copy_w"], d)
    return np.concatenate([[1.0], cc, draw["others"][copies:]])
