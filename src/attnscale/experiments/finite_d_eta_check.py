"""eta's mean field against the exact eta of single token draws, paired draw by draw
(docs/finite-d.md#mean-field-eta-against-the-exact-eta).

One job per configured ``(d, rho)`` point (rule ``finite_d_eta_check``): for each of ``draws``
Paper A token draws of ``(n, d)`` (:func:`attnscale.experiments.paper_a_tokens.draw_tokens`, the
draws of Figures 1 and 2 at the same ``(n, d, trial)``), the exact eta
(:func:`attnscale.layer.dense.eta_exact.eta_exact_grid`, no Monte Carlo error within a draw) and
the mean field conditioned on the draw's own ``||z_0||``
(:func:`attnscale.layer.finite_d.eta.eta_mean_field` with ``r0``), at
``beta = x ln n / (1 - rho)`` (nominal ``rho``). The difference of the two is a paired
difference per draw: its mean over draws estimates the mean field's bias, with the standard
error of the mean over the draws (docs/pipeline.md#statistics). The reduction is done by the
findings (:mod:`attnscale.experiments.findings.finite_d_eta`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.validation import check_int, check_vector
from attnscale.layer.dense.eta_exact import eta_exact_grid
from attnscale.layer.finite_d.eta import eta_mean_field
from attnscale.pipeline.io import provenance_columns

from .paper_a_tokens import draw_tokens, tokens_at

__all__ = ["eta_check"]


def eta_check(*, n: int, d: int, rho: float, x, draws: int, root_seed: int) -> pd.DataFrame:
    """Entry of rule ``finite_d_eta_check``: the exact eta and eta's mean field of every draw of
    one ``(n, d, rho)`` on the grid ``x`` (docs/finite-d.md#mean-field-eta-against-the-exact-eta).

    Parameters
    ----------
    n : int
        Tokens, ``2 <= n <= 8192`` (the exact eta is dense: ``O(n^2 d + n^3)`` per beta).
    d : int
        Dimension, ``3 <= d <= 4096`` (the mean field's range).
    rho : float
        Nominal correlation, ``0 <= rho < 1``.
    x : sequence of float
        ``beta = x ln n / (1 - rho)``, every ``x > 0``, increasing.
    draws : int
        Token draws ``0 .. draws - 1``, ``>= 2`` (for a standard error).
    root_seed : int

    Returns
    -------
    pandas.DataFrame
        One row per ``(trial, x)``: ``d, n, rho, trial, r0`` (the draw's ``||z_0||``),
        ``rho_hat, x, beta, eta_exact, eta_mean_field, diff`` (exact minus mean field) and the
        provenance columns (the spawn keys of the token draws).
    """
    n = check_int("n", n, minimum=2, maximum=8192)
    d = check_int("d", d, minimum=3, maximum=4096)
    draws = check_int("draws", draws, minimum=2)
    rho = float(rho)
    if not (np.isfinite(rho) and 0.0 <= rho < 1.0):
        raise ValueError(f"rho must be in [0, 1), got {rho!r}")
    x = check_vector("x", x, low=0.0, low_open=True)
    if np.any(np.diff(x) <= 0):
        raise ValueError(f"x must be increasing, got {x.tolist()}")
    betas = x * np.log(n) / (1.0 - rho)
    # at rho = 0 the tokens do not contain z_0: one mean field serves every draw
    shared = eta_mean_field(n, d, rho, betas) if rho == 0.0 else None
    tables, keys = [], []
    for trial in range(draws):
        draw = draw_tokens(n=n, d=d, trial=trial, root_seed=root_seed)
        keys.append(tuple(int(v) for v in draw["spawn_key"]))
        r0 = float(np.linalg.norm(draw["z0"]))
        tok = tokens_at(draw, rho)
        exact = eta_exact_grid(tok["X"], betas, backend="numpy")
        mf = shared if shared is not None else eta_mean_field(n, d, rho, betas, r0=r0)
        tables.append(
            pd.DataFrame(
                {
                    "d": d,
                    "n": n,
                    "rho": rho,
                    "trial": trial,
                    "r0": r0,
                    "rho_hat": tok["rho_hat"],
                    "x": x,
                    "beta": betas,
                    "eta_exact": exact,
                    "eta_mean_field": mf,
                    "diff": exact - mf,
                }
            )
        )
    out = pd.concat(tables, ignore_index=True)
    params = {"n": n, "d": d, "rho": rho, "x": x.tolist(), "draws": draws}
    for col, val in provenance_columns(root_seed, keys, params).items():
        out[col] = val
    return out
