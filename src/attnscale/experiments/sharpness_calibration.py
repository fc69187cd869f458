"""Calibration of the crossing SEs of the sharpness figure (ours): over many independent
experiments of ``T`` token draws each, the spread of a width or centre divided by the mean of its
delta-method SE (docs/long-context.md#calibration-of-the-crossing-ses).

One experiment is the sharpness family's estimate at one ``(d, n, rho)``: ``T`` Gaussian draws of
Paper A's tokens (the common component ``z_0`` Gaussian), each read at its own ``rho_hat`` on the
grid ``x``, the three observables from ``rows`` sampled query rows and one tangent probe
(:func:`attnscale.layer.sampled.observables.observables_sampled`), reduced by
:func:`attnscale.core.crossings.crossing_summary`. A calibrated SE gives a ratio near 1; the
ratio's own SE is the delta method of ``sd / mean(SE)``: relative variance ``1/(2(S - 1))`` for the
sample standard deviation of ``S`` experiments (Gaussian) plus that of the mean SE.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.crossings import crossing_summary
from attnscale.core.seeding import spawn_key, value_id
from attnscale.core.validation import check_int, check_vector
from attnscale.layer import theory
from attnscale.layer.observables import REGISTRY
from attnscale.layer.sampled.observables import observables_sampled
from attnscale.layer.tokens import from_draw, gaussian_draw, mean_cosine
from attnscale.pipeline.io import provenance_columns, with_job_provenance_all

from .sharpness import OBSERVABLES

__all__ = ["STREAM", "experiment", "calibration"]

#: The stream of the calibration's draws.
STREAM = "sharpness/calibration"


def experiment(n: int, d: int, rho: float, draws: int, rows: int, x, seq) -> dict:
    """One experiment: ``draws`` token draws from the children of the ``SeedSequence`` ``seq``,
    their normalised curves on ``x`` and, per observable, the dict of
    :func:`attnscale.core.crossings.crossing_summary` (width, centre, their SEs, the crossings'
    correlation over draws)."""
    x = np.asarray(x, dtype=float)
    curves = {o: [] for o in OBSERVABLES}
    critical = {o: [] for o in OBSERVABLES}
    for child in seq.spawn(draws):
        rng = np.random.default_rng(child)
        z0, Z = gaussian_draw(n, d, rng)
        X = from_draw(z0, Z, rho)
        rho_hat = mean_cosine(X)
        betas = x * theory.gamma_c(rho_hat) * np.log(n)
        obs = observables_sampled(X, betas, 0.0, rows=min(rows, n), rng=rng, probes=1)
        for o in REGISTRY.values():
            curves[o.name].append(o.step(o.sampled_estimate(obs, X, "probe")[0]))
            critical[o.name].append(o.critical(rho_hat if o.centre_per_draw else rho))
    out = {}
    for o in REGISTRY.values():
        lv = critical[o.name]
        centre = np.array(lv) if o.centre_per_draw else lv[0]
        out[o.name] = crossing_summary(x, np.array(curves[o.name]), centre_level=centre)
    return out


def calibration(
    *, d: int, n: int, rho: float, draws: int, rows: int, experiments: int, x, root_seed: int
) -> pd.DataFrame:
    """Entry of rule ``sharpness_calibration``: ``experiments`` independent experiments
    (:func:`experiment`) at one ``(d, n, rho)``; one row per observable and quantity (width,
    centre) with the spread over experiments, the mean SE, their ratio and its SE, and the mean
    correlation of the two crossings of a width (docs/long-context.md#calibration-of-the-crossing-ses).

    Parameters
    ----------
    d, n : int
        Dimension (``>= 2``) and context length (``>= 2``).
    rho : float
        Nominal correlation in ``(0, 1)``.
    draws : int
        Draws per experiment, ``>= 2``.
    rows : int
        Sampled query rows per draw, ``>= 2`` (``n`` if larger).
    experiments : int
        Independent experiments, ``>= 3``.
    x : sequence of float
        Increasing grid of ``gamma / gamma_c(rho_hat)``, every value ``> 0``.
    root_seed : int

    Returns
    -------
    pandas.DataFrame
    """
    d = check_int("d", d, minimum=2)
    n = check_int("n", n, minimum=2)
    draws = check_int("draws", draws, minimum=2)
    rows = check_int("rows", rows, minimum=2)
    S = check_int("experiments", experiments, minimum=3)
    if not (0.0 < rho < 1.0):
        raise ValueError(f"rho must be in (0, 1), got {rho!r}")
    x = check_vector("x", x, low=0.0, low_open=True)
    if np.any(np.diff(x) <= 0):
        raise ValueError(f"x must be increasing, got {x.tolist()}")
    key = spawn_key(STREAM, n, d, value_id(rho), draws, rows)
    root = np.random.SeedSequence(root_seed, spawn_key=key)
    res = [experiment(n, d, rho, draws, rows, x, s) for s in root.spawn(S)]
    out = []
    for o in OBSERVABLES:
        for q in ("width", "centre"):
            v = np.array([r[o][q] for r in res])
            se = np.array([r[o][f"{q}_se"] for r in res])
            ok = np.isfinite(v) & np.isfinite(se)
            v, se = v[ok], se[ok]
            m = int(ok.sum())
            spread = float(v.std(ddof=1)) if m > 1 else np.nan
            mean_se = float(se.mean()) if m else np.nan
            ratio = spread / mean_se
            rel = np.sqrt(1.0 / (2.0 * (m - 1)) + se.var(ddof=1) / (m * mean_se**2))
            corr = np.array([r[o]["corr"] for r in res], dtype=float)
            out.append(
                {
                    "d": d,
                    "n": n,
                    "rho": rho,
                    "draws": draws,
                    "rows": min(rows, n),
                    "experiments": S,
                    "used": m,
                    "observable": o,
                    "quantity": q,
                    "mean": float(v.mean()),
                    "spread": spread,
                    "mean_se": mean_se,
                    "ratio": ratio,
                    "ratio_se": float(ratio * rel),
                    "corr_mean": float(np.nanmean(corr)) if q == "width" else np.nan,
                    **provenance_columns(None, key, {}, only=("spawn_key",)),
                }
            )
    return with_job_provenance_all(pd.DataFrame(out))
