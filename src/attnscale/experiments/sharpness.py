"""Transition sharpness against context length (ours): the self-weight, lambda and eta of Paper A's
layer against ``x = gamma / gamma_c(rho_hat)`` for one ``(n, d)``, from a sample of query rows
(docs/long-context.md#transition-sharpness-against-context-length).

One job per ``(d, n)``. For each ``rho`` and trial the Gaussian draw of Paper A's tokens
(:func:`attnscale.experiments.paper_a_tokens.draw_tokens`, the same draws as Figures 1 and 2 at
the same ``(n, d, trial)``) is made inside the job and never written; the observables come from
one row sample per draw (:func:`attnscale.layer.sampled.observables.observables_sampled`) at
``beta = x gamma_c(rho_hat) ln n``: each draw is read at its own realised ``rho_hat``, so that the
common component ``z_0``, which moves ``rho_hat`` from draw to draw, does not smear the curves
(the conditioning of docs/paper-a.md#gaussian-near-simplex-tokens). Each row of the table also
carries the finite-d theory of the draw at its ``||z_0||``: the mean self-weight
(:func:`attnscale.layer.finite_d.self_weight_given`) and the critical point
(:func:`attnscale.layer.finite_d.critical_beta_given`), and the unconditioned critical point, in
units of ``x``. The reduction to curves, widths
and centres is :mod:`attnscale.experiments.sharpness_summary`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key, value_id
from attnscale.core.validation import check_int, check_vector
from attnscale.layer import finite_d, theory
from attnscale.layer.observables import REGISTRY
from attnscale.layer.sampled.observables import eta_normalised, observables_sampled
from attnscale.pipeline.io import provenance_columns, with_job_provenance_all
from attnscale.pipeline.runtime import Progress

from .paper_a_tokens import draw_tokens, tokens_at

__all__ = ["ROWS_STREAM", "OBSERVABLES", "eta_normalised", "draw_curves", "sharpness_curves"]

#: Stream of the row samples and probes (the tokens are Paper A's draws).
ROWS_STREAM = "sharpness/rows"
#: The observables of the figure (the registry's), each read as its normalised rising step.
OBSERVABLES = tuple(REGISTRY)


def draw_curves(
    tok: dict, r0: float, x, rows: int, probes: int, rng, *, route: str = "probe"
) -> pd.DataFrame:
    """The three observables of one token draw on the grid ``x`` (one row sample), with their
    within-draw standard errors, and the draw's finite-d self-weight and critical point
    (docs/long-context.md#transition-sharpness-against-context-length).

    Parameters
    ----------
    tok : dict
        Tokens of one draw (:func:`attnscale.experiments.paper_a_tokens.tokens_at`).
    r0 : float
        The draw's ``||z_0||``.
    x : array_like
        ``gamma / gamma_c(rho_hat)`` grid.
    rows : int
        Sampled query rows (``min(rows, n)``; ``n``: all rows, SE 0).
    probes : int
        Tangent probes per row (eta's probe route).
    rng : numpy.random.Generator
        Source of the row sample and the probes.
    route : {"probe", "exact"}, optional
        eta's route (``"exact"``: checks at small n).

    Returns
    -------
    pandas.DataFrame
        One row per grid point.
    """
    X, n, d, rho = tok["X"], tok["n"], tok["d"], tok["rho"]
    rho_hat = tok["rho_hat"]
    x = np.asarray(x, dtype=float)
    gammas = x * theory.gamma_c(rho_hat)
    betas = gammas * np.log(n)
    obs = observables_sampled(X, betas, 0.0, rows=min(rows, n), rng=rng, route=route, probes=probes)
    ctx = {"X": X, "n": n, "d": d, "rho": rho, "betas": betas, "r0": r0, "route": route}
    to_x = (1.0 - rho_hat) / np.log(n)
    cols = {
        "d": d,
        "n": n,
        "rho": rho,
        "trial": tok["trial"],
        "rho_hat": rho_hat,
        "q_hat": tok["q_hat"],
        "r0": r0,
        "x": x,
        "gamma": gammas,
        "beta": betas,
        "m": obs.lam.m,
        "probes": probes if route == "probe" else 0,
    }
    for o in REGISTRY.values():
        cols.update(o.sharpness_columns(obs, ctx))
    for o in REGISTRY.values():
        if o.centre_per_draw:
            cols[f"{o.name}_critical"] = o.critical(rho_hat)
    cols["x_star_given"] = finite_d.critical_beta_given(n, d, rho, r0) * to_x
    cols["x_star_nominal"] = finite_d.critical_beta(n, d, rho) * (1.0 - rho) / np.log(n)
    cols["n_near_pairs"] = obs.lam.n_near_pairs
    cols["n_excluded_pairs"] = obs.lam.n_excluded_pairs
    return pd.DataFrame(cols)


def sharpness_curves(
    *, n: int, d: int, rhos, x, rows: int, probes: int, trials: int, root_seed: int
) -> pd.DataFrame:
    """Entry of rule ``sharpness_curves``: :func:`draw_curves` for every ``rho`` and trial of one
    ``(n, d)`` (docs/long-context.md#transition-sharpness-against-context-length).

    The tokens of trial ``t`` are Paper A's Gaussian draw of ``(n, d, t)``, made here once for every
    ``rho`` and never written (at ``n = 2^20``, ``d = 512`` it is 4 GiB; the job holds the draw and
    one ``rho``'s tokens); the rows and probes
    come from the stream ``sharpness/rows`` with key ``(n, d, rho, t)``.

    Parameters
    ----------
    n, d : int
        Context length (``n >= 2``) and dimension (``3 <= d <= 4096``: the finite-d theory).
    rhos : sequence of float
        Nominal token correlations, each in ``(0, 1)``.
    x : sequence of float
        Increasing grid of ``gamma / gamma_c(rho_hat)``, every value ``> 0``.
    rows : int
        Sampled query rows per draw, ``>= 2`` (``n`` if larger).
    probes : int
        Tangent probes per row, ``>= 1``.
    trials : int
        Token draws per ``rho``, ``>= 1``.
    root_seed : int

    Returns
    -------
    pandas.DataFrame
        One row per ``(rho, trial, x)``.
    """
    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=3, maximum=4096)
    rows = check_int("rows", rows, minimum=2)
    probes = check_int("probes", probes, minimum=1)
    trials = check_int("trials", trials, minimum=1)
    rhos = check_vector("rhos", rhos, low=0.0, low_open=True)
    if np.any(rhos >= 1.0):
        raise ValueError(f"every entry of rhos must be < 1, got {rhos.tolist()}")
    x = check_vector("x", x, low=0.0, low_open=True)
    if np.any(np.diff(x) <= 0):
        raise ValueError(f"x must be increasing, got {x.tolist()}")
    params = {
        "n": n,
        "d": d,
        "rhos": rhos.tolist(),
        "x": x.tolist(),
        "rows": rows,
        "probes": probes,
        "trials": trials,
    }
    tables = {}
    progress = Progress("sharpness (draw, rho)", rhos.size * trials)
    for trial in range(trials):
        # one Gaussian draw serves every rho (it does not depend on rho)
        draw = draw_tokens(n=n, d=d, trial=trial, root_seed=root_seed)
        r0 = float(np.linalg.norm(draw["z0"]))
        for i, rho in enumerate(rhos):
            tok = tokens_at(draw, float(rho))
            key = spawn_key(ROWS_STREAM, n, d, value_id(rho), trial)
            table = draw_curves(tok, r0, x, rows, probes, job_rng(root_seed, key))
            del tok
            for col, val in provenance_columns(root_seed, key, params).items():
                table[col] = val
            tables[i, trial] = table
            progress.step()
        del draw
    return with_job_provenance_all(
        pd.concat([tables[k] for k in sorted(tables)], ignore_index=True)
    )
