"""Paper B vector fields: tangential displacements of one shared context on a query grid
(docs/paper-b.md), and the rms arrow length against beta (ours).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key
from attnscale.core.validation import check_int, check_vector
from attnscale.pipeline.io import provenance_columns
from attnscale.sphere import keys
from attnscale.sphere import theory as st
from attnscale.sphere.quadrature import mean_field_x1x2

__all__ = ["vector_fields"]

VF_STREAM = "paper_b/vector_fields"


def _lonlat(Q: np.ndarray):
    lon = np.degrees(np.arctan2(Q[:, 1], Q[:, 0]))
    lat = np.degrees(np.arcsin(np.clip(Q[:, 2], -1, 1)))
    return lon, lat


def _east_north(Q: np.ndarray, V: np.ndarray):
    """Components of tangent vectors ``V`` at ``Q`` along the local east and north unit vectors."""
    lon = np.arctan2(Q[:, 1], Q[:, 0])
    lat = np.arcsin(np.clip(Q[:, 2], -1, 1))
    east = np.column_stack([-np.sin(lon), np.cos(lon), np.zeros_like(lon)])
    north = np.column_stack([-np.sin(lat) * np.cos(lon), -np.sin(lat) * np.sin(lon), np.cos(lat)])
    return np.einsum("ij,ij->i", V, east), np.einsum("ij,ij->i", V, north)


def _sweep_stats(Y, G, g2, beta: float, M) -> dict:
    """rms over the grid of ``Y``, of ``Y - G / beta`` and of ``Y - M`` (NaN without ``M``), and
    the mean cosine between ``Y`` and ``G``."""
    R = Y - G / beta
    cos = np.einsum("ij,ij->i", Y, G) / np.sqrt(np.einsum("ij,ij->i", Y, Y) * g2)
    return {
        "rms_disp": float(np.sqrt(np.mean(np.einsum("ij,ij->i", Y, Y)))),
        "rms_dev_from_drift": float(np.sqrt(np.mean(np.einsum("ij,ij->i", R, R)))),
        "rms_dev_from_mean_field": np.nan
        if M is None
        else float(np.sqrt(np.mean(np.einsum("ij,ij->i", Y - M, Y - M)))),
        "mean_cos_disp_drift": float(np.mean(cos)),
    }


def vector_fields(
    *,
    n: int,
    beta_exponents,
    n_queries: int,
    sweep_betas,
    root_seed: int,
    sweep_contexts: int = 1,
    d: int = 3,
) -> dict:
    """Tangential displacements on a query grid for one shared context (docs/paper-b.md, Vector fields).

    One context of ``n`` keys from ``rho ∝ exp(x1 x2)`` on S^2 [paper]; queries on a Fibonacci grid
    of ``n_queries`` points [choice]; panels ``beta = n^e`` for ``e`` in ``beta_exponents``
    [paper: 5/4, 1, 3/4, 1/2, 1/4]. Every query sees the same context (so panels differ only by
    beta). The sweep table (ours) records, for ``beta`` in ``sweep_betas`` and the panel betas,
    the root-mean-square of the tangential displacement over the grid, of its deviation from the
    drift ``grad_S log rho / beta`` and (for ``beta <= n^{2/(d+1)}``) from the ``n = inf`` mean
    field at the same beta (quadrature, :func:`attnscale.sphere.quadrature.mean_field_x1x2`), and the
    theory scales: drift, d = 3 noise ``1/(4 pi n rho(q))`` and the supercritical nearest-key
    value ``2 / (C(q) n)`` (mean squares averaged over the grid). The sweep is repeated over
    ``sweep_contexts`` independent contexts (context 0 is the panels' context, context ``r >= 1``
    has spawn key ``(stream, n, d, r)``), one row per ``(beta, context)``, so the figure can show
    the spread over contexts [choice].

    Returns
    -------
    dict
        ``panels``: per-query panel table; ``sweep``: per-beta sweep table (entry of rule
        ``paper_b_vector_fields``).
    """
    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=3, maximum=3)
    exps = check_vector("beta_exponents", beta_exponents, low=0.0, low_open=True)
    n_queries = check_int("n_queries", n_queries, minimum=1)
    sweep = check_vector("sweep_betas", sweep_betas, low=0.0, low_open=True)
    sweep_contexts = check_int("sweep_contexts", sweep_contexts, minimum=1)
    params = {
        "n": n,
        "d": d,
        "beta_exponents": exps.tolist(),
        "n_queries": n_queries,
        "sweep_betas": sweep.tolist(),
    }
    key = spawn_key(VF_STREAM, n, d)
    prov = provenance_columns(root_seed, key, params)
    K = keys.sample_x1x2(n, job_rng(root_seed, key), d)
    Q = keys.fibonacci_sphere(n_queries)
    G = st.score_x1x2(Q)
    rho = st.density_x1x2(Q, d)
    C = np.array([st.c_density(r, d) for r in rho])
    panels = _panel_table(Q, K, G, rho, C, exps, n, prov)
    betas = np.unique(np.concatenate([sweep, n**exps]))
    mean_field = _mean_fields(Q, betas, n, d)  # shared by every context
    srows = []
    for r in range(sweep_contexts):
        if r == 0:
            Kr, prov_r = K, prov
        else:
            key_r = spawn_key(VF_STREAM, n, d, r)
            Kr = keys.sample_x1x2(n, job_rng(root_seed, key_r), d)
            prov_r = provenance_columns(root_seed, key_r, {**params, "context": r})
        srows += _sweep_rows(Q, Kr, G, rho, C, betas, exps, n, d, r, prov_r, mean_field)
    return {"panels": panels, "sweep": pd.DataFrame(srows)}


def _panel_table(Q, K, G, rho, C, exps, n: int, prov: dict) -> pd.DataFrame:
    """The per-query panel table: displacement and drift at ``beta = n^e`` for each exponent."""
    n_queries = Q.shape[0]
    lon, lat = _lonlat(Q)
    g_e, g_n = _east_north(Q, G)
    records = []
    for panel, e in enumerate(exps):
        beta = float(n**e)
        Y = keys.tangential_displacement(Q, K, beta)
        y_e, y_n = _east_north(Q, Y)
        records.append(
            pd.DataFrame(
                {
                    "panel": panel,
                    "beta_exponent": e,
                    "beta": beta,
                    "n": n,
                    "query": np.arange(n_queries),
                    "qx": Q[:, 0],
                    "qy": Q[:, 1],
                    "qz": Q[:, 2],
                    "lon": lon,
                    "lat": lat,
                    "disp_x": Y[:, 0],
                    "disp_y": Y[:, 1],
                    "disp_z": Y[:, 2],
                    "disp_east": y_e,
                    "disp_north": y_n,
                    "drift_east": g_e / beta,
                    "drift_north": g_n / beta,
                    "rho": rho,
                    "m_n": C * n / beta,
                    **prov,
                }
            )
        )
    return pd.concat(records, ignore_index=True)


def _mean_fields(Q, betas, n: int, d: int) -> dict:
    """The tangential ``n = inf`` mean-field output at each beta ``<= n^{2/(d+1)}``."""
    beta_tr = st.drift_transition_beta(n, d)
    mean_field = {}
    for beta in betas[betas <= beta_tr * (1 + 1e-9)]:
        M = mean_field_x1x2(Q, beta)
        mean_field[beta] = M - np.einsum("ij,ij->i", M, Q)[:, None] * Q
    return mean_field


def _sweep_rows(Q, Kr, G, rho, C, betas, exps, n, d, r, prov_r, mean_field) -> list:
    """The sweep rows of context ``r``: one per beta (rms statistics and theory scales)."""
    g2 = np.einsum("ij,ij->i", G, G)
    beta_tr = st.drift_transition_beta(n, d)
    srows = []
    for beta in betas:
        srows.append(
            {
                "beta": float(beta),
                "n": n,
                "context": r,
                "is_panel": bool(np.any(np.isclose(beta, n**exps, rtol=1e-12))),
                **_sweep_stats(
                    keys.tangential_displacement(Q, Kr, beta), G, g2, beta, mean_field.get(beta)
                ),
                "rms_drift_theory": float(np.sqrt(np.mean(g2)) / beta),
                "rms_noise_theory": float(np.sqrt(np.mean(st.noise_trace_d3(n, rho)))),
                "rms_nearest_theory": float(np.sqrt(np.mean(st.nearest_key_tangent_ms(n, C, d)))),
                "beta_drift_transition": beta_tr,
                "beta_critical": st.critical_scale(n, d),
                **prov_r,
            }
        )
    return srows
