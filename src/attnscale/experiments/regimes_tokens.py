"""Simulated ``beta*(n)`` for one query row of Paper A's Gaussian near-simplex tokens: the gap
regime (large ``d``), the finite-``d`` regime (small ``d``) and ``k`` exact or noisy copies of the
query (near-ties), all from :func:`attnscale.regimes.token_samplers.gaussian_token_draw`
(:func:`token_points`); and the practical head, exact near-ties around the number that moves
``gamma*`` by the configured shift (:func:`read_off_points`) (docs/regimes.md#gap-regime-paper-a,
docs/regimes.md#finite-d-where-log-n-ends, docs/regimes.md#near-ties,
docs/regimes.md#practical-reading)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key, value_id
from attnscale.core.validation import check_int, check_real
from attnscale.experiments.regimes_common import n_list, simulation_args, ties_k, ties_series
from attnscale.experiments.regimes_simulation import (
    beta_grid,
    row_provenance,
    simulated_row,
    solve_series,
)
from attnscale.layer import finite_d
from attnscale.regimes.observable import group_weight_grid
from attnscale.regimes.ties import copy_cosines, ties_for_shift, ties_shift
from attnscale.regimes.ties_exact import ties_exact_critical_beta, ties_group_weight
from attnscale.regimes.token_samplers import gaussian_token_draw

__all__ = ["TOKEN_STREAM", "token_points", "read_off_points"]

#: Random stream of the token rows.
TOKEN_STREAM = "regimes/tokens"


def _token_theory(n: int, d: int, rho: float, k: int, noise: float, level: float):
    """Prediction and slope of one token series: the exact finite-d theory, for the query alone
    (:func:`attnscale.layer.finite_d.critical_beta`, slope by a central difference of
    :func:`attnscale.layer.finite_d.self_weight`) and for ``k`` copies
    (:func:`attnscale.regimes.ties_exact.ties_exact_critical_beta`, slope by a central difference
    of :func:`attnscale.regimes.ties_exact.ties_group_weight`)."""
    if k == 1:
        b = float(finite_d.critical_beta(n, d, rho))
        lo, hi = finite_d.self_weight(n, d, rho, [b * (1 - 1e-3), b * (1 + 1e-3)])
        return b, float((hi - lo) / (2e-3 * b))
    b = ties_exact_critical_beta(n, k, d, rho, copy_noise=noise, level=level)
    lo, hi = ties_group_weight(n, k, d, rho, [b * (1 - 1e-3), b * (1 + 1e-3)], copy_noise=noise)
    return b, float((hi - lo) / (2e-3 * b))


def _token_series(regime, n, d, rho, ties, extra_k, level, grid_points, tag="") -> list[dict]:
    specs = [(regime, f"finite_d d={d}" if regime == "finite_d" else regime + tag, 1, np.nan, 0.0)]
    for kappa, noise in ties:
        name = f"ties kappa={kappa:g}" + (f" noise={noise:g}" if noise > 0 else "") + tag
        specs.append(("ties", name, ties_k(n, kappa), kappa, noise))
    for k in extra_k:
        specs.append((regime, f"{regime} k={k}", int(k), np.nan, 0.0))
    out = []
    for reg, name, k, kappa, noise in specs:
        guess, slope = _token_theory(n, d, rho, k, noise, level)
        out.append(
            {
                "regime": reg,
                "series": name,
                "d": d,
                "rho": rho,
                "k": k,
                "kappa": kappa,
                "copy_noise": noise,
                "guess": guess,
                "grid": beta_grid(guess, slope, grid_points),
            }
        )
    return out


def _simulate_tokens(n, d, rho, series, contexts, level, batches, root_seed) -> None:
    kmax = max(s["k"] for s in series)

    def draw(c, grids):
        rng = job_rng(root_seed, spawn_key(TOKEN_STREAM, d, value_id(rho), n, c))
        dr = gaussian_token_draw(n, d, rho, rng, copies=kmax - 1)
        return dr["others"] - 1.0, dr["copy_a"], dr["copy_w"]

    def evaluate(s, data, grid):
        others, a, w = data
        k = s["k"]
        cc = copy_cosines(s["copy_noise"], a[: k - 1], w[: k - 1], d)
        group = np.concatenate([[0.0], cc - 1.0])
        return group_weight_grid(group, others[k - 1 :], grid)

    solve_series(series, contexts, draw, evaluate, level, batches)


def token_points(
    *,
    regime: str,
    n,
    d,
    rho: float,
    contexts: int,
    level: float,
    grid_points: int,
    batches: int,
    root_seed: int,
    ties=(),
    label_d: bool = False,
) -> pd.DataFrame:
    """Simulated ``beta*(n)`` for one query row of Gaussian near-simplex tokens
    (docs/regimes.md#gap-regime-paper-a, docs/regimes.md#finite-d-where-log-n-ends,
    docs/regimes.md#near-ties).

    For every ``d`` and ``n``: the query alone (series ``regime``: ``"gap"`` at large ``d``,
    ``"finite_d"`` at small ``d``; the top group is the query, the observable its self-weight) and,
    for each ``[kappa, copy_noise]`` in ``ties``, the query with ``k - 1 = round(n^kappa) - 1``
    copies (exact for ``copy_noise = 0``). All series of one ``(d, n)`` share the same rows
    (common random numbers): copies replace tokens ``1 .. k - 1``. Row ``c`` uses
    ``job_rng(root_seed, spawn_key(TOKEN_STREAM, d, value_id(rho), n, c))``. The grid is centred
    on the exact finite-d prediction (:func:`attnscale.layer.finite_d.critical_beta` for the query
    alone, :func:`attnscale.regimes.ties_exact.ties_exact_critical_beta` for copies). Each series
    also gets its ratio to the query-alone series of the same rows, ``beta*_k / beta*_1``, with a
    paired delta-method SE (per-row influence values), in which the rows' common fluctuation
    cancels (docs/regimes.md#exact-finite-d-theory-for-k-copies).

    Parameters
    ----------
    regime : {"gap", "finite_d"}
        Label of the query-alone series.
    n : sequence of int
        Context lengths (``>= 3``, strictly increasing; ``round(n^kappa) < n``).
    d : int or sequence of int
        Dimensions, ``3 <= d <= 4096`` (the finite-d theory's range).
    rho : float
        Nominal correlation, ``0 <= rho < 1``.
    contexts, level, grid_points, batches, root_seed
        As in :func:`attnscale.experiments.regimes_rem.rem_points`.
    ties : sequence of [kappa, copy_noise], optional
        Near-tie series, ``0 < kappa < 1``, ``copy_noise >= 0``.
    label_d : bool, optional
        Append `` d=<d>`` to the names of the ``"gap"`` and tie series (for a second set of them
        at another ``d``).

    Returns
    -------
    pandas.DataFrame
        One row per ``(d, n, series)``; ``keys_drawn = n``; ``ratio_to_query`` and
        ``ratio_to_query_se`` (1 and 0 for the query-alone series).
    """
    if regime not in ("gap", "finite_d"):
        raise ValueError(f"regime must be 'gap' or 'finite_d', got {regime!r}")
    ns = n_list(n)
    ds = [check_int("d", v, minimum=3, maximum=4096) for v in np.atleast_1d(d).tolist()]
    rho = check_real("rho", rho, low=0.0, high=1.0, high_open=True)
    contexts, level, grid_points, batches = simulation_args(contexts, level, grid_points, batches)
    ties = ties_series(ties)
    out = []
    for dv in ds:
        for nv in ns:
            tag = f" d={dv}" if label_d and regime == "gap" else ""
            series = _token_series(regime, nv, dv, rho, ties, (), level, grid_points, tag)
            _simulate_tokens(nv, dv, rho, series, contexts, level, batches, root_seed)
            base = series[0]["result"]
            for s in series:
                s["keys_drawn"] = float(nv)
                params = {
                    "n": nv,
                    "d": dv,
                    "rho": rho,
                    "k": s["k"],
                    "copy_noise": s["copy_noise"],
                    "contexts": contexts,
                    "level": level,
                    "grid_points": grid_points,
                }
                key = spawn_key(TOKEN_STREAM, dv, value_id(rho), nv)
                row = simulated_row(
                    s, nv, contexts, level, row_provenance(root_seed, key, contexts, params)
                )
                ratio, se = _paired_ratio(s["result"], base, contexts)
                row.update(ratio_to_query=ratio, ratio_to_query_se=se if s["k"] > 1 else 0.0)
                out.append(row)
    return pd.DataFrame(out)


def _paired_ratio(r: dict, base: dict, contexts: int) -> tuple[float, float]:
    """``beta*_r / beta*_base`` of two series solved on the same rows, and its paired
    delta-method SE from the per-row influence values (docs/regimes.md#practical-reading)."""
    ratio = r["beta_star"] / base["beta_star"]
    infl = r["influence"] / base["beta_star"] - ratio * base["influence"] / base["beta_star"]
    return ratio, float(infl.std(ddof=1) / math.sqrt(contexts))


def read_off_points(
    *,
    n: int,
    d: int,
    rho: float,
    shift: float,
    contexts: int,
    level: float,
    grid_points: int,
    batches: int,
    root_seed: int,
) -> pd.DataFrame:
    """The practical reading, simulated (docs/regimes.md#practical-reading): for a head with
    ``(d, n, rho)``, the group size ``k`` that lowers ``beta*`` by ``shift`` in theory
    (:func:`attnscale.regimes.ties.ties_for_shift`) and the simulated ``beta*`` for the query
    alone and with ``floor(k)`` and ``ceil(k)`` exact copies, from the same rows. The simulated
    shift ``1 - beta*_k / beta*_1`` gets a paired delta-method SE (per-row influence values).

    Returns
    -------
    pandas.DataFrame
        One row per simulated ``k``: the :func:`token_points` columns plus ``k_theory`` (the
        real-valued ``k`` for ``shift``), ``shift_sim``, ``shift_sim_se``, ``shift_theory``
        (:func:`attnscale.regimes.ties.ties_shift` at that ``k``, first order) and
        ``shift_exact`` (exact finite-d theory: ``1 - beta*_k / beta*_1`` from
        :func:`attnscale.regimes.ties_exact.ties_exact_critical_beta` at ``k`` and at 1,
        relative tolerance ``1e-10``).
    """
    n = check_int("n", n, minimum=3)
    d = check_int("d", d, minimum=3, maximum=4096)
    rho = check_real("rho", rho, low=0.0, high=1.0, high_open=True)
    shift = check_real("shift", shift, low=0.0, high=1.0, low_open=True, high_open=True)
    contexts, level, grid_points, batches = simulation_args(contexts, level, grid_points, batches)
    k_real = float(ties_for_shift(n, d, rho, shift=shift, level=level))
    if not math.isfinite(k_real):
        raise ValueError(f"no group size k < n lowers beta* by shift={shift:g} at n={n}")
    ks = sorted({int(math.floor(k_real)), int(math.ceil(k_real))} - {1})
    series = _token_series("read_off", n, d, rho, [], ks, level, grid_points)
    series[0]["series"] = "read_off k=1"
    _simulate_tokens(n, d, rho, series, contexts, level, batches, root_seed)
    base = series[0]["result"]
    b1 = ties_exact_critical_beta(n, 1, d, rho, level=level, xtol=1e-10)
    out = []
    for s in series:
        ratio, ratio_se = _paired_ratio(s["result"], base, contexts)
        bk = ties_exact_critical_beta(n, s["k"], d, rho, level=level, xtol=1e-10)
        s["keys_drawn"] = float(n)
        params = {
            "n": n,
            "d": d,
            "rho": rho,
            "k": s["k"],
            "contexts": contexts,
            "level": level,
            "grid_points": grid_points,
            "shift": shift,
        }
        key = spawn_key(TOKEN_STREAM, d, value_id(rho), n)
        row = simulated_row(s, n, contexts, level, row_provenance(root_seed, key, contexts, params))
        row.update(
            k_theory=k_real,
            shift_target=shift,
            shift_sim=1.0 - ratio,
            shift_sim_se=ratio_se if s["k"] > 1 else 0.0,
            shift_theory=float(ties_shift(n, s["k"], d, rho, level=level)),
            shift_exact=1.0 - bk / b1,
        )
        out.append(row)
    return pd.DataFrame(out)
