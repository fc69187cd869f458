"""How ``beta*`` is simulated (docs/regimes.md#simulation-and-root-finding): the beta grid, the
root of the mean curve with its standard error, moving the grid, and the table row of one series.

Per ``n`` and series, ``contexts`` independent query rows (each with its own generator,
``job_rng(root_seed, spawn_key(stream, ..., n, context))``), the top-group weight ``W_c(beta)``
and its exact derivative of every row on one grid of ``grid_points`` betas around the prediction
(common random numbers: the same rows at every beta), the mean curve as the cubic Hermite
interpolant of the means and mean derivatives, and ``beta*`` its root. The standard error is the
delta method, ``SE = sd_c(W_c(beta*)) / sqrt(contexts) / mean_c W_c'(beta*)`` (rows are
independent), with a batch-means value alongside as a check. A root outside the grid moves the
grid and the same rows are drawn again. The simulations: :mod:`attnscale.experiments.regimes_rem`,
:mod:`attnscale.experiments.regimes_tokens`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.interpolate import CubicHermiteSpline

from attnscale.core.validation import check_real
from attnscale.pipeline.io import provenance_columns

__all__ = [
    "GRID_WIDTHS",
    "GRID_FRACTION",
    "MAX_ATTEMPTS",
    "beta_grid",
    "curve_root",
    "solve_series",
    "simulated_row",
    "row_provenance",
]

#: [choice] The beta grid spans +-min(GRID_WIDTHS widths of the predicted curve, GRID_FRACTION
#: of the prediction) (docs/regimes.md#simulation-and-root-finding).
GRID_WIDTHS = 1.5
GRID_FRACTION = 0.2

#: [choice] Attempts at moving the grid before giving up.
MAX_ATTEMPTS = 4


def beta_grid(center: float, slope: float, points: int) -> np.ndarray:
    """The beta grid of one series: ``center +- H``, ``H = min(GRID_WIDTHS / (4 slope),
    GRID_FRACTION center)`` (``1 / (4 slope)`` is the width of a logistic curve with that slope at
    its midpoint), ``points`` equally spaced values (docs/regimes.md#simulation-and-root-finding)."""
    center = check_real("center", center, low=0.0, low_open=True)
    slope = check_real("slope", slope, low=0.0, low_open=True)
    half = min(GRID_WIDTHS / (4.0 * slope), GRID_FRACTION * center)
    return center + half * np.linspace(-1.0, 1.0, points)


def curve_root(betas, W, dW, *, level: float, batches: int) -> dict:
    """``beta*`` from per-row curves on a grid (docs/regimes.md#simulation-and-root-finding).

    Parameters
    ----------
    betas : array_like, shape (G,)
        Strictly increasing grid.
    W, dW : array_like, shape (G, C)
        Each row's (context's) top-group weight and its beta-derivative at every grid point.
    level : float
        Target level of the mean weight.
    batches : int
        Contiguous batches of rows for the batch-means standard error (``2 <= batches <= C``).

    Returns
    -------
    dict
        ``status`` (``"ok"``, ``"low"``: the mean exceeds ``level`` on the whole grid, ``"high"``:
        below it everywhere); with ``"ok"``: ``beta_star``, ``se`` (delta method), ``se_batches``,
        ``slope`` (mean derivative at the root), ``w_mean``, ``w_sd`` (rows at the root),
        ``influence`` (per row, ``(W_c(beta*) - level) / slope``, whose mean is ~0 and whose
        spread gives ``se``).
    """
    b = np.asarray(betas, dtype=np.float64)
    W = np.asarray(W, dtype=np.float64)
    dW = np.asarray(dW, dtype=np.float64)
    C = W.shape[1]
    mean = CubicHermiteSpline(b, W.mean(axis=1), dW.mean(axis=1))
    if W.mean(axis=1)[0] >= level:
        return {"status": "low"}
    if W.mean(axis=1)[-1] <= level:
        return {"status": "high"}
    roots = mean.solve(level, extrapolate=False)
    roots = roots[np.isfinite(roots)]
    root = float(roots[0]) if roots.size else float("nan")
    row_curves = CubicHermiteSpline(b, W, dW, axis=0)
    w_at = row_curves(root)
    slope = float(mean.derivative()(root))
    infl = (w_at - level) / slope
    se = float(infl.std(ddof=1) / math.sqrt(C))
    # batch means: each contiguous batch's own mean curve and root
    edges = np.linspace(0, C, batches + 1).round().astype(int)
    broots = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        sp = CubicHermiteSpline(b, W[:, lo:hi].mean(axis=1), dW[:, lo:hi].mean(axis=1))
        r = sp.solve(level, extrapolate=True)
        r = r[np.isfinite(r)]
        broots.append(float(r[np.argmin(np.abs(r - root))]) if r.size else np.nan)
    broots = np.array(broots)
    return {
        "status": "ok",
        "beta_star": root,
        "se": se,
        "se_batches": float(np.nanstd(broots, ddof=1) / math.sqrt(np.isfinite(broots).sum())),
        "slope": slope,
        "w_mean": float(w_at.mean()),
        "w_sd": float(w_at.std(ddof=1)),
        "influence": infl,
    }


def solve_series(series: list[dict], contexts: int, draw, evaluate, level, batches) -> None:
    """Fill ``series[i]["result"]``: draw every row once per attempt, evaluate each unfinished
    series on its grid, find the roots, move the grid of a series whose root lies outside it
    (docs/regimes.md#simulation-and-root-finding).

    Parameters
    ----------
    series : list of dict
        One dict per series with at least ``grid`` (its beta grid) and ``series`` (its name);
        ``result`` (:func:`curve_root`'s dict) and ``attempts`` are added, ``grid`` is moved.
    contexts : int
        Rows per series.
    draw : callable
        ``draw(c, grids)``: the data of row ``c`` (shared by every series; ``grids`` maps the
        unfinished series' indices to their grids).
    evaluate : callable
        ``evaluate(series, data, grid)``: one row's ``(W, dW)`` on ``grid``.
    level, batches
        As in :func:`curve_root`.
    """
    todo = list(range(len(series)))
    for attempt in range(MAX_ATTEMPTS):
        G = {i: series[i]["grid"] for i in todo}
        W = {i: np.empty((G[i].size, contexts)) for i in todo}
        dW = {i: np.empty((G[i].size, contexts)) for i in todo}
        for c in range(contexts):
            data = draw(c, {i: G[i] for i in todo})
            for i in todo:
                W[i][:, c], dW[i][:, c] = evaluate(series[i], data, G[i])
        left = []
        for i in todo:
            res = curve_root(G[i], W[i], dW[i], level=level, batches=batches)
            series[i]["attempts"] = attempt + 1
            if res["status"] == "ok":
                series[i]["result"] = res
                continue
            g = G[i]
            half = (g[-1] - g[0]) / 2.0
            step = -2.0 * half if res["status"] == "low" else 2.0 * half
            center = max(0.5 * (g[0] + g[-1]) + step, 0.5 * half + 1e-9)
            series[i]["grid"] = center + half * np.linspace(-1.0, 1.0, g.size)
            left.append(i)
        if not left:
            return
        todo = left
    raise RuntimeError(
        f"no root inside the beta grid after {MAX_ATTEMPTS} attempts for series "
        f"{[series[i]['series'] for i in todo]}"
    )


def simulated_row(s: dict, n: int, contexts: int, level: float, prov: dict) -> dict:
    """The table row of one solved series ``s`` at ``n`` (:func:`solve_series`): its labels, the
    simulated ``beta*`` and ``gamma*`` with their SEs, the grid, and the provenance ``prov``
    (:func:`row_provenance`) (docs/regimes.md#simulation-and-root-finding)."""
    r = s["result"]
    ln = math.log(n)
    return {
        "regime": s["regime"],
        "series": s["series"],
        "n": n,
        "d": s.get("d", np.nan),
        "rho": s.get("rho", np.nan),
        "s": s.get("s", np.nan),
        "k": s.get("k", 1),
        "kappa": s.get("kappa", np.nan),
        "copy_noise": s.get("copy_noise", 0.0),
        "contexts": contexts,
        "level": level,
        "beta_sim": r["beta_star"],
        "beta_sim_se": r["se"],
        "beta_sim_se_batches": r["se_batches"],
        "gamma_sim": r["beta_star"] / ln,
        "gamma_sim_se": r["se"] / ln,
        "w_mean_at_root": r["w_mean"],
        "w_sd_at_root": r["w_sd"],
        "slope_at_root": r["slope"],
        "beta_guess": s["guess"],
        "grid_lo": float(s["grid"][0]),
        "grid_hi": float(s["grid"][-1]),
        "grid_points": int(s["grid"].size),
        "attempts": s["attempts"],
        "keys_drawn": s.get("keys_drawn", np.nan),
        "truncation_bound": s.get("truncation_bound", 0.0),
        **prov,
    }


def row_provenance(root_seed, key_prefix: tuple, contexts: int, params: dict) -> dict:
    """Provenance columns (:data:`attnscale.experiments.regimes_common.PROV`); ``spawn_key``
    names every row's key compactly as ``<prefix>-{0..contexts-1}`` (the last id is the row)."""
    return provenance_columns(root_seed, key_prefix, params, contexts=contexts)
