"""Entries of the transformer family (issue 36; docs/real-transformer.md): every head of a
pretrained model on the phase diagram, its critical multiplier and how it moves with n.

* :func:`check_inputs` runs when the workflow is parsed, before any job: the model (package
  installed, files present, SHA-256, architecture) and the text (readable, long enough for the
  asked windows); every failure is an error naming the key, the file or the install line.
* :func:`head_phase` (rule ``transformer_heads``, one job per n): the forward pass of each window
  once, then the multiplier probes of every head (:mod:`attnscale.transformer.probes`).
* :func:`global_scaling` (rule ``transformer_global``): every layer's scores multiplied by the
  same s and the forward pass rerun; each layer's lambda and rho_hat.
* :func:`summaries` (rule ``transformer_summary``): means over windows with block-bootstrap SEs,
  critical multipliers, the theory's predictions, s*(n) against the log n rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from attnscale.transformer import bootstrap, corpus, loader, probes
from attnscale.transformer._imports import (
    crossing,
    job_rng,
    provenance_columns,
    spawn_key,
)

__all__ = [
    "InputError",
    "check_inputs",
    "load_windows",
    "head_phase",
    "global_scaling",
    "summaries",
]

ROWS_KEY = "transformer/rows"
BOOT_KEY = "transformer/bootstrap"


class InputError(ValueError):
    """The model or the text of the ``transformer`` configuration cannot be used."""


def _text_tokens(model, text: str, text_part: str | None):
    body, digest = corpus.read_text(text, text_part)
    return model.encode(body), digest


def check_inputs(*, model: str, text: str, text_part: str | None, text_sha256: str | None,
                 n, windows: int, global_n: int, global_windows: int,
                 cache: str | Path | None = None) -> dict:  # fmt: skip
    """Check the model and the text before any job runs; returns the resolved model source
    (``ModelSource.params()``) and the text's SHA-256 and length in word pieces.

    ``cache``: a JSON file remembering a successful check by the files' size and modification
    time, so that re-parsing the workflow does not hash 90 MB again.

    Raises
    ------
    attnscale.transformer.loader.ModelError, attnscale.transformer.corpus.CorpusError
        With the message naming the file, the key, the install line or the number of word
        pieces needed.
    """
    paths = [Path(text)]
    key = {"model": model, "text": str(text), "text_part": text_part, "sha": text_sha256,
           "n": [int(x) for x in n], "windows": int(windows), "global_n": int(global_n),
           "global_windows": int(global_windows)}  # fmt: skip
    if model == "packaged":
        try:
            paths.append(loader.packaged_zip())
        except loader.ModelError:
            raise
    else:
        paths += [Path(model) / f for f in loader.FILES]
    stamp = [[str(p), p.stat().st_size, p.stat().st_mtime_ns] if p.exists() else [str(p)]
             for p in paths]  # fmt: skip
    if cache is not None and Path(cache).is_file():
        try:
            got = json.loads(Path(cache).read_text())
            if got.get("key") == key and got.get("stamp") == stamp:
                return got["result"]
        except (ValueError, OSError):
            pass
    source = loader.resolve(model)
    if not Path(text).is_file():
        raise corpus.CorpusError(f"transformer.text: corpus file {text} does not exist "
                                 "(docs/real-transformer.md#real-text says how to install it)")  # fmt: skip
    m = loader.load(source)
    ids, digest = _text_tokens(m, text, text_part)
    if text_sha256 and digest != text_sha256:
        raise corpus.CorpusError(f"transformer.text: {text} has SHA-256 {digest}, expected "
                                 f"{text_sha256} (transformer.text_sha256)")  # fmt: skip
    need = max(corpus.tokens_needed(n, windows), corpus.tokens_needed([global_n], global_windows))
    if len(ids) < need:
        raise corpus.CorpusError(
            f"transformer.text: {text} has {len(ids)} word pieces; {windows} windows of "
            f"n = {max(n)} need {need} (lower transformer.windows or give a longer text)")
    if max(max(n), global_n) > m.adapter.max_positions:
        raise corpus.CorpusError(f"transformer.n: windows of {max(n)} tokens exceed the model's "
                                 f"{m.adapter.max_positions} positions")  # fmt: skip
    result = {"model": source.params(), "text_sha256": digest, "text_tokens": len(ids)}
    if cache is not None:
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(str(cache) + ".tmp")
        tmp.write_text(json.dumps({"key": key, "stamp": stamp, "result": result}))
        tmp.replace(cache)
    return result


def load_windows(model_source: dict, text: str, text_part: str | None, n: int, windows: int):
    """The loaded model and ``windows`` non-overlapping windows of ``n`` tokens of the text."""
    m = loader.load(model_source)
    ids, digest = _text_tokens(m, text, text_part)
    W = corpus.windows(ids, n, windows, m.token_id("[CLS]"), m.token_id("[SEP]"))
    return m, W, digest


def _rows(root_seed, n, w, rows):
    rng = job_rng(root_seed, spawn_key(ROWS_KEY, n, w))
    return probes.text_rows(n, rows, rng)


def head_phase(*, root_seed: int, model: dict, text: str, text_part: str | None, n: int,
               windows: int, rows: int, multipliers) -> dict:  # fmt: skip
    """Entry of rule ``transformer_heads``: the phase curves of every head on ``windows``
    windows of ``n`` tokens (docs/real-transformer.md#the-probes).

    Returns
    -------
    dict of arrays
        ``lambda``, ``self_weight`` (W, L, H, K); ``lambda_inf``, ``self_max``,
        ``top_key_share``, ``special_mass``, ``s_self``, ``s_cross``, ``sd_self``,
        ``sd_cross``, ``rho_q``, ``rho_k`` (W, L, H); ``rho_hat`` (W, L); ``multipliers``
        (K,); ``ids`` (W, n); ``n``, ``rows`` and the provenance as a JSON string ``meta``.
    """
    ms = np.asarray(multipliers, dtype=np.float64)
    m, W, digest = load_windows(model, text, text_part, int(n), int(windows))
    per = []
    for w, ids in enumerate(W):
        _, recs = m.adapter.forward(ids)
        r = _rows(root_seed, int(n), w, rows)
        per.append([probes.layer_probes(rec, r, ms) for rec in recs])
    out = {k: np.asarray([[lay[k] for lay in win] for win in per]) for k in per[0][0]}
    params = {"n": int(n), "windows": int(windows), "rows": int(rows), "multipliers": ms.tolist(),
              "model": model, "text_sha256": digest, "text_part": text_part}  # fmt: skip
    meta = provenance_columns(root_seed, spawn_key(ROWS_KEY, int(n)), params)
    out.update(multipliers=ms, ids=W, n=np.int64(n), rows=np.int64(min(rows, n - 2)),
               meta=np.array(json.dumps({**meta, **params})))  # fmt: skip
    return out


def global_scaling(*, root_seed: int, model: dict, text: str, text_part: str | None, n: int,
                   windows: int, rows: int, multipliers) -> dict:  # fmt: skip
    """Entry of rule ``transformer_global``: every layer's scores multiplied by the same ``s``,
    the forward pass rerun, and per layer the rho_hat of its inputs and lambda of each head at
    that scale (docs/real-transformer.md#the-whole-model-scaled).

    Returns ``lambda`` (W, S, L, H), ``self_weight`` (W, S, L, H), ``rho_hat`` (W, S, L),
    ``multipliers`` (S,), ``n``, ``meta``.
    """
    ms = np.asarray(multipliers, dtype=np.float64)
    m, W, digest = load_windows(model, text, text_part, int(n), int(windows))
    lam, sw, rho = [], [], []
    for w, ids in enumerate(W):
        r = _rows(root_seed, int(n), w, rows)
        lw, sww, rw = [], [], []
        for s in ms:
            _, recs = m.adapter.forward(ids, multipliers=s)
            res = [probes.layer_probes(rec, r, [s], descriptors=False) for rec in recs]
            lw.append([x["lambda"][:, 0] for x in res])
            sww.append([x["self_weight"][:, 0] for x in res])
            rw.append([x["rho_hat"] for x in res])
        lam.append(lw)
        sw.append(sww)
        rho.append(rw)
    params = {"n": int(n), "windows": int(windows), "rows": int(rows), "multipliers": ms.tolist(),
              "model": model, "text_sha256": digest, "text_part": text_part}  # fmt: skip
    meta = provenance_columns(root_seed, spawn_key(ROWS_KEY, int(n)), params)
    return {"lambda": np.asarray(lam), "self_weight": np.asarray(sw), "rho_hat": np.asarray(rho),
            "multipliers": ms, "n": np.int64(n),
            "meta": np.array(json.dumps({**meta, **params}))}  # fmt: skip


# --------------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------------


def _s_star(ms, lam_mean, inf_mean, rho_mean):
    """Critical multipliers (L, H) from window-mean curves (L, H, K)."""
    L, H, _ = lam_mean.shape
    return np.array([[probes.critical_multiplier(ms, lam_mean[ly, h], inf_mean[ly, h],
                                                 rho_mean[ly]) for h in range(H)]
                     for ly in range(L)])  # fmt: skip


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


def summaries(*, heads: list, global_run: dict, root_seed: int, block: int, resamples: int,
              n_ref: int, n_train: int, calibration_replicates: int) -> dict:  # fmt: skip
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
        boot_star = _boot(lambda i, ms=ms, lam=lam, inf=inf, rho=rho: _s_star(
            ms, lam[i].mean(0), inf[i].mean(0), rho[i].mean(0)), W, block, resamples, rng)  # fmt: skip
        boot_half = _boot(lambda i, ms=ms, sw=sw: _s_half(ms, sw[i].mean(0)), W, block, resamples, rng)
        se_star, frac_star = _finite_se(boot_star)
        se_half, frac_half = _finite_se(boot_half)
        desc = {k: run[k].mean(0) for k in ("self_max", "top_key_share", "special_mass",
                                            "s_self", "s_cross", "sd_self", "sd_cross",
                                            "rho_q", "rho_k", "lambda_inf")}  # fmt: skip
        desc_se = {k: bootstrap.bootstrap_se(run[k], block, resamples, rng) for k in desc}
        lam_se = bootstrap.bootstrap_se(lam, block, resamples, rng)
        sw_se = bootstrap.bootstrap_se(sw, block, resamples, rng)
        ratio = lam / np.where(inf > 0, inf, np.nan)[..., None]
        ratio_m = lam_m / np.where(inf_m > 0, inf_m, np.nan)[..., None]
        k1 = int(np.argmin(np.abs(np.log(ms))))
        for ly in range(L):
            for h in range(H):
                half_eff, half_fl = probes.predicted_half_multipliers(
                    n, desc["s_self"][ly, h], desc["s_cross"][ly, h], desc["sd_cross"][ly, h])
                lam_eff = probes.lambda_eff_curve(n, rho_m[ly], desc["s_self"][ly, h],
                                                  desc["s_cross"][ly, h], ms)  # fmt: skip
                star_eff = crossing(ms, lam_eff, 1.0 / (1.0 + 3.0 * rho_m[ly]))
                row = {"n": n, "layer": ly, "head": h, "windows": W, "rho_hat": rho_m[ly],
                       "s_star": s_star[ly, h], "s_star_se": se_star[ly, h],
                       "s_star_found": frac_star[ly, h], "s_half": s_half[ly, h],
                       "s_half_se": se_half[ly, h], "s_half_found": frac_half[ly, h],
                       "s_half_eff": half_eff, "s_half_fluct": half_fl, "s_star_eff": star_eff,
                       "lambda_1": lam_m[ly, h, k1], "lambda_1_se": lam_se[ly, h, k1],
                       "lambda_ratio_1": ratio_m[ly, h, k1],
                       "self_weight_1": sw_m[ly, h, k1], "self_weight_1_se": sw_se[ly, h, k1],
                       "self_weight_max": sw_m[ly, h].max(),
                       "beyond_training": n > n_train}  # fmt: skip
                for k, v in desc.items():
                    row[k] = v[ly, h]
                    row[k + "_se"] = desc_se[k][ly, h]
                head_rows.append(row)
                for j, s in enumerate(ms):
                    curve_rows.append({"n": n, "layer": ly, "head": h, "s": s,
                                       "lambda": lam_m[ly, h, j], "lambda_se": lam_se[ly, h, j],
                                       "lambda_ratio": ratio_m[ly, h, j],
                                       "lambda_eff": lam_eff[j],
                                       "self_weight": sw_m[ly, h, j],
                                       "self_weight_se": sw_se[ly, h, j]})  # fmt: skip
        # per layer: the head mean of lambda and the head median of lambda / lambda(inf) (a
        # head whose argmax map barely moves the pairs has a huge ratio) [choice], per window
        lay = lam.mean(axis=2)  # (W, L, K)
        lay_r = np.nanmedian(ratio, axis=2)
        lay_se = bootstrap.bootstrap_se(lay, block, resamples, rng)
        lay_r_se = bootstrap.bootstrap_se(lay_r, block, resamples, rng)
        for ly in range(L):
            for j, s in enumerate(ms):
                layer_rows.append({"n": n, "layer": ly, "s": s, "lambda": lay[:, ly, j].mean(),
                                   "lambda_se": lay_se[ly, j],
                                   "lambda_ratio": lay_r[:, ly, j].mean(),
                                   "lambda_ratio_se": lay_r_se[ly, j],
                                   "critical_ratio": 1.0 / (1.0 + 3.0 * rho_m[ly]),
                                   "beyond_training": n > n_train})  # fmt: skip
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
            global_rows.append({"n": int(g["n"]), "s": s, "layer": ly, "windows": Wg,
                                "lambda": g_lam[:, j, ly].mean(), "lambda_se": g_se[j, ly],
                                "rho_hat": rho, "rho_hat_se": r_se[j, ly],
                                "self_weight": sw_g[:, j, ly].mean(),
                                "critical_lambda": 1.0 / (1.0 + 3.0 * rho)})  # fmt: skip
    # calibration of the block bootstrap on generated AR(1) series
    cal_rows = []
    rng = job_rng(root_seed, spawn_key(BOOT_KEY, 1))
    W0 = int(heads[0]["lambda"].shape[0])
    phis = sorted({0.0, 0.3, round(float(np.clip(np.nanmean(lag1), 0.0, 0.9)), 3)
                   if lag1 else 0.0})  # fmt: skip
    for phi in phis:
        se, true, cover = bootstrap.ar1_calibration(W0, phi, block, resamples // 2,
                                                    calibration_replicates, rng)  # fmt: skip
        cal_rows.append({"windows": W0, "block": block, "phi": phi, "bootstrap_se": se,
                         "true_se": true, "ratio": se / true, "coverage_95": cover,
                         "replicates": calibration_replicates,
                         "measured_lag1": float(np.nanmean(lag1)) if lag1 else np.nan})  # fmt: skip
    prov = provenance_columns(root_seed, spawn_key(BOOT_KEY), {"block": block,
                              "resamples": resamples, "n_ref": n_ref})  # fmt: skip
    heads_df = pd.DataFrame(head_rows)
    ref = heads_df[heads_df["n"] == n_ref].set_index(["layer", "head"])["s_star"]
    heads_df["s_star_over_ref"] = [r.s_star / ref.get((r.layer, r.head), np.nan)
                                   for r in heads_df.itertuples()]  # fmt: skip
    heads_df["log_rule"] = np.log(heads_df["n"]) / np.log(n_ref)
    out = {"heads": heads_df, "curves": pd.DataFrame(curve_rows),
           "layers": pd.DataFrame(layer_rows), "global_": pd.DataFrame(global_rows),
           "calibration": pd.DataFrame(cal_rows)}  # fmt: skip
    return {k: v.assign(**prov) for k, v in out.items()}
