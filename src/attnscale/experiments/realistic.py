"""Compute entries of issue 10, items 3 - 5: learned ``Q^T K``, attention sink, depth.

Theory and choices: ``docs/realistic-attention.md#learned-query-key-matrix``,
``docs/realistic-attention.md#attention-sink``, ``docs/realistic-attention.md#depth``.

Each entry takes keyword-only arguments (config values and ``root_seed``), draws its tokens from
``job_rng(root_seed, spawn_key(...))`` and returns tidy DataFrames; it does no file I/O.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.core.seeding import job_rng, spawn_key, value_id
from attnscale.core.validation import check_int, check_real, check_vector
from attnscale.layer import theory, tokens
from attnscale.layer.scores import attention as score_attention
from attnscale.layer.scores import depth, sink
from attnscale.layer.scores import learned as learned_scores
from attnscale.pipeline.io import provenance_columns

__all__ = ["learned_variants", "learned_qk", "attention_sink", "depth_iteration"]

LEARNED_TOKENS = "realistic/learned/tokens"
LEARNED_W = "realistic/learned/W"
SINK_TOKENS = "realistic/sink/tokens"
SINK_DIRECTION = "realistic/sink/direction"
DEPTH_TOKENS = "realistic/depth/tokens"

#: Stable ids of the query-key families in the spawn keys of ``W``.
KIND_ID = {"identity": 0, "perturbed": 1, "projected": 2}

#: Gamma range searched for the simulated critical point (mean self-weight = 1/2) [choice].
SEARCH_GAMMA = (0.05, 64.0)


def _common_checks(n, d, rho, gammas, trial, alpha):
    n = check_int("n", n, minimum=4)
    d = check_int("d", d, minimum=2)
    rho = check_real("rho", rho, low=0.0, high=1.0, low_open=True, high_open=True)
    gammas = check_vector("gammas", gammas, low=0.0, low_open=True)
    trial = check_int("trial", trial, minimum=0)
    alpha = check_real("alpha", alpha, low=0.0)
    return n, d, rho, gammas, trial, alpha


def _critical_gamma(Qm, Km, n, rows=None) -> float:
    """Simulated critical gamma: mean self-weight over ``rows`` = 1/2 (nan if never)."""
    ln = np.log(n)
    bc = score_attention.self_weight_critical_beta(
        Qm, Km, SEARCH_GAMMA[0] * ln, SEARCH_GAMMA[1] * ln, rows=rows
    )
    return bc / ln


# --------------------------------------------------------------------------------------------
# Learned Q^T K
# --------------------------------------------------------------------------------------------


def learned_variants(epsilons, ranks, d: int) -> list[tuple[str, float]]:
    """``[("identity", 0), ("perturbed", eps)..., ("projected", r)...]`` after checking every
    value (``epsilon >= 0``, ``1 <= r <= d``) before any work."""
    out = [("identity", 0.0)]
    for e in epsilons:
        out.append(("perturbed", check_real("epsilon", e, low=0.0)))
    for r in ranks:
        out.append(("projected", float(check_int("r", r, minimum=1, maximum=d))))
    return out


def _query_key_matrix(kind, value, d, rng):
    if kind == "identity":
        return None
    if kind == "perturbed":
        return learned_scores.perturbed_identity(d, value, rng)
    return learned_scores.random_projection(d, int(value), rng)


def learned_qk(
    *,
    root_seed: int,
    n: int,
    d: int,
    rho: float,
    gammas,
    epsilons,
    ranks,
    trial: int,
    alpha: float = 0.0,
) -> dict:
    """Entry of rule ``realistic_learned_qk``: one layer with scores ``beta <W y_i, y_j>``
    (``docs/realistic-attention.md#learned-query-key-matrix``).

    For each token draw (near-simplex, shared by every ``W``: common random numbers) and each
    ``W`` (identity, ``I + epsilon G``, ``(d/r) U U^T``): lambda and the mean self-weight on the
    gamma grid, at ``gamma_c(rho_hat)`` and at the predicted ``gamma_c,eff``, with the
    effective-score simplex analogue; the effective scores, their spread, the predicted and the
    simulated critical gamma (mean ``A_ii = 1/2``).

    Returns
    -------
    dict
        ``curves`` (one row per draw, ``W`` and gamma) and ``critical`` (one row per draw and
        ``W``).
    """
    n, d, rho, gammas, trial, alpha = _common_checks(n, d, rho, gammas, trial, alpha)
    variants = learned_variants(epsilons, ranks, d)
    params = {
        "n": n,
        "d": d,
        "rho": rho,
        "gammas": gammas.tolist(),
        "alpha": alpha,
        "variants": variants,
    }
    curves, crit = [], []
    tkey = spawn_key(LEARNED_TOKENS, n, d, trial)
    X = tokens.near_simplex(n, d, rho, job_rng(root_seed, tkey))
    rho_hat, q_hat = tokens.mean_cosine(X), tokens.mean_sq_norm(X)
    gc_hat = theory.gamma_c(rho_hat)
    draw = {"X": X, "n": n, "d": d, "rho": rho, "trial": trial, "alpha": alpha, "gammas": gammas}
    draw.update(rho_hat=rho_hat, q_hat=q_hat, gc_hat=gc_hat)
    for kind, value in variants:
        wkey = spawn_key(LEARNED_W, d, trial, KIND_ID[kind], value_id(value, 1000))
        W = _query_key_matrix(kind, value, d, job_rng(root_seed, wkey))
        curve, row = _learned_variant(
            draw, kind, value, W, provenance_columns(root_seed, wkey, params)
        )
        curves.append(curve)
        crit.append(row)
    return {"curves": pd.concat(curves, ignore_index=True), "critical": pd.DataFrame(crit)}


def _learned_variant(draw: dict, kind: str, value, W, prov: dict):
    """One ``W`` of :func:`learned_qk` on the shared token draw ``draw``: its curve table and its
    critical row."""
    X, n, d, rho, trial, alpha, gammas = (
        draw[k] for k in ("X", "n", "d", "rho", "trial", "alpha", "gammas")
    )
    rho_hat, q_hat, gc_hat = draw["rho_hat"], draw["q_hat"], draw["gc_hat"]
    ln = np.log(n)
    _, Qm, Km = learned_scores.query_key_rows(X, W)
    s_self, s_cross = learned_scores.effective_scores(Qm, Km)
    sd_self, sd_cross = score_attention.score_spread(Qm, Km)
    gce = learned_scores.gamma_c_eff(s_self, s_cross)
    gce_n = learned_scores.gamma_c_eff(s_self, s_cross, n)
    gcf = learned_scores.gamma_c_fluct(s_self, s_cross, sd_cross, n)
    gam = np.concatenate([gammas, [gc_hat], [gce] if np.isfinite(gce) else []])
    extra = ["gamma_c_hat", "gamma_c_eff"][: gam.size - gammas.size]
    kinds = ["grid"] * gammas.size + extra
    res = score_attention.layer_grid(X, Qm, Km, gam * ln, alpha)
    sw = res["self_weight"].mean(axis=1)
    gap = s_self - s_cross
    beta_eff = gam * ln * gap / (1.0 - rho_hat)  # same t = e^{beta (s_cross - s_self)}
    curve = pd.DataFrame(
        {
            "n": n,
            "d": d,
            "rho": rho,
            "trial": trial,
            "kind": kind,
            "value": value,
            "rho_hat": rho_hat,
            "gamma_kind": kinds,
            "gamma": gam,
            "beta": gam * ln,
            "lambda": res["lambda"],
            "self_weight": sw,
            "self_weight_eff": [1.0 / (1.0 + (n - 1) * np.exp(-b * gap)) for b in gam * ln],
            "lambda_eff": [
                theory.simplex_lambda(n, rho_hat, b, alpha, q_hat) if gap > 0 else np.nan
                for b in beta_eff
            ],
            **prov,
        }
    )
    g_sim = _critical_gamma(Qm, Km, n)
    row = {
        "n": n,
        "d": d,
        "rho": rho,
        "trial": trial,
        "kind": kind,
        "value": value,
        "rho_hat": rho_hat,
        "q_hat": q_hat,
        "s_self": s_self,
        "s_cross": s_cross,
        "sd_self": sd_self,
        "sd_cross": sd_cross,
        "gamma_c_hat": gc_hat,
        "gamma_c_eff": gce,
        "gamma_c_eff_n": gce_n,
        "gamma_c_fluct": gcf,
        "gamma_half_sim": g_sim,
        "sim_over_eff": g_sim / gce,
        "sim_over_fluct": g_sim / gcf,
        "self_weight_at_eff": (sw[gammas.size + 1] if np.isfinite(gce) else np.nan),
        **prov,
    }
    return curve, row


# --------------------------------------------------------------------------------------------
# Attention sink
# --------------------------------------------------------------------------------------------


def attention_sink(
    *,
    root_seed: int,
    n: int,
    d: int,
    rho: float,
    c_s,
    kappa,
    gammas,
    trial: int,
    alpha: float = 0.0,
) -> dict:
    """Entry of rule ``realistic_sink``: ``n - 1`` near-simplex tokens and a sink in position 1
    with mean cosine ``c_s`` and key factor ``kappa``
    (``docs/realistic-attention.md#attention-sink``).

    Per draw, ``c_s`` and ``kappa``: lambda over the ordinary pairs, their mean self-weight and
    the mean mass on the sink on the gamma grid and at ``gamma_c(rho_hat)``, with the exact
    simplex-with-sink map at ``(rho_hat, c_s)``; the simulated and predicted critical gamma.
    The ordinary tokens and the sink's random direction are shared across ``c_s`` and
    ``kappa`` (common random numbers).

    Returns
    -------
    dict
        ``curves`` and ``critical`` DataFrames.
    """
    n, d, rho, gammas, trial, alpha = _common_checks(n, d, rho, gammas, trial, alpha)
    c_list = [check_real("c_s", c, low=-1.0, high=1.0) for c in np.atleast_1d(c_s)]
    k_list = [check_real("kappa", k, low=0.0) for k in np.atleast_1d(kappa)]
    params = {
        "n": n,
        "d": d,
        "rho": rho,
        "gammas": gammas.tolist(),
        "alpha": alpha,
        "c_s": c_list,
        "kappa": k_list,
    }
    ln = np.log(n)
    keep = np.ones(n, dtype=bool)
    keep[0] = False
    curves, crit = [], []
    tkey = spawn_key(SINK_TOKENS, n, d, trial)
    X0 = tokens.near_simplex(n - 1, d, rho, job_rng(root_seed, tkey))
    rho_hat, q_hat = tokens.mean_cosine(X0), tokens.mean_sq_norm(X0)
    gc_hat = theory.gamma_c(rho_hat)
    Y0 = X0 / np.linalg.norm(X0, axis=1, keepdims=True)
    g_nosink = _critical_gamma(Y0, Y0, n - 1) * np.log(n - 1) / ln
    sd_cross = score_attention.score_spread(Y0, Y0)[1]
    dkey = spawn_key(SINK_DIRECTION, n, d, trial)
    gam = np.concatenate([gammas, [gc_hat]])
    kinds = ["grid"] * gammas.size + ["gamma_c_hat"]
    draw = {"n": n, "d": d, "rho": rho, "trial": trial, "alpha": alpha, "rho_hat": rho_hat}
    draw.update(q_hat=q_hat, gc_hat=gc_hat, gam=gam, kinds=kinds, keep=keep)
    draw.update(g_nosink=g_nosink, sd_cross=sd_cross)
    for c in c_list:
        Xs = sink.add_sink(X0, c, job_rng(root_seed, dkey))
        Y = Xs / np.linalg.norm(Xs, axis=1, keepdims=True)
        cos_s = Y[1:] @ Y[0]
        c_real, c_sd = float(cos_s.mean()), float(cos_s.std())
        for kap in k_list:
            prov = provenance_columns(root_seed, dkey, params)
            curve, row = _sink_case(draw, c, kap, Xs, Y, c_real, c_sd, prov)
            curves.append(curve)
            crit.append(row)
    return {"curves": pd.concat(curves, ignore_index=True), "critical": pd.DataFrame(crit)}


def _sink_case(draw: dict, c: float, kap: float, Xs, Y, c_real: float, c_sd: float, prov: dict):
    """One ``(c_s, kappa)`` of :func:`attention_sink`: its curve table and its critical row."""
    n, d, rho, trial, alpha = (draw[k] for k in ("n", "d", "rho", "trial", "alpha"))
    rho_hat, q_hat, gc_hat, gam = draw["rho_hat"], draw["q_hat"], draw["gc_hat"], draw["gam"]
    kinds, keep, g_nosink, sd_cross = (draw[k] for k in ("kinds", "keep", "g_nosink", "sd_cross"))
    ln = np.log(n)
    Km = sink.sink_keys(Y, kap)
    res = score_attention.layer_grid(Xs, Y, Km, gam * ln, alpha, keep=keep, col=0)
    th = [sink.simplex_sink_map(n, rho_hat, c, b, alpha, q_hat, kap) for b in gam * ln]
    w = [sink.simplex_sink_weights(n, rho_hat, c, b, kap) for b in gam * ln]
    sw = res["self_weight"][:, keep].mean(axis=1)
    sm = res["col_mass"][:, keep].mean(axis=1)
    curve = pd.DataFrame(
        {
            "n": n,
            "d": d,
            "rho": rho,
            "trial": trial,
            "c_s": c,
            "kappa": kap,
            "rho_hat": rho_hat,
            "gamma_kind": kinds,
            "gamma": gam,
            "beta": gam * ln,
            "lambda": res["lambda"],
            "self_weight": sw,
            "sink_mass": sm,
            "lambda_simplex": [t[2] for t in th],
            "self_weight_simplex": [x[0] for x in w],
            "sink_mass_simplex": [x[2] for x in w],
            **prov,
        }
    )
    g_sim = _critical_gamma(Y, Km, n, rows=keep)
    g_th = sink.simplex_sink_critical_beta(n, rho_hat, c, kap) / ln
    g_fl = sink.simplex_sink_critical_beta(n, rho_hat, c, kap, sd_cross) / ln
    row = {
        "n": n,
        "d": d,
        "rho": rho,
        "trial": trial,
        "c_s": c,
        "kappa": kap,
        "c_s_realised": c_real,
        "c_s_sd": c_sd,
        "rho_hat": rho_hat,
        "gamma_c_hat": gc_hat,
        "gamma_half_nosink_sim": g_nosink,
        "sd_cross": sd_cross,
        "gamma_half_sim": g_sim,
        "gamma_half_simplex": g_th,
        "gamma_half_fluct": g_fl,
        "sink_mass_at_gc": sm[-1],
        "sink_mass_at_gc_simplex": w[-1][2],
        "self_weight_at_gc": sw[-1],
        "self_weight_at_gc_simplex": w[-1][0],
        "lambda_at_gc": res["lambda"][-1],
        "lambda_at_gc_simplex": th[-1][2],
        **prov,
    }
    return curve, row


# --------------------------------------------------------------------------------------------
# Depth
# --------------------------------------------------------------------------------------------


def depth_iteration(
    *,
    root_seed: int,
    n: int,
    d: int,
    rho: float,
    gamma_factors,
    alphas,
    layers: int,
    trial: int,
) -> pd.DataFrame:
    """Entry of rule ``realistic_depth``: the layer iterated ``layers`` times at
    ``gamma = f gamma_c(rho_hat_0)``, against the iterated finite-n simplex map started at the
    draw's ``(rho_hat_0, q_hat_0)`` (``docs/realistic-attention.md#depth``).

    Returns
    -------
    pandas.DataFrame
        One row per draw, alpha, factor and layer ``l = 0 .. layers``: ``delta = 1 - rho_l``,
        ``q_l`` and the layer's lambda (``nan`` at ``l = 0``), simulated and simplex, and
        ``gamma / gamma_c(rho_l)`` of the layer's *input*.
    """
    n = check_int("n", n, minimum=4)
    d = check_int("d", d, minimum=2)
    rho = check_real("rho", rho, low=0.0, high=1.0, low_open=True, high_open=True)
    factors = check_vector("gamma_factors", gamma_factors, low=0.0, low_open=True)
    alphas = check_vector("alphas", alphas, low=0.0)
    layers = check_int("layers", layers, minimum=1)
    trial = check_int("trial", trial, minimum=0)
    params = {
        "n": n,
        "d": d,
        "rho": rho,
        "gamma_factors": factors.tolist(),
        "alphas": alphas.tolist(),
        "layers": layers,
    }
    ln = np.log(n)
    records = []
    tkey = spawn_key(DEPTH_TOKENS, n, d, trial)
    X = tokens.near_simplex(n, d, rho, job_rng(root_seed, tkey))
    rho_hat, q_hat = tokens.mean_cosine(X), tokens.mean_sq_norm(X)
    gc_hat = theory.gamma_c(rho_hat)
    prov = provenance_columns(root_seed, tkey, params)
    for alpha in alphas:
        for f in factors:
            gamma = f * gc_hat
            sim = depth.iterate_layers(X, gamma * ln, layers, alpha)
            th = depth.simplex_depth(n, rho_hat, gamma * ln, layers, alpha, q_hat)
            lam_s = np.concatenate([[np.nan], sim["lambda"]])
            lam_t = np.concatenate([[np.nan], th["lambda"]])
            excl = np.concatenate([[0], sim["n_excluded_pairs"]])
            records.append(
                pd.DataFrame(
                    {
                        "n": n,
                        "d": d,
                        "rho": rho,
                        "trial": trial,
                        "alpha": alpha,
                        "gamma_factor": f,
                        "gamma": gamma,
                        "rho_hat0": rho_hat,
                        "layer": np.arange(layers + 1),
                        "delta": sim["delta"],
                        "delta_simplex": th["delta"],
                        "q": sim["q"],
                        "q_simplex": th["q"],
                        "lambda": lam_s,
                        "lambda_simplex": lam_t,
                        "n_excluded_pairs": excl,
                        "gamma_over_gc_input": np.concatenate(
                            [[np.nan], gamma * sim["delta"][:-1]]
                        ),
                        **prov,
                    }
                )
            )
    return pd.concat(records, ignore_index=True)
