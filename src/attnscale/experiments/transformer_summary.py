"""Summaries of the transformer family (rule ``transformer_summary``; docs/real-transformer.md#what-is-measured):
means over windows with moving-block bootstrap SEs, the critical multipliers, the theory's
predictions, s*(n) against the log n rule and the bootstrap's calibration on generated series.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.pipeline.io import provenance_columns
from attnscale.transformer import bootstrap, probes
from attnscale.transformer.library import critical_level, crossing_x, job_rng, spawn_key

from . import transformer_definitions as tdef
from .transformer_parts import COLUMNS as PART_COLUMNS
from .transformer_parts import part_calibration

__all__ = ["summaries", "head_table", "definition_table", "position_table"]

BOOT_KEY = "transformer/bootstrap"

#: Descriptors of a head averaged over windows, with their SEs, in ``heads.csv``.
DESCRIPTORS = (
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
    "lambda_text_inf",
)


def _finite_se(samples):
    """SE over resamples of a statistic that may be nan (no crossing): the SD of the finite
    values (nan when fewer than 2) and the fraction of resamples where it is finite."""
    fin = np.isfinite(samples)
    cnt = fin.sum(axis=0)
    with np.errstate(invalid="ignore"):
        x = np.where(fin, samples, np.nan)
        sd = np.nanstd(x, axis=0, ddof=1) if samples.shape[0] > 1 else np.full(x.shape[1:], np.nan)
    return np.where(cnt >= 2, sd, np.nan), cnt / samples.shape[0]


def never_array(run, name: str) -> np.ndarray:
    """Heads (and bands) that can never cross under the curve set ``name``: the window-mean
    limit at or below zero (normalised) or below the critical level (Paper A's lambda)."""
    curve, limit, normalise = tdef.CURVES[name]
    inf = run[limit].mean(0)
    if normalise:
        return ~(inf > 0)
    rho = run["rho_hat"].mean(0)
    lev = np.array([critical_level("lambda", r) for r in rho])
    return inf < lev.reshape(lev.shape + (1,) * (inf.ndim - 1))


def head_table(run, est, boot, n_train: int, block: int, resamples: int, rng) -> tuple:
    """One row per (layer, head) of one window length (``heads.csv``) and one per (layer, head,
    multiplier) (``curves.csv``): the critical multipliers of each definition with their SEs,
    the width, the self-weight crossing, the theory's predictions and the descriptors."""
    n, ms = int(run["n"]), run["multipliers"]
    lam, sw = run["lambda"], run["self_weight"]
    W, L, H, K = lam.shape
    lam_m, sw_m, rho_m = lam.mean(0), sw.mean(0), run["rho_hat"].mean(0)
    half = lambda v: crossing_x(ms, v, 0.5, log_x=True)  # noqa: E731
    s_half = np.apply_along_axis(half, -1, sw_m)
    se_half, frac_half = _finite_se(
        bootstrap.block_bootstrap(
            sw, lambda v: np.apply_along_axis(half, -1, v.mean(0)), block, resamples, rng
        )
    )
    ses = {k: _finite_se(v) for k, v in boot.items()}
    desc = {k: run[k].mean(0) for k in DESCRIPTORS}
    desc_se = {k: bootstrap.bootstrap_se(run[k], block, resamples, rng) for k in DESCRIPTORS}
    lam_se = bootstrap.bootstrap_se(lam, block, resamples, rng)
    sw_se = bootstrap.bootstrap_se(sw, block, resamples, rng)
    ratio_m = lam_m / np.where(desc["lambda_inf"] > 0, desc["lambda_inf"], np.nan)[..., None]
    k1 = int(np.argmin(np.abs(np.log(ms))))
    head_rows, curve_rows = [], []
    for ly, h in np.ndindex(L, H):
        d = {k: v[ly, h] for k, v in desc.items()}
        half_eff, half_fl = probes.predicted_half_multipliers(
            n, d["s_self"], d["s_cross"], d["sd_cross"]
        )
        lam_eff = probes.lambda_eff_curve(n, rho_m[ly], d["s_self"], d["s_cross"], ms)
        row = {"n": n, "layer": ly, "head": h, "windows": W, "rho_hat": rho_m[ly]}
        row.update(d_model=int(run["d_model"]), d_head=int(run["d_head"]))
        row.update(s_star=est["normalised"][ly, h], s_star_se=ses["normalised"][0][ly, h])
        row["s_star_found"] = ses["normalised"][1][ly, h]
        for name in ("paper_a", "text_keys", "width"):
            col = name if name == "width" else f"s_star_{name}"
            row[col], row[f"{col}_se"] = est[name][ly, h], ses[name][0][ly, h]
        row.update(s_half=s_half[ly, h], s_half_se=se_half[ly, h], s_half_found=frac_half[ly, h])
        row.update(s_half_eff=half_eff, s_half_fluct=half_fl)
        row["s_star_eff"] = crossing_x(ms, lam_eff, critical_level("lambda", rho_m[ly]), log_x=True)
        row.update(lambda_1=lam_m[ly, h, k1], lambda_1_se=lam_se[ly, h, k1])
        row.update(lambda_ratio_1=ratio_m[ly, h, k1], self_weight_1=sw_m[ly, h, k1])
        row.update(lambda_ratio_first=ratio_m[ly, h, 0], lambda_ratio_last=ratio_m[ly, h, -1])
        row.update(lambda_first=lam_m[ly, h, 0], lambda_last=lam_m[ly, h, -1])
        row.update(self_weight_1_se=sw_se[ly, h, k1], self_weight_max=sw_m[ly, h].max())
        row["beyond_training"] = n > n_train
        for k in DESCRIPTORS:
            row[k], row[k + "_se"] = d[k], desc_se[k][ly, h]
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
    return head_rows, curve_rows


def _layer_curve_rows(run, n_train: int, block: int, resamples: int, rng) -> tuple:
    """Per layer and multiplier (``layers.csv``): the head mean of lambda and the head median of
    lambda / lambda(inf) (a head whose argmax map barely moves the pairs has a huge ratio)
    [choice], with SEs over windows; and the lag-one correlation of the layer-mean lambda(1)."""
    n, ms = int(run["n"]), run["multipliers"]
    lam, inf = run["lambda"], run["lambda_inf"]
    W, L = lam.shape[:2]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = lam / np.where(inf > 0, inf, np.nan)[..., None]
    lay, lay_r = lam.mean(axis=2), np.nanmedian(ratio, axis=2)  # (W, L, K)
    lay_se = bootstrap.bootstrap_se(lay, block, resamples, rng)
    lay_r_se = bootstrap.bootstrap_se(lay_r, block, resamples, rng)
    rho_m = run["rho_hat"].mean(0)
    records = [
        {
            "n": n,
            "layer": ly,
            "s": s,
            "lambda": lay[:, ly, j].mean(),
            "lambda_se": lay_se[ly, j],
            "lambda_ratio": lay_r[:, ly, j].mean(),
            "lambda_ratio_se": lay_r_se[ly, j],
            "critical_ratio": critical_level("lambda", rho_m[ly]),
            "beyond_training": n > n_train,
        }
        for ly in range(L)
        for j, s in enumerate(ms)
    ]
    k1 = int(np.argmin(np.abs(np.log(ms))))
    x = lay[:, :, k1].mean(axis=1)
    return records, (float(np.corrcoef(x[:-1], x[1:])[0, 1]) if W > 2 else None)


def definition_table(per_n: dict, n_ref: int) -> list[dict]:
    """``definitions.csv``: per window length, definition (and the width) and layer, the rows of
    :func:`attnscale.experiments.transformer_definitions.layer_rows` against ``n_ref``."""
    records = []
    ref = per_n[n_ref]
    for n, (run, est, boot) in per_n.items():
        rule = float(np.log(n) / np.log(n_ref))
        for name in (*probes.DEFINITIONS, "width"):
            never = never_array(run, name) if name != "width" else np.zeros(est[name].shape, bool)
            got = tdef.layer_rows(est[name], boot[name], ref[1][name], ref[2][name], never, rule)
            records += [{"n": n, "definition": name, "log_rule": rule, **r} for r in got]
    return records


def position_table(per_n: dict, n_ref: int, position_band: int) -> list[dict]:
    """``positions.csv``: per window length, Paper A's and the normalised definition and layer,
    s* on the query rows of each position band (``band`` 0, 1, ...: relative to n, the longest n
    only) and of the fixed band of positions ``1`` to ``position_band`` (``band = -1``: every n),
    with the ratio to the same band at ``n_ref`` (fixed band) or to the first band (bands)."""
    records = []
    n_max = max(per_n)
    ref = per_n[n_ref]
    for n, (run, est, boot) in per_n.items():
        rule = float(np.log(n) / np.log(n_ref))
        for dfn in ("paper_a", "normalised"):
            key = f"fixed_{dfn}"
            got = tdef.layer_rows(
                est[key], boot[key], ref[1][key], ref[2][key], never_array(run, key), rule
            )
            records += [
                {"n": n, "definition": dfn, "band": -1, "first": 1, "last": position_band, **r}
                for r in got
            ]
            key = f"band_{dfn}"
            if n != n_max or key not in est:
                continue
            B = est[key].shape[-1]
            never = never_array(run, key)
            edges = 1 + (n - 2) * np.arange(B + 1) / B
            for b in range(B):
                e, bt = est[key][..., b], boot[key][..., b]
                # ratios against the first band of the same n (no rule: factor 1)
                got = tdef.layer_rows(
                    e, bt, est[key][..., 0], boot[key][..., 0], never[..., b], 1.0
                )
                first, last = int(np.ceil(edges[b])), int(np.ceil(edges[b + 1])) - 1
                records += [
                    {"n": n, "definition": dfn, "band": b, "first": first, "last": last, **r}
                    for r in got
                ]
    return records


def _global_rows(g, block: int, resamples: int, rng) -> list[dict]:
    """The whole model scaled (``global.csv``): per multiplier and layer, the head mean of lambda,
    rho_hat and the mean self-weight, with SEs over windows."""
    gms = g["multipliers"]
    Wg = g["lambda"].shape[0]
    g_lam = g["lambda"].mean(axis=3)  # (W, S, L)
    g_se = bootstrap.bootstrap_se(g_lam, block, resamples, rng)
    r_se = bootstrap.bootstrap_se(g["rho_hat"], block, resamples, rng)
    sw_g = g["self_weight"].mean(axis=3)
    records = []
    for j, s in enumerate(gms):
        for ly in range(g_lam.shape[2]):
            rho = g["rho_hat"][:, j, ly].mean()
            records.append(
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
                    "critical_lambda": critical_level("lambda", rho),
                }
            )
    return records


def _calibration_rows(W0: int, lag1: list, block: int, resamples: int, replicates: int, rng):
    """The block bootstrap on generated AR(1) series of ``W0`` windows (``bootstrap_calibration.csv``)."""
    records = []
    phis = sorted({0.0, 0.3, round(float(np.clip(np.nanmean(lag1), 0.0, 0.9)), 3) if lag1 else 0.0})
    for phi in phis:
        se, true, cover = bootstrap.ar1_calibration(W0, phi, block, resamples // 2, replicates, rng)
        records.append(
            {
                "windows": W0,
                "block": block,
                "phi": phi,
                "bootstrap_se": se,
                "true_se": true,
                "ratio": se / true,
                "coverage_95": cover,
                "replicates": replicates,
                "measured_lag1": float(np.nanmean(lag1)) if lag1 else np.nan,
            }
        )
    return records


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
    position_band: int,
    calibration_parts: int = 0,
) -> dict:
    """Entry of rule ``transformer_summary`` (docs/real-transformer.md#what-is-measured).

    Returns
    -------
    dict of DataFrame
        ``heads`` (one row per n, layer, head: critical multipliers of every definition with
        block-bootstrap SEs, the width, the theory's predictions, the descriptors), ``curves``
        (one row per n, layer, head and multiplier), ``layers`` (head-mean curves per n, layer
        and multiplier, with SEs), ``definitions`` (per n, definition and layer: counts, medians
        and ratios to ``n_ref`` with SEs), ``positions`` (the same by position band),
        ``global_`` (per multiplier and layer), ``calibration`` (the block bootstrap on AR(1)
        series) and ``part_calibration`` (on ``calibration_parts`` disjoint parts of the
        windows, :func:`attnscale.experiments.transformer_parts.part_calibration`; no rows
        when 0).
    """
    head_rows, curve_rows, layer_rows, lag1, per_n = [], [], [], [], {}
    n_max = max(int(r["n"]) for r in heads)
    for run in sorted(heads, key=lambda r: int(r["n"])):
        n = int(run["n"])
        rng = job_rng(root_seed, spawn_key(BOOT_KEY, n))
        est, boot = tdef.estimates(run, block, resamples, rng, bands=n == n_max)
        per_n[n] = (run, est, boot)
        h, c = head_table(run, est, boot, n_train, block, resamples, rng)
        lay, lg = _layer_curve_rows(run, n_train, block, resamples, rng)
        head_rows, curve_rows, layer_rows = head_rows + h, curve_rows + c, layer_rows + lay
        lag1 += [] if lg is None else [lg]
    global_rows = _global_rows(
        global_run, block, resamples, job_rng(root_seed, spawn_key(BOOT_KEY, 0))
    )
    W0 = int(heads[0]["lambda"].shape[0])
    cal_rng = job_rng(root_seed, spawn_key(BOOT_KEY, 1))
    cal_rows = _calibration_rows(W0, lag1, block, resamples, calibration_replicates, cal_rng)
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
        "definitions": pd.DataFrame(definition_table(per_n, n_ref)),
        "positions": pd.DataFrame(position_table(per_n, n_ref, position_band)),
        "global_": pd.DataFrame(global_rows),
        "calibration": pd.DataFrame(cal_rows),
        "part_calibration": (
            part_calibration(
                heads=heads,
                parts=calibration_parts,
                block=block,
                resamples=resamples,
                root_seed=root_seed,
            )
            if calibration_parts
            else pd.DataFrame(columns=list(PART_COLUMNS))
        ),
    }
    return {k: v.assign(**prov) for k, v in out.items()}
