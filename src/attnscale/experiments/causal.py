"""Compute entries of the causal-mask figure (ours): lambda over (rho, gamma) under a causal mask
with a global and a per-position scaling, and the self-weight ``A_ii`` against position.

Implements ``docs/realistic-attention.md#causal-mask``. Scalings (``i`` = 1-indexed position,
the number of keys query ``i`` sees): *global* ``beta = gamma ln n`` for every row, *per-position*
``beta_i = gamma ln i`` (``beta_1 = 0``; row 1 sees one key, ``A_11 = 1``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key
from attnscale.core.validation import check_int, check_vector
from attnscale.experiments.summaries import mean_se_table
from attnscale.layer import theory, tokens
from attnscale.layer.causal import attention as causal
from attnscale.layer.causal import theory as causal_theory
from attnscale.layer.dense import attention
from attnscale.pipeline.io import provenance_columns, with_job_provenance

__all__ = ["causal_lambda", "causal_self_weight", "causal_summary"]

#: Random stream of the causal experiments' Gaussian draws (one per (n, d, trial); every rho
#: shares it: common random numbers, as for Figure 1).
STREAM = "realistic/causal_tokens"
SCALINGS = ("global", "position")


def _draw(n: int, d: int, trial: int, root_seed: int):
    key = spawn_key(STREAM, n, d, trial)
    z0, Z = tokens.gaussian_draw(n, d, job_rng(root_seed, key))
    return key, z0, Z


def scaling_rows(scaling: str, gammas, n: int) -> np.ndarray:
    """``(m, n)`` per-row betas: ``gamma ln n`` (global) or ``gamma ln i`` (position)."""
    g = np.asarray(gammas, dtype=float)[:, None]
    if scaling == "global":
        return g * np.full((1, n), np.log(n))
    if scaling == "position":
        return g * np.log(np.arange(1, n + 1, dtype=float))[None, :]
    raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")


def causal_lambda(*, n: int, d: int, rhos, gammas, trial: int, root_seed: int) -> pd.DataFrame:
    """Entry of the causal lambda map: one Gaussian draw, every ``rho`` and ``gamma``, both
    scalings, plus the point ``gamma = gamma_c(rho_hat)`` (``kind = "critical"``).

    Each row carries the exact causal simplex lambda at the draw's ``rho_hat``
    (:func:`attnscale.layer.causal.theory.causal_simplex_lambda`) and, for comparison, the bidirectional
    finite-n simplex lambda at ``beta = gamma ln n`` (:func:`attnscale.layer.theory.simplex_lambda`).
    """
    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=1)
    rhos = check_vector("rhos", rhos, low=0.0, low_open=True)
    gammas = check_vector("gammas", gammas, low=0.0)
    if np.any(rhos >= 1.0):
        raise ValueError("every entry of rhos must be < 1")
    key, z0, Z = _draw(n, d, trial, root_seed)
    prov = provenance_columns(
        root_seed, key, {"n": n, "d": d, "rhos": rhos, "gammas": gammas, "trial": trial}
    )
    records = []
    for rho in rhos:
        X = tokens.from_draw(z0, Z, rho)
        rho_hat, q_hat = tokens.mean_cosine(X), tokens.mean_sq_norm(X)
        gc = theory.gamma_c(rho_hat)
        gam = np.append(gammas, gc)
        kinds = ["grid"] * gammas.size + ["critical"]
        grid = np.vstack([scaling_rows(s, gam, n) for s in SCALINGS])
        lam = attention.angle_ratio_grid(X, grid, causal=True)
        for k, (s, g, kind) in enumerate(
            (s, g, kind) for s in SCALINGS for g, kind in zip(gam, kinds, strict=True)
        ):
            records.append(
                {
                    "scaling": s,
                    "kind": kind,
                    "n": n,
                    "d": d,
                    "trial": trial,
                    "rho": float(rho),
                    "rho_hat": rho_hat,
                    "q_hat": q_hat,
                    "gamma": float(g),
                    "gamma_over_gamma_c": float(g) / gc,
                    "lambda": float(lam[k]),
                    "lambda_simplex_causal": causal_theory.causal_simplex_lambda(rho_hat, grid[k]),
                    "lambda_simplex_bidirectional": theory.simplex_lambda(
                        n, rho_hat, g * np.log(n)
                    ),
                }
            )
    df = pd.DataFrame(records)
    for k, v in prov.items():
        df[k] = v
    return df


def position_bins(n: int, bins: int) -> np.ndarray:
    """Edges (1-indexed, integers) of about ``bins`` log-spaced position bins covering ``1..n``;
    the first positions get bins of their own."""
    edges = np.unique(np.round(np.geomspace(1, n + 1, bins + 1)).astype(int))
    return edges


def causal_self_weight(
    *, n: int, d: int, rhos, gamma_factors, trial: int, root_seed: int, bins: int
) -> pd.DataFrame:
    """Entry of the self-weight panel: ``A_ii`` against position ``i`` under a causal mask at
    ``gamma = f gamma_c(rho_hat)`` for each factor ``f``, both scalings, averaged in log-spaced
    position bins, with the simplex prediction ``1 / (1 + (i - 1) e^{beta_i (rho_hat - 1)})``
    averaged over the same rows (``docs/realistic-attention.md#causal-mask``)."""
    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=1)
    bins = check_int("bins", bins, minimum=1)
    rhos = check_vector("rhos", rhos, low=0.0, low_open=True)
    factors = check_vector("gamma_factors", gamma_factors, low=0.0, low_open=True)
    if np.any(rhos >= 1.0):
        raise ValueError("every entry of rhos must be < 1")
    key, z0, Z = _draw(n, d, trial, root_seed)
    prov = provenance_columns(
        root_seed,
        key,
        {"n": n, "d": d, "rhos": rhos, "gamma_factors": factors, "trial": trial, "bins": bins},
    )
    edges = position_bins(n, bins)
    records = []
    for rho in rhos:
        X = tokens.from_draw(z0, Z, rho)
        rho_hat = tokens.mean_cosine(X)
        gc = theory.gamma_c(rho_hat)
        grid = np.vstack([scaling_rows(s, factors * gc, n) for s in SCALINGS])
        sw = causal.self_weights(X, grid, causal=True)
        labels = [(s, f) for s in SCALINGS for f in factors]
        for k, (s, f) in enumerate(labels):
            pred = causal_theory.causal_simplex_self_weight(rho_hat, grid[k])
            for lo, hi in zip(edges[:-1], edges[1:], strict=True):
                sl = slice(lo - 1, hi - 1)
                records.append(
                    {
                        "scaling": s,
                        "n": n,
                        "d": d,
                        "trial": trial,
                        "rho": float(rho),
                        "rho_hat": rho_hat,
                        "gamma_factor": float(f),
                        "gamma": float(f * gc),
                        "pos_lo": int(lo),
                        "pos_hi": int(hi - 1),
                        "position": float(np.exp(np.mean(np.log(np.arange(lo, hi))))),
                        "self_weight": float(sw[k, sl].mean()),
                        "self_weight_simplex": float(pred[sl].mean()),
                    }
                )
    df = pd.DataFrame(records)
    for k, v in prov.items():
        df[k] = v
    return df


def causal_summary(*, data, self_weight) -> dict:
    """Figure data of the causal-mask figure: the per-draw tables of :func:`causal_lambda` and
    :func:`causal_self_weight` reduced over draws (docs/realistic-attention.md#causal-mask).

    Returns
    -------
    dict
        ``"lambda_summary"``: the grid rows' mean and standard error over draws of ``lambda`` and the
        draw means of the simplex predictions and of ``rho_hat`` per ``(scaling, n, d, rho,
        gamma)``, with the critical rows (one per draw, ``gamma = gamma_c(rho_hat)``) appended
        unreduced (``kind = "critical"``); ``"self_weight_summary"``: mean and standard error over draws
        of ``A_ii`` and the draw mean of its simplex value per ``(scaling, n, d, rho,
        gamma_factor, position)``. Standard errors are over draws
        (:func:`attnscale.experiments.summaries.mean_se_table`).
    """
    lam = pd.concat(data, ignore_index=True) if isinstance(data, list) else data
    sw = pd.concat(self_weight, ignore_index=True) if isinstance(self_weight, list) else self_weight
    keys = ["scaling", "n", "d", "rho", "gamma"]
    grid = lam[lam["kind"] == "grid"]
    lam_out = mean_se_table(
        grid.groupby(keys, sort=True),
        ["lambda", "lambda_simplex_causal", "lambda_simplex_bidirectional", "rho_hat"],
    ).assign(kind="grid")
    crit = lam[lam["kind"] == "critical"][[*keys, "trial", "rho_hat", "lambda"]].rename(
        columns={"lambda": "lambda_mean", "rho_hat": "rho_hat_mean"}
    )
    lam_out = pd.concat([lam_out, crit.assign(kind="critical", trials=1)], ignore_index=True)
    sw_out = mean_se_table(
        sw.groupby(["scaling", "n", "d", "rho", "gamma_factor", "position"], sort=True),
        ["self_weight", "self_weight_simplex"],
    )
    return {
        "lambda_summary": with_job_provenance(lam_out),
        "self_weight_summary": with_job_provenance(sw_out),
    }
