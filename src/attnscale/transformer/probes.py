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
    critical_level,
    crossing_x,
    effective_scores,
    gamma_c_eff,
    gamma_c_fluct,
    mean_cosine,
    score_spread,
    simplex_lambda,
    softmax_rows,
)

__all__ = [
    "DEFINITIONS",
    "text_rows",
    "band_masks",
    "split_outputs",
    "row_space",
    "head_curves",
    "layer_probes",
    "critical_multiplier",
    "lambda_eff_curve",
    "predicted_half_multipliers",
]

#: The three definitions of a head's critical multiplier (docs/real-transformer.md#three-definitions-of-s):
#: name -> (the curve's key, its ``s -> inf`` limit's key, divided by that limit?).
DEFINITIONS = {
    "paper_a": ("lambda", "lambda_inf", False),
    "normalised": ("lambda", "lambda_inf", True),
    "text_keys": ("lambda_text", "lambda_text_inf", False),
}


def text_rows(n: int, rows: int | None, rng) -> np.ndarray:
    """Sorted query rows among the text positions ``1`` to ``n - 2`` of a window: all of them, or
    ``rows`` drawn without replacement by ``rng``."""
    pos = np.arange(1, n - 1)
    if rows is None or rows >= pos.size:
        return pos
    return np.sort(rng.choice(pos, size=int(rows), replace=False))


def band_masks(n: int, row_idx, bands: int) -> np.ndarray:
    """``(bands, m)`` masks of the query rows ``row_idx`` by position band: the text positions ``1`` to ``n - 2``
    cut into ``bands`` equal parts, relative to ``n`` [choice]
    (docs/real-transformer.md#n-apart-from-position)."""
    edges = 1 + (n - 2) * np.arange(bands + 1) / bands
    row_idx = np.asarray(row_idx)
    return np.array(
        [(row_idx >= lo) & (row_idx < hi) for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    )


def _ratio(Yr, out, keep):
    """lambda of the outputs ``out`` on the rows where ``keep`` holds (``nan`` with fewer than
    two rows)."""
    if keep.sum() < 2:
        return np.full(out.shape[0], np.nan)
    return angle_ratio_outputs(Yr, out, keep)[0]


def row_space(Y):
    """The rows of ``Y`` (n, d) in an orthonormal basis of their span: ``R^T`` (n, r) from the
    thin QR factorisation ``Y^T = Q R``, ``r = min(n, d)``; ``Y`` itself when ``n >= d``.

    ``R^T = Y Q`` with orthonormal columns ``Q``, so every inner product, norm and mean of the
    rows and of any combination ``A Y`` is kept [derived]: the probes' outputs ``A(s) Y`` and
    their lambda are the same, while each GEMM costs ``r / d`` of the original
    (docs/real-transformer.md#the-probes).
    """
    n, d = Y.shape
    if n >= d:
        return Y
    return np.ascontiguousarray(np.linalg.qr(Y.T, mode="reduced")[1].T)


def split_outputs(Y, S, multipliers):
    """The outputs of the head's softmax at every multiplier, over all keys and over the text keys
    only, from one exponential pass over the text keys
    (docs/real-transformer.md#three-definitions-of-s).

    The full softmax is the text keys' softmax ``A^text`` weighted by the text block's share
    ``p_text`` of the mass, plus the two special keys (``[CLS]``, key 0, and ``[SEP]``, key
    ``n - 1``): ``A_ij = p_text A^text_ij`` for a text key ``j`` and ``p_0``, ``p_{n-1}`` for the
    special ones, where ``(p_text, p_0, p_{n-1})`` is the softmax of the block's log-mass
    ``ln sum_text e^{s S_ij}`` and ``s S_i0``, ``s S_i,n-1`` [derived]. So the outputs are
    ``p_text A^text Y_text + p_0 y_0 + p_{n-1} y_{n-1}`` with one GEMM, and ``A^text`` never
    underflows behind a sink.

    Parameters
    ----------
    Y : (n, d) array
        Normalised attention inputs.
    S : (m, n) array
        The head's scores at the trained scale for the query rows.
    multipliers : (K,) array
        Multipliers ``s`` of the scores (positive).

    Returns
    -------
    (out, out_text, weights)
        ``out`` and ``out_text`` (K, m, d): the outputs over all keys and over the text keys;
        ``weights`` a function ``rows -> (K, m)`` giving ``A_{r, rows[r]}(s)``, each row's weight
        on the key ``rows[r]``.
    """
    m, n = S.shape
    ms = np.asarray(multipliers, dtype=np.float64)
    K = ms.size
    St = (ms[:, None, None] * S[None, :, 1 : n - 1]).reshape(-1, n - 2)
    At, block = softmax_rows(St, log_mass=True)
    out_text = (At @ Y[1 : n - 1]).reshape(K, m, -1)
    At = At.reshape(K, m, n - 2)
    logs = [block, (ms[:, None] * S[None, :, 0]).ravel(), (ms[:, None] * S[None, :, n - 1]).ravel()]
    P = softmax_rows(np.stack(logs, axis=1)).T.reshape(3, K, m)
    out = P[0][..., None] * out_text + P[1][..., None] * Y[0] + P[2][..., None] * Y[n - 1]

    def weights(row_idx):
        row_idx = np.asarray(row_idx)
        inner = np.clip(row_idx - 1, 0, n - 3)
        w = P[0] * At[:, np.arange(m), inner]
        return np.where(row_idx == 0, P[1], np.where(row_idx == n - 1, P[2], w))

    return out, out_text, weights


def head_curves(Y, S, row_idx, multipliers, *, bands: int = 0, text: bool = True) -> dict:
    """Phase curve of one head on one window.

    Parameters
    ----------
    Y : (n, d) array
        Normalised attention inputs.
    S : (m, n) array
        The head's scores at the trained scale for the query rows ``row_idx``.
    row_idx : (m,) int array
        The query rows (positions in the window).
    multipliers : (K,) array
        Multipliers ``s`` of the scores.
    bands : int
        If positive, lambda also on the query rows of each position band (:func:`band_masks`).
    text : bool
        If false, the text-key curves (``lambda_text``, ``lambda_text_inf``) are left out.

    Returns
    -------
    dict
        ``lambda`` (K,), ``self_weight`` (K,): mean ``A_ii(s)`` over the rows;
        ``lambda_inf``: lambda of the argmax map (every row sends its query to its top key, the
        ``s -> inf`` limit); ``lambda_text`` (K,), ``lambda_text_inf``: the same with the
        weights on ``[CLS]`` (key 0) and ``[SEP]`` (key ``n - 1``) removed and the rest
        renormalised (docs/real-transformer.md#three-definitions-of-s; both from one
        exponential pass, :func:`split_outputs`); ``self_max``: fraction of rows whose own score
        is the row maximum; ``top_key_share``: fraction of rows whose top key is the window's
        most frequent top key; ``special_mass``: mean weight on ``[CLS]`` and ``[SEP]`` at
        ``s = 1``; with ``bands``: ``lambda_band`` (bands, K) and ``lambda_band_inf`` (bands,).
    """
    m, n = S.shape
    out, out_text, weights = split_outputs(Y, S, multipliers)
    Yr = Y[row_idx]
    every = np.ones(m, dtype=bool)
    top = S.argmax(axis=1)
    counts = np.bincount(top, minlength=n)
    A1 = softmax_rows(S)
    res = {
        "lambda": _ratio(Yr, out, every),
        "self_weight": weights(row_idx).mean(axis=1),
        "lambda_inf": float(_ratio(Yr, Y[top][None], every)[0]),
    }
    if text:
        top_text = 1 + S[:, 1 : n - 1].argmax(axis=1)
        res["lambda_text"] = _ratio(Yr, out_text, every)
        res["lambda_text_inf"] = float(_ratio(Yr, Y[top_text][None], every)[0])
    res["self_max"] = float(np.mean(top == row_idx))
    res["top_key_share"] = float(counts.max() / m)
    res["special_mass"] = float(np.mean(A1[:, 0] + A1[:, n - 1]))
    if bands > 0:
        masks = band_masks(n, row_idx, bands)
        res["lambda_band"] = np.array([_ratio(Yr, out, k) for k in masks])
        res["lambda_band_inf"] = np.array([_ratio(Yr, Y[top][None], k)[0] for k in masks])
    return res


def _descriptors(record, h, text) -> dict:
    """The descriptors the theory reads off head ``h`` at the trained scale."""
    dh = record.q.shape[2]
    Qm = record.q[h] / np.sqrt(dh)
    Km = record.k[h]
    s_self, s_cross = effective_scores(Qm, Km)
    sd_self, sd_cross = score_spread(Qm, Km)
    return {
        "s_self": s_self,
        "s_cross": s_cross,
        "sd_self": sd_self,
        "sd_cross": sd_cross,
        "rho_q": mean_cosine(record.q[h][text]),
        "rho_k": mean_cosine(record.k[h][text]),
    }


def layer_probes(
    record,
    row_idx,
    multipliers,
    *,
    descriptors: bool = True,
    bands: int = 0,
    fixed_rows=None,
    text_keys: bool = True,
) -> dict:
    """Every head of one layer on the query rows ``row_idx``: the curves of :func:`head_curves` and the
    descriptors the theory reads off the head at the trained scale
    (docs/real-transformer.md#reading-the-theory-off-a-head).

    ``record``: any object with ``inputs`` (n, d), the layer's attention inputs, and ``q``, ``k``
    (heads, n, d_head), the heads' queries and keys (such as
    :class:`attnscale.transformer.architectures.LayerRecord`). ``bands``: position bands of
    :func:`head_curves`; ``fixed_rows``: if given, lambda also on these query rows (all of them),
    as ``lambda_fixed`` and ``lambda_fixed_inf`` (docs/real-transformer.md#n-apart-from-position);
    ``text_keys``: the text-key curves of :func:`head_curves` (left out if false).

    Returns arrays over heads: every key of :func:`head_curves` (heads, ...); with
    ``descriptors``: ``s_self``, ``s_cross``, ``sd_self``, ``sd_cross``, ``rho_q``, ``rho_k``
    (heads,); and the layer's ``rho_hat`` (mean cosine of the normalised inputs over the text
    positions).
    """
    X = record.inputs
    n = X.shape[0]
    Y = X / np.linalg.norm(X, axis=1, keepdims=True)
    text = np.arange(1, n - 1)
    Yb = row_space(Y)
    H, _, dh = record.q.shape
    out: dict[str, list] = {}
    for h in range(H):
        Qm = record.q[h] / np.sqrt(dh)
        Km = record.k[h]
        res = head_curves(Yb, Qm[row_idx] @ Km.T, row_idx, multipliers, bands=bands, text=text_keys)
        if fixed_rows is not None:
            fx = head_curves(Yb, Qm[fixed_rows] @ Km.T, fixed_rows, multipliers, text=False)
            res["lambda_fixed"], res["lambda_fixed_inf"] = fx["lambda"], fx["lambda_inf"]
        if descriptors:
            res.update(_descriptors(record, h, text))
        for k, v in res.items():
            out.setdefault(k, []).append(v)
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}
    arrays["rho_hat"] = np.float64(mean_cosine(Y[text]))
    return arrays


def critical_multiplier(multipliers, lam, lam_inf, rho_hat, *, normalise: bool = True) -> float:
    """A head's critical multiplier ``s*`` [choice]: the first upward crossing, in ``ln s``, of
    ``lambda(s) / lambda(inf)`` (``normalise``) or of ``lambda(s)`` itself (Paper A's lambda)
    through the simplex's critical value (:func:`attnscale.layer.observables.critical_level`,
    ``1 / (1 + 3 rho_hat)``, Paper A's lambda at ``gamma_c``; docs/paper-a.md), by the project's
    one crossing function. ``nan`` if it does not cross on the grid (or, normalised,
    ``lambda(inf) <= 0``)."""
    lam = np.asarray(lam, dtype=np.float64)
    if normalise:
        if not np.isfinite(lam_inf) or lam_inf <= 0.0:
            return float("nan")
        lam = lam / lam_inf
    if not np.isfinite(lam).all():
        return float("nan")
    return crossing_x(multipliers, lam, critical_level("lambda", rho_hat), log_x=True)


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
