"""The predictions of the regimes figure (docs/regimes.md): every prediction on a line grid and at
the simulated points (:func:`theory_table`), the practical reading in theory
(:func:`read_off_theory`), and the entry of the theory rule (:func:`theory`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnscale.core.validation import check_int, check_real, check_vector
from attnscale.experiments.regimes_common import n_list, ties_k, ties_series
from attnscale.layer import finite_d
from attnscale.regimes.gap import finite_d_critical_beta, gap_critical_beta, log_n_breakdown
from attnscale.regimes.rem import rem_critical_beta, rem_freezing_beta
from attnscale.regimes.ties import ties_critical_beta, ties_for_shift, ties_shift

__all__ = ["theory_table", "read_off_theory", "theory"]


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
) -> pd.DataFrame:
    """Every prediction of the figure (docs/regimes.md), on the line grid ``theory_n``
    (``role = "line"``; near-tie groups of real size ``k = n^kappa``) and at the simulated ``n``
    (``role = "point"``; the integer ``k`` of
    :func:`attnscale.experiments.regimes_common.ties_k`).

    Kinds per regime: ``gap`` -- ``prediction`` (exact finite-d theory at ``gap_d``,
    :func:`attnscale.layer.finite_d.critical_beta`), ``leading`` (``ln(n - 1) / (1 - rho)``, Paper A);
    ``ties`` -- ``prediction`` (first-order finite-d group formula with the copies' factor,
    :func:`attnscale.regimes.ties.ties_critical_beta`), ``leading`` (``s2 = 0``, copies at their
    large-d cosine ``1/sqrt(1 + noise^2)``), ``asymptote`` (``gamma = (1 - kappa) / (Delta -
    delta)`` if ``delta < kappa Delta``, else ``gamma_c``); ``rem`` -- ``prediction`` (exact
    quadrature), ``penultimate``, ``leading``, ``freezing``; ``finite_d`` -- ``prediction``
    (exact), ``first_order``, ``leading`` (the ``log n`` law ``ln(n - 1) / (1 - rho)``) and, at
    ``rho = 0``, ``power_law`` (:func:`attnscale.layer.finite_d.power_law_beta`).

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
    fd_rho = check_real("fd_rho", fd_rho, low=0.0, high=1.0, high_open=True)
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    rows: list[dict] = []
    delta = 1.0 - gap_rho
    s2 = finite_d.first_order_variance(gap_d, gap_rho)
    for role, ns in (("line", line), ("point", pts)):
        na = np.array(ns, dtype=float)
        base = {
            "d": gap_d,
            "rho": gap_rho,
            "s": np.nan,
            "k": 1.0,
            "kappa": np.nan,
            "copy_noise": 0.0,
            "ln_n_breakdown": log_n_breakdown(gap_d, gap_rho),
        }
        rows += _theory_rows(
            "gap",
            "gap",
            "prediction",
            role,
            ns,
            finite_d_critical_beta(na, gap_d, gap_rho),
            **base,
        )
        rows += _theory_rows(
            "gap",
            "gap",
            "leading",
            role,
            ns,
            gap_critical_beta(na, gap_rho, level=level),
            **base,
        )
        for kappa, noise in ties:
            name = f"ties kappa={kappa:g}" + (f" noise={noise:g}" if noise > 0 else "")
            k = na**kappa if role == "line" else np.array([ties_k(v, kappa) for v in ns], float)
            k = np.clip(k, 1.0, na - 1.0)
            cols = {**base, "k": k, "kappa": kappa, "copy_noise": noise}
            pred = ties_critical_beta(na, k, delta, s2=s2, copy_noise=noise, d=gap_d, level=level)
            gap_c = 1.0 - 1.0 / math.sqrt(1.0 + noise * noise)
            lead = ties_critical_beta(na, k, delta, copy_gap=gap_c, level=level)
            g_asym = (1.0 - kappa) / (delta - gap_c) if gap_c < kappa * delta else 1.0 / delta
            rows += _theory_rows("ties", name, "prediction", role, ns, pred, **cols)
            rows += _theory_rows("ties", name, "leading", role, ns, lead, **cols)
            rows += _theory_rows("ties", name, "asymptote", role, ns, g_asym * np.log(na), **cols)
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
            rows += _theory_rows("rem", "rem", kind, role, ns, b, **rcols)
        rows += _theory_rows(
            "rem", "rem", "freezing", role, ns, rem_freezing_beta(na, rem_s), **rcols
        )
        for d in fds:
            cols = {
                "d": d,
                "rho": fd_rho,
                "s": np.nan,
                "k": 1.0,
                "kappa": np.nan,
                "copy_noise": 0.0,
                "ln_n_breakdown": log_n_breakdown(d, fd_rho),
            }
            name = f"finite_d d={d}"
            rows += _theory_rows(
                "finite_d",
                name,
                "prediction",
                role,
                ns,
                finite_d_critical_beta(na, d, fd_rho),
                **cols,
            )
            fo = [finite_d.first_order_critical_beta(int(v), d, fd_rho) for v in ns]
            rows += _theory_rows("finite_d", name, "first_order", role, ns, fo, **cols)
            rows += _theory_rows(
                "finite_d",
                name,
                "leading",
                role,
                ns,
                gap_critical_beta(na, fd_rho, level=level),
                **cols,
            )
            if fd_rho == 0.0:
                rows += _theory_rows(
                    "finite_d", name, "power_law", role, ns, finite_d.power_law_beta(na, d), **cols
                )
    return pd.DataFrame(rows)


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
    rows = []
    for c in cos:
        k = float(ties_for_shift(n, d, rho, shift=shift, copy_cosine=float(c), level=level))
        kc = int(math.ceil(k)) if math.isfinite(k) else -1
        kf = int(math.floor(k)) if math.isfinite(k) else -1

        def at(kk, c=c):
            if kk < 1:
                return np.nan
            return float(ties_shift(n, kk, d, rho, copy_cosine=float(c), level=level))

        rows.append(
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
    return pd.DataFrame(rows)


def theory(*, n, theory_n, gap_d, gap_rho, ties, rem_s, fd_d, fd_rho, level, read_off) -> dict:
    """Entry of the theory rule: :func:`theory_table` and :func:`read_off_theory` (``read_off``:
    ``{n, d, rho, shift, copy_cosine}``) as the outputs ``lines`` and ``read_off``."""
    ro = dict(read_off)
    return {
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
        ),
        "read_off": read_off_theory(
            n=ro["n"],
            d=ro["d"],
            rho=ro["rho"],
            shift=ro["shift"],
            copy_cosine=ro["copy_cosine"],
            level=level,
        ),
    }
