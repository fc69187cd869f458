"""Compute entry of the simulated scaling rules (ours): real models' per-position logit
multipliers under a causal mask at head dimension ``d``, measured on the last query block.

Implements ``docs/realistic-attention.md#real-models-scaling-rules-simulated``. For each rule
(:data:`attnscale.layer.scores.scaling_rules.RULE_KEYS`), the query at 1-indexed position ``i`` sees ``i`` keys
and uses ``beta_i = gamma_c(rho) ln L m(i)`` (calibration A at the *nominal* rho, fixed constants
as in a real model) or ``beta_i = m(i)`` (absolute rules, SSMax). Only the last ``block`` queries
are computed (memory ``O(block x n)``); one Gram block is shared by every rule. Theory per row:
the exact simplex values at the draw's ``rho_hat`` and the finite-d self-weight and critical beta
of :mod:`attnscale.layer.finite_d` (``docs/finite-d.md``) at the nominal rho. The self-weight
also comes with the common component ``z_0`` as a control variate (``self_weight_cv``,
docs/realistic-attention.md#the-common-component-as-a-control-variate).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key, value_id
from attnscale.core.validation import check_int, check_vector
from attnscale.layer import finite_d, theory, tokens
from attnscale.layer.causal import angle_ratio as causal_lambda
from attnscale.layer.causal import attention as causal
from attnscale.layer.causal import theory as causal_theory
from attnscale.layer.scores import scaling_rules
from attnscale.pipeline.io import provenance_columns, with_job_provenance

from .summaries import mean_se_table

__all__ = ["rules_simulated", "rules_simulated_summary"]

STREAM = "realistic/rules_tokens"

#: One row of the figure data per these keys ...
SUMMARY_KEYS = ["d", "block", "rho", "rule", "n"]
#: ... with the mean and standard error over draws of these per-draw columns.
SUMMARY_COLUMNS = [
    "gamma_ratio",
    "self_weight",
    "self_weight_cv",
    "self_weight_simplex",
    "self_weight_finite_d",
    "lambda_block",
    "lambda_block_simplex",
    "beta_critical_finite_d",
]


def draw_key(d: int, rho: float, trial: int) -> tuple[int, ...]:
    """Spawn key of a token draw. ``n`` is *not* part of it: ``z_0`` comes first and the rows of
    ``Z`` are drawn in order, so the context of length ``n`` is the first ``n`` tokens of every
    longer one (common random numbers across n, our choice): curves against n are not jagged by
    independent ``z_0`` draws, which dominate the spread at d = 128."""
    return spawn_key(STREAM, d, value_id(rho), trial)


def rules_simulated(
    *, n: int, d: int, rhos, rules, block: int, trials: int, root_seed: int
) -> pd.DataFrame:
    """Entry of the simulated-rules table for one context length ``n``.

    For each ``rho``, trial and rule: the mean self-weight ``A_ii`` and the angle ratio lambda
    (pairs inside the block) of the last ``block`` queries, the same two quantities for simplex
    tokens at the draw's ``rho_hat`` (:mod:`attnscale.layer.causal.theory`), the finite-d ``E[A_ii]``
    at the block's middle position and the finite-d critical beta (:mod:`attnscale.layer.finite_d`,
    nominal rho), the rule's ``beta`` at the last position and
    ``gamma_eff / gamma_c = beta_n / (gamma_c ln n)`` at the nominal rho (``gamma_ratio``) and at
    ``rho_hat`` (``gamma_ratio_hat``). ``self_weight_cv`` is the self-weight with the draw's
    ``||z_0||`` as a control variate: minus the finite-d ``E[A_ii | ||z_0||]`` at the block's
    middle position (``self_weight_given_finite_d``) plus its mean over ``z_0``
    (``self_weight_finite_d``); the same expectation, with most of the draw-to-draw spread
    removed (docs/realistic-attention.md#the-common-component-as-a-control-variate).

    Parameters
    ----------
    n : int
        Context length (``n >= block``, ``n >= 2``).
    d : int
        Head dimension.
    rhos : sequence of float
        Token correlations, each in (0, 1).
    rules : sequence of str
        Rule keys (:data:`attnscale.layer.scores.scaling_rules.RULE_KEYS`).
    block : int
        Number of last queries measured, ``2 <= block <= n``.
    trials : int
        Independent token draws per ``rho``.
    root_seed : int

    Returns
    -------
    pandas.DataFrame
        One row per (rho, trial, rule).
    """
    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=1)
    block = check_int("block", block, minimum=2, maximum=n)
    trials = check_int("trials", trials, minimum=1)
    rhos = check_vector("rhos", rhos, low=0.0, low_open=True)
    if np.any(rhos >= 1.0):
        raise ValueError("every entry of rhos must be < 1")
    if isinstance(rules, str) or len(rules) == 0:
        raise ValueError("rules must be a non-empty list of rule keys")
    chosen = [scaling_rules.rule_by_key(k, "rules") for k in rules]
    params = {"n": n, "d": d, "rhos": rhos, "rules": list(rules), "block": block, "trials": trials}
    pos = np.arange(1, n + 1, dtype=float)
    mid = n - block // 2  # 1-indexed middle position of the block, where finite-d is evaluated
    records = []
    for rho in rhos:
        rho = float(rho)
        grid = np.vstack([scaling_rules.rule_betas(r, pos, rho) for r in chosen])
        # finite-d theory (averaged over draws at the nominal rho): one call per (n, rho)
        beta_fd = finite_d.critical_beta(n, d, rho)
        sw_fd = np.atleast_1d(finite_d.self_weight(mid, d, rho, grid[:, mid - 1]))
        shared = {"n": n, "d": d, "rho": rho, "block": block, "grid": grid, "chosen": chosen}
        shared.update(mid=mid, beta_fd=beta_fd, sw_fd=sw_fd)
        for trial in range(trials):
            records += _trial_rows(shared, trial, root_seed, params)
    return pd.DataFrame(records)


def _trial_rows(shared: dict, trial: int, root_seed: int, params: dict) -> list[dict]:
    """The rows of one token draw at one rho of :func:`rules_simulated`, one per rule; ``shared``
    holds what every draw at that rho shares (sizes, the rules' beta grid, the finite-d values)."""
    n, d, rho, block, grid = (shared[k] for k in ("n", "d", "rho", "block", "grid"))
    chosen, mid, beta_fd, sw_fd = (shared[k] for k in ("chosen", "mid", "beta_fd", "sw_fd"))
    start = n - block
    records = []
    key = draw_key(d, rho, trial)
    z0, Z = tokens.gaussian_draw(n, d, job_rng(root_seed, key))
    X = tokens.from_draw(z0, Z, rho)  # = tokens.near_simplex(n, d, rho, rng), bit for bit
    del Z
    r0 = float(np.linalg.norm(z0))
    sw_given = np.atleast_1d(finite_d.self_weight_given(mid, d, rho, grid[:, mid - 1], r0))
    rho_hat = tokens.mean_cosine(X)
    gc_hat = theory.gamma_c(rho_hat)
    res = causal.query_block(X, grid, start, n, causal=True)
    Yb = X[start:] / np.linalg.norm(X[start:], axis=1, keepdims=True)
    prov = provenance_columns(root_seed, key, params)
    for k, r in enumerate(chosen):
        a_simplex = causal_theory.causal_simplex_self_weight(rho_hat, grid[k])[start:]
        records.append(
            {
                "rule": r.name,
                "rule_key": r.key,
                "calibration": r.calibration,
                "n": n,
                "d": d,
                "rho": rho,
                "trial": trial,
                "rho_hat": rho_hat,
                "block": block,
                "beta_last": float(grid[k, -1]),
                "gamma_ratio": float(grid[k, -1] * (1.0 - rho) / np.log(n)),
                "gamma_ratio_hat": float(grid[k, -1] / (gc_hat * np.log(n))),
                "beta_critical_simplex": theory.gamma_c(rho) * np.log(n),
                "beta_critical_finite_d": beta_fd,
                "self_weight": float(res["self_weight"][k].mean()),
                "self_weight_cv": float(res["self_weight"][k].mean() - sw_given[k] + sw_fd[k]),
                "self_weight_given_finite_d": float(sw_given[k]),
                "r0": r0,
                "self_weight_simplex": float(a_simplex.mean()),
                "self_weight_finite_d": float(sw_fd[k]),
                "lambda_block": causal_lambda.pair_ratio_mean(Yb, res["outputs"][k]),
                "lambda_block_simplex": causal_theory.causal_simplex_lambda(
                    rho_hat, grid[k], positions=np.arange(start + 1, n + 1)
                ),
                **prov,
            }
        )
    return records


def rules_simulated_summary(*, data) -> pd.DataFrame:
    """Entry of rule ``causal_rules_simulated_summary``: the figure data of the simulated scaling
    rules (docs/realistic-attention.md#real-models-scaling-rules-simulated).

    Parameters
    ----------
    data : DataFrame or list of DataFrame
        Tables of :func:`rules_simulated` (one per context length ``n``).

    Returns
    -------
    pandas.DataFrame
        One row per ``(d, block, rho, rule, n)`` (rules in the order of the per-draw tables):
        ``<col>_mean`` and ``<col>_se`` over draws of every column of :data:`SUMMARY_COLUMNS`
        (:func:`attnscale.experiments.summaries.mean_se_table`; ``nan`` SE for one draw), ``trials``.
    """
    table = pd.concat(data, ignore_index=True) if isinstance(data, list) else data
    missing = sorted(set(SUMMARY_KEYS + SUMMARY_COLUMNS + ["trial"]) - set(table.columns))
    if missing:
        raise ValueError(f"data must be tables of rules_simulated; columns missing: {missing}")
    return with_job_provenance(
        mean_se_table(table.groupby(SUMMARY_KEYS, sort=False), SUMMARY_COLUMNS)
    )
