"""Summaries of the transformer family (rule ``transformer_summary``; docs/real-transformer.md#what-is-measured):
means over windows with moving-block bootstrap SEs, the critical multipliers, the theory's
predictions, s*(n) against the log n rule and the bootstrap's calibration on generated series.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.pipeline.io import provenance_columns
from attnscale.transformer import bootstrap, probes
from attnscale.transformer.library import crossing, job_rng, spawn_key

__all__ = ["summaries"]

BOOT_KEY = "transformer/bootstrap"


def _s_star(ms, lam_mean, inf_mean, rho_mean):
    """Critical multipliers (L, H) from window-mean curves (L, H, K)."""
    L, H, _ = lam_mean.shape
    return np.array(
        [
            [
                probes.critical_multiplier(ms, lam_mean[ly, h], inf_mean[ly, h], rho_mean[ly])
                for h in range(H)
            ]
            for ly in range(L)
        ]
    )


def _s_half(ms, sw_mean):
    L, H, _ = sw_mean.shape
    return np.array([[crossing(ms, sw_mean[ly, h], 0.5) for h in range(H)] for ly in range(L)])


def _boot(stat, W, block, resamples, rng):
    idx = bootstrap.block_indices(W, block, resamples, rng)
    return np.stack([stat(i) for i in idx])


def _finite_se(samples):
    """SE over resamples of a statistic that may be nan (no crossing): the SD of the finite
    values (nan when fewer than 2) and the fraction of resamples where it is finite."""
    fin = np.isfinite(samples)
    cnt = fin.sum(axis=0)
    with np.errstate(invalid="ignore"):
        x = np.where(fin, samples, np.nan)
        sd = np.nanstd(x, axis=0, ddof=1) if samples.shape[0] > 1 else np.full(x.shape[1:], np.nan)
    return np.where(cnt >= 2, sd, np.nan), cnt / samples.shape[0]


def summaries(
    *,
    heads: list,
    global_run: dict,
    root_seed: int,
    block: int,
    resamples: int,
    n_ref: int,
    n_train: int,
    calibration_replicates: int,
) -> dict:
    """Entry of rule ``transformer_summary`` (docs/real-transformer.md#what-is-measured).

    Returns
    -------
    dict of DataFrame
        ``heads`` (one row per n, layer, head: critical multipliers with block-bootstrap SEs, the
        theory's predictions, the descriptors), ``curves`` (one row per n, layer, head and
        multiplier), ``layers`` (head-mean curves per n, layer and multiplier, with SEs),
        ``global`` (per multiplier and layer) and ``calibration`` (the block bootstrap on AR(1)
        series).
    """
    head_rows, curve_rows, layer_rows = [], [], []
    lag1 = []
    for run in sorted(heads, key=lambda r: int(r["n"])):
        n = int(run["n"])
        ms = run["multipliers"]
        lam, sw, inf, rho = run["lambda"], run["self_weight"], run["lambda_inf"], run["rho_hat"]
        W, L, H, K = lam.shape
        rng = job_rng(root_seed, spawn_key(BOOT_KEY, n))
        lam_m, sw_m, inf_m, rho_m = lam.mean(0), sw.mean(0), inf.mean(0), rho.mean(0)
        s_star = _s_star(ms, lam_m, inf_m, rho_m)
        s_half = _s_half(ms, sw_m)
        boot_star = _boot(
            lambda i, ms=ms, lam=lam, inf=inf, rho=rho: _s_star(
                ms, lam[i].mean(0), inf[i].mean(0), rho[i].mean(0)
            ),
            W,
            block,
            resamples,
            rng,
        )
        boot_half = _boot(
            lambda i, ms=ms, sw=sw: _s_half(ms, sw[i].mean(0)), W, block, resamples, rng
        )
        se_star, frac_star = _finite_se(boot_star)
        se_half, frac_half = _finite_se(boot_half)
        desc = {
            k: run[k].mean(0)
            for k in (
                "self_max",
                "top_key_share",
                "special_mass",
                "s_self",
                "s_cross",
                "sd_self",
                "sd_cross",
                "rho_q",
                "rho_k",
                "lambda_inf",
            )
        }
        desc_se = {k: bootstrap.bootstrap_se(run[k], block, resamples, rng) for k in desc}
        lam_se = bootstrap.bootstrap_se(lam, block, resamples, rng)
        sw_se = bootstrap.bootstrap_se(sw, block, resamples, rng)
        ratio = lam / np.where(inf > 0, inf, np.nan)[..., None]
        ratio_m = lam_m / np.where(inf_m > 0, inf_m, np.nan)[..., None]
        k1 = int(np.argmin(np.abs(np.log(ms))))
        for ly in range(L):
            for h in range(H):
                half_eff, half_fl = probes.predicted_half_multipliers(
                    n, desc["s_self"][ly, h], desc["s_cross"][ly, h], desc["sd_cross"][ly, h]
                )
                lam_eff = probes.lambda_eff_curve(
                    n, rho_m[ly], desc["s_self"][ly, h], desc["s_cross"][ly, h], ms
                )
                star_eff = crossing(ms, lam_eff, 1.0 / (1.0 + 3.0 * rho_m[ly]))
                row = {
                    "n": n,
                    "layer": ly,
                    "head": h,
                    "windows": W,
                    "rho_hat": rho_m[ly],
                    "s_star": s_star[ly, h],
                    "s_star_se": se_star[ly, h],
                    "s_star_found": frac_star[ly, h],
                    "s_half": s_half[ly, h],
                    "s_half_se": se_half[ly, h],
                    "s_half_found": frac_half[ly, h],
                    "s_half_eff": half_eff,
                    "s_half_fluct": half_fl,
                    "s_star_eff": star_eff,
                    "lambda_1": lam_m[ly, h, k1],
                    "lambda_1_se": lam_se[ly, h, k1],
                    "lambda_ratio_1": ratio_m[ly, h, k1],
                    "self_weight_1": sw_m[ly, h, k1],
                    "self_weight_1_se": sw_se[ly, h, k1],
                    "self_weight_max": sw_m[ly, h].max(),
                    "beyond_training": n > n_train,
                }
                for k, v in desc.items():
                    row[k] = v[ly, h]
                    row[k + "_se"] = desc_se[k][ly, h]
                head_rows.append(row)
                for j, s in enumerate(ms):
                    curve_rows.append(
                        {
                            "n": n,
                            "layer": ly,
                            "head": h,
                            "s": s,
                            "lambda": lam_m[ly, h, j],
                            "lambda_se": lam_se[ly, h, j],
                            "lambda_ratio": ratio_m[ly, h, j],
                            "lambda_eff": lam_eff[j],
                            "self_weight": sw_m[ly, h, j],
                            "self_weight_se": sw_se[ly, h, j],
                        }
                    )
        # per layer: the head mean of lambda and the head median of lambda / lambda(inf) (a
        # head whose argmax map barely moves the pairs has a huge ratio) [choice], per window
        lay = lam.mean(axis=2)  # (W, L, K)
        lay_r = np.nanmedian(ratio, axis=2)
        lay_se = bootstrap.bootstrap_se(lay, block, resamples, rng)
        lay_r_se = bootstrap.bootstrap_se(lay_r, block, resamples, rng)
        for ly in range(L):
            for j, s in enumerate(ms):
                layer_rows.append(
                    {
                        "n": n,
                        "layer": ly,
                        "s": s,
                        "lambda": lay[:, ly, j].mean(),
                        "lambda_se": lay_se[ly, j],
                        "lambda_ratio": lay_r[:, ly, j].mean(),
                        "lambda_ratio_se": lay_r_se[ly, j],
                        "critical_ratio": 1.0 / (1.0 + 3.0 * rho_m[ly]),
                        "beyond_training": n > n_train,
                    }
                )
        x = lay[:, :, k1].mean(axis=1)
        if W > 2:
            lag1.append(float(np.corrcoef(x[:-1], x[1:])[0, 1]))
    # the whole model scaled
    g = global_run
    gms = g["multipliers"]
    Wg = g["lambda"].shape[0]
    rng = job_rng(root_seed, spawn_key(BOOT_KEY, 0))
    g_lam = g["lambda"].mean(axis=3)  # (W, S, L)
    g_se = bootstrap.bootstrap_se(g_lam, block, resamples, rng)
    r_se = bootstrap.bootstrap_se(g["rho_hat"], block, resamples, rng)
    sw_g = g["self_weight"].mean(axis=3)
    global_rows = []
    for j, s in enumerate(gms):
        for ly in range(g_lam.shape[2]):
            rho = g["rho_hat"][:, j, ly].mean()
            global_rows.append(
                {
                    "n": int(g["n"]),
                    "s": s,
                    "layer": ly,
                    "windows": Wg,
                    "lambda": g_lam[:, j, ly].mean(),
                    "lambda_se": g_se[j, ly],
                    "rho_hat": rho,
                    "rho_hat_se": r_se[j, ly],
                    "self_weight": sw_g[:, j, ly].mean(),
                    "critical_lambda": 1.0 / (1.0 + 3.0 * rho),
                }
            )
    # calibration of the block bootstrap on generated AR(1) series
    cal_rows = []
    rng = job_rng(root_seed, spawn_key(BOOT_KEY, 1))
    W0 = int(heads[0]["lambda"].shape[0])
    phis = sorted({0.0, 0.3, round(float(np.clip(np.nanmean(lag1), 0.0, 0.9)), 3) if lag1 else 0.0})
    for phi in phis:
        se, true, cover = bootstrap.ar1_calibration(
            W0, phi, block, resamples // 2, calibration_replicates, rng
        )
        cal_rows.append(
            {
                "windows": W0,
                "block": block,
                "phi": phi,
                "bootstrap_se": se,
                "true_se": true,
                "ratio": se / true,
                "coverage_95": cover,
                "replicates": calibration_replicates,
                "measured_lag1": float(np.nanmean(lag1)) if lag1 else np.nan,
            }
        )
    prov = provenance_columns(
        root_seed, spawn_key(BOOT_KEY), {"block": block, "resamples": resamples, "n_ref": n_ref}
    )
    heads_df = pd.DataFrame(head_rows)
    ref = heads_df[heads_df["n"] == n_ref].set_index(["layer", "head"])["s_star"]
    heads_df["s_star_over_ref"] = [
        r.s_star / ref.get((r.layer, r.head), np.nan) for r in heads_df.itertuples()
    ]
    heads_df["log_rule"] = np.log(heads_df["n"]) / np.log(n_ref)
    out = {
        "heads": heads_df,
        "curves": pd.DataFrame(curve_rows),
        "layers": pd.DataFrame(layer_rows),
        "global_": pd.DataFrame(global_rows),
        "calibration": pd.DataFrame(cal_rows),
    }
    return {k: v.assign(**prov) for k, v in out.items()}
