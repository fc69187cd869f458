"""Learned query-key matrices ``W`` in Paper A's layer (issue 10, item 3).

Theory: ``docs/realistic-attention.md#learned-query-key-matrix``.

Scores ``beta <W y_i, y_j>`` on pre-LN tokens, values ``V = I``; the layer itself runs in
:mod:`attnscale.layer.scores.attention` with query rows ``W y_i`` and key rows ``y_j``. Two families:
``W = I + epsilon G`` (``G`` GOE) and ``W = (d / r) U U^T`` (a scaled random rank-``r``
projection). The critical scale is predicted from the effective self- and cross-scores.
"""

from __future__ import annotations

import numpy as np

from attnscale.core.validation import check_int, check_matrix, check_real
from attnscale.layer.dense.attention import normalise

__all__ = [
    "goe_matrix",
    "perturbed_identity",
    "random_projection",
    "query_key_rows",
    "effective_scores",
    "gamma_c_eff",
    "gamma_c_fluct",
]


def goe_matrix(d: int, rng: np.random.Generator) -> np.ndarray:
    """A GOE matrix ``G = (H + H^T) / sqrt(2 d)``, ``H_ij`` i.i.d. ``N(0, 1)``.

    Off-diagonal entries have variance ``1/d``, diagonal entries ``2/d``; the spectrum fills
    the semicircle on ``[-2, 2]`` as ``d -> inf`` (spectral radius ~ 2), so ``||G y|| ~ 1`` for a
    unit vector ``y``. See ``docs/realistic-attention.md#learned-query-key-matrix``.
    """
    d = check_int("d", d, minimum=1)
    H = rng.standard_normal((d, d))
    return (H + H.T) / np.sqrt(2.0 * d)


def perturbed_identity(d: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """``W = I + epsilon G`` with ``G`` from :func:`goe_matrix` (``epsilon >= 0``).

    ``docs/realistic-attention.md#learned-query-key-matrix``. For ``epsilon > 1/2`` ``W`` is
    indefinite (its spectrum fills ``[1 - 2 epsilon, 1 + 2 epsilon]``).
    """
    d = check_int("d", d, minimum=1)
    epsilon = check_real("epsilon", epsilon, low=0.0)
    return np.eye(d) + epsilon * goe_matrix(d, rng)


def random_projection(d: int, r: int, rng: np.random.Generator) -> np.ndarray:
    """``W = (d / r) U U^T`` with ``U`` a Haar-random ``d x r`` orthonormal frame (``1 <= r <= d``).

    The factor ``d / r`` makes ``E <W y, y> = 1`` for ``y`` uniform on the sphere (``E ||U^T
    y||^2 = r / d``), the identity's self-score, so ``beta`` keeps its meaning across ``r``.
    ``docs/realistic-attention.md#learned-query-key-matrix``.
    """
    d = check_int("d", d, minimum=1)
    r = check_int("r", r, minimum=1, maximum=d)
    Qr, R = np.linalg.qr(rng.standard_normal((d, r)))
    Qr = Qr * np.sign(np.diag(R))[None, :]  # Haar measure (fix the QR sign convention)
    return (d / r) * (Qr @ Qr.T)


def query_key_rows(X, W=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pre-LN rows and the query/key rows of scores ``<W y_i, y_j>``: returns ``(Y, Qm, Km)``.

    ``Qm = Y W^T`` (row ``i`` is ``W y_i``), ``Km = Y``; ``W = None`` means the identity.
    """
    Y, _ = normalise(X)
    if W is None:
        return Y, Y, Y
    d = Y.shape[1]
    W = check_matrix("W", W)
    if W.shape != (d, d):
        raise ValueError(f"W must have shape (d, d) = ({d}, {d}), got {W.shape}")
    return Y, Y @ W.T, Y


def effective_scores(Qm, Km, rows=None) -> tuple[float, float]:
    """Mean self-score ``s_self = mean_i <q_i, k_i>`` and mean cross-score
    ``s_cross = mean_{i != j} <q_i, k_j>`` over the tokens ``rows`` (default all), in
    ``O(n d)`` (``sum_{i,j} <q_i, k_j> = <sum q, sum k>``).

    ``docs/realistic-attention.md#learned-query-key-matrix``.
    """
    Qm = check_matrix("Qm", Qm, min_rows=2)
    Km = check_matrix("Km", Km, min_rows=2)
    if Qm.shape != Km.shape:
        raise ValueError(f"Qm and Km must have the same shape, got {Qm.shape} and {Km.shape}")
    if rows is not None:
        Qm, Km = Qm[rows], Km[rows]
    m = Qm.shape[0]
    diag = np.einsum("id,id->i", Qm, Km)
    total = Qm.sum(axis=0) @ Km.sum(axis=0)
    return float(diag.mean()), float((total - diag.sum()) / (m * (m - 1)))


def gamma_c_eff(s_self: float, s_cross: float, n: int | None = None) -> float:
    """Critical ``gamma`` predicted from effective scores
    (``docs/realistic-attention.md#learned-query-key-matrix``).

    Replacing the simplex scores ``(1, rho)`` by ``(s_self, s_cross)`` gives
    ``A_ii = 1 / (1 + (n - 1) e^{beta (s_cross - s_self)})``, which is 1/2 at
    ``beta = ln(n - 1) / (s_self - s_cross)``. With ``beta = gamma ln n``:
    ``gamma_c,eff = 1 / (s_self - s_cross)`` as ``n -> inf`` (``n = None``) and
    ``ln(n - 1) / (ln n (s_self - s_cross))`` at finite ``n``. ``inf`` if
    ``s_self <= s_cross`` (the self-score never wins).
    """
    s_self = check_real("s_self", s_self)
    s_cross = check_real("s_cross", s_cross)
    gap = s_self - s_cross
    if gap <= 0.0:
        return float("inf")
    if n is None:
        return 1.0 / gap
    n = check_int("n", n, minimum=3)
    return float(np.log(n - 1) / (np.log(n) * gap))


def gamma_c_fluct(s_self: float, s_cross: float, sd_cross: float, n: int) -> float:
    """Critical ``gamma`` with the cross-score spread
    (``docs/realistic-attention.md#learned-query-key-matrix``).

    Treat the ``n - 1`` cross-scores of a row as i.i.d. with mean ``s_cross`` and standard
    deviation ``sd_cross`` and replace their softmax sum by its Gaussian (annealed) mean,
    ``(n - 1) e^{beta s_cross + beta^2 sd^2 / 2}``. Then ``A_ii = 1/2`` where
    ``beta (s_self - s_cross) = ln(n - 1) + beta^2 sd^2 / 2``; with ``beta = gamma ln n`` the
    first root is

    ``gamma = [g - sqrt(g^2 - 2 sd^2 ln(n - 1))] / (sd^2 ln n)``, ``g = s_self - s_cross``,

    which tends to :func:`gamma_c_eff` (finite ``n``) as ``sd -> 0``. If
    ``g^2 < 2 sd^2 ln(n - 1)`` there is no root: the spread of the cross-scores beats the
    self-score at every ``beta`` and the model predicts *no* transition (``inf``).
    """
    s_self = check_real("s_self", s_self)
    s_cross = check_real("s_cross", s_cross)
    sd = check_real("sd_cross", sd_cross, low=0.0)
    n = check_int("n", n, minimum=3)
    g = s_self - s_cross
    if g <= 0.0:
        return float("inf")
    lnm = np.log(n - 1)
    disc = g * g - 2.0 * sd * sd * lnm
    if disc < 0.0:
        return float("inf")
    # stable form of the smaller root: 2 ln(n-1) / (ln n (g + sqrt(disc)))
    return float(2.0 * lnm / (np.log(n) * (g + np.sqrt(disc))))
