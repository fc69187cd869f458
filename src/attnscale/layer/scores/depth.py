"""Depth: Paper A's layer iterated ``L`` times, pre-LN at every layer (issue 10, item 5).

Theory: ``docs/realistic-attention.md#depth``.

Layer ``l`` maps ``x^{l-1}`` to ``x^l_i = sum_j A_ij y^{l-1}_j + alpha x^{l-1}_i`` with
``y^{l-1} = x^{l-1} / ||x^{l-1}||`` and the same ``beta`` at every layer. The exact finite-n
simplex map (``docs/paper-a.md#finite-n-simplex-map``, :func:`attnscale.layer.theory.simplex_map`)
sends equiangular tokens of equal norm to equiangular tokens of equal norm, so on simplex
tokens depth is the iteration of that map on ``(rho, q)``. Near collapse ``rho -> 1`` the map is
iterated on ``delta = 1 - rho`` (the identity ``||x_i'||^2 - <x_i', x_j'> = e^2 delta`` gives
``delta' = e^2 delta / ||x_i'||^2`` without cancellation), and the simulation measures
``delta`` from centred rows (:func:`attnscale.layer.scores.attention.mean_pair_distance`).
"""

from __future__ import annotations

import numpy as np

from attnscale.core.validation import check_int, check_matrix, check_real
from attnscale.layer.dense.attention import normalise
from attnscale.layer.scores.attention import angle_ratio_outputs, layer_outputs, mean_pair_distance

__all__ = ["simplex_step", "simplex_depth", "COLLAPSE_DELTA", "iterate_layers"]


def _layers(L):
    return check_int("L", L, minimum=1)


def simplex_step(n: int, delta: float, beta: float, alpha: float = 0.0, q: float = 1.0):
    """One layer of the finite-n simplex map on ``(delta = 1 - rho, q)``
    (``docs/realistic-attention.md#depth``).

    The same algebra as :func:`attnscale.layer.theory.simplex_map` with ``rho = 1 - delta``,
    ``t = e^{-beta delta}``, ``a_n - b_n = -expm1(-beta delta) / (1 + (n - 1) t)`` (no
    cancellation when ``delta -> 0``), ``e = a_n - b_n + alpha sqrt q``:
    ``||x'||^2 = e^2 + 2 e b_n s1 + b_n^2 s2`` and ``delta' = e^2 delta / ||x'||^2``.

    Returns
    -------
    (float, float, float)
        ``(delta', q', lambda)`` with ``lambda = e^2 / ||x'||^2 = delta' / delta``.
    """
    n = check_int("n", n, minimum=2)
    delta = check_real("delta", delta, low=0.0, high=1.0, high_open=True)
    beta = check_real("beta", beta, low=0.0)
    alpha = check_real("alpha", alpha, low=0.0)
    q = check_real("q", q, low=0.0, low_open=True)
    rho = 1.0 - delta
    t = np.exp(-beta * delta)
    den = 1.0 + (n - 1) * t
    bn = t / den
    e = -np.expm1(-beta * delta) / den + alpha * np.sqrt(q)
    s1 = 1.0 + (n - 1) * rho
    s2 = n + n * (n - 1) * rho
    norm2 = e * e + 2.0 * e * bn * s1 + bn * bn * s2
    lam = e * e / norm2
    return float(lam * delta), float(norm2), float(lam)


def simplex_depth(n: int, rho0: float, beta: float, L: int, alpha: float = 0.0, q0: float = 1.0):
    """Iterate :func:`simplex_step` ``L`` times from ``(1 - rho0, q0)``
    (``docs/realistic-attention.md#depth``).

    Returns
    -------
    dict
        ``delta`` and ``q`` of shape ``(L + 1,)`` (layer 0 = input) and ``lambda`` of shape
        ``(L,)`` (``lambda[l - 1]`` is layer ``l``'s angle ratio; ``nan`` once ``delta = 0``).
    """
    L = _layers(L)
    rho0 = check_real("rho0", rho0, low=0.0, high=1.0, high_open=True)
    delta = np.empty(L + 1)
    q = np.empty(L + 1)
    lam = np.full(L, np.nan)
    delta[0], q[0] = 1.0 - rho0, q0
    for layer in range(L):
        if delta[layer] == 0.0:  # collapsed below float64's range: stays collapsed
            delta[layer + 1] = 0.0
            q[layer + 1] = simplex_step(n, 0.0, beta, alpha, q[layer])[1]
            continue
        delta[layer + 1], q[layer + 1], lam[layer] = simplex_step(
            n, delta[layer], beta, alpha, q[layer]
        )
    return {"delta": delta, "q": q, "lambda": lam}


#: Below this ``delta = 1 - rho`` the simulated tokens have collapsed to rounding level
#: (float64 rows of norm 1 resolve ``||y_i - y_j||^2`` down to ~1e-30); later layers are not run.
COLLAPSE_DELTA = 1e-24


def iterate_layers(
    X,
    beta: float,
    L: int,
    alpha: float = 0.0,
    *,
    collapse_delta: float = COLLAPSE_DELTA,
    block_rows: int | None = None,
):
    """Run the layer ``L`` times on the tokens ``X`` (``docs/realistic-attention.md#depth``).

    Per layer: ``delta_l = 1 - rho_hat_l`` (mean over pairs of ``||y_i - y_j||^2 / 2``, from
    centred rows), ``q_l`` = mean ``||x^l_i||^2`` and the layer's angle ratio ``lambda_l``
    (pairs at rounding distance are left out and counted). Once ``delta_l < collapse_delta``
    the tokens count as collapsed and the remaining layers are ``nan`` (not computed).

    Returns
    -------
    dict
        ``delta``, ``q`` (``L + 1``,), ``lambda``, ``n_excluded_pairs`` (``L``,).
    """
    collapse_delta = check_real("collapse_delta", collapse_delta, low=0.0)
    X = check_matrix("X", X, min_rows=2)
    L = _layers(L)
    beta = check_real("beta", beta, low=0.0)
    alpha = check_real("alpha", alpha, low=0.0)
    delta = np.full(L + 1, np.nan)
    q = np.full(L + 1, np.nan)
    lam = np.full(L, np.nan)
    excl = np.zeros(L, dtype=np.int64)
    Y, _ = normalise(X)
    delta[0], q[0] = mean_pair_distance(Y), float(np.mean(np.einsum("id,id->i", X, X)))
    for layer in range(L):
        if delta[layer] < collapse_delta:
            break
        out = layer_outputs(X, Y, Y, [beta], alpha, block_rows=block_rows)
        lam_l, _, excl[layer] = angle_ratio_outputs(Y, out, block_rows=block_rows)
        lam[layer] = lam_l[0]
        X = out[0]
        Y, _ = normalise(X)
        delta[layer + 1] = mean_pair_distance(Y)
        q[layer + 1] = float(np.mean(np.einsum("id,id->i", X, X)))
    return {"delta": delta, "q": q, "lambda": lam, "n_excluded_pairs": excl}
