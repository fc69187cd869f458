"""Paper B phase diagram of the top weight ``A_(1)`` (docs/paper-b.md): one column of the heat
map per job, the critical Poisson limit per gamma, and the table that joins the columns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key, value_id
from attnscale.core.stats import mean_se
from attnscale.core.validation import check_int, check_vector
from attnscale.pipeline.io import provenance_columns
from attnscale.sphere import keys
from attnscale.sphere import theory as st
from attnscale.sphere.poisson_limit import inv_top_weight_limit_d3, poisson_limit_top_weight

from .paper_b_common import d2q_blocks

__all__ = ["phase_column", "poisson_limit_table", "phase_summary"]

PHASE_STREAM = "paper_b/phase"
LIMIT_STREAM = "paper_b/poisson_limit"


def phase_column(
    *, n: int, d: int, betas, line_gammas, trials: int, method: str, root_seed: int
) -> pd.DataFrame:
    """Mean ``A_(1)`` over ``trials`` contexts of ``n`` uniform keys, for every beta (docs/paper-b.md).

    Rows of ``kind = "grid"`` are the heat-map betas; rows of ``kind = "line"`` are the betas
    ``gamma n^alpha`` for ``gamma`` in ``line_gammas`` (the critical lines of the figure). Each
    context is drawn once and evaluated at every beta (common random numbers along a column of the
    heat map) [choice]; ``q = e_1`` [choice]. ``method`` selects the D2Q sampler
    (:func:`attnscale.sphere.keys.sample_d2q_uniform`). Theory columns: ``gamma = beta / n^alpha``,
    ``m_n``, and the subcritical asymptote ``1 / (Gamma(1 + 1/alpha) m_n)``
    (``beta^2 / (1.5 n)`` for d = 5).
    """
    n = check_int("n", n, minimum=1)
    d = check_int("d", d, minimum=2)
    betas = check_vector("betas", betas, low=0.0, low_open=True)
    line_gammas = check_vector("line_gammas", line_gammas, low=0.0, low_open=True)
    trials = check_int("trials", trials, minimum=2)
    params = {
        "n": n,
        "d": d,
        "betas": betas.tolist(),
        "line_gammas": line_gammas.tolist(),
        "trials": trials,
        "method": method,
    }
    key = spawn_key(PHASE_STREAM, d, n)
    rng = job_rng(root_seed, key)
    alpha = st.alpha_exponent(d)
    all_betas = np.concatenate([betas, line_gammas * n**alpha])
    kind = ["grid"] * betas.size + ["line"] * line_gammas.size
    A = np.concatenate(
        [keys.top_weight_from_d2q(T, all_betas) for T in d2q_blocks(trials, n, d, rng, method)]
    )
    c = st.c_uniform(d)
    m = np.array([st.m_eff(n, b, c, d) for b in all_betas])
    return pd.DataFrame(
        {
            "d": d,
            "n": n,
            "kind": kind,
            "beta": all_betas,
            "gamma": np.concatenate([betas / n**alpha, line_gammas]),
            "trials": trials,
            "method": method,
            "top_weight_mean": A.mean(axis=0),
            "top_weight_se": mean_se(A)[1],
            "m_n": m,
            "subcritical_asymptote": st.subcritical_top_weight_limit(d) / m,
            **provenance_columns(root_seed, key, params),
        }
    )


def poisson_limit_table(
    *, d: int, gammas, trials: int, root_seed: int, line_gammas=()
) -> pd.DataFrame:
    """Critical limit ``E W_(1)`` (and ``E 1/W_(1)``) of ``A_(1)`` at ``beta = gamma n^alpha``, uniform keys.

    Entry of rule ``paper_b_poisson_limit``. Simulated by
    :func:`attnscale.sphere.poisson_limit.poisson_limit_top_weight` [derived], one generator per
    ``(d, gamma)``, for every gamma of ``gammas`` and ``line_gammas`` (the critical lines of the
    phase diagram), sorted, duplicates at 10 significant digits removed. For d = 3 the closed
    form ``1 + C/gamma`` of ``E 1/W_(1)`` is added (docs/paper-b.md).
    """
    d = check_int("d", d, minimum=2)
    gammas = check_vector("gammas", gammas, low=0.0, low_open=True)
    if len(line_gammas):
        line = check_vector("line_gammas", line_gammas, low=0.0, low_open=True)
        gammas = np.array(sorted({float(f"{g:.10g}") for g in [*gammas, *line]}))
    trials = check_int("trials", trials, minimum=2)
    c = st.c_uniform(d)
    records = []
    for g in gammas:
        params = {"d": d, "gamma": float(g), "trials": trials}
        key = spawn_key(LIMIT_STREAM, d, value_id(g))
        w = poisson_limit_top_weight(g, c, d, trials, job_rng(root_seed, key))
        records.append(
            {
                "d": d,
                "gamma": float(g),
                "c": c,
                "trials": trials,
                "top_weight_mean": w.mean(),
                "top_weight_se": mean_se(w)[1],
                "inv_top_weight_mean": (1 / w).mean(),
                "inv_top_weight_se": mean_se(1 / w)[1],
                "inv_top_weight_closed_form": inv_top_weight_limit_d3(g, c) if d == 3 else np.nan,
                "subcritical_asymptote": st.subcritical_top_weight_limit(d)
                * g ** (1 / st.alpha_exponent(d))
                / c,
                **provenance_columns(root_seed, key, params),
            }
        )
    return pd.DataFrame(records)


def phase_summary(*, csvs: list) -> pd.DataFrame:
    """Entry of rule ``paper_b_phase_summary``: the column tables in one, sorted by (kind, n, beta)."""
    df = pd.concat(csvs, ignore_index=True)
    return df.sort_values(["kind", "n", "beta"]).reset_index(drop=True)
