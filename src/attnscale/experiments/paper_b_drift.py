"""Paper B heat-equation drift (ours): ``beta P_q ATT_n(q)`` against ``grad_S log rho(q)`` for
``rho ∝ exp(x1 x2)`` on S^2 (docs/paper-b.md), one row per context, and its per-beta summary
with the ``n = inf`` quadrature.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key, value_id
from attnscale.core.stats import mean_se
from attnscale.core.validation import check_int, check_real, check_vector
from attnscale.pipeline.io import provenance_columns, provenance_of, with_job_provenance
from attnscale.pipeline.runtime import Progress
from attnscale.sphere import keys
from attnscale.sphere import theory as st
from attnscale.sphere.quadrature import heat_drift_limit_x1x2

__all__ = ["contexts_needed", "heat_drift", "heat_drift_summary"]

HEAT_STREAM = "paper_b/heat_drift"


def contexts_needed(
    beta: float, n: int, q, target_se: float, min_contexts: int, max_contexts: int
) -> int:
    """Contexts so that the ratio's SE is about ``target_se`` [choice, planning only].

    One context gives the ratio ``<beta P_q ATT, g> / |g|^2`` with standard deviation
    ``beta / |g| / sqrt(8 pi n rho(q))`` (d = 3 noise, docs/paper-b.md [derived]); the count is
    clipped to ``[min_contexts, max_contexts]``.
    """
    q = np.asarray(q, dtype=float)
    g = np.linalg.norm(st.score_x1x2(q))
    rho_q = float(st.density_x1x2(q[None, :])[0])
    sd = beta / g / np.sqrt(8 * np.pi * n * rho_q)
    return int(np.clip(np.ceil((sd / target_se) ** 2), min_contexts, max_contexts))


def heat_drift(
    *,
    beta: float,
    n: int,
    q,
    target_se: float,
    min_contexts: int,
    max_contexts: int,
    cut: float,
    root_seed: int,
) -> pd.DataFrame:
    """``beta P_q ATT_n(q)`` against ``grad_S log rho(q)`` at one beta, one row per context (ours).

    Keys from ``rho ∝ exp(x1 x2)`` on S^2 (docs/paper-b.md). Only the keys with
    ``T <= t_c = min(2, (cut + log n) / beta)`` are drawn (exact in law,
    :func:`attnscale.sphere.keys.sample_x1x2_cap`); the others weigh at most ``e^{-cut}/n`` each relative
    to the top key, and the bound on their total relative mass is recorded
    (``neglected_mass_bound``). Columns: ``ratio = <beta P_q ATT, g> / |g|^2``, ``perp`` (signed
    component along ``q x g / |g|``, over ``|g|``), ``normal = beta (<ATT, q> - 1)`` (-> -1/alpha).
    """
    beta = check_real("beta", beta, low=0.0, low_open=True)
    n = check_int("n", n, minimum=2)
    q = check_vector("q", q)
    q = q / np.linalg.norm(q)
    cut = check_real("cut", cut, low=0.0, low_open=True)
    target_se = check_real("target_se", target_se, low=0.0, low_open=True)
    min_contexts = check_int("min_contexts", min_contexts, minimum=2)
    max_contexts = check_int("max_contexts", max_contexts, minimum=min_contexts)
    R = contexts_needed(beta, n, q, target_se, min_contexts, max_contexts)
    t_c = float(min(2.0, (cut + np.log(n)) / beta))
    params = {
        "beta": beta,
        "n": n,
        "q": q.tolist(),
        "target_se": target_se,
        "min_contexts": min_contexts,
        "max_contexts": max_contexts,
        "cut": cut,
    }
    key = spawn_key(HEAT_STREAM, value_id(beta), n)
    rng = job_rng(root_seed, key)
    g = st.score_x1x2(q)
    g2 = float(g @ g)
    e_perp = np.cross(q, g) / np.sqrt(g2)
    records = []
    progress = Progress(f"heat drift contexts (beta = {beta:g})", R)
    for r in range(R):
        if r:
            progress.step()  # context r - 1 is done
        X, T = keys.sample_x1x2_cap(n, q, t_c, rng)
        tmin = T.min()
        w = np.exp(-beta * (T - tmin))
        att = (w @ X) / w.sum()
        tang = beta * (att - (att @ q) * q)
        records.append(
            {
                "beta": beta,
                "n": n,
                "context": r,
                "contexts": R,
                "t_c": t_c,
                "keys_in_cap": T.size,
                "ratio": float(tang @ g) / g2,
                "perp": float(tang @ e_perp) / np.sqrt(g2),
                "normal": float(beta * (att @ q - 1.0)),
                "neglected_mass_bound": float((n - T.size) * np.exp(-beta * (t_c - tmin)) / w.sum())
                if t_c < 2.0
                else 0.0,
            }
        )
    progress.step()
    df = pd.DataFrame(records)
    for k, v in provenance_columns(root_seed, key, params).items():
        df[k] = v
    return df


def heat_drift_summary(*, csvs: list, q, theory_betas) -> dict:
    """Entry of rule ``paper_b_heat_drift_summary``: per-beta mean and SE of the heat-drift
    tables (one per beta), with the ``n = inf`` quadrature [derived].

    Returns ``summary`` (one row per beta, ``contexts`` = the number of contexts behind it) and
    ``curve``: ``beta (ratio - 1)`` (the O(1/beta) correction) and the quadrature over
    ``theory_betas``.
    """
    table = pd.concat(csvs, ignore_index=True)
    q = np.asarray(q, dtype=float)
    q = q / np.linalg.norm(q)
    out = []
    for beta, sub in table.groupby("beta", sort=True):
        th = heat_drift_limit_x1x2(q, beta)
        out.append(
            {
                "beta": beta,
                "n": int(sub["n"].iloc[0]),
                "contexts": len(sub),
                "ratio_mean": sub["ratio"].mean(),
                "ratio_se": mean_se(sub["ratio"])[1],
                "perp_mean": sub["perp"].mean(),
                "perp_se": mean_se(sub["perp"])[1],
                "normal_mean": sub["normal"].mean(),
                "normal_se": mean_se(sub["normal"])[1],
                "ratio_quadrature": th["ratio"],
                "normal_quadrature": th["normal"],
                "max_neglected_mass_bound": sub["neglected_mass_bound"].max(),
                **provenance_of(sub),
            }
        )
    summ = pd.DataFrame(out)
    tb = check_vector("theory_betas", theory_betas, low=0.0, low_open=True)
    curve = pd.DataFrame(
        [
            {
                "beta": b,
                "ratio_quadrature": (th := heat_drift_limit_x1x2(q, b))["ratio"],
                "normal_quadrature": th["normal"],
                "correction_quadrature": b * (th["ratio"] - 1.0),
            }
            for b in tb
        ]
    )
    params = {"q": np.asarray(q, float).tolist(), "theory_betas": tb.tolist()}
    for k, v in provenance_columns(None, None, params).items():
        curve[k] = v  # deterministic quadrature: no seed
    return {"summary": summ, "curve": with_job_provenance(curve)}
