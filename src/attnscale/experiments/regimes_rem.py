"""Simulated ``beta*(n)`` of the random-energy model: ``n`` i.i.d. Gaussian scores, no
self-score (docs/regimes.md#no-gap-the-random-energy-model); entry :func:`rem_points`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key
from attnscale.core.validation import check_real
from attnscale.experiments.regimes_common import n_list, simulation_args
from attnscale.experiments.regimes_simulation import (
    beta_grid,
    row_provenance,
    simulated_row,
    solve_series,
)
from attnscale.regimes.observable import group_weight_grid
from attnscale.regimes.rem import (
    rem_critical_beta,
    rem_top_weight_slope,
    rem_truncation_bias,
    rem_truncation_threshold,
)
from attnscale.regimes.rem_samplers import rem_scores, rem_scores_above

__all__ = ["REM_STREAM", "rem_points"]

#: Random stream of the REM rows.
REM_STREAM = "regimes/rem"


def rem_points(
    *,
    n,
    s: float,
    contexts: int,
    level: float,
    grid_points: int,
    batches: int,
    truncation_eps: float,
    root_seed: int,
) -> pd.DataFrame:
    """Simulated ``beta*(n)`` of the random-energy model (docs/regimes.md#no-gap-the-random-energy-model).

    Each row is one query against ``n`` i.i.d. ``N(0, s^2)`` scores; the top group is the highest
    score. Where :func:`attnscale.regimes.rem.rem_truncation_threshold` finds a threshold ``t``
    whose bias bound at the grid's smallest beta is ``<= truncation_eps``, only the scores above
    ``t`` are drawn (:func:`attnscale.regimes.rem_samplers.rem_scores_above`, exact in law);
    otherwise all ``n``. Row ``c`` at ``n`` uses
    ``job_rng(root_seed, spawn_key(REM_STREAM, n, c))``.

    Parameters
    ----------
    n : sequence of int
        Context lengths (``>= 3``, strictly increasing).
    s : float
        Score standard deviation, ``> 0`` (``beta*`` scales as ``1/s``; the draws are standard).
    contexts : int
        Independent query rows per ``n`` (``>= 4``).
    level : float
        Level of the mean top weight, in ``(0, 1)``.
    grid_points : int
        Betas per grid (``>= 3``).
    batches : int
        Batches for the batch-means SE (``2 .. contexts``).
    truncation_eps : float
        Largest allowed bias bound of the truncated draws, in ``(0, 1)``.
    root_seed : int
        Root seed.

    Returns
    -------
    pandas.DataFrame
        One row per ``n`` (columns of
        :func:`attnscale.experiments.regimes_simulation.simulated_row`: ``beta_sim``, its SEs,
        the grid, ..., ``keys_drawn`` (mean per row), ``truncation_bound``, provenance).
    """
    ns = n_list(n)
    s = check_real("s", s, low=0.0, low_open=True)
    contexts, level, grid_points, batches = simulation_args(contexts, level, grid_points, batches)
    eps = check_real(
        "truncation_eps", truncation_eps, low=0.0, high=1.0, low_open=True, high_open=True
    )
    return pd.DataFrame(
        [_rem_row(nv, s, contexts, level, grid_points, batches, eps, root_seed) for nv in ns]
    )


def _rem_row(nv, s, contexts, level, grid_points, batches, eps, root_seed) -> dict:
    """The simulated row of one context length ``nv`` (see :func:`rem_points`)."""
    guess = rem_critical_beta(nv, s=1.0, level=level)
    slope = rem_top_weight_slope(nv, guess)
    ser = [
        {
            "regime": "rem",
            "series": "rem",
            "s": s,
            "guess": guess / s,
            "grid": beta_grid(guess, slope, grid_points),
        }
    ]
    drawn = []
    bounds = {}

    def draw(c, grids, nv=nv, drawn=drawn, bounds=bounds):
        bmin = float(grids[0][0])
        if bmin not in bounds:
            t = rem_truncation_threshold(nv, bmin, eps) if bmin > 0 else None
            bounds[bmin] = (t, 0.0 if t is None else rem_truncation_bias(nv, t, bmin))
        t = bounds[bmin][0]
        rng = job_rng(root_seed, spawn_key(REM_STREAM, nv, c))
        x = rem_scores(nv, rng) if t is None else rem_scores_above(nv, t, rng)
        if x.size == 0:  # no score above t (probability Phi(t)^n, inside the bound)
            return np.zeros(1), np.zeros(0)
        drawn.append(x.size)
        top = int(np.argmax(x))
        gaps = np.delete(x, top) - x[top]
        return np.zeros(1), gaps

    def evaluate(series, data, grid):
        return group_weight_grid(data[0], data[1], grid)  # standard scores: beta * s on the grid

    solve_series(ser, contexts, draw, evaluate, level, batches)
    sres = ser[0]
    t, bound = bounds[float(sres["grid"][0])]
    # the grid and root are in units of standard scores: divide by s
    res = sres["result"]
    for key in ("beta_star", "se", "se_batches"):
        res[key] /= s
    res["slope"] *= s
    sres["grid"] = sres["grid"] / s
    sres["keys_drawn"] = float(np.mean(drawn[-contexts:]))
    sres["truncation_bound"] = bound
    params = {
        "n": nv,
        "s": s,
        "contexts": contexts,
        "level": level,
        "grid_points": grid_points,
        "truncation_eps": eps,
    }
    prov = row_provenance(root_seed, spawn_key(REM_STREAM, nv), contexts, params)
    return simulated_row(sres, nv, contexts, level, prov)
