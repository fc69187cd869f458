"""Keys on the sphere S^{d-1}, ordered softmax weights and the attention output of many queries
(docs/paper-b.md).

Conventions
-----------
* Keys and queries are unit vectors; ``T_i = 1 - <q, x_i>`` is the distance to the query (D2Q).
* Every softmax subtracts the smallest ``T`` (equivalently the largest score) before
  exponentiating, so weights stay finite for any finite beta (tested at ``beta = 1e6``).
* Randomness only through an explicit ``numpy.random.Generator`` (see :mod:`attnscale.core.seeding`).

Two samplers of the D2Q of uniform keys
---------------------------------------
``sample_d2q_uniform(..., method="sphere")`` draws full ``d``-dimensional keys (normalised
Gaussians) and computes ``T = 1 - <e_1, x>``: the honest path. ``method="beta"`` uses the exact
law ``T / 2 ~ Beta((d-1)/2, (d-1)/2)`` (docs/paper-b.md) and never forms a key. Both are exact;
tests compare them with the exact ``F`` by a Kolmogorov-Smirnov distance.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attnscale.backend import uses_jax
from attnscale.core.validation import check_int, check_matrix, check_real, check_rng, check_vector
from attnscale.sphere import theory as st
from attnscale.sphere.quadrature import cap_probability_x1x2

__all__ = [
    "sample_uniform_sphere",
    "sample_rejection",
    "log_density_x1x2",
    "sample_x1x2",
    "sample_x1x2_cap",
    "fibonacci_sphere",
    "d2q",
    "sample_d2q_uniform",
    "weights_from_d2q",
    "ordered_weights",
    "ordered_weights_from_d2q",
    "top_weight_from_d2q",
    "attention_output",
    "tangential_displacement",
]

#: Default budget for one block of the queries x keys score matrix, in float64 entries (64 MiB).
DEFAULT_BLOCK_ENTRIES = 8 * 2**20

#: Log-density of rho ∝ exp(x1 x2) and its maximum on the sphere (at ±(1,1,0,...)/sqrt 2).
LOG_MAX_X1X2 = 0.5


def _rng(rng) -> np.random.Generator:
    check_rng(rng)
    return rng


def _unit_vector(name: str, q) -> np.ndarray:
    q = check_vector(name, q)
    nq = np.linalg.norm(q)
    if q.size < 2 or abs(nq - 1.0) > 1e-9:
        raise ValueError(f"{name} must be a unit vector of length >= 2, got norm {nq:g}")
    return q / nq


# --------------------------------------------------------------------------- samplers
def sample_uniform_sphere(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` i.i.d. uniform points on ``S^{d-1}`` (normalised standard Gaussians) [docs/paper-b.md].

    Parameters
    ----------
    n : int
        Number of points (>= 1).
    d : int
        Ambient dimension (>= 2).
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    numpy.ndarray
        ``(n, d)`` float64 array of unit rows.

    Notes
    -----
    The Gaussians are drawn coordinate-major (a ``(d, n)`` block: all first coordinates, then all
    second ones, ...) and normalised along the long axis, which is ~3x faster than the ``(n, d)``
    layout for small ``d``; :func:`sample_d2q_uniform` with ``method="sphere"`` uses the same
    draws, so its ``T`` are exactly ``1 - x_1`` of these keys.
    """
    Z = _unit_columns(n, d, rng)
    return np.ascontiguousarray(Z.T)


def _unit_columns(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``(d, n)`` block whose columns are i.i.d. uniform on ``S^{d-1}`` (see :func:`sample_uniform_sphere`)."""
    n = check_int("n", n, minimum=1)
    d = check_int("d", d, minimum=2)
    Z = _rng(rng).standard_normal((d, n))
    r = np.sqrt(np.einsum("ij,ij->j", Z, Z))
    while np.any(r == 0.0):  # probability 0; kept for exactness
        bad = r == 0.0
        Z[:, bad] = rng.standard_normal((d, int(bad.sum())))
        r = np.sqrt(np.einsum("ij,ij->j", Z, Z))
    Z /= r
    return Z


def sample_rejection(
    n: int,
    d: int,
    log_density: Callable[[np.ndarray], np.ndarray],
    log_max: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Exact sampler of a density on ``S^{d-1}`` known up to a constant: rejection from uniform.

    A uniform proposal ``x`` is accepted with probability ``exp(log_density(x) - log_max)``
    (docs/paper-b.md [derived] for ``rho ∝ exp(x1 x2)``: ``exp(x1 x2 - 1/2)``). Proposals come in
    batches sized from the running acceptance rate; accepted points keep their proposal order, so
    the output depends only on the generator's state.

    Parameters
    ----------
    n : int
        Number of points (>= 1).
    d : int
        Ambient dimension (>= 2).
    log_density : callable
        Maps an ``(m, d)`` array of unit rows to ``(m,)`` unnormalised log densities.
    log_max : float
        An upper bound of ``log_density`` on the sphere (exceeding it raises ``ValueError``).
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    numpy.ndarray
        ``(n, d)`` float64 array of unit rows distributed with density ``∝ exp(log_density)``.
    """
    n = check_int("n", n, minimum=1)
    d = check_int("d", d, minimum=2)
    log_max = check_real("log_max", log_max)
    _rng(rng)
    out, have, proposed, accepted = [], 0, 0, 0
    while have < n:
        rate = (accepted + 1) / (proposed + 2)
        m = int(min(max(1024, 1.1 * (n - have) / rate + 64), 2**20))
        X = sample_uniform_sphere(m, d, rng)
        ld = np.asarray(log_density(X), dtype=float) - log_max
        if np.any(ld > 1e-12):
            raise ValueError(f"log_density exceeds log_max by {ld.max():g}; log_max must bound it")
        keep = np.log(rng.random(m)) < ld
        out.append(X[keep])
        proposed += m
        accepted += int(keep.sum())
        have += int(keep.sum())
    return np.concatenate(out)[:n]


def log_density_x1x2(X: np.ndarray) -> np.ndarray:
    """Unnormalised log-density ``x1 x2`` of the configured example ``rho ∝ exp(x1 x2)`` [paper]."""
    return X[:, 0] * X[:, 1]


def sample_x1x2(n: int, rng: np.random.Generator, d: int = 3) -> np.ndarray:
    """``n`` keys from ``rho ∝ exp(x1 x2)`` on ``S^{d-1}`` (exact rejection from uniform) [docs/paper-b.md]."""
    return sample_rejection(n, d, log_density_x1x2, LOG_MAX_X1X2, rng)


def sample_x1x2_cap(
    n: int, q, t_c: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The keys with ``T <= t_c`` of an ``n``-sample from ``rho ∝ exp(x1 x2)`` on S^2 [derived].

    Exact in law: the number of keys in the cap is ``Binomial(n, p)`` with ``p = P(T <= t_c)``
    computed by quadrature (:func:`attnscale.sphere.quadrature.cap_probability_x1x2`), and given the
    number they are i.i.d. from ``rho`` restricted to the cap: uniform proposals on the cap (for
    d = 3, ``T`` is uniform on ``[0, t_c]``, Archimedes) accepted with probability
    ``exp(x1 x2 - 1/2)``. Used when ``e^{-beta t_c}`` makes keys outside the cap irrelevant.
    For ``t_c = 2`` (the whole sphere) this is :func:`sample_x1x2` with ``T = 1 - <q, x>``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``X`` (``(K, 3)`` unit rows) and their exact ``T = 1 - <q, x>`` (``(K,)``).
    """
    n = check_int("n", n, minimum=1)
    q = _unit_vector("q", q)
    if q.size != 3:
        raise ValueError(f"sample_x1x2_cap needs q on S^2 (length 3), got length {q.size}")
    t_c = check_real("t_c", t_c, low=0.0, high=2.0, low_open=True)
    _rng(rng)
    if t_c >= 2.0:
        X = sample_x1x2(n, rng, 3)
        return X, np.clip(1.0 - X @ q, 0.0, 2.0)
    k = int(rng.binomial(n, min(1.0, cap_probability_x1x2(q, t_c))))
    e1, e2 = st.tangent_frame(q)
    xs, ts, have, proposed = [], [], 0, 0
    while have < k:
        rate = (have + 1) / (proposed + 2)
        m = int(min(max(1024, 1.1 * (k - have) / rate + 64), 2**20))
        proposed += m
        T = t_c * rng.random(m)
        phi = 2 * np.pi * rng.random(m)
        u = rng.random(m)
        s = np.sqrt(T * (2.0 - T))
        c, sn = s * np.cos(phi), s * np.sin(phi)
        x1 = (1.0 - T) * q[0] + c * e1[0] + sn * e2[0]
        x2 = (1.0 - T) * q[1] + c * e1[1] + sn * e2[1]
        keep = np.flatnonzero(np.log(u) < x1 * x2 - LOG_MAX_X1X2)
        T, c, sn = T[keep], c[keep], sn[keep]
        X = np.empty((keep.size, 3))
        for j in range(3):  # column-wise: broadcasting over a length-3 inner axis is slow
            X[:, j] = (1.0 - T) * q[j] + c * e1[j] + sn * e2[j]
        xs.append(X)
        ts.append(T)
        have += keep.size
    if k == 0:
        return np.empty((0, 3)), np.empty(0)
    return np.concatenate(xs)[:k], np.concatenate(ts)[:k]


def fibonacci_sphere(m: int) -> np.ndarray:
    """``m`` nearly evenly spaced points on S^2 (golden-angle spiral), a deterministic query grid [choice]."""
    m = check_int("m", m, minimum=1)
    i = np.arange(m) + 0.5
    z = 1.0 - 2.0 * i / m
    r = np.sqrt(1.0 - z * z)
    phi = np.pi * (3.0 - np.sqrt(5.0)) * i
    return np.column_stack([r * np.cos(phi), r * np.sin(phi), z])


# --------------------------------------------------------------------------- distances to the query
def d2q(q, K) -> np.ndarray:
    """Distances to the query ``T_i = 1 - <q, x_i>``, clipped to ``[0, 2]`` (docs/paper-b.md)."""
    q = _unit_vector("q", q)
    K = check_matrix("K", K)
    if K.shape[1] != q.size:
        raise ValueError(f"K must have {q.size} columns (the length of q), got {K.shape[1]}")
    return np.clip(1.0 - K @ q, 0.0, 2.0)


def sample_d2q_uniform(
    size: int, n: int, d: int, rng: np.random.Generator, method: str = "sphere"
) -> np.ndarray:
    """D2Q of ``n`` uniform keys on ``S^{d-1}`` for ``size`` independent contexts, ``q = e_1``.

    Parameters
    ----------
    size : int
        Number of independent contexts (rows), >= 1.
    n : int
        Keys per context (columns), >= 1.
    d : int
        Ambient dimension (>= 2).
    rng : numpy.random.Generator
        Source of randomness.
    method : {"sphere", "beta"}
        ``"sphere"``: full keys (:func:`sample_uniform_sphere`), ``T = 1 - x_1`` (honest path).
        ``"beta"``: ``T = 2 B``, ``B ~ Beta((d-1)/2, (d-1)/2)`` (exact shortcut, docs/paper-b.md).

    Returns
    -------
    numpy.ndarray
        ``(size, n)`` array of ``T`` in ``[0, 2]``.
    """
    size = check_int("size", size, minimum=1)
    n = check_int("n", n, minimum=1)
    d = check_int("d", d, minimum=2)
    _rng(rng)
    if method == "sphere":
        x1 = _unit_columns(size * n, d, rng)[0]
        return np.clip(1.0 - x1, 0.0, 2.0).reshape(size, n)
    if method == "beta":
        a = (d - 1) / 2
        return 2.0 * rng.beta(a, a, size=(size, n))
    raise ValueError(f"method must be 'sphere' or 'beta', got {method!r}")


# --------------------------------------------------------------------------- ordered weights
def weights_from_d2q(T, beta: float) -> np.ndarray:
    """Softmax weights ``A_i ∝ exp(-beta T_i)`` along the last axis, with ``min T`` subtracted."""
    beta = check_real("beta", beta, low=0.0)
    T = np.asarray(T, dtype=float)
    E = np.exp(-beta * (T - T.min(axis=-1, keepdims=True)))
    return E / E.sum(axis=-1, keepdims=True)


def ordered_weights(q, K, beta: float, k: int | None = None, *, backend=None) -> np.ndarray:
    """The softmax weights of query ``q`` over keys ``K`` in descending order (docs/paper-b.md).

    ``A_i = exp(-beta (T_i - min T)) / sum_j exp(-beta (T_j - min T))`` with ``T = 1 - K q``:
    finite for any finite beta (the largest term is exactly 1).

    Parameters
    ----------
    q : array_like, shape (d,)
        Unit query.
    K : array_like, shape (n, d)
        Unit keys.
    beta : float
        Inverse temperature (>= 0).
    k : int, optional
        Return only the ``k`` largest weights (``np.partition`` then a sort of ``k`` values).
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    numpy.ndarray
        ``A_(1) >= A_(2) >= ...`` (length ``n`` or ``k``); the full vector sums to 1.
    """
    T = d2q(q, K)
    return ordered_weights_from_d2q(T, beta, k, backend=backend)


def ordered_weights_from_d2q(T, beta: float, k: int | None = None, *, backend=None) -> np.ndarray:
    """Descending softmax weights from D2Q values along the last axis (see :func:`ordered_weights`).

    ``backend``: ``"numpy"``, ``"jax"`` or ``None`` (default: :func:`attnscale.backend.default`,
    ``docs/gpu.md#choosing-the-backend``).
    """
    beta = check_real("beta", beta, low=0.0)
    T = np.asarray(T, dtype=float)
    if k is not None and k >= T.shape[-1]:
        k = None  # all n weights
    if k is not None:
        k = check_int("k", k, minimum=1)
    if uses_jax(backend):
        from attnscale.sphere import keys_jax

        return keys_jax.ordered_weights_from_d2q(T, beta, k)
    W = weights_from_d2q(T, beta)
    if k is None:
        return -np.sort(-W, axis=-1)
    top = -np.partition(-W, k - 1, axis=-1)[..., :k]
    return -np.sort(-top, axis=-1)


def top_weight_from_d2q(
    T, betas, max_entries: int = DEFAULT_BLOCK_ENTRIES, *, backend=None
) -> np.ndarray:
    """``A_(1) = 1 / sum_j exp(-beta (T_j - min T))`` for each row of ``T`` and each beta.

    Parameters
    ----------
    T : array_like, shape (trials, n)
        D2Q values, one context per row.
    betas : array_like, shape (b,)
        Inverse temperatures (>= 0).
    max_entries : int
        Rows are processed in blocks of at most this many entries.
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    numpy.ndarray
        ``(trials, b)`` top weights.
    """
    T = np.atleast_2d(np.asarray(T, dtype=float))
    betas = check_vector("betas", betas, low=0.0)
    D = T - T.min(axis=1, keepdims=True)
    if uses_jax(backend):
        from attnscale.sphere import keys_jax

        return keys_jax.top_weight_from_d2q(D, betas, max_entries)
    out = np.empty((T.shape[0], betas.size))
    block_rows = max(1, int(max_entries) // max(1, T.shape[1]))
    for s in range(0, T.shape[0], block_rows):
        blk = D[s : s + block_rows]
        for j, b in enumerate(betas):
            out[s : s + block_rows, j] = 1.0 / np.exp(-b * blk).sum(axis=1)
    return out


# --------------------------------------------------------------------------- attention output
def attention_output(
    Q, K, beta: float, block_entries: int = DEFAULT_BLOCK_ENTRIES, *, backend=None
) -> np.ndarray:
    """``ATT_n(q) = sum_i A_i(q) x_i`` (``V = I``) for every row ``q`` of ``Q`` (docs/paper-b.md).

    Queries are processed in blocks so that at most ``block_entries`` entries of the
    queries x keys score matrix exist at once. Each row's largest score is subtracted before
    exponentiating.

    Parameters
    ----------
    Q : array_like, shape (m, d)
        Unit queries.
    K : array_like, shape (n, d)
        Unit keys (one shared context).
    beta : float
        Inverse temperature (>= 0).
    block_entries : int
        Memory budget of one score block (>= n).
    backend : {"numpy", "jax"}, optional
        Kernel backend; ``None`` (default) is :func:`attnscale.backend.default`
        (``docs/gpu.md#choosing-the-backend``).

    Returns
    -------
    numpy.ndarray
        ``(m, d)`` outputs.
    """
    Q = check_matrix("Q", Q)
    K = check_matrix("K", K)
    if Q.shape[1] != K.shape[1]:
        raise ValueError(
            f"Q and K must have the same number of columns, got {Q.shape[1]}, {K.shape[1]}"
        )
    beta = check_real("beta", beta, low=0.0)
    block_entries = check_int("block_entries", block_entries, minimum=1)
    if uses_jax(backend):
        from attnscale.sphere import keys_jax

        return keys_jax.attention_output(Q, K, beta, block_entries)
    block_rows = max(1, block_entries // K.shape[0])
    out = np.empty_like(Q)
    for s in range(0, Q.shape[0], block_rows):
        S = Q[s : s + block_rows] @ K.T
        S -= S.max(axis=1, keepdims=True)
        E = np.exp(beta * S, out=S)
        out[s : s + block_rows] = (E @ K) / E.sum(axis=1, keepdims=True)
    return out


def tangential_displacement(
    Q, K, beta: float, block_entries: int = DEFAULT_BLOCK_ENTRIES
) -> np.ndarray:
    """Tangential part ``P_q Y_n(q) = ATT_n(q) - <ATT_n(q), q> q`` of the displacement (docs/paper-b.md).

    ``Y_n(q) = ATT_n(q) - q``; ``P_q = I - q q^T`` removes the normal component.
    """
    Q = check_matrix("Q", Q)
    att = attention_output(Q, K, beta, block_entries)
    return att - np.einsum("ij,ij->i", att, Q)[:, None] * Q
