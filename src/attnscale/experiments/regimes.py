"""Entry functions of the critical-scale regimes experiment (issue 20, docs/regimes.md).

Simulated ``beta*(n)`` for four score models, the predictions they are compared with, and the
tidy table behind the figure:

* :func:`rem_points` -- ``n`` i.i.d. Gaussian scores, no self-score (random-energy model);
* :func:`token_points` -- Paper A's Gaussian near-simplex tokens, one query row: the gap regime
  (large ``d``), the finite-``d`` regime (small ``d``) and ``k`` exact or noisy copies of the
  query (near-ties), all from :func:`attnscale.layer.score_regimes.gaussian_token_draw`;
* :func:`read_off_points` -- the practical head (``d = 128``, ``n = 131072``): exact near-ties
  around the number that moves ``gamma*`` by 10 %;
* :func:`theory_table` -- every prediction on a line grid and at the simulated points;
* :func:`critical_scale_table` -- the summary: simulation and prediction side by side.

How ``beta*`` is simulated (docs/regimes.md#simulation-and-root-finding): per ``n`` and series,
``contexts`` independent query rows (each with its own generator,
``job_rng(root_seed, spawn_key(stream, ..., n, context))``), the top-group weight ``W_c(beta)``
and its exact derivative of every row on one grid of ``grid_points`` betas around the prediction
(common random numbers: the same rows at every beta), the mean curve as the cubic Hermite
interpolant of the means and mean derivatives, and ``beta*`` its root. The standard error is the
delta method, ``SE = sd_c(W_c(beta*)) / sqrt(contexts) / mean_c W_c'(beta*)`` (rows are
independent), with a batch-means value alongside as a check. A root outside the grid moves the
grid and the same rows are drawn again.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.interpolate import CubicHermiteSpline

from attnscale.core.seeding import job_rng, spawn_key, value_id
from attnscale.core.validation import check_int, check_real, check_vector
from attnscale.layer import finite_d
from attnscale.layer import score_regimes as sr
from attnscale.pipeline.io import provenance_columns

__all__ = [
    "REM_STREAM",
    "TOKEN_STREAM",
    "GRID_WIDTHS",
    "GRID_FRACTION",
    "MAX_ATTEMPTS",
    "PROV",
    "ties_k",
    "beta_grid",
    "curve_root",
    "rem_points",
    "token_points",
    "read_off_points",
    "theory_table",
    "read_off_theory",
    "theory",
    "SUMMARY_COLUMNS",
    "critical_scale_table",
]

REM_STREAM = "regimes/rem"
TOKEN_STREAM = "regimes/tokens"

#: [choice] The beta grid spans +-min(GRID_WIDTHS widths of the predicted curve, GRID_FRACTION
#: of the prediction) (docs/regimes.md#simulation-and-root-finding).
GRID_WIDTHS = 1.5
GRID_FRACTION = 0.2

#: [choice] Attempts at moving the grid before giving up.
MAX_ATTEMPTS = 4

PROV = ["root_seed", "spawn_keys", "params_hash", "attnscale_version", "git_commit"]


# =========================================================================== checks
def _n_list(n) -> list[int]:
    v = check_vector("n", n, low=3.0)
    out = [int(round(x)) for x in v]
    if len(set(out)) != len(out) or any(np.diff(out) <= 0):
        raise ValueError(f"n must be strictly increasing after rounding to integers, got {out}")
    return out


def _common(contexts, level, grid_points, batches):
    contexts = check_int("contexts", contexts, minimum=4)
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    grid_points = check_int("grid_points", grid_points, minimum=3)
    batches = check_int("batches", batches, minimum=2, maximum=contexts)
    return contexts, level, grid_points, batches


def _ties_series(ties) -> list[tuple[float, float]]:
    """``[[kappa, copy_noise], ...]`` checked: ``0 < kappa < 1``, ``copy_noise >= 0``."""
    out = []
    for i, pair in enumerate(ties or []):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"ties[{i}] must be a pair [kappa, copy_noise], got {pair!r}")
        kappa = check_real(
            f"ties[{i}] kappa", pair[0], low=0.0, high=1.0, low_open=True, high_open=True
        )
        noise = check_real(f"ties[{i}] copy_noise", pair[1], low=0.0)
        out.append((kappa, noise))
    if len(set(out)) != len(out):
        raise ValueError(f"ties must hold distinct [kappa, copy_noise] pairs, got {out}")
    return out


def ties_k(n: int, kappa: float) -> int:
    """Group size of the ``kappa`` series at ``n``: ``round(n^kappa)``, at least 2 and at most
    ``n - 1`` (docs/regimes.md#near-ties)."""
    return int(min(n - 1, max(2, round(n**kappa))))


# =========================================================================== root finding
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
    rows = CubicHermiteSpline(b, W, dW, axis=0)
    w_at = rows(root)
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


def _curves(group, others, betas) -> tuple[np.ndarray, np.ndarray]:
    """:func:`attnscale.layer.score_regimes.group_weight_grid` of one row on the grid."""
    return sr.group_weight_grid(group, others, betas)


def _solve_series(series: list[dict], contexts: int, draw, evaluate, level, batches) -> None:
    """Fill ``series[i]["result"]``: draw every row once per attempt, evaluate each unfinished
    series on its grid, find the roots, move the grid of a series whose root lies outside it."""
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


def _row(s: dict, n: int, contexts: int, level: float, prov: dict) -> dict:
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


def _prov(root_seed, key_prefix: tuple, contexts: int, params: dict) -> dict:
    """Provenance columns; ``spawn_keys`` names every row's key compactly as
    ``<prefix>-{0..contexts-1}`` (the last id is the row)."""
    p = provenance_columns(root_seed, key_prefix, params)
    keys = p.pop("spawn_key") + f"-{{0..{contexts - 1}}}"
    return {
        "root_seed": p["root_seed"],
        "spawn_keys": keys,
        "params_hash": p["params_hash"],
        "attnscale_version": p["attnscale_version"],
        "git_commit": p["git_commit"],
    }


# =========================================================================== REM
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
    score. Where :func:`attnscale.layer.score_regimes.rem_truncation_threshold` finds a threshold ``t``
    whose bias bound at the grid's smallest beta is ``<= truncation_eps``, only the scores above
    ``t`` are drawn (:func:`attnscale.layer.score_regimes.rem_scores_above`, exact in law); otherwise all
    ``n``. Row ``c`` at ``n`` uses ``job_rng(root_seed, spawn_key(REM_STREAM, n, c))``.

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
        One row per ``n`` (columns of :func:`_row`: ``beta_sim``, its SEs, the grid, ...,
        ``keys_drawn`` (mean per row), ``truncation_bound``, provenance).
    """
    ns = _n_list(n)
    s = check_real("s", s, low=0.0, low_open=True)
    contexts, level, grid_points, batches = _common(contexts, level, grid_points, batches)
    eps = check_real(
        "truncation_eps", truncation_eps, low=0.0, high=1.0, low_open=True, high_open=True
    )
    out = []
    for nv in ns:
        guess = sr.rem_critical_beta(nv, s=1.0, level=level)
        slope = sr.rem_top_weight_slope(nv, guess)
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
                t = sr.rem_truncation_threshold(nv, bmin, eps) if bmin > 0 else None
                bounds[bmin] = (t, 0.0 if t is None else sr.rem_truncation_bias(nv, t, bmin))
            t = bounds[bmin][0]
            rng = job_rng(root_seed, spawn_key(REM_STREAM, nv, c))
            x = sr.rem_scores(nv, rng) if t is None else sr.rem_scores_above(nv, t, rng)
            if x.size == 0:  # no score above t (probability Phi(t)^n, inside the bound)
                return np.zeros(1), np.zeros(0)
            drawn.append(x.size)
            top = int(np.argmax(x))
            gaps = np.delete(x, top) - x[top]
            return np.zeros(1), gaps

        def evaluate(series, data, grid):
            return _curves(data[0], data[1], grid)  # standard scores: beta * s on the grid

        _solve_series(ser, contexts, draw, evaluate, level, batches)
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
        prov = _prov(root_seed, spawn_key(REM_STREAM, nv), contexts, params)
        out.append(_row(sres, nv, contexts, level, prov))
    return pd.DataFrame(out)


# =========================================================================== Gaussian tokens
def _token_theory(n: int, d: int, rho: float, k: int, noise: float, level: float):
    """Prediction and slope of one token series: the exact finite-d theory for ``k = 1``
    (:func:`attnscale.layer.finite_d.critical_beta`, slope by a central difference of
    :func:`attnscale.layer.finite_d.self_weight`), the first-order ties formula otherwise."""
    if k == 1:
        b = float(finite_d.critical_beta(n, d, rho))
        lo, hi = finite_d.self_weight(n, d, rho, [b * (1 - 1e-3), b * (1 + 1e-3)])
        return b, float((hi - lo) / (2e-3 * b))
    s2 = finite_d.first_order_variance(d, rho)
    b = float(sr.ties_critical_beta(n, k, 1.0 - rho, s2=s2, copy_noise=noise, d=d, level=level))
    return b, _annealed_slope(n, d, rho, k, noise, b)


def _annealed_group_weight(n, d, rho, k, noise, beta) -> float:
    s2 = finite_d.first_order_variance(d, rho)
    k_eff = 1.0 + (k - 1) * sr.copy_factor(beta, noise, d)
    bulk = (n - k) * math.exp(-beta * (1.0 - rho) + 0.5 * beta * beta * s2)
    return k_eff / (k_eff + bulk)


def _annealed_slope(n, d, rho, k, noise, b) -> float:
    h = 1e-4 * b
    up = _annealed_group_weight(n, d, rho, k, noise, b + h)
    dn = _annealed_group_weight(n, d, rho, k, noise, b - h)
    return (up - dn) / (2.0 * h)


def _token_series(regime, n, d, rho, ties, extra_k, level, grid_points) -> list[dict]:
    specs = [(regime, f"finite_d d={d}" if regime == "finite_d" else regime, 1, np.nan, 0.0)]
    for kappa, noise in ties:
        name = f"ties kappa={kappa:g}" + (f" noise={noise:g}" if noise > 0 else "")
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
        dr = sr.gaussian_token_draw(n, d, rho, rng, copies=kmax - 1)
        return dr["others"] - 1.0, dr["copy_a"], dr["copy_w"]

    def evaluate(s, data, grid):
        others, a, w = data
        k = s["k"]
        cc = sr.copy_cosines(s["copy_noise"], a[: k - 1], w[: k - 1], d)
        group = np.concatenate([[0.0], cc - 1.0])
        return _curves(group, others[k - 1 :], grid)

    _solve_series(series, contexts, draw, evaluate, level, batches)


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
    on the prediction (:func:`attnscale.layer.finite_d.critical_beta` for the query alone, the
    first-order :func:`attnscale.layer.score_regimes.ties_critical_beta` for copies).

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
        As in :func:`rem_points`.
    ties : sequence of [kappa, copy_noise], optional
        Near-tie series, ``0 < kappa < 1``, ``copy_noise >= 0``.

    Returns
    -------
    pandas.DataFrame
        One row per ``(d, n, series)``; ``keys_drawn = n``.
    """
    if regime not in ("gap", "finite_d"):
        raise ValueError(f"regime must be 'gap' or 'finite_d', got {regime!r}")
    ns = _n_list(n)
    ds = [check_int("d", v, minimum=3, maximum=4096) for v in np.atleast_1d(d).tolist()]
    rho = check_real("rho", rho, low=0.0, high=1.0, high_open=True)
    contexts, level, grid_points, batches = _common(contexts, level, grid_points, batches)
    ties = _ties_series(ties)
    out = []
    for dv in ds:
        for nv in ns:
            series = _token_series(regime, nv, dv, rho, ties, (), level, grid_points)
            _simulate_tokens(nv, dv, rho, series, contexts, level, batches, root_seed)
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
                out.append(_row(s, nv, contexts, level, _prov(root_seed, key, contexts, params)))
    return pd.DataFrame(out)


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
    (:func:`attnscale.layer.score_regimes.ties_for_shift`) and the simulated ``beta*`` for the query
    alone and with ``floor(k)`` and ``ceil(k)`` exact copies, from the same rows. The simulated
    shift ``1 - beta*_k / beta*_1`` gets a paired delta-method SE (per-row influence values).

    Returns
    -------
    pandas.DataFrame
        One row per simulated ``k``: the :func:`token_points` columns plus ``k_theory`` (the
        real-valued ``k`` for ``shift``), ``shift_sim``, ``shift_sim_se``, ``shift_theory``
        (:func:`attnscale.layer.score_regimes.ties_shift` at that ``k``).
    """
    n = check_int("n", n, minimum=3)
    d = check_int("d", d, minimum=3, maximum=4096)
    rho = check_real("rho", rho, low=0.0, high=1.0, high_open=True)
    shift = check_real("shift", shift, low=0.0, high=1.0, low_open=True, high_open=True)
    contexts, level, grid_points, batches = _common(contexts, level, grid_points, batches)
    k_real = float(sr.ties_for_shift(n, d, rho, shift=shift, level=level))
    if not math.isfinite(k_real):
        raise ValueError(f"no group size k < n lowers beta* by shift={shift:g} at n={n}")
    ks = sorted({int(math.floor(k_real)), int(math.ceil(k_real))} - {1})
    series = _token_series("read_off", n, d, rho, [], ks, level, grid_points)
    series[0]["series"] = "read_off k=1"
    _simulate_tokens(n, d, rho, series, contexts, level, batches, root_seed)
    base = series[0]["result"]
    out = []
    for s in series:
        r = s["result"]
        ratio = r["beta_star"] / base["beta_star"]
        infl = r["influence"] / base["beta_star"] - ratio * base["influence"] / base["beta_star"]
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
        row = _row(s, n, contexts, level, _prov(root_seed, key, contexts, params))
        row.update(
            k_theory=k_real,
            shift_target=shift,
            shift_sim=1.0 - ratio,
            shift_sim_se=float(infl.std(ddof=1) / math.sqrt(contexts)) if s["k"] > 1 else 0.0,
            shift_theory=float(sr.ties_shift(n, s["k"], d, rho, level=level)),
        )
        out.append(row)
    return pd.DataFrame(out)


# =========================================================================== theory
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
    (``role = "point"``; the integer ``k`` of :func:`ties_k`).

    Kinds per regime: ``gap`` -- ``prediction`` (exact finite-d theory at ``gap_d``,
    :func:`attnscale.layer.finite_d.critical_beta`), ``leading`` (``ln(n - 1) / (1 - rho)``, Paper A);
    ``ties`` -- ``prediction`` (first-order finite-d group formula with the copies' factor,
    :func:`attnscale.layer.score_regimes.ties_critical_beta`), ``leading`` (``s2 = 0``, copies at their
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
    pts = _n_list(n)
    line = sorted({int(round(v)) for v in check_vector("theory_n", theory_n, low=3.0)})
    gap_d = check_int("gap_d", gap_d, minimum=3, maximum=4096)
    gap_rho = check_real("gap_rho", gap_rho, low=0.0, high=1.0, high_open=True)
    ties = _ties_series(ties)
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
            "ln_n_breakdown": sr.log_n_breakdown(gap_d, gap_rho),
        }
        rows += _theory_rows(
            "gap",
            "gap",
            "prediction",
            role,
            ns,
            sr.finite_d_critical_beta(na, gap_d, gap_rho),
            **base,
        )
        rows += _theory_rows(
            "gap",
            "gap",
            "leading",
            role,
            ns,
            sr.gap_critical_beta(na, gap_rho, level=level),
            **base,
        )
        for kappa, noise in ties:
            name = f"ties kappa={kappa:g}" + (f" noise={noise:g}" if noise > 0 else "")
            k = na**kappa if role == "line" else np.array([ties_k(v, kappa) for v in ns], float)
            k = np.clip(k, 1.0, na - 1.0)
            cols = {**base, "k": k, "kappa": kappa, "copy_noise": noise}
            pred = sr.ties_critical_beta(
                na, k, delta, s2=s2, copy_noise=noise, d=gap_d, level=level
            )
            gap_c = 1.0 - 1.0 / math.sqrt(1.0 + noise * noise)
            lead = sr.ties_critical_beta(na, k, delta, copy_gap=gap_c, level=level)
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
            b = sr.rem_critical_beta(na, s=rem_s, level=level, method=method)
            rows += _theory_rows("rem", "rem", kind, role, ns, b, **rcols)
        rows += _theory_rows(
            "rem", "rem", "freezing", role, ns, sr.rem_freezing_beta(na, rem_s), **rcols
        )
        for d in fds:
            cols = {
                "d": d,
                "rho": fd_rho,
                "s": np.nan,
                "k": 1.0,
                "kappa": np.nan,
                "copy_noise": 0.0,
                "ln_n_breakdown": sr.log_n_breakdown(d, fd_rho),
            }
            name = f"finite_d d={d}"
            rows += _theory_rows(
                "finite_d",
                name,
                "prediction",
                role,
                ns,
                sr.finite_d_critical_beta(na, d, fd_rho),
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
                sr.gap_critical_beta(na, fd_rho, level=level),
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
    ``shift`` (:func:`attnscale.layer.score_regimes.ties_for_shift`), the shift of the integer sizes
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
        k = float(sr.ties_for_shift(n, d, rho, shift=shift, copy_cosine=float(c), level=level))
        kc = int(math.ceil(k)) if math.isfinite(k) else -1
        kf = int(math.floor(k)) if math.isfinite(k) else -1

        def at(kk, c=c):
            if kk < 1:
                return np.nan
            return float(sr.ties_shift(n, kk, d, rho, copy_cosine=float(c), level=level))

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


# =========================================================================== summary
SUMMARY_COLUMNS = [
    "regime",
    "series",
    "kind",
    "role",
    "n",
    "d",
    "rho",
    "s",
    "k",
    "kappa",
    "copy_noise",
    "beta",
    "beta_se",
    "beta_se_batches",
    "gamma",
    "gamma_se",
    "beta_pred",
    "z_pred",
    "within_2se",
    "beta_leading",
    "rel_dev_leading",
    "contexts",
    "keys_drawn",
    "ln_n_breakdown",
    *PROV,
]


def critical_scale_table(*, simulations, theory, read_off_sim, read_off_theory) -> dict:
    """The summary behind the figure (docs/regimes.md#results): one tidy table of simulated and
    predicted ``beta*(n)`` and the practical-reading table.

    Simulation rows (``kind = "simulation"``) carry the series' prediction at the same ``n`` and
    ``k`` (``beta_pred``, the theory table's ``role = "point"``, ``kind = "prediction"`` row),
    ``z_pred = (beta - beta_pred) / beta_se``, ``within_2se``, and the leading-order value with the
    relative deviation from it. Theory rows keep their ``kind`` and ``role``.

    Parameters
    ----------
    simulations : list of pandas.DataFrame
        Tables of :func:`rem_points` and :func:`token_points`.
    theory : pandas.DataFrame
        :func:`theory_table`.
    read_off_sim, read_off_theory : pandas.DataFrame
        :func:`read_off_points` and :func:`read_off_theory`.

    Returns
    -------
    dict
        ``table`` (columns :data:`SUMMARY_COLUMNS`) and ``read_off`` (the theory rows with
        ``source = "theory"``, then the simulated rows with ``source = "simulation"``).
    """
    sims = pd.concat(
        list(simulations) if not isinstance(simulations, pd.DataFrame) else [simulations],
        ignore_index=True,
    )
    th = theory
    pts = th[th["role"] == "point"]
    key = ["series", "n", "k"]

    def lookup(kind):
        sub = pts[pts["kind"] == kind][key + ["beta"]].rename(columns={"beta": kind})
        return (
            sims[key]
            .astype({"n": float, "k": float})
            .merge(sub.astype({"n": float, "k": float}), on=key, how="left")[kind]
            .to_numpy()
        )

    pred, lead = lookup("prediction"), lookup("leading")
    if np.any(~np.isfinite(pred)):
        missing = sims.loc[~np.isfinite(pred), key].to_dict("records")
        raise ValueError(f"the theory table has no prediction for simulated points {missing}")
    sim = pd.DataFrame(
        {
            "regime": sims["regime"],
            "series": sims["series"],
            "kind": "simulation",
            "role": "point",
            "n": sims["n"].astype(float),
            "d": sims["d"],
            "rho": sims["rho"],
            "s": sims["s"],
            "k": sims["k"].astype(float),
            "kappa": sims["kappa"],
            "copy_noise": sims["copy_noise"],
            "beta": sims["beta_sim"],
            "beta_se": sims["beta_sim_se"],
            "beta_se_batches": sims["beta_sim_se_batches"],
            "gamma": sims["gamma_sim"],
            "gamma_se": sims["gamma_sim_se"],
            "beta_pred": pred,
            "z_pred": (sims["beta_sim"] - pred) / sims["beta_sim_se"],
            "within_2se": np.abs(sims["beta_sim"] - pred) <= 2.0 * sims["beta_sim_se"],
            "beta_leading": lead,
            "rel_dev_leading": sims["beta_sim"] / lead - 1.0,
            "contexts": sims["contexts"],
            "keys_drawn": sims["keys_drawn"],
            "ln_n_breakdown": np.nan,
            **{c: sims[c] for c in PROV},
        }
    )
    thr = th.assign(
        beta_se=np.nan,
        beta_se_batches=np.nan,
        gamma_se=np.nan,
        beta_pred=np.nan,
        z_pred=np.nan,
        within_2se=np.nan,
        beta_leading=np.nan,
        rel_dev_leading=np.nan,
        contexts=np.nan,
        keys_drawn=np.nan,
    )
    for c in PROV:
        if c not in thr.columns:
            thr[c] = np.nan
    table = pd.concat([sim, thr[SUMMARY_COLUMNS]], ignore_index=True)[SUMMARY_COLUMNS]
    ro = pd.concat(
        [read_off_theory.assign(source="theory"), read_off_sim.assign(source="simulation")],
        ignore_index=True,
    )
    return {"table": table, "read_off": ro}
