"""Keys with structure beyond i.i.d. uniform on the sphere: keys on a great sub-sphere, RoPE-rotated
keys, and an exact sampler of the keys of a uniform context that fall near the query
(docs/paper-b-beyond.md#keys-on-a-submanifold, docs/paper-b-beyond.md#rope-like-keys).

Conventions as in :mod:`attnscale.sphere.keys`: unit keys, ``T = 1 - <q, x>`` (the distance to the query,
D2Q), randomness only through an explicit ``numpy.random.Generator``.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from attnscale.core.validation import check_int, check_matrix, check_real, check_rng, check_vector

__all__ = [
    "check_subsphere",
    "subsphere_frame",
    "sample_subsphere",
    "d2q_cdf",
    "sample_d2q_cap",
    "check_rope",
    "rope_frequencies",
    "rope_rotate",
    "rope_query",
    "rope_repeated_d2q",
    "check_kappa",
    "sample_vmf_cosine",
    "rope_vmf_d2q",
    "rope_orbit_dimension",
]

#: Rotary base of most models (RoPE, "base 10000") [choice: the common default].
ROPE_BASE = 10000.0


def _rng(rng) -> np.random.Generator:
    check_rng(rng)
    return rng


def check_subsphere(d, k) -> tuple[int, int]:
    """Validate a sub-sphere ``S^{k-1}`` inside ``S^{d-1}``: ``2 <= k <= d`` (raises naming k or d)."""
    d = check_int("d", d, minimum=2)
    k = check_int("k", k, minimum=2)
    if k > d:
        raise ValueError(f"k (dimension of the sub-space) must satisfy 2 <= k <= d = {d}, got {k}")
    return d, k


# --------------------------------------------------------------------------- great sub-sphere
def subsphere_frame(q, k: int, rng: np.random.Generator) -> np.ndarray:
    """An orthonormal frame ``(k, d)`` whose first row is ``q`` and whose span is random.

    The span ``span(q, u_2, .., u_k)`` is a uniformly random ``k``-dimensional subspace containing
    ``q`` (Gram-Schmidt of ``q`` and ``k - 1`` Gaussian vectors, by a QR factorisation)
    (docs/paper-b-beyond.md#keys-on-a-submanifold).

    Parameters
    ----------
    q : array_like, shape (d,)
        Unit query.
    k : int
        Dimension of the subspace, ``2 <= k <= d``.
    rng : numpy.random.Generator
        Source of randomness.
    """
    q = check_vector("q", q)
    if abs(np.linalg.norm(q) - 1.0) > 1e-9:
        raise ValueError(f"q must be a unit vector, got norm {np.linalg.norm(q):g}")
    d, k = check_subsphere(q.size, k)
    G = np.column_stack([q, _rng(rng).standard_normal((d, k - 1))])
    Qm, R = np.linalg.qr(G)
    Qm = Qm * np.sign(np.diag(R))  # first column exactly +q (up to rounding)
    return np.ascontiguousarray(Qm.T)


def sample_subsphere(n: int, q, k: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` keys uniform on a great sub-sphere ``S^{k-1}`` of ``S^{d-1}`` that contains ``q``.

    ``x = sum_j z_j u_j / |z|`` with ``z ~ N(0, I_k)`` and ``(u_1 = q, u_2, .., u_k)`` the frame of
    :func:`subsphere_frame` (a random ``k``-subspace through ``q``). The D2Q law is exact
    [derived]: ``<q, x> = z_1 / |z|`` is the first coordinate of a uniform point on ``S^{k-1}``,
    so ``T / 2 ~ Beta((k-1)/2, (k-1)/2)`` whatever ``d`` (docs/paper-b-beyond.md#keys-on-a-submanifold).

    Returns
    -------
    numpy.ndarray
        ``(n, d)`` unit keys (rank ``k``).
    """
    n = check_int("n", n, minimum=1)
    frame = subsphere_frame(q, k, rng)
    Z = rng.standard_normal((n, frame.shape[0]))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    X = Z @ frame
    return X / np.linalg.norm(X, axis=1, keepdims=True)


# --------------------------------------------------------------------------- D2Q near the query
def d2q_cdf(t, k: int) -> np.ndarray:
    """``F_k(t) = P(T <= t)`` for keys uniform on ``S^{k-1}`` (a sub-sphere through q or the whole
    sphere): ``T/2 ~ Beta(a, a)``, ``a = (k-1)/2`` (docs/paper-b-beyond.md#keys-on-a-submanifold)."""
    k = check_int("k", k, minimum=2)
    a = (k - 1) / 2
    return special.betainc(a, a, np.clip(np.asarray(t, dtype=float) / 2.0, 0.0, 1.0))


def sample_d2q_cap(
    size: int, n: int, k: int, t_c: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The D2Q values ``T <= t_c`` of ``size`` contexts of ``n`` keys uniform on ``S^{k-1}``.

    Exact in law [derived] (docs/paper-b-beyond.md#critical-exponent-across-dimensions): per context
    the number of keys in the cap is ``Binomial(n, F_k(t_c))`` and, given the number, they are
    i.i.d. from ``F_k`` restricted to ``[0, t_c]``. Inside the cap the density is
    ``∝ t^{a-1} (1 - t/2)^{a-1}``: proposals ``t = t_c U^{1/a}`` (density ``∝ t^{a-1}``) are
    accepted with probability ``((1 - t/2) / m)^{a-1}`` where ``m`` is the value of ``1 - t/2``
    that maximises the ratio (1 for ``a >= 1``, ``1 - t_c/2`` for ``a < 1``). For caps holding
    more than a quarter of the keys (``F_k(t_c) > 1/4``), all ``n`` values are drawn from the Beta
    law directly and filtered. Keys outside the cap are not drawn: the caller bounds their
    weight (:func:`attnscale.sphere.critical_exponent.cap_radius`).

    Parameters
    ----------
    size : int
        Number of independent contexts (>= 1).
    n : int
        Keys per context (>= 1).
    k : int
        Intrinsic dimension: keys uniform on ``S^{k-1}`` (>= 2).
    t_c : float
        Cap radius in D2Q, in ``(0, 2]``.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    (T, owner, counts)
        ``T`` flat array of the D2Q values in the caps, ``owner`` the context index of each value
        (non-decreasing), ``counts`` the number of keys per context.
    """
    size = check_int("size", size, minimum=1)
    n = check_int("n", n, minimum=1)
    k = check_int("k", k, minimum=2)
    t_c = check_real("t_c", t_c, low=0.0, high=2.0, low_open=True)
    _rng(rng)
    a = (k - 1) / 2
    p = float(d2q_cdf(t_c, k))
    if p > 0.25 or t_c >= 2.0:
        block_rows = max(1, 2**22 // n)
        Ts, owners = [], []
        for s in range(0, size, block_rows):
            m = min(block_rows, size - s)
            T = 2.0 * rng.beta(a, a, size=(m, n))
            keep = T <= t_c
            Ts.append(T[keep])
            owners.append(np.nonzero(keep)[0] + s)
        owner = np.concatenate(owners)
        return np.concatenate(Ts), owner, np.bincount(owner, minlength=size)
    counts = rng.binomial(n, p, size=size)
    total = int(counts.sum())
    m_ref = 1.0 if a >= 1 else 1.0 - t_c / 2.0
    out, have, proposed = [], 0, 0
    while have < total:
        rate = (have + 1) / (proposed + 2)
        m = int(min(max(1024, 1.1 * (total - have) / rate + 64), 2**22))
        proposed += m
        t = t_c * rng.random(m) ** (1.0 / a)
        keep = rng.random(m) < ((1.0 - t / 2.0) / m_ref) ** (a - 1.0)
        out.append(t[keep])
        have += int(keep.sum())
    T = np.concatenate(out)[:total] if out else np.empty(0)
    return T, np.repeat(np.arange(size), counts), counts


# --------------------------------------------------------------------------- RoPE
def check_rope(d, base) -> tuple[int, float]:
    """Validate RoPE parameters: ``d`` even and >= 2, ``base`` finite and > 1 (raises naming them)."""
    d = check_int("d", d, minimum=2)
    if d % 2:
        raise ValueError(f"d must be even for RoPE (planes of 2 coordinates), got {d}")
    base = check_real("base", base, low=1.0, low_open=True)
    return d, base


def rope_frequencies(d: int, base: float = ROPE_BASE) -> np.ndarray:
    """RoPE angular frequencies ``theta_l = base^{-2l/d}``, ``l = 0, 1, ..., d/2 - 1`` [paper-b convention].

    Plane ``l`` holds coordinates ``(2l, 2l+1)`` and is rotated by ``m theta_l`` at relative
    position ``m`` (docs/paper-b-beyond.md#rope-like-keys).
    """
    d, base = check_rope(d, base)
    return base ** (-2.0 * np.arange(d // 2) / d)


def rope_rotate(X, positions, base: float = ROPE_BASE) -> np.ndarray:
    """``R_m x`` for each row ``x`` of ``X`` and its position ``m`` (block-diagonal planar rotations).

    ``(R_m x)_{2l} = cos(m theta_l) x_{2l} - sin(m theta_l) x_{2l+1}`` and
    ``(R_m x)_{2l+1} = sin(m theta_l) x_{2l} + cos(m theta_l) x_{2l+1}``
    (docs/paper-b-beyond.md#rope-like-keys).

    Parameters
    ----------
    X : array_like, shape (n, d)
        Vectors (``d`` even).
    positions : array_like, shape (n,)
        Relative positions ``m`` (any real numbers; integers in practice).
    base : float
        RoPE base (> 1).
    """
    X = check_matrix("X", X)
    theta = rope_frequencies(X.shape[1], base)
    m = check_vector("positions", positions)
    if m.size != X.shape[0]:
        raise ValueError(f"positions must have one entry per row of X ({X.shape[0]}), got {m.size}")
    ang = m[:, None] * theta[None, :]
    c, s = np.cos(ang), np.sin(ang)
    out = np.empty_like(X)
    out[:, 0::2] = c * X[:, 0::2] - s * X[:, 1::2]
    out[:, 1::2] = s * X[:, 0::2] + c * X[:, 1::2]
    return out


def rope_query(d: int) -> np.ndarray:
    """The fixed query of the RoPE experiment: ``q = (1, 0, 1, 0, ..) / sqrt(d/2)`` [choice].

    Equal weight in every frequency plane (a query in one plane would only see one frequency), and
    the first axis of each plane, so that reflecting every plane maps ``R_{-m}`` to ``R_m`` and
    fixes ``q``: positions ``-m`` and ``m`` give the same law (docs/paper-b-beyond.md#rope-like-keys).
    """
    d, _ = check_rope(d, ROPE_BASE)
    q = np.zeros(d)
    q[0::2] = 1.0 / np.sqrt(d / 2)
    return q


def rope_repeated_d2q(content, n: int, base: float = ROPE_BASE, block: int = 8192) -> np.ndarray:
    """D2Q ``T_m = 1 - <q, R_m x>`` of one content key ``x`` repeated at positions ``m = 0, 1, ..., n - 1``.

    One row per content key (context). With ``q`` from :func:`rope_query`,
    ``<q, R_m x> = sqrt(2/d) sum_l [cos(m theta_l) x_{2l} - sin(m theta_l) x_{2l+1}]``: a GEMM of the
    shared ``(n, d/2)`` cosine and sine tables with the contents, in blocks of positions
    (docs/paper-b-beyond.md#rope-like-keys).

    Parameters
    ----------
    content : array_like, shape (size, d)
        Unit content keys, one per context.
    n : int
        Number of positions (keys per context).
    base : float
        RoPE base (> 1).
    block : int
        Positions per block of the cosine/sine tables.

    Returns
    -------
    numpy.ndarray
        ``(size, n)`` D2Q values in ``[0, 2]``.
    """
    C = check_matrix("content", content)
    d, base = check_rope(C.shape[1], base)
    n = check_int("n", n, minimum=1)
    block = check_int("block", block, minimum=1)
    theta = rope_frequencies(d, base)
    r = 1.0 / np.sqrt(d / 2)
    ce, co = C[:, 0::2].T * r, C[:, 1::2].T * r
    out = np.empty((C.shape[0], n))
    for s in range(0, n, block):
        ang = np.arange(s, min(n, s + block), dtype=float)[:, None] * theta[None, :]
        out[:, s : s + ang.shape[0]] = (np.cos(ang) @ ce - np.sin(ang) @ co).T
    return np.clip(1.0 - out, 0.0, 2.0)


def check_kappa(kappa) -> float:
    """Validate a von Mises-Fisher concentration: ``kappa >= 0`` or ``inf`` (raises naming kappa)."""
    if isinstance(kappa, bool) or not isinstance(kappa, (int, float, np.integer, np.floating)):
        raise TypeError(f"kappa must be a real number >= 0 or inf, got {kappa!r}")
    kappa = float(kappa)
    if np.isnan(kappa) or kappa < 0:
        raise ValueError(f"kappa must lie in [0, inf], got {kappa:g}")
    return kappa


def sample_vmf_cosine(size, d: int, kappa: float, rng: np.random.Generator) -> np.ndarray:
    """``w = <mu, x>`` for ``x ~ vMF(mu, kappa)`` on ``S^{d-1}``: density ``∝ e^{kappa w} (1 - w^2)^{(d-3)/2}``.

    Wood's (1994) exact rejection sampler [derived, standard]: with
    ``b = (sqrt(4 kappa^2 + (d-1)^2) - 2 kappa) / (d-1)``, ``x0 = (1-b)/(1+b)``,
    ``c = kappa x0 + (d-1) log(1 - x0^2)``, propose ``z ~ Beta((d-1)/2, (d-1)/2)``,
    ``w = (1 - (1+b) z) / (1 - (1-b) z)`` and accept if
    ``kappa w + (d-1) log(1 - x0 w) - c >= log U``. ``kappa = 0`` gives the first coordinate of a
    uniform point (docs/paper-b-beyond.md#rope-like-keys).
    """
    d = check_int("d", d, minimum=3)
    kappa = check_kappa(kappa)
    if not np.isfinite(kappa):
        raise ValueError("kappa must be finite here (kappa = inf is a point mass at w = 1)")
    _rng(rng)
    shape = (size,) if np.isscalar(size) else tuple(size)
    total = int(np.prod(shape))
    a = (d - 1) / 2
    if kappa == 0.0:
        return (2.0 * rng.beta(a, a, size=total) - 1.0).reshape(shape)
    b = (np.sqrt(4 * kappa**2 + (d - 1) ** 2) - 2 * kappa) / (d - 1)
    x0 = (1 - b) / (1 + b)
    c = kappa * x0 + (d - 1) * np.log(1 - x0**2)
    out, have, proposed = [], 0, 0
    while have < total:
        rate = (have + 1) / (proposed + 2)
        m = int(min(max(1024, 1.1 * (total - have) / rate + 64), 2**22))
        proposed += m
        z = rng.beta(a, a, size=m)
        w = (1 - (1 + b) * z) / (1 - (1 - b) * z)
        keep = kappa * w + (d - 1) * np.log(1 - x0 * w) - c >= np.log(rng.random(m))
        out.append(w[keep])
        have += int(keep.sum())
    return np.concatenate(out)[:total].reshape(shape)


def rope_vmf_d2q(
    mu, kappa: float, n: int, rng: np.random.Generator, base: float = ROPE_BASE
) -> np.ndarray:
    """D2Q of RoPE-rotated content keys ``x_m ~ vMF(mu, kappa)``, i.i.d. over positions ``m = 0..n-1``.

    Score ``<q, R_m x_m> = <R_{-m} q, x_m>``. Write ``x_m = w mu + sqrt(1 - w^2) v`` with
    ``w = <mu, x_m>`` (:func:`sample_vmf_cosine`) and ``v`` uniform on the unit sphere of
    ``mu^perp``, independent of ``w``. With ``c_m = <q, R_m mu>`` (:func:`rope_repeated_d2q`) and
    ``e`` the unit vector of the projection of ``R_{-m} q`` on ``mu^perp`` (norm ``sqrt(1 - c_m^2)``),
    ``<v, e> = u`` is the first coordinate of a uniform point on ``S^{d-2}``
    (``(u + 1)/2 ~ Beta((d-2)/2, (d-2)/2)``), so [derived, exact in law]

        ``<q, R_m x_m> = w c_m + sqrt(1 - w^2) sqrt(1 - c_m^2) u``.

    ``kappa = 0`` gives uniform keys (RoPE preserves the uniform law); ``kappa = inf`` is the
    repeated content key ``mu`` (docs/paper-b-beyond.md#rope-like-keys).

    Parameters
    ----------
    mu : array_like, shape (size, d)
        Unit mean directions, one per context (``d`` even, >= 4).
    kappa : float
        Concentration, ``0 <= kappa <= inf``.
    n : int
        Positions per context.
    rng : numpy.random.Generator
        Source of randomness (unused for ``kappa = inf``).
    base : float
        RoPE base (> 1).

    Returns
    -------
    numpy.ndarray
        ``(size, n)`` D2Q values in ``[0, 2]``.
    """
    kappa = check_kappa(kappa)
    M = check_matrix("mu", mu)
    d, base = check_rope(M.shape[1], base)
    if d < 4:
        raise ValueError(f"d must be >= 4 for vMF content keys, got {d}")
    T = rope_repeated_d2q(M, n, base)
    if not np.isfinite(kappa):
        return T
    c = 1.0 - T
    w = sample_vmf_cosine(T.shape, d, kappa, rng)
    a = (d - 2) / 2
    u = 2.0 * rng.beta(a, a, size=T.shape) - 1.0
    s = w * c + np.sqrt(np.clip((1 - w * w) * (1 - c * c), 0.0, None)) * u
    return np.clip(1.0 - s, 0.0, 2.0)


def rope_orbit_dimension(d: int, base: float) -> int | None:
    """Dimension ``r`` of the closure of one key's RoPE orbit ``{R_m x : m = 0, 1, ..}`` [derived].

    The orbit's angles ``m theta_l`` (mod 2 pi) with ``theta_l = x^l``, ``x = base^{-2/d}``, fill
    a torus of dimension ``r = dim_Q span(theta_0, .., theta_{d/2-1})`` (Kronecker; ``pi`` is
    transcendental). For an integer base ``c^g`` with ``c`` square-free and ``g`` the gcd of its
    prime exponents, ``x = c^{-p/q}`` with ``p/q = 2g/d`` in lowest terms has degree ``q`` over Q
    (``c^{1/q}`` generates the same field and ``t^q - c`` is Eisenstein), so
    ``r = min(d/2, q)``: base 10000 gives ``r = 1, 2, 4, 8`` for ``d = 8, 16, 32, 64``
    (docs/paper-b-beyond.md#rope-like-keys). Returns ``None`` for other bases (not derived here).
    """
    d, base = check_rope(d, base)
    if base != round(base) or base > 2**53:
        return None
    b, exps, p = int(round(base)), [], 2
    while p * p <= b:
        e = 0
        while b % p == 0:
            b //= p
            e += 1
        if e:
            exps.append(e)
        p += 1
    if b > 1:
        exps.append(1)
    g = int(np.gcd.reduce(exps))
    if any(e != g for e in exps):
        return None  # c = base^{1/g} is not square-free
    q = d // int(np.gcd(2 * g, d))
    return int(min(d // 2, q))
