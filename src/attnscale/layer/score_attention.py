"""Attention layer kernels for a general query-key score matrix (issue 10, items 3 - 5).

Theory: ``docs/realistic-attention.md#learned-query-key-matrix``.

The layer keeps Paper A's pre-LN tokens ``y_i = x_i / ||x_i||``, values ``V = I`` and residual
``x_i' = sum_j A_ij y_j + alpha x_i`` (``docs/paper-a.md#the-model``), but the scores are
``beta <q_i, k_j>`` for query rows ``Qm`` and key rows ``Km``:

* learned ``Q^T K`` (:mod:`attnscale.layer.learned_scores`): ``q_i = W y_i``, ``k_j = y_j``;
* attention sink (:mod:`attnscale.layer.sink`): ``q_i = y_i``, the sink's key scaled by ``kappa``;
* Paper A itself and depth (:mod:`attnscale.layer.depth`): ``Qm = Km = Y``.

The kernels work in row blocks of the ``n x n`` score matrix (memory ``O(block x n)``) and batch
all ``beta`` of a group into one GEMM. The angle ratio lambda
(``docs/paper-a.md#the-angle-ratio-lambda``) is computed from *centred* Gram matrices,
``||y_i - y_j||^2 = c_i + c_j - 2 <z_i, z_j>`` with ``z_i = y_i - ybar``, ``c_i = ||z_i||^2``:
the error is set by the rounding of the unit rows (~1e-16 per entry) against the distance
itself, relative ``~1e-16 / ||y_i - y_j||``, instead of ``~1e-16 / ||y_i - y_j||^2`` from
``1 - <y_i, y_j>``; distances stay resolved down to ``||y_i - y_j||^2 ~ 1e-28``, which the depth
experiment needs. Pairs whose distance is at rounding level
(``||y_i - y_j||^2 <= COINCIDENT_TOL (c_i + c_j)``) are left out and counted.
"""

from __future__ import annotations

import numpy as np

from attnscale._moved import renamed
from attnscale.backend import uses_jax
from attnscale.core.validation import check_int, check_matrix, check_real, check_vector
from attnscale.layer.attention import normalise
from attnscale.layer.kernel_args import SCORE_OUTPUT_ENTRIES, check_block, check_qk, rows_mask
from attnscale.layer.near_pairs import COINCIDENT_TOL

__all__ = [
    "self_weight_grid",
    "layer_outputs",
    "mean_pair_distance",
    "angle_ratio_outputs",
    "layer_grid",
    "self_weight_critical_beta",
    "score_spread",
    "crossing",
]

#: Default budget, in float64 entries, for the outputs ``Y'`` of one group of betas (64 MiB).
DEFAULT_OUTPUT_ENTRIES = SCORE_OUTPUT_ENTRIES

#: Default budget for one row block of an ``n x n`` matrix, in float64 entries (32 MiB).
DEFAULT_BLOCK_ENTRIES = 4 * 2**20


def _block_rows(n: int, block_rows: int | None) -> int:
    """Rows per block: ``block_rows`` (validated) or the default for ``n`` keys."""
    if block_rows is None:
        return int(max(1, min(n, DEFAULT_BLOCK_ENTRIES // n)))
    return block_rows


def self_weight_grid(Qm, Km, betas, *, col: int | None = None, block_rows: int | None = None,
                     backend=None):  # fmt: skip
    """Self-weights ``A_ii`` (and the mass ``A_{i,col}`` on one column) for many ``beta``.

    ``A = row-softmax(beta Qm Km^T)``, computed per row block (memory ``O(block x n)``); the
    scores of a block are formed once and shared by all betas (one ``exp`` per beta).

    Parameters
    ----------
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray or None)
        ``(m, n)`` self-weights and, with ``col``, the ``(m, n)`` masses on column ``col``.
    """
    Qm, Km = check_qk(Qm, Km)
    betas = check_vector("betas", betas, low=0.0)
    n = Qm.shape[0]
    if col is not None:
        col = check_int("col", col, minimum=0, maximum=n - 1)
    block_rows = check_block("block_rows", block_rows)
    if uses_jax(backend):
        from attnscale.layer import score_attention_jax

        _, sw, cm = score_attention_jax.score_pass(Qm, Km, betas, col=col, block_rows=block_rows)
        return sw, cm
    br = _block_rows(n, block_rows)
    selfw = np.empty((betas.size, n))
    colm = np.empty((betas.size, n)) if col is not None else None
    for s in range(0, n, br):
        e = min(n, s + br)
        S = Qm[s:e] @ Km.T
        M = S - S.max(axis=1, keepdims=True)
        rr = np.arange(e - s)
        E = np.empty_like(M)
        for k, beta in enumerate(betas):
            np.multiply(M, beta, out=E)
            np.exp(E, out=E)
            z = E.sum(axis=1)
            selfw[k, s:e] = E[rr, rr + s] / z
            if colm is not None:
                colm[k, s:e] = E[:, col] / z
    return selfw, colm


def layer_outputs(X, Qm, Km, betas, alpha: float = 0.0, *, block_rows: int | None = None,
                  backend=None):  # fmt: skip
    """Outputs ``x_i' = sum_j A_ij y_j + alpha x_i`` of the layer with scores
    ``beta <q_i, k_j>`` for every ``beta``: array ``(m, n, d)``
    (``docs/paper-a.md#the-model`` for the layer,
    ``docs/realistic-attention.md#learned-query-key-matrix`` for the scores).

    ``backend``: ``"numpy"``, ``"jax"`` or ``None`` (default: :func:`attnscale.backend.default`,
    ``docs/gpu.md#choosing-the-backend``).
    """
    X = check_matrix("X", X, min_rows=2)
    Y, _ = normalise(X)
    n = X.shape[0]
    Qm, Km = check_qk(Qm, Km, n)
    betas = check_vector("betas", betas, low=0.0)
    alpha = check_real("alpha", alpha, low=0.0)
    block_rows = check_block("block_rows", block_rows)
    if uses_jax(backend):
        from attnscale.layer import score_attention_jax

        return score_attention_jax.score_pass(Qm, Km, betas, Y=Y, X=X, alpha=alpha,
                                              block_rows=block_rows)[0]  # fmt: skip
    out = np.empty((betas.size, n, X.shape[1]))
    _pass1(Y, X, Qm, Km, betas, alpha, _block_rows(n, block_rows), out)
    return out


def _pass1(Y, X, Qm, Km, betas, alpha, br, out, selfw=None, colm=None, col=None):
    """Outputs of every beta into ``out`` (m, n, d); optionally self-weights / column masses."""
    n = Y.shape[0]
    for s in range(0, n, br):
        e = min(n, s + br)
        S = Qm[s:e] @ Km.T
        M = S - S.max(axis=1, keepdims=True)
        E = np.empty_like(M)
        rr = np.arange(e - s)
        for k, beta in enumerate(betas):
            np.multiply(M, beta, out=E)
            np.exp(E, out=E)
            z = E.sum(axis=1)
            if selfw is not None:
                selfw[k, s:e] = E[rr, rr + s] / z
            if colm is not None:
                colm[k, s:e] = E[:, col] / z
            o = out[k, s:e]
            np.matmul(E, Y, out=o)
            o /= z[:, None]
            if alpha:
                o += alpha * X[s:e]


def mean_pair_distance(Y, keep=None) -> float:
    """``mean_{i != j} ||y_i - y_j||^2 / 2`` = ``1 - rho_hat`` over the rows ``keep``, from the
    centred rows in ``O(n d)``: ``sum_{i,j} ||z_i - z_j||^2 = 2 m sum_i ||z_i||^2`` for
    ``z_i = y_i - ybar``. Accurate when the rows have nearly collapsed (no ``1 - cos``)."""
    Y = check_matrix("Y", Y, min_rows=2)
    Y = Y[rows_mask(Y.shape[0], keep)]
    m = Y.shape[0]
    Z = Y - Y.mean(axis=0)
    return float(np.einsum("id,id->", Z, Z) / (m - 1))


def angle_ratio_outputs(Y, Yout, keep=None, *, block_rows: int | None = None, backend=None):
    """lambda = mean over pairs ``i < j`` (both in ``keep``) of
    ``||y_i' - y_j'||^2 / ||y_i - y_j||^2`` for a stack of outputs
    (``docs/paper-a.md#the-angle-ratio-lambda``).

    ``Y`` (``n x d``) and ``Yout`` (``m x n x d``) need not have unit rows: both are normalised
    here (they are the pre-LN directions of the layer's input and outputs). Distances come from
    centred Gram matrices (module docstring); the input weights ``W_ij = 1 / ||y_i - y_j||^2`` are
    formed per row block and applied to all outputs at once,
    ``sum_ij W_ij ||z_i' - z_j'||^2 = 2 sum_i c_i' (W 1)_i - 2 sum_i <z_i', (W Z')_i>``.

    Parameters
    ----------
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    (numpy.ndarray, int, int)
        ``(m,)`` lambda, the number of pairs used and the number of coincident pairs left out.
    """
    Y = check_matrix("Y", Y, min_rows=2)
    n, d = Y.shape
    Yout = np.asarray(Yout, dtype=np.float64)
    if Yout.ndim != 3 or Yout.shape[1:] != (n, d):
        raise ValueError(f"Yout must have shape (m, {n}, {d}), got {Yout.shape}")
    keep = rows_mask(n, keep)
    block_rows = check_block("block_rows", block_rows)
    idx = np.flatnonzero(keep)
    Yk = Y[idx] / np.linalg.norm(Y[idx], axis=1, keepdims=True)
    Zi = Yk - Yk.mean(axis=0)
    ci = np.einsum("id,id->i", Zi, Zi)
    Yo = Yout[:, idx, :]
    Yo = Yo / np.linalg.norm(Yo, axis=2, keepdims=True)
    Zo = Yo - Yo.mean(axis=1, keepdims=True)  # (m, k, d)
    co = np.einsum("mkd,mkd->mk", Zo, Zo)
    k = idx.size
    m = Yout.shape[0]
    Zflat = np.ascontiguousarray(Zo.transpose(1, 0, 2)).reshape(k, m * d)
    if uses_jax(backend):
        from attnscale.layer import score_attention_jax

        num, n_excl = score_attention_jax.centred_pair_sums(Zi, ci, Zo, co, Zflat, block_rows)
    else:
        num, n_excl = _centred_pair_sums(Zi, ci, Zo, co, Zflat, _block_rows(k, block_rows))
    n_pairs = (k * (k - 1) - n_excl) // 2
    lam = num / (2.0 * n_pairs) if n_pairs > 0 else np.full(m, np.nan)
    return lam, n_pairs, n_excl // 2


def _centred_pair_sums(Zi, ci, Zo, co, Zflat, br):
    """``sum_{i != j} W_ij ||z_i' - z_j'||^2`` per output stack and the number of ordered
    coincident pairs left out, in row blocks of ``br`` (see :func:`angle_ratio_outputs`)."""
    k, d = Zi.shape
    m = co.shape[0]
    num = np.zeros(m)
    n_excl = 0
    for s in range(0, k, br):
        e = min(k, s + br)
        D = ci[s:e, None] + ci[None, :] - 2.0 * (Zi[s:e] @ Zi.T)
        bad = D <= COINCIDENT_TOL * (ci[s:e, None] + ci[None, :])
        rr = np.arange(e - s)
        bad[rr, rr + s] = True
        n_excl += int(bad.sum()) - (e - s)
        D[bad] = np.inf
        np.divide(1.0, D, out=D)
        w = D.sum(axis=1)
        WZ = (D @ Zflat).reshape(e - s, m, d)
        num += 2.0 * (co[:, s:e] @ w) - 2.0 * np.einsum("imd,mid->m", WZ, Zo[:, s:e, :])
        # the column sums of the symmetric W equal its row sums: the c_j' term is counted by
        # the 2 c_i' (W 1)_i above
    return num, n_excl


def layer_grid(
    X,
    Qm,
    Km,
    betas,
    alpha: float = 0.0,
    *,
    keep=None,
    col: int | None = None,
    block_rows: int | None = None,
    output_entries: int | None = None,
    backend=None,
) -> dict:
    """One layer with scores ``beta <q_i, k_j>`` for many ``beta``: lambda over the pairs of
    ``keep``, the self-weights and (with ``col``) the mass on column ``col``
    (``docs/realistic-attention.md#learned-query-key-matrix``).

    Cost per beta: one ``exp`` of the score rows and two ``n^2 d`` GEMMs (``A Y`` and
    ``W Z'``); betas are processed in groups of ``output_entries // (n d)``.

    Parameters
    ----------
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    dict
        ``lambda`` (m,), ``self_weight`` (m, n), ``col_mass`` (m, n) or None, ``n_pairs``,
        ``n_excluded_pairs``.
    """
    X = check_matrix("X", X, min_rows=2)
    Y, _ = normalise(X)
    n, d = X.shape
    Qm, Km = check_qk(Qm, Km, n)
    betas = check_vector("betas", betas, low=0.0)
    alpha = check_real("alpha", alpha, low=0.0)
    keep = rows_mask(n, keep)
    if col is not None:
        col = check_int("col", col, minimum=0, maximum=n - 1)
    block_rows = check_block("block_rows", block_rows)
    output_entries = check_block("output_entries", output_entries)
    on_jax = uses_jax(backend)
    if on_jax:
        from attnscale.layer import score_attention_jax
    br = block_rows if on_jax else _block_rows(n, block_rows)  # JAX: None = from the budget
    budget = DEFAULT_OUTPUT_ENTRIES if output_entries is None else output_entries
    group = int(max(1, min(betas.size, budget // (n * d))))
    lam = np.empty(betas.size)
    selfw = np.empty((betas.size, n))
    colm = np.empty((betas.size, n)) if col is not None else None
    n_pairs = n_excl = 0
    for g in range(0, betas.size, group):
        sl = slice(g, g + group)
        bs = betas[sl]
        if on_jax:
            out, selfw[sl], cm = score_attention_jax.score_pass(Qm, Km, bs, Y=Y, X=X, alpha=alpha,
                                                                col=col, block_rows=br)  # fmt: skip
            if colm is not None:
                colm[sl] = cm
        else:
            out = np.empty((bs.size, n, d))
            cm = colm[sl] if colm is not None else None
            _pass1(Y, X, Qm, Km, bs, alpha, br, out, selfw[sl], cm, col)
        lam[sl], n_pairs, n_excl = angle_ratio_outputs(Y, out, keep, block_rows=br,
                                                       backend=backend)  # fmt: skip
    return {
        "lambda": lam,
        "self_weight": selfw,
        "col_mass": colm,
        "n_pairs": n_pairs,
        "n_excluded_pairs": n_excl,
    }


def crossing(xs, ys, target: float = 0.5) -> float:
    """First ``x`` where ``ys`` crosses ``target`` upwards, linear interpolation in ``log x``;
    ``nan`` if it never does (``xs`` increasing and positive)."""
    xs = np.asarray(xs, dtype=float)
    ys = np.asarray(ys, dtype=float)
    above = ys >= target
    if above[0]:
        return float(xs[0]) if ys[0] == target else float("nan")
    k = np.flatnonzero(above)
    if k.size == 0:
        return float("nan")
    j = int(k[0])
    lx0, lx1 = np.log(xs[j - 1]), np.log(xs[j])
    f = (target - ys[j - 1]) / (ys[j] - ys[j - 1])
    return float(np.exp(lx0 + f * (lx1 - lx0)))


def self_weight_critical_beta(
    Qm,
    Km,
    beta_lo: float,
    beta_hi: float,
    *,
    rows=None,
    target: float = 0.5,
    points: int = 16,
    xtol: float = 1e-10,
) -> float:
    """The ``beta`` at which the mean self-weight over ``rows`` first reaches ``target``
    (``docs/realistic-attention.md#learned-query-key-matrix``). (Named ``critical_beta`` before;
    that name still works, with a warning.)

    A log grid of ``points`` betas on ``[beta_lo, beta_hi]`` brackets the first upward crossing;
    Brent's method (in ``log beta``, tolerance ``xtol``) then solves ``mean A_ii = target``
    inside the bracket. The score matrix is formed once (``n x n``; for ``n <= 4096``, else
    row blocks are recomputed per evaluation). ``nan`` if the grid shows no crossing.
    """
    from scipy.optimize import brentq

    Qm, Km = check_qk(Qm, Km)
    beta_lo = check_real("beta_lo", beta_lo, low=0.0, low_open=True)
    beta_hi = check_real("beta_hi", beta_hi, low=beta_lo, low_open=True)
    points = check_int("points", points, minimum=3)
    target = check_real("target", target, low=0.0, high=1.0, low_open=True, high_open=True)
    n = Qm.shape[0]
    rmask = rows_mask(n, rows)
    if n <= 4096:
        S = Qm @ Km.T
        M = S - S.max(axis=1, keepdims=True)
        diag = np.diag(M).copy()
        E = np.empty_like(M)

        def mean_self(beta):
            np.multiply(M, beta, out=E)
            np.exp(E, out=E)
            return float(np.mean((np.exp(beta * diag) / E.sum(axis=1))[rmask]))
    else:

        def mean_self(beta):
            return float(self_weight_grid(Qm, Km, [beta])[0][0, rmask].mean())

    bs = np.geomspace(beta_lo, beta_hi, points)
    sw = np.array([mean_self(b) for b in bs])
    above = np.flatnonzero(sw >= target)
    if above.size == 0 or above[0] == 0:
        return crossing(bs, sw, target)
    j = int(above[0])
    lb = brentq(lambda x: mean_self(np.exp(x)) - target, np.log(bs[j - 1]), np.log(bs[j]),
                xtol=xtol, rtol=4 * np.finfo(float).eps)  # fmt: skip
    return float(np.exp(lb))


def score_spread(Qm, Km, rows=None, *, block_rows: int | None = None) -> tuple[float, float]:
    """Spread of the scores over the tokens ``rows``: the standard deviation of the self-scores
    ``<q_i, k_i>`` across ``i``, and the root mean (over rows ``i``) of the variance of the
    cross-scores ``<q_i, k_j>``, ``j != i``, within row ``i`` (the fluctuation that inflates
    the softmax denominator). Row blocks: memory ``O(block x n)``."""
    Qm, Km = check_qk(Qm, Km)
    n = Qm.shape[0]
    rmask = rows_mask(n, rows)
    Qr, Kr = Qm[rmask], Km[rmask]
    k = Qr.shape[0]
    diag = np.einsum("id,id->i", Qr, Kr)
    br = _block_rows(k, check_block("block_rows", block_rows))
    var_sum = 0.0
    for s in range(0, k, br):
        e = min(k, s + br)
        S = Qr[s:e] @ Kr.T
        rr = np.arange(e - s)
        S[rr, rr + s] = np.nan
        var_sum += float(np.nansum(np.nanvar(S, axis=1)))
    return float(diag.std()), float(np.sqrt(var_sum / k))


__getattr__ = renamed(__name__, {"critical_beta": "self_weight_critical_beta"})
