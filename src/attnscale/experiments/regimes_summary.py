"""The summary of the regimes experiment (docs/regimes.md#results): simulated and predicted
``beta*(n)`` side by side, the table behind the figure (:func:`critical_scale_table`), and the
local exponent of the finite-d series (:func:`local_exponent_table`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnscale.experiments.regimes_common import PROV
from attnscale.pipeline.io import with_job_provenance

__all__ = ["SUMMARY_COLUMNS", "EXPONENT_COLUMNS", "critical_scale_table", "local_exponent_table"]

SUMMARY_COLUMNS = [
    "regime",
    "series",
    "kind",
    "role",
    "n",
    "d",
    "rho",
    "s",
    "k",
    "kappa",
    "copy_noise",
    "beta",
    "beta_se",
    "beta_se_batches",
    "gamma",
    "gamma_se",
    "beta_pred",
    "z_pred",
    "within_2se",
    "beta_leading",
    "rel_dev_leading",
    "beta_first_order",
    "z_first_order",
    "ratio_to_query",
    "ratio_to_query_se",
    "ratio_pred",
    "z_ratio",
    "ratio_first_order",
    "z_ratio_first_order",
    "contexts",
    "keys_drawn",
    "ln_n_breakdown",
    *PROV,
]


def critical_scale_table(*, simulations, theory, read_off_sim, read_off_theory) -> dict:
    """The summary behind the figure (docs/regimes.md#results): one tidy table of simulated and
    predicted ``beta*(n)`` and the practical-reading table.

    Simulation rows (``kind = "simulation"``) carry the series' prediction at the same ``n`` and
    ``k`` (``beta_pred``, the theory table's ``role = "point"``, ``kind = "prediction"`` row),
    ``z_pred = (beta - beta_pred) / beta_se``, ``within_2se``, the leading-order value with the
    relative deviation from it, and the first-order value (``beta_first_order``, ``z_first_order``)
    where the theory has one. Series drawn on the rows of a query-alone series (near-ties) also
    carry the paired ratio ``ratio_to_query = beta*_k / beta*_1`` with its SE, the predicted ratio
    (``ratio_pred``: prediction over the query alone's prediction; ``ratio_first_order``: the
    first-order value over the same) and the paired ``z_ratio``, ``z_ratio_first_order``, in which
    the rows' common fluctuation cancels (docs/regimes.md#exact-finite-d-theory-for-k-copies).
    Theory rows keep their ``kind`` and ``role``.

    Parameters
    ----------
    simulations : list of pandas.DataFrame
        Tables of :func:`attnscale.experiments.regimes_rem.rem_points` and
        :func:`attnscale.experiments.regimes_tokens.token_points`.
    theory : pandas.DataFrame
        :func:`attnscale.experiments.regimes_theory.theory_table`.
    read_off_sim, read_off_theory : pandas.DataFrame
        :func:`attnscale.experiments.regimes_tokens.read_off_points` and
        :func:`attnscale.experiments.regimes_theory.read_off_theory`.

    Returns
    -------
    dict
        ``table`` (columns :data:`SUMMARY_COLUMNS`), ``read_off`` (the theory rows with
        ``source = "theory"``, then the simulated rows with ``source = "simulation"``) and
        ``exponent`` (:func:`local_exponent_table` of ``table``).
    """
    sims = pd.concat(
        list(simulations) if not isinstance(simulations, pd.DataFrame) else [simulations],
        ignore_index=True,
    )
    sim = _simulation_rows(sims, theory[theory["role"] == "point"])
    thr = _theory_rows(theory)
    table = pd.concat([sim, thr[SUMMARY_COLUMNS]], ignore_index=True)[SUMMARY_COLUMNS]
    ro = pd.concat(
        [read_off_theory.assign(source="theory"), read_off_sim.assign(source="simulation")],
        ignore_index=True,
    )
    exponent = with_job_provenance(local_exponent_table(table))
    return {"table": table, "read_off": ro, "exponent": exponent}


def _lookup(sims: pd.DataFrame, pts: pd.DataFrame, kind: str) -> np.ndarray:
    """The theory's ``kind`` beta* at each simulated ``(series, n, k)`` (nan where none)."""
    key = ["series", "n", "k"]
    sub = pts[pts["kind"] == kind][key + ["beta"]].rename(columns={"beta": kind})
    return (
        sims[key]
        .astype({"n": float, "k": float})
        .merge(sub.astype({"n": float, "k": float}), on=key, how="left")[kind]
        .to_numpy()
    )


def _simulation_rows(sims: pd.DataFrame, pts: pd.DataFrame) -> pd.DataFrame:
    """The simulation rows of the summary, with the predictions at the same ``(series, n, k)``."""
    key = ["series", "n", "k"]
    pred, lead, first = (_lookup(sims, pts, k) for k in ("prediction", "leading", "first_order"))
    if np.any(~np.isfinite(pred)):
        missing = sims.loc[~np.isfinite(pred), key].to_dict("records")
        raise ValueError(f"the theory table has no prediction for simulated points {missing}")
    sim = pd.DataFrame(
        {
            "regime": sims["regime"],
            "series": sims["series"],
            "kind": "simulation",
            "role": "point",
            "n": sims["n"].astype(float),
            "d": sims["d"],
            "rho": sims["rho"],
            "s": sims["s"],
            "k": sims["k"].astype(float),
            "kappa": sims["kappa"],
            "copy_noise": sims["copy_noise"],
            "beta": sims["beta_sim"],
            "beta_se": sims["beta_sim_se"],
            "beta_se_batches": sims["beta_sim_se_batches"],
            "gamma": sims["gamma_sim"],
            "gamma_se": sims["gamma_sim_se"],
            "beta_pred": pred,
            "z_pred": (sims["beta_sim"] - pred) / sims["beta_sim_se"],
            "within_2se": np.abs(sims["beta_sim"] - pred) <= 2.0 * sims["beta_sim_se"],
            "beta_leading": lead,
            "rel_dev_leading": sims["beta_sim"] / lead - 1.0,
            "beta_first_order": first,
            "z_first_order": (sims["beta_sim"] - first) / sims["beta_sim_se"],
            **_paired(sims, pred, first),
            "contexts": sims["contexts"],
            "keys_drawn": sims["keys_drawn"],
            "ln_n_breakdown": np.nan,
            **{c: sims[c] for c in PROV},
        }
    )
    return sim


def _theory_rows(th: pd.DataFrame) -> pd.DataFrame:
    """The theory rows with the simulation-only columns nan (provenance nan where absent)."""
    thr = th.assign(
        beta_se=np.nan,
        beta_se_batches=np.nan,
        gamma_se=np.nan,
        beta_pred=np.nan,
        z_pred=np.nan,
        within_2se=np.nan,
        beta_leading=np.nan,
        rel_dev_leading=np.nan,
        beta_first_order=np.nan,
        z_first_order=np.nan,
        ratio_to_query=np.nan,
        ratio_to_query_se=np.nan,
        ratio_pred=np.nan,
        z_ratio=np.nan,
        ratio_first_order=np.nan,
        z_ratio_first_order=np.nan,
        contexts=np.nan,
        keys_drawn=np.nan,
    )
    for c in PROV:
        if c not in thr.columns:
            thr[c] = np.nan
    return thr


def _paired(sims: pd.DataFrame, pred: np.ndarray, first: np.ndarray) -> dict:
    """Paired ratio columns of the series that share a query-alone series' rows (same ``n`` and
    ``spawn_key``, ``k > 1``); ``nan`` elsewhere."""
    out = {
        c: np.full(len(sims), np.nan)
        for c in (
            "ratio_to_query",
            "ratio_to_query_se",
            "ratio_pred",
            "z_ratio",
            "ratio_first_order",
            "z_ratio_first_order",
        )
    }
    if "ratio_to_query" not in sims.columns:
        return out
    k = sims["k"].to_numpy(float)
    groups = sims.groupby(["n", "spawn_key"], sort=False).indices
    for idx in groups.values():
        base = [i for i in idx if k[i] == 1.0]
        if len(base) != 1:
            continue
        for i in idx:
            if k[i] == 1.0:
                continue
            r, se = float(sims["ratio_to_query"].iloc[i]), float(sims["ratio_to_query_se"].iloc[i])
            rp, rf = pred[i] / pred[base[0]], first[i] / pred[base[0]]
            out["ratio_to_query"][i], out["ratio_to_query_se"][i] = r, se
            out["ratio_pred"][i], out["z_ratio"][i] = rp, (r - rp) / se
            out["ratio_first_order"][i], out["z_ratio_first_order"][i] = rf, (r - rf) / se
    return out


EXPONENT_COLUMNS = [
    "series",
    "d",
    "rho",
    "n_lo",
    "n_hi",
    "ln_n_over_d_lo",
    "ln_n_over_d_hi",
    "exponent_sim",
    "exponent_sim_se",
    "exponent_pred",
    "exponent_power_law",
    "exponent_log_n",
    "ratio_sim_power_law",
    "ratio_sim_power_law_se",
    "ratio_pred_power_law",
]


def local_exponent_table(table: pd.DataFrame) -> pd.DataFrame:
    """The local exponent ``d ln beta* / d ln n`` of every finite-d series over its last decade
    (docs/regimes.md#finite-d-where-log-n-ends): between the largest simulated ``n_hi`` and the
    simulated ``n_lo`` closest to ``n_hi / 10`` (in ``ln n``),
    ``ln(beta*(n_hi) / beta*(n_lo)) / ln(n_hi / n_lo)``, simulated (SE from the two points'
    independent SEs: the rows of different ``n`` are independent) and predicted (exact finite-d
    theory), against Paper B's ``2 / (d - 1)`` and the local exponent of the ``log n`` law
    ``ln(n - 1) / (1 - rho)`` over the same points; and at ``n_hi`` the simulated and predicted
    ``beta*`` over the power law (``rho = 0`` only; ``nan`` otherwise).

    Returns
    -------
    pandas.DataFrame
        One row per finite-d series with at least two simulated ``n``; columns
        :data:`EXPONENT_COLUMNS`.
    """
    sims = table[(table["kind"] == "simulation") & (table["regime"] == "finite_d")]
    pts = table[(table["role"] == "point") & (table["kind"] != "simulation")]
    records = []
    for name, s in sims.groupby("series", sort=False):
        s = s.sort_values("n")
        if len(s) < 2:
            continue
        hi = s.iloc[-1]
        lo = s.iloc[int(np.argmin(np.abs(np.log(s["n"].iloc[:-1].to_numpy(float) * 10 / hi["n"]))))]
        span = math.log(hi["n"] / lo["n"])
        d, rho = int(hi["d"]), float(hi["rho"])

        def at(kind, n, name=name):
            v = pts[(pts["series"] == name) & (pts["kind"] == kind) & np.isclose(pts["n"], n)]
            return float(v["beta"].iloc[0]) if len(v) else math.nan

        rel = [float(r["beta_se"]) / float(r["beta"]) for r in (lo, hi)]
        power = at("power_law", hi["n"])
        records.append(
            {
                "series": name,
                "d": d,
                "rho": rho,
                "n_lo": float(lo["n"]),
                "n_hi": float(hi["n"]),
                "ln_n_over_d_lo": math.log(lo["n"]) / d,
                "ln_n_over_d_hi": math.log(hi["n"]) / d,
                "exponent_sim": math.log(hi["beta"] / lo["beta"]) / span,
                "exponent_sim_se": math.hypot(*rel) / span,
                "exponent_pred": math.log(at("prediction", hi["n"]) / at("prediction", lo["n"]))
                / span,
                "exponent_power_law": 2.0 / (d - 1),
                "exponent_log_n": math.log(math.log(hi["n"] - 1.0) / math.log(lo["n"] - 1.0))
                / span,
                "ratio_sim_power_law": hi["beta"] / power,
                "ratio_sim_power_law_se": hi["beta_se"] / power,
                "ratio_pred_power_law": at("prediction", hi["n"]) / power,
            }
        )
    return pd.DataFrame(records, columns=EXPONENT_COLUMNS)
