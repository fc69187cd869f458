"""Paper A backward pass: the Jacobian norm eta on the (rho, gamma) grid, Figure 2
(docs/paper-a.md#the-jacobian-norm-eta).

Every step reads the token draws written by rule ``paper_a_tokens``
(:func:`attnscale.experiments.paper_a_tokens.draw_tokens`), so Figures 1 and 2 see the same tokens.

Theory columns are evaluated per draw at the draw's realised mean cosine ``rho_hat`` and mean
squared norm ``q_hat`` (docs/paper-a.md#gaussian-near-simplex-tokens). Two extra eta columns use the realised norm moments
``mean 1/||x_i||`` and ``mean 1/||x_i||^2`` instead of ``q_hat`` (``eta_plateau``,
``eta_simplex_n_norms``): ``J`` depends on the norms only through ``1/||x_k||`` factors, so for
Gaussian tokens, whose norms spread by ``~sqrt(2/d)``, eta follows ``mean 1/||x||^2`` rather
than ``1/q_hat`` [derived].

The theorem table and the finite-size check are :mod:`attnscale.experiments.paper_a_theorem`.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key, value_id
from attnscale.core.validation import check_int, check_real, check_vector
from attnscale.layer import theory
from attnscale.layer.dense import eta_exact, jacobian
from attnscale.layer.sampled import eta as sampled_eta
from attnscale.pipeline.io import PROVENANCE_COLUMNS, provenance_columns
from attnscale.pipeline.runtime import Progress

from .paper_a import CELL_KEYS, cell_provenance, check_rows, long_context_params, rows_key
from .paper_a_tokens import job_draws, tokens_at
from .summaries import columns_after, mean_se_table, se_components

__all__ = [
    "choose_method",
    "eta_plateau",
    "norm_moments",
    "has_gamma_c",
    "eta_table",
    "eta_rows",
    "figure2_data",
    "eta_critical_data",
    "eta_summary",
]

LOG = logging.getLogger("attnscale")

PROBES_STREAM = "paper_a/eta_probes"
#: Stream of the row samples and tangent probes of the sampled eta (docs/long-context.md#the-rows-choice).
ROWS_STREAM = "paper_a/eta_rows"
METHODS = ("exact", "hutchinson", "auto")


def probe_key(n: int, d: int, rho: float, trial: int) -> tuple[int, ...]:
    """Spawn key of the Hutchinson probes of one token draw (``rho`` in units of 1e-6)."""
    return spawn_key(PROBES_STREAM, n, d, value_id(rho), trial)


def choose_method(method: str, n: int, d: int, probes: int) -> str:
    """``"exact"`` or ``"hutchinson"``. ``"auto"`` takes the exact block formula when its cost
    per beta is at most that of ``probes`` Hutchinson probes (:func:`attnscale.layer.dense.eta_exact.exact_cost`,
    :func:`attnscale.layer.dense.eta_exact.hutchinson_cost`: GEMM flops plus measured elementwise work)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method != "auto":
        return method
    exact = eta_exact.exact_cost(n, d)
    return "exact" if exact <= eta_exact.hutchinson_cost(n, d, probes) else "hutchinson"


def norm_moments(X: np.ndarray) -> tuple[float, float]:
    """``(mean_i 1/||x_i||, mean_i 1/||x_i||^2)`` of a token matrix, the realised norm moments
    that eta depends on (docs/paper-a.md#the-jacobian-norm-eta)."""
    r = np.linalg.norm(np.asarray(X, dtype=np.float64), axis=1)
    return float(np.mean(1.0 / r)), float(np.mean(1.0 / r**2))


def eta_plateau(d: int, alpha: float, w1: float, w2: float) -> float:
    """Super-critical limit of eta at realised norms [derived]: ``J -> blockdiag(P_i / r_i) +
    alpha I``, so ``eta -> [(d-1)(w2 + 2 alpha w1 + alpha^2) + alpha^2] / d`` with ``w1 = mean
    1/r``, ``w2 = mean 1/r^2``; for ``alpha = 0`` this is ``(1 - 1/d) mean 1/||x_i||^2``, the
    plateau of Figure 2 (``(1 - 1/d) / q`` for equal norms, Theorem 2.4)."""
    return ((d - 1) * (w2 + 2.0 * alpha * w1 + alpha**2) + alpha**2) / d


def has_gamma_c(rho_hat: float) -> bool:
    """Whether a draw's realised mean cosine has a critical scale ``gamma_c = 1/(1 - rho_hat)``
    that the simplex theory applies at: ``0 < rho_hat < 1`` (docs/paper-a.md#the-model)."""
    return 0.0 < rho_hat < 1.0


def eta_table(
    tok: dict,
    gammas,
    alpha: float,
    *,
    method: str,
    probes: int,
    probe_kind: str,
    root_seed: int,
    params: dict,
    rows="all",
) -> pd.DataFrame:
    """eta on the gamma grid and at ``gamma_c(rho_hat)`` for one token draw (Figure 2, docs/paper-a.md#the-jacobian-norm-eta).

    Parameters
    ----------
    tok : dict
        A token draw at one rho (:func:`attnscale.experiments.paper_a_tokens.tokens_at`).
    gammas : array_like
        Grid of gamma (``beta = gamma log n``).
    alpha : float
        Residual weight.
    method : {"exact", "hutchinson", "auto"}
        How eta is computed (see :func:`choose_method`).
    probes : int
        Hutchinson probes (used when the method resolves to ``"hutchinson"``).
    probe_kind : {"rademacher", "gaussian"}
        Probe distribution.
    root_seed : int
        Root seed of the probe generator (key :func:`probe_key`).
    params : dict
        Parameters hashed into the provenance column.
    rows : "all" or int, optional
        ``"all"``: ``method`` decides (dense); a number ``m``: eta from ``m`` sampled rows
        (:func:`attnscale.layer.sampled.eta.eta_sampled`, probe route, one tangent probe per row,
        rows and probes from the job's generator with key
        :func:`attnscale.experiments.paper_a.rows_key`; docs/long-context.md#the-rows-choice):
        method ``"sampled"``, ``eta_se_within`` its within-draw SE, and a column ``rows``.

    Returns
    -------
    pandas.DataFrame
        One row per gamma; ``eta_se_within`` is 0 for the exact method.
    """
    X, n, d = tok["X"], tok["n"], tok["d"]
    rho_hat, q_hat = tok["rho_hat"], tok["q_hat"]
    gammas = check_vector("gammas", gammas, low=0.0, low_open=True)
    alpha = check_real("alpha", alpha, low=0.0)
    probes = check_int("probes", probes, minimum=1)
    ok = has_gamma_c(rho_hat)
    gc_hat = theory.gamma_c(rho_hat) if ok else np.nan
    gam = np.concatenate([gammas, [gc_hat]]) if ok else gammas.copy()
    kind = ["grid"] * gammas.size + (["critical"] if ok else [])
    if not ok:
        LOG.warning("rho_hat = %g outside (0, 1): no gamma_c row, theory columns nan", rho_hat)
    betas = theory.beta_of_gamma(gam, n)
    how = choose_method(method, n, d, probes) if rows == "all" else "sampled"
    eta, se, used_probes, key = _eta_values(
        tok, betas, alpha, how, rows, probes, probe_kind, root_seed
    )
    w1, w2 = norm_moments(X)
    plateau = eta_plateau(d, alpha, w1, w2)
    lim, simp, simp_w = _eta_theory(tok, gam, betas, alpha, w1, w2, ok)
    # provenance: the probe (row) generator's key for Hutchinson (sampled), else the draw's key
    if how in ("hutchinson", "sampled"):
        prov = provenance_columns(root_seed, key, params)
    else:
        prov = provenance_columns(tok["root_seed"], tok["spawn_key"], params)
    table = pd.DataFrame(
        {
            "d": d,
            "n": n,
            "rho": tok["rho"],
            "rho_hat": rho_hat,
            "q_hat": q_hat,
            "mean_inv_sq_norm": w2,
            "trial": tok["trial"],
            "gamma_kind": kind,
            "gamma": gam,
            "gamma_over_gc_hat": gam / gc_hat,
            "beta": betas,
            "alpha": alpha,
            "method": how,
            "probes": used_probes,
            "eta": eta,
            "eta_se_within": se,
            "eta_plateau": plateau,
            "eta_rel": eta / plateau,
            "eta_limit": lim,
            "eta_simplex_n": simp,
            "eta_simplex_n_norms": simp_w,
            **prov,
        }
    )
    if how == "sampled":
        table.insert(table.columns.get_loc("probes") + 1, "rows", int(rows))
    return table


def _eta_values(tok, betas, alpha, how, rows, probes, probe_kind, root_seed):
    """eta of one draw at ``betas`` by method ``how``: ``(eta, within-draw SE, probes used, key)``,
    ``key`` the probe (or row) generator's spawn key."""
    X, n, d = tok["X"], tok["n"], tok["d"]
    key = probe_key(n, d, tok["rho"], tok["trial"])
    if how == "sampled":
        key = rows_key(ROWS_STREAM, n, d, tok["trial"])
        res = sampled_eta.eta_sampled(X, betas, alpha, rows=rows, rng=job_rng(root_seed, key))
        eta, se, used_probes = res.estimate, res.se, 1
    elif how == "exact":
        eta = eta_exact.eta_exact_grid(X, betas, alpha)
        se = np.zeros_like(eta)
        used_probes = 0
    else:
        eta, se = jacobian.eta_hutchinson_grid(
            X, betas, alpha, probes=probes, rng=job_rng(root_seed, key), kind=probe_kind
        )
        used_probes = probes
    return eta, se, used_probes, key


def _eta_theory(tok, gam, betas, alpha, w1, w2, ok):
    """The theory columns of one draw (limit, simplex, simplex at realised norms); nan where the
    draw has no ``gamma_c`` (``ok`` false)."""
    n, d, rho_hat, q_hat = tok["n"], tok["d"], tok["rho_hat"], tok["q_hat"]
    nan = np.full(gam.size, np.nan)
    lim, simp, simp_w = nan.copy(), nan.copy(), nan.copy()
    if ok:
        lim = np.array([theory.eta_limit(rho_hat, g, d, alpha, q_hat) for g in gam])
        simp = np.array([theory.simplex_eta(n, d, rho_hat, b, alpha, q_hat) for b in betas])
        simp_w = np.array(
            [
                theory.simplex_eta(
                    n, d, rho_hat, b, alpha, q_hat, mean_inv_norm=w1, mean_inv_sq_norm=w2
                )
                for b in betas
            ]
        )
    return lim, simp, simp_w


def eta_rows(
    *,
    draws: list[dict],
    rhos,
    gammas,
    alpha: float,
    method: str,
    probes: int,
    probe_kind: str,
    root_seed: int,
    n=None,
    d=None,
    rows="all",
    z0: str = "gaussian",
    trials=None,
) -> pd.DataFrame:
    """Entry of rule ``paper_a_eta``: :func:`eta_table` for every draw of one ``(n, d)`` at each
    ``rho`` of ``rhos`` (a piece of the rho grid), stacked. ``n``, ``d``: the job's, checked
    against the draws (:func:`attnscale.experiments.paper_a_tokens.check_draws`; ``None``: not
    checked). ``rows``, ``z0`` and ``trials`` (draws made here when ``draws`` is empty) as for
    :func:`attnscale.experiments.paper_a.lambda_rows`."""
    draws = job_draws(draws, n=n, d=d, trials=trials, root_seed=root_seed)
    tables = []
    progress = Progress("eta (rho, draw)", len(draws) * len(rhos))
    for draw, rho in ((dr, r) for r in rhos for dr in draws):
        tok = tokens_at(draw, rho, z0=z0)
        rows = check_rows(rows, tok["n"])
        params = {
            "gammas": [float(g) for g in gammas],
            "alpha": float(alpha),
            "n": tok["n"],
            "method": method,
            "probes": int(probes),
            "probe_kind": probe_kind,
            **long_context_params(rows, z0),
        }
        df = eta_table(
            tok,
            gammas,
            alpha,
            method=method,
            probes=probes,
            probe_kind=probe_kind,
            root_seed=root_seed,
            params=params,
            rows=rows,
        )
        LOG.info(
            "d = %d, rho = %g, trial %d: eta by %s",
            tok["d"],
            tok["rho"],
            tok["trial"],
            df["method"].iloc[0],
        )
        tables.append(df)
        progress.step()
    return pd.concat(tables, ignore_index=True)


def figure2_data(table: pd.DataFrame) -> pd.DataFrame:
    """Figure 2 data: mean eta and eta / plateau (with SE over trials) per grid cell; from sampled
    rows also ``eta_se_within``, ``eta_se_between``
    (:func:`attnscale.experiments.summaries.se_components`) and ``rows``."""
    grid = table[table["gamma_kind"] == "grid"]
    groups = grid.groupby(CELL_KEYS, sort=True)
    out = mean_se_table(groups, ["eta", "eta_rel", "eta_plateau", "rho_hat", "eta_simplex_n_norms"])
    if "rows" in grid.columns:  # sampled rows: the two parts of the SE, and m
        parts = se_components(groups, "eta", "eta_se_within")
        parts["rows"] = groups["rows"].first().to_numpy()
        out = out.merge(parts, on=CELL_KEYS, how="left")
        out = out[columns_after(list(out.columns), "eta_se", list(parts.columns[len(CELL_KEYS) :]))]
    out["gamma_c_nominal"] = theory.gamma_c(out["rho"].to_numpy())
    return out.merge(
        cell_provenance(grid, CELL_KEYS, method=("method", "first"), probes=("probes", "first")),
        on=CELL_KEYS,
        how="left",
    )


def eta_critical_data(table: pd.DataFrame) -> pd.DataFrame:
    """eta at ``gamma_c(rho_hat)`` per draw with its theory columns."""
    crit = table[table["gamma_kind"] == "critical"].copy()
    cols = [
        "d",
        "n",
        "alpha",
        "rho",
        "trial",
        "rho_hat",
        "q_hat",
        "mean_inv_sq_norm",
        "gamma",
        "beta",
        "method",
        "probes",
        "eta",
        "eta_se_within",
        "eta_plateau",
        "eta_limit",
        "eta_simplex_n",
        "eta_simplex_n_norms",
        *PROVENANCE_COLUMNS,
    ]
    if "rows" in crit.columns:  # sampled rows
        cols = columns_after(cols, "probes", ["rows"])
    return crit[cols].sort_values(["d", "rho", "trial"]).reset_index(drop=True)


def eta_summary(*, csvs: list) -> dict:
    """Entry of rule ``paper_a_eta_summary``: Figure 2's cell means and the per-draw critical
    rows."""
    table = pd.concat(csvs, ignore_index=True)
    return {"figure2": figure2_data(table), "critical": eta_critical_data(table)}
