"""Quadrature on S^2 around a query for the density ``rho ∝ exp(x1 x2)``: cap probabilities and
the ``n -> inf`` attention output at fixed beta (docs/paper-b.md).

The ``n -> inf`` output ``ATT_inf(q) = int x e^{beta <q,x>} rho / int e^{beta <q,x>} rho`` is the law
of large numbers of ``ATT_n(q)``; its tangential part times beta tends to ``grad_S log rho(q)``
(backward heat equation [paper]). Everything here is a derivation [derived]; the node counts are
choices [choice] whose accuracy is tested.
"""

from __future__ import annotations

import numpy as np

from attnscale.core.quadrature import gauss_legendre_panels
from attnscale.core.validation import check_real
from attnscale.sphere.theory import normaliser_x1x2, score_x1x2, tangent_frame, unit_query

__all__ = ["cap_probability_x1x2", "heat_drift_limit_x1x2", "mean_field_x1x2"]


def _cap_nodes(q, beta: float, t_max: float, n_theta: int, n_phi: int):
    """Nodes and weights of ``int_{T <= t_max} f(x) e^{-beta T} dsigma`` on S^2 around ``q``.

    Polar angle ``theta`` around ``q`` (``T = 1 - cos theta``, ``dsigma = sin theta dtheta dphi``):
    Gauss-Legendre in ``theta`` on ``[0, theta_1]`` and ``[theta_1, theta_max]`` with
    ``1 - cos theta_1 = min(t_max, 60/beta)`` (the weight ``e^{-beta T}`` is below e^{-60} beyond),
    trapezoid (spectrally accurate for periodic integrands) in ``phi`` [choice].
    """
    q = unit_query(q)
    e1, e2 = tangent_frame(q)
    th_max = float(np.arccos(1.0 - t_max))
    t1 = min(t_max, 60.0 / beta) if beta > 0 else t_max
    th1 = float(np.arccos(1.0 - t1))
    edges = [0.0, th1] + ([th_max] if th_max > th1 * (1 + 1e-12) else [])
    th, tw = (a.ravel() for a in gauss_legendre_panels(edges, n_theta, routine="numpy"))
    phi = 2 * np.pi * np.arange(n_phi) / n_phi
    TH, PH = np.meshgrid(th, phi, indexing="ij")
    X = (
        np.cos(TH)[..., None] * q
        + (np.sin(TH) * np.cos(PH))[..., None] * e1
        + (np.sin(TH) * np.sin(PH))[..., None] * e2
    ).reshape(-1, 3)
    T = (1.0 - np.cos(TH)).reshape(-1)
    W = (np.sin(TH) * tw[:, None] * (2 * np.pi / n_phi)).reshape(-1) * np.exp(-beta * T)
    return X, W


def cap_probability_x1x2(q, t_c: float, n_theta: int = 96, n_phi: int = 96) -> float:
    """``P(T <= t_c)`` for one key from ``rho ∝ exp(x1 x2)`` on S^2 by quadrature [derived].

    Used by the cap sampler of :mod:`attnscale.sphere.keys` (the number of keys in the cap is
    ``Binomial(n, P)``). Relative accuracy ~1e-14 (checked against ``t_c = 2``, where P = 1).
    """
    t_c = check_real("t_c", t_c, low=0.0, high=2.0, low_open=True)
    X, W = _cap_nodes(q, 0.0, t_c, n_theta, n_phi)
    return float(np.sum(W * np.exp(X[:, 0] * X[:, 1])) / normaliser_x1x2(3))


def heat_drift_limit_x1x2(q, beta: float, n_theta: int = 96, n_phi: int = 96) -> dict:
    """The ``n -> inf`` output at fixed beta for ``rho ∝ exp(x1 x2)`` on S^2, by quadrature [derived].

    ``ATT_inf(q) = int x e^{beta <q,x>} rho dsigma / int e^{beta <q,x>} rho dsigma`` (the law of
    large numbers of ``ATT_n``), and its tangential part scaled by beta, to be compared with
    ``grad_S log rho(q)`` (docs/paper-b.md, backward heat equation [paper]).

    Returns
    -------
    dict
        ``beta_tangential`` (``beta P_q ATT_inf``, length 3), ``score`` (``grad_S log rho(q)``),
        ``ratio`` (``<beta P_q ATT, score> / |score|^2``), ``perp`` (component orthogonal to the
        score within the tangent plane, over ``|score|``) and ``normal`` (``beta (<ATT, q> - 1)``,
        which tends to ``-1/alpha = -1`` for d = 3).
    """
    q = unit_query(q)
    beta = check_real("beta", beta, low=0.0, low_open=True)
    X, W = _cap_nodes(q, beta, 2.0, n_theta, n_phi)
    W = W * np.exp(X[:, 0] * X[:, 1])
    att = (W[:, None] * X).sum(axis=0) / W.sum()
    tang = beta * (att - (att @ q) * q)
    g = score_x1x2(q)
    g2 = float(g @ g)
    ratio = float(tang @ g) / g2
    perp = float(np.linalg.norm(tang - ratio * g)) / np.sqrt(g2)
    return {
        "beta_tangential": tang,
        "score": g,
        "ratio": ratio,
        "perp": perp,
        "normal": float(beta * (att @ q - 1.0)),
    }


def mean_field_x1x2(Q, beta: float, n_theta: int = 32, n_phi: int = 48) -> np.ndarray:
    """``ATT_inf(q)`` (the ``n -> inf`` output at fixed beta, :func:`heat_drift_limit_x1x2`) for
    every row of ``Q`` on S^2, ``rho ∝ exp(x1 x2)``, by the same quadrature (vectorised) [derived].

    The default orders give ~1e-10 absolute accuracy of ``beta P_q ATT`` for
    ``1 <= beta <= 1e4`` (checked against :func:`heat_drift_limit_x1x2` at 96 x 96 nodes).

    Returns
    -------
    numpy.ndarray
        ``(m, 3)`` outputs; their tangential parts are the mean field of the vector-field panels.
    """
    Q = np.atleast_2d(np.asarray(Q, dtype=float))
    if Q.shape[1] != 3:
        raise ValueError(f"Q must have 3 columns (queries on S^2), got {Q.shape[1]}")
    beta = check_real("beta", beta, low=0.0, low_open=True)
    ref = np.eye(3)[np.argmin(np.abs(Q), axis=1)]
    E1 = ref - np.einsum("ij,ij->i", ref, Q)[:, None] * Q
    E1 /= np.linalg.norm(E1, axis=1, keepdims=True)
    E2 = np.cross(Q, E1)
    # nodes in the frame (q, e1, e2): local coordinates (cos th, sin th cos ph, sin th sin ph)
    Xl, W = _cap_nodes(np.array([1.0, 0.0, 0.0]), beta, 2.0, n_theta, n_phi)
    out = np.empty_like(Q)
    for s in range(0, Q.shape[0], 64):
        F = np.stack([Q[s : s + 64], E1[s : s + 64], E2[s : s + 64]], axis=1)  # (b, 3, 3)
        X = np.einsum("nk,bkj->bnj", Xl, F)
        w = W * np.exp(X[..., 0] * X[..., 1])
        out[s : s + 64] = np.einsum("bn,bnj->bj", w, X) / w.sum(axis=1)[:, None]
    return out
