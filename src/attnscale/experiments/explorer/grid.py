"""The explorer's theory grid: ``beta*(n, d, rho)`` of the finite-d theory on a few nodes, and
its interpolant (docs/explorer.md#the-theory-grid).

``attnscale.layer.finite_d.critical_beta`` costs a quadrature table per ``(d, rho)`` and a root
per ``n``, far too slow for a page that redraws as a slider moves. The pipeline evaluates it on
nodes and the page interpolates the smooth quantity

    g(n, d, rho) = ln( beta* (1 - rho) / ln(n - 1) )

which is 0 in Paper A's limit ``d -> infinity`` (every score tends to ``rho``, so
``E[A_ii] = 1/2`` at ``beta (1 - rho) = ln(n - 1)``), and is O(1/d) for large ``d``. It is a
tensor-product polynomial interpolant, evaluated in barycentric form
(:func:`barycentric_weights`, :func:`barycentric`):

* in ``u = 1/d`` over the d-nodes and the exact node ``u = 0`` (``g = 0``);
* in ``L = ln(n - 1)`` and in ``rho`` (for ``rho > 0``) over each d-node's own n- and rho-nodes
  (more at small ``d``, where ``g`` grows into Paper B's power-law regime and where the
  quadrature of the theory is least smooth in ``rho``). At ``rho = 0`` the theory uses the closed-form
  law of uniform scores and for ``rho > 0`` a tabulated law (docs/finite-d.md#exact-self-weight);
  the two differ by more than the quadrature error where ``beta*`` is small (``d <= 4``,
  ``n <= 10``), so ``rho = 0`` has its own slice and each d-node's first rho-node is evaluated at
  :data:`RHO_EPS`: the interpolant follows ``critical_beta`` (and ``attnscale critical``) on both
  sides.

Nodes are Chebyshev-Lobatto points of each variable rounded to the integers the theory accepts
(:func:`chebyshev_d_nodes`, :func:`chebyshev_n_nodes`); the barycentric weights are those of the
rounded nodes, so rounding costs accuracy, never correctness. ``docs/_static/explorer.js`` holds
the same formulas; tests/test_explorer.py checks the two agree.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key
from attnscale.core.validation import check_int, check_real
from attnscale.pipeline.io import with_job_provenance

__all__ = [
    "N_MAX",
    "D_MIN",
    "D_MAX",
    "RHO_EPS",
    "keep_freed_memory",
    "chebyshev_lobatto",
    "chebyshev_d_nodes",
    "chebyshev_n_nodes",
    "rho_nodes",
    "critical_beta_near",
    "theory_nodes",
    "heldout_points",
    "heldout_theory",
    "barycentric_weights",
    "barycentric",
    "interpolate_beta_star",
    "power_law_nodes",
    "power_law_exponent",
    "interpolate_power_law",
]

#: The theory's range (attnscale.layer.finite_d.check_args): 2 <= n <= 1e7, 3 <= d <= 4096.
N_MAX = 10**7
D_MIN, D_MAX = 3, 4096

#: Where the rho > 0 surface's first node is evaluated (the limit rho -> 0+ of the tabulated law).
RHO_EPS = 1e-9

#: Fixed held-out points at the edges of the range, ``(d, n, rho / rho_max)`` (checked besides the
#: random ones; none is a node of the default grid in all three coordinates).
EDGE_POINTS = (
    (3, 7, 0.97),
    (3, 9_500_000, 0.013),
    (4096, 9_000_000, 0.61),
    (1000, 5, 0.0),
    (5, 40, 1.0),
    (4000, 3, 0.5),
    (23, 123_457, 0.0),
)


#: glibc's mallopt parameters (malloc.h): allocations above the first are mapped fresh from the
#: kernel; freed heap above the second is returned to it.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory() -> bool:
    """Let glibc serve large temporaries (up to 32 MiB) from its heap and keep what is freed.

    The finite-d quadrature allocates and frees arrays of a few MB at every evaluation of the
    self-weight; mapped afresh each time, their pages cost about as much system time as the
    arithmetic costs user time, and kept in the heap almost none. Only the allocation policy of
    this process changes, never a number. Returns whether it applied (``False`` without
    glibc)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(
            libc.mallopt(M_MMAP_THRESHOLD, 32 << 20) and libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
        )
    except (OSError, AttributeError):
        return False


def chebyshev_lobatto(a: float, b: float, degree: int) -> np.ndarray:
    """The ``degree + 1`` Chebyshev-Lobatto points of ``[a, b]``, increasing."""
    k = np.arange(degree + 1)
    return a + (b - a) * (1.0 - np.cos(np.pi * k / degree)) / 2.0


def chebyshev_d_nodes(degree: int) -> list[int]:
    """The d-nodes: Chebyshev-Lobatto points of ``u = 1/d`` on ``[0, 1/3]`` rounded to integer
    ``d`` (``u = 0``, ``d = infinity``, is the exact node ``g = 0`` and is left out), distinct,
    increasing, at most :data:`D_MAX`."""
    degree = check_int("degree", degree, minimum=1)
    u = chebyshev_lobatto(0.0, 1.0 / D_MIN, degree)[1:]
    return sorted({min(D_MAX, int(round(1.0 / x))) for x in u})


def chebyshev_n_nodes(degree: int) -> list[int]:
    """The n-nodes: Chebyshev-Lobatto points of ``L = ln(n - 1)`` on ``[ln 2, ln(N_MAX - 1)]``
    rounded to integer ``n`` (from 3 to ``N_MAX``), distinct, increasing (``n = 2`` needs no node:
    ``beta* = 0`` there)."""
    degree = check_int("degree", degree, minimum=1)
    L = chebyshev_lobatto(math.log(2.0), math.log(N_MAX - 1.0), degree)
    return sorted({min(N_MAX, max(3, int(round(math.exp(x) + 1.0)))) for x in L})


def rho_nodes(degree: int, rho_max: float) -> list[float]:
    """The rho-nodes: Chebyshev-Lobatto points of ``[0, rho_max]`` (the first, ``rho = 0``, is
    evaluated at :data:`RHO_EPS`, see the module doc)."""
    degree = check_int("degree", degree, minimum=1)
    rho_max = check_real("rho_max", rho_max, low=0.0, low_open=True)
    if rho_max >= 1.0:
        raise ValueError(f"rho_max must lie in (0, 1), got {rho_max}")
    return [float(f"{x:.12g}") for x in chebyshev_lobatto(0.0, rho_max, degree)]


def critical_beta_near(n: int, d: int, rho: float, guess: float) -> float:
    """``attnscale.layer.finite_d.critical_beta`` found from a guess: the same root of
    ``self_weight(n, d, rho, beta) = 1/2`` to the same relative tolerance (``1e-6``, Brent's
    method), bracketed within 5 % of ``guess`` and widened until it holds the root.

    ``critical_beta`` starts from Paper A's or the first-order value, far below ``beta*`` where
    Paper B's power law holds (a factor ``10^5`` at ``d = 3``, ``n = 1e7``), and doubles its way
    up: about 27 evaluations of the self-weight per root there against 7 to 10 from a guess
    extrapolated from the previous n-node (:func:`theory_nodes`).
    """
    from attnscale.core.roots import LEVEL, increasing_root
    from attnscale.layer import finite_d

    def f(b):
        return finite_d.self_weight(n, d, rho, b) - LEVEL

    return increasing_root(f, guess / 1.05, guess * 1.05, rtol=1e-6)


def theory_nodes(*, d: int, rho_degree: int, rho_max: float, n_degree: int) -> pd.DataFrame:
    """Entry of rule ``explorer_theory_nodes``: ``beta*`` at one d-node, at every rho-node
    (:func:`rho_nodes` of ``rho_degree`` on ``[0, rho_max]``) plus the ``rho = 0`` slice, and at
    every n-node (:func:`chebyshev_n_nodes` of ``n_degree``): ``critical_beta`` at the first
    n-node, then :func:`critical_beta_near` from ``g`` extrapolated linearly in ``ln(n - 1)``.

    Returns one row per point: ``d``, ``rho`` (the node), ``rho_eval`` (where it was evaluated:
    :data:`RHO_EPS` for the surface's node at 0), ``slice`` (``"rho0"`` or ``"surface"``), ``n``,
    ``beta_star`` and ``g = ln(beta* (1 - rho_eval) / ln(n - 1))``.
    """
    from attnscale.layer import finite_d

    d = check_int("d", d, minimum=D_MIN, maximum=D_MAX)
    keep_freed_memory()
    rhos = rho_nodes(rho_degree, rho_max)
    ns = chebyshev_n_nodes(n_degree)
    records = []
    evals = [("rho0", 0.0, 0.0)] + [("surface", r, max(r, RHO_EPS)) for r in rhos]
    for kind, rho, rho_eval in evals:
        Ls, gs = [], []
        for n in ns:
            L = math.log(n - 1.0)
            if not gs:
                b = finite_d.critical_beta(n, d, rho_eval)
            else:
                slope = (gs[-1] - gs[-2]) / (Ls[-1] - Ls[-2]) if len(gs) > 1 else 0.0
                guess = math.exp(gs[-1] + slope * (L - Ls[-1])) * L / (1.0 - rho_eval)
                b = critical_beta_near(n, d, rho_eval, guess)
            Ls.append(L)
            gs.append(math.log(b * (1.0 - rho_eval) / L))
            records.append(
                {
                    "d": d,
                    "rho": rho,
                    "rho_eval": rho_eval,
                    "slice": kind,
                    "n": n,
                    "beta_star": b,
                    "g": gs[-1],
                }
            )
    return with_job_provenance(pd.DataFrame(records))


def heldout_points(count: int, rho_max: float, root_seed: int) -> list[tuple[int, int, float]]:
    """``count`` random points ``(d, n, rho)`` (``ln d``, ``ln n`` and ``rho`` uniform on the
    supported range, ``d`` and ``n`` rounded; the first fifth at ``rho = 0``), then the fixed
    edge points :data:`EDGE_POINTS`. Drawn from the job's own stream (docs/pipeline.md#reproducibility)."""
    rng = job_rng(root_seed, spawn_key("explorer/heldout", count))
    pts = []
    for k in range(count):
        d = int(round(math.exp(rng.uniform(math.log(D_MIN), math.log(D_MAX)))))
        n = int(round(math.exp(rng.uniform(math.log(3.0), math.log(N_MAX)))))
        rho = 0.0 if k < count // 5 else float(f"{rng.uniform(0.0, rho_max):.6f}")
        pts.append((d, n, rho))
    return pts + [(d, n, float(f"{f * rho_max:.6f}")) for d, n, f in EDGE_POINTS]


def heldout_theory(*, points: int, rho_max: float, root_seed: int) -> pd.DataFrame:
    """Entry of rule ``explorer_heldout``: exact ``beta*`` (``critical_beta``) at ``points``
    random held-out points and the edge points (:func:`heldout_points`; columns
    ``d, n, rho, beta_star``)."""
    from attnscale.layer import finite_d

    points = check_int("points", points, minimum=0)
    keep_freed_memory()
    records = [
        {"d": d, "n": n, "rho": rho, "beta_star": finite_d.critical_beta(n, d, rho)}
        for d, n, rho in heldout_points(points, rho_max, root_seed)
    ]
    return with_job_provenance(pd.DataFrame(records, columns=["d", "n", "rho", "beta_star"]))


# --------------------------------------------------------------------------- interpolation


def barycentric_weights(x) -> np.ndarray:
    """Barycentric weights ``w_j = 1 / prod_{k != j} (x_j - x_k)`` of distinct nodes ``x``,
    scaled to ``max |w| = 1`` (the scale cancels)."""
    x = np.asarray(x, dtype=float)
    diff = x[:, None] - x[None, :]
    np.fill_diagonal(diff, 1.0)
    logs = -np.log(np.abs(diff)).sum(axis=1)
    sign = np.prod(np.sign(diff), axis=1)
    return sign * np.exp(logs - logs.max())


def barycentric(x, w, f, t: float) -> float:
    """The polynomial through ``(x_j, f_j)`` at ``t`` (second barycentric form; exact at a node)."""
    x = np.asarray(x, dtype=float)
    hit = np.nonzero(x == t)[0]
    if hit.size:
        return float(np.asarray(f, dtype=float)[hit[0]])
    c = np.asarray(w) / (t - x)
    return float(c @ np.asarray(f, dtype=float) / c.sum())


def _node_value(node: dict, L: float, rho: float) -> float:
    """``g`` of one d-node (a dict of the grid's ``d_nodes``) at ``L = ln(n - 1)`` and ``rho``."""
    Lx = np.log(np.asarray(node["n"], dtype=float) - 1.0)
    if rho == 0.0:
        vals = np.asarray(node["g0"], dtype=float)
    else:
        rx = np.asarray(node["rho"], dtype=float)
        rw = barycentric_weights(rx)
        g = np.asarray(node["g"], dtype=float)  # (rho-nodes, n-nodes)
        vals = np.array([barycentric(rx, rw, g[:, k], rho) for k in range(g.shape[1])])
    return barycentric(Lx, barycentric_weights(Lx), vals, L)


def interpolate_beta_star(theory: dict, n: int, d: int, rho: float) -> float:
    """``beta*(n, d, rho)`` from the explorer's theory grid ``theory`` (the ``"theory"`` part of
    the page's data; docs/explorer.md#the-theory-grid). The Python twin of
    ``betaStar`` in docs/_static/explorer.js."""
    n = check_int("n", n, minimum=2, maximum=N_MAX)
    d = check_int("d", d, minimum=D_MIN, maximum=D_MAX)
    rho = check_real("rho", rho, low=0.0)
    if rho > theory["rho_max"]:
        raise ValueError(f"rho must lie in [0, {theory['rho_max']}] (the grid's range), got {rho}")
    if n == 2:
        return 0.0
    L = math.log(n - 1.0)
    u = [0.0] + [1.0 / node["d"] for node in theory["d_nodes"]]
    gs = [0.0] + [_node_value(node, L, rho) for node in theory["d_nodes"]]
    g = barycentric(u, barycentric_weights(u), gs, 1.0 / d)
    return math.exp(g) * L / (1.0 - rho)


# --------------------------------------------------------------------------- power law


def power_law_nodes() -> list[int]:
    """d-nodes of the power-law exponent: every ``d`` up to 32, then 60 log-spaced [choice]."""
    logs = np.rint(np.geomspace(32, D_MAX, 60)).astype(int)
    return sorted(set(range(D_MIN, 33)) | {int(v) for v in logs})


def power_law_exponent(ds) -> list[float]:
    """``p_d = ln beta_PL(n = 2, d) = 2 (ln K_d - ln Lambda*_d) / (d - 1)``, so that Paper B's
    power law of docs/finite-d.md#asymptotic-regimes is ``beta = exp(p_d + 2 ln(n - 1) / (d - 1))``
    (from ``attnscale.layer.finite_d.power_law_beta``)."""
    from attnscale.layer import finite_d

    return [math.log(float(finite_d.power_law_beta(2.0, int(d)))) for d in ds]


def interpolate_power_law(table: dict, n: int, d: int) -> float:
    """Paper B's power law at ``(n, d)`` from the page's ``power_law`` table: ``p_d`` by cubic
    Lagrange interpolation in ``ln d`` through the four nearest nodes (exact at a node); the
    twin of ``powerLaw`` in docs/_static/explorer.js."""
    ds = np.asarray(table["d"], dtype=float)
    p = np.asarray(table["p"], dtype=float)
    x, t = np.log(ds), math.log(d)
    i = int(np.clip(np.searchsorted(x, t) - 2, 0, x.size - 4))
    xs, fs = x[i : i + 4], p[i : i + 4]
    val = 0.0
    for j in range(4):
        lj = np.prod([(t - xs[k]) / (xs[j] - xs[k]) for k in range(4) if k != j])
        val += lj * fs[j]
    return math.exp(val + 2.0 * math.log(n - 1.0) / (d - 1.0))
