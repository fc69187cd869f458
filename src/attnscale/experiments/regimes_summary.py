"""The summary of the regimes experiment (docs/regimes.md#results): simulated and predicted
``beta*(n)`` side by side, the table behind the figure (:func:`critical_scale_table`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnscale.experiments.regimes_common import PROV

__all__ = ["SUMMARY_COLUMNS", "critical_scale_table"]

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
    ``z_pred = (beta - beta_pred) / beta_se``, ``within_2se``, and the leading-order value with the
    relative deviation from it. Theory rows keep their ``kind`` and ``role``.

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
        ``table`` (columns :data:`SUMMARY_COLUMNS`) and ``read_off`` (the theory rows with
        ``source = "theory"``, then the simulated rows with ``source = "simulation"``).
    """
    sims = pd.concat(
        list(simulations) if not isinstance(simulations, pd.DataFrame) else [simulations],
        ignore_index=True,
    )
    th = theory
    pts = th[th["role"] == "point"]
    key = ["series", "n", "k"]

    def lookup(kind):
        sub = pts[pts["kind"] == kind][key + ["beta"]].rename(columns={"beta": kind})
        return (
            sims[key]
            .astype({"n": float, "k": float})
            .merge(sub.astype({"n": float, "k": float}), on=key, how="left")[kind]
            .to_numpy()
        )

    pred, lead = lookup("prediction"), lookup("leading")
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
            "contexts": sims["contexts"],
            "keys_drawn": sims["keys_drawn"],
            "ln_n_breakdown": np.nan,
            **{c: sims[c] for c in PROV},
        }
    )
    thr = th.assign(
        beta_se=np.nan,
        beta_se_batches=np.nan,
        gamma_se=np.nan,
        beta_pred=np.nan,
        z_pred=np.nan,
        within_2se=np.nan,
        beta_leading=np.nan,
        rel_dev_leading=np.nan,
        contexts=np.nan,
        keys_drawn=np.nan,
    )
    for c in PROV:
        if c not in thr.columns:
            thr[c] = np.nan
    table = pd.concat([sim, thr[SUMMARY_COLUMNS]], ignore_index=True)[SUMMARY_COLUMNS]
    ro = pd.concat(
        [read_off_theory.assign(source="theory"), read_off_sim.assign(source="simulation")],
        ignore_index=True,
    )
    return {"table": table, "read_off": ro}
