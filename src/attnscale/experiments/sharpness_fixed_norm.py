"""The sharpness family's widths on fixed-norm tokens against the finite-d theory's (ours,
issue 45; docs/long-context.md#the-width-on-fixed-norm-tokens).

The sharpness figure draws the common component ``z_0`` Gaussian and compares its widths with the
finite-d theory at ``||z_0|| = 1`` and the draws' mean ``rho_hat``; the norm's spread then enters
the simulated curves but not the theory's. Here the tokens are the same draws with
``||z_0|| = 1`` (:func:`attnscale.experiments.paper_a_tokens.tokens_at` with
``z0="fixed_norm"``), so simulation and theory are at the same norm and a difference of widths is
the theory's own bias. One job per configured point (rule ``sharpness_fixed_norm``): the curves
of :func:`attnscale.experiments.sharpness.draw_curves`, reduced to widths and centres with their
delta-method SEs and the finite-d theory's by
:func:`attnscale.experiments.sharpness_summary.sharpness_summary`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key, value_id
from attnscale.core.validation import check_int, check_vector
from attnscale.pipeline.io import PROVENANCE_COLUMNS, provenance_columns

from .paper_a_tokens import draw_tokens, tokens_at
from .sharpness import draw_curves
from .sharpness_summary import sharpness_summary

__all__ = ["STREAM", "fixed_norm_transitions"]

#: The stream of the row samples and probes (the tokens are Paper A's draws).
STREAM = "sharpness/fixed_norm"


def fixed_norm_transitions(
    *, n: int, d: int, rho: float, x, rows: int, probes: int, draws: int, root_seed: int
) -> pd.DataFrame:
    """Entry of rule ``sharpness_fixed_norm``: the transitions table
    (:func:`attnscale.experiments.sharpness_summary.transition_rows`, one row per observable) of
    ``draws`` fixed-norm token draws of one ``(n, d, rho)``
    (docs/long-context.md#the-width-on-fixed-norm-tokens).

    Parameters
    ----------
    n, d : int
        Context length (``n >= 2``) and dimension (``3 <= d <= 4096``: the finite-d theory).
    rho : float
        Nominal correlation in ``(0, 1)``.
    x : sequence of float
        Increasing grid of ``gamma / gamma_c(rho_hat)``, every value ``> 0``.
    rows, probes, draws : int
        Sampled query rows per draw (``>= 2``), tangent probes per row (``>= 1``) and token
        draws (Paper A's draws ``0 .. draws - 1``, ``>= 2``).
    root_seed : int

    Returns
    -------
    pandas.DataFrame
        The transitions table with the provenance columns.
    """
    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=3, maximum=4096)
    rows = check_int("rows", rows, minimum=2)
    probes = check_int("probes", probes, minimum=1)
    draws = check_int("draws", draws, minimum=2)
    rho = float(rho)
    if not (np.isfinite(rho) and 0.0 < rho < 1.0):
        raise ValueError(f"rho must be in (0, 1), got {rho!r}")
    x = check_vector("x", x, low=0.0, low_open=True)
    if np.any(np.diff(x) <= 0):
        raise ValueError(f"x must be increasing, got {x.tolist()}")
    tables, keys = [], []
    for trial in range(draws):
        tok = tokens_at(
            draw_tokens(n=n, d=d, trial=trial, root_seed=root_seed), rho, z0="fixed_norm"
        )
        key = spawn_key(STREAM, n, d, value_id(rho), trial)
        keys.append(key)
        tables.append(draw_curves(tok, 1.0, x, rows, probes, job_rng(root_seed, key)))
        del tok
    out = sharpness_summary(data=pd.concat(tables, ignore_index=True))["transitions"]
    out = out.drop(columns=[c for c in PROVENANCE_COLUMNS if c in out.columns])
    params = {"n": n, "d": d, "rho": rho, "x": x.tolist(), "rows": rows, "probes": probes}
    params["draws"] = draws
    for col, val in provenance_columns(root_seed, keys, params).items():
        out[col] = val
    return out
