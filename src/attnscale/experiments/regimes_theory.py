"""The predictions of the regimes figure (docs/regimes.md): every prediction on a line grid and at
the simulated points (:func:`theory_table`), the practical reading in theory
(:func:`read_off_theory`), the REM's orders at a few ``n`` (:func:`rem_orders`), and the entry of
the theory rule (:func:`theory`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnscale.core.validation import check_int, check_real, check_vector
from attnscale.experiments.regimes_common import n_list, ties_k, ties_series
from attnscale.layer import finite_d
from attnscale.pipeline.io import with_job_provenance
from attnscale.regimes.common import check_level
from attnscale.regimes.gap import finite_d_critical_beta, gap_critical_beta, log_n_breakdown
from attnscale.regimes.rem import (
    pd_critical_alpha,
    pd_top_weight_mean,
    rem_critical_beta,
    rem_freezing_beta,
    rem_top_weight_mean,
)
from attnscale.regimes.ties import ties_critical_beta, ties_for_shift, ties_shift
from attnscale.regimes.ties_exact import ties_exact_critical_beta

__all__ = [
    "FIRST_ORDER_END",
    "first_order_at",
    "theory_table",
    "rem_orders",
    "read_off_theory",
    "theory",
]


def _theory_rows(regime, series, kind, role, ns, betas, **cols) -> list[dict]:
    return [
        {
            "regime": regime,
            "series": series,
            "kind": kind,
            "role": role,
            "n": float(nv),
            "beta": float(b),
            "gamma": float(b) / math.log(nv),
            **{k: (v[i] if isinstance(v, np.ndarray) else v) for k, v in cols.items()},
        }
        for i, (nv, b) in enumerate(zip(ns, betas, strict=True))
    ]


#: [derived] Points of the first-order line just before its breakdown, as distances in
#: ``ln(n - 1)`` below it (the root has a square-root end there), and the end itself.
FIRST_ORDER_END = (0.3, 0.1, 0.03, 0.01, 0.003, 0.0)


def _ties_rows(role, ns, na, kappa, noise, d, rho, level, name) -> list[dict]:
    """Prediction (exact finite-d), first order, leading order and asymptote of one tie series."""
    delta = 1.0 - rho
    s2 = finite_d.first_order_variance(d, rho)
    k = na**kappa if role == "line" else np.array([ties_k(v, kappa) for v in ns], float)
    k = np.clip(k, 1.0, na - 1.0)
    cols = {
        "d": d,
        "rho": rho,
        "s": np.nan,
        "k": k,
        "kappa": kappa,
        "copy_noise": noise,
        "ln_n_breakdown": log_n_breakdown(d, rho),
    }
    exact = [
        ties_exact_critical_beta(int(nv), float(kv), d, rho, copy_noise=noise, level=level)
        for nv, kv in zip(ns, k, strict=True)
    ]
    first = ties_critical_beta(na, k, delta, s2=s2, copy_noise=noise, d=d, level=level)
    gap_c = 1.0 - 1.0 / math.sqrt(1.0 + noise * noise)
    lead = ties_critical_beta(na, k, delta, copy_gap=gap_c, level=level)
    g_asym = (1.0 - kappa) / (delta - gap_c) if gap_c < kappa * delta else 1.0 / delta
    return (
        _theory_rows("ties", name, "prediction", role, ns, exact, **cols)
        + _theory_rows("ties", name, "first_order", role, ns, first, **cols)
        + _theory_rows("ties", name, "leading", role, ns, lead, **cols)
        + _theory_rows("ties", name, "asymptote", role, ns, g_asym * np.log(na), **cols)
    )


def _query_rows(regime, name, role, ns, na, d, rho, level, first_order_end=False) -> list[dict]:
    """Prediction (exact finite-d), first order, leading order (``ln(n - 1) / (1 - rho)``) and, at
    ``rho = 0``, Paper B's power law of the query alone. With ``first_order_end`` the first-order
    line also gets :data:`FIRST_ORDER_END` points up to its breakdown ``ln(n - 1) = L_b``, where
    its root is ``2 L_b / (1 - rho)``."""
    ln_b = log_n_breakdown(d, rho)
    cols = {
        "d": d,
        "rho": rho,
        "s": np.nan,
        "k": 1.0,
        "kappa": np.nan,
        "copy_noise": 0.0,
        "ln_n_breakdown": ln_b,
    }
    fo_n = [float(v) for v in ns]
    fo = [finite_d.first_order_critical_beta(int(v), d, rho) for v in ns]
    if first_order_end and role == "line":
        ends = [(1.0 + math.exp(ln_b - x), ln_b - x) for x in FIRST_ORDER_END]
        ends = [(v, L) for v, L in ends if ns[0] < v < ns[-1]]
        fo_n += [v for v, _ in ends]
        fo += [first_order_at(L, d, rho) for _, L in ends]
        order = np.argsort(fo_n, kind="stable")
        fo_n, fo = [fo_n[i] for i in order], [fo[i] for i in order]
    records = _theory_rows(
        regime, name, "prediction", role, ns, finite_d_critical_beta(na, d, rho), **cols
    )
    records += _theory_rows(regime, name, "first_order", role, fo_n, fo, **cols)
    records += _theory_rows(
        regime, name, "leading", role, ns, gap_critical_beta(na, rho, level=level), **cols
    )
    if rho == 0.0 and regime == "finite_d":
        records += _theory_rows(
            regime, name, "power_law", role, ns, finite_d.power_law_beta(na, d), **cols
        )
    return records


def first_order_at(L: float, d: int, rho: float) -> float:
    """The first-order root ``2 L / ((1 - rho) + sqrt((1 - rho)^2 - 2 s^2 L))`` at
    ``L = ln(n - 1)`` (docs/finite-d.md#first-order-approximation), for ``L`` up to the breakdown
    :func:`attnscale.regimes.gap.log_n_breakdown`, where it is ``2 L / (1 - rho)`` (a negative
    discriminant of rounding size there counts as 0); ``nan`` beyond."""
    ln_b = log_n_breakdown(d, rho)
    if L > ln_b:
        return math.nan
    disc = max(0.0, (1.0 - rho) ** 2 - 2.0 * finite_d.first_order_variance(d, rho) * L)
    return 2.0 * L / ((1.0 - rho) + math.sqrt(disc))


def theory_table(
    *,
    n,
    theory_n,
    gap_d: int,
    gap_rho: float,
    ties,
    rem_s: float,
    fd_d,
    fd_rho: float,
    level: float,
    ties_d=(),
) -> pd.DataFrame:
    """Every prediction of the figure (docs/regimes.md), on the line grid ``theory_n``
    (``role = "line"``; near-tie groups of real size ``k = n^kappa``) and at the simulated ``n``
    (``role = "point"``; the integer ``k`` of
    :func:`attnscale.experiments.regimes_common.ties_k`).

    Kinds per regime: ``gap`` -- ``prediction`` (exact finite-d theory at ``gap_d``,
    :func:`attnscale.layer.finite_d.critical_beta`), ``first_order``, ``leading``
    (``ln(n - 1) / (1 - rho)``, Paper A); ``ties`` -- ``prediction`` (exact finite-d theory of
    ``k`` copies, :func:`attnscale.regimes.ties_exact.ties_exact_critical_beta`), ``first_order``
    (first-order group formula with the copies' factor,
    :func:`attnscale.regimes.ties.ties_critical_beta`), ``leading`` (``s2 = 0``, copies at their
    large-d cosine ``1/sqrt(1 + noise^2)``), ``asymptote`` (``gamma = (1 - kappa) / (Delta -
    delta)`` if ``delta < kappa Delta``, else ``gamma_c``); ``rem`` -- ``prediction`` (exact
    quadrature), ``penultimate``, ``leading``, ``freezing``; ``finite_d`` -- ``prediction``
    (exact), ``first_order`` (on the lines continued to its breakdown, :data:`FIRST_ORDER_END`),
    ``leading`` (the ``log n`` law ``ln(n - 1) / (1 - rho)``) and, at ``rho = 0``,
    ``power_law`` (:func:`attnscale.layer.finite_d.power_law_beta`). For every ``d`` in
    ``ties_d`` the query alone (series ``"gap d=<d>"``) and the tie series (names ending in
    ``" d=<d>"``) again at that ``d`` and ``gap_rho``.

    Returns
    -------
    pandas.DataFrame
        Columns ``regime, series, kind, role, n, beta, gamma, d, rho, s, k, kappa, copy_noise,
        ln_n_breakdown``.
    """
    pts = n_list(n)
    line = sorted({int(round(v)) for v in check_vector("theory_n", theory_n, low=3.0)})
    gap_d = check_int("gap_d", gap_d, minimum=3, maximum=4096)
    gap_rho = check_real("gap_rho", gap_rho, low=0.0, high=1.0, high_open=True)
    ties = ties_series(ties)
    rem_s = check_real("rem_s", rem_s, low=0.0, low_open=True)
    fds = [check_int("fd_d", v, minimum=3, maximum=4096) for v in np.atleast_1d(fd_d).tolist()]
    tds = [check_int("ties_d", v, minimum=3, maximum=4096) for v in np.atleast_1d(ties_d).tolist()]
    fd_rho = check_real("fd_rho", fd_rho, low=0.0, high=1.0, high_open=True)
    level = check_level(level)
    records: list[dict] = []
    for role, ns in (("line", line), ("point", pts)):
        na = np.array(ns, dtype=float)
        for d, tag in [(gap_d, "")] + [(v, f" d={v}") for v in tds]:
            records += _query_rows("gap", "gap" + tag, role, ns, na, d, gap_rho, level)
            for kappa, noise in ties:
                name = f"ties kappa={kappa:g}" + (f" noise={noise:g}" if noise > 0 else "") + tag
                records += _ties_rows(role, ns, na, kappa, noise, d, gap_rho, level, name)
        rcols = {
            "d": np.nan,
            "rho": np.nan,
            "s": rem_s,
            "k": 1.0,
            "kappa": np.nan,
            "copy_noise": 0.0,
            "ln_n_breakdown": np.nan,
        }
        for kind, method in (
            ("prediction", "exact"),
            ("penultimate", "penultimate"),
            ("leading", "leading"),
        ):
            b = rem_critical_beta(na, s=rem_s, level=level, method=method)
            records += _theory_rows("rem", "rem", kind, role, ns, b, **rcols)
        records += _theory_rows(
            "rem", "rem", "freezing", role, ns, rem_freezing_beta(na, rem_s), **rcols
        )
        for d in fds:
            records += _query_rows(
                "finite_d", f"finite_d d={d}", role, ns, na, d, fd_rho, level, first_order_end=True
            )
    return pd.DataFrame(records)


def rem_orders(*, n, factors, s: float, level: float) -> pd.DataFrame:
    """The REM's critical scale and its approximations at a few ``n`` (up to ``1e30``), and the
    exact top weight at ``beta = c sqrt(2 ln n) / s`` against its Poisson-Dirichlet limit
    (docs/regimes.md#freezing-point-and-finite-n-corrections).

    Parameters
    ----------
    n : sequence of float
        Numbers of scores, ``>= 3``, increasing.
    factors : sequence of float
        Multiples ``c > 0`` of the freezing point at which the top weight is evaluated.
    s : float
        Score standard deviation, ``> 0``.
    level : float
        Level of the mean top weight that defines ``beta*``.

    Returns
    -------
    pandas.DataFrame
        One row per ``(n, c)``: ``n``, ``s``, ``ln_n``, ``beta_exact``, ``beta_penultimate``
        (``w_n / (alpha_c s)``), ``beta_leading`` (``sqrt(2 ln n) / (alpha_c s)``),
        ``beta_freezing`` (``sqrt(2 ln n) / s``), ``penultimate_excess_ln_n``
        (``(penultimate / exact - 1) ln n``), ``exact_over_sqrt_2ln`` (``beta_exact s /
        sqrt(2 ln n)``), ``alpha_c``, ``factor`` (``c``), ``top_weight`` (exact ``E A_(1)`` at
        ``beta = c sqrt(2 ln n) / s``) and ``top_weight_pd`` (its limit, the ``PD(1/c)`` mean,
        0 for ``c <= 1``).
    """
    ns = check_vector("n", n, low=3.0)
    cs = check_vector("factors", factors, low=0.0, low_open=True)
    s = check_real("s", s, low=0.0, low_open=True)
    level = check_level(level)
    alpha_c = pd_critical_alpha(level)
    records = []
    for nv in ns:
        ln = math.log(nv)
        ex = float(rem_critical_beta(nv, s=s, level=level, method="exact"))
        pen = float(rem_critical_beta(nv, s=s, level=level, method="penultimate"))
        lead = float(rem_critical_beta(nv, s=s, level=level, method="leading"))
        frz = float(rem_freezing_beta(nv, s))
        for c in cs:
            b = c * frz
            records.append(
                {
                    "n": float(nv),
                    "s": s,
                    "ln_n": ln,
                    "beta_exact": ex,
                    "beta_penultimate": pen,
                    "beta_leading": lead,
                    "beta_freezing": frz,
                    "penultimate_excess_ln_n": (pen / ex - 1.0) * ln,
                    "exact_over_sqrt_2ln": ex * s / math.sqrt(2.0 * ln),
                    "alpha_c": alpha_c,
                    "factor": float(c),
                    "top_weight": float(rem_top_weight_mean(nv, b, s=s)),
                    "top_weight_pd": float(pd_top_weight_mean(1.0 / c)) if c > 1.0 else 0.0,
                }
            )
    return pd.DataFrame(records)


def read_off_theory(
    *, n: int, d: int, rho: float, shift: float, copy_cosine, level: float
) -> pd.DataFrame:
    """The practical reading in theory (docs/regimes.md#practical-reading): for each copy cosine,
    the group size ``k`` (query plus ``k - 1`` copies) that lowers ``beta*`` and ``gamma*`` by
    ``shift`` (:func:`attnscale.regimes.ties.ties_for_shift`), the shift of the integer sizes
    around it, and the head's exact and first-order ``gamma*`` without copies.

    Returns
    -------
    pandas.DataFrame
        One row per cosine: ``n, d, rho, shift, copy_cosine, k_needed, k_ceil, shift_at_ceil,
        shift_at_floor, gamma_star_exact, gamma_star_first_order, gamma_c``.
    """
    n = check_int("n", n, minimum=3)
    d = check_int("d", d, minimum=3, maximum=4096)
    rho = check_real("rho", rho, low=0.0, high=1.0, high_open=True)
    shift = check_real("shift", shift, low=0.0, high=1.0, low_open=True, high_open=True)
    cos = check_vector("copy_cosine", copy_cosine, low=-1.0, low_open=True)
    if np.any(cos > 1.0):
        raise ValueError(f"every copy_cosine must be <= 1, got {cos[cos > 1.0][0]:g}")
    ln = math.log(n)
    g_exact = finite_d.critical_beta(n, d, rho) / ln
    g_first = finite_d.first_order_critical_beta(n, d, rho) / ln
    records = []
    for c in cos:
        k = float(ties_for_shift(n, d, rho, shift=shift, copy_cosine=float(c), level=level))
        kc = int(math.ceil(k)) if math.isfinite(k) else -1
        kf = int(math.floor(k)) if math.isfinite(k) else -1

        def at(kk, c=c):
            if kk < 1:
                return np.nan
            return float(ties_shift(n, kk, d, rho, copy_cosine=float(c), level=level))

        records.append(
            {
                "n": n,
                "d": d,
                "rho": rho,
                "shift": shift,
                "copy_cosine": float(c),
                "k_needed": k,
                "k_ceil": kc,
                "shift_at_ceil": at(kc),
                "shift_at_floor": at(kf) if kf > 1 else 0.0,
                "gamma_star_exact": g_exact,
                "gamma_star_first_order": g_first,
                "gamma_c": 1.0 / (1.0 - rho),
            }
        )
    return pd.DataFrame(records)


def theory(
    *,
    n,
    theory_n,
    gap_d,
    gap_rho,
    ties,
    rem_s,
    fd_d,
    fd_rho,
    level,
    read_off,
    rem_orders_n,
    rem_orders_factors,
    ties_d=(),
) -> dict:
    """Entry of the theory rule: :func:`theory_table`, :func:`read_off_theory` (``read_off``:
    ``{n, d, rho, shift, copy_cosine}``) and :func:`rem_orders` as the outputs ``lines``,
    ``read_off`` and ``rem_orders``."""
    ro = dict(read_off)
    tables = {
        "lines": theory_table(
            n=n,
            theory_n=theory_n,
            gap_d=gap_d,
            gap_rho=gap_rho,
            ties=ties,
            rem_s=rem_s,
            fd_d=fd_d,
            fd_rho=fd_rho,
            level=level,
            ties_d=ties_d,
        ),
        "read_off": read_off_theory(
            n=ro["n"],
            d=ro["d"],
            rho=ro["rho"],
            shift=ro["shift"],
            copy_cosine=ro["copy_cosine"],
            level=level,
        ),
        "rem_orders": rem_orders(n=rem_orders_n, factors=rem_orders_factors, s=rem_s, level=level),
    }
    return {k: with_job_provenance(t) for k, t in tables.items()}
