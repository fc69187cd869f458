"""The multiplier probes of a trained head (docs/real-transformer.md#the-probes).

Every probe runs Paper A's layer (values ``V = I``, ``alpha = 0``) on the *normalised attention
inputs* ``y_i = x_i / ||x_i||`` of one layer of one window, driven by the head's own attention
weights ``A(s) = softmax(s * q_i . k_j / sqrt(d_head))`` with the head's scores multiplied by
``s`` [choice]. ``s = 1`` is the trained model. The forward pass is not rerun: the cached
queries and keys give the scores, and each multiplier costs one softmax and one GEMM
``A(s) Y`` on the sampled query rows.

Query rows: the text positions of the window (``[CLS]`` and ``[SEP]`` are keys, never queries
or pair members [choice]), all of them or a sample of ``rows`` (the pairs of lambda are the pairs
within the sample: an unbiased estimate of the mean over all pairs [derived]).
"""

from __future__ import annotations

import numpy as np

from attnscale.transformer.library import (
    angle_ratio_outputs,
    crossing,
    effective_scores,
    gamma_c_eff,
    gamma_c_fluct,
    mean_cosine,
    score_spread,
    simplex_lambda,
)

__all__ = [
    "text_rows",
    "head_curves",
    "layer_probes",
    "critical_multiplier",
    "lambda_eff_curve",
    "predicted_half_multipliers",
]


def text_rows(n: int, rows: int | None, rng) -> np.ndarray:
    """Sorted query rows among the text positions ``1`` to ``n - 2`` of a window: all of them, or
    ``rows`` drawn without replacement by ``rng``."""
    pos = np.arange(1, n - 1)
    if rows is None or rows >= pos.size:
        return pos
    return np.sort(rng.choice(pos, size=int(rows), replace=False))


def _softmax(S):
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    E /= E.sum(axis=-1, keepdims=True)
    return E


def head_curves(Y, S, rows, multipliers) -> dict:
    """Phase curve of one head on one window.

    Parameters
    ----------
    Y : (n, d) array
        Normalised attention inputs.
    S : (m, n) array
        The head's scores at the trained scale for the query rows ``rows``.
    rows : (m,) int array
        The query rows (positions in the window).
    multipliers : (K,) array
        Multipliers ``s`` of the scores.

    Returns
    -------
    dict
        ``lambda`` (K,), ``self_weight`` (K,): mean ``A_ii(s)`` over the rows;
        ``lambda_inf``: lambda of the argmax map (every row sends its query to its top key, the
        ``s -> inf`` limit); ``self_max``: fraction of rows whose own score is the row maximum;
        ``top_key_share``: fraction of rows whose top key is the window's most frequent top
        key; ``special_mass``: mean weight on ``[CLS]`` and ``[SEP]`` at ``s = 1``.
    """
    m, n = S.shape
    ms = np.asarray(multipliers, dtype=np.float64)
    Sc = S - S.max(axis=1, keepdims=True)
    A = np.exp(ms[:, None, None] * Sc[None])  # (K, m, n)
    A /= A.sum(axis=2, keepdims=True)
    ar = np.arange(m)
    self_w = A[:, ar, rows].mean(axis=1)
    out = (A.reshape(-1, n) @ Y).reshape(ms.size, m, -1)
    lam, _, _ = angle_ratio_outputs(Y[rows], out)
    top = S.argmax(axis=1)
    lam_inf, _, _ = angle_ratio_outputs(Y[rows], Y[top][None])
    counts = np.bincount(top, minlength=n)
    A1 = _softmax(S)
    return {
        "lambda": lam,
        "self_weight": self_w,
        "lambda_inf": float(lam_inf[0]),
        "self_max": float(np.mean(top == rows)),
        "top_key_share": float(counts.max() / m),
        "special_mass": float(np.mean(A1[:, 0] + A1[:, n - 1])),
    }


def layer_probes(record, rows, multipliers, *, descriptors: bool = True) -> dict:
    """Every head of one layer (a :class:`attnscale.transformer.architectures.LayerRecord`) on
    the query ``rows``: the curves of :func:`head_curves` and the descriptors the theory reads
    off the head at the trained scale (docs/real-transformer.md#reading-the-theory-off-a-head).

    Returns arrays over heads: ``lambda``, ``self_weight`` (heads, K); ``lambda_inf``,
    ``self_max``, ``top_key_share``, ``special_mass``, ``s_self``, ``s_cross``, ``sd_self``,
    ``sd_cross``, ``rho_q``, ``rho_k`` (heads,); and the layer's ``rho_hat`` (mean cosine of the
    normalised inputs over the text positions) and ``q_hat`` (their mean squared norm over the
    squared mean norm, 1 for the normalised tokens the theory uses).
    """
    X = record.inputs
    n = X.shape[0]
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    text = np.arange(1, n - 1)
    H, _, dh = record.q.shape
    keys = ("lambda", "self_weight", "lambda_inf", "self_max", "top_key_share", "special_mass")
    out = {k: [] for k in keys}
    extra = {k: [] for k in ("s_self", "s_cross", "sd_self", "sd_cross", "rho_q", "rho_k")}
    for h in range(H):
        Qm = record.q[h] / np.sqrt(dh)
        Km = record.k[h]
        res = head_curves(Y, Qm[rows] @ Km.T, rows, multipliers)
        for k in keys:
            out[k].append(res[k])
        if not descriptors:
            continue
        s_self, s_cross = effective_scores(Qm, Km)
        sd_self, sd_cross = score_spread(Qm, Km)
        extra["s_self"].append(s_self)
        extra["s_cross"].append(s_cross)
        extra["sd_self"].append(sd_self)
        extra["sd_cross"].append(sd_cross)
        extra["rho_q"].append(mean_cosine(record.q[h][text]))
        extra["rho_k"].append(mean_cosine(record.k[h][text]))
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in {**out, **extra}.items() if v}
    arrays["rho_hat"] = np.float64(mean_cosine(Y[text]))
    return arrays


def critical_multiplier(multipliers, lam, lam_inf, rho_hat) -> float:
    """The head's critical multiplier ``s*`` [choice]: the first upward crossing, in ``ln s``, of
    ``lambda(s) / lambda(inf)`` through the simplex's critical value ``1 / (1 + 3 rho_hat)``
    (Paper A's lambda at ``gamma_c``; docs/paper-a.md), by the project's one crossing function.
    ``nan`` if it does not cross on the grid (or ``lambda(inf) <= 0``)."""
    if not np.isfinite(lam_inf) or lam_inf <= 0.0:
        return float("nan")
    return crossing(multipliers, np.asarray(lam) / lam_inf, 1.0 / (1.0 + 3.0 * rho_hat))


def lambda_eff_curve(n: int, rho_hat: float, s_self: float, s_cross: float, multipliers):
    """The effective-score prediction of lambda(s) (docs/realistic-attention.md#effective-score-simplex-analogue,
    as in ``realistic_learned_qk``): the finite-n simplex lambda at ``rho_hat`` with ``beta``
    rescaled so that ``e^{beta (rho_hat - 1)} = e^{s (s_cross - s_self)}``, i.e.
    ``beta = s (s_self - s_cross) / (1 - rho_hat)``; ``nan`` where ``s_self <= s_cross``."""
    gap = s_self - s_cross
    ms = np.asarray(multipliers, dtype=np.float64)
    if gap <= 0.0:
        return np.full(ms.size, np.nan)
    return np.array([simplex_lambda(n, rho_hat, s * gap / (1.0 - rho_hat)) for s in ms])


def predicted_half_multipliers(n: int, s_self: float, s_cross: float, sd_cross: float):
    """Multipliers at which the learned-score theory puts the mean self-weight at 1/2: the
    mean-score prediction ``ln(n-1) / (s_self - s_cross)`` (``gamma_c_eff`` at ``n`` times
    ``ln n``) and the one with the cross-score spread (``gamma_c_fluct`` times ``ln n``);
    ``inf`` where the theory predicts no transition. The head's scores at ``s = 1`` play the
    role of ``<W y_i, y_j>`` and ``s`` that of ``beta``
    (docs/real-transformer.md#reading-the-theory-off-a-head)."""
    ln = np.log(n)
    return gamma_c_eff(s_self, s_cross, n) * ln, gamma_c_fluct(s_self, s_cross, sd_cross, n) * ln
